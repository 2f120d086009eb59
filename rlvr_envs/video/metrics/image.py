"""Pixel-level frame metrics: MSE, MAE, PSNR (data range 1) and SSIM (11-px Gaussian window).

Layout convention for every function in `rlvr_envs.video.metrics`: frames are **channels-last**
tensors `[..., H, W, 3]` (so `[B, H, W, 3]` for single-step predictions and
`[B, T, H, W, 3]` for multi-step ones), either `uint8` in [0, 255] or floating point in
[0, 1]. A metric returns one value per frame, shaped like the leading dimensions
(`[B]` or `[B, T]`). Channels-last is the layout of every on-disk format we read (RT-1
npz, PushT episodes, DINO-WM mp4/pth), so callers never permute. Everything runs on the
device of its inputs, CPU or GPU, and nothing loops over frames in Python.

Definitions follow scikit-image (`skimage.metrics`), which the tests use as the
independent reference:

- PSNR = 10 log10(1 / MSE) with data range 1 (`+inf` for identical frames).
- SSIM is the Wang et al. (2004) index: Gaussian-weighted local statistics with
  sigma 1.5 truncated at 3.5 sigma (an 11x11 window), K1 = 0.01, K2 = 0.03, population
  (not sample) covariance, averaged over the pixels whose window lies fully inside the
  frame and over the colour channels. This equals
  `structural_similarity(x, y, data_range=1, channel_axis=-1, gaussian_weights=True,
  sigma=1.5, use_sample_covariance=False)`.
"""

from __future__ import annotations

from typing import Union

import numpy as np
import torch
import torch.nn.functional as F

FrameArray = Union[torch.Tensor, np.ndarray]

SSIM_SIGMA = 1.5
SSIM_TRUNCATE = 3.5  # scipy.ndimage / skimage default: radius = int(3.5 * 1.5 + 0.5) = 5
SSIM_K1 = 0.01
SSIM_K2 = 0.03
_RANGE_TOLERANCE = 1e-4


def as_unit_frames(frames: FrameArray, device: torch.device | str | None = None) -> torch.Tensor:
    """Return `frames` as a floating tensor in [0, 1] with the channels-last layout checked.

    `uint8` input is divided by 255 (float32); float input must already lie in [0, 1]
    (a frame in [-1, 1] or [0, 255] would give plausible-looking but wrong metrics, so
    it is rejected instead). NaN/inf values are rejected for the same reason.
    """
    tensor = torch.as_tensor(frames)
    if device is not None:
        tensor = tensor.to(device)
    if tensor.ndim < 3 or tensor.shape[-1] != 3:
        raise ValueError(f"frames must be channels-last [..., H, W, 3]; got shape {tuple(tensor.shape)}")
    if tensor.dtype == torch.uint8:
        return tensor.to(torch.float32) / 255.0
    if not tensor.is_floating_point():
        raise TypeError(f"frames must be uint8 or floating point in [0, 1]; got dtype {tensor.dtype}")
    if tensor.numel():
        low, high = torch.aminmax(tensor)
        if not bool(torch.isfinite(low) & torch.isfinite(high)):
            raise ValueError("frames contain NaN or infinite values")
        if float(low) < -_RANGE_TOLERANCE or float(high) > 1 + _RANGE_TOLERANCE:
            raise ValueError(
                f"float frames must lie in [0, 1]; got values in [{float(low):.4g}, {float(high):.4g}] "
                "(convert [-1, 1] or [0, 255] data first)"
            )
    return tensor


def _paired(pred: FrameArray, target: FrameArray) -> tuple[torch.Tensor, torch.Tensor]:
    pred_t = as_unit_frames(pred)
    target_t = as_unit_frames(target, device=pred_t.device)
    if pred_t.shape != target_t.shape:
        raise ValueError(f"prediction shape {tuple(pred_t.shape)} != target shape {tuple(target_t.shape)}")
    dtype = torch.promote_types(pred_t.dtype, target_t.dtype)
    return pred_t.to(dtype), target_t.to(dtype)


