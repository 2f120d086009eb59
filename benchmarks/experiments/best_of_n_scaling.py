"""Best-of-N test-time scaling of PushT world models (RLVR-World Figure 4 analogue), oracle selection.

    python -m benchmarks.experiments.best_of_n_scaling --transitions 48 --max-n 100 --out benchmarks/results/best_of_n_scaling.json

Each model draws `--max-n` samples for every held-out single-step transition (the embedded
held-out set, sampled as the trainers evaluate: temperature 1, top-k 100, sample j with
seed 1000 * j, so both models see the same seeds); best-of-N keeps, per transition, the
sample with the highest verified reward (-MAE) among the first N. That selection reads the
true next frame, so it is an oracle: a reference for what sampling more could buy, not a
deployable model. The paper's question: does RLVR only sharpen what best-of-N already
reaches, or does one RLVR sample match many base samples? The report says at which N the
base model's best-of-N first matches the RLVR model's single sample.

Writes OUT (JSON), OUT with `.md` (table) and `.png` (MAE against N, log scale).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import sections as fmt

ENV_ID = "RLVRWorld/PushT-SingleStep-v0"
TOP_K = 100  #: as the trainers' held-out evaluation (trainers.grpo_video.EVAL_TOP_K)
CURVE = (1, 2, 3, 5, 10, 20, 30, 50, 75, 100)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transitions", type=int, default=48, help="held-out transitions")
    parser.add_argument("--max-n", type=int, default=100, help="samples per transition and model (largest N)")
    parser.add_argument("--models", nargs="+", default=["mle_base=shipped", "rlvr=shipped-rlvr"], metavar="NAME=DIR",
                        help="world models (save_pretrained directories; 'shipped' and 'shipped-rlvr' name the "
                             "embedded single-step MLE and RLVR models)")
    parser.add_argument("--threads", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--out", required=True, help="JSON path (the .md table and .png curve go beside it)")
    return parser


def model_dir(spec: str) -> str:
    from rlvr_envs.video.task import EMBEDDED_DIR, shipped_world_model_dir

    return {"shipped": str(shipped_world_model_dir("single")),
            "shipped-rlvr": str(EMBEDDED_DIR / "pusht_single_step_rlvr_model")}.get(spec, spec)


def curve_points(max_n: int) -> list[int]:
    return sorted({n for n in CURVE if n <= max_n} | {max_n})


def scaling_curve(draws: list[dict[str, np.ndarray]], ns: list[int]) -> dict[str, dict[str, float]]:
    """Mean and standard error over transitions of each metric of the best of the first N draws."""
    from rlvr_envs.video.evaluation import best_of_draws

    out = {}
    for n, best in best_of_draws(draws, ns).items():
        row = {}
        for key in ("mae", "mse", "psnr", "ssim"):
            values = best[key][np.isfinite(best[key])]
            row[key] = float(values.mean())
            row[f"{key}_stderr"] = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
        out[str(n)] = row
    return out


def matching_n(curve: dict[str, dict[str, float]], target_mae: float) -> int | None:
    """The smallest N whose best-of-N MAE is at or below `target_mae` (None: no N reaches it)."""
    for n, row in sorted(curve.items(), key=lambda item: int(item[0])):
        if row["mae"] <= target_mae:
            return int(n)
    return None


def markdown(report: dict[str, Any]) -> str:
    names = list(report["models"])
    lines = [f"# Best-of-N test-time scaling on {report['env_id']} (oracle selection)", "",
             f"`{report['command']}`", "", f"{report['machine']}, {report['date']}; {report['transitions']} held-out "
             f"transitions, {report['max_n']} samples each per model (temperature 1, top-k {TOP_K}); per "
             "transition the sample with the best verified reward (-MAE) among the first N is kept.", "",
             "| N | " + " | ".join(f"{n} MAE | {n} SSIM" for n in names) + " |",
             "|---:|" + "---:|---:|" * len(names)]
    for n in report["models"][names[0]]["curve"]:
        cells = []
        for name in names:
            row = report["models"][name]["curve"][n]
            cells += [f"{row['mae']:.5f} ± {row['mae_stderr']:.5f}", f"{row['ssim']:.4f}"]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    for claim in report.get("matches", []):
        lines += ["", claim]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name, model in report["models"].items():
        ns = [int(n) for n in model["curve"]]
        mae = np.array([row["mae"] for row in model["curve"].values()])
        err = np.array([row["mae_stderr"] for row in model["curve"].values()])
        ax.plot(ns, mae, marker="o", ms=3, label=name)
        ax.fill_between(ns, mae - err, mae + err, alpha=0.2)
    ax.set(xscale="log", xlabel="N samples (best by verified reward: oracle selection)", ylabel="held-out MAE",
           title="Best-of-N on PushT single-step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.core.factory import build_task
    from rlvr_envs.registration import entry
    from rlvr_envs.video.evaluation import held_out_indices, score_world_model
    from rlvr_envs.video.task import shipped_world_model

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.transitions < 2 or args.max_n < 1 or args.threads < 1:
        raise SystemExit("--transitions must be >= 2, --max-n and --threads >= 1")
    specs = {}
    for spec in args.models:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path or name in specs:
            raise SystemExit(f"--models takes distinct NAME=DIR pairs, got {spec!r}")
        specs[name] = model_dir(path)
    from rlvr_envs.core.device import setup_device

    torch.set_num_threads(args.threads)
    device = str(setup_device(getattr(args, "device", "auto")).device)
    task = build_task(entry(ENV_ID).task, **entry(ENV_ID).kwargs, reward="mae", device=device)
    indices = held_out_indices(len(task), args.transitions)
    ns = curve_points(args.max_n)
    report: dict[str, Any] = {
        "command": "python -m benchmarks.experiments.best_of_n_scaling " + " ".join(shlex.quote(a) for a in argv),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU, torch threads {args.threads}",
        "date": time.strftime("%Y-%m-%d %H:%M"), "env_id": ENV_ID, "transitions": len(indices),
        "max_n": args.max_n, "selection": "oracle: highest verified reward (-MAE) per transition", "models": {}}
    for name, directory in specs.items():
        model = shipped_world_model(task, directory)
        started = time.perf_counter()
        draws = [score_world_model(model, task, indices, seed=1000 * j, top_k=TOP_K)
                 for j in tqdm(range(args.max_n), desc=f"{name}: samples")]
        report["models"][name] = {"model": directory, "curve": scaling_curve(draws, ns),
                                  "seconds": round(time.perf_counter() - started, 1)}
    names = list(report["models"])
    report["matches"] = []
    for reference in names[1:]:
        single = report["models"][reference]["curve"]["1"]["mae"]
        n = matching_n(report["models"][names[0]]["curve"], single)
        report["matches"].append(
            f"One {reference} sample (MAE {single:.5f}) is matched by {names[0]}'s best of {n} (oracle)." if n else
            f"No best-of-N of {names[0]} up to N = {args.max_n} reaches one {reference} sample (MAE {single:.5f}).")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    plot(report, out.with_suffix(".png"))
    print(markdown(report))
    return 0

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    names = list(d["models"])
    points = list(d["models"][names[0]]["curve"])
    rows = [[n, *(f"{d['models'][m]['curve'][n]['mae']:.5f} ± {d['models'][m]['curve'][n]['mae_stderr']:.5f}"
                  for m in names)] for n in points]
    return (f"**Best-of-N test-time scaling** (`{d['command']}`, {fmt.shown(d['_file'])} and `.png`; {d['machine']}, "
            f"{d['date']}): {d['transitions']} held-out single-step transitions, {d['max_n']} samples per transition "
            f"and model; per transition the sample with the best verified reward among the first N is kept "
            f"(**oracle selection**: it reads the true frame, so it bounds what reranking could buy). Held-out MAE "
            f"(mean ± standard error):\n\n"
            + fmt.table(["N", *names], ["---:", *(["---:"] * len(names))], rows)
            + ("\n\n" + " ".join(d["matches"]) if d.get("matches") else ""))


SECTIONS = (
    fmt.Section("Best-of-N test-time scaling", ("best_of_n_scaling.json",),
                "python -m benchmarks.experiments.best_of_n_scaling --out benchmarks/results/best_of_n_scaling.json", section,
                finding="One sample of the RLVR model is worth the MLE model's best of several samples under "
                        "oracle selection."),
)


if __name__ == "__main__":
    raise SystemExit(main())
