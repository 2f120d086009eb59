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
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import goals
from benchmarks import sections as fmt
from rlvr_envs.core.arguments import at_least
from rlvr_envs.core.files import strict_json, write_json_atomic
from rlvr_envs.core.records import recorded_command


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


def run_line(d: dict) -> str:
    """A Real2Sim run in one line: its simulator, starts and policies, and how it ranked them."""
    s = d["summary"]
    model = Path(d["model"]).name if d.get("model") else "?"
    return (f"{model}, {d['policies'][0]['starts']} starts x {len(d['policies'])} policies: Pearson "
            f"{s['pearson']:.2f}, MMRV {s['mmrv']:.2f}")


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


def _default_real2sim_runs(held_out: str | None = None) -> list[tuple[str, dict]]:
    """(file, results) of the committed runs of docs/recipes.md's policy-eval command as a user runs
    it (the default simulator and settings, the recipe's two policies), fewest starts first.
    `held_out`: None for the embedded held-out set (no `--data`), else the name of the folder given
    as `--data` (`heldout_b`: held-out set B)."""
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    # every option that changes what is measured, at its default (the start count may differ)
    defaults = [f"--{name.replace('_', '-')} {parser.get_default(name)}" for name in
                ("lead", "start_from", "judge_frames", "max_steps", "noise", "success", "success_coverage",
                 "temperature", "seed")]
    runs = []
    for path in sorted(fmt.RESULTS.glob("real2sim/*/results.json")):
        relative = str(path.relative_to(fmt.RESULTS))
        d = fmt.load(relative)
        names = {p["policy"] for p in d["policies"]}
        tokens = d["command"].split()
        data = fmt.flag(d["command"], "--data")
        if (Path(d.get("model", "")).name == DEFAULT_MODEL.name and {"toward_centre", "circler"} <= names
                and set(defaults) <= {f"{a} {b}" for a, b in zip(tokens, tokens[1:])}
                and not {"--model", "--tokenizer", "--no-family"} & set(tokens)
                and (Path(data).name if data else None) == held_out
                and d.get("lead_from", "end") == parser.get_default("lead_from")):  # runs before it: "end"
            runs.append((relative, d))
    return sorted(runs, key=lambda run: run[1]["policies"][0]["starts"])


REAL2SIM_REPORTED_ON = "heldout_b"  #: the held-out set the goals row reports (docs/recipes.md: "set B")


REAL2SIM_CHOICE = "real2sim_default_choice.json"  #: the comparison that chose the default simulator


def _policy_rates(d: dict) -> list[tuple[str, list[int]]]:
    """Learned vs real success per policy, a policy at several noise levels in one entry (with the
    indices of its policies in the results file)."""
    from itertools import groupby

    def family(p: tuple[int, dict]) -> str:
        return re.sub(r"_noise\d+$", "", p[1]["policy"])
    parts = []
    for name, indexed in groupby(enumerate(d["policies"]), key=family):
        indexed = list(indexed)
        group = [p for _, p in indexed]
        learned = "/".join(f"{p['learned_success']:.0%}" for p in group)
        real = "/".join(f"{p['real_success']:.0%}" for p in group)
        noise = [re.search(r"_noise(\d+)$", p["policy"]) for p in group]
        levels = f" (noise {'/'.join(m.group(1) for m in noise)})" if len(group) > 1 and all(noise) else ""
        parts.append((f"{name}{levels} {learned} vs {real}", [i for i, _ in indexed]))
    return parts


def _policy_names(d: dict) -> str:
    """The policies behind a Pearson, a policy at several noise levels named once."""
    names = [p["policy"] for p in d["policies"]]
    noisy = [n for n in names if re.search(r"_noise\d+$", n)]
    families = {re.sub(r"_noise\d+$", "", n) for n in noisy}
    shown = [f"{f} at {len([n for n in noisy if n.startswith(f + '_noise')])} noise levels" for f in sorted(families)]
    return ", ".join(shown + [n for n in names if n not in noisy])


