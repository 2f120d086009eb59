"""Run records: what every results file says about how it was made.

One format, written by one helper, so a reader (and the docs generator) finds the same
keys in every results file: `program`, `command` (the line that reproduces the run),
`argv`, `machine`, `load` (1-minute load average before and after: timings taken on a busy
machine are flagged, not hidden), `start`, `end`, `seconds`, `cpu_share` (CPU seconds used
over wall seconds x threads: what share of its threads the run really got) and `git_commit`.
Tables print `note(record)` beside their numbers; a time-bounded run that did fewer steps
than planned says why with `shortfall_note`.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
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
    def shown(value: Any) -> str:  # list values (e.g. --noise 0,10,25) as they are typed
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) \
            if isinstance(value, (list, tuple)) else str(value)

    flags = [f"--{key.replace('_', '-')}" + ("" if value is True else f" {shown(value)}")
             for key, value in vars(args).items()
             if key not in ("func", "command", "check") and value is not None and value is not False
             and value != [] and value != ()]
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
    """The checkout's commit (with "+dirty" when tracked files other than results differ), or
    None outside a git checkout. Results files are left out: a benchmark run after another
    has rewritten them, and they do not change what is measured."""
    cwd = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/results"], cwd=cwd,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def cpu_seconds() -> float:
    """CPU time used so far by this process and its waited-for children (all threads)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


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
        self.git_commit = git_commit()  # the code that runs, read before the work (the tree may change)
        self._clock, self._cpu = time.perf_counter(), cpu_seconds()

    def finish(self) -> dict[str, Any]:
        end = time.time()
        wall, cpu = time.perf_counter() - self._clock, cpu_seconds() - self._cpu
        load_after = _load()
        # the load after a run includes the run's own threads: only what is left beyond them is other jobs
        others = [v for v in (self.load_before, None if load_after is None else load_after - (self.threads or 1))
                  if v is not None]
        busy = bool(others) and max(others) > BUSY_LOAD_PER_CORE * (os.cpu_count() or 1)
        return {"program": self.program, "command": self.command, "argv": self.argv,
                "machine": machine_description(self.threads),
                "load": {"before": self.load_before, "after": load_after, "busy": busy},
                "start": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.start)) + " UTC",
                "end": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(end)) + " UTC",
                "seconds": round(end - self.start, 1), "threads": self.threads or 1,
                "cpu_share": round(cpu / max(wall * (self.threads or 1), 1e-9), 3), "git_commit": self.git_commit}


def note(record: dict[str, Any]) -> str:
    """One line for a results table: when, where, the load (flagged when busy) and the CPU share."""
    load = record.get("load", {})
    flag = ("**BUSY MACHINE: other jobs shared it, so timings read slower than they are; re-run on a quiet "
            "machine before comparing**") if load.get("busy") else "quiet machine"
    commit = (record.get("git_commit") or "?")[:12]
    return (f"{record.get('start', '?')}, commit {commit}, {record.get('machine', '?')}; 1-min load average "
            f"before/after {_fmt(load.get('before'))} / {_fmt(load.get('after'))}, CPU share "
            f"{record.get('cpu_share', 0):.0%} of {record.get('threads', 1)} thread(s): {flag}")


#: a run that used less of its threads than this was starved by other jobs
STARVED_SHARE = 0.75


def shortfall_note(what: str, planned: int, done: int, record: dict[str, Any]) -> str | None:
    """For a time-bounded run: None when it did all `planned` steps, else one sentence saying
    how many it did and why (starved of CPU by other jobs, or simply out of time)."""
    if done >= planned:
        return None
    share, threads, load = record.get("cpu_share", 0.0), record.get("threads", 1), record.get("load", {})
    loads = f"1-min load average before/after {_fmt(load.get('before'))} / {_fmt(load.get('after'))}"
    if share < STARVED_SHARE or load.get("busy"):
        return (f"{what} stopped at its time limit after {done} of {planned} planned steps: it got {share:.0%} of its "
                f"{threads} thread(s) ({loads}), so other jobs shared the machine; re-run on a quiet machine for "
                "the full run")
    return (f"{what} stopped at its time limit after {done} of {planned} planned steps with {share:.0%} of its "
            f"{threads} thread(s) ({loads}); give it more minutes for more steps")


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"
