"""The RL-algorithm comparison (benchmarks/rl_algorithms.py) end to end on a tiny world model,
and best-of-n's oracle selection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import sections

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from rlvr_envs.core.factory import build_task
    from rlvr_envs.video.task import embedded_heldout_dir
    from rlvr_envs.video.world_model import build_world_model

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout="single", reward="mae")
    directory = tmp_path_factory.mktemp("tiny_wm")
    build_world_model(task.vocab, task.max_prompt_len + task.max_response_len, preset="tiny").save_pretrained(directory)
    return str(directory), embedded_heldout_dir(task.config.episodes, task.tokenizer.config.resolution[0]), task


def test_best_of_n_never_scores_below_its_first_sample_and_grows_with_n(tiny):
    from rlvr_envs.video.evaluation import best_of_n, held_out_indices, score_world_model
    from rlvr_envs.video.world_model import load_world_model

    directory, _, task = tiny
    model = load_world_model(directory, task.vocab)
    indices = held_out_indices(len(task), 4)
    assert indices == held_out_indices(len(task), 4) and len(set(indices)) == 4
    one, three = best_of_n(model, task, indices, 1), best_of_n(model, task, indices, 3)
    np.testing.assert_allclose(one["reward"], score_world_model(model, task, indices)["reward"])
    assert (three["reward"] >= one["reward"]).all() and three["reward"].mean() > one["reward"].mean()
    with pytest.raises(ValueError, match="n must be"):
        best_of_n(model, task, indices, 0)


def test_repetition_rejection_pairs_with_plain_sampling_on_a_real_model(tiny):
    from rlvr_envs.video.evaluation import held_out_indices, reject_repetition, score_world_model
    from rlvr_envs.video.world_model import load_world_model

    directory, _, task = tiny
    model = load_world_model(directory, task.vocab)
    indices = held_out_indices(len(task), 4)
    plain, rejected = score_world_model(model, task, indices, seed=7), reject_repetition(model, task, indices, 4, seed=7)
    clean = plain["repetition"] == 0  # a clean first draw is kept as it is
    np.testing.assert_allclose(rejected["mae"][clean], plain["mae"][clean])
    assert (rejected["draws"][clean] == 1).all() and (rejected["draws"] <= 4).all()


def test_best_of_draws_picks_each_transitions_highest_reward_sample_among_the_first_n():
    from rlvr_envs.video.evaluation import best_of_draws

    draws = [{"reward": np.array([-3.0, -1.0]), "mae": np.array([3.0, 1.0])},
             {"reward": np.array([-2.0, -5.0]), "mae": np.array([2.0, 5.0])},
             {"reward": np.array([-4.0, -0.5]), "mae": np.array([4.0, 0.5])}]
    curve = best_of_draws(draws, [1, 2, 3])
    assert curve[1]["mae"].tolist() == [3.0, 1.0]
    assert curve[2]["mae"].tolist() == [2.0, 1.0]
    assert curve[3]["mae"].tolist() == [2.0, 0.5]
    for bad in ([0], [4], []):
        with pytest.raises(ValueError, match="every n"):
            best_of_draws(draws, bad)


@pytest.mark.slow
def test_comparison_runs_every_method_and_reuses_finished_runs(tiny, tmp_path, monkeypatch):
    from benchmarks import rl_algorithms

    directory, data, _ = tiny
    argv = ["--env-id", "RLVRWorld/PushT-SingleStep-v0", "--data", data, "--model", directory, "--steps", "1", "--seeds", "0", "--prompts-per-step", "2",
            "--group-size", "2", "--eval-windows", "2", "--best-of", "1,2", "--sb3-seconds", "1", "--sb3-eval", "2",
            "--threads", "1", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out" / "rl")]
    assert rl_algorithms.main(argv) == 0
    report = json.loads((tmp_path / "out" / "rl.json").read_text())
    # the committed run predates the run record, --env-id and --device (it ran PushT on the CPU, scored
    # by the MAE); any other field it lacks needs a rerun
    gaps = sections.missing_fields(sections.load("rl_algorithms.json"), report)
    assert gaps == ["/run", "/score", "/config/env_id", "/config/env_kwargs", "/config/device", "/config/modality",
                    "/config/score"], gaps
    assert set(report["methods"]) == {"grpo", "dr_grpo", "rloo", "sb3_ppo"}
    for name in ("grpo", "dr_grpo", "rloo"):
        run = report["methods"][name]["seeds"]["0"]
        assert len(run["curve"]) == 1 and np.isfinite(run["final_sampled_mae"])
        assert ("--algorithm rloo" in run["command"]) == (name == "rloo")
    assert report["methods"]["sb3_ppo"]["seeds"]["0"]["timesteps"] >= 1
    assert set(report["best_of_n_sampled_mae"]) == {"1", "2"}
    assert report["best_of_n_sampled_mae"]["2"] <= report["best_of_n_sampled_mae"]["1"]
    # best of 1 is sampled as the trainer evaluates: the seed-0 runs' starting sampled MAE
    assert report["best_of_n_sampled_mae"]["1"] == pytest.approx(report["methods"]["grpo"]["seeds"]["0"]["start_sampled_mae"])
    assert (tmp_path / "out" / "rl.png").stat().st_size > 0 and "rloo" in (tmp_path / "out" / "rl.md").read_text()

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("trainers.grpo.main", no_training)
    monkeypatch.setattr("trainers.sb3_ppo.main", no_training)
    assert rl_algorithms.main(argv[:-1] + [str(tmp_path / "out" / "again")]) == 0


@pytest.mark.slow
def test_comparison_runs_on_a_language_id(tmp_path):
    """`--env-id` takes a text id: TRL's GRPO and RLOO from the shipped MiniTextWorld SFT model and
    SB3 PPO on its token mode, compared on the greedy held-out reward."""
    from benchmarks import rl_algorithms

    argv = ["--env-id", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs", "size=4", "--methods", "grpo,rloo,sb3_ppo",
            "--steps", "1", "--seeds", "0", "--prompts-per-step", "2", "--group-size", "2", "--eval-windows", "2",
            "--sb3-seconds", "1", "--sb3-eval", "2", "--threads", "1", "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out" / "rl")]
    assert rl_algorithms.main(argv) == 0
    report = json.loads((tmp_path / "out" / "rl.json").read_text())
    assert report["score"] == "greedy_reward" and set(report["methods"]) == {"grpo", "rloo", "sb3_ppo"}
    for name in ("grpo", "rloo"):
        run = report["methods"][name]["seeds"]["0"]
        assert 0.0 <= run["start_greedy_reward"] <= 1.0 and 0.0 <= run["final_greedy_reward"] <= 1.0
        assert run["curve"] and ("--algorithm rloo" in run["command"]) == (name == "rloo")
    assert np.isfinite(report["methods"]["sb3_ppo"]["final_reward_mean"])
    assert "greedy held-out reward" in (tmp_path / "out" / "rl.md").read_text()
    with pytest.raises(SystemExit):  # best-of-n samples video models only
        rl_algorithms.parse(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--methods", "best_of_n"])


@pytest.mark.slow
def test_repetition_table_rows_pair_with_the_base_and_count_generated_tokens(tiny, tmp_path):
    import argparse

    from benchmarks.experiments import repetition_table

    directory, data, _ = tiny
    args = argparse.Namespace(layout="single", data=data, eval_windows=3, eval_seeds=3, max_draws=2, threads=1)
    models = {name: directory for name in ("mle_base", "rlvr", "rlvr_penalty", "mle_continued")}
    report = repetition_table.evaluate(models, args, training_predictions=7)
    tokens = report["frame_tokens_per_prediction"]
    assert tokens == 64 and report["matched_draws"] == 1 + (7 * 64) // (3 * 64)
    rows = report["rows"]
    assert list(rows)[:5] == ["mle_base", "mle_base + rejection", "rlvr", "rlvr + repetition penalty", "mle_continued"]
    assert rows["rlvr, greedy"]["vs"] == "mle_base, greedy" and rows["rlvr"]["vs"] == "mle_base"
    assert rows["mle_base, greedy"]["mae"]["std_over_seeds"] == 0  # greedy: the seeds only matter for redraws
    # the same model, transitions and seeds: a row without rejection equals the base exactly
    assert rows["rlvr"]["mae"]["per_seed"] == rows["mle_base"]["mae"]["per_seed"]
    assert rows["rlvr"]["mae_vs_base"]["mean"] == 0 and len(rows["mle_base"]["mae"]["per_seed"]) == 3
    assert rows["rlvr"]["training_tokens"] == 7 * 64 and rows["mle_base + rejection"]["training_tokens"] == 0
    assert 3 * 64 <= rows["mle_base + rejection"]["test_tokens"] <= 2 * 3 * 64
    report.update(layout="single", machine="test", command="test", penalty=0.01, grpo_args={}, matched_seconds=1,
                  training_seconds={"rlvr": 1}, stage_commands={"rlvr": "python -m trainers.grpo ..."})
    assert "| mle_base + rejection |" in repetition_table.markdown(report)
    repetition_table.plot(report, tmp_path / "table.png")
    assert (tmp_path / "table.png").stat().st_size > 0


def test_stage_commands_fall_back_to_the_shipped_tokenizer_when_the_recorded_path_is_gone(tmp_path):
    from benchmarks.experiments.grpo_pusht import tokenizer_dir
    from rlvr_envs.video.task import default_tokenizer_dir

    assert tokenizer_dir(str(tmp_path / "gone")) == str(default_tokenizer_dir())
    shipped = str(default_tokenizer_dir())
    assert tokenizer_dir(shipped) == shipped


def test_two_ids_never_share_runs_and_a_foreign_finished_run_is_refused(tmp_path, capsys):
    """Runs are reused by folder: the documented PushT and MiniTextWorld comparisons, run one after the
    other with the defaults, must not report one's runs as the other's."""
    from benchmarks import rl_algorithms

    video = rl_algorithms.parse([])
    text = rl_algorithms.parse(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--methods", "grpo,rloo,sb3_ppo"])
    assert video.runs != text.runs and video.out != text.out
    finished = tmp_path / "grpo_seed0"
    finished.mkdir()
    (finished / "card.json").write_text(json.dumps({"args": {"env_id": "RLVRWorld/MiniTextWorld-v0"}}))
    with pytest.raises(SystemExit) as stop:
        rl_algorithms.parse(["--runs", str(tmp_path), "--seeds", "0", "--methods", "grpo"])
    assert stop.value.code == 2 and "grpo_seed0 holds a finished run with other env_id" in capsys.readouterr().err
    same = {"env_id": rl_algorithms.ENV_ID, "env_kwargs": ["reward=mae"], "model": "", "steps": 40,
            "prompts_per_step": 4, "group_size": 8, "lr": 1e-4, "beta": 1e-3, "seed": 0}
    (finished / "card.json").write_text(json.dumps({"args": same}))
    assert rl_algorithms.parse(["--runs", str(tmp_path), "--seeds", "0", "--methods", "grpo"]).runs == str(tmp_path)
