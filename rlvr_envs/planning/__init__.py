"""Planning with world models: CEM (DINO-WM's settings) in an MPC loop that acts in the real PushT.

See `cem`: `CEMConfig`, the `Planner` protocol (`CEMPlanner` over any simulator with a
batched `rollout`, `RandomPlanner`, `BlindCEMPlanner`), goal-image objectives (`embedding`),
the MPC loop `run_episode`, and `planning_tasks` (start/goal pairs from held-out episodes).
"""

from rlvr_envs.planning.cem import (
    OBJECTIVES,
    BlindCEMPlanner,
    CEMConfig,
    CEMPlanner,
    EpisodeResult,
    MPCConfig,
    Observation,
    PlanningTask,
    Planner,
    RandomPlanner,
    blurred_pixels,
    cem_candidates,
    cem_optimize,
    embedding,
    observe,
    planning_tasks,
    run_episode,
    success_summary,
    wilson_interval,
)

__all__ = ["OBJECTIVES", "BlindCEMPlanner", "CEMConfig", "CEMPlanner", "EpisodeResult", "MPCConfig", "Observation",
           "PlanningTask", "Planner", "RandomPlanner", "blurred_pixels", "cem_candidates", "cem_optimize", "embedding",
           "observe", "planning_tasks", "run_episode", "success_summary", "wilson_interval"]
