"""Verified video metrics: pixel metrics, LPIPS, repetition and the -(L1 + LPIPS) reward.

All functions take channels-last frame batches `[..., H, W, 3]` (uint8, or float in
[0, 1]) on CPU or GPU and return one value per frame or per sample; see `image.py` for
the layout convention and `perceptual.py` for the LPIPS backbone rules.
"""

from rlvr_envs.video.metrics.image import as_unit_frames, gaussian_window, mae, mse, psnr, ssim
from rlvr_envs.video.metrics.perceptual import (
    DEFAULT_LPIPS_NET,
    LPIPS_NETS,
    LPIPSConfig,
    LPIPSModel,
    LPIPSWeightsUnavailable,
    backbone_label,
    load_lpips,
    trunk_checkpoint_path,
)
from rlvr_envs.video.metrics.repetition import multi_step_repetition, repetition_rate, single_step_repetition
from rlvr_envs.video.metrics.video import (
    METRIC_NAMES,
    PAPER_SCALE,
    FrameRewardBatch,
    VideoMetricsBatch,
    frame_reward,
    to_paper_units,
    video_prediction_metrics,
)

__all__ = [
    "DEFAULT_LPIPS_NET",
    "LPIPS_NETS",
    "METRIC_NAMES",
    "PAPER_SCALE",
    "FrameRewardBatch",
    "LPIPSConfig",
    "LPIPSModel",
    "LPIPSWeightsUnavailable",
    "VideoMetricsBatch",
    "as_unit_frames",
    "backbone_label",
    "frame_reward",
    "gaussian_window",
    "load_lpips",
    "mae",
    "mse",
    "multi_step_repetition",
    "psnr",
    "repetition_rate",
    "single_step_repetition",
    "ssim",
    "to_paper_units",
    "trunk_checkpoint_path",
    "video_prediction_metrics",
]
