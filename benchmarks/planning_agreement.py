"""Does a learned PushT simulator rank CEM's candidates as the real one does?

    python -m benchmarks.planning_agreement --models base=DIR rlvr=DIR --episodes 50 --candidates 32

Planning success over 50 episodes is a coarse, noisy count (a few episodes decide it). This
looks one level down, at the decision CEM makes: from the start of each planning episode (the
same episodes, seed and objective as `rlvr-world plan`), CEM's first draw of candidates (a
Gaussian of `--init-std` px around the agent, `rlvr_envs.planning.cem_candidates`) is scored by
every simulator with the planning objective, and rolled out in the real simulator to see where
each candidate really ends. Per simulator and episode:

- `spearman_true_cost`: rank correlation of its costs with the real simulator's costs (1 for
  the true simulator; how far a learned one reproduces the ranking CEM would see with exact
  rollouts);
- `spearman_goal_distance`: rank correlation of its costs with the real final state's distance
  to the goal (position error + the angle error in px, `POSE_ANGLE_SCALE`: DINO-WM's success
  tolerances weigh the same), i.e. whether the objective points at success at all;
- `elite_overlap`: the share of its top-k candidates (CEM's elites) that are among the true
  simulator's top-k;
- `pick_distance`: the real goal distance of the candidate it ranks first, beside the best
  candidate's (`oracle`) and the mean candidate's (`mean`).

Paired differences between simulators (same episodes, same candidates) come with standard
errors and t-test p-values. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parent / "results" / "planning_agreement"
METRICS = ("spearman_true_cost", "spearman_goal_distance", "elite_overlap", "pick_distance")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation (average ranks for ties); nan when either side is constant."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(spearmanr(a, b).statistic)


def goal_distance(physics: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """[N, 10] final states -> [N] px: DINO-WM's position error plus its angle error in px."""
    from rlvr_envs.planning.cem import POSE_ANGLE_SCALE
    from rlvr_envs.simulators import dino_wm_success

    errors = [dino_wm_success(state, goal)[1] for state in physics]
    return np.array([e["position_error"] + POSE_ANGLE_SCALE * e["angle_error"] for e in errors])


def episode_metrics(costs: np.ndarray, true_costs: np.ndarray, distance: np.ndarray, top_k: int) -> dict[str, float]:
    """One simulator's agreement on one episode's candidates (see the module docstring)."""
    elites = set(np.argsort(costs, kind="stable")[:top_k].tolist())
    true_elites = set(np.argsort(true_costs, kind="stable")[:top_k].tolist())
    return {"spearman_true_cost": spearman(costs, true_costs), "spearman_goal_distance": spearman(costs, distance),
            "elite_overlap": len(elites & true_elites) / top_k,
            "pick_distance": float(distance[int(np.argmin(costs))])}


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    """Mean of a - b over the episodes where both are defined, its standard error and the paired
    t-test's p (`rlvr_envs.video.evaluation.paired_difference`, the project's paired test)."""
    from rlvr_envs.video.evaluation import paired_difference

    pairs = np.array([(x, y) for x, y in zip(a, b) if not (math.isnan(x) or math.isnan(y))])
    if len(pairs) < 2:
        return {"mean": math.nan, "se": math.nan, "p": math.nan, "n": len(pairs)}
    result = paired_difference(pairs[:, 1], pairs[:, 0])
    p = result.p if np.ptp(pairs[:, 0] - pairs[:, 1]) > 0 else math.nan  # a constant difference has no test
    return {"mean": result.mean, "se": result.stderr, "p": p, "n": result.n}


