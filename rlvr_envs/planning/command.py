"""`rlvr-world plan`: CEM planning success on PushT for learned simulators and the baselines.

    rlvr-world plan --planners base,random,true_sim --episodes 50 --samples 32 --top-k 4 \
        --iterations 3 --out runs/plan
    rlvr-world plan --planners base,rlvr --rlvr-model runs/grpo_pusht/final ...

Writes OUT/results.json (config, per-episode rows, per-planner success with Wilson 95%
intervals; rewritten after every episode, so `--resume` continues an interrupted run) and
OUT/gifs/<planner>_<episode>.gif (real rollout beside the goal, and the learned simulator's
prediction of the first plan) for the first `--gifs` episodes.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from rlvr_envs.core.arguments import at_least, existing_dir, output_dir, real_at_least
from rlvr_envs.core.files import OutputLock, write_json_atomic

PLANNERS = ("base", "rlvr", "random", "true_sim", "blind")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from rlvr_envs.planning.cem import OBJECTIVES, CEMConfig

    cem = CEMConfig()  # the one home of the CEM defaults (DINO-WM's)

    parser.add_argument("--planners", type=planner_list, default="base,random,true_sim",
                        help=f"comma-separated, of {','.join(PLANNERS)} (rlvr needs --rlvr-model)")
    parser.add_argument("--base-model", type=existing_dir, default=None,
                        help="base world model dir (None: the shipped MLE model)")
    parser.add_argument("--rlvr-model", type=existing_dir, default=None, help="RLVR-trained world model dir")
    parser.add_argument("--tokenizer", type=existing_dir, default=None,
                        help="frame tokenizer dir (None: the shipped one)")
    parser.add_argument("--data", type=existing_dir, default=None,
                        help="held-out PushT episodes dir (None: the embedded set)")
    parser.add_argument("--heldout-episodes", type=at_least(1), default=12, help="size of the embedded held-out set")
    parser.add_argument("--episodes", type=at_least(1), default=50, help="planning episodes (goals)")
    parser.add_argument("--offset", type=at_least(1), default=25,
                        help="simulator steps from start to goal (DINO-WM 25)")
    parser.add_argument("--history", type=at_least(0), default=0,
                        help="recorded frames before the start the planners see (a frame every chunk, and the "
                             "chunks between them): a learned simulator's first plan then starts from real motion "
                             "(0: the start frame alone, an agent at rest)")
    parser.add_argument("--horizon", type=at_least(1), default=cem.horizon, help="CEM plan length in chunks")
    parser.add_argument("--samples", type=at_least(1), default=cem.samples, help="CEM samples per iteration")
    parser.add_argument("--top-k", type=at_least(1), default=cem.top_k, help="CEM elites (<= --samples)")
    parser.add_argument("--iterations", type=at_least(1), default=cem.iterations, help="CEM iterations")
    parser.add_argument("--init-std", type=real_at_least(0.0, strictly=True), default=cem.init_std,
                        help="CEM initial standard deviation (px)")
    parser.add_argument("--rounds", type=at_least(1), default=2, help="plans per episode (MPC)")
    parser.add_argument("--execute", type=at_least(1), default=None, help="chunks executed per plan (None: all)")
    parser.add_argument("--objective", default="pixels", choices=OBJECTIVES,
                        help="distance of the predicted final frame to the goal image: pixels, pixels and "
                             "blurred copies (distance keeps growing once objects no longer overlap), the "
                             "tokenizer's latent, or the agent and block poses the PushT frame judge reads")
    parser.add_argument("--batch-size", type=at_least(1), default=300, help="world-model generation batch")
    parser.add_argument("--seed", type=at_least(0), default=0, help="seed of the goals and the planners")
    parser.add_argument("--threads", type=at_least(1), default=None, help="torch threads (None: torch's default)")
    parser.add_argument("--gifs", type=at_least(0), default=2, help="GIFs for the first N episodes")
    parser.add_argument("--resume", action="store_true",
                        help="keep the episodes OUT/results.json already holds (same CEM/MPC budget) and run the rest")
    parser.add_argument("--out", type=output_dir, required=True, help="output folder (results.json, gifs/)")
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)  # last: recorded commands keep their order
    parser.set_defaults(func=run, check=check)


def planner_list(text: str) -> str:
    """argparse type of --planners: comma-separated names from PLANNERS."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(PLANNERS))
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"unknown planners {unknown}; choose from {','.join(PLANNERS)}")
    return ",".join(names)


def check(args: argparse.Namespace) -> None:
    """What argparse types cannot see: combinations (before any work)."""
    from rlvr_envs.planning.cem import CEMConfig

    if "rlvr" in args.planners.split(",") and not args.rlvr_model:
        raise ValueError("the rlvr planner needs --rlvr-model DIR")
    CEMConfig(args.horizon, args.samples, args.top_k, args.iterations, args.init_std).validate()


def save_episode_gif(path: Path, real, task, result) -> None:
    """A recorded episode side by side: the real rollout, the goal image, and (learned simulators)
    the simulator's prediction of the first plan."""
    goal = real.render_physics(task.goal)
    from rlvr_envs.video.gif import save_gif

    strips = [result.frames, np.repeat(goal[None], len(result.frames), axis=0)]
    if result.predicted is not None:
        strips.append(np.concatenate([result.frames[:1], result.predicted]))
    save_gif(path, strips)


