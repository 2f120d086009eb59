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
    assert "planning" not in results  # planning is its own command: at the demo's budget it showed nothing
    run = results["run"]  # the run record: who, where, how loaded, when, which commit
    assert run["program"] == "rlvr-world demo" and {"before", "after", "busy"} <= set(run["load"])
    assert run["start"] <= run["end"] and "cores" in run["machine"]
    for name in ("report.md", "frames.png", "grpo_reward.png"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "| rlvr | sampled |" in report and "GRPO on -MAE moved the held-out sampled MAE" in report
    assert "Planning is not part of the demo" in report and "planning_agreement" in report


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
    assert "What GRPO does at this scale" in report and "docs/scale_out.md" in report
    assert (tmp_path / "demo" / "grpo_reward.png").stat().st_size > 0


def test_demo_rejects_an_unknown_domain_or_reward():
    from trainers.demo import Args

    with pytest.raises(ValueError, match="domain must be one of"):
        Args(domain="atari").resolved()
    with pytest.raises(ValueError, match="text_reward must be one of"):
        Args(domain="text", text_reward="f1").resolved()
    with pytest.raises(TypeError):  # the planning stage is gone, with its argument
        Args(plan_episodes=4)


def _results(mae_change: float, mae_p: float, block: float, angle: float, object_p: float) -> dict:
    """A demo results dict with the paired figures the verdict reads (sampled mode)."""
    def test(mean, p):
        return {"mean": mean, "stderr": 0.0, "t": 0.0, "p": p, "n": 96}

    sampled = {"mae_change_percent": mae_change,
               "vs_base": {"mae": test(mae_change, mae_p), "block_error": test(block, object_p),
                           "angle_error": test(angle, object_p)}}
    return {"models": {"rlvr": {"sampled": sampled}}}


def test_the_verdict_calls_it_a_better_world_model_only_when_the_object_does_not_get_worse():
    from trainers.demo import verdict

    # pixels improve beyond noise while the judge reads the T-block further off: not a better world model
    worse = verdict(_results(-18.0, 1e-12, block=0.02, angle=0.01, object_p=1e-4))
    assert "got worse" in worse and "not a better world model" in worse and "+14.5 px" in worse
    assert "+1.8 deg" in worse
    better = verdict(_results(-18.0, 1e-12, block=-0.01, angle=0.0, object_p=0.3))
    assert "did not grow beyond noise" in better and "a better world model by the pixels and by the object" in better
    noise = verdict(_results(-1.0, 0.4, block=0.001, angle=0.0, object_p=0.6))  # neither moved beyond noise
    assert "better world model" not in noise and "not clearly beyond sampling noise" in noise


def test_an_uncapped_demo_reports_the_steps_it_did_and_no_shortfall():
    """--grpo-steps 0 (the default) asks for the minutes only: the report states the steps and their
    time on this machine, and there is no 'stopped short' sentence to blame the machine with."""
    from types import SimpleNamespace

    from trainers.common import grpo_run, step_line
    from trainers.demo import UNCAPPED_STEPS, Args

    assert Args().step_cap == UNCAPPED_STEPS and Args(grpo_steps=40).step_cap == 40
    record = SimpleNamespace(finish=lambda: {"cpu_share": 0.3, "threads": 2, "load": {"busy": True}})
    assert grpo_run(record, Args(), 109)[1] is None
    assert "stopped at its time limit after 109 of 300" in grpo_run(record, Args(grpo_steps=300), 109)[1]
    assert step_line(109, 420.0) == "109 GRPO steps in 7.0 min, 3.9 s a step on this machine"
    with pytest.raises(ValueError, match="grpo_steps must be >= 0"):
        Args(grpo_steps=-1).validate()
