"""How often the PushT frame judge agrees with the real env's own success, on held-out real frames.

    python -m benchmarks.pusht_success_judge --episodes 30 --every 5 --resolution 64

Frames come from PushT episodes recorded with the real simulator under a seed no training
set uses (`embedded_heldout_dir`, seed 10000, or `--data DIR`): every `--every`-th frame
of each episode plus every frame whose true coverage exceeds 0.9 (where the threshold is
decided). For each frame the judge's success (judged coverage > 0.95) is compared with
the env's (recorded coverage > 0.95). Reported: agreement overall (the issue's bar: >= 95%)
and on the near-threshold frames (|coverage - 0.95| < 0.05), the confusion matrix, coverage
error, pose error. Writes benchmarks/results/pusht_success_judge.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="PushT episodes dir (default: the embedded held-out set)")
    parser.add_argument("--episodes", type=int, default=30, help="embedded held-out episodes to generate/use")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "pusht_success_judge"))
    args = parser.parse_args(argv)

    from tqdm.auto import tqdm

    from rlvr_envs.video.pusht.judge import judge_frame, pose_error
    from rlvr_envs.video.pusht import PushTEpisodeDataset
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
                         "env_success": truth > 0.95, "judge_success": bool(judged.success),
                         "position_error": position, "angle_error_deg": float(np.degrees(angle))})
    seconds = time.perf_counter() - began
    agree = np.array([r["env_success"] == r["judge_success"] for r in rows])
    near = np.array([abs(r["coverage"] - 0.95) < 0.05 for r in rows])
    env = np.array([r["env_success"] for r in rows])
    judge = np.array([r["judge_success"] for r in rows])
    summary = {
        "frames": len(rows), "agreement": float(agree.mean()),
        "near_threshold_frames": int(near.sum()),
        "near_threshold_agreement": float(agree[near].mean()) if near.any() else None,
        "confusion": {"both_success": int((env & judge).sum()), "env_only": int((env & ~judge).sum()),
                      "judge_only": int((~env & judge).sum()), "neither": int((~env & ~judge).sum())},
        "coverage_mae": float(np.mean([abs(r["coverage"] - r["judged"]) for r in rows])),
        "position_error_px_median": float(np.nanmedian([r["position_error"] for r in rows])),
        "angle_error_deg_median": float(np.nanmedian([r["angle_error_deg"] for r in rows])),
        "seconds_per_frame": seconds / max(1, len(rows)),
        "by_success_coverage": by_threshold(rows, (0.5, 0.7, 0.8, 0.85, 0.9, 0.95)),
    }
    report = {"command": "python -m benchmarks.pusht_success_judge " + " ".join(argv or []),
              "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "time": time.strftime("%Y-%m-%d %H:%M"),
              "data": str(data), "resolution": args.resolution, "summary": summary, "frames": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(
        f"# PushT success judge vs the real env ({args.resolution}x{args.resolution} frames)\n\n"
        f"`{report['command']}` on {report['machine']}, {report['time']}\n\n"
        f"| frames | agreement | near-threshold frames | agreement there | coverage MAE | pose error (px, deg, median) |\n"
        f"|---|---|---|---|---|---|\n"
        f"| {summary['frames']} | {summary['agreement']:.3f} | {summary['near_threshold_frames']} | "
        f"{summary['near_threshold_agreement'] if summary['near_threshold_agreement'] is None else round(summary['near_threshold_agreement'], 3)} | "
        f"{summary['coverage_mae']:.4f} | {summary['position_error_px_median']:.2f}, {summary['angle_error_deg_median']:.2f} |\n\n"
        f"Confusion (env vs judge success): {summary['confusion']}\n\n"
        "Success at other coverage bars (env: true coverage > bar; judge: judged coverage > bar). Real2Sim "
        "(`rlvr-world policy-eval --success-coverage`) uses 0.8, the highest bar the judge reads reliably here:\n\n"
        "| bar | env successes | agreement | judge precision | judge recall |\n|---|---|---|---|---|\n"
        + "".join(f"| {b['success_coverage']} | {b['env_successes']} | {b['agreement']:.3f} | {b['precision']:.3f} | "
                  f"{b['recall']:.3f} |\n" for b in summary["by_success_coverage"]))
    print(json.dumps(summary, indent=2))
    return 0


def by_threshold(rows: list[dict], bars) -> list[dict]:
    """Agreement, precision and recall of judged vs true success at several coverage bars."""
    table = []
    for bar in bars:
        env = np.array([r["coverage"] > bar for r in rows])
        judge = np.array([r["judged"] > bar for r in rows])
        hits = int((env & judge).sum())
        table.append({"success_coverage": bar, "env_successes": int(env.sum()), "agreement": float((env == judge).mean()),
                      "precision": hits / max(1, int(judge.sum())), "recall": hits / max(1, int(env.sum()))})
    return table


if __name__ == "__main__":
    raise SystemExit(main())
