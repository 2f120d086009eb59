"""RL algorithms compared on one world-model task at one budget: GRPO, Dr. GRPO, RLOO, SB3 PPO, best-of-N.

    python -m benchmarks.rl_algorithms --data data/pusht64 --steps 40 --seeds 0 1 --threads 2
    python -m benchmarks.rl_algorithms --env-id RLVRWorld/MiniTextWorld-v0 --methods grpo,rloo --steps 40

Task: any registered next-state id (`--env-id`, default `RLVRWorld/PushT-SingleStep-v0`), with
`--env-kwargs` as `gym.make` arguments (video default `reward=mae`: the verified -MAE of the
decoded frame). Held-out score: video ids, the sampled MAE (lower is better); language ids,
the greedy held-out reward (higher is better). Video ids train on `--data`'s splits, or
without it on episodes generated once, held out on the embedded set.

To add an algorithm: a GRPO-family variant is one entry of `POLICY_GRADIENT` (its extra
`trainers.grpo` flags, e.g. a new `--loss-type`, once `trainers.grpo_config.GRPOConfig`
accepts it); a different trainer is a `*_run(args, seed, ...)` function returning the same
keys as `sb3_run` (its `dir`, `train_seconds`, start and final held-out scores), named in
`METHODS` and called in `main`'s seed loop, so it runs at the same budget and seeds.

* grpo, dr_grpo, rloo: `trainers.grpo` from the same start model (default: the shipped MLE
  model) with the same steps, prompts x group, learning rate, KL and seeds; they differ
  only in `--loss-type dr_grpo` and `--algorithm rloo`.
* sb3_ppo: SB3 PPO on the env's token mode (`trainers.sb3_ppo`: a from-scratch MLP policy,
  no world model), for the mean wall time of the same seed's GRPO-family runs. Its held-out number is its own
  evaluation (deterministic policy, the first `--sb3-eval` held-out transitions).
* best_of_n: no training: `n` samples of the start model per held-out transition, the best
  by the verifier (oracle selection: it reads the true frame), at the group size and below.

Held-out: the same `--eval-windows` transitions of `--data`'s test split for every GRPO-family
run and best-of-N (`rlvr_envs.video.evaluation.held_out_indices`), one sampled response each
(temperature 1). Runs go seed by seed (every method at seed 0 first), live in
`--runs/<method>_seed<k>` and are reused when their card exists (a finished run of another id, model or
budget there is refused, not reported as this one), and the report is rewritten
after each run, so an interrupted benchmark has a valid partial report and continues where it
stopped. Writes `--out`.{json,md,png}:
training reward against steps and wall time, and held-out sampled MAE per method and seed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parent / "results" / "rl_algorithms"
ENV_ID = "RLVRWorld/PushT-SingleStep-v0"
#: the GRPO-family methods: extra `trainers.grpo` flags
POLICY_GRADIENT = {"grpo": [], "dr_grpo": ["--loss-type", "dr_grpo"], "rloo": ["--algorithm", "rloo"]}
METHODS = (*POLICY_GRADIENT, "sb3_ppo", "best_of_n")


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default=ENV_ID, help="a registered next-state id (video or language)")
    parser.add_argument("--env-kwargs", nargs="*", default=None, metavar="KEY=VALUE",
                        help="gym.make arguments (default: reward=mae for video ids, none for language ids)")
    parser.add_argument("--data", default="", help="video: episodes dir with train and test splits "
                                                   "(`rlvr-world data pusht --out DIR`; default: generated PushT "
                                                   "training episodes, the embedded held-out set)")
    parser.add_argument("--model", default="", help="start model dir (default: the shipped MLE model of a PushT "
                                                    "layout, the shipped SFT model of MiniTextWorld)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {','.join(METHODS)}")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--beta", type=float, default=1e-3)
    parser.add_argument("--eval-windows", type=int, default=64)
    parser.add_argument("--best-of", default="1,2,4,8", help="the n of best-of-n")
    parser.add_argument("--sb3-eval", type=int, default=16, help="held-out transitions SB3 PPO is evaluated on")
    parser.add_argument("--sb3-seconds", type=float, default=0.0,
                        help="SB3 PPO wall time (default: the mean of the GRPO-family runs)")
    parser.add_argument("--threads", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--runs", default="", help="run folders (default: runs/rl_algorithms, with the env's name "
                                                    "appended for an id other than the default)")
    parser.add_argument("--out", default="", help="report path stem (default: benchmarks/results/rl_algorithms, "
                                                   "with the env's name appended for an id other than the default)")
    args = parser.parse_args(argv)
    from rlvr_envs.core.paths import ASSETS
    from rlvr_envs.registration import entry

    try:
        args.modality = entry(args.env_id).modality
    except KeyError as exc:
        parser.error(f"--env-id: {exc.args[0]}")
    video = args.modality == "video"
    if args.env_kwargs is None:
        args.env_kwargs = ["reward=mae"] if video else []
    if args.data:
        args.env_kwargs = [*args.env_kwargs, f"data_dir={args.data}"]
    if not args.model and args.env_id.startswith("RLVRWorld/MiniTextWorld"):
        args.model = str(ASSETS / "text" / "minitextworld_sft_model")
    if not video and not args.model:
        parser.error(f"--model: {args.env_id} ships no model; pass a save_pretrained directory (e.g. an SFT run's)")
    #: the held-out score every method is compared on, and its key stem in the report
    args.score = "sampled_mae" if video else "greedy_reward"
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(args.methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    if not video and "best_of_n" in args.methods:
        parser.error("best_of_n samples video world models only; leave it out of --methods for a language id")
    args.best_of = sorted({int(n) for n in args.best_of.split(",")})
    if min(args.best_of) < 1 or args.steps < 1:
        parser.error("--best-of values and --steps must be >= 1")
    suffix = "" if args.env_id == ENV_ID else "_" + args.env_id.split("/")[-1]  # two ids never share runs or a report
    args.runs = args.runs or f"runs/rl_algorithms{suffix}"
    args.out = args.out or f"{RESULTS}{suffix}"
    conflict = foreign_run(args)
    if conflict:
        parser.error(conflict)
    return args


def recorded_args(out: Path) -> dict | None:
    """The settings a finished run in `out` recorded (video GRPO card, TRL summary, SB3 summary)."""
    for name in ("card.json", "results.json", "summary.json"):
        if (out / name).is_file():
            return json.loads((out / name).read_text()).get("args")
    return None


def foreign_run(args) -> str:
    """Why a finished run in --runs cannot be reused for this comparison ('' when none is in the way): runs are
    reused by folder, so one of another id, model or budget would be reported as this one."""
    wanted = {"env_id": args.env_id, "env_kwargs": list(args.env_kwargs), "model": args.model, "steps": args.steps,
              "prompts_per_step": args.prompts_per_step, "group_size": args.group_size, "lr": args.lr,
              "beta": args.beta}
    for seed in args.seeds:
        for method in args.methods:
            out = Path(args.runs) / f"{method}_seed{seed}"
            recorded = recorded_args(out) if method != "best_of_n" else None
            if recorded is None:
                continue
            keys = ["env_id", "seed"] if method == "sb3_ppo" else [*wanted, "seed"]
            differs = [k for k in keys if recorded.get(k) != {**wanted, "seed": seed}[k]]
            if differs:
                return (f"--runs {args.runs}: {out.name} holds a finished run with other {', '.join(differs)} "
                        "(runs are reused by folder); pass another --runs, or remove that folder")
    return ""


def grpo_run(args, method: str, seed: int) -> dict:
    """One GRPO-family run (reused when its card exists): curves and held-out numbers."""
    from trainers.common import resume_flags, run_state
    from trainers.grpo import main as grpo_main
    from trainers.grpo import parse_args

    out = Path(args.runs) / f"{method}_seed{seed}"
    if run_state(out)[0] != "finished":  # video runs leave card.json, language runs results.json
        flags = ["--env-id", args.env_id, *(["--env-kwargs", *args.env_kwargs] * bool(args.env_kwargs)), "--out", str(out),
                 "--steps", str(args.steps), "--prompts-per-step", str(args.prompts_per_step), "--group-size",
                 str(args.group_size), "--lr", str(args.lr), "--beta", str(args.beta), "--eval-windows",
                 str(args.eval_windows), "--eval-every", str(max(1, args.steps // 4)), "--seed", str(seed),
                 "--threads", str(args.threads), "--device", getattr(args, "device", "auto"),
                 *POLICY_GRADIENT[method], *(["--model", args.model] * bool(args.model))]
        flags += resume_flags(out)  # an interrupted run: continue from its checkpoint (or start it over)
        grpo_main(parse_args(flags))
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if line.strip()]
    if args.modality != "video":  # TRL's trainer: results.json, held-out evaluations in its history
        results = json.loads((out / "results.json").read_text())
        history = [e for e in results["eval"] if "eval/reward" in e]
        rewards = [r for r in log if "reward" in r and "step" in r]
        last = max([r["step"] for r in rewards] + [1])  # TRL logs no clock: steps spread over the run's time
        curve = [{"step": r["step"], "reward": r["reward"], "seconds": results["seconds"] * r["step"] / last,
                  "zero_spread": r.get("frac_reward_zero_std")} for r in rewards]
        return {"dir": str(out), "command": f"python -m trainers.grpo {' '.join(flags_of(results['args']))}",
                "train_seconds": results["seconds"], "start_greedy_reward": history[0]["eval/reward"],
                "final_greedy_reward": history[-1]["eval/reward"], "curve": curve,
                "eval": [{"step": e["step"], "greedy_reward": e["eval/reward"]} for e in history]}
    card = json.loads((out / "card.json").read_text())
    curve = [{"step": r["step"], "reward": r["reward"], "seconds": r["seconds"], "zero_spread": r["zero_spread"]}
             for r in log if "reward" in r]
    return {"dir": str(out), "command": card["command"], "train_seconds": card["train_seconds_this_run"],
            "start_sampled_mae": card["start"]["sampled"]["mae"], "final_sampled_mae": card["final"]["sampled"]["mae"],
            "final_greedy_mae": card["final"]["greedy"]["mae"], "curve": curve,
            "eval": [{"step": e["step"], "sampled_mae": e["eval"]["sampled"]["mae"]} for e in card["eval_history"]]}


def flags_of(config: dict) -> list[str]:
    """A GRPO config dict back as the flags that differ from the defaults."""
    from trainers.grpo_config import GRPOConfig

    defaults = GRPOConfig()
    flags = []
    for key, value in config.items():
        if value != getattr(defaults, key, value) or (isinstance(value, list) and tuple(value) != getattr(defaults, key)):
            flags += [f"--{key.replace('_', '-')}", *(map(str, value) if isinstance(value, list) else [str(value)])]
    return flags


def sb3_run(args, seed: int, seconds: float) -> dict:
    """SB3 PPO on token mode for `seconds` of learning (reused when its summary exists)."""
    from trainers.sb3_ppo import Args as PPOArgs
    from trainers.sb3_ppo import main as ppo_main

    out = Path(args.runs) / f"sb3_ppo_seed{seed}"
    if not (out / "summary.json").is_file():
        from rlvr_envs.core.arguments import parse_env_kwargs

        kwargs = parse_env_kwargs(tuple(args.env_kwargs))
        if args.modality != "video" or "data_dir" in kwargs:
            kwargs["split"] = "train"
        ppo_main(PPOArgs(env_id=args.env_id, total_timesteps=10**7, max_seconds=seconds, n_envs=2, n_steps=128,
                         batch_size=64, seed=seed, eval_episodes=args.sb3_eval, out_dir=str(out),
                         env_kwargs=(json.dumps(kwargs),)))
    summary = json.loads((out / "summary.json").read_text())
    before, after = summary["before"]["mean_reward"], summary["after"]["mean_reward"]
    if args.modality != "video":
        return {"dir": str(out), "train_seconds": summary["train_seconds"], "timesteps": summary["timesteps"],
                "start_reward": before, "final_reward": after}
    return {"dir": str(out), "train_seconds": summary["train_seconds"], "timesteps": summary["timesteps"],
            "start_mae": -before, "final_mae": -after}


def best_of_n_scores(args) -> dict:
    """Held-out sampled MAE of the start model's best of n samples (oracle selection)."""
    import torch

    from rlvr_envs.video.evaluation import best_of_draws, held_out_indices, score_world_model
    from rlvr_envs.video.task import shipped_world_model
    from trainers.grpo_config import GRPOConfig as GRPOArgs
    from trainers.grpo_video import EVAL_TOP_K, build_held_out

    from rlvr_envs.core.device import setup_device

    torch.set_num_threads(args.threads)
    device = setup_device(getattr(args, "device", "auto")).device
    held_out = build_held_out(GRPOArgs(env_id=args.env_id, env_kwargs=tuple(args.env_kwargs)), device)
    indices = held_out_indices(len(held_out), args.eval_windows)
    model = shipped_world_model(held_out, args.model or None)
    # sampled exactly as the trainer's held-out evaluation (seed 0, temperature 1, top-k 100), so
    # best of 1 is the start model's sampled MAE of the seed-0 runs
    draws = [score_world_model(model, held_out, indices, 1000 * j, top_k=EVAL_TOP_K) for j in range(max(args.best_of))]
    return {str(n): float(best["mae"].mean()) for n, best in best_of_draws(draws, args.best_of).items()}


