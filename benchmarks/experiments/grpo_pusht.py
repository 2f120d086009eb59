"""Does GRPO on the verified reward improve the shipped PushT world model? (issue 10)

    python -m benchmarks.experiments.grpo_pusht --layout single --data data/pusht64 --seeds 0 1 2 --steps 150

Stages, each skipped when its output exists (so an interrupted benchmark resumes):
1. GRPO from the shipped MLE model, once per seed (`trainers.grpo`, reward -MAE, training
   windows from `--data`'s train split), in `--runs/grpo_<layout>_seed<s>`.
2. Continued MLE from the same shipped model on the same training data for the mean GRPO
   training time (generation + updates, evaluation excluded) - the matched-time baseline.
3. One paired evaluation of every model on the same held-out transitions (`--data`'s test
   split) with the same sampling seeds: sampled (temperature 1, top-k 100, one sample per
   transition and seed, seeds averaged within a transition) and greedy; paired t-tests over transitions
   of each model against the MLE base and copy-last-frame, on pixels and the judge's object errors.

Writes benchmarks/results/grpo_pusht_<layout>.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parents[1] / "results"
EVAL_TOP_K = 100


def run(command: list[str], log: Path) -> None:
    print("$", " ".join(command), f"> {log}", flush=True)
    with log.open("a", encoding="utf-8") as handle:
        subprocess.run(command, check=True, stdout=handle, stderr=subprocess.STDOUT)


def grpo_seconds(directory: Path) -> float:
    """Training time of a GRPO run: generation + updates of every step, evaluation excluded."""
    total = 0.0
    for line in (directory / "log.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        total += record.get("generate_seconds", 0.0) + record.get("update_seconds", 0.0)
    return total


def evaluate_models(models: dict[str, str], args) -> dict:
    """Per-transition metrics of every model on the same transitions and sampling seeds (seeds averaged
    within a transition, the unit of the paired tests), with the judge's object errors (PushT's
    reward="pose" reports them), against the MLE base and against copying the last frame."""
    import torch

    from baselines.video import score_baselines
    from rlvr_envs.core.device import setup_device
    from rlvr_envs.video.evaluation import held_out_indices, score_sampled, score_world_model, summarize
    from rlvr_envs.video.world_model import load_world_model
    from trainers.demo import compare
    from trainers.grpo_config import GRPOConfig as GRPOArgs
    from trainers.grpo_video import build_held_out

    torch.set_num_threads(args.threads)
    device = setup_device(getattr(args, "device", "auto")).device
    grpo_args = GRPOArgs(env_id=env_id(args.layout), env_kwargs=("reward=pose", f"data_dir={args.data}"))
    held_out = build_held_out(grpo_args, device)
    indices = held_out_indices(len(held_out), args.eval_windows)
    scores = {}
    for name, directory in models.items():
        model = load_world_model(directory, held_out.vocab, device=str(device))
        scores[name] = {"sampled": score_sampled(model, held_out, indices, args.eval_seeds, top_k=EVAL_TOP_K),
                        "greedy": score_world_model(model, held_out, indices, temperature=0.0)}
        print(f"{name}: sampled MAE {scores[name]['sampled']['mae'].mean():.5f}, greedy MAE "
              f"{scores[name]['greedy']['mae'].mean():.5f}", flush=True)
    baselines = score_baselines(held_out, indices)
    return {"held_out_transitions": len(indices), "sampling_seeds": args.eval_seeds,
            "models": compare(scores, baselines),
            "baselines": {name: summarize(values) for name, values in baselines.items()}}


def env_id(layout: str) -> str:
    return f"RLVRWorld/PushT-{'SingleStep' if layout == 'single' else 'MultiStep'}-v0"


def plot(report: dict, runs: dict[str, Path], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, directory in runs.items():
        rows = [json.loads(line) for line in (directory / "log.jsonl").read_text().splitlines()]
        rows = [r for r in rows if "reward" in r]
        reward = np.convolve([r["reward"] for r in rows], np.ones(10) / 10, mode="valid")
        left.plot([r["step"] for r in rows][9:], reward, label=name)
    left.set(xlabel="GRPO step", ylabel="training reward (-MAE), 10-step mean", title="GRPO training reward")
    left.legend(fontsize=8)
    names = list(report["models"])
    values = [report["models"][n]["sampled"]["mae"] for n in names]
    right.bar(range(len(names)), values, color=["grey"] + ["tab:blue"] * (len(names) - 1))
    for name, ref in report["baselines"].items():
        right.axhline(ref["mae"], linestyle="--", linewidth=1, label=name, color="k" if "ceiling" in name else "r")
    right.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    right.set(ylabel="held-out MAE (sampled, T=1, top-k 100)", title="held-out MAE, lower is better")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(report: dict) -> str:
    lines = [f"# GRPO on PushT {report['layout']}-step ({report['machine']})", "", f"`{report['command']}`", "",
             f"{report['held_out_transitions']} held-out transitions x {report['sampling_seeds']} sampling seeds "
             "(paired: every model sees the same transitions and seeds); reward -MAE; LPIPS not used.", "",
             "| model | sampled MAE | vs base (paired) | p | sampled SSIM | sampled PSNR | greedy MAE | repetition "
             "(sampled) | training s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in report["models"].items():
        s, g = entry["sampled"], entry["greedy"]
        change = f"{s['mae_change_percent']:+.1f}%" if "vs_base" in s else "-"
        p = f"{s['vs_base']['mae']['p']:.1e}" if "vs_base" in s else "-"
        seconds = report["training_seconds"].get(name, "-")
        lines.append(f"| {name} | {s['mae']:.5f} | {change} | {p} | {s['ssim']:.4f} | {s['psnr']:.2f} | "
                     f"{g['mae']:.5f} | {s['repetition']:.3f} | {seconds} |")
    for name, ref in report["baselines"].items():
        lines.append(f"| {name} (baseline) | {ref['mae']:.5f} | | | {ref['ssim']:.4f} | {ref['psnr']:.2f} | | "
                     f"{ref['repetition']:.3f} | |")
    lines += ["", "Training stages (GRPO: reward -MAE, group 8 x 4 prompts, KL 1e-3; continued MLE: the same shipped "
              f"model and training data for at least the mean GRPO training time, {report['matched_seconds']} s):", ""]
    lines += [f"- {name}: `{command}`" for name, command in report["stage_commands"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", choices=("single", "multi"), default="single")
    parser.add_argument("--data", default="data/pusht64", help="PushT episodes (`rlvr-world data pusht`)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--mle-lr", type=float, default=1e-4)
    parser.add_argument("--eval-windows", type=int, default=128)
    parser.add_argument("--eval-seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--runs", default="runs/bench")
    args = parser.parse_args(argv)
    from rlvr_envs.video.task import shipped_world_model_dir

    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    base = str(shipped_world_model_dir(args.layout))
    grpo_runs = {}
    for seed in args.seeds:
        grpo_runs[f"grpo_seed{seed}"] = grpo_stage(args, runs / f"grpo_{args.layout}_seed{seed}", seed)
    seconds = {name: round(grpo_seconds(out), 1) for name, out in grpo_runs.items()}
    matched = float(np.mean(list(seconds.values())))
    mle = runs / f"mle_continued_{args.layout}"
    seconds["mle_continued"] = continued_mle_stage(args, base, mle, matched)
    models = {"mle_base": base, "mle_continued": str(mle), **{name: str(out) for name, out in grpo_runs.items()}}
    report = evaluate_models(models, args)
    # each training stage's own command (a stage may have been run by hand, e.g. seeds in parallel)
    report["stage_commands"] = {name: json.loads((Path(d) / "card.json").read_text()).get("command")
                                for name, d in models.items() if name != "mle_base"}
    report.update(layout=args.layout, training_seconds=seconds, matched_seconds=round(matched, 1),
                  command="python -m benchmarks.experiments.grpo_pusht " + " ".join(argv if argv is not None else sys.argv[1:]),
                  machine=f"{platform.machine()}, {platform.processor() or 'CPU'}, {args.threads} threads",
                  grpo_args={"steps": args.steps, "group_size": args.group_size,
                             "prompts_per_step": args.prompts_per_step, "lr": args.lr, "beta": 1e-3})
    grpo = [report["models"][n]["sampled"]["mae_change_percent"] for n in grpo_runs]
    report["grpo_mae_change_percent"] = {"mean": float(np.mean(grpo)), "min": float(np.min(grpo)),
                                         "max": float(np.max(grpo))}
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"grpo_pusht_{args.layout}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    plot(report, grpo_runs, stem.with_suffix(".png"))
    print(markdown(report))
    return report


def grpo_stage(args, out: Path, seed: int, env_kwargs: tuple[str, ...] = ("reward=mae",)) -> Path:
    """GRPO from the shipped MLE model on `args.data`'s training split, logged to OUT.log;
    skipped when `out` holds a finished run (`--resume` continues an interrupted one)."""
    from trainers.common import resume_flags, run_state

    if run_state(out)[0] != "finished":
        run([sys.executable, "-m", "trainers.grpo", "--env-id", env_id(args.layout), "--env-kwargs", *env_kwargs,
             f"data_dir={args.data}", "--steps", str(args.steps), "--seed", str(seed), "--out", str(out),
             "--group-size", str(args.group_size), "--prompts-per-step", str(args.prompts_per_step),
             "--lr", str(args.lr), "--eval-every", str(args.steps), "--threads", str(args.threads),
             "--device", getattr(args, "device", "auto"), *resume_flags(out)], out.parent / f"{out.name}.log")
    return out


def continued_mle_stage(args, base: str, out: Path, seconds: float) -> float:
    """The matched-time baseline: MLE from the shipped model `base` on the same data for `seconds`
    (skipped when `out` holds a finished run); returns its training seconds."""
    from trainers.common import resume_flags

    if not (out / "card.json").is_file():
        tokenizer = json.loads((Path(base) / "card.json").read_text())["args"]["tokenizer"]
        run([sys.executable, "-m", "trainers.train_video_world_model", "--data", args.data, "--layout", args.layout,
             "--tokenizer", tokenizer_dir(tokenizer), "--init", base, "--out", str(out), "--steps", "1000000",
             "--lr", str(args.mle_lr), "--warmup", "10", "--eval-every", "1000000", "--eval-windows", "16",
             "--max-seconds", str(seconds), "--threads", str(args.threads),
             "--device", getattr(args, "device", "auto"), *resume_flags(out)], out.parent / f"{out.name}.log")
    return json.loads((out / "card.json").read_text())["train_seconds_this_run"]


def tokenizer_dir(recorded: str) -> str:
    """The shipped tokenizer (the card records the training-time path, which may not exist here)."""
    from rlvr_envs.video.task import default_tokenizer_dir

    return recorded if Path(recorded, "config.json").is_file() else str(default_tokenizer_dir())

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def _grpo_rows(d: dict) -> list[list[str]]:
    rows = []
    grpo_seconds = [s for name, s in d["training_seconds"].items() if name.startswith("grpo")]
    for name, model in d["models"].items():
        sampled, greedy = model["sampled"], model["greedy"]
        if name == "mle_base":
            label, versus = "MLE base (shipped)", ""
        else:
            versus = f"{fmt.change(sampled['mae_change_percent'])} (p = {fmt.p_value(sampled['vs_base']['mae']['p'])})"
            if name == "mle_continued":
                spent, matched = d["training_seconds"][name], d["matched_seconds"]
                label = (f"MLE continued, {spent:,.0f} s ({'more' if spent >= matched else 'less'} than GRPO's "
                         f"{matched:,.0f} s{' mean' if len(grpo_seconds) > 1 else ''})")
            else:
                label = "GRPO seed " + name.removeprefix("grpo_seed")
        rows.append([label, f"{sampled['mae']:.5f}", versus, f"{sampled['ssim']:.4f}", f"{sampled['psnr']:.2f}",
                     f"{greedy['mae']:.5f}"])
    names = {"copy_last_frame_tokens": "copy the last frame, in token space",
             "tokenizer_ceiling": "tokenizer ceiling (gold codes)"}
    for name, metrics in d["baselines"].items():
        rows.append([names.get(name, name), f"{metrics['mae']:.5f}", "", f"{metrics['ssim']:.4f}",
                     f"{metrics['psnr']:.2f}", ""])
    return rows


def _grpo_setup(d: dict) -> str:
    args = d["grpo_args"]
    seconds = [s for name, s in d["training_seconds"].items() if name.startswith("grpo")]
    threads = {fmt.flag(c, "--threads") for name, c in d.get("stage_commands", {}).items() if name.startswith("grpo")}
    count = threads.pop() if len(threads) == 1 else None
    where = f" on {count} thread{'' if count == '1' else 's'} each" if count else ""
    return (f"-MAE of the decoded frame; {args['prompts_per_step']} prompts x {args['group_size']} samples, "
            f"KL {fmt.sci(args['beta'])}, lr {fmt.sci(args['lr'])}, {args['steps']} steps, "
            f"{fmt.minutes_range(seconds)} minutes per seed{where}")


def section_single(files: list[dict]) -> str:
    d = files[0]
    models = d["models"]
    grpo = [m for name, m in models.items() if name.startswith("grpo")]
    base, continued = models["mle_base"], models.get("mle_continued")
    copy = d["baselines"]["copy_last_frame_tokens"]["mae"]
    improves = all(m["sampled"]["mae_change_percent"] < 0 and m["sampled"]["vs_base"]["mae"]["p"] < 0.05
                   for m in grpo)
    title = "GRPO on -MAE lowers the PushT world model's pixel error" if improves else "RLVR on the PushT world model"
    text = (f"**{title}** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}): GRPO on the verified reward "
            f"({_grpo_setup(d)}) from the shipped MLE single-step model, evaluated on "
            f"{d['held_out_transitions']} held-out transitions x {d['sampling_seeds']} sampling seeds, the same for "
            f"every model (sampled and greedy; paired t-tests against the base"
            + ("" if "vs_copy_last" in grpo[0]["sampled"] else ", each sampling seed counted as a sample, and no "
               "object errors: this run predates both; the reward comparison below judges -MAE by the objects")
            + "):\n\n")
    text += fmt.table(["model", "sampled MAE", "vs MLE base", "SSIM", "PSNR", "greedy MAE"],
                      ["---", "---:", "---:", "---:", "---:", "---:"], _grpo_rows(d)) + "\n\n"
    grpo_beats = all(m["sampled"]["mae"] < copy for m in grpo)
    base_beats = base["sampled"]["mae"] < copy
    if grpo_beats and not base_beats:
        text += ("After GRPO the model's samples beat copying the last frame's tokens, which the MLE model's "
                 "samples do not.")
    elif grpo_beats:
        text += "Both the MLE model's and GRPO's samples beat copying the last frame's tokens."
    else:
        text += "GRPO's samples do not yet beat copying the last frame's tokens."
    if continued:
        change, p = continued["sampled"]["mae_change_percent"], continued["sampled"]["vs_base"]["mae"]["p"]
        if p >= 0.05:
            text += f" The same time spent on more MLE barely moves it ({fmt.change(change)}, p = {fmt.p_value(p)})."
        else:
            text += f" The same time spent on more MLE moves it by {fmt.change(change)} (p = {fmt.p_value(p)})."
    return text


def _joined(values: list[str]) -> str:
    return " / ".join(values)


def _mae(metrics: dict) -> str:
    return f"{metrics['mae']:.5f}"


def section_multi(files: list[dict]) -> str:
    d = files[0]
    models = d["models"]
    seeds = [name for name in models if name.startswith("grpo")]
    base, continued = models["mle_base"], models.get("mle_continued")
    grpo_seconds = [d["training_seconds"][name] for name in seeds]
    future = fmt.card("pusht_multi_step_model").get("args", {}).get("future")
    count = "one GRPO seed so far" if len(seeds) == 1 else f"{len(seeds)} GRPO seeds (values per seed: " + \
        ", ".join(s.removeprefix("grpo_seed") for s in seeds) + ")"
    sampled = [models[s]["sampled"] for s in seeds]
    greedy = [models[s]["greedy"] for s in seeds]
    text = (f"Multi-step, {count} (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}; {d['grpo_args']['steps']} "
            f"GRPO steps, "
            f"{_joined([format(s, ',.0f') for s in grpo_seconds])} s): on {d['held_out_transitions']} held-out windows"
            f"{f' of {future} frames' if future else ''} x {d['sampling_seeds']} sampling seeds, paired, sampled MAE "
            f"{base['sampled']['mae']:.5f} -> {_joined([_mae(m) for m in sampled])} ("
            + _joined([f"{fmt.change(m['mae_change_percent'])}, p = {fmt.p_value(m['vs_base']['mae']['p'])}" for m in sampled]))
    if continued:
        text += (f"; continued MLE for {d['training_seconds']['mle_continued']:,.0f} s: "
                 f"{fmt.change(continued['sampled']['mae_change_percent'])}, "
                 f"p = {fmt.p_value(continued['sampled']['vs_base']['mae']['p'])}")
    text += (f"), greedy MAE {base['greedy']['mae']:.5f} -> {_joined([_mae(m) for m in greedy])}. "
             f"Greedy repetition (a predicted frame token-identical to the previous one) went "
             f"{fmt.rate(base['greedy']['repetition'])} -> {_joined([fmt.rate(m['repetition']) for m in greedy])} with GRPO")
    if continued:
        text += f", and to {fmt.rate(continued['greedy']['repetition'])} with continued MLE"
        if all(m["repetition"] >= continued["greedy"]["repetition"] for m in greedy):
            text += (": on this reward and budget GRPO does not yet cut repetition the way the paper's does "
                     "(continued MLE cuts it more)")
        else:
            text += ": GRPO cuts repetition more than continued MLE"
    return text + "."


SECTIONS = (
    fmt.Section("RLVR on the PushT world model", ("grpo_pusht_single.json",),
                "python -m benchmarks.experiments.grpo_pusht --layout single ...", section_single,
                finding="GRPO on -MAE lowered the single-step model's pixel error beyond what as much MLE did; "
                        "this run predates the object errors, which show that -MAE pays for leaving the pusher "
                        "out."),
    fmt.Section("GRPO on PushT multi-step", ("grpo_pusht_multi.json",),
                "python -m benchmarks.experiments.grpo_pusht --layout multi ...", section_multi,
                finding="One seed: GRPO lowered the multi-step model's sampled MAE where continued MLE did not, "
                        "but cut greedy repetition less than continued MLE."),
)


if __name__ == "__main__":
    main()
