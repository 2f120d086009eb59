"""PushT CEM planning success: learned simulators (base, RLVR) vs random and the true simulator.

Same arguments as `rlvr-world plan` (see `rlvr_envs.planning.command`); results go to
benchmarks/results/pusht_planning/ by default. A CPU-sized budget, every planner the same:

    python -m benchmarks.pusht_planning --planners base,rlvr,random,true_sim \
        --rlvr-model runs/grpo_pusht/final --episodes 50 --horizon 5 --samples 32 --top-k 4 \
        --iterations 3 --rounds 2 --threads 2

DINO-WM's budget (horizon 5, 300 samples, top 30, 30 iterations) is the default when the
budget flags are left out (a GPU's worth of rollouts).

Planners can run as separate processes (one `--out` each, e.g. base and rlvr side by side on
two cores); `--merge DIR [DIR ...]` then joins their results.json (refusing runs whose budget,
data or episodes differ) into benchmarks/results/pusht_planning/ (or `--out DIR`) with a PNG
of the success rates and their intervals; `DIR:name,name` takes only those planners of a run:

    python -m benchmarks.pusht_planning --merge runs/plan/base runs/plan/rlvr runs/plan/baselines
    python -m benchmarks.pusht_planning --merge runs/plan/long2 runs/plan/long2_rlvr_beta04 \
        benchmarks/results/pusht_planning:true_sim,random --out benchmarks/results/pusht_planning_longer
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from benchmarks import goals
from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parent / "results" / "pusht_planning"


def _planner_rows(report: dict, name: str) -> list[dict]:
    """The episode rows of planner `name` (rows name CEM planners `cem_<name>`)."""
    return [row for row in report["episodes"] if row["planner"] in (name, f"cem_{name}")]


def _load_run(entry: str) -> tuple[str, dict]:
    """`DIR` or `DIR:name,name` (only those planners of that run) -> (DIR, its report)."""
    directory, _, names = entry.partition(":")
    report = json.loads((Path(directory) / "results.json").read_text())
    if names:
        keep = [n.strip() for n in names.split(",") if n.strip()]
        missing = sorted(set(keep) - set(report["summary"]))
        if missing:
            raise SystemExit(f"{directory} has no planner {missing} (it has {sorted(report['summary'])})")
        commands = _commands_of(report)
        report = {**report, "summary": {n: report["summary"][n] for n in keep},
                  "episodes": [row for n in keep for row in _planner_rows(report, n)],
                  "command": [c for c in commands if set(_planners_of(c)) & set(keep)]}
    return directory, report


def _commands_of(report: dict) -> list[str]:
    """A report's command lines: one for a single run, a list for a merged report."""
    return report["command"] if isinstance(report["command"], list) else [report["command"]]


def _planners_of(command: str) -> list[str]:
    """The planners a `rlvr-world plan` command line ran (its --planners value)."""
    words = command.split()
    return words[words.index("--planners") + 1].split(",") if "--planners" in words[:-1] else []


