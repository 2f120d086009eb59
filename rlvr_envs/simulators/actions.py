"""PushT action chunks as the learned and real chunk envs take them, and bad-action handling.

One env step = one chunk of `frame_skip` (5) PushT actions, each an absolute agent target
(x, y) in arena pixels, `Box(0, 512, (5, 2))`: the video world models were trained on
frames 5 simulator steps apart with the 5 actions between them as one token chunk.
A single action of shape (2,) is also accepted and held for the whole chunk (PushT's
action is a target position, so holding it is the natural meaning); that is counted.

Bad actions, per `invalid_actions`:
- not real numbers (None, bools, complex numbers, strings, ragged or masked arrays): always
  rejected (`TypeError`, by `rlvr_envs.core.actions.real_array`, as every env checks);
- wrong shape (neither (2,) nor (5, 2) nor (10,)): always rejected (`ValueError`);
- ``"clip"`` (default): non-finite values are replaced by the previous target (the last
  value of the previous chunk, at the start the agent's position or the arena centre),
  values outside [0, 512] are clipped;
- ``"reject"``: any non-finite or out-of-range value raises `ValueError`.
Every repair is counted (`ActionCounts`, reported in `info`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rlvr_envs.core.actions import real_array
from rlvr_envs.video.pusht.physics import ARENA_SIZE

INVALID_ACTIONS = ("clip", "reject")


@dataclass
class ActionCounts:
    """How many actions (chunks) a policy sent that needed repair, over an episode."""

    steps: int = 0  #: chunks received
    held: int = 0  #: single (2,) actions held for a whole chunk
    nonfinite: int = 0  #: chunks with NaN/inf values (replaced by the previous target)
    clipped: int = 0  #: chunks with values outside [0, 512] (clipped)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def action_space(frame_skip: int):
    import gymnasium as gym

    return gym.spaces.Box(0.0, ARENA_SIZE, shape=(frame_skip, 2), dtype=np.float32)


def sanitize_chunk(action, frame_skip: int, previous: np.ndarray, mode: str,
                   counts: ActionCounts | None = None) -> np.ndarray:
    """One chunk float64 [frame_skip, 2] from a policy's action, repaired or rejected (module doc)."""
    if mode not in INVALID_ACTIONS:
        raise ValueError(f"invalid_actions must be one of {INVALID_ACTIONS}, got {mode!r}")
    chunk = real_array(action, f"a PushT action chunk (shape (2,) or ({frame_skip}, 2))")
    held = chunk.shape == (2,)
    if held:
        chunk = np.tile(chunk, (frame_skip, 1))
    elif chunk.shape == (2 * frame_skip,):
        chunk = chunk.reshape(frame_skip, 2)
    elif chunk.shape != (frame_skip, 2):
        raise ValueError(f"the action must have shape (2,) (held for the chunk) or ({frame_skip}, 2) (one PushT "
                         f"target per simulator step); got shape {chunk.shape}")
    bad = ~np.isfinite(chunk)
    outside = np.isfinite(chunk) & ((chunk < 0.0) | (chunk > ARENA_SIZE))
    if mode == "reject" and (bad.any() or outside.any()):
        raise ValueError(f"the action {chunk.tolist()} is outside Box(0, {ARENA_SIZE:g}) or not finite "
                         "(invalid_actions='reject')")
    if bad.any():
        fill = np.asarray(previous, dtype=np.float64)
        for row in range(frame_skip):  # each bad value takes the target before it
            fill_row = chunk[row - 1] if row else fill
            chunk[row] = np.where(np.isfinite(chunk[row]), chunk[row], fill_row)
    chunk = np.clip(chunk, 0.0, ARENA_SIZE)
    if counts is not None:
        counts.steps += 1
        counts.held += int(held)
        counts.nonfinite += int(bad.any())
        counts.clipped += int(outside.any())
    return chunk


def as_chunk_batch(actions, frame_skip: int) -> np.ndarray:
    """Candidate action sequences float64 [N, H, frame_skip, 2] from [N, H, frame_skip, 2] or
    [N, H, 2] (held); values are clipped to the arena, non-finite values are rejected."""
    actions = real_array(actions, "action sequences")
    if actions.ndim == 3 and actions.shape[-1] == 2:
        actions = np.repeat(actions[:, :, None, :], frame_skip, axis=2)
    if actions.ndim != 4 or actions.shape[2:] != (frame_skip, 2):
        raise ValueError(f"action sequences must be [N, H, {frame_skip}, 2] (or [N, H, 2], each held for a "
                         f"chunk); got shape {actions.shape}")
    if not np.isfinite(actions).all():
        raise ValueError("action sequences contain non-finite values")
    return np.clip(actions, 0.0, ARENA_SIZE)