def _per_frame_mean(values: torch.Tensor) -> torch.Tensor:
    # Accumulate in float64: a 256x320x3 frame sums 245,760 terms, and the references
    # (numpy) accumulate in float64 too.
    return values.mean(dim=(-3, -2, -1), dtype=torch.float64).to(values.dtype)


def mse(pred: FrameArray, target: FrameArray) -> torch.Tensor:
    """Mean squared error per frame, frames in [0, 1]: `[..., H, W, 3] -> [...]`."""
    pred_t, target_t = _paired(pred, target)
    return _per_frame_mean((pred_t - target_t).square())


def mae(pred: FrameArray, target: FrameArray) -> torch.Tensor:
    """Mean absolute error (L1) per frame, frames in [0, 1]: `[..., H, W, 3] -> [...]`."""
    pred_t, target_t = _paired(pred, target)
    return _per_frame_mean((pred_t - target_t).abs())


def psnr(pred: FrameArray, target: FrameArray) -> torch.Tensor:
    """Peak signal-to-noise ratio in dB per frame with data range 1; `+inf` for exact copies."""
    pred_t, target_t = _paired(pred, target)
    squared = (pred_t - target_t).square().mean(dim=(-3, -2, -1), dtype=torch.float64)
    return (10.0 * torch.log10(1.0 / squared)).to(pred_t.dtype)


def gaussian_window(sigma: float = SSIM_SIGMA, truncate: float = SSIM_TRUNCATE) -> torch.Tensor:
    """The normalised 1-D Gaussian taps scipy.ndimage uses (11 taps for sigma 1.5), float64."""
    radius = int(truncate * sigma + 0.5)
    offsets = torch.arange(-radius, radius + 1, dtype=torch.float64)
    taps = torch.exp(-0.5 * (offsets / sigma) ** 2)
    return taps / taps.sum()


def ssim(pred: FrameArray, target: FrameArray, sigma: float = SSIM_SIGMA) -> torch.Tensor:
    """Structural similarity per frame (see the module docstring): `[..., H, W, 3] -> [...]`.

    The five local statistics (means, second moments, cross moment) of all frames and
    channels go through one separable depthwise convolution, so a batch costs two
    `conv2d` calls. Only "valid" positions are kept, which is exactly skimage's crop of
    the (window - 1) / 2 border, so no padding convention enters the result.
    """
    pred_t, target_t = _paired(pred, target)
    leading = pred_t.shape[:-3]
    height, width, channels = pred_t.shape[-3:]
    taps = gaussian_window(sigma).to(device=pred_t.device, dtype=pred_t.dtype)
    size = taps.numel()
    if height < size or width < size:
        raise ValueError(f"SSIM needs frames of at least {size}x{size} pixels; got {height}x{width}")

    x = pred_t.reshape(-1, height, width, channels).permute(0, 3, 1, 2)
    y = target_t.reshape(-1, height, width, channels).permute(0, 3, 1, 2)
    stats = torch.cat([x, y, x * x, y * y, x * y], dim=1)  # [N, 5C, H, W]
    groups = stats.shape[1]
    horizontal = taps.view(1, 1, 1, size).expand(groups, 1, 1, size)
    vertical = taps.view(1, 1, size, 1).expand(groups, 1, size, 1)
    local = F.conv2d(F.conv2d(stats, horizontal, groups=groups), vertical, groups=groups)
    mu_x, mu_y, e_xx, e_yy, e_xy = local.split(channels, dim=1)

    c1 = SSIM_K1**2
    c2 = SSIM_K2**2
    var_x = e_xx - mu_x * mu_x
    var_y = e_yy - mu_y * mu_y
    cov_xy = e_xy - mu_x * mu_y
    numerator = (2 * mu_x * mu_y + c1) * (2 * cov_xy + c2)
    denominator = (mu_x * mu_x + mu_y * mu_y + c1) * (var_x + var_y + c2)
    ssim_map = numerator / denominator
    per_frame = ssim_map.mean(dim=(1, 2, 3), dtype=torch.float64).to(pred_t.dtype)
    return per_frame.reshape(leading)

