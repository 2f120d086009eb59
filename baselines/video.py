"""Video baselines: copy the last history frame; the tokenizer's ceiling.

At 10 fps most of a PushT frame does not move, so copying the last frame is a strong
predictor (and the failure mode RLVR removes: repetition). A world model is only worth its
cost where it beats the copy, and it can never beat the tokenizer's own reconstruction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rlvr_envs.video.evaluation import METRICS, OBJECT_METRICS


def copy_last_frame_responses(task, indices: Sequence[int]) -> list[np.ndarray]:
    """Responses that repeat the last history frame's codes for every predicted frame (given
    action tokens inserted where the layout has them): the copy, in the model's own tokens."""
    responses = []
    for i in indices:
        codes = np.tile(task.transition(int(i)).meta["last_history_codes"], (task.config.future_frames, 1))
        responses.append(task.layout.response(codes, task.given_action_tokens(int(i))))
    return responses


def copy_last_frame_pixels(task, indices: Sequence[int], psnr_cap: float | None = None) -> list[dict[str, float]]:
    """Per-transition metrics of the real last frame repeated, in pixels (no tokenizer loss);
    an unchanged frame copies exactly, so `psnr_cap` bounds its infinite PSNR."""
    from rlvr_envs.video import metrics

    rows = []
    for i in indices:
        transition = task.transition(int(i))
        last = np.repeat(transition.state[-1:], task.config.future_frames, axis=0)
        values = metrics.video_prediction_metrics(last[None], transition.next_state[None]).values
        if psnr_cap is not None:
            values["psnr"] = values["psnr"].clamp(max=psnr_cap)
        rows.append({key: float(value.mean()) for key, value in values.items()})
    return rows


def score_baselines(task, indices: Sequence[int]) -> dict[str, dict[str, np.ndarray]]:
    """Per-transition metrics of the reference points every claim needs: copying the last
    history frame (as tokens, decoded) and the tokenizer's ceiling (the gold codes), with the
    judge's object errors when the task reports them."""
    indices = [int(i) for i in indices]
    rows = {"copy_last_frame_tokens": task.verify(indices, copy_last_frame_responses(task, indices)),
            "tokenizer_ceiling": task.verify(indices, [task.target_ids(i) for i in indices])}
    reported = METRICS + tuple(key for key in OBJECT_METRICS if key in rows["tokenizer_ceiling"][0].metrics)
    return {name: {key: np.asarray([r.metrics.get(key, np.nan) for r in results]) for key in reported}
            | {"reward": np.asarray([r.reward for r in results])} for name, results in rows.items()}
