"""The success judge's benchmark summary (benchmarks/pusht_success_judge.py): precision and
recall of judged success, not an agreement rate that rare successes make look good."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import pusht_success_judge as bench


def _row(coverage: float, judged: float, position: float = 1.0, angle: float = 0.5) -> dict:
    return {"coverage": coverage, "judged": judged, "position_error": position, "angle_error_deg": angle}


def test_many_true_negatives_hide_a_judge_that_is_mostly_wrong_about_success():
    """96 frames far from the goal, 2 real successes the judge misses, 2 false ones it claims:
    agreement is 96%, yet precision and recall at 0.95 are 0."""
    rows = [_row(0.1, 0.1)] * 96 + [_row(0.96, 0.94)] * 2 + [_row(0.94, 0.96)] * 2
    at_bar = bench.success_at(rows, 0.95)
    agreement = sum((r["coverage"] > 0.95) == (r["judged"] > 0.95) for r in rows) / len(rows)
    assert agreement == 0.96
    assert at_bar == {"bar": 0.95, "env_successes": 2, "judge_successes": 2, "both": 0, "precision": 0.0,
                      "recall": 0.0}
    assert bench.success_at(rows, 0.9) == {"bar": 0.9, "env_successes": 4, "judge_successes": 4, "both": 4,
                                           "precision": 1.0, "recall": 1.0}


def test_precision_and_recall_count_each_kind_of_error_and_are_undefined_without_a_denominator():
    rows = [_row(0.97, 0.97)] * 3 + [_row(0.5, 0.97)] + [_row(0.97, 0.5)] * 2 + [_row(0.0, 0.0)] * 4
    at_bar = bench.success_at(rows, 0.95)
    assert (at_bar["precision"], at_bar["recall"]) == (0.75, 0.6)
    assert bench.success_at([_row(0.1, 0.1)], 0.95)["precision"] is None
    assert bench.success_at([_row(0.1, 0.1)], 0.95)["recall"] is None


def test_summary_reads_pose_error_only_where_the_block_was_found(tmp_path):
    rows = [_row(0.96, 0.97, 1.0, 0.2), _row(0.92, 0.93, 3.0, 0.4), _row(0.0, 0.0, math.nan, math.nan)]
    summary = bench.summarize(rows)
    assert (summary["frames"], summary["found"]) == (3, 2)
    assert summary["position_error_px"]["median"] == pytest.approx(2.0)
    assert summary["angle_error_deg"]["median"] == pytest.approx(0.3)
    assert summary["coverage_mae"] == pytest.approx(0.02 / 3)
    assert (summary["near_bar_frames"], summary["near_bar_coverage_mae"]) == (2, pytest.approx(0.01))
    assert [b["bar"] for b in summary["success"]][-1] == summary["env_bar"] == 0.95

    results = tmp_path / "judge.json"
    results.write_text(json.dumps({"command": "python -m benchmarks.pusht_success_judge", "machine": "m", "time": "t",
                                   "resolution": 64, "summary": {"seconds_per_frame": 0.5}, "frames": rows}))
    assert bench.main(["--summarize", str(results), "--out", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["summary"]["seconds_per_frame"] == 0.5 and written["summary"]["found"] == 2
    assert "| 0.95 | 1 | 1 | 1 | 1.000 | 1.000 |" in (tmp_path / "out.md").read_text()