def merge(entries: list[str], out: Path = RESULTS) -> dict:
    """One report from several `rlvr-world plan` runs of the same budget, data and episodes;
    an entry `DIR:name,name` takes only those planners of that run (e.g. the baselines of an
    earlier merged report)."""
    import shutil

    from rlvr_envs.planning.command import run_objective

    directories, reports = zip(*(_load_run(entry) for entry in entries))
    first = reports[0]
    for directory, report in zip(directories[1:], reports[1:]):
        for key in ("cem", "mpc", "data"):
            if report[key] != first[key]:
                raise SystemExit(f"{directory} has another {key} ({report[key]}) than {directories[0]} ({first[key]})")
        if report.get("history", 0) != first.get("history", 0):
            raise SystemExit(f"{directory} gave the planners {report.get('history', 0)} history frames, "
                             f"{directories[0]} {first.get('history', 0)}")
        if run_objective(report) != run_objective(first):
            raise SystemExit(f"{directory} planned with the objective {run_objective(report)!r}, {directories[0]} "
                             f"with {run_objective(first)!r}")
        sources = {r["index"]: r["source"] for r in report["episodes"]}
        if any(sources.get(r["index"], r["source"]) != r["source"] for r in first["episodes"]):
            raise SystemExit(f"{directory} planned other episodes than {directories[0]}")
    overlap = [name for i, r in enumerate(reports) for name in r["summary"]
               if any(name in other["summary"] for other in reports[i + 1:])]
    if overlap:
        raise SystemExit(f"planners {sorted(set(overlap))} appear in more than one run")
    commands = [c for r in reports for c in _commands_of(r)]
    merged = {**first, "objective": run_objective(first), "command": commands, "runs": list(entries),
              "merged_into": str(out),
              "summary": {k: v for r in reports for k, v in r["summary"].items()},
              "episodes": [row for r in reports for row in r["episodes"]]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(merged, indent=2) + "\n")
    for directory, report in zip(directories, reports):
        for gif in sorted((Path(directory) / "gifs").glob("*.gif")):
            if gif.name.rsplit("_", 1)[0] not in report["summary"] or gif.parent.resolve() == (out / "gifs").resolve():
                continue
            (out / "gifs").mkdir(exist_ok=True)
            shutil.copy(gif, out / "gifs" / gif.name)
    from benchmarks.charts import success_bars

    cem, episodes = merged["cem"], next(iter(merged["summary"].values()))["episodes"]
    success_bars(merged["summary"], f"PushT CEM: horizon {cem['horizon']}, {cem['samples']} samples x "
                 f"{cem['iterations']} iterations, {episodes} episodes per planner", out / "success.png")
    return merged


def main(argv=None) -> int:
    from rlvr_envs.planning.command import add_arguments

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--merge"]:
        out = RESULTS
        if "--out" in argv:
            at = argv.index("--out")
            if at + 1 >= len(argv):
                raise SystemExit("--out needs a directory")
            out, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2:]
        if len(argv) < 3:
            raise SystemExit("--merge needs at least two run directories")
        merged = merge(argv[1:], out)
        print(json.dumps(merged["summary"], indent=2))
        return 0
    if "--out" not in argv:
        argv += ["--out", str(RESULTS)]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

PLANNERS = {"base": "CEM, MLE base world model", "rlvr": "CEM, RLVR world model", "random": "random actions",
            "true_sim": "CEM, true simulator", "blind": "CEM, random costs (no model)"}


OBJECTIVES = {"pixels": "squared pixel distance of the predicted final frame to the goal image",
              "tokenizer": "distance of the frame tokenizer's latents of the predicted final frame and the goal image",
              "pose": "distance of the agent and block poses the frame judge reads in the predicted final frame and "
                      "the goal image"}


def section(files: list[dict], heading: str = "PushT CEM planning") -> str:
    d = files[0]
    cem, mpc = d.get("cem", {}), d.get("mpc", {})
    budget = (f"horizon {cem['horizon']}, {cem['samples']} samples, top {cem['top_k']}, {cem['iterations']} "
              f"iterations" if isinstance(cem, dict) and "horizon" in cem else str(cem))
    if mpc.get("rounds"):
        budget += f", {mpc['rounds']} plans per episode"
    command = fmt.commands(d, "benchmarks.pusht_planning")
    from rlvr_envs.planning.command import run_objective

    objective = OBJECTIVES.get(run_objective(d), run_objective(d))
    text = (f"**{heading}** ({command}; {fmt.shown(d['_file'])}; {d.get('machine', '')}): {budget}; CEM objective: "
            f"{objective}; success: {d.get('success', 'see the results file')}.\n\n")
    rows = []
    for name, s in d["summary"].items():
        low, high = s["ci95"]
        rows.append([PLANNERS.get(name, name), str(s["episodes"]), str(s["successes"]), f"{s['success_rate']:.2f}",
                     f"[{low:.2f}, {high:.2f}]", f"{s['seconds_per_episode']:.1f}"])
    table = fmt.table(["planner", "episodes", "successes", "success rate", "95% CI (Wilson)", "s/episode"],
                      ["---", "---:", "---:", "---:", "---", "---:"], rows)
    summary = d["summary"]
    if {"base", "rlvr", "true_sim"} <= set(summary):
        base, rlvr, true = (summary[k]["success_rate"] for k in ("base", "rlvr", "true_sim"))
        share = f"{rlvr / true:.0%}" if true else "n/a"
        met = rlvr >= base and true > 0 and rlvr >= goals.GOAL_PLANNING_SHARE * true
        table += (f"\n\nThe issue's goal (the RLVR model at least matches the base and reaches 80% of the "
                  f"true simulator's success) is {'met' if met else '**not met**'}: RLVR {rlvr:.2f} vs base "
                  f"{base:.2f}, {share} of the true simulator's {true:.2f}.")
    picture = Path(d["_file"]).parent / "success.png"  # written beside the table by --merge
    if (fmt.RESULTS / picture).is_file():
        table += f"\n\n![CEM success per planner, with 95% intervals](../{fmt.SHOWN}/{picture.as_posix()})"
    return text + table


def _table_section(title: str, stem: str, runs: str, heading: str | None = None, finding: str = "") -> fmt.Section:
    """A PushT planning table joined by `benchmarks.pusht_planning --merge RUNS --out` its folder."""
    return fmt.Section(title, (f"{stem}/results.json",),
                       f"python -m benchmarks.pusht_planning --merge {runs} --out benchmarks/results/{stem}",
                       partial(section, heading=heading or title), finding=finding)


def _planning_tables() -> list[tuple[str, dict]]:
    """(file, summary) of every committed PushT planning table with base, RLVR and true-sim rows; a
    table merged again into another (the same runs, to the second per episode) counts once."""
    out, seen = [], set()
    for path in sorted(fmt.RESULTS.glob("pusht_planning*/results.json")):
        relative = str(path.relative_to(fmt.RESULTS))
        summary = (fmt.load(relative) or {}).get("summary", {})
        if not {"base", "rlvr", "true_sim"} <= set(summary):
            continue
        key = json.dumps([summary[k] for k in ("base", "rlvr", "true_sim")], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((relative, summary))
    return out


def goal() -> goals.GoalRow | None:
    tables = _planning_tables()
    if not tables:
        return None

    def share(summary: dict) -> float:
        true = summary["true_sim"]["success_rate"]
        return summary["rlvr"]["success_rate"] / true if true else 0.0
    file, best = max(tables, key=lambda t: share(t[1]))
    matches = sum(s["rlvr"]["success_rate"] >= s["base"]["success_rate"] for _, s in tables)
    rlvr, true, base = best["rlvr"], best["true_sim"], best["base"]
    low, high = goals._ratio_interval(rlvr["successes"], rlvr["episodes"], true["successes"], true["episodes"])
    verdict = goals._verdict(low, high, goals.GOAL_PLANNING_SHARE)
    if verdict == "met" and rlvr["success_rate"] < base["success_rate"]:
        verdict = "**not met** (RLVR < base)"
    quoted = [(f"RLVR {rlvr['successes']} vs true simulator {true['successes']} of {rlvr['episodes']}",
               ("/summary/rlvr/successes", "/summary/true_sim/successes", "/summary/rlvr/episodes"))]
    trivial = [k for k in ("blind", "random") if k in best]
    baseline = ""
    if trivial:
        name = max(trivial, key=lambda k: best[k]["success_rate"])
        t = best[name]
        baseline = (f"{PLANNERS.get(name, name)}: {t['successes']}/{t['episodes']} "
                    f"(MLE base {base['successes']}/{base['episodes']})")
        quoted.append((baseline.split(": ", 1)[1], (f"/summary/{name}/successes", f"/summary/{name}/episodes",
                                                    "/summary/base/successes", "/summary/base/episodes")))
    return goals.GoalRow(
        "PushT CEM planning: RLVR simulator's success as a share of the true simulator's",
        f"best of {len(tables)} tables: RLVR {rlvr['successes']} vs true simulator {true['successes']} of "
        f"{rlvr['episodes']} = {share(best):.0%} {goals._interval(low, high, percent=True)}; RLVR >= base in {matches} "
        f"of {len(tables)}",
        baseline, f">= {goals.GOAL_PLANNING_SHARE:.0%}, and RLVR >= base", verdict, file, quoted)


SECTIONS = (
    fmt.Section("PushT CEM planning", ("pusht_planning/results.json",), "python -m benchmarks.pusht_planning ...",
                section,
                finding="With the first shipped models CEM planned few episodes, the RLVR (-MAE) model fewer than "
                        "its base, far below the true simulator."),
    _table_section("PushT CEM planning with the longer-trained models", "pusht_planning_longer",
                   "runs/plan/long2 runs/plan/long2_rlvr_beta04 benchmarks/results/pusht_planning:true_sim,random",
                   "PushT CEM planning with the longer-trained world models",
                   finding="Longer MLE raised the base's planning; pose-reward GRPO with a 40x KL term matched it, "
                           "at half the true simulator's success."),
    _table_section("PushT CEM planning after GRPO on the model's own rollouts", "pusht_planning_rollout_grpo",
                   "runs/plan/long2 runs/plan/long2_rollout_round2 "
                   "benchmarks/results/pusht_planning_longer:true_sim,random",
                   finding="Two rounds of GRPO on the model's own rollouts planned more episodes than its base, "
                           "short of 80% of the true simulator's."),
    _table_section("PushT CEM planning after a third round of GRPO on the model's own rollouts",
                   "pusht_planning_rollout_grpo_round3",
                   "runs/plan/long2 runs/plan/long2_rollout_round3 "
                   "benchmarks/results/pusht_planning_longer:true_sim,random",
                   finding="A third round of rollout GRPO planned fewer episodes than the second."),
    _table_section("PushT CEM planning after rollout GRPO, retrained", "pusht_planning_rollout_grpo_retrained",
                   "runs/plan/long2 runs/plan/long2_rollout_round2 "
                   "benchmarks/results/pusht_planning_longer:true_sim,random",
                   "PushT CEM planning after two rounds of GRPO on the model's own rollouts, base and RLVR "
                   "retrained",
                   finding="Retraining the base and both rollout-GRPO rounds reproduced the second round's planning "
                           "success."),
    _table_section("PushT CEM planning after rollout GRPO with the agent's error weighted 3x",
                   "pusht_planning_rollout_grpo_agent3",
                   "runs/plan/long2 runs/plan/long2_rollout_agent3_round2 "
                   "benchmarks/results/pusht_planning_longer:true_sim,random",
                   "PushT CEM planning after two rounds of rollout GRPO with the agent's error weighted 3x "
                   "(base and RLVR retrained)",
                   finding="Weighting the agent's error 3x planned fewer episodes than unweighted rollout GRPO."),
    _table_section("PushT CEM planning after MLE on CEM-like episodes", "pusht_planning_cem_data",
                   "runs/plan/cem_base runs/plan/cem_rollout_r2 "
                   "benchmarks/results/pusht_planning_longer:true_sim,random",
                   "PushT CEM planning after 4000 more MLE steps on data with CEM-like episodes, and two rounds "
                   "of rollout GRPO from there",
                   finding="MLE on CEM-like episodes, and rollout GRPO from there, planned no better than the base."),
    _table_section("PushT CEM planning with the blurred-pixels objective", "pusht_planning_blurred_pixels",
                   "runs/plan/blur_base runs/plan/blur_rlvr runs/plan/blur_baselines",
                   "PushT CEM planning with the blurred-pixels objective (the shipped MLE12k and rollout-RLVR "
                   "models)",
                   finding="A blurred-pixels objective helped no planner."),
    _table_section("PushT CEM planning against the blind-CEM floor", "pusht_planning_blind_floor",
                   "benchmarks/results/pusht_planning_rollout_grpo_retrained:base,rlvr,true_sim,random "
                   "runs/plan/blind",
                   "PushT CEM planning against CEM with random costs (the models of the retrained table)"),
    _table_section("PushT CEM planning with the pose objective", "pusht_planning_pose_objective",
                   "runs/plan/pose_long2 runs/plan/pose_long2_rlvr_beta04 runs/plan/pose_true_sim "
                   "runs/plan/pose_random",
                   finding="Scored by the judged poses, the true simulator plans far more episodes and the learned "
                           "ones barely more: an objective that tells near from far exposes their rollouts."),
)


if __name__ == "__main__":
    raise SystemExit(main())
