"""What every trainer script shares: its one dataclass of arguments as a command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any


def parse_dataclass_args(cls: type, description: str, argv: list[str] | None = None) -> Any:
    """`cls(**parsed)`: one `--flag-name` per field, defaults shown; bools are switches and
    tuples take one or more values."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    defaults = cls()
    for f in dataclasses.fields(cls):
        flag, default = f"--{f.name.replace('_', '-')}", getattr(defaults, f.name)
        if isinstance(default, bool):
            parser.add_argument(flag, action="store_true")
        elif isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", default=default)
        else:
            parser.add_argument(flag, type=type(default), default=default)
    parsed = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(parser.parse_args(argv)).items()}
    return cls(**parsed)


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
