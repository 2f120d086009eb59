"""The real PushT simulator behind the learned simulator's interface: `PushTChunkEnv`.

Planners act in it (the MPC loop) and Real2Sim compares policies in it with the learned
simulator, so it takes the same chunks of 5 PushT actions and shows frames at the same
resolution. Underneath is the project's gym-pusht (`rlvr_envs.video.pusht.make_env`), with
the exact state restore of `restore_physics_state` before every simulator step (the
dataset generator's `reseat_each_step`), so a state plus actions always gives the same
next state. `rollout` simulates many candidate sequences from one exact state: the
true-simulator planner baseline.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr_envs.simulators.actions import ActionCounts, action_space, as_chunk_batch, sanitize_chunk
from rlvr_envs.core.actions import reset_options
from rlvr_envs.video.pusht.physics import SUCCESS_COVERAGE, checked_physics, goal_coverage, gym_state

#: DINO-WM's PushT planning success: (agent, block) position error < 20 px, block angle error < pi/9
DINO_WM_POSITION_TOLERANCE = 20.0
DINO_WM_ANGLE_TOLERANCE = math.pi / 9


def dino_wm_success(physics, goal_physics) -> tuple[bool, dict[str, float]]:
    """DINO-WM's `eval_state`: the norm of the agent-and-block (x, y) difference (4 numbers)
    < 20 and the block angle difference < pi/9 (wrapped properly). Returns (success, errors)."""
    state, goal = gym_state(np.asarray(physics)), gym_state(np.asarray(goal_physics))
    position = float(np.linalg.norm(state[:4] - goal[:4]))
    angle = abs((state[4] - goal[4] + math.pi) % (2 * math.pi) - math.pi)
    block = float(np.linalg.norm(state[2:4] - goal[2:4]))
    return bool(position < DINO_WM_POSITION_TOLERANCE and angle < DINO_WM_ANGLE_TOLERANCE), {
        "position_error": position, "angle_error": float(angle), "block_position_error": block}


class PushTChunkEnv(gym.Env):
    """
    ## Description
    The real PushT (gym-pusht) seen every `frame_skip` simulator steps: one env step applies
    a chunk of 5 targets, re-seating the exact state before each simulator step.

    ## Observation Space
    The rendered frame, `Box(0, 255, (R, R, 3), uint8)` (R = `resolution`, 64 by default:
    the shipped tokenizer's). `info["physics"]` holds the exact state.

    ## Action Space
    `Box(0, 512, (5, 2), float32)`, as `LearnedPushTSim` (a (2,) target is held; bad actions
    are clipped or rejected and counted the same way).

    ## Reward
    gym-pusht's: clip(coverage / 0.95, 0, 1) of the state after the chunk.

    ## Episode End
    Terminated at coverage > 0.95 (after any simulator step of the chunk); truncated after
    `max_steps` chunks.

    ## Arguments
    `resolution` 64, `frame_skip` 5, `max_steps` 60, `invalid_actions` "clip" | "reject".
    `reset(options={"physics": [10]})` starts from an exact state (finite, the agent inside the
    arena: `checked_physics`); without it gym-pusht's random start for the seed. The learned
    simulator's `frames` and `actions` of the same start are accepted and not read.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    exact = True  #: planners on this simulator may read the exact state (the true-simulator upper bound)

    def __init__(self, resolution: int = 64, frame_skip: int = 5, max_steps: int = 60,
                 invalid_actions: str = "clip", render_mode: str | None = None):
        sanitize_chunk(np.zeros(2), frame_skip, np.zeros(2), invalid_actions)
        self.resolution, self.frame_skip, self.max_steps = int(resolution), int(frame_skip), int(max_steps)
        self.invalid_actions, self.render_mode = invalid_actions, render_mode
        self._build_envs()
        self.action_space = action_space(frame_skip)
        self.observation_space = gym.spaces.Box(0, 255, shape=(self.resolution, self.resolution, 3), dtype=np.uint8)
        self.physics: np.ndarray | None = None
        self._frame: np.ndarray | None = None
        self._steps = 0
        self.counts = ActionCounts()

    def _build_envs(self) -> None:
        from rlvr_envs.video.pusht import make_env

        self.env = make_env(self.resolution, 10_000, render=True)
        self.physics_env = make_env(self.resolution, 10_000, render=False)
        self.env.reset(seed=0)
        self.physics_env.reset(seed=0)

    # copies rebuild the gym-pusht envs (pymunk's C objects cannot be copied); every step restores
    # the exact physics state first, so a rebuilt env continues exactly
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("env", "physics_env")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._build_envs()

    def render_physics(self, physics) -> np.ndarray:
        from rlvr_envs.video.pusht import render_frame, restore_physics_state

        restore_physics_state(self.env, physics)
        return render_frame(self.env)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        from rlvr_envs.video.pusht import physics_state

        super().reset(seed=seed)
        options = reset_options(options, ("physics", "frames", "actions"))  # frames, actions: the learned
        if options.get("physics") is not None:  # simulator's view of the same start, not read here
            physics = checked_physics(options["physics"], block_inside=False)  # an escaped block is a real state
        else:
            self.env.reset(seed=int(self.np_random.integers(0, 2**31 - 1)))
            physics = physics_state(self.env)
        self.physics, self._steps, self.counts = physics.copy(), 0, ActionCounts()
        self._frame = self.render_physics(physics)
        return self._frame.copy(), self._info()

    def _info(self) -> dict[str, Any]:
        coverage = goal_coverage(self.physics)
        return {"physics": self.physics.copy(), "coverage": coverage, "is_success": coverage > SUCCESS_COVERAGE,
                "step": self._steps, "actions": self.counts.as_dict()}

    def _simulate(self, env, physics: np.ndarray, chunk: np.ndarray, stop_at_success: bool) -> np.ndarray:
        from rlvr_envs.video.pusht import physics_state, restore_physics_state

        for target in chunk:
            restore_physics_state(env, physics)
            env.step(target.astype(np.float32))
            physics = physics_state(env)
            if stop_at_success and goal_coverage(physics) > SUCCESS_COVERAGE:
                break
        return physics

    def step(self, action):
        from rlvr_envs.video.pusht import render_frame

        if self.physics is None:
            raise RuntimeError("call reset() before step()")
        chunk = sanitize_chunk(action, self.frame_skip, self.physics[0:2], self.invalid_actions, self.counts)
        self.physics = self._simulate(self.env, self.physics, chunk, stop_at_success=True)
        self._frame = render_frame(self.env)
        self._steps += 1
        info = self._info()
        terminated = bool(info["is_success"])
        reward = float(np.clip(info["coverage"] / SUCCESS_COVERAGE, 0.0, 1.0))
        return self._frame.copy(), reward, terminated, self._steps >= self.max_steps and not terminated, info

    def rollout(self, action_sequences, start=None, seed: int | None = None, frames: str = "all",
                return_physics: bool = False):
        """Frames of N candidate sequences [N, H, 5, 2] from the exact state `start` (default the
        current one): uint8 [N, H, R, R, 3], or [N, R, R, 3] with `frames="last"` (only the final
        state is rendered: what a planner needs). `seed` is unused (the simulator is exact)."""
        if frames not in ("all", "last"):
            raise ValueError(f"frames must be 'all' or 'last', got {frames!r}")
        start = self.physics if start is None else np.asarray(start, dtype=np.float64)
        if start is None:
            raise RuntimeError("call reset() (or pass start=) before rollout()")
        chunks = as_chunk_batch(action_sequences, self.frame_skip)
        out, states = [], []
        for sequence in chunks:
            physics, seen = start, []
            for chunk in sequence:
                physics = self._simulate(self.physics_env, physics, chunk, stop_at_success=False)
                if frames == "all":
                    seen.append(self.render_physics(physics))
            out.append(np.stack(seen) if frames == "all" else self.render_physics(physics))
            states.append(physics)
        result = np.stack(out)
        return (result, np.stack(states)) if return_physics else result

    def planning_start(self, observation) -> np.ndarray:
        """The exact state a true-simulator planner rolls out from (only it reads physics)."""
        if observation.physics is None:
            raise ValueError("the true-simulator planner needs the exact physics state in the observation")
        return np.asarray(observation.physics, dtype=np.float64)

    def render(self):
        return None if self._frame is None else self._frame.copy()

    def close(self):
        self.env.close()
        self.physics_env.close()
