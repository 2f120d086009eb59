"""Registry-parametrised tests: every id obeys gymnasium, SB3 and the LLM-env contract."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from rlvr_envs.registration import ENVS, SIMULATORS, markdown_table
from tests.samples import REPO, real_wma_dir, registry_test_kwargs, shared_data_or_skip

IDS = [e.id for e in ENVS]


def make(env_id: str, **kwargs):
    return gym.make(env_id, **registry_test_kwargs(env_id), **kwargs)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env(env_id):
    """Gymnasium's defaults, render check included: it rebuilds the env in every listed render mode."""
    from gymnasium.utils.env_checker import check_env

    for mode in ("sequence", "token"):
        check_env(make(env_id, mode=mode).unwrapped)


def test_text_envs_list_only_the_render_modes_they_have():
    env = make("RLVRWorld/MiniTextWorld-v0").unwrapped
    assert env.metadata["render_modes"] == ["ansi"]
    with pytest.raises(ValueError, match="render_mode must be one of"):
        make("RLVRWorld/MiniTextWorld-v0", render_mode="rgb_array")


@pytest.mark.parametrize("env_id", sorted(SIMULATORS))
def test_gymnasium_check_env_on_plain_envs(env_id):
    """The learned simulators and agent envs pass gymnasium's checker with its defaults too."""
    from gymnasium.utils.env_checker import check_env

    check_env(gym.make(env_id).unwrapped)


@pytest.mark.parametrize("env_id", sorted(SIMULATORS))
def test_plain_envs_refuse_mode_in_one_line_saying_why(env_id):
    """`mode=` is the next-state prediction ids' argument; a plain env says what its action is
    (before loading any model) instead of raising its `__init__`'s TypeError."""
    for mode in ("token", "sequence"):
        with pytest.raises(ValueError, match=r"takes no mode= \(its action is .+\); mode=.+ belongs to the "
                                             r"next-state prediction ids$"):
            gym.make(env_id, mode=mode)


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_check_env_token_mode(env_id):
    from stable_baselines3.common.env_checker import check_env

    check_env(make(env_id, mode="token").unwrapped, warn=False)


@pytest.mark.parametrize("env_id", IDS)
def test_llm_env_checker(env_id):
    from rlvr_envs.core.checker import check_llm_env

    env = make(env_id)
    report = check_llm_env(env, skip_gym_check=True)
    assert report["gold"], "the checker must have scored gold answers"


@pytest.mark.parametrize("env_id", IDS)
def test_seeded_reset_and_rewards_are_deterministic(env_id):
    def rollout(seed):
        env = make(env_id)
        obs, info = env.reset(seed=seed)
        env.action_space.seed(seed)
        _, reward, *_ , step_info = env.step(env.action_space.sample())
        return info["index"], obs["prompt"].copy(), reward, step_info["error"]

    first, second = rollout(7), rollout(7)
    assert first[0] == second[0] and np.array_equal(first[1], second[1]) and first[2:] == second[2:]
    indices = {make(env_id).reset(seed=s)[1]["index"] for s in range(12)}
    assert len(indices) > 1 or len(make(env_id).unwrapped.task) == 1, "seeds should pick different transitions"


@pytest.mark.parametrize("env_id", IDS)
def test_pickling_round_trip(env_id):
    env = make(env_id, mode="token")
    env.reset(options={"index": 0})
    clone = pickle.loads(pickle.dumps(env))
    gold = env.unwrapped.task.target_ids(0).tolist() + [env.unwrapped.task.eos_token_id]
    obs, _ = clone.reset(options={"index": 0})
    for _ in gold:  # write the gold answer; positions the env fills itself (forced tokens) are skipped
        obs, _, terminated, _, info = clone.step(gold[int(obs["response_len"][0])])
        if terminated:
            break
    assert terminated and info["parsed"]


@pytest.mark.parametrize("env_id", IDS)
def test_vector_entry_point_is_the_batched_env(env_id):
    from rlvr_envs.core.vector import BatchedNextStatePredictionVectorEnv

    vec = gym.make_vec(env_id, num_envs=3, **registry_test_kwargs(env_id))
    assert isinstance(vec, BatchedNextStatePredictionVectorEnv)
    obs, info = vec.reset(options={"index": 0})
    assert (info["index"] == 0).all() and obs["prompt"].shape[0] == 3


#: the ids whose tasks build in a fraction of a second (the video ids load torch models; their
#: infos' stacking is checked by `check_llm_env` in test_llm_env_checker)
TEXT_AND_WEB_IDS = [e.id for e in ENVS if not e.task.startswith("rlvr_envs.video")]


def _mixed_answers(task, indices, good_row: int) -> np.ndarray:
    """The gold answer in row `good_row`, an empty (unparsable) response in every other row."""
    actions = np.full((len(indices), task.max_response_len), task.eos_token_id, dtype=np.int64)
    gold = task.target_ids(int(indices[good_row]))
    actions[good_row, :len(gold)] = gold
    return actions


