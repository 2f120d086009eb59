"""Scripted PushT policies and the rollout loop that records them.

Policies (mixed per episode by the generator, chosen from `(seed, index)`):

- ``expert``: a scripted pusher (`ScriptedPushExpert`). It scores contact points on the
  T's outline by how well pushing there moves the block toward the goal pose (translation
  and rotation), walks around the block to the chosen point and pushes; Gaussian noise of
  one of the configured noise levels (pixels, on the target position) makes imperfect
  variants.
- ``random``: targets drawn uniformly in a box around the block and held for 1-5 steps
  (`RandomBlockPolicy`), so the agent keeps touching the block without a goal.
- ``replay``: the noiseless expert's action sequence, planned from the episode's start
  state (`plan_expert_actions`), executed open loop from a perturbed start
  (`perturb_start`: block shifted and turned): plausible motion that mostly misses the goal.
- ``cem``: targets like the candidates a CEM planner scores (`cem_like_targets`, redrawn from
  the agent every `horizon` chunks; `CEMLikePolicy`), so a world model sees the actions it
  will be asked to simulate when it plans.
- ``handoff``: the expert until the block's goal coverage first reaches a level drawn per
  episode, then pushes that do not finish the task (`HandoffPolicy`): the block near the goal
  with actions that leave it there or push it off, which expert episodes never show.
- ``sweep``: as ``handoff``, but the off-task pushes are targets anywhere in the arena, a new
  one every step (`ArenaSweepPolicy`): the agent at its top speed, the actions a random or
  badly trained policy under evaluation gives, which the other policies never do.
- ``waypoint``: as ``handoff``, but off the task the agent drives to targets anywhere in the
  arena, each held for 5-30 steps (`ArenaWaypointPolicy`): long straight drives that cross or
  ram the block, as a policy heading somewhere regardless of it does.

Actions are absolute agent targets in pixels (the env's own action space, float32).
`run_policy` rolls out until success (coverage > 0.95, the env's own criterion) or
`max_steps`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from rlvr_envs.video.pusht.physics import (
    AGENT_RADIUS,
    ARENA_SIZE,
    GOAL_POSE,
    SUCCESS_COVERAGE,
    _T_COG,
    _T_OUTLINE,
    _rotation,
    _wrap_angle,
    block_centre,
    block_in_arena,
    goal_coverage,
    physics_state,
    render_frame,
    restore_physics_state,
)

#: new ones go last: a mix of them draws each episode's policy by this order
POLICIES = ("expert", "random", "replay", "cem", "handoff", "sweep", "waypoint")
#: the data policies that are a `HandoffPolicy`, with its `off` (the off-task targets) for each
HANDOFF_OFF = {"handoff": "around", "sweep": "sweep", "waypoint": "waypoint"}
_GYRATION_RADIUS = 40.0  # px, converts block rotation to an arc length when scoring pushes


def _contact_candidates(spacing: float = 7.5, corner_margin: float = 6.0) -> tuple[np.ndarray, np.ndarray]:
    """Points along the T outline (body frame) with their outward normals."""
    points, normals = [], []
    for start, end in zip(_T_OUTLINE, np.roll(_T_OUTLINE, -1, axis=0)):
        edge = end - start
        length = float(np.linalg.norm(edge))
        direction = edge / length
        normal = np.array([direction[1], -direction[0]])  # outline is counter-clockwise
        for offset in np.arange(corner_margin, length - corner_margin + 1e-9, spacing):
            points.append(start + direction * offset)
            normals.append(normal)
    return np.array(points), np.array(normals)


_CANDIDATE_POINTS, _CANDIDATE_NORMALS = _contact_candidates()


class ScriptedPushExpert:
    """Closed-loop pusher: choose a contact point, go around the block to it, push.

    Each push direction d at contact point p (normal n) is scored by how well the motion
    it causes, translation d and rotation (p - cog) x d, aligns with the remaining pose
    error (translation to the goal, rotation times a gyration radius). Points whose
    pre-push position is inside a wall or the T are skipped, points the agent fails to
    reach in time are banned for a while. The push depth shrinks with the remaining error,
    which is what lets it finish (> 95 % coverage needs ~2 px and ~1 degree).
    Deterministic given its noise generator.
    """

    approach_gap = 4.0  # px between agent surface and block at the pre-push point
    safe_radius = 100.0  # px around the block's cog that clears the whole T plus the agent
    push_steps = 5
    approach_budget = 30
    ban_steps = 60
    ban_radius = 25.0  # px (body frame): a failed approach bans its neighbours too
    wall_margin = 24.0  # px: agent centres closer to the arena edge are unreachable

    def __init__(self, rng: np.random.Generator | None = None, noise_std: float = 0.0):
        self.rng = rng
        self.noise_std = float(noise_std)
        self._contact: int | None = None
        self._phase = "select"
        self._steps_in_phase = 0
        self._banned = np.zeros(len(_CANDIDATE_POINTS), dtype=np.int64)

    @staticmethod
    def _pose(physics: np.ndarray):
        agent = physics[0:2]
        origin, angle = physics[4:6], physics[6]
        rot = _rotation(angle)
        cog = origin + rot @ _T_COG
        goal_cog = GOAL_POSE[:2] + _rotation(GOAL_POSE[2]) @ _T_COG
        return agent, origin, rot, cog, goal_cog - cog, _wrap_angle(GOAL_POSE[2] - angle)

    @staticmethod
    def _scores(rot: np.ndarray, origin: np.ndarray, cog: np.ndarray, err_pos, err_ang) -> np.ndarray:
        points = origin + _CANDIDATE_POINTS @ rot.T
        push = -(_CANDIDATE_NORMALS @ rot.T)
        lever = points - cog
        torque = (lever[:, 0] * push[:, 1] - lever[:, 1] * push[:, 0]) / _GYRATION_RADIUS
        twist = np.stack([push[:, 0], push[:, 1], torque], axis=1)
        twist /= np.linalg.norm(twist, axis=1, keepdims=True)
        wanted = np.array([err_pos[0], err_pos[1], err_ang * _GYRATION_RADIUS])
        return twist @ (wanted / (np.linalg.norm(wanted) + 1e-9))

    def _reachable(self, origin: np.ndarray, rot: np.ndarray) -> np.ndarray:
        outline = origin + _T_OUTLINE @ rot.T
        pre_push = origin + (_CANDIDATE_POINTS + _CANDIDATE_NORMALS * (AGENT_RADIUS + self.approach_gap)) @ rot.T
        inside = np.all((pre_push > self.wall_margin) & (pre_push < ARENA_SIZE - self.wall_margin), axis=1)
        clear = np.array([_distance_to_polygon(p, outline) >= AGENT_RADIUS + 1.0 for p in pre_push])
        return inside & clear

    @staticmethod
    def _blocked(start: np.ndarray, end: np.ndarray, outline: np.ndarray) -> bool:
        """Does the agent's disc, moving start -> end, sweep through the T? (sampled path)

        A 3 px safety margin keeps the PD-controlled agent from grazing the T on the way;
        it fades out over the last 10 px, since the end (a pre-push point) is close by design.
        """
        length = float(np.linalg.norm(end - start))
        steps = max(2, int(length / 5.0) + 1)
        for t in np.linspace(0.0, 1.0, steps):
            margin = min(3.0, 0.3 * (1.0 - t) * length)
            if _distance_to_polygon(start + t * (end - start), outline) < AGENT_RADIUS + margin:
                return True
        return False

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        agent, origin, rot, cog, err_pos, err_ang = self._pose(np.asarray(physics, dtype=np.float64))
        scores = self._scores(rot, origin, cog, err_pos, err_ang)
        self._banned = np.maximum(self._banned - 1, 0)

        error_size = math.hypot(float(np.linalg.norm(err_pos)), err_ang * _GYRATION_RADIUS)
        push_steps = self.push_steps if error_size > 20.0 else 2
        if self._phase == "push" and (self._steps_in_phase >= push_steps or scores[self._contact] <= 0.2):
            best = self._best_contact(scores, origin, rot)
            if best == self._contact:  # still the best push: keep going
                self._steps_in_phase = 0
            else:  # back off first, so travelling to the next point does not drag the T
                self._phase, self._steps_in_phase = "retreat", 0
        if self._phase == "retreat" and self._steps_in_phase >= 2:
            self._contact, self._phase = None, "select"
        if self._phase == "approach" and self._steps_in_phase > self.approach_budget:
            near = np.linalg.norm(_CANDIDATE_POINTS - _CANDIDATE_POINTS[self._contact], axis=1) < self.ban_radius
            self._banned[near] = self.ban_steps
            self._contact, self._phase = None, "select"
        if self._contact is None:
            self._contact = self._best_contact(scores, origin, rot)
            self._phase, self._steps_in_phase = "approach", 0

        point = origin + rot @ _CANDIDATE_POINTS[self._contact]
        normal = rot @ _CANDIDATE_NORMALS[self._contact]
        pre_push = point + normal * (AGENT_RADIUS + self.approach_gap)
        if self._phase == "approach" and np.linalg.norm(agent - pre_push) < 4.0:
            self._phase, self._steps_in_phase = "push", 0

        if self._phase == "retreat":  # back off along the normal before travelling, not dragging the T
            target = point + normal * (AGENT_RADIUS + 3 * self.approach_gap)
        elif self._phase == "push":
            advance = float(np.clip(0.5 * error_size, 1.5, 20.0))  # how far to move the block surface
            target = point + normal * (AGENT_RADIUS - advance)
        elif not self._blocked(agent, pre_push, origin + _T_OUTLINE @ rot.T):
            target = pre_push
        else:
            target = self._detour(agent, pre_push, cog)
        self._steps_in_phase += 1

        if self.noise_std > 0 and self.rng is not None:
            target = target + self.rng.normal(0.0, self.noise_std, size=2)
        return np.clip(target, 0.0, ARENA_SIZE).astype(np.float32)

    def _best_contact(self, scores: np.ndarray, origin: np.ndarray, rot: np.ndarray) -> int:
        masked = np.where((self._banned == 0) & self._reachable(origin, rot), scores, -np.inf)
        return int(np.argmax(masked if np.isfinite(masked).any() else scores))

    def _detour(self, agent: np.ndarray, goal: np.ndarray, cog: np.ndarray) -> np.ndarray:
        """Next waypoint on a circle around the block, turning toward the goal's side."""
        here = agent - cog
        there = goal - cog
        here_angle = math.atan2(here[1], here[0])
        turn = _wrap_angle(math.atan2(there[1], there[0]) - here_angle)
        low, high = self.wall_margin, ARENA_SIZE - self.wall_margin
        for direction in (1.0, -1.0):  # prefer the short way round unless a wall cuts it off
            step = direction * math.copysign(min(abs(turn), 0.6), turn)
            waypoint = cog + self.safe_radius * np.array([math.cos(here_angle + step), math.sin(here_angle + step)])
            if np.all((waypoint > low) & (waypoint < high)):
                return waypoint
        return np.clip(waypoint, low, high)


