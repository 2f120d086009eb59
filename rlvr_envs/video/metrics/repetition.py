"""Repetition of predicted frames, measured on visual token ids (RLVR-World §4.2).

Token-level identity is the paper's definition: a likelihood-trained video model often
"predicts" by copying the previous frame's codes, which scores deceptively well on
pixel metrics when little moves. Two definitions, one per task family:

- single-step: the predicted frame is token-identical to the last context frame;
- multi-step: a predicted frame is token-identical to the previous *predicted* frame
  (the context frame of the compressed multi-step tokenizer uses a different code
  layout, so the first predicted frame has no comparable predecessor).

Both return boolean flags; `repetition_rate` turns flags into a rate, either over frames
(`per="frame"`, the fraction of predicted frames that repeat) or over samples
(`per="sample"`, the fraction of predictions containing at least one repeat). For
single-step tasks both are the same number.
"""

from __future__ import annotations

import torch


def single_step_repetition(pred_tokens: torch.Tensor, last_context_tokens: torch.Tensor) -> torch.Tensor:
    """Flags `[B]`: prediction `[B, N]` equals the last context frame `[B, N]` token for token."""
    pred_tokens = torch.as_tensor(pred_tokens)
    last_context_tokens = torch.as_tensor(last_context_tokens, device=pred_tokens.device)
    if pred_tokens.ndim != 2 or pred_tokens.shape != last_context_tokens.shape:
        raise ValueError(
            "expected token ids shaped [B, N] for both prediction and last context frame; got "
            f"{tuple(pred_tokens.shape)} and {tuple(last_context_tokens.shape)}"
        )
    return (pred_tokens == last_context_tokens).all(dim=-1)


def multi_step_repetition(pred_frame_tokens: torch.Tensor) -> torch.Tensor:
    """Flags `[B, T-1]`: predicted frame t (`[B, T, N]`) equals predicted frame t-1, t = 1..T-1."""
    pred_frame_tokens = torch.as_tensor(pred_frame_tokens)
    if pred_frame_tokens.ndim != 3 or pred_frame_tokens.shape[1] < 2:
        raise ValueError(f"expected token ids shaped [B, T>=2, N]; got {tuple(pred_frame_tokens.shape)}")
    return (pred_frame_tokens[:, 1:] == pred_frame_tokens[:, :-1]).all(dim=-1)


def repetition_rate(flags: torch.Tensor, per: str = "frame") -> float:
    """Rate in [0, 1] of repetition flags `[B]` or `[B, F]`; `per` is "frame" or "sample"."""
    flags = torch.as_tensor(flags, dtype=torch.bool)
    if flags.numel() == 0:
        raise ValueError("no repetition flags to average")
    if per == "frame":
        return float(flags.float().mean())
    if per == "sample":
        per_sample = flags if flags.ndim == 1 else flags.reshape(flags.shape[0], -1).any(dim=-1)
        return float(per_sample.float().mean())
    raise ValueError(f"per must be 'frame' or 'sample'; got {per!r}")
