"""The MiniWeb predictability audit (benchmarks.experiments.miniweb_predictability) on a few transitions."""

from __future__ import annotations

import json
import subprocess
import sys


def test_audit_finds_every_line_determined_on_the_site_and_noise_in_the_old_simulator(tmp_path):
    from benchmarks.experiments.miniweb_predictability import main

    out = tmp_path / "audit"
    assert main(["--transitions", "120", "--out", str(out)]) == 0
    result = json.loads(out.with_suffix(".json").read_text())
    kinds = result["kinds"]
    assert result["goal_met"] and {"click", "type", "search"} <= set(kinds)
    assert all(row["determined"] == 1.0 and row["noise"] == 0.0 for row in kinds.values())
    assert kinds["search"]["search_by_rule"] == 1.0 and kinds["click"]["id_rule"] == 1.0
    assert 0 < kinds["click"]["in_prompt"] < 1 and kinds["type"]["in_prompt"] == 1.0
    assert "| click |" in out.with_suffix(".md").read_text()

    # the simulator before one site per seed drew a clicked page at random: the audit sees the noise
    before = subprocess.run(["git", "show", "40e7884:rlvr_envs/web/mini_web.py"], capture_output=True, text=True)
    if before.returncode == 0:
        old = tmp_path / "mini_web_before.py"
        old.write_text(before.stdout)
        assert main(["--transitions", "120", "--simulator", str(old), "--out", str(tmp_path / "before")]) == 0
        kinds = json.loads((tmp_path / "before.json").read_text())["kinds"]
        assert kinds["click"]["determined"] < 0.8 and kinds["type"]["determined"] == 1.0


def test_a_missing_simulator_file_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.experiments.miniweb_predictability", "--simulator",
                           str(tmp_path / "nope.py"), "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert done.returncode != 0 and "no such file" in done.stderr and "Traceback" not in done.stderr