class HandoffPolicy:
    """The expert, handing off to pushes that do not finish the task each time the block nears the goal.

    A world model trained on expert episodes only sees a block near the goal moved onto it, so it
    learns that such a block snaps onto the goal whatever the agent does: a simulator in which
    every policy started near the goal succeeds. Here, each time the block's goal coverage first
    reaches a level drawn from `levels`, the agent spends `off_steps` steps off the task,
    alternating between standing still (5-25 steps) and `RandomBlockPolicy`'s targets around the
    block, which leave the block where it is or push it off the goal; then a fresh expert takes
    over until the next level. `off` picks the off-task targets: "around" the block
    (`RandomBlockPolicy`), "sweep" (`ArenaSweepPolicy`) or "waypoint" (`ArenaWaypointPolicy`).
    """

    def __init__(self, rng: np.random.Generator, box: float, levels: tuple[float, float] = (0.2, 0.9),
                 off_steps: tuple[int, int] = (10, 40), still: float = 0.4, off: str = "around"):
        if not (0.0 <= levels[0] <= levels[1] <= 1.0 and 1 <= off_steps[0] <= off_steps[1] and 0.0 <= still <= 1.0):
            raise ValueError(f"levels must be 0 <= low <= high <= 1, off_steps 1 <= low <= high and still in [0, 1]; "
                             f"got levels={levels}, off_steps={off_steps}, still={still}")
        if off not in HANDOFF_OFF.values():
            raise ValueError(f"off must be one of {tuple(HANDOFF_OFF.values())}; got {off!r}")
        self.rng, self.box, self.levels, self.off_steps, self.still = rng, float(box), levels, off_steps, float(still)
        self.off = off
        self._hand_back()

    def _hand_back(self) -> None:
        self.expert = ScriptedPushExpert(self.rng)
        self.level = float(self.rng.uniform(*self.levels))
        self._off_left = 0
        self._still_left = 0

    def _off_task_policy(self):
        if self.off == "sweep":
            return ArenaSweepPolicy(self.rng)
        if self.off == "waypoint":
            return ArenaWaypointPolicy(self.rng)
        return RandomBlockPolicy(self.rng, self.box)

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        if self._off_left <= 0:
            if goal_coverage(physics) < self.level:
                return self.expert(physics)
            self._off_left = int(self.rng.integers(self.off_steps[0], self.off_steps[1] + 1))
            self.around = self._off_task_policy()
        self._off_left -= 1
        if self._off_left == 0:
            self._hand_back()
        if self._still_left <= 0 and self.around.hold_left <= 0 and self.rng.random() < self.still:
            self._still_at, self._still_left = np.asarray(physics[0:2], dtype=np.float32), int(self.rng.integers(5, 26))
        if self._still_left > 0:
            self._still_left -= 1
            return self._still_at
        return self.around(physics)


