"""Held-out evaluation of a video world model on a video task, per transition.

Every comparison between two world models (MLE vs RLVR, two seeds, two budgets) should be
paired: the same transitions and the same sampling seeds for both. `score_world_model`
therefore returns one value per transition (not only means), and `paired_difference`
turns two such arrays into a mean difference with its spread and a paired t-test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METRICS = ("mae", "mse", "psnr", "ssim", "repetition")
#: the judge's object errors (agent, block position, block angle; each scaled to [0, 1]), which a
#: PushT task with reward="pose" reports beside the pixel metrics
OBJECT_METRICS = ("agent_error", "block_error", "angle_error")
#: the seed that picks held-out transitions, shared by every trainer and benchmark so their numbers pair
HELD_OUT_SEED = 12345


def held_out_indices(size: int, count: int, seed: int = HELD_OUT_SEED) -> list[int]:
    """`count` distinct transitions of a held-out task of `size` (all when it has fewer), sorted."""
    return sorted(np.random.default_rng(seed).choice(size, size=min(int(count), size), replace=False).tolist())


def best_of_n(model, task, indices: Sequence[int], n: int, seed: int = 0, temperature: float = 1.0,
              top_k: int | None = None) -> dict[str, np.ndarray]:
    """Per-transition metrics of the best of `n` samples by the verifier's reward (oracle
    selection: it reads the true next frame, so it is a reference, not a deployable model).
    Sample j of every transition uses `score_world_model`'s seeds offset by 1000 * j, so
    best-of-n and best-of-(n+1) share their first n samples."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    draws = [score_world_model(model, task, indices, seed + 1000 * j, temperature, top_k) for j in range(n)]
    return best_of_draws(draws, [n])[n]


def reject_repetition(model, task, indices: Sequence[int], max_draws: int, seed: int = 0, temperature: float = 1.0,
                      top_k: int | None = None, redraw_temperature: float | None = None) -> dict[str, np.ndarray]:
    """Per-transition metrics under repetition rejection (RLVR-World's Table 3 baseline): a
    prediction that repeats (see `rlvr_envs.video.metrics.repetition`) is resampled, up to
    `max_draws` samples in all; the last one is kept when every draw repeats. `draws` is the
    number of samples drawn per transition (generated tokens = draws x response frame tokens).
    The first draw is `score_world_model`'s at `seed`, so this pairs with plain sampling; draw j
    of a transition that still repeats uses seed `seed + 1000 * j` and `redraw_temperature`
    (default `temperature`; greedy decoding, `temperature=0`, needs a positive one to redraw)."""
    if max_draws < 1:
        raise ValueError(f"max_draws must be >= 1, got {max_draws}")
    redraw_temperature = temperature if redraw_temperature is None else redraw_temperature
    if max_draws > 1 and redraw_temperature <= 0:
        raise ValueError("redraws need a positive redraw_temperature (greedy decoding repeats itself)")
    indices = [int(i) for i in indices]
    out = score_world_model(model, task, indices, seed, temperature, top_k)
    out["draws"] = np.ones(len(indices))
    for draw in range(1, max_draws):
        pending = np.flatnonzero(out["repetition"] > 0)
        if not len(pending):
            break
        again = score_world_model(model, task, [indices[p] for p in pending], seed + 1000 * draw, redraw_temperature,
                                  top_k)
        for key, values in again.items():
            out[key][pending] = values
        out["draws"][pending] += 1
    return out


def best_of_draws(draws: Sequence[dict[str, np.ndarray]], ns: Sequence[int]) -> dict[int, dict[str, np.ndarray]]:
    """For each n in `ns`, per-transition metrics of the highest-reward sample among the first
    n of `draws` (each a `score_world_model` result on the same transitions): one set of
    samples gives the whole best-of-n curve."""
    if not ns or min(ns) < 1 or max(ns) > len(draws):
        raise ValueError(f"every n must be in [1, {len(draws)}] (the draws given), got {list(ns)}")
    rewards = np.stack([d["reward"] for d in draws])
    stacked = {key: np.stack([d[key] for d in draws]) for key in draws[0]}
    rows = np.arange(rewards.shape[1])
    out = {}
    for n in ns:
        best = np.argmax(rewards[:n], axis=0)
        out[int(n)] = {key: values[best, rows] for key, values in stacked.items()}
    return out


