"""Paired evaluation of video world models (rlvr_envs.video.evaluation)."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.video import score_baselines
from rlvr_envs.video.evaluation import paired_difference


def test_paired_difference_is_a_paired_t_test_of_b_against_a():
    a = np.array([0.010, 0.012, 0.009, 0.011, 0.010])
    b = a - np.array([0.001, 0.002, 0.001, 0.0015, 0.001])
    result = paired_difference(a, b)
    assert result.mean == pytest.approx(-0.0013)
    assert result.t < 0 and result.p < 0.01 and result.n == 5
    assert result.stderr == pytest.approx(np.std(b - a, ddof=1) / np.sqrt(5))


@pytest.mark.parametrize("a, b", [(np.zeros(3), np.zeros(4)), (np.zeros(1), np.zeros(1)), (np.zeros((2, 2)), np.zeros((2, 2)))])
def test_paired_difference_refuses_unpaired_inputs(a, b):
    with pytest.raises(ValueError, match="equal-length"):
        paired_difference(a, b)


def test_baselines_copy_repeats_the_last_frame_and_the_ceiling_is_the_gold_score():
    from rlvr_envs.core.factory import build_task

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout="single", reward="mae", size=6)
    indices = list(range(len(task)))
    baselines = score_baselines(task, indices)
    assert np.all(baselines["copy_last_frame_tokens"]["repetition"] == 1.0)
    np.testing.assert_allclose(baselines["tokenizer_ceiling"]["reward"], [task.ceiling(i) for i in indices])
    assert baselines["tokenizer_ceiling"]["mae"].mean() < baselines["copy_last_frame_tokens"]["mae"].mean()


def test_repetition_rejection_resamples_only_repeating_predictions_up_to_max_draws(monkeypatch):
    from rlvr_envs.video import evaluation

    # index i repeats on draws 0..i-1 (seeds 0, 1000, ...) and not after: transition 0 never repeats
    calls, temperatures = [], []

    def fake_score(model, task, indices, seed=0, temperature=1.0, top_k=None):
        draw = seed // 1000
        calls.append((list(indices), draw))
        temperatures.append(temperature)
        repeated = np.array([1.0 if i > draw else 0.0 for i in indices])
        return {"repetition": repeated, "mae": np.array([10.0 * i + draw for i in indices]),
                "reward": -repeated}

    monkeypatch.setattr(evaluation, "score_world_model", fake_score)
    out = evaluation.reject_repetition(None, None, [0, 1, 2, 3], max_draws=3)
    assert calls == [([0, 1, 2, 3], 0), ([1, 2, 3], 1), ([2, 3], 2)]  # only the repeating ones are redrawn
    np.testing.assert_array_equal(out["draws"], [1, 2, 3, 3])
    np.testing.assert_array_equal(out["mae"], [0, 11, 22, 32])  # the first clean draw, else the last one
    np.testing.assert_array_equal(out["repetition"], [0, 0, 0, 1])  # max_draws reached: still repeats
    calls.clear()
    assert evaluation.reject_repetition(None, None, [0, 1], max_draws=1)["draws"].tolist() == [1, 1]
    assert calls == [([0, 1], 0)]
    with pytest.raises(ValueError, match="max_draws must be >= 1"):
        evaluation.reject_repetition(None, None, [0], max_draws=0)
    # greedy first draws, sampled redraws; greedy redraws would repeat themselves
    temperatures.clear()
    evaluation.reject_repetition(None, None, [0, 1, 2], max_draws=3, temperature=0.0, redraw_temperature=1.0)
    assert temperatures == [0.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="positive redraw_temperature"):
        evaluation.reject_repetition(None, None, [0], max_draws=2, temperature=0.0)
