"""How well the PushT frame judge reads the block's pose and the env's success, on held-out real frames.

    python -m benchmarks.pusht_success_judge --episodes 30 --every 5 --resolution 64
    python -m benchmarks.pusht_success_judge --summarize benchmarks/results/pusht_success_judge.json

Frames come from PushT episodes recorded with the real simulator under a seed no training
set uses (`embedded_heldout_dir`, seed 10000, or `--data DIR`): every `--every`-th frame
of each episode plus every frame whose true coverage exceeds 0.9 (where the bar is
decided). For each frame the judge's pose and goal coverage are compared with the recorded
ones. Reported: pose error (arena pixels, degrees), coverage error (overall and within 0.05
of gym-pusht's bar), and the precision and recall of judged success (judged coverage > bar)
against the env's (true coverage > bar) at gym-pusht's own bar, 0.95, and at looser bars.
Precision and recall, not agreement: successes are rare (11 of 1,703 frames at 0.95), so a
judge that never says "success" would agree on 99% of frames.

Judging the frames takes ~15 minutes on 2 cores (0.47 s a frame); `--summarize FILE`
recomputes the summary from the per-frame rows a run wrote, without judging again.
Writes benchmarks/results/pusht_success_judge.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import goals
from benchmarks import sections as fmt
from rlvr_envs.video.pusht.physics import SUCCESS_COVERAGE

RESULTS = Path(__file__).resolve().parent / "results"
BARS = (0.5, 0.7, 0.8, 0.85, 0.9, SUCCESS_COVERAGE)  #: success bars reported; gym-pusht's own is the last
NEAR_BAR = 0.05  #: frames whose true coverage is this close to gym-pusht's bar decide success there


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="PushT episodes dir (default: the embedded held-out set)")
    parser.add_argument("--episodes", type=int, default=30, help="embedded held-out episodes to generate/use")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--summarize", metavar="FILE", default=None,
                        help="recompute the summary from this results file's frames instead of judging frames")
    parser.add_argument("--out", default=str(RESULTS / "pusht_success_judge"))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    command = " ".join(["python -m benchmarks.pusht_success_judge", *argv])
    if args.summarize:
        report = json.loads(Path(args.summarize).read_text())
        report["summary"] = {**summarize(report["frames"]),
                             "seconds_per_frame": report["summary"]["seconds_per_frame"]}
        report["summarized_by"] = command
    else:
        report = judge_episodes(args, command)
    write(report, Path(args.out))
    print(json.dumps(report["summary"], indent=2))
    return 0


def judge_episodes(args: argparse.Namespace, command: str) -> dict:
    """Judge the picked frames of every held-out episode; the report with one row per frame."""
    from tqdm.auto import tqdm

    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.pusht.judge import judge_frame, pose_error
    from rlvr_envs.video.task import embedded_heldout_dir

    data = args.data or embedded_heldout_dir(args.episodes, args.resolution)
    rows = []
    began = time.perf_counter()
    for episode in tqdm(PushTEpisodeDataset(data), desc="episodes"):
        picks = sorted(set(range(0, len(episode) + 1, args.every)) | set(np.nonzero(episode.coverage > 0.9)[0]))
        for t in picks:
            judged = judge_frame(episode.frames[t])
            truth = float(episode.coverage[t])
            position, angle = pose_error(judged.pose, episode.physics[t, 4:7]) if judged.found else (np.nan, np.nan)
            rows.append({"episode": int(episode.index), "t": int(t), "coverage": truth, "judged": judged.coverage,
                         "env_success": truth > SUCCESS_COVERAGE, "judge_success": bool(judged.success),
                         "position_error": position, "angle_error_deg": float(np.degrees(angle))})
    seconds = time.perf_counter() - began
    return {"command": command, "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
            "time": time.strftime("%Y-%m-%d %H:%M"), "data": str(data), "resolution": args.resolution,
            "summary": {**summarize(rows), "seconds_per_frame": seconds / max(1, len(rows))}, "frames": rows}


def success_at(rows: list[dict], bar: float) -> dict:
    """Judged success (judged coverage > bar) against the env's (true coverage > bar). Precision:
    the share of judged successes that are real; recall: the share of real ones the judge finds
    (None when there is nothing to divide by)."""
    env = np.array([r["coverage"] > bar for r in rows], dtype=bool)
    judge = np.array([r["judged"] > bar for r in rows], dtype=bool)
    both = int((env & judge).sum())
    return {"bar": bar, "env_successes": int(env.sum()), "judge_successes": int(judge.sum()), "both": both,
            "precision": both / int(judge.sum()) if judge.any() else None,
            "recall": both / int(env.sum()) if env.any() else None}


def summarize(rows: list[dict], bars=BARS) -> dict:
    """Pose error (frames where the judge found the block), coverage error, and success
    precision/recall at each bar, from the per-frame rows."""
    found = [r for r in rows if not math.isnan(r["position_error"])]
    position = np.array([r["position_error"] for r in found], dtype=float)
    angle = np.array([r["angle_error_deg"] for r in found], dtype=float)
    coverage = np.array([r["coverage"] for r in rows], dtype=float)
    error = np.abs(coverage - np.array([r["judged"] for r in rows], dtype=float))
    near = np.abs(coverage - SUCCESS_COVERAGE) < NEAR_BAR

    def spread(values: np.ndarray) -> dict:
        return {"median": float(np.median(values)), "p90": float(np.percentile(values, 90))} if len(values) else {
            "median": None, "p90": None}

    return {"frames": len(rows), "found": len(found), "position_error_px": spread(position),
            "angle_error_deg": spread(angle), "coverage_mae": float(error.mean()) if len(rows) else None,
            "near_bar": NEAR_BAR, "near_bar_frames": int(near.sum()),
            "near_bar_coverage_mae": float(error[near].mean()) if near.any() else None,
            "env_bar": SUCCESS_COVERAGE, "success": [success_at(rows, bar) for bar in bars]}


def _fraction(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def write(report: dict, out: Path) -> None:
    """The report as JSON and a short markdown table beside it."""
    s = report["summary"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    resolution = report["resolution"]
    summarized = f" (summary: `{report['summarized_by'].strip()}`)" if report.get("summarized_by") else ""
    out.with_suffix(".md").write_text(
        f"# PushT success judge vs the real env ({resolution}x{resolution} frames)\n\n"
        f"`{report['command'].strip()}`{summarized} on {report['machine']}, {report['time']}\n\n"
        "| frames | block found | position error px (median, p90) | angle error deg (median, p90) | "
        f"coverage MAE | coverage MAE within {s['near_bar']} of {s['env_bar']} |\n|---|---|---|---|---|---|\n"
        f"| {s['frames']} | {s['found']} | "
        f"{s['position_error_px']['median']:.2f}, {s['position_error_px']['p90']:.2f} | "
        f"{s['angle_error_deg']['median']:.2f}, {s['angle_error_deg']['p90']:.2f} | {s['coverage_mae']:.4f} | "
        f"{_fraction(s['near_bar_coverage_mae'], 4)} ({s['near_bar_frames']} frames) |\n\n"
        f"Success at each coverage bar (env: true coverage > bar; judge: judged coverage > bar); "
        f"gym-pusht's own bar is {s['env_bar']}:\n\n"
        "| bar | env successes | judge successes | both | precision | recall |\n|---|---|---|---|---|---|\n"
        + "".join(f"| {b['bar']} | {b['env_successes']} | {b['judge_successes']} | {b['both']} | "
                  f"{_fraction(b['precision'])} | {_fraction(b['recall'])} |\n" for b in s["success"]))

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def _judge_holds(summary: dict) -> list[dict]:
    """The coverage bars at which the judge's success has both precision and recall at the goal."""
    return [b for b in summary["success"] if not fmt.nan(b["precision"]) and not fmt.nan(b["recall"])
            and min(b["precision"], b["recall"]) >= goals.GOAL_JUDGE_PRECISION_RECALL]


