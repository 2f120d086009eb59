"""Issue 33's additions to the one run record (rlvr_envs.core.records): the CPU share a run got,
the one-line note a table prints, and the sentence a time-bounded run prints when it got far
fewer steps than planned."""

from __future__ import annotations

import argparse
import time

from rlvr_envs.core import records


def test_a_record_measures_its_cpu_share_and_its_note_flags_a_busy_machine(monkeypatch):
    loads = iter([(0.1, 0, 0), (0.2, 0, 0)])
    monkeypatch.setattr(records.os, "getloadavg", lambda: next(loads))
    record = records.RunRecord("python -m x", argparse.Namespace(n=1), threads=1)
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:  # busy: one thread fully used
        pass
    run = record.finish()
    assert run["threads"] == 1 and 0.05 < run["cpu_share"] <= 1.2 and not run["load"]["busy"]  # other jobs share it
    assert "quiet machine" in records.note(run) and "0.10 / 0.20" in records.note(run)
    busy = {**run, "load": {"before": 5.1, "after": 5.3, "busy": True}}
    assert "BUSY MACHINE" in records.note(busy)


def test_a_run_is_not_busy_for_the_load_its_own_threads_add(monkeypatch):
    """A quiet machine's 1-minute load climbs to the run's own thread count by its end; only load beyond
    that (or before it started) is other jobs."""
    monkeypatch.setattr(records.os, "cpu_count", lambda: 2)
    for after, busy in ((2.0, False), (3.5, True)):
        loads = iter([(0.17, 0, 0), (after, 0, 0)])
        monkeypatch.setattr(records.os, "getloadavg", lambda: next(loads))
        assert records.RunRecord("python -m x", threads=2).finish()["load"]["busy"] is busy
    loads = iter([(1.8, 0, 0), (2.0, 0, 0)])  # busy before it started
    monkeypatch.setattr(records.os, "getloadavg", lambda: next(loads))
    assert records.RunRecord("python -m x", threads=2).finish()["load"]["busy"] is True


def test_shortfall_says_why_a_time_bounded_run_did_fewer_steps():
    starved = {"cpu_share": 0.3, "threads": 2, "load": {"before": 3.1, "after": 3.4, "busy": True}}
    note = records.shortfall_note("GRPO", 200, 35, starved)
    assert "35 of 200 planned steps" in note and "30% of its 2 thread(s)" in note and "3.10 / 3.40" in note
    assert "other jobs shared the machine" in note
    fed = {"cpu_share": 0.97, "threads": 2, "load": {"before": 0.1, "after": 0.9, "busy": False}}
    assert "more minutes" in records.shortfall_note("GRPO", 300, 210, fed)
    assert records.shortfall_note("GRPO", 300, 300, fed) is None


def test_recorded_command_writes_list_values_as_typed():
    args = argparse.Namespace(noise=(0.0, 12.5), out="x", check=print, flag=True)
    assert records.recorded_command("rlvr-world policy-eval", args) == \
        "rlvr-world policy-eval --noise 0,12.5 --out x --flag"


def test_a_rewritten_results_file_does_not_make_the_commit_dirty(tmp_path):
    """Benchmarks rewrite benchmarks/results as they run; only a change elsewhere is "+dirty"."""
    import subprocess

    from rlvr_envs.core.records import git_commit

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "a.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "init")
    clean = git_commit(tmp_path)
    assert clean and not clean.endswith("+dirty")
    (tmp_path / "benchmarks" / "results" / "a.json").write_text('{"new": 1}')
    assert git_commit(tmp_path) == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path) == clean + "+dirty"
