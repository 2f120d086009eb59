"""The goals table: the targets the issues set (one home: every benchmark that compares a result
with a target reads it here), the row each benchmark's `goal()` builds, the 95% intervals a row
shows, and the table. A goal is met only when all of its interval clears the target."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from benchmarks import sections as fmt

# Targets set by the issues (not measurements): the verdicts compare results with them.
GOAL_KV_SPEEDUP = 5.0  #: KV-cached generation at least this many times faster than uncached
GOAL_ENV_OVERHEAD_PCT = 5.0  #: env step overhead over the bare verifier, at most
GOAL_BATCHED_REWARD_SPEEDUP = 5.0  #: batched -(L1+LPIPS) vs per-frame calls, at least
GOAL_GRPO_MAE_CHANGE_PCT = -15.0  #: PushT GRPO's sampled MAE vs the MLE base, at most (percent)
GOAL_TEXT_CHANGED_GAIN = 0.10  #: MiniTextWorld GRPO's held-out exact accuracy on changed transitions over SFT
GOAL_PLANNING_SHARE = 0.8  #: the RLVR simulator's CEM success as a share of the true simulator's, at least
GOAL_JUDGE_PRECISION_RECALL = 0.95  #: the PushT frame judge's precision and recall of the env's success, each at least
GOAL_REAL2SIM_PEARSON = 0.8  #: Pearson of the default learned simulator's success rates with the real ones, at least
GOAL_MLE_MFU = 0.35  #: the paper preset's compiled MLE step on one GPU, share of the measured bf16 matmul rate
GOAL_DECODE_TOKENS_PER_S = 30_000  #: the paper preset's decoding at batch 64 on one GPU, tokens/s, at least
UNCHANGED_KEPT = 0.01  #: a text recipe keeps unchanged transitions when it loses at most this much on them


@dataclass
class GoalRow:
    """One row of the goals table. `quoted`: (a piece of the row's text, the JSON pointers in the
    row's file of the numbers in that piece, in order), so a test can read each figure again from
    the file the row names; the intervals are computed from figures it quotes."""

    goal: str
    measured: str
    baseline: str
    target: str
    verdict: str
    file: str  #: relative to fmt.RESULTS
    quoted: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def cells(self) -> list[str]:
        return [self.goal, self.measured, self.baseline, self.target, self.verdict, fmt.shown(self.file)]


def _interval(low: float, high: float, digits: int = 2, percent: bool = False) -> str:
    """A 95% interval as the goals table writes it, e.g. [0.71, 0.97] or [35%, 162%] ('no interval'
    where it is undefined)."""
    if fmt.nan(low) or fmt.nan(high):
        return "(no interval)"
    if percent:
        return f"[{low:.0%}, {high:.0%}]"
    return f"[{low:.{digits}f}, {high:.{digits}f}]".replace("-0.00", "0.00")


def _verdict(low: float, high: float, target: float, at_least: bool = True) -> str:
    """'met' only when the whole interval clears the target; else '**not met**' and how far it reaches."""
    if fmt.nan(low) or fmt.nan(high):
        return "**not met** (no interval)"
    if (low >= target) if at_least else (high <= target):
        return "met"
    return "**not met**"


def _ratio_interval(a: int, n1: int, b: int, n2: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of the ratio of two success rates a/n1 over b/n2 (Katz's log method); nan
    when either has no success."""
    if not (a and b):
        return (float("nan"), float("nan"))
    ratio = (a / n1) / (b / n2)
    half = z * math.sqrt(1 / a - 1 / n1 + 1 / b - 1 / n2)
    return (ratio * math.exp(-half), ratio * math.exp(half))


def _seed_interval(values: list[float]) -> tuple[float, float]:
    """95% t-interval of the mean of per-seed values (nan with fewer than two)."""
    from scipy import stats

    n = len(values)
    if n < 2:
        return (float("nan"), float("nan"))
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return (mean - half, mean + half)


def goal_rows(goals: tuple[Callable[[], GoalRow | None], ...]) -> list[GoalRow]:
    """One row per numeric goal whose results are committed, in the order given."""
    return [row for row in (goal() for goal in goals) if row]


def goals_table(rows: list[GoalRow], where: str) -> str:
    """The goals table; empty when none of its goals is measured."""
    if not rows:
        return ""
    return (f"**Where the issues' numeric goals stand** (each row read from the file it names; in brackets the "
            f"95% interval, and a goal is met only when all of it clears the target; {where}):\n\n"
            + fmt.table(["goal", "measured [95% interval]", "strongest trivial baseline", "target", "verdict", "file"],
                        ["---"] * 6, [row.cells() for row in rows]))