def bars(bars: list[dict]) -> str:
    return ", ".join(f"{b['bar']:g}" for b in bars) or "no bar"


def section(files: list[dict]) -> str:
    d = files[0]
    s = d["summary"]
    resolution = d.get("resolution")
    env = next(b for b in s["success"] if b["bar"] == s["env_bar"])
    holds = _judge_holds(s)
    summarized = f", summary by `{d['summarized_by'].strip()}`" if d.get("summarized_by") else ""
    reliable = "reliable" if env in holds else "**not** reliable"
    text = (f"**PushT success judge** (`{d['command'].strip()}`{summarized}, {fmt.shown(d['_file'])}; {d['machine']}, "
            f"{d['time']}): on {s['frames']:,} held-out real frames"
            f"{f' at {resolution}x{resolution}' if resolution else ''}, the frame judge finds the block in "
            f"{s['found']:,}; its pose error is {s['position_error_px']['median']:.2f} px median (90th percentile "
            f"{s['position_error_px']['p90']:.2f} px) and {s['angle_error_deg']['median']:.2f} deg "
            f"({s['angle_error_deg']['p90']:.2f} deg), its coverage error {s['coverage_mae']:.4f} on average and "
            f"{s['near_bar_coverage_mae']:.4f} on the {s['near_bar_frames']} frames within {s['near_bar']:g} of "
            f"gym-pusht's success bar ({s['env_bar']:g}); {s['seconds_per_frame'] * 1000:.0f} ms per frame. At the "
            f"env's own bar the judge's success is {reliable}: precision {fmt.fraction(env['precision'])}, recall "
            f"{fmt.fraction(env['recall'])} (it finds {env['both']} of the env's {env['env_successes']} successes and "
            f"claims {env['judge_successes'] - env['both']} the env does not). Precision and recall are both at "
            f"least {goals.GOAL_JUDGE_PRECISION_RECALL:.0%} at bars {bars(holds)} (env: true coverage above the bar; "
            f"judge: judged coverage above it):\n\n")
    rows = [[f"{b['bar']:g}", str(b["env_successes"]), str(b["judge_successes"]), str(b["both"]),
             fmt.fraction(b["precision"]), fmt.fraction(b["recall"])] for b in s["success"]]
    return text + fmt.table(["coverage bar", "env successes", "judge successes", "both", "judge precision",
                             "judge recall"], ["---:"] * 6, rows)