def _step_mixed_batches(vec, task, same_step: bool) -> None:
    """Step a 2-env gymnasium vector env with the good answer in env 1, then in env 0: the
    first env to report an info key fixes its type, so both orders must stack."""
    _, infos = vec.reset(seed=0)
    empty = task.empty_prediction(0)
    for good_row in (1, 0):
        indices = infos["index"]
        _, rewards, terminated, _, infos = vec.step(_mixed_answers(task, indices, good_row))
        finished = infos["final_info"] if same_step else infos
        assert terminated.all() and finished["parsed"].tolist() == [row == good_row for row in range(2)]
        assert rewards[1 - good_row] == task.min_reward
        assert np.isclose(rewards[good_row], task.max_reward(int(indices[good_row])))
        if isinstance(empty, dict):  # walked key by key: no env's value may land as a key of its own
            assert set(finished["prediction"]) == set(empty) | {f"_{key}" for key in empty}
        if not same_step:  # the next step resets the finished envs (its actions are ignored)
            _, _, _, _, infos = vec.step(_mixed_answers(task, indices, 0))


@pytest.mark.parametrize("autoreset", ["NEXT_STEP", "SAME_STEP"])
@pytest.mark.parametrize("env_id", TEXT_AND_WEB_IDS)
def test_gymnasium_vector_envs_stack_mixed_answers(env_id, autoreset):
    """gymnasium's own sync vector env on a batch where one answer parses and one does not."""
    from gymnasium.vector import AutoresetMode

    from rlvr_envs.registration import task_from_env_id

    kwargs = registry_test_kwargs(env_id)
    mode = AutoresetMode[autoreset]
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode},
                       **kwargs)
    _step_mixed_batches(vec, task_from_env_id(env_id, **kwargs), same_step=mode is AutoresetMode.SAME_STEP)


def test_gymnasium_async_vector_env_stacks_mixed_answers():
    """The same through gymnasium's subprocess vector env (infos cross a pipe)."""
    from rlvr_envs.registration import task_from_env_id

    task = task_from_env_id("RLVRWorld/MiniTextWorld-v0")
    vec = gym.make_vec("RLVRWorld/MiniTextWorld-v0", num_envs=2, vectorization_mode="async")
    try:
        _step_mixed_batches(vec, task, same_step=False)
    finally:  # a failed step leaves a call pending, which close() would wait for forever
        vec.close(timeout=5)


def _fresh_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")


def test_module_prefixed_id_works_in_a_fresh_process_with_no_import():
    out = _fresh_python("import gymnasium as gym\n"
                        "env = gym.make('rlvr_envs:RLVRWorld/MiniTextWorld-v0')\n"
                        "print(type(env.unwrapped).__name__)")
    assert out.returncode == 0 and out.stdout.strip() == "NextStatePredictionEnv", out.stderr


def test_importing_the_package_registers_every_id():
    out = _fresh_python("import json, gymnasium as gym, rlvr_envs\n"
                        "gym.register_envs(rlvr_envs)\n"
                        "print(json.dumps(sorted(k for k in gym.registry if k.startswith('RLVRWorld/'))))")
    assert out.returncode == 0 and json.loads(out.stdout) == sorted([*IDS, *SIMULATORS]), out.stderr


def test_no_startup_hook_is_installed():
    # gymnasium 1.x convention: registration happens on import, nothing runs at interpreter start
    out = _fresh_python("import sys, gymnasium; print(any(k.startswith('rlvr_envs') for k in sys.modules))")
    assert out.stdout.strip() == "False", out.stderr
    assert not (REPO / "setup.py").exists() and not list(REPO.glob("*.pth"))


def test_unknown_kwarg_names_the_allowed_ones():
    with pytest.raises(TypeError, match="allowed"):
        gym.make(IDS[0], data_dri="/nowhere")


def test_unknown_id_fails_at_make():
    with pytest.raises(gym.error.Error):
        gym.make("RLVRWorld/NoSuchTask-v0")


def test_bad_mode_names_the_allowed_values():
    kwargs = registry_test_kwargs("RLVRWorld/TextGame-v0")
    with pytest.raises(ValueError, match="sequence"):
        gym.make("RLVRWorld/TextGame-v0", mode="words", **kwargs)


