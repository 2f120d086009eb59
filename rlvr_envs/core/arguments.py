"""Command-line values checked where they are parsed: argparse `type=` functions for every
command (the `rlvr-world` subcommands and the trainers), so a bad value ends in argparse's own
one-line `error: argument --X: ...` and exit code 2 before any work, never in a traceback or a
run that quietly does nothing.

Each function takes the raw string and returns the value or raises `argparse.ArgumentTypeError`
with what was wrong and what is allowed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def _number(text: str, kind: type) -> Any:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") \
            from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer >= `minimum` (counts, sizes, seeds' neighbours: threads, workers, episodes)."""
    def parse(text: str) -> int:
        value = _number(text, int)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def real_at_least(minimum: float, strictly: bool = False) -> Callable[[str], float]:
    """A finite float >= `minimum` (> it when `strictly`)."""
    def parse(text: str) -> float:
        value = _number(text, float)
        if value < minimum or (strictly and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if strictly else '>='} {minimum:g}, got {value:g}")
        return value
    parse.__name__ = f"number {'>' if strictly else '>='} {minimum:g}"
    return parse


def open_fraction(text: str) -> float:
    """A float strictly between 0 and 1."""
    value = _number(text, float)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {value:g}")
    return value


def number_list(minimum: float = 0.0) -> Callable[[str], tuple[float, ...]]:
    """Comma-separated finite numbers, each >= `minimum` ("0,10,25,50")."""
    def parse(text: str) -> tuple[float, ...]:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
        values = []
        for part in parts:
            try:
                values.append(real_at_least(minimum)(part))
            except argparse.ArgumentTypeError as error:
                where = f"{part!r} in {text!r}: " if len(parts) > 1 else ""
                raise argparse.ArgumentTypeError(f"{where}{error}") from None
        return tuple(values)
    parse.__name__ = "comma-separated numbers"
    return parse


def output_dir(text: str) -> str:
    """A folder to write into: new or an existing folder, never an existing file, and one this
    process can write, so an unwritable `--out` fails at once instead of after the work."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; pass a folder to write into (new or existing)")
    if any(parent.exists() and not parent.is_dir() for parent in path.parents):
        raise argparse.ArgumentTypeError(f"{text} lies under a file; pass a folder to write into")
    base = next(folder for folder in (path, *path.parents) if folder.exists())  # what the run will write into
    try:  # a real attempt: permission bits say nothing for root, read-only mounts or /proc
        os.rmdir(tempfile.mkdtemp(prefix=".rlvr-world-write-check-", dir=base))
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot write into {base} ({error.strerror or type(error).__name__}); "
                                         f"pass a folder you can write to") from None
    return text


def existing_dir(text: str) -> str:
    """A folder that must exist (data, a model or tokenizer directory)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; pass the folder that holds the files")
    return text


def env_kwargs(text: str) -> dict[str, Any]:
    """`gym.make` keyword arguments: a JSON object ('{"reward": "mae", "size": 12}') or
    comma-separated key=value pairs ("reward=mae,size=12", values read as JSON when they can be)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise argparse.ArgumentTypeError(f"not a JSON object: {text[:80]!r}") from None
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
        return value
    try:
        return key_value_pairs(p.strip() for p in text.split(",") if p.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} (or pass a JSON object)") from None


def key_value_pairs(pairs) -> dict[str, Any]:
    """`("reward=task", "size=40")` -> {"reward": "task", "size": 40} (values read as JSON when they can be);
    a pair without `=` or with a key that is not a name raises `ValueError`."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"env_kwargs entries are key=value, got {pair!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out