def goal() -> goals.GoalRow | None:
    from rlvr_envs.core.util import wilson_interval

    judge = fmt.load("pusht_success_judge.json")
    if not judge:
        return None
    s = judge["summary"]
    index, env = next((i, b) for i, b in enumerate(s["success"]) if b["bar"] == s["env_bar"])

    def lows(b: dict) -> tuple[float, float]:
        return wilson_interval(b["both"], b["judge_successes"])[0], wilson_interval(b["both"], b["env_successes"])[0]
    precision = wilson_interval(env["both"], env["judge_successes"])
    recall = wilson_interval(env["both"], env["env_successes"])
    holds = [b for b in s["success"] if min(lows(b)) >= goals.GOAL_JUDGE_PRECISION_RECALL]
    met = (goals._verdict(min(precision[0], recall[0]), 1.0, goals.GOAL_JUDGE_PRECISION_RECALL)
           if not (fmt.nan(precision[0]) or fmt.nan(recall[0])) else "**not met** (no interval)")
    verdict = f"{met} at {s['env_bar']:g}; met at bars {bars(holds)}" if holds and env not in holds else met
    pointer = f"/summary/success/{index}"
    quoted = [(f"precision {fmt.fraction(env['precision'])}", (f"{pointer}/precision",)),
              (f"recall {fmt.fraction(env['recall'])}", (f"{pointer}/recall",)),
              (f"({env['env_successes']} real successes in {s['frames']:,}", (f"{pointer}/env_successes",
                                                                              "/summary/frames")),
              (f"{s['position_error_px']['median']:.2f} px, {s['angle_error_deg']['median']:.2f} deg",
               ("/summary/position_error_px/median", "/summary/angle_error_deg/median"))]
    return goals.GoalRow(
        f"PushT success judge: precision and recall of the env's own success (coverage > {s['env_bar']:g})",
        f"precision {fmt.fraction(env['precision'])} {goals._interval(*precision)}, recall {fmt.fraction(env['recall'])} "
        f"{goals._interval(*recall)} ({env['env_successes']} real successes in {s['frames']:,} held-out frames); pose error "
        f"{s['position_error_px']['median']:.2f} px, {s['angle_error_deg']['median']:.2f} deg median",
        "", f">= {goals.GOAL_JUDGE_PRECISION_RECALL:g} each", verdict, "pusht_success_judge.json", quoted)


SECTIONS = (
    fmt.Section("PushT success judge", ("pusht_success_judge.json",), "python -m benchmarks.pusht_success_judge",
                section),
)


if __name__ == "__main__":
    raise SystemExit(main())
