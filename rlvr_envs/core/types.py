"""The records every task, env and trainer exchange."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Transition:
    """One (s, a, s') record plus metadata.

    `state`, `action` and `next_state` keep the dataset's own structures (a ByteSized32
    state dict, an accessibility tree string, frame arrays, ...); tasks know how to read them.
    `target` is the gold answer in the task's own type (a state difference, a `ChangeList`,
    ...): what `Task.target_text` writes out and what the verifier compares against.
    `changed` is True when s' differs from s (None when the dataset cannot tell); `meta`
    holds what the prompt needs beyond (s, a) (rules, URL, objective, ...).
    """

    uid: str
    state: Any
    action: Any
    next_state: Any
    target: Any = None
    split: str = "test"
    changed: bool | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class RewardResult:
    """The verified score of one response.

    `metrics` holds every component of the reward (for logging); `max_reward` is what a
    perfect prediction of this transition scores; `parsed` is False and `error` says why
    when the response could not be decoded, in which case `reward` is the task's
    documented minimum.
    """

    reward: float
    max_reward: float = 1.0
    metrics: dict[str, float] = field(default_factory=dict)
    parsed: bool = True
    error: str | None = None
    prediction: Any = None

    @classmethod
    def failure(cls, min_reward: float, error: str, max_reward: float = 1.0,
                metrics: dict[str, float] | None = None) -> "RewardResult":
        return cls(reward=float(min_reward), max_reward=float(max_reward), metrics=dict(metrics or {}),
                   parsed=False, error=error)
