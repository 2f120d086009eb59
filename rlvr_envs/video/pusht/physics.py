"""The gym-pusht simulator: make it, read its exact state, put it back into a state.

Exact state: `physics_state` reads the 10 numbers that define the simulation
(`PHYSICS_FIELDS`) and `restore_physics_state` writes them back by setting the pymunk
bodies directly (agent position and velocity, then block angle, then block position,
velocity and angular velocity: setting the angle after the position would rotate the T
about its centre of gravity and move it). gym-pusht's own `reset_to_state` is not exact
(it sets position before angle and then steps the physics). Chipmunk also keeps solver
caches that pymunk does not expose (contact impulses for warm starting, bias velocities
for penetration correction), so a restored state would continue slightly differently from
the original; `restore_physics_state` therefore builds a fresh space every time, and the
generator re-seats the state before every step (see the package docstring).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

ENV_ID = "gym_pusht/PushT-v0"
ARENA_SIZE = 512.0
GOAL_POSE = np.array([256.0, 256.0, math.pi / 4])  # gym-pusht's fixed goal (block origin x, y, angle)
SUCCESS_COVERAGE = 0.95
AGENT_RADIUS = 15.0
#: gym-pusht's walls: segments along x = 5, x = 506, y = 5 and y = 506
WALLS = (5.0, 506.0)
PHYSICS_FIELDS = (
    "agent_x", "agent_y", "agent_vx", "agent_vy",
    "block_x", "block_y", "block_angle", "block_vx", "block_vy", "block_angular_velocity",
)

# The T in its body frame (gym-pusht's `add_tee` with scale 30): outline with outward
# normals per edge, and the centre of gravity the physics rotates about.
_T_OUTLINE = np.array(
    [(-60, 0), (60, 0), (60, 30), (15, 30), (15, 120), (-15, 120), (-15, 30), (-60, 30)], dtype=np.float64
)
_T_COG = np.array([0.0, 45.0])


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


def block_centre(physics: Sequence[float]) -> np.ndarray:
    """The block's centre of gravity (x, y) in arena pixels: what the physics rotates it about."""
    physics = np.asarray(physics, dtype=np.float64)
    return physics[4:6] + _rotation(physics[6]) @ _T_COG


#: the largest speed (px/s, rad/s) a physics state may give: far above any push (the agent's
#: PD controller reaches a few hundred), far below what overflows the physics engine
MAX_SPEED = 1e4


def checked_physics(value: Any, what: str = "options['physics']", block_inside: bool = True) -> np.ndarray:
    """A physics state given by a user (`PHYSICS_FIELDS`), float64, refused as ValueError naming
    `what` unless it is 10 finite real numbers, the agent inside the arena, speeds within
    `MAX_SPEED` and (with `block_inside`) the block's centre inside the walls: pymunk takes 1e300
    with only printed warnings, and a learned simulator cannot show a block outside its frame."""
    from rlvr_envs.core.actions import real_array

    physics = real_array(value, what)
    if physics.shape != (len(PHYSICS_FIELDS),) or not np.isfinite(physics).all():
        raise ValueError(f"{what} must be {len(PHYSICS_FIELDS)} finite numbers {PHYSICS_FIELDS}, got shape "
                         f"{physics.shape}" + ("" if physics.shape != (len(PHYSICS_FIELDS),) else " with NaN or inf"))
    if not ((0.0 <= physics[0:2]) & (physics[0:2] <= ARENA_SIZE)).all():
        raise ValueError(f"{what}: the agent at {physics[0:2].tolist()} is outside the arena [0, {ARENA_SIZE:g}]")
    if np.abs(physics[[2, 3, 7, 8, 9]]).max() > MAX_SPEED or abs(physics[6]) > MAX_SPEED:
        raise ValueError(f"{what}: speeds and the angle must be within +-{MAX_SPEED:g}, got "
                         f"{physics[[2, 3, 6, 7, 8, 9]].tolist()}")
    if block_inside and not block_in_arena(physics):
        raise ValueError(f"{what}: the block at {physics[4:6].tolist()} has its centre outside the walls "
                         f"{list(WALLS)}")
    return physics


def block_in_arena(physics: Sequence[float]) -> bool:
    """Whether the block's centre of gravity is inside the walls.

    gym-pusht's agent is a kinematic body: walls do not stop it, and a target at the arena's
    edge drives it through a wall, pushing the block out of the arena, out of the frame, where
    no policy can bring it back.
    """
    cog = block_centre(physics)
    return bool(np.all((cog > WALLS[0]) & (cog < WALLS[1])))


def gym_state(physics: np.ndarray) -> np.ndarray:
    """gym-pusht's 5-dim state [agent_x, agent_y, block_x, block_y, block_angle mod 2pi] from physics rows."""
    physics = np.asarray(physics, dtype=np.float64)
    return np.concatenate(
        [physics[..., 0:2], physics[..., 4:6], np.mod(physics[..., 6:7], 2 * np.pi)], axis=-1
    )


def _rotation(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def _wrap_angle(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi

