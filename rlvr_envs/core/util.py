"""Small recipes used across the package, each written once."""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Iterable
from typing import Any

import numpy as np


def import_string(path: str) -> Any:
    """The object named by "package.module:attribute"."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected 'module:attribute', got {path!r}")
    return getattr(importlib.import_module(module), attr)


def index_rng(seed: int, index: int) -> random.Random:
    """The RNG of item `index` of the stream `seed`: procedural data is a pure function of
    (seed, index), so any item is generated alone, in any order, on any worker."""
    state = np.random.SeedSequence([int(seed), int(index)]).generate_state(2)
    return random.Random(int(state[0]) << 32 | int(state[1]))


def split_stream(seed: int, split: str) -> int:
    """The generator stream of a (seed, split) pair: train and test never share one."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return 2 * int(seed) + (split == "test")


def as_tuple(value: str | Iterable[Any] | None) -> tuple[Any, ...] | None:
    """Config coercion: a single string or any iterable becomes a tuple (hashable, so a
    config can key the task cache); None stays None."""
    if value is None or isinstance(value, tuple):
        return value
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (planning successes, held-out accuracy)."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))
