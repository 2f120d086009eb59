"""The whole RLVR-World pipeline on the embedded PushT default, on a CPU: `rlvr-world demo`.

    rlvr-world demo --out runs/demo            # about 11 minutes on 2 free cores
    rlvr-world demo --out runs/demo_tiny --tiny   # a smoke run (CI)
    rlvr-world demo --domain text --out runs/demo_text   # MiniTextWorld: SFT model -> GRPO (trainers.demo_text)

1. Load the shipped frame tokenizer and MLE single-step world model.
2. Evaluate it on the embedded held-out PushT set (generated once with the real simulator).
3. GRPO post-train it on the verified reward, -MAE of the decoded frame (`trainers.grpo`,
   on PushT episodes generated once with another seed) for `--grpo-minutes`.
4. Evaluate the result on the same held-out transitions with the same sampling seeds.
5. Plan `--plan-episodes` held-out PushT episodes with CEM on each model (and random actions
   with the same budget), acting in the real PushT env, which alone judges success
   (`rlvr_envs.planning`; the CPU budget of `benchmarks/results/pusht_planning`).
6. Print a table (MAE, MSE, PSNR, SSIM, repetition; base vs RLVR, with paired t-tests; planning
   success and final position error) and write a report folder: report.md, results.json,
   grpo_reward.png, frames.png (predicted vs real frames of both models) and plan_<model>.gif
   (real rollout | goal | the model's prediction of its first plan).

Nothing needs a network or a GPU; `--device` is not offered because every step here is
sized for a CPU (larger runs: `python -m trainers.grpo` directly).
"""

from __future__ import annotations

import json
import math
import platform
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rlvr_envs.core.files import strict_json
from rlvr_envs.core.records import RunRecord, fmt, shortfall_note
from trainers.common import add_dataclass_arguments, command_line, dataclass_from_namespace, parse_dataclass_args

ENV_ID = "RLVRWorld/PushT-SingleStep-v0"
METRICS = ("mae", "mse", "psnr", "ssim", "repetition")


DOMAINS = ("pusht", "text")
TEXT_REWARDS = ("task", "binary")


