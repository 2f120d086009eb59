"""benchmarks.planning_agreement: the per-episode agreement metrics, the paired statistics, and
one tiny run with the shipped world model (2 episodes, 4 one-chunk candidates)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks import sections


def test_episode_metrics_reward_the_true_ranking_and_punish_a_reversed_one():
    from benchmarks.planning_agreement import episode_metrics

    true_costs = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    distance = np.array([10.0, 30.0, 20.0, 40.0, 60.0, 50.0])
    same = episode_metrics(true_costs * 3 + 1, true_costs, distance, top_k=2)  # a monotone copy ranks the same
    assert same["spearman_true_cost"] == pytest.approx(1.0) and same["elite_overlap"] == 1.0
    assert same["pick_distance"] == 10.0 and 0.5 < same["spearman_goal_distance"] < 1.0
    reversed_ = episode_metrics(-true_costs, true_costs, distance, top_k=2)
    assert reversed_["spearman_true_cost"] == pytest.approx(-1.0) and reversed_["elite_overlap"] == 0.0
    assert reversed_["pick_distance"] == 50.0
    flat = episode_metrics(np.zeros(6), true_costs, distance, top_k=2)  # a simulator that cannot tell them apart
    assert math.isnan(flat["spearman_true_cost"]) and flat["pick_distance"] == 10.0  # argmin: the first


def test_paired_differences_skip_undefined_episodes():
    from benchmarks.planning_agreement import paired

    result = paired([0.5, 0.7, math.nan, 0.9], [0.1, 0.2, 0.3, 0.6])
    assert result["n"] == 3 and result["mean"] == pytest.approx((0.4 + 0.5 + 0.3) / 3)
    assert result["se"] > 0 and 0 < result["p"] < 0.05
    assert math.isnan(paired([1.0], [0.0])["mean"])


def test_goal_distance_is_zero_at_the_goal_and_counts_the_angle_in_px():
    from benchmarks.planning_agreement import goal_distance
    from rlvr_envs.planning.cem import POSE_ANGLE_SCALE

    goal = np.array([100.0, 100.0, 0, 0, 200.0, 200.0, 0.5, 0, 0, 0])  # physics rows: agent, velocity, block, angle
    moved, turned = goal.copy(), goal.copy()
    moved[0] += 30.0
    turned[6] += 0.1
    assert goal_distance(np.stack([goal, moved, turned]), goal) == pytest.approx([0.0, 30.0, 0.1 * POSE_ANGLE_SCALE])


def test_a_tiny_run_with_the_shipped_model_writes_both_files(tmp_path):
    pytest.importorskip("torch")
    from benchmarks.planning_agreement import main
    from rlvr_envs.video.task import EMBEDDED_DIR

    model, out = EMBEDDED_DIR / "pusht_single_step_model", tmp_path / "agreement"  # the shipped MLE model
    assert main(["--models", f"base={model}", "--episodes", "2", "--candidates", "4", "--top-k", "2", "--horizon",
                 "1", "--heldout-episodes", "2", "--threads", "1", "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    gaps = sections.missing_fields(sections.load("planning_agreement.json"), report, names=("/models", "/per_episode"))
    assert gaps == [], f"rerun the committed run: it lacks {gaps}"
    assert set(report["summary"]) == {"true_sim", "base"} and list(report["paired"]) == ["base - true_sim"]
    true_sim = report["per_episode"]["true_sim"]
    assert len(true_sim) == 2 and all(row["elite_overlap"] == 1.0 for row in true_sim)
    assert "rank corr. with true-sim cost" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit):
        main(["--models", f"true_sim={model}", "--out", str(out)])
    with pytest.raises(SystemExit):
        main(["--models", "base=/nonexistent", "--out", str(out)])
