"""Which of two learned simulators ranks the policies better, from two Real2Sim runs on the same starts.

Two `rlvr-world policy-eval` runs with the same policies and starts (the real simulator's
successes identical) differ only in the learned simulator. Their Pearsons and MMRVs alone do
not say which simulator is better: with seven policies either moves a lot with the starts
drawn. This draws the starts again with replacement, the same draw for both runs (paired), and
reports each metric's difference (second run minus first), its 95% range and the share of draws
in which the second run's metric is the higher (`rlvr_envs.policy_eval.metrics.start_difference`).

    python -m benchmarks.real2sim_compare benchmarks/results/real2sim/recipe_in_arena_starts_40starts \
        benchmarks/results/real2sim/recipe_defaults_waypoint_40starts \
        --out benchmarks/results/real2sim_default_choice.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from rlvr_envs.core.arguments import at_least
from rlvr_envs.core.files import strict_json, write_json_atomic
from rlvr_envs.core.records import recorded_command
from typing import Any
from benchmarks import sections as fmt


def read_run(folder: Path) -> dict:
    """A policy-eval results.json (the folder or the file); SystemExit with one line when unreadable."""
    path = folder / "results.json" if folder.is_dir() else folder
    try:
        run = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"real2sim_compare: cannot read a policy-eval run from {path}: {exc}") from None
    if not isinstance(run, dict) or not run.get("rollouts"):
        raise SystemExit(f"real2sim_compare: {path} has no rollouts to draw starts from (not a policy-eval run)")
    return run


def compare(first: dict, second: dict, resamples: int = 2000, seed: int = 0) -> dict:
    """Paired comparison of two runs' Pearson and MMRV; ValueError when their starts differ."""
    from rlvr_envs.policy_eval.metrics import RANK_METRICS, start_difference
    from rlvr_envs.policy_eval.real2sim import success_matrices

    (p1, s1, r1), (p2, s2, r2) = success_matrices(first["rollouts"]), success_matrices(second["rollouts"])
    if p1 != p2 or r1.shape != r2.shape:
        raise ValueError(f"the runs need the same policies and starts; got {p1} x {r1.shape[1]} starts and "
                         f"{p2} x {r2.shape[1]} starts")
    if not np.array_equal(r1, r2):
        raise ValueError("the real simulator's successes differ between the runs: they did not start from the "
                         "same states")
    return {name: start_difference(metric, first=(s1, r1), second=(s2, r2), resamples=resamples, seed=seed)
            for name, metric in RANK_METRICS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a policy-eval output folder (or its results.json)")
    parser.add_argument("second", type=Path, help="another, from the same starts")
    parser.add_argument("--resamples", type=at_least(100), default=2000)
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    first, second = read_run(args.first), read_run(args.second)
    try:
        result = compare(first, second, args.resamples, args.seed)
    except ValueError as exc:
        raise SystemExit(f"real2sim_compare: {exc}") from None
    for name, row in result.items():
        print(f"{name}: second - first {row['difference']:+.3f} (95% over starts {row['low']:+.2f} to "
              f"{row['high']:+.2f}); the second higher in {row['second_higher']:.0%} of {row['draws']} draws")
    report = {"command": recorded_command("python -m benchmarks.real2sim_compare", args),
              "time": time.strftime("%Y-%m-%d %H:%M"),
              "first": {"run": str(args.first), "model": first.get("model"), "pearson": first["summary"]["pearson"],
                        "mmrv": first["summary"]["mmrv"]},
              "second": {"run": str(args.second), "model": second.get("model"),
                         "pearson": second["summary"]["pearson"], "mmrv": second["summary"]["mmrv"]},
              "starts": first["policies"][0]["starts"], "resamples": args.resamples, **result}
    if args.out is not None:
        write_json_atomic(args.out, strict_json(report))  # an undefined figure: null
    return 0

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def _number(x: Any, digits: int = 3) -> str:
    return "n/a" if fmt.nan(x) else f"{x:.{digits}f}"


_LEARNED_START = {"history": "the recorded frames and actions that led to each start",
                  "frame": "each start frame repeated, the agent standing still"}


_LEAD_FROM = {"end": "its end",
              "success": "the step its block first covered the goal past the success bar (`--lead-from success`)"}


def real2sim_summary(d: dict) -> dict:
    """A Real2Sim run's summary with its intervals over starts (runs from before them: from their rollouts)."""
    from rlvr_envs.policy_eval.real2sim import start_intervals

    s = d["summary"]
    return s if "pearson_interval" in s else {**start_intervals(d.get("rollouts", [])), **s}


def section(files: list[dict]) -> str:
    from rlvr_envs.policy_eval.real2sim import metric_text, probe_sentences

    parts = []
    for d in files:
        s = real2sim_summary(d)
        rows = [[p["policy"], f"{p['learned_success']:.2f}", f"{p['real_success']:.2f}", f"{p['real_env_success']:.2f}",
                 str(p["starts"])] for p in d["policies"]]
        model = Path(d["model"]).name if d.get("model") else Path(d["_file"]).parent.name
        text = (f"**Real2Sim on PushT, {Path(d['_file']).parent.name} world model** ({model}; `{d['command']}`, "
                f"{fmt.shown(d['_file'])}): {d.get('judge', '')}. The learned sim starts from "
                f"{_LEARNED_START[d.get('start_from', 'frame')]} (the real sim: from the physics state); each start "
                f"is `--lead` steps before a held-out episode's {_LEAD_FROM[d.get('lead_from', 'end')]}.\n\n")
        text += fmt.table(["policy", "success in the learned sim", "in the real sim (judged)", "in the real env",
                        "starts"], ["---", "---:", "---:", "---:", "---:"], rows) + "\n\n"
        text += (f"Learned sim vs real (judged): Pearson {metric_text(s, 'pearson')}, MMRV {metric_text(s, 'mmrv')} "
                 f"(in brackets the 95% range when the starts are drawn again); vs the "
                 f"real env's own success: Pearson {_number(s['pearson_vs_env_success'])}, MMRV "
                 f"{_number(s['mmrv_vs_env_success'])}; the judge agrees with the env on "
                 f"{fmt.rate(s['judge_vs_env_agreement']) if not fmt.nan(s['judge_vs_env_agreement']) else 'n/a'} of real "
                 f"rollouts.")
        sim = [p["learned_success"] for p in d["policies"]]
        real = [p["real_success"] for p in d["policies"]]
        worst = min(d["policies"], key=lambda p: p["real_success"])
        text += (f" Its success rates span {min(sim):.2f}-{max(sim):.2f} across the policies (real: "
                 f"{min(real):.2f}-{max(real):.2f}); the weakest policy ({worst['policy']}) succeeds in "
                 f"{fmt.rate(worst['learned_success'])} of its learned-sim rollouts and {fmt.rate(worst['real_success'])} of "
                 f"its real ones.")
        text += "".join(f" {sentence}" for sentence in probe_sentences(s))  # runs before a probe have none of it
        parts.append(text)
    return "\n\n".join(parts)


#: the run the goals table reports: the recipe's command as a user runs it, on held-out set B
CURRENT = "real2sim/recipe_defaults_waypoint_40starts_heldout_b/results.json"

SECTIONS = (
    fmt.Section("Real2Sim on PushT with the default simulator", (CURRENT,),
                "rlvr-world policy-eval --data heldout_b --starts 40 --out benchmarks/results/real2sim/<run>", section),
    fmt.Section("Real2Sim on PushT", ("real2sim/*/results.json",),
                "rlvr-world policy-eval --out benchmarks/results/real2sim/<run>", section, pattern=True,
                shown="real2sim/<run>/results.json", exclude=(CURRENT,),
                finding="Every other Real2Sim run: the simulators, data, starts and judges tried before the "
                        "default; most let policies that never finish the task succeed in the learned simulator."),
)


if __name__ == "__main__":
    sys.exit(main())
