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
    planners = results["planning"]["planners"]
    assert set(planners) == {"mle_base", "rlvr", "random"}
    for summary in planners.values():  # one episode each, judged by the real env
        assert summary["episodes"] == 1 and summary["successes"] in (0, 1) and summary["position_error"] >= 0
    for name in ("report.md", "frames.png", "grpo_reward.png", "plan_mle_base.gif", "plan_rlvr.gif"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "| rlvr | sampled |" in report and "| rlvr | " in report.split("## Planning")[1]


@pytest.mark.slow
def test_tiny_text_demo_compares_the_shipped_sft_model_with_its_grpo_successor(tmp_path):
    from rlvr_envs.cli import main

    assert main(["demo", "--domain", "text", "--tiny", "--threads", "1", "--out", str(tmp_path / "demo")]) == 0
    results = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert set(results["models"]) == {"sft", "rlvr"} and results["grpo_steps"] == 2
    assert results["env_id"] == "RLVRWorld/MiniTextWorld-TaskReward-v0"
    sft, rlvr, baseline = results["models"]["sft"], results["models"]["rlvr"], results["baseline"]
    assert sft["n"] == rlvr["n"] == 4 and len(rlvr["solved"]) == 4
    assert {"reward", "exact_changed", "exact_unchanged"} >= set(rlvr["vs_sft"]) and "reward" in rlvr["vs_sft"]
    # the "nothing changes" answer: right exactly on the unchanged transitions
    assert baseline["accuracy_unchanged"] == 1.0 and baseline["accuracy_changed"] == 0.0
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "| rlvr |" in report and "| nothing_changes (baseline) |" in report
    assert (tmp_path / "demo" / "grpo_reward.png").stat().st_size > 0


def test_demo_rejects_an_unknown_domain_or_reward():
    from trainers.demo import Args

    with pytest.raises(ValueError, match="domain must be one of"):
        Args(domain="atari").resolved()
    with pytest.raises(ValueError, match="text_reward must be one of"):
        Args(domain="text", text_reward="f1").resolved()
    with pytest.raises(ValueError, match="plan_episodes must be >= 0"):
        Args(plan_episodes=-1).resolved()
