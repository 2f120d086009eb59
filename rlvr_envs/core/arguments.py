"""Command-line values checked where they are parsed: argparse `type=` functions for every
command (the `rlvr-world` subcommands and the trainers), so a bad value ends in argparse's own
one-line `error: argument --X: ...` and exit code 2 before any work, never in a traceback or a
run that quietly does nothing.

Each function takes the raw string and returns the value or raises `argparse.ArgumentTypeError`
with what was wrong and what is allowed. `parse_env_kwargs` is the one parser of every `--env-kwargs`
(through `EnvKwargsAction` in `rlvr-world`, called from `validate()` in the trainers); it raises
`ValueError`, which both turn into that one-line error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable


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


def real_at_least(minimum: float, strictly: bool = False, maximum: float = math.inf) -> Callable[[str], float]:
    """A finite float >= `minimum` (> it when `strictly`), and <= `maximum` (e.g. seconds a timer can wait)."""
    def parse(text: str) -> float:
        value = _number(text, float)
        if value < minimum or (strictly and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if strictly else '>='} {minimum:g}, got {value:g}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:g}, got {value:g}")
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


ENV_KWARGS_HELP = "gym.make arguments as key=value pairs, e.g. reward=task size=12 (values read as JSON)"
_NEXT_PAIR = re.compile(r",\s*(?=[A-Za-z_]\w*\s*=)")  # a comma that starts another key=value (not one inside a value)


def parse_env_kwargs(tokens: str | Iterable[str]) -> dict[str, Any]:
    """`gym.make` keyword arguments from `--env-kwargs` tokens: the one parser behind `rlvr-world`
    and every trainer, so one command line works in both. Documented form: key=value pairs,
    one a token (`reward=task size=12`); a token may also hold several pairs joined by commas
    (`reward=task,size=12`) or be a JSON object (`'{"reward": "task", "size": 12}'`). Values
    are read as JSON when they can be (12 -> int); a comma inside a value (`noise=[0,10]`)
    stays in it. A token that is none of these raises `ValueError` naming it."""
    out: dict[str, Any] = {}
    for token in [tokens] if isinstance(tokens, str) else tokens:
        token = token.strip()
        if token.startswith("{"):
            try:
                value = json.loads(token)
            except (ValueError, RecursionError):
                raise ValueError(f"not a JSON object: {token[:80]!r}") from None
            if not isinstance(value, dict):
                raise ValueError(f"expected a JSON object, got {type(value).__name__}")
            out.update(value)
            continue
        for pair in filter(None, (p.strip() for p in _NEXT_PAIR.split(token))):
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip().isidentifier():
                raise ValueError(f"env kwargs are key=value pairs (reward=task size=12), got {pair!r}")
            try:
                out[key.strip()] = json.loads(raw)
            except ValueError:
                out[key.strip()] = raw
    fixed = sorted(RESERVED_ENV_KWARGS & set(out))
    if fixed:
        raise ValueError(f"env kwargs {fixed} are set by the env id itself (which task class it builds), not options")
    return out


#: `gym.make` arguments the registry sets for an id: an option naming them would swap the task
#: class for any importable object, so command lines refuse them
RESERVED_ENV_KWARGS = frozenset({"task", "env_id"})


class EnvKwargsAction(argparse.Action):
    """`--env-kwargs KEY=VALUE ...` for argparse: one or more tokens read by `parse_env_kwargs` into
    a dict; a bad token is argparse's one-line error (exit 2)."""

    def __init__(self, option_strings, dest, nargs="+", default=None, metavar="KEY=VALUE", help=ENV_KWARGS_HELP,
                 **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, default={} if default is None else default,
                         metavar=metavar, help=help, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, parse_env_kwargs(values))
        except ValueError as error:
            raise argparse.ArgumentError(self, str(error)) from None