def score_world_model(model, task, indices: Sequence[int], seed: int = 0, temperature: float = 1.0,
                      top_k: int | None = None, batch: int = 32) -> dict[str, np.ndarray]:
    """Per-transition metrics of the model's responses (one sample each; `temperature=0` is
    greedy), with the object errors (`OBJECT_METRICS`) when the task reports them. Sampling of
    batch b uses seed `seed + b`, so two models see the same seeds."""
    from rlvr_envs.video.world_model import generate_responses

    indices = [int(i) for i in indices]
    out: dict[str, list[float]] = {key: [] for key in METRICS + ("reward",)}
    was_training = model.training
    model.eval()
    for start in range(0, len(indices), batch):
        chunk = indices[start:start + batch]
        responses = generate_responses(model, np.stack([task.prompt_ids(i) for i in chunk]), task.layout,
                                       _given(task, chunk), temperature=temperature, top_k=top_k,
                                       seed=seed + start)
        for result in task.verify(chunk, list(responses)):
            out["reward"].append(result.reward)
            for key in METRICS:
                out[key].append(result.metrics.get(key, np.nan))
            for key in OBJECT_METRICS:
                if key in result.metrics:
                    out.setdefault(key, []).append(result.metrics[key])
    model.train(was_training)
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}


def score_sampled(model, task, indices: Sequence[int], seeds: int, temperature: float = 1.0,
                  top_k: int | None = 100) -> dict[str, np.ndarray]:
    """Per-transition metrics averaged over `seeds` sampling seeds (seed s uses `score_world_model`'s
    seed 1000 * s, so two models see the same seeds). The transition is the independent unit of a
    paired test: its seeds share the prompt, so they are averaged, not counted as more samples."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    draws = [score_world_model(model, task, indices, seed=1000 * s, temperature=temperature, top_k=top_k)
             for s in range(seeds)]
    return {key: np.mean([draw[key] for draw in draws], axis=0) for key in draws[0]}


def _given(task, chunk: list[int]):
    if task.given_action_tokens(chunk[0]) is None:
        return None
    return np.stack([task.given_action_tokens(i) for i in chunk])


@dataclass(frozen=True)
class PairedDifference:
    """b - a over the same transitions: mean, standard error, t statistic and two-sided p."""

    mean: float
    stderr: float
    t: float
    p: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "stderr": self.stderr, "t": self.t, "p": self.p, "n": self.n}


def paired_difference(a: np.ndarray, b: np.ndarray) -> PairedDifference:
    """A paired t-test of b against a (same transitions, same sampling seeds)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"need two equal-length 1-d arrays of at least 2 values, got {a.shape} and {b.shape}")
    diff = b - a
    stderr = float(diff.std(ddof=1) / np.sqrt(len(diff)))
    test = stats.ttest_rel(b, a)
    return PairedDifference(float(diff.mean()), stderr, float(test.statistic), float(test.pvalue), len(diff))


#: a paired difference with p below this counts as real (a metric that improved, an error that grew)
SIGNIFICANT_P = 0.05


def better_beyond_noise(tests: dict[str, dict], metric: str, guards: Sequence[str], lower_is_better: bool = True,
                        higher_is_better: Sequence[str] = ()) -> dict:
    """The rule every "is B better than A" verdict uses, on paired tests of B - A (`PairedDifference.as_dict`):
    B is better when `metric` moved the right way with p < SIGNIFICANT_P and none of `guards` (the
    errors a single metric can trade away, e.g. objects left out of a frame) got worse beyond noise.
    `lower_is_better` is the direction of `metric`; `higher_is_better` lists the guards read the other
    way (accuracies). Returns {"better", "metric_better", "worse": guards worse beyond noise}."""
    def moved_worse(key: str, lower: bool) -> bool:
        test = tests[key]
        return (test["mean"] > 0 if lower else test["mean"] < 0) and test["p"] < SIGNIFICANT_P

    test = tests[metric]
    improved = (test["mean"] < 0 if lower_is_better else test["mean"] > 0) and test["p"] < SIGNIFICANT_P
    worse = [key for key in guards if key in tests and moved_worse(key, key not in higher_is_better)]
    return {"better": bool(improved and not worse), "metric_better": bool(improved), "worse": worse}


def summarize(scores: dict[str, np.ndarray]) -> dict[str, float]:
    return {key: float(np.nanmean(values)) for key, values in scores.items()}
