"""GRPO groups: G rollouts on one transition, scored in one batched call.

GRPO compares G responses to the *same* (s, a); this is the one place that sets that up,
for our trainers and for users who bring their own sampler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr_envs.core.vector import BatchedNextStatePredictionVectorEnv


def make_group(env_id: str, group_size: int, **kwargs: Any) -> BatchedNextStatePredictionVectorEnv:
    """A batched vector env of `group_size` copies (sequence mode) over one shared task."""
    return gym.make_vec(env_id, num_envs=group_size, vectorization_mode="vector_entry_point", **kwargs)


def score_group(group: BatchedNextStatePredictionVectorEnv, index: int,
                responses: Sequence[Sequence[int]]) -> tuple[np.ndarray, dict[str, Any]]:
    """Rewards (and the batched terminal infos) of `responses` to transition `index`."""
    if len(responses) != group.num_envs:
        raise ValueError(f"expected {group.num_envs} responses (the group size), got {len(responses)}")
    group.reset(options={"index": int(index)})
    width = group.task.max_response_len
    actions = np.full((group.num_envs, width), group.task.eos_token_id, dtype=np.int64)
    for row, response in zip(actions, responses):
        response = np.asarray(response, dtype=np.int64)[:width]
        row[: len(response)] = response
    _, rewards, _, _, infos = group.step(actions)
    return rewards, infos["final_info"]


def group_advantages(rewards: Any, scale: bool = True, eps: float = 1e-4) -> Any:
    """GRPO's group-relative advantages of [..., G] rewards (a group on the last axis), as TRL's
    `GRPOTrainer` computes them: minus the group mean, divided by the group's sample std
    (Bessel-corrected, like `torch.std`) + 1e-4 when `scale` (TRL's `scale_rewards="group"`;
    Dr. GRPO: no scale). A torch tensor stays a tensor (device and autograd kept); anything
    else comes back as a float64 NumPy array."""
    if hasattr(rewards, "detach"):
        centred = rewards - rewards.mean(dim=-1, keepdim=True)
        return centred / (rewards.std(dim=-1, keepdim=True) + eps) if scale else centred
    rewards = np.asarray(rewards, dtype=np.float64)
    centred = rewards - rewards.mean(axis=-1, keepdims=True)
    return centred / (rewards.std(axis=-1, ddof=1, keepdims=True) + eps) if scale else centred