def _distance_to_polygon(point: np.ndarray, outline: np.ndarray) -> float:
    """Distance from `point` to a simple polygon (0 inside)."""
    starts, ends = outline, np.roll(outline, -1, axis=0)
    edges = ends - starts
    t = np.clip(np.einsum("ij,ij->i", point - starts, edges) / np.einsum("ij,ij->i", edges, edges), 0.0, 1.0)
    nearest = starts + t[:, None] * edges
    distance = float(np.min(np.linalg.norm(nearest - point, axis=1)))
    # even-odd rule for inside
    crossings = ((starts[:, 1] > point[1]) != (ends[:, 1] > point[1])) & (
        point[0] < starts[:, 0] + (point[1] - starts[:, 1]) * edges[:, 0] / np.where(edges[:, 1] == 0, 1e-12, edges[:, 1])
    )
    return 0.0 if int(np.count_nonzero(crossings)) % 2 else distance


class ArenaSweepPolicy:
    """Targets uniform over the whole arena, a new one every step (the agent at its top speed)."""

    hold_left = 0  #: never holds a target (read by `HandoffPolicy` like `RandomBlockPolicy`'s)

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        return self.rng.uniform(0.0, ARENA_SIZE, size=2).astype(np.float32)


class ArenaWaypointPolicy:
    """Targets uniform over the whole arena, each held for `hold` (low, high) steps."""

    def __init__(self, rng: np.random.Generator, hold: tuple[int, int] = (5, 30)):
        if not 1 <= hold[0] <= hold[1]:
            raise ValueError(f"hold must be 1 <= low <= high; got {hold}")
        self.rng, self.hold = rng, hold
        self._target = np.zeros(2, np.float32)
        self.hold_left = 0  #: steps the current target is still held for

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        if self.hold_left <= 0:
            self._target = self.rng.uniform(0.0, ARENA_SIZE, size=2).astype(np.float32)
            self.hold_left = int(self.rng.integers(self.hold[0], self.hold[1] + 1))
        self.hold_left -= 1
        return self._target.copy()


