"""The env and vector-env mechanics, on a tiny in-test task (a test double of `Task`)."""

from __future__ import annotations

import numpy as np
import pytest

from rlvr_envs.core.env import NextStatePredictionEnv
from rlvr_envs.core.task import Task
from rlvr_envs.core.types import RewardResult, Transition
from rlvr_envs.core.vector import BatchedNextStatePredictionVectorEnv

EOS = 0


class EchoTask(Task):
    """Transition i: prompt [i+1]*3, gold answer [i+1, i+1]; reward = share of gold positions
    matched. With `forced=True` the env inserts token 9 after every two agent tokens and the
    response is complete after six tokens (like action tokens between video frames)."""

    name = "echo"
    vocab_size, eos_token_id, pad_token_id = 10, EOS, EOS
    max_prompt_len, max_response_len = 3, 6

    def __init__(self, forced: bool = False):
        self.forced = forced
        self.verify_calls = 0

    def __len__(self):
        return 4

    def transition(self, index):
        return Transition(uid=f"echo/{index}", state=index, action=None, next_state=index)

    def prompt_ids(self, index):
        return np.full(3, index + 1, dtype=np.int64)

    def target_ids(self, index):
        return np.full(2, index + 1, dtype=np.int64)

    def decode(self, index, response_ids):
        return (list(response_ids), None) if len(response_ids) else (None, "empty")

    def verify(self, indices, responses):
        self.verify_calls += 1
        out = []
        for index, response in zip(indices, responses):
            if len(response) == 0:
                out.append(RewardResult.failure(0.0, "empty response"))
                continue
            agent = [t for t in response if not (self.forced and t == 9)]
            hits = sum(a == b for a, b in zip(agent, self.target_ids(index)))
            out.append(RewardResult(reward=hits / 2, metrics={"hits": float(hits)}, prediction=agent))
        return out

    def forced_tokens(self, index, response_ids):
        if self.forced and response_ids and len(response_ids) % 3 == 2:
            return (9,)
        return ()

    def is_complete(self, index, response_ids):
        return self.forced and len(response_ids) >= 6


def test_token_mode_rewards_only_at_the_end():
    env = NextStatePredictionEnv(EchoTask(), mode="token")
    obs, info = env.reset(options={"index": 2})
    assert info["index"] == 2 and obs["prompt_len"][0] == 3
    _, r1, done1, _, _ = env.step(np.array([3]))  # size-1 arrays are accepted like scalars
    obs, r2, done2, trunc, info = env.step(EOS)
    assert (r1, done1) == (0.0, False) and done2 and not trunc
    assert r2 == 0.5 and info["metrics"] == {"hits": 1.0} and info["parsed"]
    assert obs["response_len"][0] == 1 and obs["response"][0] == 3
    with pytest.raises(RuntimeError, match="reset"):
        env.step(1)


def test_token_mode_length_limit_terminates_and_scores():
    env = NextStatePredictionEnv(EchoTask(), mode="token")
    env.reset(options={"index": 0})
    for step in range(6):
        _, reward, terminated, truncated, info = env.step(1)
        assert not truncated
    assert terminated and reward == 1.0 and info["response_len"] == 6


def test_sequence_mode_ignores_tokens_after_eos_and_cuts_overlong():
    env = NextStatePredictionEnv(EchoTask())
    env.reset(options={"index": 1})
    _, reward, terminated, _, info = env.step(np.array([2, 2, EOS, 5, 5, 5]))
    assert terminated and reward == 1.0 and info["response_len"] == 2
    env.reset(options={"index": 1})
    _, _, _, _, info = env.step(np.array([2] * 20))
    assert info["response_len"] == 6
    env.reset(options={"index": 1})
    with pytest.raises(TypeError, match="integer"):
        env.step(np.array([2.0, 2.0]))


def test_empty_and_out_of_range_index():
    env = NextStatePredictionEnv(EchoTask())
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step(np.array([EOS]))
    assert reward == 0.0 and info["error"] == "empty response" and not info["parsed"]
    with pytest.raises(IndexError, match="4 transitions"):
        env.reset(options={"index": 4})


def test_forced_tokens_are_inserted_and_complete_structure_ends_the_episode():
    env = NextStatePredictionEnv(EchoTask(forced=True), mode="token")
    env.reset(options={"index": 0})
    env.step(1)
    obs, *_ = env.step(1)
    assert obs["response"][:3].tolist() == [1, 1, 9]
    env.step(4)
    _, reward, terminated, _, info = env.step(4)
    assert terminated and info["response_len"] == 6 and reward == 1.0