def goal() -> goals.GoalRow | None:
    """Real2Sim of the default simulator, reported on a held-out set other than the one that chose
    it (REAL2SIM_CHOICE names the runs compared); without such a run, on the choosing set, saying so."""
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL

    choice, chosen_data = fmt.load(REAL2SIM_CHOICE), None
    if choice:
        chosen = next((c for c in (choice.get("first"), choice.get("second"))
                       if c and Path(c.get("model", "")).name == DEFAULT_MODEL.name), None)
        run = fmt.load(f"{chosen['run'].removeprefix(fmt.SHOWN + '/')}/results.json") if chosen else None
        chosen_data = fmt.flag(run["command"], "--data") if run else None
    chosen_set = Path(chosen_data).name if chosen_data else None
    other = REAL2SIM_REPORTED_ON if chosen_set != REAL2SIM_REPORTED_ON else None
    reported, choosing = _default_real2sim_runs(other), _default_real2sim_runs(chosen_set)
    if not (reported or choosing):
        return None
    name = {None: "the embedded held-out set", "heldout_b": "held-out set B"}
    file, d = (reported or choosing)[-1]
    where = (f"{name.get(other, other)} (`--data {other}`)" if reported and other else
             name[None] if reported else f"{name.get(chosen_set, chosen_set)}, the set that chose it (no other "
                                         "held-out set measured yet)")
    chose = (f"chosen on {name.get(chosen_set, chosen_set)} ({fmt.shown(REAL2SIM_CHOICE)})" if choice
             else f"chosen on {name.get(chosen_set, chosen_set)}")
    s = real2sim_summary(d)
    low, high = (s.get("pearson_interval") or [float("nan")] * 2)
    starts = d["policies"][0]["starts"]
    quoted = [(f"{starts} starts: Pearson {s['pearson']:.3f}", ("/policies/0/starts", "/summary/pearson")),
              (f"over {len(d['policies'])} policies", ("/policies",))]  # a list: its length
    if "pearson_interval" in d["summary"]:
        quoted.append((goals._interval(low, high), ("/summary/pearson_interval/0", "/summary/pearson_interval/1")))
    rates = _policy_rates(d)
    for text, indices in rates:
        quoted.append((text.split(" ", 1)[1] if "(noise" not in text else text.split(") ", 1)[1],
                       tuple(f"/policies/{i}/{k}" for k in ("learned_success", "real_success") for i in indices)))
    return goals.GoalRow(
        "Real2Sim on PushT (the recipe's policy-eval command, default learned simulator): Pearson of learned vs "
        "real success rates over the policies",
        f"{where}, {starts} starts: Pearson {s['pearson']:.3f} {goals._interval(low, high)} over {len(d['policies'])} "
        f"policies ({_policy_names(d)}); learned vs real success: {', '.join(t for t, _ in rates)}; simulator "
        f"{chose}",
        "", f">= {goals.GOAL_REAL2SIM_PEARSON:g}", goals._verdict(low, high, goals.GOAL_REAL2SIM_PEARSON), file, quoted)


SECTIONS = (
    fmt.Section("Real2Sim on PushT with the default simulator", (CURRENT,),
                "rlvr-world policy-eval --data heldout_b --starts 40 --out benchmarks/results/real2sim/<run>", section),
    fmt.Section("Real2Sim on PushT", ("real2sim/*/results.json",),
                "rlvr-world policy-eval --out benchmarks/results/real2sim/<run>", section, pattern=True,
                shown="real2sim/<run>/results.json", exclude=(CURRENT,), run_line=run_line,
                finding="Every other Real2Sim run: the simulators, data, starts and judges tried before the "
                        "default; most let policies that never finish the task succeed in the learned simulator."),
)


if __name__ == "__main__":
    sys.exit(main())
