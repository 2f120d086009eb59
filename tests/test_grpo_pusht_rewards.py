"""benchmarks.grpo_pusht_rewards: the demo's GRPO per reward and seed, judged by pixels and objects."""

from __future__ import annotations

import json

import pytest

from benchmarks import sections


def _test(mean: float, p: float) -> dict:
    return {"mean": mean, "stderr": 0.0, "t": 0.0, "p": p, "n": 96}


def test_a_model_counts_as_better_only_when_the_mae_and_all_three_object_errors_fall_beyond_noise():
    from benchmarks.grpo_pusht_rewards import seed_row

    tests = {"mae": _test(-1e-3, 1e-6), "agent_error": _test(-0.1, 1e-3), "block_error": _test(-0.01, 0.01),
             "angle_error": _test(-0.02, 0.04)}
    assert seed_row(tests) == {"lower": ["mae", "agent_error", "block_error", "angle_error"], "higher": [],
                               "all_lower": True}
    tests["angle_error"] = _test(-0.02, 0.2)  # lower, but within noise
    assert not seed_row(tests)["all_lower"]
    tests["agent_error"] = _test(0.1, 1e-3)  # pixels bought by losing the pusher
    assert seed_row(tests)["higher"] == ["agent_error"]


def test_each_stage_is_the_demos_grpo_run_for_its_reward_and_seed(tmp_path):
    from types import SimpleNamespace

    from benchmarks.grpo_pusht_rewards import stage_command

    args = SimpleNamespace(steps=60, train_episodes=40, threads=1, device="cpu", pose_weights=[0.03, 0.03, 0.03])
    command = stage_command("pose", 2, args, tmp_path / "pose_seed2")
    assert command[1:3] == ["-m", "trainers.grpo"]
    joined = " ".join(command)
    assert "reward=pose pose_weights=[0.03,0.03,0.03]" in joined and "--seed 2" in joined
    assert "--steps 60" in joined and "--lr 0.0001" in joined and "--resume" not in joined
    assert "reward=mae" in " ".join(stage_command("mae", 0, args, tmp_path / "mae_seed0"))
    args.pose_weights = [0.03, 0.01, 0.01]
    assert "pose_weights=[0.03,0.01,0.01]" in " ".join(stage_command("pose", 0, args, tmp_path / "pose_seed0"))


@pytest.mark.slow
def test_a_tiny_run_writes_its_tables_and_reuses_finished_runs(tmp_path, monkeypatch):
    from benchmarks import grpo_pusht_rewards

    argv = ["--seeds", "0", "--steps", "1", "--train-episodes", "2", "--eval-windows", "4", "--eval-seeds", "2",
            "--threads", "1", "--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "out")]
    report = grpo_pusht_rewards.main(argv)
    assert list(report["rewards"]) == ["pose", "mae"] and set(report["models"]) == {"mle_base", "pose_seed0",
                                                                                    "mae_seed0"}
    pose = report["models"]["pose_seed0"]["sampled"]
    assert pose["vs_base"]["mae"]["n"] == 4  # paired over transitions, the two sampling seeds averaged
    assert {"agent_error", "block_error", "angle_error"} <= set(pose["vs_copy_last"])
    assert "pose_weights=[0.03,0.03,0.03]" in report["stage_commands"]["pose_seed0"]
    assert report["rewards"]["pose"]["seeds"] == 1 and "seeds_all_lower_than_base" in report["rewards"]["pose"]
    saved = json.loads((tmp_path / "out" / "grpo_pusht_rewards.json").read_text())
    gaps = sections.missing_fields(sections.load("grpo_pusht_rewards.json"), saved)
    assert gaps == [], f"rerun the committed run: it lacks {gaps}"
    assert saved["models"].keys() == report["models"].keys()
    text = (tmp_path / "out" / "grpo_pusht_rewards.md").read_text()
    assert "| pose_seed0 |" in text and "| copy_last_frame_tokens (baseline) |" in text and "| mae | " in text
    assert (tmp_path / "out" / "grpo_pusht_rewards.png").stat().st_size > 0
    # a second invocation evaluates the finished runs again without training
    monkeypatch.setattr(grpo_pusht_rewards, "stage_command", lambda *a, **k: pytest.fail("retrained a finished run"))
    assert grpo_pusht_rewards.main(argv)["models"].keys() == report["models"].keys()