def test_vector_group_reset_puts_every_copy_on_one_transition():
    vec = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=4)
    obs, info = vec.reset(seed=0, options={"index": 3})
    assert info["index"].tolist() == [3, 3, 3, 3] and (obs["prompt"] == 4).all()
    obs, info = vec.reset(options={"index": [0, 1, 2, 3]})
    assert info["index"].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="4 ints"):
        vec.reset(options={"index": [0, 1]})


def test_vector_step_verifies_once_and_matches_single_envs():
    task = EchoTask()
    vec = BatchedNextStatePredictionVectorEnv(task, num_envs=3)
    vec.reset(seed=1, options={"index": [0, 1, 2]})
    actions = np.array([[1, 1, 0, 0, 0, 0], [2, 5, 0, 0, 0, 0], [7, 7, 0, 0, 0, 0]])
    before = task.verify_calls
    obs, rewards, terminated, truncated, info = vec.step(actions)
    assert task.verify_calls == before + 1
    singles = []
    for i, action in enumerate(actions):
        env = NextStatePredictionEnv(task)
        env.reset(options={"index": i})
        singles.append(env.step(action)[1])
    assert rewards.tolist() == singles == [1.0, 0.5, 0.0]
    assert terminated.all() and not truncated.any()
    assert info["final_info"]["metrics"]["hits"].tolist() == [2.0, 1.0, 0.0]
    assert info["final_obs"][1]["response"][:2].tolist() == [2, 5]
    assert info["_index"].all()  # the returned obs already belongs to the next episode


def test_vector_token_mode_autoresets_only_finished_envs():
    vec = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2, mode="token")
    vec.reset(seed=0, options={"index": [0, 0]})
    obs, rewards, terminated, _, info = vec.step(np.array([1, 1]))
    assert not terminated.any()
    obs, rewards, terminated, _, info = vec.step(np.array([EOS, 1]))
    assert terminated.tolist() == [True, False] and rewards.tolist() == [0.5, 0.0]
    assert obs["response_len"][:, 0].tolist() == [0, 2]
    assert info["_final_info"].tolist() == [True, False]


def test_group_helpers_score_g_responses_on_one_transition():
    import gymnasium as gym

    from rlvr_envs.core.groups import group_advantages, make_group, score_group
    from tests.samples import registry_test_kwargs

    env_id = "RLVRWorld/TextGame-v0"
    group = make_group(env_id, 3, **registry_test_kwargs(env_id))
    task = group.task
    gold = task.target_ids(1).tolist()
    rewards, infos = score_group(group, 1, [gold, gold[:5], []])
    assert rewards.tolist() == [1.0, 0.0, 0.0] and infos["index"].tolist() == [1, 1, 1]
    assert infos["parsed"].tolist() == [True, False, False]
    adv = group_advantages(rewards)
    assert adv[0] > 0 > adv[1] and abs(adv.sum()) < 1e-9
    assert isinstance(gym.make(env_id, **registry_test_kwargs(env_id)).unwrapped.task, type(task))


def test_group_advantages_are_trls_for_numpy_and_torch():
    """One definition for the video loop (torch) and users' own samplers (NumPy): TRL's
    GRPOTrainer, (r - group mean) / (nanstd + 1e-4), nanstd Bessel-corrected."""
    import torch
    from trl.trainer.utils import nanstd

    from rlvr_envs.core.groups import group_advantages

    rewards = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
    trl = (rewards - rewards.mean(dim=1, keepdim=True)) / (nanstd(rewards, dim=1).unsqueeze(1) + 1e-4)
    torch.testing.assert_close(group_advantages(rewards), trl)
    np.testing.assert_allclose(group_advantages(rewards.numpy().tolist()), trl.numpy(), rtol=1e-6)
    assert group_advantages(rewards.numpy()).dtype == np.float64
    np.testing.assert_allclose(group_advantages([1.0, 3.0], scale=False), [-1.0, 1.0])


# -- actions are validated at the door, in both modes and both envs ------------------------------

@pytest.mark.parametrize("bad", [2.0, np.float32(1), "3", True, np.array([1.5]), None])
@pytest.mark.parametrize("vector", [False, True])
def test_token_mode_rejects_non_integer_actions(bad, vector):
    if vector:
        env = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2, mode="token")
        env.reset(options={"index": 0})
        with pytest.raises(TypeError, match="integer"):
            env.step([1, bad])
        # nothing moved: the valid action of the same batch was not applied either
        obs, *_ = env.step(np.array([1, 1]))
        assert obs["response_len"][:, 0].tolist() == [1, 1]
    else:
        env = NextStatePredictionEnv(EchoTask(), mode="token")
        env.reset(options={"index": 0})
        with pytest.raises(TypeError, match="integer"):
            env.step(bad)
        _, reward, terminated, _, _ = env.step(1)  # the episode is intact
        assert not terminated