def main(argv=None) -> int:
    from rlvr_envs.planning.cem import OBJECTIVES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, metavar="NAME=DIR",
                        help="learned simulators (world model dirs), e.g. base=DIR rlvr=DIR")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=32, help="CEM's samples per draw")
    parser.add_argument("--top-k", type=int, default=4, help="CEM's elites")
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument("--init-std", type=float, default=60.0)
    parser.add_argument("--offset", type=int, default=25)
    parser.add_argument("--heldout-episodes", type=int, default=12)
    parser.add_argument("--objective", default="pixels", choices=OBJECTIVES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    models = {}
    for entry in args.models:
        name, _, path = entry.partition("=")
        if not name or not path or not Path(path).is_dir():
            parser.error(f"{entry!r}: expected NAME=DIR with an existing world model directory")
        if name == "true_sim":
            parser.error("true_sim is the reference every model is compared with; name the models otherwise")
        models[name] = path
    if not 1 <= args.top_k <= args.candidates:
        parser.error("need 1 <= --top-k <= --candidates")

    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.planning.cem import CEMConfig, CEMPlanner, cem_candidates, observe, planning_tasks
    from rlvr_envs.planning.command import objective_tokenizer
    from rlvr_envs.simulators import LearnedPushTSim, PushTChunkEnv
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import embedded_heldout_dir

    from rlvr_envs.core.device import setup_device

    torch.set_num_threads(args.threads)
    device = str(setup_device(getattr(args, "device", "auto")).device)
    config = CEMConfig(args.horizon, args.candidates, args.top_k, 1, args.init_std).validate()
    tasks = planning_tasks(list(PushTEpisodeDataset(embedded_heldout_dir(args.heldout_episodes, 64))),
                           args.episodes, args.offset, args.seed)
    real = PushTChunkEnv(resolution=64, max_steps=10_000)
    planners = {"true_sim": CEMPlanner(PushTChunkEnv(resolution=64), config, args.objective, name="true_sim",
                                       tokenizer=objective_tokenizer(args.objective, device=device))}
    for name, path in models.items():
        sim = LearnedPushTSim(path, None, reward="none", batch_size=args.candidates, device=device)
        planners[name] = CEMPlanner(sim, config, args.objective, name=name)

    rows = {name: [] for name in planners}
    oracle, average = [], []
    started = time.perf_counter()
    for task in tqdm(tasks, desc="episodes"):
        rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(task.index,)))
        goal_frame = real.render_physics(task.goal)
        frame, info = real.reset(options={"physics": task.start})
        shape = (config.horizon, 5, 2)
        mean = np.broadcast_to(np.asarray(info["physics"][0:2], dtype=np.float64), shape)
        candidates = cem_candidates(mean, np.full(shape, config.init_std), config.samples, rng)
        _, final_states = real.rollout(candidates, start=info["physics"], frames="last", return_physics=True)
        distance = goal_distance(final_states, task.goal)
        oracle.append(float(distance.min()))
        average.append(float(distance.mean()))
        costs = {name: planner.cost_function(observe(planner, [frame], [], goal_frame, info["physics"]))(candidates)
                 for name, planner in planners.items()}
        for name, cost in costs.items():
            rows[name].append(episode_metrics(cost, costs["true_sim"], distance, config.top_k))
    seconds = time.perf_counter() - started

    summary = {name: {metric: _stats([r[metric] for r in episodes]) for metric in METRICS}
               for name, episodes in rows.items()}
    learned = list(models)  # each against the true simulator, then each later one against each earlier one
    pairs = [(name, "true_sim") for name in learned] + [(b, a) for i, a in enumerate(learned) for b in learned[i + 1:]]
    comparisons = {f"{a} - {b}": {metric: paired([r[metric] for r in rows[a]], [r[metric] for r in rows[b]])
                                  for metric in METRICS} for a, b in pairs}
    report = {"command": "python -m benchmarks.planning_agreement " + " ".join(_argv(argv)),
              "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
              "time": time.strftime("%Y-%m-%d %H:%M"), "seconds": seconds, "objective": args.objective,
              "models": models, "episodes": len(tasks), "candidates": args.candidates, "top_k": args.top_k,
              "horizon": args.horizon, "init_std": args.init_std,
              "reference": {"oracle_pick_distance": _stats(oracle), "mean_candidate_distance": _stats(average)},
              "summary": summary, "paired": comparisons,
              "per_episode": {name: episodes for name, episodes in rows.items()}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2, allow_nan=True) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0


def _argv(argv) -> list[str]:
    import sys

    return list(sys.argv[1:] if argv is None else argv)


def _stats(values: list[float]) -> dict[str, float]:
    finite = np.array([v for v in values if not math.isnan(v)])
    if not len(finite):
        return {"mean": math.nan, "median": math.nan, "n": 0}
    return {"mean": float(finite.mean()), "median": float(np.median(finite)), "n": int(len(finite))}