def run(args: argparse.Namespace) -> int:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.planning.cem import (BlindCEMPlanner, CEMConfig, CEMPlanner, EpisodeResult, MPCConfig,
                                        RandomPlanner, planning_tasks, run_episode, success_summary)
    from rlvr_envs.simulators import LearnedPushTSim, PushTChunkEnv
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import embedded_heldout_dir

    from rlvr_envs.core.device import setup_device
    from rlvr_envs.core.records import recorded_command

    check(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = str(setup_device(args.device).device)  # learned simulators and the tokenizer objective run there
    names = planner_list(args.planners).split(",")
    config = CEMConfig(args.horizon, args.samples, args.top_k, args.iterations, args.init_std).validate()
    mpc = MPCConfig(rounds=args.rounds, execute=args.execute)
    data = args.data or embedded_heldout_dir(args.heldout_episodes, 64)
    episodes = PushTEpisodeDataset(data)
    tasks = planning_tasks(list(episodes), args.episodes, args.offset, args.seed, history=args.history)
    real = PushTChunkEnv(resolution=64, max_steps=10_000)
    planners = {}
    for name in names:
        if name in ("base", "rlvr"):
            model = args.base_model if name == "base" else args.rlvr_model
            sim = LearnedPushTSim(model, args.tokenizer, reward="none", batch_size=args.batch_size, device=device)
            planners[name] = CEMPlanner(sim, config, args.objective, name=f"cem_{name}")
        elif name == "true_sim":
            planners[name] = CEMPlanner(PushTChunkEnv(resolution=64), config, args.objective, name="cem_true_sim",
                                        tokenizer=objective_tokenizer(args.objective, args.tokenizer, device))
        else:
            planners[name] = RandomPlanner(config) if name == "random" else BlindCEMPlanner(config)
    out = Path(args.out)
    with OutputLock(out, recorded_command("rlvr-world plan", args)):  # one run writes a folder
        done = _previous_rows(out / "results.json", config, mpc, args.objective, args.history) if args.resume else {}
        rows, summary = [], {}
        for name, planner in planners.items():
            results = []
            for task in tqdm(tasks, desc=f"plan {name}"):
                if (planner.name, task.index) in done:
                    row = done[planner.name, task.index]
                    results.append(EpisodeResult(**{k: v for k, v in row.items() if k != "source"}))
                    rows.append(row)
                    continue
                record = task.index < args.gifs
                result = run_episode(real, planner, task, mpc, seed=args.seed, record=record)
                results.append(result)
                rows.append(result.as_dict() | {"source": task.source})
                summary[name] = success_summary(results)
                write_json_atomic(out / "results.json", _report(args, config, mpc, data, summary, rows))
                if record:
                    save_episode_gif(out / "gifs" / f"{name}_{task.index:03d}.gif", real, task, result)
            summary[name] = success_summary(results)
            write_json_atomic(out / "results.json", _report(args, config, mpc, data, summary, rows))
    print(format_table(summary, config))
    return 0


def objective_tokenizer(objective: str, tokenizer: str | None = None, device: str = "cpu"):
    """The FrameTokenizer a simulator without one (the true simulator) scores the "tokenizer"
    objective with: `tokenizer` or the shipped one, the learned simulators' default; None for
    the other objectives."""
    if objective != "tokenizer":
        return None
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.task import default_tokenizer_dir

    return FrameTokenizer.load(tokenizer or default_tokenizer_dir(), device=device).eval()


def _previous_rows(path: Path, config, mpc, objective: str, history: int = 0) -> dict:
    """{(planner, episode index): row} of an earlier run in OUT with the same budget, objective
    and history; {} if none."""
    if not path.exists():
        return {}
    previous = json.loads(path.read_text())
    if previous.get("cem") != vars(config) or previous.get("mpc") != vars(mpc):
        raise SystemExit(f"--resume: {path} was made with another budget ({previous.get('cem')}, "
                         f"{previous.get('mpc')}); use a new --out")
    if run_objective(previous) != objective:
        raise SystemExit(f"--resume: {path} was made with the objective {run_objective(previous)!r}, not "
                         f"{objective!r}; use a new --out")
    if previous.get("history", 0) != history:
        raise SystemExit(f"--resume: {path} was made with --history {previous.get('history', 0)}, not {history}; "
                         f"use a new --out")
    return {(row["planner"], row["index"]): row for row in previous.get("episodes", [])}


def run_objective(report: dict) -> str:
    """The CEM objective a results.json was planned with: its record, else its command's
    `--objective` (runs from before it was recorded), else the default, pixels."""
    if "objective" in report:
        return report["objective"]
    words = report.get("command", "").split() if isinstance(report.get("command"), str) else []
    return words[words.index("--objective") + 1] if "--objective" in words[:-1] else "pixels"


def _report(args, config, mpc, data, summary, rows) -> dict:
    from rlvr_envs.core.records import recorded_command

    return {"command": recorded_command("rlvr-world plan", args),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "time": time.strftime("%Y-%m-%d %H:%M"),
            "cem": vars(config) if hasattr(config, "__dict__") else str(config), "mpc": vars(mpc), "data": str(data),
            "objective": args.objective, "history": args.history,
            "success": "DINO-WM eval_state on the real env: agent+block position error < 20 px, angle < pi/9",
            "summary": summary, "episodes": rows}


def format_table(summary: dict, config) -> str:
    lines = [f"CEM budget: horizon {config.horizon}, {config.samples} samples, top {config.top_k}, "
             f"{config.iterations} iterations", f"{'planner':<10} {'success':>8} {'95% CI':>15} {'s/episode':>10}"]
    for name, s in summary.items():
        interval = "[{:.2f}, {:.2f}]".format(*s["ci95"])
        lines.append(f"{name:<10} {s['success_rate']:>8.2f} {interval:>15} {s['seconds_per_episode']:>10.1f}")
    return "\n".join(lines)
