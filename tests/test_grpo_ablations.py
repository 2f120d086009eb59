"""benchmarks.experiments.grpo_ablations: group-size and reward x metric ablations of GRPO on PushT."""

from __future__ import annotations

import json

import pytest

from benchmarks import sections


def test_plan_shares_the_group8_mae_run_and_rejects_bad_group_sizes(tmp_path):
    from benchmarks.experiments.grpo_ablations import parse, plan

    names = list(plan(parse(["--out", str(tmp_path / "x.json")])))
    assert names == ["group2_mae", "group4_mae", "group8_mae", "group16_mae", "group8_mse", "group8_psnr",
                     "group8_ssim"]
    for bad in ("1", "3", "64"):
        with pytest.raises(SystemExit):
            parse(["--group-sizes", bad, "--out", str(tmp_path / "x.json")])


@pytest.mark.slow
def test_runs_write_both_tables_and_are_reused(tmp_path, monkeypatch):
    from benchmarks.experiments import grpo_ablations

    out = tmp_path / "ablations.json"
    argv = ["--steps", "1", "--group-sizes", "16", "--rewards", "mae", "ssim", "--eval-windows", "2",
            "--train-episodes", "2", "--threads", "1", "--runs", str(tmp_path / "runs"), "--out", str(out)]
    assert grpo_ablations.main(argv) == 0
    report = json.loads(out.read_text())
    # the committed run predates --device (it ran on the CPU); any other field it lacks needs a rerun
    gaps = sections.missing_fields(sections.load("grpo_ablations.json"), report)
    assert gaps == ["/config/device"], gaps
    assert list(report["runs"]) == ["group16_mae", "group8_mae", "group8_ssim"]
    ssim = report["runs"]["group8_ssim"]
    assert ssim["reward"] == "ssim" and ssim["group_size"] == 8 and "reward=ssim" in ssim["command"]
    assert set(ssim["change_percent"]) == {"mae", "mse", "psnr", "ssim"}
    text = out.with_suffix(".md").read_text()
    assert "| 2 x 16 |" in text and "| ssim |" in text and out.with_suffix(".png").stat().st_size > 0
    # a second invocation reuses every finished run instead of training again
    monkeypatch.setattr("trainers.grpo.main", lambda *a, **k: pytest.fail("retrained a finished run"))
    assert grpo_ablations.main(argv) == 0
