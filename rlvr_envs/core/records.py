"""The one run record every benchmark and time-bounded run writes: program, argv, machine,
git commit, start/end, the machine's load before and after, and the CPU share the run got.

Timings taken while other jobs load the machine read as regressions (issue 33: a verifier
measured at 403 us on a loaded machine runs in 69.5 us on a quiet one), so a record says
whether its run was **under load**: the 1-minute load average before the run above
`QUIET_LOAD`, or after it above the run's own threads plus `QUIET_LOAD`. Tables print
`RunRecord.note()` beside their numbers, and readers re-run flagged tables on a quiet machine.

    record = RunRecord.start("python -m benchmarks.env_overhead", threads=1)
    ...  # measure
    result = {"run": record.finish(), ...}
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: a 1-minute load average at most this far above the run's own threads counts as quiet
QUIET_LOAD = 0.5
REPO = Path(__file__).resolve().parents[2]


def git_commit() -> str:
    """The checkout's commit (with "+dirty" when files differ from it), or "unknown"."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (commit + ("+dirty" if dirty else "")) if commit else "unknown"


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages ([] where the OS has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return []


def cpu_seconds() -> float:
    """CPU time used so far by this process and its waited-for children (all threads)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(terse=True), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version()}


@dataclass
class RunRecord:
    program: str
    argv: list[str]
    threads: int  #: CPU threads the run means to use (its share of the machine is judged against them)
    machine: dict[str, Any] = field(default_factory=machine)
    commit: str = field(default_factory=git_commit)
    started: str = ""
    load_before: list[float] = field(default_factory=list)
    finished: str = ""
    load_after: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_share: float = 0.0  #: CPU seconds used / (wall seconds x threads): 1.0 = every thread ran all the time
    under_load: bool = False
    _wall: float = 0.0
    _cpu: float = 0.0

    @classmethod
    def start(cls, program: str, threads: int = 1, argv: list[str] | None = None) -> "RunRecord":
        record = cls(program, list(sys.argv[1:] if argv is None else argv), max(1, int(threads)))
        record.started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        record.load_before = load_average()
        record._wall, record._cpu = time.perf_counter(), cpu_seconds()
        return record

    def finish(self) -> dict[str, Any]:
        """Close the record (end time, load after, CPU share, the under-load flag) and return it as a dict."""
        self.seconds = round(time.perf_counter() - self._wall, 3)
        self.cpu_share = round((cpu_seconds() - self._cpu) / max(self.seconds * self.threads, 1e-9), 3)
        self.finished = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self.load_after = load_average()
        before = self.load_before[0] if self.load_before else 0.0
        after = self.load_after[0] if self.load_after else 0.0
        self.under_load = before > QUIET_LOAD or after > self.threads + QUIET_LOAD
        return self.as_dict()

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    def note(self) -> str:
        """One line for a results table: where, when, the load, and the flag."""
        return note(self.as_dict())


def note(record: dict[str, Any]) -> str:
    """`RunRecord.note` of a saved record (a results file's "run")."""
    flag = ("**UNDER LOAD: other jobs shared the machine, so timings read slower than they are; re-run on a quiet "
            "machine before comparing**") if record.get("under_load") else "quiet machine"
    cores = record.get("machine", {}).get("cpu_count")
    return (f"{record.get('started', '?')}, commit {record.get('commit', '?')}, {cores} cores, {record.get('threads')} "
            f"thread(s); 1-min load average before/after {fmt(record.get('load_before'))} / "
            f"{fmt(record.get('load_after'))}, CPU share {record.get('cpu_share', 0):.0%}: {flag}")


#: a run that used less of its threads than this was starved by other jobs
STARVED_SHARE = 0.75


def shortfall_note(what: str, planned: int, done: int, record: dict[str, Any]) -> str | None:
    """For a time-bounded run: None when it did all `planned` steps, else one sentence saying
    how many it did and why (starved of CPU by other jobs, or simply out of time)."""
    if done >= planned:
        return None
    share, threads = record.get("cpu_share", 0.0), record.get("threads", 1)
    load = f"1-min load average before/after {fmt(record.get('load_before'))} / {fmt(record.get('load_after'))}"
    if share < STARVED_SHARE or record.get("under_load"):
        return (f"{what} stopped at its time limit after {done} of {planned} planned steps: it got {share:.0%} of its "
                f"{threads} thread(s) ({load}), so other jobs shared the machine; re-run on a quiet machine for "
                "the full run")
    return (f"{what} stopped at its time limit after {done} of {planned} planned steps with {share:.0%} of its "
            f"{threads} thread(s) ({load}); give it more minutes for more steps")


def fmt(load: list[float] | None) -> str:
    return f"{load[0]:.2f}" if load else "?"
