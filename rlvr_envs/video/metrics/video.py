"""The video reward -(L1 + LPIPS) and the paper's evaluation metrics, per sample, batched.

Shapes: predictions and targets are `[B, T, H, W, 3]` (T predicted frames per sample) or
`[B, H, W, 3]` (read as T = 1), uint8 or float in [0, 1], on any device. The target may
have size 1 where the prediction has B (one ground truth for a whole GRPO group); LPIPS
then runs its trunk on that target once. Every value is
first computed per frame in one batched call (one LPIPS forward for all B*T frames; this
is what makes the reward cheap enough for a GRPO group), then averaged over the T frames
of each sample, as RLVR-World averages the reward over predicted frames.

Reporting: the paper prints MSE, SSIM and LPIPS multiplied by 100 and MAE, PSNR as they
are; `to_paper_units` applies exactly that, and every report carries the LPIPS net and
backbone it was computed with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

from rlvr_envs.video.metrics.image import FrameArray, as_unit_frames, mae, mse, psnr, ssim
from rlvr_envs.video.metrics.perceptual import LPIPSModel

PAPER_SCALE: Mapping[str, float] = {"mse": 100.0, "mae": 1.0, "psnr": 1.0, "ssim": 100.0, "lpips": 100.0}
METRIC_NAMES = tuple(PAPER_SCALE)


def _as_clips(pred: FrameArray, target: FrameArray) -> tuple[torch.Tensor, torch.Tensor]:
    """Both as `[B, T, H, W, 3]`; `target` keeps size-1 dims that broadcast against `pred`."""
    pred_t = as_unit_frames(pred)
    target_t = as_unit_frames(target, device=pred_t.device)
    if pred_t.ndim not in (4, 5) or target_t.ndim != pred_t.ndim:
        raise ValueError(f"expected [B, H, W, 3] or [B, T, H, W, 3] frames; got shapes {tuple(pred_t.shape)} "
                         f"and {tuple(target_t.shape)}")
    if any(t not in (p, 1) for p, t in zip(pred_t.shape, target_t.shape)):
        raise ValueError(f"target shape {tuple(target_t.shape)} does not broadcast to prediction shape "
                         f"{tuple(pred_t.shape)}")
    if pred_t.ndim == 4:
        return pred_t.unsqueeze(1), target_t.unsqueeze(1)
    return pred_t, target_t


@dataclass
class FrameRewardBatch:
    """Per-sample reward and its components (all `[B]`, on the inputs' device).

    `reward = -(l1 + lpips)`, each term averaged over the sample's predicted frames.
    `lpips_net`/`lpips_backbone` say which LPIPS produced the numbers.
    """

    reward: torch.Tensor
    l1: torch.Tensor
    lpips: torch.Tensor
    lpips_net: str
    lpips_backbone: str

    def components(self, index: int) -> dict[str, float]:
        """The numbers of one sample, for a `RewardResult.metrics` dict."""
        return {"reward": float(self.reward[index]), "l1": float(self.l1[index]), "lpips": float(self.lpips[index])}


def frame_reward(
    pred: FrameArray, target: FrameArray, lpips_model: LPIPSModel, max_batch: int | None = None
) -> FrameRewardBatch:
    """RLVR-World's video reward -(L1 + LPIPS) per sample; higher is better, 0 for a perfect copy."""
    pred_clips, target_clips = _as_clips(pred, target)
    l1 = mae(pred_clips, target_clips.expand_as(pred_clips)).mean(dim=1)
    perceptual = lpips_model(pred_clips, target_clips, max_batch=max_batch).to(l1.device).mean(dim=1)
    return FrameRewardBatch(
        reward=-(l1 + perceptual), l1=l1, lpips=perceptual, lpips_net=lpips_model.net,
        lpips_backbone=lpips_model.backbone,
    )


@dataclass
class VideoMetricsBatch:
    """MSE, MAE, PSNR, SSIM and (optionally) LPIPS per sample, `[B]` each, averaged over frames."""

    values: dict[str, torch.Tensor]
    lpips_net: str | None
    lpips_backbone: str | None

    def mean(self) -> dict[str, float]:
        """Dataset-level means in raw units (PSNR averaged per frame as in the paper's code)."""
        return {name: float(value.mean()) for name, value in self.values.items()}

    def report(self) -> dict[str, float | str | None]:
        """Dataset means in the paper's units (x100 for MSE, SSIM, LPIPS) plus the LPIPS provenance."""
        return {**to_paper_units(self.mean()), "lpips_net": self.lpips_net, "lpips_backbone": self.lpips_backbone}


def video_prediction_metrics(
    pred: FrameArray, target: FrameArray, lpips_model: LPIPSModel | None = None, max_batch: int | None = None
) -> VideoMetricsBatch:
    """All evaluation metrics per sample; LPIPS is skipped (and not reported) without a model."""
    pred_clips, target_clips = _as_clips(pred, target)
    expanded = target_clips.expand_as(pred_clips)
    values = {
        "mse": mse(pred_clips, expanded).mean(dim=1),
        "mae": mae(pred_clips, expanded).mean(dim=1),
        "psnr": psnr(pred_clips, expanded).mean(dim=1),
        "ssim": ssim(pred_clips, expanded).mean(dim=1),
    }
    if lpips_model is None:
        return VideoMetricsBatch(values, None, None)
    values["lpips"] = lpips_model(pred_clips, target_clips, max_batch=max_batch).to(pred_clips.device).mean(dim=1)
    return VideoMetricsBatch(values, lpips_model.net, lpips_model.backbone)


def to_paper_units(metrics: Mapping[str, float]) -> dict[str, float]:
    """Scale raw metric values to the paper's reporting units; unknown keys pass through."""
    return {name: value * PAPER_SCALE.get(name, 1.0) for name, value in metrics.items()}
