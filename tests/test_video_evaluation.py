"""Paired evaluation of video world models (rlvr_envs.video.evaluation)."""

from __future__ import annotations

import numpy as np
import pytest

from rlvr_envs.video.evaluation import paired_difference, score_baselines


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
