"""The one run record (rlvr_envs.core.records): load before/after, the under-load flag, the CPU
share a run got, and the sentence a time-bounded run prints when it got far fewer steps."""

from __future__ import annotations

import time

from rlvr_envs.core import records


def test_a_record_measures_its_cpu_share_and_flags_load(monkeypatch):
    loads = iter([[0.1, 0.1, 0.1], [1.2, 0.5, 0.2]])
    monkeypatch.setattr(records, "load_average", lambda: next(loads))
    record = records.RunRecord.start("python -m x", threads=1, argv=["--n", "1"])
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:  # busy: one thread fully used
        pass
    done = record.finish()
    assert done["argv"] == ["--n", "1"] and done["load_before"] == [0.1, 0.1, 0.1] and done["seconds"] >= 0.3
    assert 0.5 < done["cpu_share"] <= 1.2 and not done["under_load"]  # after: 1.2 <= its own thread + 0.5
    assert "quiet machine" in record.note() and done["commit"]
    loaded = iter([[2.5, 2.0, 1.0], [3.0, 2.0, 1.0]])
    monkeypatch.setattr(records, "load_average", lambda: next(loaded))
    busy = records.RunRecord.start("python -m x", threads=1, argv=[])
    assert busy.finish()["under_load"] and "UNDER LOAD" in busy.note()


def test_shortfall_says_why_a_time_bounded_run_did_fewer_steps():
    starved = {"cpu_share": 0.3, "threads": 2, "load_before": [3.1], "load_after": [3.4], "under_load": True}
    note = records.shortfall_note("GRPO", 200, 35, starved)
    assert "35 of 200 planned steps" in note and "30% of its 2 thread(s)" in note and "3.10 / 3.40" in note
    assert "other jobs shared the machine" in note
    fed = {"cpu_share": 0.97, "threads": 2, "load_before": [0.1], "load_after": [2.0], "under_load": False}
    assert "more minutes" in records.shortfall_note("GRPO", 300, 210, fed)
    assert records.shortfall_note("GRPO", 300, 300, fed) is None
