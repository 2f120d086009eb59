"""`benchmarks.text_verifier_throughput`: what it measures and how it refuses (issue 33)."""

from __future__ import annotations

import sys

import pytest

from benchmarks import text_verifier_throughput as bench


def test_measure_times_every_kind_and_digests_every_reward():
    first = bench.measure(None, responses=6, repeats=1, seed=0)
    assert set(first) == {"RLVRWorld/MiniTextWorld-v0", "RLVRWorld/MiniTextWorld-TaskReward-v0"}
    for case in first.values():
        assert list(case["us_by_kind"]) == list(bench.KINDS) and all(t > 0 for t in case["us_by_kind"].values())
    # the digest is what two trees are compared by: the same responses give the same digest,
    # other responses another
    again = bench.measure(None, responses=6, repeats=1, seed=0)
    other = bench.measure(None, responses=6, repeats=1, seed=1)
    key = "RLVRWorld/MiniTextWorld-TaskReward-v0"
    assert again[key]["rewards_digest"] == first[key]["rewards_digest"] != other[key]["rewards_digest"]


def test_a_baseline_that_is_not_a_commit_is_refused_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["text_verifier_throughput", "--baseline", "no-such-rev", "--responses", "3",
                                      "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit, match="is not a commit of this checkout"):
        bench.main()
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("option", ["--responses", "--repeats", "--rounds"])
def test_counts_below_one_are_refused(monkeypatch, option, capsys):
    monkeypatch.setattr(sys, "argv", ["text_verifier_throughput", option, "0"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2 and "must be at least 1" in capsys.readouterr().err