class RandomBlockPolicy:
    """Targets uniform in a box around the block's centre, each held for 1-5 steps."""

    def __init__(self, rng: np.random.Generator, box: float):
        self.rng, self.box = rng, float(box)
        self._target: np.ndarray | None = None
        self.hold_left = 0  #: steps the current target is still held for

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        if self.hold_left <= 0 or self._target is None:
            self._target = np.clip(block_centre(physics) + self.rng.uniform(-self.box, self.box, size=2), 0.0, ARENA_SIZE)
            self.hold_left = int(self.rng.integers(1, 6))
        self.hold_left -= 1
        return self._target.astype(np.float32)


def cem_like_targets(agent: np.ndarray, horizon: int, std: float, rng: np.random.Generator,
                     frame_skip: int = 5) -> np.ndarray:
    """[horizon, frame_skip, 2] targets like those CEM scores, clipped to the arena: a path from
    the agent toward a point N(0, 2 std) away (where an elite mean goes), plus N(0, s) noise per
    target with s uniform in [std/4, std] (CEM's samples around it, early and late iterations).
    Noise alone barely moves the agent (its pulls cancel), so the path is what makes pushes."""
    steps = horizon * frame_skip
    displacement = rng.normal(0.0, 2.0 * std, size=2)
    path = np.asarray(agent, dtype=np.float64) + np.outer(np.arange(1, steps + 1) / steps, displacement)
    noise = rng.uniform(std / 4, std) * rng.standard_normal((steps, 2))
    return np.clip(path + noise, 0.0, ARENA_SIZE).reshape(horizon, frame_skip, 2)