def main(argv=None) -> int:
    from rlvr_envs.core.records import RunRecord

    args = parse(argv)
    began = time.perf_counter()
    record = RunRecord("python -m benchmarks.rl_algorithms", threads=args.threads)
    command = "python -m benchmarks.rl_algorithms " + " ".join(argv if argv is not None else sys.argv[1:])
    record.command = command
    report = {"command": command, "run": record.finish(), "env_id": args.env_id, "score": args.score,
              "config": {k: v for k, v in vars(args).items()}, "methods": {}}
    gradient_methods = [m for m in args.methods if m in POLICY_GRADIENT]
    if "best_of_n" in args.methods:  # cheap and seed-free: first
        report["best_of_n_sampled_mae"] = best_of_n_scores(args)
    for seed in args.seeds:  # seed-major, so an interrupted benchmark has every method at the first seeds
        for method in gradient_methods:
            runs = report["methods"].setdefault(method, {"seeds": {}})["seeds"]
            runs[str(seed)] = grpo_run(args, method, seed)
            finals = np.array([r[f"final_{args.score}"] for r in runs.values()])
            report["methods"][method].update({f"final_{args.score}_mean": float(finals.mean()),
                                              f"final_{args.score}_spread": float(finals.std(ddof=1))
                                              if len(finals) > 1 else 0.0})
            write(report, Path(args.out))
        if "sb3_ppo" in args.methods:
            trained = [report["methods"][m]["seeds"][str(seed)]["train_seconds"] for m in gradient_methods]
            seconds = args.sb3_seconds or (float(np.mean(trained)) if trained else 60.0)
            ppo = report["methods"].setdefault("sb3_ppo", {"seeds": {}})
            ppo["seeds"][str(seed)] = sb3_run(args, seed, seconds)
            final = "final_mae" if args.modality == "video" else "final_reward"
            ppo.update({"seconds_budget": seconds,
                        f"{final}_mean": float(np.mean([r[final] for r in ppo["seeds"].values()]))})
            write(report, Path(args.out))
    report["seconds"] = time.perf_counter() - began
    report["run"] = record.finish()
    write(report, Path(args.out))
    print((Path(args.out).with_suffix(".md")).read_text())
    return 0


