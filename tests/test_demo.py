"""`rlvr-world demo --tiny`: the main job end to end at smoke size (the full run is README's)."""

from __future__ import annotations

import json

import pytest


def _numbers(results: dict) -> dict:
    """What a demo measured, without its timings and run record."""
    return {key: results[key] for key in ("models", "baselines", "grpo_steps")}


def _committed_run_is_current(fresh: dict, folder: str) -> None:
    """The demo run committed in benchmarks/results/FOLDER holds every field the demo writes now
    (README and docs/results.md quote it): a demo that gains a column needs its run redone."""
    from benchmarks import sections

    missing = sections.missing_fields(sections.load(f"{folder}/results.json"), fresh)
    assert missing == [], f"benchmarks/results/{folder}/results.json predates the demo: rerun it ({missing})"


@pytest.mark.slow
def test_tiny_demo_writes_a_report_and_gives_the_same_numbers_beside_a_load(tmp_path):
    """The demo runs a fixed number of GRPO steps, so a second run of the same seed while another
    process keeps a core busy (beside the suite's own) does the same steps and measures the same numbers."""
    import subprocess
    import sys

    from rlvr_envs.cli import main

    assert main(["demo", "--tiny", "--threads", "1", "--out", str(tmp_path / "demo")]) == 0
    results = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert set(results["models"]) == {"mle_base", "rlvr"}
    assert results["grpo_steps"] == results["grpo_steps_planned"] == 2 and results["grpo_shortfall"] is None
    assert results["grpo_reward"] == "pose" and "object" in results["reward"]
    rlvr = results["models"]["rlvr"]["sampled"]
    assert {"mae", "agent_error", "block_error", "angle_error", "vs_base", "vs_copy_last"} <= set(rlvr)
    assert {"mae", "agent_error", "block_error", "angle_error"} <= set(rlvr["vs_base"]) & set(rlvr["vs_copy_last"])
    assert rlvr["vs_base"]["mae"]["n"] == 4  # the unit of the paired tests is the transition
    assert set(results["baselines"]) == {"copy_last_frame_tokens", "tokenizer_ceiling"}
    assert "planning" not in results  # planning is its own command: at the demo's budget it showed nothing
    run = results["run"]  # the run record: who, where, how loaded, when, which commit
    assert run["program"] == "rlvr-world demo" and {"before", "after", "busy"} <= set(run["load"])
    assert run["start"] <= run["end"] and "cores" in run["machine"]
    for name in ("report.md", "frames.png", "grpo_reward.png"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "| rlvr | sampled |" in report and "agent error (px)" in report and "| vs copy-last-frame |" in report
    assert "GRPO on the 'pose' reward moved the held-out sampled MAE" in report and "copying the last frame" in report
    assert "Planning is not part of the demo" in report and "planning_agreement" in report
    _committed_run_is_current(results, "demo_pusht")

    burn = "while True: pass"
    load = [subprocess.Popen([sys.executable, "-c", burn])]
    try:
        assert main(["demo", "--tiny", "--threads", "1", "--out", str(tmp_path / "loaded")]) == 0
    finally:
        for process in load:
            process.kill()
    again = json.loads((tmp_path / "loaded" / "results.json").read_text())
    assert _numbers(again) == _numbers(results)


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
    assert "What GRPO does at this scale" in report and "benchmarks/results/gpu_check/" in report
    assert (tmp_path / "demo" / "grpo_reward.png").stat().st_size > 0
    _committed_run_is_current(results, "demo_text")


def test_demo_rejects_an_unknown_domain_or_reward():
    from trainers.demo import Args

    with pytest.raises(ValueError, match="domain must be one of"):
        Args(domain="atari").resolved()
    with pytest.raises(ValueError, match="text_reward must be one of"):
        Args(domain="text", text_reward="f1").resolved()
    with pytest.raises(TypeError):  # the planning stage is gone, with its argument
        Args(plan_episodes=4)


def _test(mean, p, n=96):
    return {"mean": mean, "stderr": 0.0, "t": 0.0, "p": p, "n": n}


def _results(mae: tuple, agent: tuple, block: tuple = (0.0, 0.9), copy_mae: tuple = (0.0005, 1e-3),
             copy_agent: tuple = (0.1, 1e-6), shortfall: str | None = None) -> dict:
    """A demo results dict with the paired figures the verdict reads (sampled mode): each
    (mean difference, p); object errors in [0, 1] of the arena's diagonal."""
    vs_base = {"mae": _test(*mae), "agent_error": _test(*agent), "block_error": _test(*block),
               "angle_error": _test(0.0, 0.9)}
    vs_copy = {"mae": _test(*copy_mae), "agent_error": _test(*copy_agent), "block_error": _test(0.0, 0.9),
               "angle_error": _test(0.0, 0.9)}
    sampled = {"mae_change_percent": 100 * mae[0] / 0.009, "mae": 0.0082, "agent_error": 0.17,
               "block_error": 0.02, "angle_error": 0.05, "vs_base": vs_base, "vs_copy_last": vs_copy}
    copy = {"mae": 0.0077, "agent_error": 0.055, "block_error": 0.01, "angle_error": 0.016}
    return {"grpo_reward": "pose", "grpo_steps": 40, "grpo_steps_planned": 60, "grpo_shortfall": shortfall,
            "models": {"rlvr": {"sampled": sampled}}, "baselines": {"copy_last_frame_tokens": copy}}


def test_the_verdict_needs_the_pixels_better_and_no_object_worse():
    from trainers.demo import verdict

    # pixels improve beyond noise while the judge reads the pusher further off: not a better world model
    worse = verdict(_results(mae=(-0.0012, 1e-9), agent=(0.1, 5e-3)))
    assert "reads objects further off: agent error +72.4 px" in worse and "Not a better world model" in worse
    assert "A better world model" not in worse
    better = verdict(_results(mae=(-0.0008, 1e-6), agent=(-0.05, 1e-3), block=(-0.01, 0.02)))
    assert "A better world model than the MLE base, by the pixels and by the objects" in better
    assert "closer to the real ones: agent error -36.2 px" in better and "block error -7.2 px" in better
    noise = verdict(_results(mae=(-0.0001, 0.4), agent=(0.001, 0.6)))  # nothing moved beyond noise
    assert "Not a better world model beyond noise" in noise


def test_the_verdict_says_where_the_model_stands_against_copying_the_last_frame():
    from trainers.demo import verdict

    behind = verdict(_results(mae=(-0.0008, 1e-6), agent=(-0.05, 1e-3)))
    assert "It does not beat copying the last frame (worse beyond noise: MAE 0.00820 vs 0.00770; agent error " \
           "123.1 px vs 39.8 px)" in behind
    ahead = verdict(_results(mae=(-0.0008, 1e-6), agent=(-0.05, 1e-3), copy_mae=(-0.0003, 1e-3),
                             copy_agent=(-0.01, 0.3)))
    assert "It beats copying the last frame, by the pixels and by the objects" in ahead
    tied = verdict(_results(mae=(-0.0008, 1e-6), agent=(-0.05, 1e-3), copy_mae=(-0.0001, 0.5),
                            copy_agent=(-0.01, 0.3)))
    assert "It does not beat copying the last frame beyond noise" in tied
    short = verdict(_results(mae=(-0.0008, 1e-6), agent=(-0.05, 1e-3), shortfall="GRPO stopped at its time limit"))
    assert short.endswith("GRPO stopped short of its planned steps (40 of 60).")


def test_the_demo_runs_a_fixed_number_of_steps_and_a_time_limit_only_when_asked(tmp_path):
    """The default is a step count, not minutes: the result does not depend on the machine's load.
    A --grpo-minutes that cuts the run short is reported as such."""
    from functools import partial
    from types import SimpleNamespace

    from trainers.common import grpo_run, step_line
    from trainers.demo import DEFAULT_STEPS, grpo_config
    from trainers.demo import Args as DemoArgs

    Args = partial(DemoArgs, out=str(tmp_path / "demo"))  # the user's runs/demo may hold a finished demo

    assert Args().resolved().grpo_steps == DEFAULT_STEPS["pusht"]
    assert Args(domain="text").resolved().grpo_steps == DEFAULT_STEPS["text"]
    assert Args(grpo_steps=7).resolved().grpo_steps == 7 and Args(tiny=True).resolved().grpo_steps == 2
    out = tmp_path / "demo" / "grpo"
    config = grpo_config(Args().resolved(), out)
    assert config.steps == DEFAULT_STEPS["pusht"] and config.max_seconds == 0 and config.out == str(out)
    assert config.env_kwargs == ("reward=pose", "pose_weights=[0.03,0.03,0.03]")
    assert grpo_config(Args(reward="mae", grpo_minutes=2).resolved(), out).max_seconds == 120
    weighted = grpo_config(Args(pose_weights=("0.03", "0.01", "0.01")).resolved(), out)  # as a command line gives them
    assert weighted.env_kwargs == ("reward=pose", "pose_weights=[0.03,0.01,0.01]")
    record = SimpleNamespace(finish=lambda: {"cpu_share": 0.3, "threads": 2, "load": {"busy": True}})
    assert grpo_run(record, Args().resolved(), DEFAULT_STEPS["pusht"])[1] is None
    assert "stopped at its time limit after 19 of 60" in grpo_run(record, Args(grpo_steps=60), 19)[1]
    assert step_line(109, 420.0) == "109 GRPO steps in 7.0 min, 3.9 s a step on this machine"
    for bad, match in (({"grpo_steps": -1}, "grpo_steps must be >= 0"), ({"grpo_minutes": -1}, "grpo_minutes"),
                       ({"reward": "lpips"}, "reward must be one of"), ({"pose_weights": ("1", "x", "1")}, "3 numbers"),
                       ({"pose_weights": (0, 0, 0)}, "not all 0"), ({"pose_weights": (1.0, 1.0)}, "3 finite")):
        with pytest.raises(ValueError, match=match):
            Args(**bad).validate()


def test_the_report_says_what_happened_to_the_reward_grpo_trained_on(tmp_path):
    from trainers.common import reward_trend

    log = tmp_path / "log.jsonl"
    rows = [{"step": i, "reward": -0.02 + 0.001 * i} for i in range(1, 21)] + [{"step": 20, "eval": {}}]
    log.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    assert reward_trend(log) == ("Training reward (on the training prompts, the mean of the first / last 10 steps): "
                                 "-0.0145 -> -0.0045.")
    log.write_text(json.dumps({"step": 1, "reward": 0.5}) + "\n")
    assert "first / last 1 steps): 0.5000 -> 0.5000" in reward_trend(log)
    log.write_text("")
    assert reward_trend(log) == "GRPO logged no training reward."


def test_a_finished_demo_is_never_replaced_silently_and_a_running_one_owns_its_folder(tmp_path):
    """A second demo on the folder of a finished one is refused unless --overwrite; one on the
    folder of a running demo is one line naming it; Ctrl-C is one line with exit 130."""
    from rlvr_envs.core.files import OutputInUse, OutputLock
    from trainers.demo import Args, main

    out = tmp_path / "demo"
    out.mkdir()
    (out / "results.json").write_text("{}")
    with pytest.raises(ValueError, match="holds a finished demo.*--overwrite"):
        Args(out=str(out)).validate()
    Args(out=str(out), overwrite=True).validate()
    with OutputLock(tmp_path / "busy", "rlvr-world demo --out busy"):
        with pytest.raises(OutputInUse, match="being written by another run"):
            main(Args(out=str(tmp_path / "busy"), tiny=True))


def test_ctrl_c_in_the_demo_is_one_line_naming_the_command(capsys):
    from trainers.common import run_command
    from trainers.demo import PROGRAM

    def interrupted(args):
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stop:
        run_command(interrupted, lambda: None, PROGRAM)
    assert stop.value.code == 130
    assert capsys.readouterr().err == "rlvr-world demo: interrupted; rerun it\n"


def test_a_bad_demo_argument_names_the_command_the_user_typed(capsys):
    from trainers.demo import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--threads", "0"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("usage: rlvr-world demo")
    assert err.strip().splitlines()[-1] == "rlvr-world demo: error: threads must be >= 1, got 0"
