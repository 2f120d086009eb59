"""PushT generator processes: workers end with the run, one run per folder, failures surface."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlvr_envs.video import pusht
from rlvr_envs.core.files import LOCK_NAME, OutputInUse, OutputLock
from rlvr_envs.core.workers import WorkerFailed, run_parallel

REPO = Path(__file__).resolve().parents[1]
EVENT_TIMEOUT = 120  #: seconds; only a broken run waits this long, a loaded machine just takes longer
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _recorded_workers(out: Path) -> list[int] | None:
    """The worker pids the run wrote into its lock file, once it has (the file is rewritten in place)."""
    try:
        return json.loads((out / LOCK_NAME).read_text() or "{}").get("workers") or None
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _start_generator(out: Path, episodes: int = 10) -> tuple[subprocess.Popen, list[int]]:
    """`rlvr-world data pusht` with 2 workers; returns once the lock file names the workers and an
    episode file exists (events, not a fixed wait: a loaded machine only makes them later)."""
    command = [sys.executable, "-m", "rlvr_envs.cli", "data", "pusht", "--episodes", str(episodes), "--out", str(out),
               "--resolution", "16", "--max-steps", "30", "--workers", "2", "--no-progress"]
    env = {**os.environ, "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    # SIGINT as in a terminal: a suite started in the background (`nohup`, `cmd &`) passes its children
    # SIGINT ignored, and Python then never raises KeyboardInterrupt (the run went on generating)
    parent = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + EVENT_TIMEOUT
    while time.monotonic() < deadline:
        if parent.poll() is not None:
            pytest.fail(f"generator ended early ({parent.returncode}): {parent.stderr.read().decode()[-2000:]}")
        workers = _recorded_workers(out)
        if workers and any((out / "episodes").glob("episode_*.npz")):
            return parent, workers
        time.sleep(0.02)
    parent.kill()
    pytest.fail(f"no workers and episode file within {EVENT_TIMEOUT} s")


def _where(pids: list[int]) -> str:
    """Each process's state and, per thread, the kernel function it waits in (for a failure message)."""
    parts = []
    for pid in pids:
        try:
            state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                         if line.startswith("State:"))
            threads = {task.name: (task / "wchan").read_text() or "-" for task in Path(f"/proc/{pid}/task").iterdir()}
        except (OSError, StopIteration):
            parts.append(f"pid {pid}: gone")
            continue
        parts.append(f"pid {pid}: {state.split(':', 1)[1].strip()}, threads waiting in {threads}")
    return "; ".join(parts)


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.02)
    return [pid for pid in pids if _alive(pid)]


@linux_only
def test_killing_the_generator_stops_its_workers_and_a_rerun_finishes(tmp_path):
    out = tmp_path / "pusht"
    parent, workers = _start_generator(out)
    assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    killed_at = time.monotonic()
    assert _wait_gone(workers, 3.0) == [], "workers outlived the killed generator"
    assert time.monotonic() - killed_at < 3.0
    written = sorted(p.name for p in (out / "episodes").iterdir())
    time.sleep(0.5)
    assert sorted(p.name for p in (out / "episodes").iterdir()) == written  # nothing writes any more

    # The dead run's lock is taken over; the rerun keeps its whole episodes and finishes.
    config = pusht.PushTGenerationConfig(episodes=10, resolution=16, seed=0, max_steps=30)
    summary = pusht.generate_dataset(config, out, workers=1, progress=False)
    assert summary["all"]["episodes"] == 10 and summary["generated_now"] == 10 - len(
        [name for name in written if name.endswith(".npz") and not name.startswith(".")])
    assert len(pusht.PushTEpisodeDataset(out)) == 10
    assert not [p for p in (out / "episodes").iterdir() if p.name.endswith(".tmp")]


@linux_only
def test_interrupting_the_generator_stops_workers_and_exits_130(tmp_path):
    # Far more episodes than it can write before the signal: 10 took ~1 s, so a test starved
    # by load could find the run already finished (exit 0) when it got round to interrupting.
    parent, workers = _start_generator(tmp_path / "pusht", episodes=100_000)
    parent.send_signal(signal.SIGINT)  # the parent only, as `kill -INT`; Ctrl-C would reach workers too
    try:
        code = parent.wait(timeout=EVENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        where = _where([parent.pid, *workers])
        parent.kill()
        pytest.fail(f"no exit within {EVENT_TIMEOUT} s of SIGINT; {where}; stderr: {parent.stderr.read().decode()[-2000:]}")
    assert code == 130
    assert "interrupted" in parent.stderr.read().decode()
    assert _wait_gone(workers, EVENT_TIMEOUT) == []  # the parent joins them before it exits: gone at once


def test_a_second_run_into_a_folder_in_use_is_refused(tmp_path):
    config = pusht.PushTGenerationConfig(episodes=1, resolution=16, seed=0, max_steps=3)
    with OutputLock(tmp_path, "another run"):
        with pytest.raises(OutputInUse, match=rf"being written by another run \(pid {os.getpid()}.*another run"):
            pusht.generate_dataset(config, tmp_path, progress=False)
    summary = pusht.generate_dataset(config, tmp_path, progress=False)  # released: now it runs
    assert summary["generated_now"] == 1
    holder = json.loads((tmp_path / LOCK_NAME).read_text())
    assert holder["pid"] == os.getpid() and "finished" in holder


def test_cli_prints_a_folder_in_use_as_one_line(tmp_path, capsys):
    from rlvr_envs.cli import main

    with OutputLock(tmp_path, "another run"):
        status = main(["data", "pusht", "--episodes", "1", "--out", str(tmp_path), "--no-progress"])
    assert status == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "being written by another run" in err and LOCK_NAME in err


class _Squares:
    """A worker for `run_parallel`: squares items; 3 raises, -1 kills its own process."""

    def run(self, item):
        if item == 3:
            raise RuntimeError("three is not allowed")
        if item == -1:
            os.kill(os.getpid(), signal.SIGKILL)
        return item * item

    def close(self):
        pass


def test_run_parallel_returns_every_result_and_surfaces_failures():
    results = {}
    run_parallel(_Squares, (), [0, 1, 2, 4, 5], 2, on_result=results.__setitem__)
    assert results == {0: 0, 1: 1, 2: 4, 4: 16, 5: 25}
    with pytest.raises(WorkerFailed, match=r"(?s)item 3 failed in a worker process.*three is not allowed"):
        run_parallel(_Squares, (), [1, 3, 4], 2, on_result=lambda *_: None)
    with pytest.raises(WorkerFailed, match=r"ended with 1 items left.*exit -9"):
        run_parallel(_Squares, (), [-1], 1, on_result=lambda *_: None)