def test_cli_list_shows_every_id():
    out = subprocess.run([sys.executable, "-m", "rlvr_envs.cli", "list"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for env_id in IDS:
        assert env_id in out.stdout


def test_readme_env_table_is_the_generated_one():
    readme = (REPO / "README.md").read_text()
    assert markdown_table() in readme, "README's env table is stale: paste `rlvr-world list --markdown`"


def test_readme_quickstart_runs_as_written(capsys):
    readme = (REPO / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("1.0 "), printed


# -- the real-data layer: the same contract on the real samples in ../shared/data -------------------

def test_an_absent_sample_skips_saying_where_it_goes_and_where_it_comes_from(monkeypatch, tmp_path):
    from tests import samples

    monkeypatch.setattr(samples, "SHARED_DATA", tmp_path / "data")
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_data_or_skip("bytesized32", "test_sample.jsonl")
    reason = skipped.value.msg
    assert str(tmp_path / "data" / "bytesized32" / "test_sample.jsonl") in reason
    assert f"from {tmp_path / 'data'}" in reason and "copy that folder there" in reason
    assert "github.com/cognitiveailab/GPT-simulator" in reason


@pytest.mark.parametrize("env_id", ["RLVRWorld/TextGame-v0", "RLVRWorld/TextGame-TaskReward-v0"])
def test_llm_env_checker_on_real_bytesized32_rows(env_id):
    from rlvr_envs.core.checker import check_llm_env

    data_dir = str(shared_data_or_skip("bytesized32", "test_sample.jsonl").parents[1])
    env = gym.make(env_id, data_dir=data_dir, split="test_sample")
    check_llm_env(env, indices=list(range(len(env.unwrapped.task))), skip_gym_check=True)


def test_llm_env_checker_on_real_webarena_pairs():
    from rlvr_envs.core.checker import check_llm_env

    env = gym.make("RLVRWorld/WebState-v0", data_dir=real_wma_dir(), split="all")
    check_llm_env(env, indices=[0, 1], skip_gym_check=True)


def _responses(task, rng) -> list[list[int]]:
    gold = task.target_ids(0).tolist()
    return [gold, gold[: len(gold) // 2], [], rng.integers(0, task.vocab_size, size=12).tolist()]


@pytest.mark.parametrize("mode", ["sequence", "token"])
@pytest.mark.parametrize("env_id", IDS)
def test_single_and_vector_env_agree_step_for_step(env_id, mode):
    """One episode machine: the single env and row 0 of the batched vector env see the same
    observations, rewards, ends and results for the same actions."""
    single = make(env_id, mode=mode).unwrapped
    vector = gym.make_vec(env_id, num_envs=2, mode=mode, **registry_test_kwargs(env_id))
    task = single.task
    for response in _responses(task, np.random.default_rng(0)):
        obs_s, info_s = single.reset(options={"index": 0})
        obs_v, info_v = vector.reset(options={"index": 0})
        assert all(np.array_equal(obs_s[k], obs_v[k][0]) for k in obs_s) and info_s["uid"] == info_v["uid"][0]
        steps = [response] if mode == "sequence" else [*response, task.eos_token_id]
        for action in steps:
            obs_s, r_s, term_s, trunc_s, info_s = single.step(np.asarray(action))
            batch = [action, action]
            obs_v, r_v, term_v, trunc_v, info_v = vector.step(np.asarray(batch))
            # rewards agree to float32 rounding (a batched metric may sum in another order)
            assert np.isclose(r_s, r_v[0], rtol=1e-5, atol=1e-7) and (term_s, trunc_s) == (term_v[0], trunc_v[0])
            seen = info_v["final_obs"][0] if term_s else {k: v[0] for k, v in obs_v.items()}
            assert all(np.array_equal(obs_s[k], seen[k]) for k in obs_s)
            if term_s:
                final = info_v["final_info"]
                assert (info_s["parsed"], info_s["error"], info_s["max_reward"]) == \
                    (final["parsed"][0], final["error"][0], final["max_reward"][0])
                break


@pytest.mark.parametrize("env_id", IDS + ["RLVRWorld/MiniWeb-Goal-v0"])
def test_a_refused_reset_leaves_the_env_usable_through_gym_make(env_id):
    """Through gym.make's default wrappers: a reset refused for its options (a bad index, a
    typo'd key, options that are no mapping) changes nothing, and the next valid one steps."""
    env = gym.make(env_id, **(registry_test_kwargs(env_id) if env_id in IDS else {}))
    for options, error, says in (({"index": -1}, IndexError, "outside"), ({"idx": 3}, ValueError, "takes \\['index'\\]"),
                                 ("3", TypeError, "must be a dict"), ([3], TypeError, "must be a dict")):
        with pytest.raises(error, match=says):
            env.reset(options=options)
    obs, info = env.reset(seed=0, options={"index": None})  # None: a random transition, as on every id
    env.action_space.seed(0)
    assert len(env.step(env.action_space.sample())) == 5
    assert env.reset(options={"index": 1})[1]["index"] == 1


@pytest.mark.parametrize("env_id", sorted(SIMULATORS))
def test_plain_envs_refuse_unknown_reset_options_and_stay_usable(env_id):
    pytest.importorskip("torch")
    env = gym.make(env_id)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"physic": [0.0] * 10})
    env.reset(seed=0)
    env.step(env.action_space.sample())


def test_a_misspelt_kwarg_suggests_the_nearest_and_leaks_no_internals():
    with pytest.raises(TypeError) as caught:
        gym.make("RLVRWorld/MiniTextWorld-v0", rewrad="task")
    message = str(caught.value)
    assert message.startswith("RLVRWorld/MiniTextWorld-v0 got unknown argument(s) ['rewrad'] (did you mean reward=?)")
    assert "environment creator" not in message and "rlvr_envs." not in message and "env_id" not in message
