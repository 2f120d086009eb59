"""rlvr_envs.integrations: the TRL reward function and prompt dataset, the verl adapter, and
the held-out accuracy report (overall / changed / unchanged)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.samples import registry_test_kwargs

TEXT_CASES = {
    "RLVRWorld/MiniTextWorld-v0": {"split": "train", "size": 12},
    "RLVRWorld/MiniWeb-v0": {"split": "train", "size": 8},
    "RLVRWorld/TextGame-TaskReward-v0": None,  # generated rows in the ByteSized32 format
}


def text_kwargs(env_id: str) -> dict:
    return TEXT_CASES[env_id] if TEXT_CASES[env_id] is not None else registry_test_kwargs(env_id)


def columns(dataset) -> dict:
    return {"index": dataset["index"], "uid": dataset["uid"], "changed": dataset["changed"]}


@pytest.mark.parametrize("env_id", sorted(TEXT_CASES))
def test_trl_reward_gold_is_max_and_malformed_is_min(env_id):
    from rlvr_envs.integrations.trl import prompt_dataset, reward_function

    kwargs = text_kwargs(env_id)
    dataset = prompt_dataset(env_id, **kwargs)
    reward = reward_function(env_id, **kwargs)
    task = reward.task
    assert dataset.column_names == ["prompt", "index", "uid", "changed"]
    assert dataset["index"] == list(range(len(task)))
    # the string prompt TRL tokenizes is the task's prompt
    assert task.tokenizer(dataset["prompt"][0], add_special_tokens=False)["input_ids"] == task.prompt_ids(0).tolist()

    logged: dict[str, float] = {}
    gold = [task.target_text(i) for i in dataset["index"]]
    rewards = reward(prompts=dataset["prompt"], completions=gold, log_metric=logged.__setitem__, **columns(dataset))
    assert rewards == [task.max_reward(i) for i in dataset["index"]]
    name = reward.__name__
    assert logged[f"{name}/solved"] == 1.0 and logged[f"{name}/failure_rate"] == 0.0
    assert {f"{name}/metrics/{key}" for key in task.metric_keys} <= set(logged)  # every component is logged
    assert logged.get(f"{name}/solved_changed", 1.0) == 1.0

    bad = ["", "not an answer", "{\"modified\": ", "```json\n[1, 2]\n```"] * len(gold)
    bad = bad[: len(gold)]
    assert reward(prompts=dataset["prompt"], completions=bad, **columns(dataset)) == [task.min_reward] * len(gold)
    assert reward.last["parsed"] == 0.0 and reward.failures == 0  # malformed output is a score, not a failure

    # conversational completions and token ids verify the same way
    chat = [[{"role": "assistant", "content": text}] for text in gold]
    assert reward(prompts=None, completions=chat, index=dataset["index"]) == rewards
    ids_reward = reward_function(env_id, use_ids=True, **kwargs)
    gold_ids = [task.target_ids(i).tolist() + [task.eos_token_id] for i in dataset["index"]]
    assert ids_reward(prompts=None, completions=None, completion_ids=gold_ids, index=dataset["index"]) == rewards


def test_trl_reward_failures_are_counted_not_raised(monkeypatch):
    from rlvr_envs.integrations.trl import prompt_dataset, reward_function

    kwargs = TEXT_CASES["RLVRWorld/MiniTextWorld-v0"]
    dataset = prompt_dataset("RLVRWorld/MiniTextWorld-v0", **kwargs)
    reward = reward_function("RLVRWorld/MiniTextWorld-v0", **kwargs)
    task = reward.task
    gold = [task.target_text(i) for i in range(4)]
    index = [0, 1, 2, 3]

    def boom(indices, texts):
        raise RuntimeError("verifier exploded")

    monkeypatch.setattr(task, "verify_text", boom)
    logged: dict[str, float] = {}
    assert reward(prompts=None, completions=gold, index=index, log_metric=logged.__setitem__) == [task.min_reward] * 4
    assert reward.failures == 4 and "verifier exploded" in reward.errors[-1]
    assert logged[f"{reward.__name__}/failure_rate"] == 1.0
    monkeypatch.undo()

    # a batch failure is retried one by one: only the bad completion scores the minimum
    real = task.verify_text

    def picky(indices, texts):
        if len(indices) > 1 or indices[0] == 2:
            raise RuntimeError("batch too large")
        return real(indices, texts)

    monkeypatch.setattr(task, "verify_text", picky)
    rewards = reward(prompts=None, completions=gold, index=index)
    assert rewards == [1.0, 1.0, task.min_reward, 1.0] and reward.failures == 5
    monkeypatch.undo()

    # a missing index column, an index out of range, or rows of another task: min reward, counted
    assert reward(prompts=None, completions=gold) == [task.min_reward] * 4
    assert reward(prompts=None, completions=gold[:1], index=[10 ** 6]) == [task.min_reward]
    wrong_uid = [dataset["uid"][1]] + dataset["uid"][1:4]
    assert reward(prompts=None, completions=gold, index=index, uid=wrong_uid) == [task.min_reward, 1.0, 1.0, 1.0]
    assert reward.failures == 5 + 4 + 1 + 1  # the uid check fails one row, not the batch
    assert reward.calls == 5


def test_trl_reward_on_video_token_ids():
    from rlvr_envs.integrations.trl import prompt_dataset, reward_function

    env_id = "RLVRWorld/PushT-SingleStep-v0"
    kwargs = registry_test_kwargs(env_id)
    reward = reward_function(env_id, **kwargs)
    task = reward.task
    assert reward.use_ids
    dataset = prompt_dataset(env_id, task=task, indices=[0, 1])
    assert dataset.column_names == ["prompt_ids", "index", "uid", "changed"]
    gold = [task.target_ids(i).tolist() for i in dataset["index"]]
    rng = np.random.default_rng(0)
    noise = [rng.integers(0, max(g) + 1, len(g)).tolist() for g in gold]  # frame codes, decodable
    gold_rewards = reward(prompts=None, completions=None, completion_ids=gold, index=dataset["index"])
    noise_rewards = reward(prompts=None, completions=None, completion_ids=noise, index=dataset["index"])
    assert all(g >= n for g, n in zip(gold_rewards, noise_rewards))
    assert reward.failures == 0 and "metrics/mae" in reward.last


@pytest.mark.parametrize("env_id", sorted(TEXT_CASES))
def test_verl_compute_score_gold_is_max(env_id, tmp_path):
    import pyarrow.parquet as pq

    from rlvr_envs.integrations import verl
    from rlvr_envs.registration import task_from_env_id

    kwargs = dict(text_kwargs(env_id))
    task = task_from_env_id(env_id, **kwargs)
    split = kwargs.pop("split")
    path = verl.write_parquet(tmp_path / "rows.parquet", env_id, split=split, **kwargs)
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == len(task) and rows[0]["data_source"] == env_id
    assert rows[0]["prompt"][0]["content"] == task.prompt_text(0)
    for i, row in enumerate(rows):
        score = verl.compute_score(row["data_source"], task.target_text(i), row["reward_model"]["ground_truth"],
                                   row["extra_info"])
        assert score["score"] == task.max_reward(i) and score["solved"] == 1.0 and score["failed"] == 0.0
        assert set(task.metric_keys) <= set(score)
        # the locator in ground_truth alone is enough (older verl passes no extra_info)
        assert verl.compute_score(env_id, task.target_text(i), row["reward_model"]["ground_truth"])["score"] == \
            task.max_reward(i)
    bad = verl.compute_score(env_id, "no answer here", rows[0]["reward_model"]["ground_truth"], rows[0]["extra_info"])
    assert bad["score"] == task.min_reward and bad["parsed"] == 0.0 and bad["failed"] == 0.0


def test_verl_compute_score_never_raises():
    from rlvr_envs.integrations import verl

    before = sum(verl.FAILURES.values())
    env_id = "RLVRWorld/MiniTextWorld-v0"
    kwargs = {"split": "train", "size": 12}
    row = verl.rows(env_id, **kwargs)[3]
    cases = [
        (env_id, "{}", None),  # no locator
        (env_id, '{"index": 100000, "env_kwargs": {"split": "train", "size": 12}}', None),  # out of range
        (env_id, row["reward_model"]["ground_truth"].replace('"index": 3', '"index": 4'), None),  # uid mismatch
        ("RLVRWorld/NoSuchEnv-v0", row["reward_model"]["ground_truth"], row["extra_info"]),
    ]
    for source, truth, info in cases:
        score = verl.compute_score(source, "{}", truth, info)
        assert score["score"] == 0.0 and score["failed"] == 1.0
    assert sum(verl.FAILURES.values()) == before + len(cases)


def test_balanced_indices_and_accuracy_report_split_changed_from_unchanged():
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import accuracy_report, format_report
    from rlvr_envs.integrations.trl import balanced_indices

    task = task_from_env_id("RLVRWorld/MiniTextWorld-v0", split="train", size=12)
    indices = balanced_indices(task, seed=0)
    flags = [task.transition(i).changed for i in indices]
    assert flags.count(True) == flags.count(False) == max(flags.count(True), flags.count(False))
    assert balanced_indices(task, seed=0) == indices

    # gold answers on changed transitions, "nothing changes" guesses elsewhere
    every = list(range(len(task)))
    texts = [task.target_text(i) if task.transition(i).changed else "garbage" for i in every]
    report = accuracy_report(task, every, task.verify_text(every, texts))
    assert report["accuracy_changed"] == 1.0 and report["accuracy_unchanged"] == 0.0
    assert report["n_changed"] + report["n_unchanged"] == report["n"] == len(task)
    assert math.isclose(report["accuracy"], report["n_changed"] / report["n"])
    assert "changed 100.0% [" in format_report(report)
    # 14 of 30 right: the line says how little 30 transitions pin down (Wilson 95%: 30% to 64%)
    line = format_report({**report, "accuracy_changed": 14 / 30, "n_changed": 30})
    assert "changed  46.7% [30-64] of 30" in line
