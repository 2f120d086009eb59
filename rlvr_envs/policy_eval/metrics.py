"""SIMPLER's policy-evaluation metrics: how well a simulator's success rates track the real ones.

Both take the per-policy success rates as keyword-only `sim=` and `real=` (SIMPLER's own
README passes them in the wrong order; MMRV is not symmetric, so the order matters).

* `pearson(sim=S, real=R)`: the Pearson correlation of S and R (higher is better).
* `pearson_undefined_reason(sim=S, real=R)`: why the correlation is undefined, or None.
* `mmrv(sim=S, real=R)`: Mean Maximum Rank Violation (Li et al., 2024, SIMPLER),
  (1/N) sum_i max_j |R_i - R_j| * 1[(S_i > S_j) != (R_i > R_j)]: for each policy, the
  largest real-success gap among the pairs the simulator ranks the wrong way round (lower
  is better; 0 when the simulator preserves every real ranking). A tie on one side and a
  strict order on the other counts as a violation, as in SIMPLER's `metrics.py`.

Rates may be fractions or percents, but MMRV is in the units given (pass fractions to
compare with published numbers).

* `start_interval(metric, sim=S, real=R)`: how much either metric could move with other
  starts: its percentile interval when the starts are drawn again with replacement (S and R
  here are per-start successes, one row per policy); `start_difference(metric, first=(S1, R1),
  second=(S2, R2))`: the same for two simulators run from the same starts, paired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def _pair(sim: Sequence[float], real: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    s, r = np.asarray(sim, dtype=np.float64).reshape(-1), np.asarray(real, dtype=np.float64).reshape(-1)
    if s.shape != r.shape:
        raise ValueError(f"sim and real need one success rate per policy each; got {s.size} and {r.size}")
    if s.size < 2:
        raise ValueError(f"need at least 2 policies to compare rankings; got {s.size}")
    if not (np.isfinite(s).all() and np.isfinite(r).all()):
        raise ValueError(f"success rates must be finite; got sim={s.tolist()}, real={r.tolist()}")
    return s, r


def pearson(*, sim: Sequence[float], real: Sequence[float]) -> float:
    """Pearson correlation of per-policy success rates in simulation and in reality.

    Undefined (nan) when either side has the same rate for every policy, unless both sides
    are identical (then 1.0).
    """
    s, r = _pair(sim, real)
    sc, rc = s - s.mean(), r - r.mean()
    denominator = float(np.sqrt((sc ** 2).sum() * (rc ** 2).sum()))
    if denominator == 0.0:
        return 1.0 if np.array_equal(s, r) else float("nan")
    return float((sc * rc).sum() / denominator)


def pearson_undefined_reason(*, sim: Sequence[float], real: Sequence[float]) -> str | None:
    """Why `pearson(sim=, real=)` is undefined (nan) for these rates, in words; None when it is defined."""
    s, r = np.asarray(sim, dtype=np.float64).reshape(-1), np.asarray(real, dtype=np.float64).reshape(-1)
    if s.size < 2:
        return f"a correlation needs at least 2 policies, got {s.size}"
    if np.array_equal(s, r):
        return None
    flat = [f"every policy has the same {side} success rate ({values[0]:.2f})"
            for side, values in (("learned-simulator", s), ("real", r)) if np.ptp(values) == 0]
    return " and ".join(flat) + ": no spread to correlate (more starts or more varied policies give one)" \
        if flat else None


def mmrv(*, sim: Sequence[float], real: Sequence[float]) -> float:
    """Mean Maximum Rank Violation of simulated vs real success rates (lower is better)."""
    s, r = _pair(sim, real)
    violated = (s[:, None] > s[None, :]) != (r[:, None] > r[None, :])
    gaps = np.abs(r[:, None] - r[None, :]) * violated
    return float(gaps.max(axis=1).mean())


#: SIMPLER's two ranking metrics by name, as policy-eval reports them
RANK_METRICS: dict[str, Callable[..., float]] = {"pearson": pearson, "mmrv": mmrv}


def _start_draws(starts: int, resamples: int, seed: int) -> np.ndarray:
    """[resamples, starts] start indices drawn with replacement."""
    return np.random.default_rng(seed).integers(0, starts, size=(resamples, starts))


def _successes(sim: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, r = np.asarray(sim, dtype=np.float64), np.asarray(real, dtype=np.float64)
    if s.ndim != 2 or s.shape != r.shape:
        raise ValueError(f"sim and real need [policies, starts] successes of one shape; got {s.shape} and {r.shape}")
    return s, r


def _quantiles(values: np.ndarray, level: float) -> tuple[float, float]:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level}")
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(values, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def start_interval(metric: Callable[..., float], *, sim: np.ndarray, real: np.ndarray, resamples: int = 2000,
                   level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Bootstrap percentile interval of `metric(sim=rates, real=rates)` over the starts.

    `sim`, `real`: successes (0/1) as [policies, starts] arrays, every policy run from the same
    starts in both simulators, so a resample draws start indices once for all of them (paired).
    With a handful of policies and tens of starts the metric moves a lot with the starts drawn;
    the interval says how much. Resamples where the metric is undefined (nan: no spread on one
    side) are left out; (nan, nan) when all are.
    """
    s, r = _successes(sim, real)
    draws = _start_draws(s.shape[1], resamples, seed)
    return _quantiles(np.array([metric(sim=s[:, d].mean(axis=1), real=r[:, d].mean(axis=1)) for d in draws]), level)


def start_difference(metric: Callable[..., float], *, first: tuple[np.ndarray, np.ndarray],
                     second: tuple[np.ndarray, np.ndarray], resamples: int = 2000, level: float = 0.95,
                     seed: int = 0) -> dict[str, float]:
    """How two simulators' `metric` compares over the same starts drawn again (paired bootstrap).

    `first`, `second`: (sim, real) successes as in `start_interval`, from the same starts. Returns
    the metric's difference (second - first) on the starts as run, its interval, and the share of
    draws in which the second simulator's metric is the higher (draws where either is undefined
    are left out)."""
    (s1, r1), (s2, r2) = _successes(*first), _successes(*second)
    if s1.shape != s2.shape:
        raise ValueError(f"both simulators need the same policies and starts; got {s1.shape} and {s2.shape}")
    draws = _start_draws(s1.shape[1], resamples, seed)
    differences = np.array([metric(sim=s2[:, d].mean(axis=1), real=r2[:, d].mean(axis=1))
                            - metric(sim=s1[:, d].mean(axis=1), real=r1[:, d].mean(axis=1)) for d in draws])
    low, high = _quantiles(differences, level)
    defined = differences[np.isfinite(differences)]
    return {"difference": metric(sim=s2.mean(axis=1), real=r2.mean(axis=1)) - metric(sim=s1.mean(axis=1),
                                                                                        real=r1.mean(axis=1)),
            "low": low, "high": high, "second_higher": float(np.mean(defined > 0)) if defined.size else float("nan"),
            "draws": int(defined.size)}