def write(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    score = report.get("score", "sampled_mae")
    label = {"sampled_mae": "sampled MAE", "greedy_reward": "greedy held-out reward"}[score]
    ppo_key = "mae" if score == "sampled_mae" else "reward"
    machine = report["run"]["machine"] if "run" in report else report["machine"]
    lines = [f"# RL algorithms on {report['env_id']}", "", f"`{report['command']}` on {machine}",
             "", f"| method | seeds | start {label} | final {label} (mean ± sd over seeds) | train s / run |",
             "|---|---|---:|---:|---:|"]
    for name, method in report["methods"].items():
        runs = list(method["seeds"].values())
        if name == "sb3_ppo":
            lines.append(f"| sb3_ppo (token-mode MLP policy; mean reward on its own {report['config']['sb3_eval']} "
                         f"transitions, an invalid answer scoring the minimum) | "
                         f"{len(runs)} | {np.mean([r[f'start_{ppo_key}'] for r in runs]):.5f} | "
                         f"{method[f'final_{ppo_key}_mean']:.5f} | {np.mean([r['train_seconds'] for r in runs]):.0f} |")
        else:
            lines.append(f"| {name} | {len(runs)} | {np.mean([r[f'start_{score}'] for r in runs]):.5f} | "
                         f"{method[f'final_{score}_mean']:.5f} ± {method[f'final_{score}_spread']:.5f} | "
                         f"{np.mean([r['train_seconds'] for r in runs]):.0f} |")
    for n, mae in report.get("best_of_n_sampled_mae", {}).items():
        lines.append(f"| best of {n} samples of the start model (oracle selection, no training) | | | {mae:.5f} | 0 |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    plot(report, out.with_suffix(".png"))


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    colours = {}
    for name, method in report["methods"].items():
        if name == "sb3_ppo":
            continue
        for seed, run in method["seeds"].items():
            seconds = [c["seconds"] for c in run["curve"]]
            raw = [c["reward"] for c in run["curve"]]
            rewards = [np.mean(raw[max(0, i - 4): i + 1]) for i in range(len(raw))]  # trailing 5-step mean
            line, = left.plot(seconds, rewards, color=colours.get(name), label=name if name not in colours else None)
            colours.setdefault(name, line.get_color())
            score = report.get("score", "sampled_mae")
            right.plot([e["step"] for e in run["eval"]], [e[score] for e in run["eval"]], marker="o",
                       color=colours[name])
    for n, mae in report.get("best_of_n_sampled_mae", {}).items():
        right.axhline(mae, linestyle=":", color="grey")
        right.annotate(f"best of {n}", (0, mae), fontsize=7, color="grey")
    video = report.get("score", "sampled_mae") == "sampled_mae"
    left.set(xlabel="wall time (s)", ylabel="training reward (5-step mean)", title="training reward")
    right.set(xlabel="GRPO step", ylabel="held-out sampled MAE" if video else "held-out greedy reward",
              title="held-out (lower is better)" if video else "held-out (higher is better)")
    left.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    rows = []
    for name, method in d["methods"].items():
        runs = list(method["seeds"].values())
        seconds = f"{sum(r['train_seconds'] for r in runs) / len(runs):.0f}"
        if name == "sb3_ppo":
            rows.append([f"SB3 PPO (token-mode MLP policy; -mean reward on its own {d['config']['sb3_eval']} "
                         f"transitions, an invalid answer scoring the minimum -1)",
                         str(len(runs)), f"{sum(r['start_mae'] for r in runs) / len(runs):.5f}",
                         f"{method['final_mae_mean']:.5f}", seconds])
        else:
            rows.append([name, str(len(runs)), f"{sum(r['start_sampled_mae'] for r in runs) / len(runs):.5f}",
                         f"{method['final_sampled_mae_mean']:.5f} ± {method['final_sampled_mae_spread']:.5f}", seconds])
    for n, mae in d.get("best_of_n_sampled_mae", {}).items():
        rows.append([f"best of {n} samples of the start model (oracle selection, no training)", "", "", f"{mae:.5f}",
                     "0"])
    c = d["config"]
    return (f"**RL algorithms on one budget** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}): "
            f"{d['env_id']}, reward -MAE, {c['steps']} steps of {c['prompts_per_step']} prompts x {c['group_size']} "
            f"samples, lr {c['lr']:g}, KL {c['beta']:g}, from the shipped MLE model; held-out sampled MAE on "
            f"{c['eval_windows']} transitions (lower is better), mean ± sd over seeds.\n\n"
            + fmt.table(["method", "seeds", "start", "final", "train s / run"], ["---", "---:", "---:", "---:", "---:"],
                        rows))


SECTIONS = (
    fmt.Section("RL algorithms on one budget", ("rl_algorithms.json",), "python -m benchmarks.rl_algorithms --data DIR",
                section,
                finding="At one budget GRPO lowered held-out MAE more than Dr. GRPO and RLOO; the start model's "
                        "best of a few samples (oracle selection) matched it."),
)


if __name__ == "__main__":
    raise SystemExit(main())
