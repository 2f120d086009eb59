"""Run records: what every results file says about how it was made (the command that reproduces it)."""

from __future__ import annotations

import argparse


def recorded_command(program: str, args: argparse.Namespace) -> str:
    """The command line that reproduces a parsed command (for results files): every option
    with a value, flags only when set; the parser's own fields left out."""
    flags = [f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}")
             for key, value in vars(args).items()
             if key not in ("func", "command") and value is not None and value is not False]
    return " ".join([program, *flags])
