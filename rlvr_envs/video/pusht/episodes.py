"""What the generator records: its config, the episode record, and the generator itself.

Each episode is a pure function of (config, index): `episode_plan` draws its policy,
noise level and reset seed from `np.random.SeedSequence(seed, spawn_key=(index,))`, and
the simulator is re-seated into the recorded state before every step
(`reseat_each_step=True`), so the next state and frame are an exact function of (state,
action) and a restore anywhere in a recorded episode reproduces every later state and
frame bit for bit (tested). Two details: gym-pusht draws the solver's contact points as
small dots, so a frame rendered right after a restore (no contacts solved yet) can differ
from the recorded frame by those few pixels; and the physics within one 0.1 s control step
(10 substeps) is gym-pusht's, unchanged; only the solver caches carried from one control
step to the next (warm-start impulses, pending penetration correction) are dropped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from rlvr_envs.core.errors import DataError
from rlvr_envs.video.pusht.physics import PHYSICS_FIELDS, gym_state, make_env, physics_state
from rlvr_envs.video.pusht.policies import (
    HANDOFF_OFF,
    POLICIES,
    CEMLikePolicy,
    HandoffPolicy,
    RandomBlockPolicy,
    ScriptedPushExpert,
    perturb_start,
    plan_expert_actions,
    run_policy,
)


class PushTFormatError(DataError):
    """A PushT episode file or record that does not match the documented layout; names where."""


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
        end_when_block_leaves: end an episode at the step that pushes the block out of the arena
            (gym-pusht's agent can squeeze it through a wall; later frames would show no block).
            Configs written before this option read as False: their episodes ran on.
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
    end_when_block_leaves: bool = True

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
        data.setdefault("end_when_block_leaves", False)  # written before the option: episodes ran on
        return cls(**data).validate()



@dataclass
class PushTEpisode:
    """One recorded episode (see the package docstring for shapes and meaning)."""

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
        """Check shapes, dtypes and finiteness; `PushTFormatError` names `source` and the episode."""
        where = f" ({source})" if source else ""
        steps = self.frames.shape[0] - 1 if self.frames.ndim >= 1 else -1  # frames are the reference: T + 1
        checks = {
            "frames": self.frames.dtype == np.uint8 and self.frames.ndim == 4 and self.frames.shape[-1] == 3,
            "actions": self.actions.shape == (steps, 2) and bool(np.isfinite(self.actions).all()),
            "physics": self.physics.shape == (steps + 1, len(PHYSICS_FIELDS)) and bool(np.isfinite(self.physics).all()),
            "coverage": self.coverage.shape == (steps + 1,),
            "policy": self.policy in POLICIES,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise PushTFormatError(
                f"PushT episode {self.index}{where} is malformed in {bad}: frames {self.frames.shape} "
                f"{self.frames.dtype}, actions {self.actions.shape}, physics {self.physics.shape}, "
                f"coverage {self.coverage.shape}, policy {self.policy!r}"
            )
        return self


def episode_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=(index,))


@dataclass
class EpisodePlan:
    """What (config, index) fixes before any simulation: policy, noise level, reset seed, policy rng."""

    index: int
    policy: str
    noise: float
    seed: int
    policy_rng: np.random.Generator


def episode_plan(config: PushTGenerationConfig, index: int) -> EpisodePlan:
    """Draw episode `index`'s policy, expert noise and reset seed (cheap: no simulator)."""
    sequence = episode_seed_sequence(config.seed, index)
    choice_rng, policy_rng, reset_seed_rng = (np.random.default_rng(s) for s in sequence.spawn(3))
    names = [name for name in POLICIES if config.policy_weights.get(name, 0) > 0]
    weights = np.array([config.policy_weights[name] for name in names], dtype=np.float64)
    policy = names[int(choice_rng.choice(len(names), p=weights / weights.sum()))]
    reset_seed = int(reset_seed_rng.integers(0, 2**31 - 1))
    noise = 0.0
    if policy == "expert":
        noise = float(config.expert_noise_levels[int(choice_rng.integers(len(config.expert_noise_levels)))])
    return EpisodePlan(index, policy, noise, reset_seed, policy_rng)


def plan_mismatch(episode: PushTEpisode, config: PushTGenerationConfig) -> str | None:
    """Why `episode` cannot be episode `episode.index` of `config` (None when it can).

    Compares what the config fixes without simulating: policy, noise, reset seed, frame
    size and the step limit. Catches episodes left by a run with another seed or settings.
    """
    plan = episode_plan(config, episode.index)
    found = (episode.policy, episode.noise, episode.seed)
    if found != (plan.policy, plan.noise, plan.seed):
        return f"policy/noise/seed {found}, the config gives {(plan.policy, plan.noise, plan.seed)}"
    if episode.frames.shape[1:3] != (config.resolution, config.resolution):
        return f"frames {episode.frames.shape[1]}x{episode.frames.shape[2]}, the config gives {config.resolution}"
    if len(episode) > config.max_steps:
        return f"{len(episode)} steps, more than max_steps {config.max_steps}"
    return None


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
        plan = episode_plan(config, index)
        self.env.reset(seed=plan.seed)
        start = physics_state(self.env)

        def roll(policy, initial=start, actions=None) -> dict:
            return run_policy(self.env, initial, policy, config.max_steps, config.reseat_each_step, actions=actions,
                              stop_when_block_leaves=config.end_when_block_leaves)

        if plan.policy == "expert":
            record = roll(ScriptedPushExpert(plan.policy_rng, plan.noise))
        elif plan.policy == "random":
            record = roll(RandomBlockPolicy(plan.policy_rng, config.random_box))
        elif plan.policy in HANDOFF_OFF:
            record = roll(HandoffPolicy(plan.policy_rng, config.random_box, off=HANDOFF_OFF[plan.policy]))
        elif plan.policy == "cem":
            record = roll(CEMLikePolicy(plan.policy_rng))
        else:
            self.planner.reset(seed=plan.seed)
            actions = plan_expert_actions(self.planner, start, config.max_steps, config.reseat_each_step)
            record = roll(None, perturb_start(start, plan.policy_rng, config.replay_shift), actions)
        return PushTEpisode(
            index=index, policy=plan.policy, noise=plan.noise, seed=plan.seed, frames=record["frames"],
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



def episode_stats(episode: PushTEpisode) -> dict[str, Any]:
    """The per-episode numbers `summarize` aggregates (small: what workers send back)."""
    return {"policy": episode.policy, "success": bool(episode.success), "final_coverage": float(episode.coverage[-1]),
            "max_coverage": float(episode.coverage.max()), "steps": len(episode)}


def summarize(episodes: Sequence[PushTEpisode | dict[str, Any]]) -> dict[str, Any]:
    """Success rate and coverage of a set of episodes (or their `episode_stats`), overall and per policy."""
    rows = [row if isinstance(row, dict) else episode_stats(row) for row in episodes]

    def stats(group: Sequence[dict[str, Any]]) -> dict[str, float]:
        nan = float("nan")
        return {
            "episodes": len(group),
            "success_rate": float(np.mean([r["success"] for r in group])) if group else nan,
            "final_coverage": float(np.mean([r["final_coverage"] for r in group])) if group else nan,
            "max_coverage": float(np.mean([r["max_coverage"] for r in group])) if group else nan,
            "steps": int(sum(r["steps"] for r in group)),
        }

    summary = {"all": stats(rows)}
    for name in POLICIES:
        group = [r for r in rows if r["policy"] == name]
        if group:
            summary[name] = stats(group)
    return summary