def markdown(report: dict) -> str:
    lines = [f"# Candidate ranking: learned vs true PushT simulator ({report['objective']} objective)", "",
             f"`{report['command']}`", "",
             f"{report['machine']}, {report['time']}, {report['seconds']:.0f} s. {report['episodes']} planning "
             f"episodes (those of `rlvr-world plan`, seed and offset as there); per episode CEM's first draw of "
             f"{report['candidates']} candidates ({report['horizon']} chunk(s), std {report['init_std']:g} px around "
             f"the agent), each scored by every simulator and rolled out in the real one. Means over episodes "
             f"(median in brackets); goal distance = position error + angle error in px (DINO-WM's tolerances, "
             f"20 px and pi/9, weigh the same).", "",
             f"| simulator | rank corr. with true-sim cost | rank corr. with goal distance | top-{report['top_k']} "
             f"overlap | goal distance of its pick (px) |", "|---|---:|---:|---:|---:|"]
    for name, s in report["summary"].items():
        cells = [f"{s[m]['mean']:.3f} ({s[m]['median']:.3f})" for m in METRICS[:3]]
        cells.append(f"{s['pick_distance']['mean']:.1f} ({s['pick_distance']['median']:.1f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ref = report["reference"]
    lines += ["", f"Chance overlap of the top {report['top_k']}: {report['top_k'] / report['candidates']:.3f}. "
              f"Reference: the best candidate's goal distance {ref['oracle_pick_distance']['mean']:.1f} px "
              f"({ref['oracle_pick_distance']['median']:.1f}), a candidate's on average "
              f"{ref['mean_candidate_distance']['mean']:.1f} px ({ref['mean_candidate_distance']['median']:.1f}).", "",
              "Paired differences (mean ± standard error over episodes, paired t-test):", "",
              "| pair | " + " | ".join(METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for pair, metrics in report["paired"].items():
        cells = [f"{d['mean']:+.3f} ± {d['se']:.3f} (p {d['p']:.2g})" for d in metrics.values()]
        lines.append(f"| {pair} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def _count(n: int, noun: str) -> str:
    """"1 chunk", "5 chunks"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def section(files: list[dict]) -> str:
    """`benchmarks.planning_agreement` files, one after the other."""
    return "\n\n".join(_one_planning_agreement(d) for d in files if "summary" in d)


def _one_planning_agreement(d: dict) -> str:
    """How each learned simulator ranks CEM's candidates against the true simulator, with the
    paired differences (chance overlap of the top k: k / candidates)."""
    metrics = ("spearman_true_cost", "spearman_goal_distance", "elite_overlap")
    rows = [[name, *(f"{s[m]['mean']:.3f} ({s[m]['median']:.2f})" for m in metrics),
             f"{s['pick_distance']['mean']:.1f} ({s['pick_distance']['median']:.1f})"]
            for name, s in d["summary"].items()]
    pairs = [[pair, *(f"{v['mean']:+.3f} ± {v['se']:.3f} (p {fmt.p_value(v['p'])})" for v in by_metric.values())]
             for pair, by_metric in d["paired"].items()]
    ref = d["reference"]
    return (f"**Candidate ranking: learned vs true simulator, {d['objective']} objective, "
            f"{_count(d['horizon'], 'chunk')}** (`{d['command']}`, {fmt.shown(d['_file'])}; "
            f"{d['machine']}, {d['time']}): from the start of each of the {d['episodes']} planning episodes, CEM's "
            f"first draw of {d['candidates']} candidates ({_count(d['horizon'], 'chunk')}, std {d['init_std']:g} px "
            f"around the agent) scored by each simulator with the {d['objective']} objective and rolled out in the "
            f"real one. "
            f"Means over episodes (medians in brackets) of the rank correlation of a simulator's costs with the true "
            f"simulator's and with the real final state's goal distance (position error plus the angle error in px, "
            f"DINO-WM's tolerances weighing the same), the share of its top {d['top_k']} (CEM's elites) among the "
            f"true simulator's (chance: {d['top_k'] / d['candidates']:.3f}), and the real goal distance of the "
            f"candidate it ranks first (best candidate {ref['oracle_pick_distance']['mean']:.1f} px, an average one "
            f"{ref['mean_candidate_distance']['mean']:.1f}).\n\n"
            + fmt.table(["simulator", "rank corr. with true-sim cost", "rank corr. with goal distance",
                         f"top-{d['top_k']} overlap", "goal distance of its pick (px)"],
                        ["---", "---:", "---:", "---:", "---:"], rows)
            + "\n\nPaired differences over the same episodes and candidates (mean ± standard error, paired "
              "t-test):\n\n"
            + fmt.table(["pair", "rank corr. with true-sim cost", "rank corr. with goal distance",
                         f"top-{d['top_k']} overlap", "goal distance of its pick (px)"],
                        ["---", "---", "---", "---", "---"], pairs))


SECTIONS = (
    fmt.Section("Candidate ranking: learned vs true simulator", ("planning_agreement.json",),
                "python -m benchmarks.planning_agreement --models NAME=DIR ... --out benchmarks/results/planning_agreement",
                section, optional=("planning_agreement_pose_h1.json", "planning_agreement_pose.json"),
                finding="No learned simulator ranks CEM's candidates as the true simulator does: near chance with "
                        "the pixel objective, barely above it with the pose objective over one chunk, near it "
                        "over five."),
)


if __name__ == "__main__":
    raise SystemExit(main())
