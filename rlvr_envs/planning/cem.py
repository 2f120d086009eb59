"""CEM planning with a world model, in an MPC loop that acts in the real PushT.

The setting is DINO-WM's PushT planning (which RLVR-World reuses): start and goal are two
states of a held-out episode `offset` simulator steps apart (25 = 5 chunks of 5), the
planner sees the start frame(s) and the goal *image*, and success is DINO-WM's `eval_state`
on the real env's state (`rlvr_envs.simulators.dino_wm_success`: agent-and-block position
error < 20 px, block angle error < pi/9), checked after every executed chunk. The planner
never sees the real state or the success (except the true-simulator upper bound, which by
definition plans on exact states).

CEM (`cem_optimize`, DINO-WM defaults `CEMConfig()`: horizon 5, 300 samples, top 30,
30 iterations): a Gaussian over the [horizon, 5, 2] absolute targets (mean the agent's
position, std `init_std` px), sample, score every candidate in one batched `rollout` of
the simulator, refit to the top candidates, repeat; the plan is the final mean.
The cost of a candidate is the distance between the embedding of its predicted final frame
and that of the goal image (`embedding`: "pixels", "blurred_pixels" (the frame and Gaussian
blurs of it, so objects far from their goal still compare by distance), "tokenizer" (the frame tokenizer's
encoder latent), "pose" (the agent and block as the PushT frame judge reads them), or any
callable frames -> features, e.g. a pretrained image encoder; LPIPS features where their
weights exist can be passed as such a callable).

Planners share one protocol (`Planner.plan(observation) -> [H, 5, 2]`) and one MPC loop
(`run_episode`, which shows a planner what `observe` builds), so CEM on the learned simulator,
CEM on the true simulator (exact state restore), CEM with random costs (`BlindCEMPlanner`, the
floor) and random actions run with the same budget and the same episodes. Everything is
seeded: episode i's planner RNG is `SeedSequence(seed, spawn_key=(i,))`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from rlvr_envs.core.util import wilson_interval
from rlvr_envs.video.pusht.physics import ARENA_SIZE


@dataclass(frozen=True)
class CEMConfig:
    """CEM's budget. Defaults are DINO-WM's PushT settings; `CEMConfig.cpu()` a budget that fits a CPU."""

    horizon: int = 5  #: chunks planned (each 5 simulator steps)
    samples: int = 300  #: candidates per iteration
    top_k: int = 30  #: elites the Gaussian is refit to
    iterations: int = 30
    init_std: float = 60.0  #: px, initial std of every target
    min_std: float = 1.0  #: px, floor of the std (keeps sampling alive)

    def validate(self) -> "CEMConfig":
        if min(self.horizon, self.samples, self.top_k, self.iterations) < 1 or self.top_k > self.samples:
            raise ValueError(f"need horizon, samples, top_k, iterations >= 1 and top_k <= samples; got {self}")
        if self.init_std <= 0 or self.min_std < 0:
            raise ValueError("init_std must be > 0 and min_std >= 0")
        return self

    @classmethod
    def cpu(cls) -> "CEMConfig":
        return cls(horizon=5, samples=32, top_k=4, iterations=3)

    @property
    def rollouts(self) -> int:
        """Candidate sequences simulated per plan (the cost unit)."""
        return self.samples * self.iterations


@dataclass(frozen=True)
class MPCConfig:
    """The loop around the planner: plan, execute `execute` chunks in the real env, replan."""

    rounds: int = 2  #: plans per episode
    execute: int | None = None  #: chunks executed per plan (default: the whole plan)
    frame_skip: int = 5
    resolution: int = 64  #: real frames (the shipped tokenizer's size)


@dataclass
class Observation:
    """What a planner is given: the real frames so far (the last few, oldest first), the action
    chunks between them, the goal image; `physics` only for the true-simulator upper bound."""

    frames: np.ndarray
    actions: np.ndarray
    goal: np.ndarray
    agent_position: np.ndarray | None = None
    physics: np.ndarray | None = None


class Planner(Protocol):
    name: str

    def plan(self, observation: Observation, rng: np.random.Generator) -> np.ndarray:
        """Action chunks [horizon, 5, 2] to execute from this observation."""


# -- objectives ------------------------------------------------------------------------------
def embedding(kind: str | Callable[[np.ndarray], Any] = "pixels", tokenizer=None) -> Callable[[np.ndarray], np.ndarray]:
    """frames uint8 [N, H, W, 3] -> float features [N, D].

    "pixels": the frame in [0, 1]; "blurred_pixels": it and Gaussian blurs of it (`blurred_pixels`),
    so far-apart objects still compare by distance; "tokenizer": the frame tokenizer's encoder latent (before
    quantisation; pass `tokenizer=`); "pose": where the PushT frame judge reads the agent and
    the block (`pose_features`); a callable is used as it is (its output flattened)."""
    if callable(kind):
        def user(frames: np.ndarray) -> np.ndarray:
            out = kind(frames)
            out = out.detach().cpu().numpy() if hasattr(out, "detach") else np.asarray(out)
            return out.reshape(len(frames), -1).astype(np.float64)
        return user
    if kind == "pixels":
        return lambda frames: np.asarray(frames, dtype=np.float64).reshape(len(frames), -1) / 255.0
    if kind == "pose":
        return pose_features
    if kind == "blurred_pixels":
        return blurred_pixels
    if kind == "tokenizer":
        if tokenizer is None:
            raise ValueError("the 'tokenizer' embedding needs tokenizer= a FrameTokenizer")
        import torch

        def latent(frames: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                z = tokenizer.latent(tokenizer.to_input(frames))
            return z.flatten(1).double().cpu().numpy()
        return latent
    raise ValueError(f"embedding must be one of {OBJECTIVES} or a callable; got {kind!r}")


#: the objectives `embedding` knows by name (`rlvr-world plan --objective`)
OBJECTIVES = ("pixels", "blurred_pixels", "tokenizer", "pose")
#: blur widths of `blurred_pixels`, as fractions of the frame's side (2, 4 and 8 px at 64x64)
BLUR_SIGMAS = (1 / 32, 1 / 16, 1 / 8)


def _blur_matrix(size: int, sigma: float) -> np.ndarray:
    """[size, size] Gaussian blur along one axis, rows renormalised at the borders."""
    offsets = np.arange(size)[:, None] - np.arange(size)[None, :]
    weights = np.exp(-0.5 * (offsets / sigma) ** 2)
    return weights / weights.sum(axis=1, keepdims=True)


def blurred_pixels(frames: np.ndarray) -> np.ndarray:
    """frames uint8 [N, H, W, C] -> the frame in [0, 1] and its Gaussian blurs (`BLUR_SIGMAS`), flattened.

    A plain pixel distance stops growing once two images of an object no longer overlap: a
    small agent disc 50 px from its goal costs what it costs 300 px away, so CEM gets no
    direction to move it in. The blurred copies keep the distance growing with the gap."""
    images = np.asarray(frames, dtype=np.float64) / 255.0
    _, height, width, _ = images.shape
    planes = images.transpose(0, 3, 1, 2)  # [N, C, H, W]: each blur is two matrix products per plane
    features = [images.reshape(len(images), -1)]
    for fraction in BLUR_SIGMAS:
        rows, cols = _blur_matrix(height, fraction * height), _blur_matrix(width, fraction * width)
        blurred = rows @ planes @ cols.T
        features.append(blurred.transpose(0, 2, 3, 1).reshape(len(images), -1))
    return np.concatenate(features, axis=1)


#: px of position per radian of block angle in `pose_features`: DINO-WM's success tolerances
#: (20 px of agent-and-block position, pi/9 of angle) weigh the same
POSE_ANGLE_SCALE = 20.0 / (math.pi / 9)
#: where `pose_features` puts an object the frame does not show: farther than any placement
POSE_MISSING = -4.0 * ARENA_SIZE


def pose_features(frames: np.ndarray) -> np.ndarray:
    """frames uint8 [N, H, W, 3] -> [N, 6]: agent (x, y), block (x, y) in arena pixels and the
    block angle as (cos, sin) times `POSE_ANGLE_SCALE`, read by the PushT frame judge.

    Squared distances of these features approximate DINO-WM's success terms, which a pixel
    distance does not (two frames whose block images do not overlap are all equally far).
    An object the frame does not show sits at `POSE_MISSING`, so a candidate whose predicted
    frame lost the agent or the block costs more than any in which it is drawn anywhere."""
    from rlvr_envs.video.pusht.judge import read_objects

    features = np.full((len(frames), 6), POSE_MISSING)
    for i, frame in enumerate(np.asarray(frames)):
        reading = read_objects(frame)
        if reading.agent is not None:
            features[i, 0:2] = reading.agent
        if reading.block is not None:
            angle = reading.block[2]
            features[i, 2:6] = (*reading.block[:2], POSE_ANGLE_SCALE * math.cos(angle),
                                POSE_ANGLE_SCALE * math.sin(angle))
    return features


def cem_candidates(mean: np.ndarray, std: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """One CEM draw: `samples` Gaussian candidates around `mean` (the first one the mean itself,
    so it stays in the running), clipped to the arena."""
    candidates = np.clip(mean + std * rng.standard_normal((samples, *np.shape(mean))), 0.0, ARENA_SIZE)
    candidates[0] = np.clip(mean, 0.0, ARENA_SIZE)
    return candidates


def cem_optimize(cost: Callable[[np.ndarray], np.ndarray], config: CEMConfig, mean: np.ndarray,
                 rng: np.random.Generator, frame_skip: int = 5) -> tuple[np.ndarray, dict[str, Any]]:
    """Minimise `cost(actions [N, H, frame_skip, 2]) -> [N]` by CEM from `mean` [H, frame_skip, 2].

    Returns (the final mean, clipped to the arena; a trace of the best cost per iteration)."""
    config.validate()
    shape = (config.horizon, frame_skip, 2)
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), shape).copy()
    std = np.full(shape, config.init_std)
    trace = []
    for _ in range(config.iterations):
        samples = cem_candidates(mean, std, config.samples, rng)
        costs = np.asarray(cost(samples), dtype=np.float64)
        order = np.argsort(costs, kind="stable")[: config.top_k]
        elites = samples[order]
        mean, std = elites.mean(axis=0), np.maximum(elites.std(axis=0), config.min_std)
        trace.append(float(costs[order[0]]))
    return np.clip(mean, 0.0, ARENA_SIZE), {"best_cost": trace}


class CEMPlanner:
    """CEM over a simulator with `rollout(actions, start=, frames="last")` and `planning_start(obs)`
    (`LearnedPushTSim`, or `PushTChunkEnv` for the true-simulator upper bound)."""

    def __init__(self, simulator, config: CEMConfig = CEMConfig(), objective: str | Callable = "pixels",
                 name: str = "cem", frame_skip: int = 5, tokenizer=None):
        """`tokenizer`: the FrameTokenizer of the "tokenizer" objective (default the simulator's own;
        the true simulator has none, so give it the learned simulators' to compare like with like)."""
        self.simulator, self.config, self.name, self.frame_skip = simulator, config.validate(), name, frame_skip
        self.embed = embedding(objective, tokenizer if tokenizer is not None else getattr(simulator, "tokenizer", None))
        self.last_trace: dict[str, Any] = {}

    def cost_function(self, observation: Observation) -> Callable[[np.ndarray], np.ndarray]:
        """actions [N, H, 5, 2] -> [N]: each candidate's objective cost from this observation
        (the distance of its predicted final frame to the goal image in the embedding)."""
        start = self.simulator.planning_start(observation)
        goal = self.embed(np.asarray(observation.goal)[None])

        def cost(actions: np.ndarray) -> np.ndarray:
            final = self.simulator.rollout(actions, start=start, frames="last")
            if final.shape[1:3] != observation.goal.shape[:2]:
                from rlvr_envs.video.sources import resize_frames

                final = resize_frames(final, observation.goal.shape[:2])
            return ((self.embed(final) - goal) ** 2).mean(axis=1)
        return cost

    def plan(self, observation: Observation, rng: np.random.Generator) -> np.ndarray:
        mean = observation.agent_position if observation.agent_position is not None else np.full(2, ARENA_SIZE / 2)
        plan, self.last_trace = cem_optimize(self.cost_function(observation), self.config, mean, rng,
                                             self.frame_skip)
        return plan


class RandomPlanner:
    """Uniformly random targets in the arena (no model): the floor every planner must beat."""

    def __init__(self, config: CEMConfig = CEMConfig(), name: str = "random", frame_skip: int = 5):
        self.config, self.name, self.frame_skip = config.validate(), name, frame_skip

    def plan(self, observation: Observation, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(0.0, ARENA_SIZE, size=(self.config.horizon, self.frame_skip, 2))


class BlindCEMPlanner:
    """CEM around the agent whose costs are random numbers (no model, no objective): what the
    search itself achieves when the simulator ranks its candidates no better than chance. A
    learned simulator must beat this floor to have contributed anything to a plan."""

    def __init__(self, config: CEMConfig = CEMConfig(), name: str = "cem_blind", frame_skip: int = 5):
        self.config, self.name, self.frame_skip = config.validate(), name, frame_skip

    def plan(self, observation: Observation, rng: np.random.Generator) -> np.ndarray:
        mean = observation.agent_position if observation.agent_position is not None else np.full(2, ARENA_SIZE / 2)
        plan, _ = cem_optimize(lambda actions: rng.random(len(actions)), self.config, mean, rng, self.frame_skip)
        return plan


# -- episodes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanningTask:
    """One planning episode: reach `goal` (physics) from `start` (physics).

    `history_frames` [n, H, W, 3] and `history_actions` [n, 5, 2]: what was seen and done in the
    recorded episode just before the start (a frame every chunk, oldest first, and the chunk
    played from each), so a learned simulator's first plan conditions on real motion instead of
    an agent at rest; empty unless `planning_tasks(history=...)` asked for them."""

    index: int
    start: np.ndarray
    goal: np.ndarray
    source: str = ""
    history_frames: np.ndarray | None = field(default=None, repr=False)
    history_actions: np.ndarray | None = field(default=None, repr=False)


def planning_tasks(episodes: Sequence[Any], count: int, offset: int = 25, seed: int = 0,
                   skip_solved: bool = True, history: int = 0, frame_skip: int = 5) -> list[PlanningTask]:
    """`count` (start, goal) pairs, goal `offset` simulator steps after start in the same episode
    (DINO-WM: 25), from recorded PushT episodes (each with `physics` [T+1, 10]); seeded. Pairs
    whose start already meets the goal (DINO-WM's criterion) are redrawn (`skip_solved`).

    `history` > 0 attaches up to that many recorded frames (`frame_skip` steps apart) before the
    start and the chunks between them (fewer near an episode's beginning; the episodes need
    `frames` and `actions`). The pairs drawn do not depend on it."""
    if history < 0:
        raise ValueError(f"history must be >= 0; got {history}")
    from rlvr_envs.simulators.real import dino_wm_success

    rng = np.random.default_rng(seed)
    usable = [i for i, e in enumerate(episodes) if len(np.asarray(e.physics)) > offset]
    if not usable:
        raise ValueError(f"no episode is longer than offset={offset} steps")
    tasks, draws = [], 0
    while len(tasks) < count:
        draws += 1
        if draws > 100 * count:
            raise ValueError(f"found only {len(tasks)} of {count} start/goal pairs not already at the goal")
        e = usable[int(rng.integers(len(usable)))]
        physics = np.asarray(episodes[e].physics)
        t = int(rng.integers(0, len(physics) - offset))
        if skip_solved and dino_wm_success(physics[t], physics[t + offset])[0]:
            continue  # the start already meets the goal: nothing to plan
        earlier = min(history, t // frame_skip)
        steps = [t - frame_skip * k for k in range(earlier, 0, -1)]
        past = {} if not earlier else {
            "history_frames": np.asarray(episodes[e].frames)[steps].copy(),
            "history_actions": np.stack([np.asarray(episodes[e].actions)[s:s + frame_skip] for s in steps])}
        tasks.append(PlanningTask(len(tasks), physics[t].copy(), physics[t + offset].copy(),
                                  f"episode {getattr(episodes[e], 'index', e)} step {t}", **past))
    return tasks


@dataclass
class EpisodeResult:
    index: int
    planner: str
    success: bool
    chunks: int
    position_error: float
    angle_error: float
    block_position_error: float
    seconds: float
    frames: np.ndarray | None = field(default=None, repr=False)  #: real frames [T, R, R, 3]
    predicted: np.ndarray | None = field(default=None, repr=False)  #: the first plan's predicted frames

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("frames")
        data.pop("predicted")
        return data


def observe(planner: Planner, frames: list, chunks: list, goal: np.ndarray, physics: np.ndarray,
            frame_skip: int = 5) -> Observation:
    """What `planner` is shown: the last frames its simulator's context holds (all the real frames
    so far, oldest first, and the chunks between them), the goal image, the agent's position; the
    exact state only for a simulator that may read it (the true-simulator upper bound)."""
    simulator = getattr(planner, "simulator", None)
    history = getattr(simulator, "history", 3)
    return Observation(
        frames=np.stack(frames[-history:]),
        actions=np.asarray(chunks[max(0, len(chunks) - (history - 1)):]).reshape(-1, frame_skip, 2)
        if chunks else None,
        goal=goal, agent_position=np.asarray(physics[0:2]),
        physics=physics if getattr(simulator, "exact", False) else None)


def run_episode(env, planner: Planner, task: PlanningTask, mpc: MPCConfig = MPCConfig(), seed: int = 0,
                record: bool = False) -> EpisodeResult:
    """Plan from the task's start toward its goal image; act in `env` (a `PushTChunkEnv`, the
    real simulator); success from the real state alone, after every executed chunk."""
    import time

    from rlvr_envs.simulators.real import dino_wm_success

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(task.index,)))
    began = time.perf_counter()
    goal_frame = env.render_physics(task.goal)
    frame, info = env.reset(options={"physics": task.start})
    frames, chunks = [frame], []
    past_frames = [] if task.history_frames is None else list(task.history_frames)
    past_chunks = [] if task.history_actions is None else list(task.history_actions)
    success, errors = dino_wm_success(info["physics"], task.goal)
    predicted = None
    executed = 0
    for _ in range(mpc.rounds):
        if success:
            break
        observation = observe(planner, past_frames + frames, past_chunks + chunks, goal_frame, info["physics"],
                              mpc.frame_skip)
        plan = planner.plan(observation, rng)
        if record and predicted is None and hasattr(planner, "simulator"):
            start = planner.simulator.planning_start(observation)
            predicted = planner.simulator.rollout(plan[None], start=start)[0]
        for chunk in plan[: mpc.execute or len(plan)]:
            frame, _, _, _, info = env.step(chunk)
            frames.append(frame)
            chunks.append(chunk)
            executed += 1
            success, errors = dino_wm_success(info["physics"], task.goal)
            if success:
                break
    return EpisodeResult(task.index, planner.name, success, executed, errors["position_error"],
                         errors["angle_error"], errors["block_position_error"], time.perf_counter() - began,
                         np.stack(frames) if record else None, predicted)


def success_summary(results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """Success rate with its Wilson 95% interval, mean errors and time, of one planner's episodes."""
    n = len(results)
    wins = sum(r.success for r in results)
    low, high = wilson_interval(wins, n)
    mean = (lambda key: float(np.mean([getattr(r, key) for r in results])) if results else float("nan"))
    return {"episodes": n, "successes": wins, "success_rate": wins / n if n else float("nan"),
            "ci95": [low, high], "position_error": mean("position_error"), "angle_error": mean("angle_error"),
            "seconds_per_episode": mean("seconds")}