@pytest.mark.parametrize("bad", [2**63, 2**64 + 5, -1, 10, np.uint64(2**64 - 1)])
def test_out_of_vocabulary_token_scores_the_minimum_and_names_the_token(bad):
    env = NextStatePredictionEnv(EchoTask(), mode="token")
    env.reset(options={"index": 1})
    env.step(2)
    obs, reward, terminated, _, info = env.step(bad)
    assert terminated and reward == 0.0 and not info["parsed"]
    assert str(int(bad)) in info["error"] and "vocabulary" in info["error"]
    assert obs["response"][:1].tolist() == [2] and obs["response_len"][0] == 1
    env.reset(options={"index": 1})  # the next episode is clean
    env.step(2)
    env.step(2)
    assert env.step(EOS)[1] == 1.0


@pytest.mark.parametrize("vector", [False, True])
def test_sequence_mode_out_of_vocabulary_ids_score_the_minimum(vector):
    huge = np.array([2, 2**64 - 1], dtype=np.uint64)  # would wrap to -1 if cast to int64
    as_list = [2, 2**70]  # arrives as an object array
    as_floats = [2, 2**63 + 5]  # numpy would make this list float64
    for action, named in ((huge, str(2**64 - 1)), (as_list, str(2**70)), (as_floats, str(2**63 + 5)),
                          (np.array([2, -3]), "-3")):
        if vector:
            env = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2)
            env.reset(options={"index": 1})
            _, rewards, _, _, info = env.step([action, np.array([2, 2])])
            assert rewards.tolist() == [0.0, 1.0] and named in info["final_info"]["error"][0]
        else:
            env = NextStatePredictionEnv(EchoTask())
            env.reset(options={"index": 1})
            _, reward, _, _, info = env.step(action)
            assert reward == 0.0 and named in info["error"]


def test_step_before_reset_is_a_clear_error():
    with pytest.raises(RuntimeError, match="reset"):
        NextStatePredictionEnv(EchoTask()).step(np.array([1]))
    with pytest.raises(RuntimeError, match="reset"):
        BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2).step(np.array([[1], [1]]))


# -- one action check at every door (rlvr_envs.core.actions): the documented error types ---------

#: (action, error type, message fragment): the cases issue 33 found slipping through
SEQUENCE_BAD_ACTIONS = {
    "ragged list": ([[1, 2], [3]], TypeError, "rectangular array of integer"),
    "None": (None, TypeError, "None"),
    "string": ("1 2", TypeError, "integer token ids, got str"),
    "bools": ([True, False], TypeError, "integer"),
    "complex": (np.array([1 + 2j]), TypeError, "integer"),
    "floats": (np.array([2.0, 2.0]), TypeError, "integer"),
    "2-D array": (np.array([[2, 2], [2, 2]]), ValueError, "1-D"),
    "3-D array": (np.ones((2, 2, 2), dtype=np.int64), ValueError, "1-D"),
    "masked array": (np.ma.masked_array([2, 2, 5], mask=[0, 0, 1]), TypeError, "masked"),
}


@pytest.mark.parametrize("case", sorted(SEQUENCE_BAD_ACTIONS))
@pytest.mark.parametrize("vector", [False, True])
def test_sequence_mode_refuses_bad_actions_with_the_documented_type(case, vector):
    action, error, match = SEQUENCE_BAD_ACTIONS[case]
    if vector:
        env = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2)
        env.reset(options={"index": 1})
        with pytest.raises(error, match=match):
            env.step([np.array([2, 2]), action])
        _, rewards, *_ = env.step([np.array([2, 2])] * 2)  # nothing moved: the batch is intact
        assert rewards.tolist() == [1.0, 1.0]
    else:
        env = NextStatePredictionEnv(EchoTask())
        env.reset(options={"index": 1})
        with pytest.raises(error, match=match):
            env.step(action)
        assert env.step(np.array([2, 2]))[1] == 1.0


@pytest.mark.parametrize("action, error", [(np.array([[1]]), ValueError), ([1, 1], ValueError),
                                           (np.ma.masked_array([1], mask=[1]), TypeError), ([[1], [2, 3]], TypeError)])
def test_token_mode_refuses_wrong_shapes_and_masks(action, error):
    env = NextStatePredictionEnv(EchoTask(), mode="token")
    env.reset(options={"index": 0})
    with pytest.raises(error):
        env.step(action)