@dataclass
class Args:
    domain: str = "pusht"  #: "pusht" (video world model) or "text" (MiniTextWorld, trainers.demo_text)
    out: str = "runs/demo"
    grpo_minutes: float = 7.0  #: GRPO training time (generation + updates)
    grpo_steps: int = 300  #: at most this many GRPO steps (on 2 free cores about 210 fit in 7 minutes)
    train_episodes: int = 40  #: PushT episodes GRPO trains on (generated once, seed 20000)
    eval_seeds: int = 2  #: sampling seeds of the held-out evaluation (paired across models)
    eval_windows: int = 96  #: held-out transitions evaluated
    plan_episodes: int = 4  #: CEM planning episodes per model in the real PushT env (0: skip)
    text_reward: str = "task"  #: --domain text: the GRPO reward, "task" (partial credit) or "binary" (exact match)
    seed: int = 0
    threads: int = 2
    tiny: bool = False  #: a smoke run: 2 GRPO steps, 2 training episodes, 4 held-out transitions

    def validate(self) -> "Args":
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {self.domain!r}")
        if self.plan_episodes < 0:
            raise ValueError(f"plan_episodes must be >= 0, got {self.plan_episodes}")
        if self.text_reward not in TEXT_REWARDS:
            raise ValueError(f"text_reward must be one of {TEXT_REWARDS}, got {self.text_reward!r}")
        if not (math.isfinite(self.grpo_minutes) and self.grpo_minutes > 0):
            raise ValueError(f"grpo_minutes must be > 0, got {self.grpo_minutes}")
        for name in ("grpo_steps", "train_episodes", "eval_seeds", "eval_windows", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise ValueError(f"out: {self.out} is a file; pass a folder to write into")
        return self

    def resolved(self) -> "Args":
        self.validate()
        if self.tiny:
            return Args(domain=self.domain, out=self.out, grpo_minutes=self.grpo_minutes, grpo_steps=2,
                        train_episodes=2, eval_seeds=1, eval_windows=4, plan_episodes=min(1, self.plan_episodes),
                        text_reward=self.text_reward, seed=self.seed,
                        threads=self.threads, tiny=True)
        return self


def evaluate(model, task, indices, seeds: int) -> dict[str, dict[str, np.ndarray]]:
    from rlvr_envs.video.evaluation import score_world_model

    sampled = [score_world_model(model, task, indices, seed=1000 * s, temperature=1.0, top_k=100)
               for s in range(seeds)]
    return {"sampled": {k: np.concatenate([x[k] for x in sampled]) for k in sampled[0]},
            "greedy": score_world_model(model, task, indices, temperature=0.0)}


def frames_figure(task, indices, models: dict, path: Path) -> None:
    """Rows: real next frame, then each model's greedy prediction, for a few transitions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlvr_envs.video.world_model import generate_responses

    shown = indices[:: max(1, len(indices) // 6)][:6]
    prompts = np.stack([task.prompt_ids(i) for i in shown])
    rows = {"real": [task.transition(i).next_state[0] for i in shown]}
    for name, model in models.items():
        responses = generate_responses(model, prompts, task.layout, None, temperature=0.0)
        rows[name] = [task.render_frames(i, r)[: task.tokenizer.config.resolution[0]] for i, r in zip(shown, responses)]
    fig, axes = plt.subplots(len(rows), len(shown), figsize=(1.6 * len(shown), 1.7 * len(rows)), squeeze=False)
    for r, (name, frames) in enumerate(rows.items()):
        for c, frame in enumerate(frames):
            axes[r][c].imshow(frame)
            axes[r][c].set_xticks([])
            axes[r][c].set_yticks([])
        axes[r][0].set_ylabel(name, fontsize=8)
    fig.suptitle("PushT next frame (5 simulator steps ahead): real vs greedy predictions", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reward_figure(log: Path, path: Path, ylabel: str = "reward (-MAE)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if "reward" in r]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([r["step"] for r in rows], [r["reward"] for r in rows], alpha=0.4, label="per step")
    if len(rows) >= 10:
        smooth = np.convolve([r["reward"] for r in rows], np.ones(10) / 10, mode="valid")
        ax.plot([r["step"] for r in rows][9:], smooth, label="10-step mean")
    ax.set(xlabel="GRPO step", ylabel=ylabel, title="GRPO training reward")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plan_episodes(models: dict, task, args: Args, out: Path) -> dict:
    """CEM planning success in the real PushT env with each world model as the simulator, beside
    random actions at the same budget; the first episode of each is saved as a GIF."""
    from tqdm.auto import tqdm

    from rlvr_envs.planning.cem import (CEMConfig, CEMPlanner, MPCConfig, RandomPlanner, planning_tasks, run_episode,
                                        success_summary)
    from rlvr_envs.planning.command import save_episode_gif
    from rlvr_envs.simulators import LearnedPushTSim, PushTChunkEnv
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import embedded_heldout_dir

    config = CEMConfig(horizon=2, samples=4, top_k=2, iterations=1) if args.tiny else CEMConfig.cpu()
    mpc = MPCConfig(rounds=1 if args.tiny else 2)
    resolution = task.tokenizer.config.resolution[0]
    episodes = PushTEpisodeDataset(embedded_heldout_dir(task.config.episodes, resolution))
    tasks = planning_tasks(list(episodes), args.plan_episodes, offset=25, seed=args.seed)
    real = PushTChunkEnv(resolution=resolution, max_steps=10_000)
    planners = {name: CEMPlanner(LearnedPushTSim(model, task.tokenizer, reward="none", batch_size=config.samples),
                                 config, "pixels", name=f"cem_{name}") for name, model in models.items()}
    planners["random"] = RandomPlanner(config)
    summary = {}
    for name, planner in planners.items():
        results = []
        for episode in tqdm(tasks, desc=f"plan {name}"):
            record = episode.index == 0 and name != "random"
            result = run_episode(real, planner, episode, mpc, seed=args.seed, record=record)
            results.append(result)
            if record:
                save_episode_gif(out / f"plan_{name}.gif", real, episode, result)
        summary[name] = success_summary(results) | {"episodes_detail": [r.as_dict() for r in results]}
    return {"cem": vars(config), "mpc": vars(mpc), "episodes": [t.source for t in tasks],
            "success": "DINO-WM eval_state on the real env: agent+block position error < 20 px, angle < pi/9",
            "planners": summary}


def planning_table(planning: dict) -> str:
    cem = planning["cem"]
    lines = [f"CEM in the real PushT env, {len(planning['episodes'])} held-out episodes (goal 25 steps ahead), "
             f"budget: horizon {cem['horizon']}, {cem['samples']} samples, top {cem['top_k']}, "
             f"{cem['iterations']} iterations, {planning['mpc']['rounds']} plans per episode; success judged by the "
             "real env alone.", "",
             "| planner | successes | success rate (95% CI) | final position error (px) | s/episode |",
             "|---|---|---|---|---|"]
    for name, s in planning["planners"].items():
        lines.append(f"| {name} | {s['successes']}/{s['episodes']} | {s['success_rate']:.2f} "
                     f"[{s['ci95'][0]:.2f}, {s['ci95'][1]:.2f}] | {s['position_error']:.1f} | "
                     f"{s['seconds_per_episode']:.1f} |")
    return "\n".join(lines)


def table(results: dict) -> str:
    lines = ["| model | mode | MAE | MSE | PSNR | SSIM | repetition | MAE vs base (paired) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, by_mode in results["models"].items():
        for mode, values in by_mode.items():
            change = values.get("mae_change_percent")
            test = values.get("vs_base", {}).get("mae")
            versus = "-" if change is None else f"{change:+.1f}% (p={test['p']:.1e})"
            lines.append(f"| {name} | {mode} | {values['mae']:.5f} | {values['mse']:.5f} | {values['psnr']:.2f} | "
                         f"{values['ssim']:.4f} | {values['repetition']:.3f} | {versus} |")
    for name, values in results["baselines"].items():
        lines.append(f"| {name} | - | {values['mae']:.5f} | {values['mse']:.5f} | {values['psnr']:.2f} | "
                     f"{values['ssim']:.4f} | {values['repetition']:.3f} | |")
    return "\n".join(lines)


def main(args: Args) -> dict:
    import torch

    from rlvr_envs.core.factory import build_task
    from rlvr_envs.registration import entry
    from rlvr_envs.video.evaluation import held_out_indices, paired_difference, score_baselines, summarize
    from rlvr_envs.video.task import shipped_world_model
    from rlvr_envs.video.world_model import load_world_model
    from trainers import grpo

    args = args.resolved()
    if args.domain == "text":
        from trainers import demo_text

        return demo_text.main(args)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"[1/5] loading the shipped PushT tokenizer and MLE world model; held-out set for {ENV_ID}", flush=True)
    task = build_task(entry(ENV_ID).task, **entry(ENV_ID).kwargs, reward="mae")
    base = shipped_world_model(task)
    indices = held_out_indices(len(task), args.eval_windows)
    print(f"[2/5] evaluating the MLE base on {len(indices)} held-out transitions x {args.eval_seeds} seeds", flush=True)
    scores = {"mle_base": evaluate(base, task, indices, args.eval_seeds)}

    print(f"[3/5] GRPO on the verified reward for up to {args.grpo_minutes} min / {args.grpo_steps} steps", flush=True)
    if (out / "grpo").exists():  # the demo's own folder: a new demo replaces the last one's GRPO run
        print(f"      replacing the earlier demo's {out / 'grpo'}", flush=True)
        shutil.rmtree(out / "grpo")
    record = RunRecord.start("rlvr-world demo: GRPO", threads=args.threads)
    grpo_args = grpo.Args(env_id=ENV_ID, env_kwargs=("reward=mae",), out=str(out / "grpo"), steps=args.grpo_steps,
                          max_seconds=60 * args.grpo_minutes, lr=1e-4, train_episodes=args.train_episodes,
                          eval_every=10**9, eval_windows=min(16, args.eval_windows), seed=args.seed,
                          threads=args.threads)
    card = grpo.main(grpo_args)
    run, shortfall = grpo_run(record, args, card["steps"])
    rlvr = load_world_model(str(out / "grpo"), task.vocab)

    print("[4/5] evaluating the RLVR model on the same transitions and seeds", flush=True)
    scores["rlvr"] = evaluate(rlvr, task, indices, args.eval_seeds)
    results = {"env_id": ENV_ID, "reward": "-MAE of the decoded frame", "held_out_transitions": len(indices),
               "sampling_seeds": args.eval_seeds, "grpo_steps": card["steps"],
               "grpo_seconds": card["train_seconds_this_run"], "models": {},
               "baselines": {k: summarize(v) for k, v in score_baselines(task, indices).items()}}
    for name, by_mode in scores.items():
        results["models"][name] = {}
        for mode, values in by_mode.items():
            summary = summarize(values)
            if name != "mle_base":
                reference = scores["mle_base"][mode]
                summary["vs_base"] = {k: paired_difference(reference[k], values[k]).as_dict()
                                      for k in ("mae", "mse", "psnr", "ssim")}
                summary["mae_change_percent"] = 100 * (summary["mae"] / float(reference["mae"].mean()) - 1)
            results["models"][name][mode] = summary
    if args.plan_episodes:
        print(f"[5/5] CEM planning of {args.plan_episodes} held-out episodes per model in the real PushT env",
              flush=True)
        results["planning"] = plan_episodes({"mle_base": base, "rlvr": rlvr}, task, args, out)
    results.update(total_seconds=round(time.perf_counter() - started, 1), args=asdict(args),
                   command=command_line("rlvr-world demo", args), machine=machine_line(run), grpo_run=run,
                   grpo_shortfall=shortfall)
    (out / "results.json").write_text(json.dumps(strict_json(results), indent=2) + "\n", encoding="utf-8")
    frames_figure(task, indices, {"MLE base": base, "RLVR (GRPO)": rlvr}, out / "frames.png")
    reward_figure(out / "grpo" / "log.jsonl", out / "grpo_reward.png")
    report = (f"# rlvr-world demo\n\n`{results['command']}` on {results['machine']}, "
              f"{results['total_seconds'] / 60:.1f} min in all ({card['steps']} GRPO steps, "
              f"{card['train_seconds_this_run'] / 60:.1f} min).\n\n" + (f"**{shortfall}.**\n\n" if shortfall else "")
              + f"{table(results)}\n\n![frames](frames.png)\n\n![reward](grpo_reward.png)\n")
    if "planning" in results:
        report += (f"\n## Planning\n\n{planning_table(results['planning'])}\n\n"
                   "GIFs (real rollout | goal | the model's prediction of its first plan): "
                   + ", ".join(f"[{name}](plan_{name}.gif)" for name in ("mle_base", "rlvr")) + "\n")
    (out / "report.md").write_text(report, encoding="utf-8")
    print(table(results))
    if "planning" in results:
        print(planning_table(results["planning"]))
    if shortfall:
        print(shortfall)
    print(f"report: {out / 'report.md'}")
    return results


def grpo_run(record: RunRecord, args: Args, steps: int) -> tuple[dict, str | None]:
    """The GRPO phase's run record, and (when the time limit cut it short) the sentence saying so."""
    run = record.finish()
    shortfall = shortfall_note("GRPO", args.grpo_steps, steps, run)
    if shortfall:
        print(shortfall, flush=True)
    return run, shortfall


def machine_line(run: dict) -> str:
    """The machine as the report states it: threads asked for and the CPU share GRPO really got."""
    return (f"{platform.machine()}, CPU, {run['threads']} threads requested, GRPO got {run['cpu_share']:.0%} of them "
            f"(1-min load average before/after {fmt(run['load_before'])} / {fmt(run['load_after'])})")


def add_arguments(parser) -> None:
    """`rlvr-world demo`'s arguments (the CLI adds them only when the command is named)."""
    add_dataclass_arguments(parser, Args)
    parser.set_defaults(func=lambda namespace: main(dataclass_from_namespace(Args, namespace)) and 0,
                        check=lambda namespace: dataclass_from_namespace(Args, namespace).validate())


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
