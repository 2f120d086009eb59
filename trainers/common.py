"""What every trainer script shares: its one dataclass of arguments as a command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

#: what to do when a checkpoint under --resume is damaged or foreign (named in the error)
RESUME_REMEDY = "delete that checkpoint folder and resume from an earlier one, or drop --resume to start afresh"


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """One `--flag-name` per field of `cls`, defaults shown; bools are switches and tuples
    take one or more values."""
    defaults = cls()
    for f in dataclasses.fields(cls):
        flag, default = f"--{f.name.replace('_', '-')}", getattr(defaults, f.name)
        if isinstance(default, bool):
            parser.add_argument(flag, action="store_true")
        elif isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", default=default)
        else:
            parser.add_argument(flag, type=type(default), default=default)


def dataclass_from_namespace(cls: type, namespace: argparse.Namespace) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in vars(namespace).items() if k in names})


def parse_dataclass_args(cls: type, description: str, argv: list[str] | None = None) -> Any:
    """`cls(**parsed)` from the command line (see `add_dataclass_arguments`)."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_dataclass_arguments(parser, cls)
    return dataclass_from_namespace(cls, parser.parse_args(argv))


def parse_env_kwargs(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`("reward=task", "size=40")` -> {"reward": "task", "size": 40} (values parsed as JSON when they can be)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"env_kwargs entries are key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def command_line(program: str, args: Any) -> str:
    """The command that reproduces `args` (its non-default fields as flags), whoever called
    the trainer: a card must not record the caller's own command line."""
    defaults, parts = type(args)(), [program]
    for f in dataclasses.fields(args):
        value = getattr(args, f.name)
        if value == getattr(defaults, f.name):
            continue
        flag = f"--{f.name.replace('_', '-')}"
        if isinstance(value, bool):
            parts.append(flag)
        elif isinstance(value, tuple):
            parts.append(" ".join([flag, *map(str, value)]))
        else:
            parts.append(f"{flag} {value}")
    return " ".join(parts)