@pytest.mark.parametrize("actions, error, match", [
    (None, TypeError, "batch of 2 actions"), (5, TypeError, "batch of 2 actions"), ({"a": 1}, TypeError, "batch"),
    ("ab", TypeError, "batch"), (np.array(3), ValueError, "scalar"), ([1, 1, 1], ValueError, "expected 2"),
    (np.ma.masked_array([1, 1], mask=[0, 1]), TypeError, "masked")])
def test_vector_step_refuses_a_bad_batch_with_a_clear_message(actions, error, match):
    env = BatchedNextStatePredictionVectorEnv(EchoTask(), num_envs=2, mode="token")
    env.reset(options={"index": 0})
    with pytest.raises(error, match=match):
        env.step(actions)


def test_needs_extra_names_the_extra_and_keeps_real_bugs():
    from rlvr_envs.core.extras import MissingExtraError, needs_extra

    with pytest.raises(MissingExtraError, match=r"^the thing needs the \[train\] extra \(trl is not installed\): "
                                                r"pip install 'rlvr-world\[train\]'$"):
        with needs_extra("the thing"):
            raise ModuleNotFoundError("No module named 'trl'", name="trl")
    with pytest.raises(MissingExtraError, match=r"\[web-agent\]"):  # an explicit extra wins over the default
        with needs_extra("the MiniWeb agent", extra="web-agent"):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):  # not an optional dependency: a real bug
        with needs_extra("the thing"):
            raise ModuleNotFoundError("No module named 'no_such_module'", name="no_such_module")


def test_run_record_has_one_format_and_flags_a_busy_machine(monkeypatch):
    import argparse
    import os

    from rlvr_envs.core import records

    loads = iter([(0.1, 0, 0), (9.0 * (os.cpu_count() or 1), 0, 0)])
    monkeypatch.setattr(records.os, "getloadavg", lambda: next(loads))
    record = records.RunRecord("python -m benchmarks.x", argparse.Namespace(steps=3, quiet=True, out=None))
    run = record.finish()
    assert set(run) == {"program", "command", "argv", "machine", "load", "start", "end", "seconds", "threads",
                        "cpu_share", "git_commit"}
    assert run["command"] == "python -m benchmarks.x --steps 3 --quiet" and run["load"]["busy"] is True
    assert run["start"] <= run["end"] and run["seconds"] >= 0 and "cores" in run["machine"]


def test_every_observation_is_a_fresh_array_the_user_may_keep_and_change():
    """Observations are copies of the task's cached blank row: changing one (as a rollout
    buffer might) changes neither the cache nor any later observation."""
    env = NextStatePredictionEnv(EchoTask())
    first, _ = env.reset(options={"index": 1})
    after, *_ = env.step(np.array([2, 2, EOS, 0, 0, 0]))
    assert not any(np.shares_memory(first[key], after[key]) for key in first)
    assert not env.task.blank_observation(1).flags.writeable
    for obs in (first, after):
        for array in obs.values():
            array[...] = 7
    again, _ = env.reset(options={"index": 1})
    assert again["prompt"].tolist() == [2, 2, 2] and again["prompt_len"].tolist() == [3]
    assert again["response"].tolist() == [EOS] * 6 and again["response_len"].tolist() == [0]
    final, *_ = env.step([2, 2])
    assert final["response"].tolist() == [2, 2, EOS, EOS, EOS, EOS] and final["response_len"].tolist() == [2]


def test_reset_index_is_an_integer_in_range_never_truncated_or_parsed():
    """options['index'] takes Python and numpy integers; 1.9, "3" and True are refused, not read
    as 1, 3 and 1; an index past the end is refused as both an IndexError and a bad value."""
    import gymnasium as gym
    import numpy as np

    env = gym.make("RLVRWorld/MiniTextWorld-v0")
    assert env.reset(options={"index": np.int64(3)})[1]["index"] == 3
    for bad in (1.9, "3", True, np.float32(2.0)):
        with pytest.raises(TypeError, match="must be an integer"):
            env.reset(options={"index": bad})
    for bad in (-1, 10**30):
        with pytest.raises(IndexError, match="outside"):
            env.reset(options={"index": bad})
        with pytest.raises(ValueError, match="outside"):
            env.reset(options={"index": bad})


def test_a_bf16_tensor_action_is_read_not_called_ragged():
    import torch

    from rlvr_envs.core.actions import integer_array, real_array

    assert real_array(torch.tensor([1.5, 2.5], dtype=torch.bfloat16), "a chunk").tolist() == [1.5, 2.5]
    assert integer_array(torch.tensor([4, 5]), "a response").tolist() == [4, 5]
    with pytest.raises(TypeError, match="bool"):  # numpy alone would read [1, True] as [1, 1]
        integer_array([1, True], "a response")
