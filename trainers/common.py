"""What every trainer script shares: its one dataclass of arguments as a command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any


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
        elif f.name == "device":  # checked while parsing: a bad or absent device is a one-line usage error
            from rlvr_envs.core.device import checked_device

            parser.add_argument(flag, type=checked_device, default=default)
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


def reward_figure(log: Path, path: Path, ylabel: str = "reward (-MAE)") -> None:
    """The training reward curve of a GRPO run's log.jsonl (per step and a 10-step mean) as a PNG."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if "reward" in r]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([r["step"] for r in rows], [r["reward"] for r in rows], alpha=0.4, label="per step")
    if len(rows) >= 10:
        smooth = np.convolve([r["reward"] for r in rows], np.ones(10) / 10, mode="valid")
        ax.plot([r["step"] for r in rows][9:], smooth, label="10-step mean")
    ax.set(xlabel="GRPO step", ylabel=ylabel, title="GRPO training reward")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lora_config(r: int, alpha: int):
    """The one LoRA setup of every trainer: rank `r` on every linear layer but the output head
    (for LLaMA: q, k, v, o, gate, up, down projections), no dropout."""
    from peft import LoraConfig

    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
