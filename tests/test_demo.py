"""`rlvr-world demo --tiny`: the main job end to end at smoke size (the full run is README's)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_tiny_demo_writes_a_report_with_both_models_and_paired_tests(tmp_path):
    from rlvr_envs.cli import main

    assert main(["demo", "--tiny", "--threads", "1", "--out", str(tmp_path / "demo")]) == 0
    results = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert set(results["models"]) == {"mle_base", "rlvr"}
    assert results["grpo_steps"] == 2
    rlvr = results["models"]["rlvr"]["sampled"]
    assert {"mae", "mse", "psnr", "ssim", "repetition", "vs_base", "mae_change_percent"} <= set(rlvr)
    assert set(results["baselines"]) == {"copy_last_frame_tokens", "tokenizer_ceiling"}
    for name in ("report.md", "frames.png", "grpo_reward.png"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
    assert "| rlvr | sampled |" in (tmp_path / "demo" / "report.md").read_text()
