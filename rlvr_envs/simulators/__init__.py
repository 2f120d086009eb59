"""Learned simulators: world models wrapped as gymnasium envs of the original task.

- `learned.LearnedPushTSim`: PushT as a video world model sees it (a chunk of 5 PushT
  actions in, the predicted frame out), with batched `rollout` of many candidate action
  sequences for planners.
- `real.PushTChunkEnv`: the real PushT simulator behind the same interface (same chunks,
  same frames), the referee that planners act in and policies are compared against.

Importing this package is cheap; torch and the checkpoints load when an env is built.
"""

from rlvr_envs.simulators.learned import (
    LEARNED_SIM_ID,
    ActionCounts,
    LearnedPushTSim,
    SimContext,
    check_world_model_layout,
)
from rlvr_envs.simulators.real import PushTChunkEnv, dino_wm_success

__all__ = ["LEARNED_SIM_ID", "ActionCounts", "LearnedPushTSim", "PushTChunkEnv", "SimContext",
           "check_world_model_layout", "dino_wm_success"]