class CEMLikePolicy:
    """Plays `cem_like_targets` drawn from the agent's position, a new draw every `horizon` chunks."""

    def __init__(self, rng: np.random.Generator, std: float = 60.0, horizon: int = 5, frame_skip: int = 5):
        if std <= 0 or horizon < 1 or frame_skip < 1:
            raise ValueError(f"need std > 0, horizon >= 1, frame_skip >= 1; got {std}, {horizon}, {frame_skip}")
        self.rng, self.std, self.horizon, self.frame_skip = rng, float(std), int(horizon), int(frame_skip)
        self._queue: list[np.ndarray] = []

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        if not self._queue:
            targets = cem_like_targets(physics[0:2], self.horizon, self.std, self.rng, self.frame_skip)
            self._queue = list(targets.reshape(-1, 2)[::-1])
        return self._queue.pop().astype(np.float32)


def run_policy(
    env, initial_physics: np.ndarray, policy: Callable[[np.ndarray], np.ndarray], max_steps: int,
    reseat_each_step: bool = True, record_frames: bool = True, actions: Sequence[np.ndarray] | None = None,
    stop_when_block_leaves: bool = False,
) -> dict[str, Any]:
    """Roll out from `initial_physics`, either closed loop (`policy`) or replaying `actions`.

    Returns frames (or None), actions, physics, coverage, success. With `actions` given the
    policy is ignored. The rollout stops early at success, and with `stop_when_block_leaves`
    at the first step whose block has left the arena (`block_in_arena`: the agent can squeeze it
    through a wall, and no later frame shows it).
    """
    restore_physics_state(env, initial_physics)
    frames = [render_frame(env)] if record_frames else None
    physics_rows = [physics_state(env)]
    coverages = [goal_coverage(physics_rows[0])]
    taken: list[np.ndarray] = []
    success = coverages[0] > SUCCESS_COVERAGE
    steps = max_steps if actions is None else min(max_steps, len(actions))
    for step in range(steps):
        if success:
            break
        action = np.asarray(policy(physics_rows[-1]) if actions is None else actions[step], dtype=np.float32)
        if reseat_each_step:
            restore_physics_state(env, physics_rows[-1])
        observation, *_ = env.step(action)
        taken.append(action)
        physics_rows.append(physics_state(env))
        coverages.append(goal_coverage(physics_rows[-1]))
        if record_frames:
            frames.append(np.asarray(observation, dtype=np.uint8))
        success = coverages[-1] > SUCCESS_COVERAGE
        if stop_when_block_leaves and not block_in_arena(physics_rows[-1]):
            break
    return {
        "frames": None if frames is None else np.stack(frames),
        "actions": np.array(taken, dtype=np.float32).reshape(-1, 2),
        "physics": np.stack(physics_rows),
        "coverage": np.array(coverages, dtype=np.float64),
        "success": bool(success),
    }



def plan_expert_actions(planner_env, start: np.ndarray, max_steps: int, reseat_each_step: bool = True) -> np.ndarray:
    """The noiseless expert's actions from `start`, simulated without rendering (replay's plan)."""
    return run_policy(planner_env, start, ScriptedPushExpert(), max_steps, reseat_each_step,
                      record_frames=False)["actions"]


def perturb_start(start: np.ndarray, rng: np.random.Generator, shift: tuple[float, float]) -> np.ndarray:
    """`start` with the block shifted (std `shift[0]` px, kept 60 px from the walls) and turned (std `shift[1]` rad)."""
    shift_px, shift_rad = shift
    perturbed = np.array(start, dtype=np.float64, copy=True)
    perturbed[4:6] = np.clip(perturbed[4:6] + rng.normal(0.0, shift_px, 2), 60.0, ARENA_SIZE - 60.0)
    perturbed[6] += rng.normal(0.0, shift_rad)
    return perturbed
