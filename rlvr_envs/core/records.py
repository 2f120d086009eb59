"""Run records: what every results file says about how it was made.

One format, written by one helper, so a reader (and the docs generator) finds the same
keys in every results file: `program`, `command` (the line that reproduces the run),
`argv`, `machine`, `load` (1-minute load average before and after: timings taken on a busy
machine are flagged, not hidden), `start`, `end`, `seconds` and `git_commit`.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: a 1-minute load average per core above this marks timings as taken on a busy machine
BUSY_LOAD_PER_CORE = 0.5


def recorded_command(program: str, args: argparse.Namespace) -> str:
    """The command line that reproduces a parsed command (for results files): every option
    with a value, flags only when set; the parser's own fields left out."""
    flags = [f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}")
             for key, value in vars(args).items()
             if key not in ("func", "command") and value is not None and value is not False]
    return " ".join([program, *flags])


def machine_description(threads: int | None = None) -> str:
    """CPU architecture, cores, torch threads when given, and the accelerator when torch sees one."""
    parts = [platform.machine(), f"{os.cpu_count()} cores"]
    if threads is not None:
        parts.append(f"{threads} torch threads")
    torch = sys.modules.get("torch")  # only described when the run already uses torch
    if torch is not None and torch.cuda.is_available():
        parts.append(torch.cuda.get_device_name(0))
    else:
        parts.append("CPU only")
    return ", ".join(parts)


def git_commit(root: str | os.PathLike | None = None) -> str | None:
    """The checkout's commit (with "+dirty" when files differ), or None outside a git checkout."""
    cwd = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class RunRecord:
    """Start it before the work, call `finish()` after; `finish()` returns the record's dict.

        record = RunRecord("python -m benchmarks.x", args)
        ...
        report = {"run": record.finish(), "results": ...}
    """

    def __init__(self, program: str, args: argparse.Namespace | None = None, threads: int | None = None):
        self.program = program
        self.command = recorded_command(program, args) if args is not None else " ".join([program, *sys.argv[1:]])
        self.argv = list(sys.argv)
        self.threads = threads
        self.start = time.time()
        self.load_before = _load()

    def finish(self) -> dict[str, Any]:
        end = time.time()
        load_after = _load()
        loads = [v for v in (self.load_before, load_after) if v is not None]
        busy = bool(loads) and max(loads) > BUSY_LOAD_PER_CORE * (os.cpu_count() or 1)
        return {"program": self.program, "command": self.command, "argv": self.argv,
                "machine": machine_description(self.threads),
                "load": {"before": self.load_before, "after": load_after, "busy": busy},
                "start": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.start)) + " UTC",
                "end": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(end)) + " UTC",
                "seconds": round(end - self.start, 1), "git_commit": git_commit()}
