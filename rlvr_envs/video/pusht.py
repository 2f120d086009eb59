"""PushT trajectories recorded from the real `gym_pusht/PushT-v0` simulator.

Why generate instead of download: PushT is simulable here, so data can cover what a
world model must see (successful pushes, near misses, aimless contact) in the real
physics and renderer, at any resolution, reproducibly from a seed.

Policies (mixed per episode, chosen from `(seed, index)`):

- ``expert``: a scripted pusher. It scores contact points on the T's outline by how well
  pushing there moves the block toward the goal pose (translation and rotation), walks
  around the block to the chosen point and pushes; Gaussian noise of one of
  `expert_noise_levels` (pixels, on the target position) makes imperfect variants.
- ``random``: targets drawn uniformly in a box around the block and held for 1-5 steps,
  so the agent keeps touching the block without a goal.
- ``replay``: the noiseless expert's action sequence, planned from the episode's start
  state, executed open loop from a perturbed start (block shifted and turned): plausible
  motion that mostly misses the goal.

Actions are absolute agent targets in pixels (the env's own action space, float32).
Episodes end at success (coverage > 0.95, the env's own criterion) or after `max_steps`.

Exact state: `physics_state` reads the 10 numbers that define the simulation
(`PHYSICS_FIELDS`) and `restore_physics_state` writes them back by setting the pymunk
bodies directly (agent position and velocity, then block angle, then block position,
velocity and angular velocity: setting the angle after the position would rotate the T
about its centre of gravity and move it). gym-pusht's own `reset_to_state` is not exact
(it sets position before angle and then steps the physics). Chipmunk also keeps solver
caches that pymunk does not expose (contact impulses for warm starting, bias velocities
for penetration correction), so a restored state would continue slightly differently from
the original. The generator therefore re-seats the recorded state into a fresh pymunk
space before every step (`reseat_each_step=True`, default), exactly as a restore does:
the next state and frame are then an exact function of (state, action), and a restore
anywhere in a recorded episode reproduces every later state and frame bit for bit
(tested). Two details: gym-pusht draws the solver's contact points as small dots, so a
frame rendered right after a restore (no contacts solved yet) can differ from the
recorded frame by those few pixels; and the physics within one 0.1 s control step
(10 substeps) is gym-pusht's, unchanged; only the solver caches carried from one control
step to the next (warm-start impulses, pending penetration correction) are dropped.

On-disk format (`FORMAT_NAME`, version `FORMAT_VERSION`)::

    OUT/config.json                   the PushTGenerationConfig, format name and version
    OUT/summary.json                  success rate and coverage, overall and per policy
    OUT/episodes/episode_000000.npz   one np.savez_compressed file per episode:
        frames    uint8   [T+1, R, R, 3]  RGB, frame t shows physics[t]
        actions   float32 [T, 2]          absolute target (x, y) in pixels applied at t
        physics   float64 [T+1, 10]       PHYSICS_FIELDS
        states    float64 [T+1, 5]        agent_x, agent_y, block_x, block_y, block_angle mod 2pi
                                          (gym-pusht's `obs_type="state"` and DINO-WM's layout)
        coverage  float64 [T+1]           goal coverage of the T
        success   bool    []              coverage exceeded 0.95
        policy    str     []              expert | random | replay
        noise     float64 []              expert target noise std (pixels); 0 otherwise
        seed      int64   []              the episode's reset seed
        index     int64   []              the episode's index

npz is lossless, so `load_episode(save_episode(e)) == e` bit for bit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

ENV_ID = "gym_pusht/PushT-v0"
FORMAT_NAME = "rlvr-world/pusht-episodes"
FORMAT_VERSION = 1
ARENA_SIZE = 512.0
GOAL_POSE = np.array([256.0, 256.0, math.pi / 4])  # gym-pusht's fixed goal (block origin x, y, angle)
SUCCESS_COVERAGE = 0.95
AGENT_RADIUS = 15.0
PHYSICS_FIELDS = (
    "agent_x", "agent_y", "agent_vx", "agent_vy",
    "block_x", "block_y", "block_angle", "block_vx", "block_vy", "block_angular_velocity",
)
POLICIES = ("expert", "random", "replay")
EPISODE_FILE = "episode_{index:06d}.npz"

# The T in its body frame (gym-pusht's `add_tee` with scale 30): outline with outward
# normals per edge, and the centre of gravity the physics rotates about.
_T_OUTLINE = np.array(
    [(-60, 0), (60, 0), (60, 30), (15, 30), (15, 120), (-15, 120), (-15, 30), (-60, 30)], dtype=np.float64
)
_T_COG = np.array([0.0, 45.0])
_GYRATION_RADIUS = 40.0  # px, converts block rotation to an arc length when scoring pushes


@dataclass
class PushTGenerationConfig:
    """What `generate_dataset` records. Each episode is a pure function of (seed, index, config).

    Args:
        episodes: number of episodes.
        resolution: frame height = width in pixels (gym-pusht renders 512x512 and resizes).
        seed: root seed; episode i uses `np.random.SeedSequence(seed, spawn_key=(i,))`.
        max_steps: episode length limit (gym-pusht's own limit is 300).
        policy_weights: probability of each policy in `POLICIES` per episode.
        expert_noise_levels: std (pixels) of the expert's target noise, one drawn per episode.
        random_box: half-width (pixels) of the box around the block where random targets fall.
        replay_shift: std of the start perturbation for replays: (pixels, radians).
        reseat_each_step: re-seat the state in a fresh space before each step (see module doc).
    """

    episodes: int = 200
    resolution: int = 96
    seed: int = 0
    max_steps: int = 300
    policy_weights: dict[str, float] = field(default_factory=lambda: {"expert": 0.6, "random": 0.2, "replay": 0.2})
    expert_noise_levels: tuple[float, ...] = (0.0, 10.0, 25.0)
    random_box: float = 100.0
    replay_shift: tuple[float, float] = (25.0, 0.35)
    reseat_each_step: bool = True

    def validate(self) -> "PushTGenerationConfig":
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1; got {self.episodes}")
        if not 16 <= self.resolution <= 1024:
            raise ValueError(f"resolution must be in [16, 1024]; got {self.resolution}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0; got {self.seed}")
        if not 1 <= self.max_steps <= 300:
            raise ValueError(f"max_steps must be in [1, 300] (gym-pusht's limit); got {self.max_steps}")
        unknown = set(self.policy_weights) - set(POLICIES)
        if unknown or not self.policy_weights:
            raise ValueError(f"policy_weights keys must be among {POLICIES}; got {sorted(self.policy_weights)}")
        if any(w < 0 for w in self.policy_weights.values()) or sum(self.policy_weights.values()) <= 0:
            raise ValueError(f"policy_weights must be non-negative with a positive sum; got {self.policy_weights}")
        if not self.expert_noise_levels or any(n < 0 for n in self.expert_noise_levels):
            raise ValueError(f"expert_noise_levels must be non-empty and >= 0; got {self.expert_noise_levels}")
        if self.random_box <= 0 or any(s < 0 for s in self.replay_shift) or len(self.replay_shift) != 2:
            raise ValueError("random_box must be > 0 and replay_shift two non-negative numbers")
        return self

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["expert_noise_levels"] = list(self.expert_noise_levels)
        data["replay_shift"] = list(self.replay_shift)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "PushTGenerationConfig":
        data = dict(data)
        data["expert_noise_levels"] = tuple(data["expert_noise_levels"])
        data["replay_shift"] = tuple(data["replay_shift"])
        return cls(**data).validate()


# --------------------------------------------------------------------------- simulator


def make_env(resolution: int = 96, max_steps: int = 300, render: bool = True):
    """The real gym-pusht env; `render=False` gives the cheap state-only variant for planning."""
    import gymnasium as gym
    import gym_pusht  # noqa: F401  (registers gym_pusht/PushT-v0)

    kwargs: dict[str, Any] = {"obs_type": "pixels" if render else "state", "max_episode_steps": max_steps}
    if render:
        kwargs.update(observation_width=resolution, observation_height=resolution)
    return gym.make(ENV_ID, **kwargs)


def physics_state(env) -> np.ndarray:
    """The 10 numbers of `PHYSICS_FIELDS` (float64) that define the simulation state."""
    sim = env.unwrapped
    agent, block = sim.agent, sim.block
    return np.array(
        [*agent.position, *agent.velocity, *block.position, block.angle, *block.velocity, block.angular_velocity],
        dtype=np.float64,
    )


def restore_physics_state(env, physics: Sequence[float]) -> None:
    """Put `env` exactly into `physics` (see `PHYSICS_FIELDS`) in a fresh pymunk space.

    A fresh space (gym-pusht's own `_setup`, which `reset` also uses) drops solver caches
    left by whatever the env simulated before, so the outcome depends on `physics` only.
    The env must have been reset once (gymnasium's order enforcement). Relies on
    gym-pusht internals (`_setup`, `agent`, `block`, `space`), pinned by the tests.
    """
    physics = np.asarray(physics, dtype=np.float64)
    if physics.shape != (len(PHYSICS_FIELDS),) or not np.isfinite(physics).all():
        raise ValueError(f"physics must be {len(PHYSICS_FIELDS)} finite numbers {PHYSICS_FIELDS}; got {physics}")
    sim = env.unwrapped
    sim._setup()
    agent, block = sim.agent, sim.block
    agent.position = (physics[0], physics[1])
    agent.velocity = (physics[2], physics[3])
    block.angle = physics[6]  # angle first: setting it rotates about the centre of gravity
    block.position = (physics[4], physics[5])
    block.velocity = (physics[7], physics[8])
    block.angular_velocity = physics[9]
    sim.space.reindex_shapes_for_body(agent)  # shapes cache world geometry for collision and drawing
    sim.space.reindex_shapes_for_body(block)


def render_frame(env) -> np.ndarray:
    """The observation frame of the current state (uint8 [R, R, 3])."""
    return np.asarray(env.unwrapped.get_obs(), dtype=np.uint8)


def _t_rectangles() -> tuple[np.ndarray, np.ndarray]:
    """The two rectangles gym-pusht builds the T from (body frame), in a fixed order."""
    bar = np.array([(-60, 30), (60, 30), (60, 0), (-60, 0)], dtype=np.float64)
    stem = np.array([(-15, 30), (-15, 120), (15, 120), (15, 30)], dtype=np.float64)
    return bar, stem


def _t_geometry(x: float, y: float, angle: float):
    from shapely.geometry import MultiPolygon, Polygon

    rot = _rotation(angle)
    return MultiPolygon([Polygon(part @ rot.T + np.array([x, y])) for part in _t_rectangles()])


def goal_coverage(physics: Sequence[float]) -> float:
    """Fraction of the goal T covered by the block, as gym-pusht's `info["coverage"]`.

    Recomputed from the physics state with the two rectangles in a fixed order: gym-pusht
    iterates over a `set` of shapes, which makes its value differ in the last bits from
    run to run; this one is a pure function of the state (equal to gym-pusht's to ~1e-12).
    """
    physics = np.asarray(physics, dtype=np.float64)
    goal = _t_geometry(*GOAL_POSE)
    block = _t_geometry(physics[4], physics[5], physics[6])
    return float(goal.intersection(block).area / goal.area)


def gym_state(physics: np.ndarray) -> np.ndarray:
    """gym-pusht's 5-dim state [agent_x, agent_y, block_x, block_y, block_angle mod 2pi] from physics rows."""
    physics = np.asarray(physics, dtype=np.float64)
    return np.concatenate(
        [physics[..., 0:2], physics[..., 4:6], np.mod(physics[..., 6:7], 2 * np.pi)], axis=-1
    )


# --------------------------------------------------------------------------- policies


def _rotation(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def _wrap_angle(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


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


class RandomBlockPolicy:
    """Targets uniform in a box around the block's centre, each held for 1-5 steps."""

    def __init__(self, rng: np.random.Generator, box: float):
        self.rng, self.box = rng, float(box)
        self._target: np.ndarray | None = None
        self._hold = 0

    def __call__(self, physics: np.ndarray) -> np.ndarray:
        if self._hold <= 0 or self._target is None:
            cog = physics[4:6] + _rotation(physics[6]) @ _T_COG
            self._target = np.clip(cog + self.rng.uniform(-self.box, self.box, size=2), 0.0, ARENA_SIZE)
            self._hold = int(self.rng.integers(1, 6))
        self._hold -= 1
        return self._target.astype(np.float32)


# --------------------------------------------------------------------------- episodes


@dataclass
class PushTEpisode:
    """One recorded episode (see the module docstring for shapes and meaning)."""

    index: int
    policy: str
    noise: float
    seed: int
    frames: np.ndarray
    actions: np.ndarray
    physics: np.ndarray
    coverage: np.ndarray
    success: bool

    @property
    def states(self) -> np.ndarray:
        return gym_state(self.physics)

    def __len__(self) -> int:
        return int(self.actions.shape[0])

    def validate(self, source: str = "") -> "PushTEpisode":
        where = f" ({source})" if source else ""
        steps = self.frames.shape[0] - 1  # frames are the reference: T + 1 of them
        checks = {
            "frames": self.frames.dtype == np.uint8 and self.frames.ndim == 4 and self.frames.shape[-1] == 3,
            "actions": self.actions.shape == (steps, 2) and bool(np.isfinite(self.actions).all()),
            "physics": self.physics.shape == (steps + 1, len(PHYSICS_FIELDS)) and bool(np.isfinite(self.physics).all()),
            "coverage": self.coverage.shape == (steps + 1,),
            "policy": self.policy in POLICIES,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(
                f"PushT episode {self.index}{where} is malformed in {bad}: frames {self.frames.shape} "
                f"{self.frames.dtype}, actions {self.actions.shape}, physics {self.physics.shape}, "
                f"coverage {self.coverage.shape}, policy {self.policy!r}"
            )
        return self


def episode_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=(index,))


def run_policy(
    env, initial_physics: np.ndarray, policy: Callable[[np.ndarray], np.ndarray], max_steps: int,
    reseat_each_step: bool = True, record_frames: bool = True, actions: Sequence[np.ndarray] | None = None,
) -> dict[str, Any]:
    """Roll out from `initial_physics`, either closed loop (`policy`) or replaying `actions`.

    Returns frames (or None), actions, physics, coverage, success. With `actions` given the
    policy is ignored and the rollout stops early only at success.
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
    return {
        "frames": None if frames is None else np.stack(frames),
        "actions": np.array(taken, dtype=np.float32).reshape(-1, 2),
        "physics": np.stack(physics_rows),
        "coverage": np.array(coverages, dtype=np.float64),
        "success": bool(success),
    }


class PushTGenerator:
    """Holds the two simulator instances and generates episodes by index."""

    def __init__(self, config: PushTGenerationConfig):
        self.config = config.validate()
        self.env = make_env(config.resolution, config.max_steps, render=True)
        self.planner = make_env(config.resolution, config.max_steps, render=False)

    def close(self) -> None:
        self.env.close()
        self.planner.close()

    def episode(self, index: int) -> PushTEpisode:
        """Episode `index`: a pure function of (config, index)."""
        config = self.config
        sequence = episode_seed_sequence(config.seed, index)
        choice_rng, policy_rng, reset_seed_seq = (np.random.default_rng(s) for s in sequence.spawn(3))
        names = [name for name in POLICIES if config.policy_weights.get(name, 0) > 0]
        weights = np.array([config.policy_weights[name] for name in names], dtype=np.float64)
        policy_name = names[int(choice_rng.choice(len(names), p=weights / weights.sum()))]
        reset_seed = int(reset_seed_seq.integers(0, 2**31 - 1))

        self.env.reset(seed=reset_seed)
        start = physics_state(self.env)
        noise = 0.0
        if policy_name == "expert":
            noise = float(config.expert_noise_levels[int(choice_rng.integers(len(config.expert_noise_levels)))])
            record = run_policy(self.env, start, ScriptedPushExpert(policy_rng, noise), config.max_steps,
                                config.reseat_each_step)
        elif policy_name == "random":
            record = run_policy(self.env, start, RandomBlockPolicy(policy_rng, config.random_box), config.max_steps,
                                config.reseat_each_step)
        else:
            self.planner.reset(seed=reset_seed)
            plan = run_policy(self.planner, start, ScriptedPushExpert(), config.max_steps, config.reseat_each_step,
                              record_frames=False)["actions"]
            shift_px, shift_rad = config.replay_shift
            perturbed = start.copy()
            perturbed[4:6] = np.clip(perturbed[4:6] + policy_rng.normal(0.0, shift_px, 2), 60.0, ARENA_SIZE - 60.0)
            perturbed[6] += policy_rng.normal(0.0, shift_rad)
            record = run_policy(self.env, perturbed, None, config.max_steps, config.reseat_each_step, actions=plan)
        return PushTEpisode(
            index=index, policy=policy_name, noise=noise, seed=reset_seed, frames=record["frames"],
            actions=record["actions"], physics=record["physics"], coverage=record["coverage"],
            success=record["success"],
        ).validate()


def replay_episode(episode: PushTEpisode, resolution: int | None = None, reseat_each_step: bool = True) -> PushTEpisode:
    """Re-simulate `episode`'s actions from its first physics state (checks a dataset against the simulator)."""
    resolution = resolution or int(episode.frames.shape[1])
    env = make_env(resolution, max(1, len(episode)), render=True)
    try:
        env.reset(seed=episode.seed)
        record = run_policy(env, episode.physics[0], None, max(1, len(episode)), reseat_each_step,
                            actions=list(episode.actions))
    finally:
        env.close()
    return PushTEpisode(episode.index, episode.policy, episode.noise, episode.seed, record["frames"],
                        record["actions"], record["physics"], record["coverage"], record["success"])


# --------------------------------------------------------------------------- storage


def save_episode(path: str | os.PathLike, episode: PushTEpisode) -> Path:
    """Write one episode atomically (temporary file + rename) so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        np.savez_compressed(
            handle, frames=episode.frames, actions=episode.actions, physics=episode.physics,
            states=episode.states, coverage=episode.coverage, success=np.bool_(episode.success),
            policy=np.str_(episode.policy), noise=np.float64(episode.noise), seed=np.int64(episode.seed),
            index=np.int64(episode.index),
        )
    os.replace(temporary, path)
    return path


def load_episode(path: str | os.PathLike) -> PushTEpisode:
    """Read one episode file written by `save_episode` (no pickles: `allow_pickle=False`)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            episode = PushTEpisode(
                index=int(data["index"]), policy=str(data["policy"]), noise=float(data["noise"]),
                seed=int(data["seed"]), frames=data["frames"], actions=data["actions"], physics=data["physics"],
                coverage=data["coverage"], success=bool(data["success"]),
            )
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"cannot read PushT episode file {path}: {error}") from error
    return episode.validate(str(path))


class PushTEpisodeDataset:
    """The episodes of a generated directory, loaded lazily, in index order."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        config_path = self.root / "config.json"
        if not config_path.is_file():
            raise FileNotFoundError(
                f"{config_path} not found: generate PushT data with `rlvr-world data pusht --out {self.root}`"
            )
        meta = json.loads(config_path.read_text())
        if meta.get("format") != FORMAT_NAME or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{config_path}: expected format {FORMAT_NAME} v{FORMAT_VERSION}, got "
                             f"{meta.get('format')} v{meta.get('version')}")
        self.config = PushTGenerationConfig.from_json(meta["config"])
        self.paths = sorted((self.root / "episodes").glob("episode_*.npz"))

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, position: int) -> PushTEpisode:
        return load_episode(self.paths[position])

    def __iter__(self) -> Iterator[PushTEpisode]:
        return (load_episode(path) for path in self.paths)

    def frame_action_counts(self) -> list[tuple[int, int]]:
        """(frames, actions) = (T + 1, T) per episode, from the small `actions` arrays only."""
        counts = []
        for path in self.paths:
            with np.load(path, allow_pickle=False) as data:
                steps = int(data["actions"].shape[0])
            counts.append((steps + 1, steps))
        return counts


def summarize(episodes: Sequence[PushTEpisode]) -> dict[str, Any]:
    """Success rate and coverage of a set of episodes, overall and per policy."""
    def stats(group: Sequence[PushTEpisode]) -> dict[str, float]:
        return {
            "episodes": len(group),
            "success_rate": float(np.mean([e.success for e in group])) if group else float("nan"),
            "final_coverage": float(np.mean([e.coverage[-1] for e in group])) if group else float("nan"),
            "max_coverage": float(np.mean([e.coverage.max() for e in group])) if group else float("nan"),
            "steps": int(sum(len(e) for e in group)),
        }
    summary = {"all": stats(episodes)}
    for name in POLICIES:
        group = [e for e in episodes if e.policy == name]
        if group:
            summary[name] = stats(group)
    return summary


def _generate_range(config_json: dict[str, Any], indices: list[int], episodes_dir: str) -> list[int]:
    generator = PushTGenerator(PushTGenerationConfig.from_json(config_json))
    try:
        for index in indices:
            save_episode(Path(episodes_dir) / EPISODE_FILE.format(index=index), generator.episode(index))
    finally:
        generator.close()
    return indices


def generate_dataset(
    config: PushTGenerationConfig, out_dir: str | os.PathLike, workers: int = 1, progress: bool = True
) -> dict[str, Any]:
    """Generate (or finish generating) `config.episodes` episodes under `out_dir`; return the summary.

    Resumable: episodes already on disk are kept when `config.json` matches, and an
    existing directory made with a different config is refused rather than mixed.
    """
    from tqdm import tqdm

    config.validate()
    out = Path(out_dir)
    episodes_dir = out / "episodes"
    episodes_dir.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "env_id": ENV_ID, "config": config.to_json()}
    config_path = out / "config.json"
    if config_path.is_file():
        existing = json.loads(config_path.read_text())
        if existing != meta:
            raise ValueError(f"{out} holds PushT data made with another config ({existing.get('config')}); "
                             "choose an empty --out directory")
    else:
        config_path.write_text(json.dumps(meta, indent=2) + "\n")

    todo = [i for i in range(config.episodes) if not (episodes_dir / EPISODE_FILE.format(index=i)).is_file()]
    bar = tqdm(total=config.episodes, initial=config.episodes - len(todo), desc="PushT episodes", unit="ep",
               disable=not progress)
    started = time.perf_counter()
    if workers <= 1 or len(todo) <= 1:
        generator = PushTGenerator(config)
        try:
            for index in todo:
                save_episode(episodes_dir / EPISODE_FILE.format(index=index), generator.episode(index))
                bar.update(1)
        finally:
            generator.close()
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        chunks = [todo[i : i + 4] for i in range(0, len(todo), 4)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_generate_range, config.to_json(), chunk, str(episodes_dir)) for chunk in chunks]
            for future in as_completed(futures):
                bar.update(len(future.result()))
    bar.close()
    seconds = time.perf_counter() - started
    episodes = [load_episode(episodes_dir / EPISODE_FILE.format(index=i)) for i in range(config.episodes)]
    summary = summarize(episodes)
    summary["generated_now"] = len(todo)
    summary["seconds"] = round(seconds, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """The closing table of `rlvr-world data pusht`."""
    lines = [f"{'policy':<8} {'episodes':>8} {'success':>8} {'final cov':>10} {'max cov':>8} {'steps':>7}"]
    for name in ("all", *POLICIES):
        if name in summary:
            row = summary[name]
            lines.append(f"{name:<8} {row['episodes']:>8d} {row['success_rate']:>8.1%} {row['final_coverage']:>10.3f} "
                         f"{row['max_coverage']:>8.3f} {row['steps']:>7d}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `rlvr-world data pusht`."""
    defaults = PushTGenerationConfig()
    parser.add_argument("--episodes", type=int, default=defaults.episodes, help="number of episodes")
    parser.add_argument("--out", required=True, help="output directory (resumable)")
    parser.add_argument("--resolution", type=int, default=defaults.resolution, help="frame size in pixels")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--max-steps", type=int, default=defaults.max_steps)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run_data_command(args: argparse.Namespace) -> int:
    """Generate PushT data and print a success/coverage table; returns the exit status."""
    config = PushTGenerationConfig(episodes=args.episodes, resolution=args.resolution, seed=args.seed,
                                   max_steps=args.max_steps)
    try:
        config.validate()
        summary = generate_dataset(config, args.out, workers=args.workers, progress=not args.no_progress)
    except ValueError as error:
        print(f"error: {error}")
        return 2
    print(format_summary(summary))
    print(f"{summary['generated_now']} episodes generated in {summary['seconds']} s; data in {args.out}")
    return 0
