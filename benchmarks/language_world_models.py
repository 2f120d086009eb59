"""Language world models side by side on one task's held-out transitions (greedy, paired).

RLVR-World's Table 1/2 rows (base, SFT, RLVR) at this machine's scale: every model answers
the same held-out transitions of a text env (`RLVRWorld/MiniWeb-v0`, `RLVRWorld/MiniTextWorld-v0`,
...) greedily, through the task's own prompt and verifier (`rlvr_envs.integrations.hf`), and
the report gives, per model, the mean reward (MiniWeb: item F1), exact accuracy overall, on
changed and on unchanged transitions, and every metric component; each later model is
compared with the first on the same transitions (mean paired difference of the reward and a
paired t-test).

    python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --transitions 256 \\
        --models sft=runs/sft_miniweb2/final rlvr=runs/grpo_miniweb/final \\
        --out benchmarks/results/web_world_models.json

Writes OUT (JSON: command, machine, config, per-model report with per-transition rewards,
and each model's training stages read from the trainers' `results.json` files, see
`training_summary`) and OUT with `.md`.
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="RLVRWorld/MiniWeb-v0", help="a text env id")
    parser.add_argument("--models", nargs="+", required=True, metavar="NAME=DIR",
                        help="models to compare, the first is the reference (save_pretrained directories)")
    parser.add_argument("--transitions", type=int, default=256, help="held-out (test split) transitions")
    parser.add_argument("--max-new-tokens", type=int, default=0, help="answer budget (0 = the task's)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="JSON path (the markdown table goes beside it)")
    return parser


def parse_models(specs: list[str]) -> dict[str, Path]:
    models: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--models takes NAME=DIR pairs, got {spec!r}")
        if name in models:
            raise SystemExit(f"--models names {name!r} twice")
        if not (Path(path).expanduser() / "config.json").is_file():
            raise SystemExit(f"--models {spec}: no Hugging Face model there (config.json missing)")
        models[name] = Path(path).expanduser()
    return models


def paired(reference: list[float], other: list[float]) -> dict[str, float]:
    """Mean of other - reference over the same transitions, its standard error and the paired
    t-test's p (`rlvr_envs.video.evaluation.paired_difference`, the video benchmarks' test)."""
    from rlvr_envs.video.evaluation import paired_difference

    result = paired_difference(reference, other)
    return {"mean_difference": result.mean, "standard_error": result.stderr, "p_value": result.p}


def training_summary(model_dir: Path) -> list[dict[str, Any]] | None:
    """How a model was trained, oldest stage first: each trainer's `results.json` beside a `final`
    directory (stage, steps, seconds, starting model), following each stage's `--model` back
    while it is a local run's `final` directory (SFT from scratch, more SFT, then GRPO)."""
    stages: list[dict[str, Any]] = []
    seen: set[Path] = set()
    directory: Path | None = model_dir
    while directory is not None and (directory.parent / "results.json").is_file() and directory not in seen:
        seen.add(directory)
        data = json.loads((directory.parent / "results.json").read_text(encoding="utf-8"))
        args = data.get("args", {})
        kind = str(args.get("algorithm", "grpo")).upper() if "group_size" in args else "SFT"
        stages.append({"stage": kind, "steps": data.get("steps"), "seconds": data.get("seconds"),
                       "model": args.get("model") or None, "run": str(directory.parent)})
        directory = Path(args["model"]).expanduser() if args.get("model") else None
    return stages[::-1] or None


def evaluate(model_dir: Path, task: Any, indices: list[int], max_new_tokens: int | None,
             batch_size: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from rlvr_envs.integrations.hf import accuracy_report, generate

    from trainers.sft import check_vocabulary

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    try:
        check_vocabulary(str(model_dir), model.config, task)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    started = time.perf_counter()
    responses = generate(model, task, indices, max_new_tokens=max_new_tokens, batch_size=batch_size)
    results = task.verify(indices, responses)
    report = accuracy_report(task, indices, results)
    report["rewards"] = [float(r.reward) for r in results]
    report["seconds"] = time.perf_counter() - started
    report["parameters"] = sum(p.numel() for p in model.parameters())
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Language world models on {report['config']['env_id']}", "",
             f"`{report['command']}`", "", f"{report['machine']}, {report['date']}; greedy answers to "
             f"{report['config']['transitions']} held-out transitions, paired.", "",
             "| model | mean reward | exact | exact (changed) | exact (unchanged) | parsed | vs first (paired) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, r in report["models"].items():
        versus = r.get("versus_first")
        cell = "" if versus is None else (f"{versus['mean_difference']:+.3f} ± {versus['standard_error']:.3f}, "
                                          f"p = {versus['p_value']:.3g}")
        lines.append(f"| {name} | {r['reward']:.3f} | {r['accuracy']:.3f} | {r['accuracy_changed']:.3f} "
                     f"({r['n_changed']}) | {r['accuracy_unchanged']:.3f} ({r['n_unchanged']}) | {r['parsed']:.3f} "
                     f"| {cell} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.integrations import task_from_env_id
    from trainers.sft import model_tokenizer_kwargs, split_kwargs

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    models = parse_models(args.models)
    if args.transitions < 2 or args.batch_size < 1 or args.threads < 1 or args.max_new_tokens < 0:
        raise SystemExit("--transitions must be >= 2; --batch-size and --threads positive; --max-new-tokens >= 0")
    torch.set_num_threads(args.threads)
    # the first model's own tokenizer when its directory carries one (as the trainers save it)
    kwargs = model_tokenizer_kwargs(str(next(iter(models.values()))), {})
    task = task_from_env_id(args.env_id, **split_kwargs(args.env_id, kwargs, "test", args.transitions))
    if not hasattr(task, "prompt_text"):
        raise SystemExit(f"{args.env_id} is not a text task")
    indices = list(range(min(args.transitions, len(task))))
    reports: dict[str, dict[str, Any]] = {}
    for name, path in tqdm(models.items(), desc="models"):
        reports[name] = evaluate(path, task, indices, args.max_new_tokens or None, args.batch_size)
        reports[name]["model"] = str(path)
        reports[name]["training"] = training_summary(path)
    reference = next(iter(reports.values()))["rewards"]
    for name in list(reports)[1:]:
        reports[name]["versus_first"] = paired(reference, reports[name]["rewards"])
    report = {"command": "python -m benchmarks.language_world_models " + " ".join(shlex.quote(a) for a in argv),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU, torch threads {args.threads}",
              "date": time.strftime("%Y-%m-%d %H:%M"),
              "config": {**vars(args), "transitions": len(indices),
                         "reward": getattr(task, "reward_description", "")},
              "models": reports}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
