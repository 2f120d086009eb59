"""ByteSized32 codec and verifier on the real sample rows in ../shared/data/bytesized32."""

from __future__ import annotations

import json
import math
import zipfile

import gymnasium as gym
import pytest

from rlvr_envs.text_game import bytesized32
from rlvr_envs.text_game import state as text_state
from rlvr_envs.core.answer import AnswerError, extract_answer, parse_json_object
from tests.samples import shared_data_or_skip


@pytest.fixture(scope="module")
def data_dir():
    shared_data_or_skip("bytesized32", "test_sample.jsonl")
    return str(shared_data_or_skip())


@pytest.fixture(scope="module", params=["binary", "task"])
def task(request, data_dir):
    from rlvr_envs.core.factory import build_task

    return build_task("rlvr_envs.text_game.task:ByteSized32Task", data_dir=data_dir, split="test_sample",
                      reward=request.param)


def score(task, index, text):
    ids = task.tokenizer(text, add_special_tokens=False)["input_ids"]
    return task.verify([index], [ids])[0]


def index_of(task, uid):
    return next(i for i in range(len(task)) if task.transition(i).uid == uid)


def test_every_gold_answer_scores_the_maximum(task):
    assert len(task) == 7
    for i in range(len(task)):
        gold = task.verify([i], [task.target_ids(i)])[0]
        assert gold.parsed and gold.reward == pytest.approx(task.max_reward(i))
        assert gold.metrics["exact"] == 1.0
    assert task.max_reward(0) == (1.0 if task.reward == "binary" else pytest.approx(0.3))


def test_created_object_is_rebuilt_and_scores_one(task):
    i = index_of(task, "volume-stone/437")  # turning on the sink creates water (ID: 5)
    diff = task.transition(i).target
    assert 5 in [obj["uuid"] for obj in diff["modified"]]
    result = score(task, i, task.target_text(i))
    assert result.metrics["exact"] == 1.0
    assert any(obj["uuid"] == 5 for obj in result.prediction["objects"])
    # forgetting the created object is wrong (the reference code could not tell)
    without = dict(diff, modified=[o for o in diff["modified"] if o["uuid"] != 5])
    assert score(task, i, json.dumps(without)).metrics["exact"] == 0.0


def test_changed_flags_follow_the_data(task):
    flags = {task.transition(i).uid: task.transition(i).changed for i in range(len(task))}
    # "inventory" changes nothing; the others change an object or (answer 396) the score
    assert flags == {"volume-stone/293": False, "bird-life-cycle/31": True, "bird-life-cycle/26": True,
                     "volume-stone/437": True, "volume-stone/763": True, "bird-life-cycle/74": True,
                     "volume-stone/264": True}
    for i in range(len(task)):
        t = task.transition(i)
        objects_differ = text_state.flatten_state(text_state.objects_by_uuid(t.state["objects"]), {}) != \
            text_state.flatten_state(text_state.objects_by_uuid(t.next_state["objects"]), {})
        assert t.changed == (objects_differ or t.state["score"] != t.next_state["score"])


def test_copying_the_current_state_gets_partial_credit_only(task):
    i = index_of(task, "bird-life-cycle/31")  # sit on egg: hatch 3 -> 4
    t = task.transition(i)
    nothing = {"modified": [], "removed": [], "score": t.state["score"]}
    result = score(task, i, json.dumps(nothing))
    assert result.parsed and result.metrics["exact"] == 0.0 and result.metrics["acc_changed"] == 0.0
    assert 0.9 < result.metrics["acc_objects"] < 1.0
    expected = 0.09 * result.metrics["acc_objects"] + 0.01 * 1.0
    assert result.metrics["task_reward"] == pytest.approx(expected)
    assert result.reward == (0.0 if task.reward == "binary" else pytest.approx(expected))


def test_unexpected_property_costs_one_field_not_everything(task):
    i = index_of(task, "bird-life-cycle/31")
    diff = json.loads(task.target_text(i))
    diff["modified"][0]["properties"]["color"] = "blue"
    result = score(task, i, json.dumps(diff))
    assert result.metrics["exact"] == 0.0 and result.metrics["acc_changed"] == 1.0
    assert result.metrics["acc_objects"] > 0.9


def test_contains_is_order_free_and_numbers_compare_by_value(task):
    i = index_of(task, "volume-stone/437")
    diff = json.loads(task.target_text(i))
    for obj in diff["modified"]:
        obj["contains"] = list(reversed(obj["contains"]))
        obj["properties"] = {k: float(v) if type(v) is int else v for k, v in obj["properties"].items()}
    assert score(task, i, json.dumps(diff)).metrics["exact"] == 1.0
    diff["modified"][0]["properties"]["isOn"] = 1  # a number is not a boolean
    assert score(task, i, json.dumps(diff)).metrics["exact"] == 0.0


def test_unchanged_transition_has_no_changed_term(task):
    i = index_of(task, "volume-stone/293")
    result = score(task, i, task.target_text(i))
    assert math.isnan(result.metrics["acc_changed"]) and result.metrics["n_changed_fields"] == 0


@pytest.mark.parametrize("wrap", [
    "{gold}",
    "<think>the sink turns on {{\"modified\": []}}</think>\n{gold}",
    "Reasoning first.\nFinal answer: {gold}",
    "Here it is:\n```json\n{gold}\n```\nDone.",
    "```json\n{{\"modified\": []}}\n```\nFINAL ANSWER:\n```json\n{gold}\n```",
])
def test_answer_is_found_after_reasoning_markers_and_fences(task, wrap):
    i = index_of(task, "volume-stone/437")
    gold = task.target_text(i)
    assert score(task, i, wrap.format(gold=gold)).metrics["exact"] == 1.0


def test_lenient_repair_of_harmless_defects():
    repaired = parse_json_object("{'modified': [], 'removed': [5,], \"score\": {\"score\": 0,},}")
    assert repaired == {"modified": [], "removed": [5], "score": {"score": 0}}


@pytest.mark.parametrize("text,reason", [
    ("", "no JSON object"),
    ("no json here", "no JSON object"),
    ('{"modified": [{"uuid": 2}', "truncated"),
    ('{"modified": [], "removed": [], "score": {"score": "0', "truncated"),
    ("[1, 2]", "no JSON object"),
])
def test_malformed_answers_raise_answer_error(text, reason):
    with pytest.raises(AnswerError, match=reason):
        parse_json_object(text)


FULL_SCORE = '"score": {"score": 0, "gameOver": false, "gameWon": false}'


@pytest.mark.parametrize("text,error", [
    ('{"modified": [], "removed": []}', "no 'score'"),
    ('{"removed": [], ' + FULL_SCORE + '}', "no 'modified'"),
    ('{"modified": {}, "removed": [], ' + FULL_SCORE + '}', "'modified' must be a list"),
    ('{"modified": [], "removed": 5, ' + FULL_SCORE + '}', "'removed' must be a list"),
    ('{"modified": [], "removed": [], "score": 3}', "'score' must be"),
    ('{"modified": [], "removed": [], "score": {}}', "score lacks 'score', 'gameOver', 'gameWon'"),
    ('{"modified": [], "removed": [], "score": {"score": 0, "gameover": false, "gameWon": false}}',
     "score lacks 'gameOver'"),
])
def test_malformed_differences_score_zero_with_reason(task, text, error):
    result = score(task, 0, text)
    assert result.reward == 0.0 and not result.parsed and error in result.error


def test_extract_answer_without_markers_returns_the_text():
    assert extract_answer("  {\"a\": 1}  ") == '{"a": 1}'


def test_zip_file_is_read_like_the_jsonl(tmp_path, data_dir):
    source = shared_data_or_skip("bytesized32", "test_sample.jsonl")
    with zipfile.ZipFile(tmp_path / "sample.zip", "w") as archive:
        archive.write(source, "sample.jsonl")
    assert bytesized32.load_rows(tmp_path / "sample.zip") == bytesized32.load_rows(source)


def test_corrupt_line_is_named_by_file_and_line(tmp_path):
    source = shared_data_or_skip("bytesized32", "test_sample.jsonl")
    lines = source.read_text().splitlines()
    lines[3] = lines[3][:50]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=r"bad\.jsonl:4: the JSON line is not valid JSON"):
        bytesized32.load_rows(bad)
    bad.write_text(json.dumps({"game": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: missing key"):
        bytesized32.load_rows(bad)


def test_missing_data_says_what_to_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="rlvr-world data bytesized32"):
        gym.make("RLVRWorld/TextGame-v0", data_dir=str(tmp_path))


def test_unknown_game_and_reward_fail_clearly(data_dir):
    with pytest.raises(ValueError, match="not in split"):
        gym.make("RLVRWorld/TextGame-v0", data_dir=data_dir, split="test_sample", games=["dishwasher"])
    with pytest.raises(ValueError, match="binary"):
        gym.make("RLVRWorld/TextGame-v0", data_dir=data_dir, split="test_sample", reward="f1")


def make_mirror(root, rows_path):
    """A local mirror in the upstream repository's layout (data/test.zip, rules/...)."""
    (root / "data").mkdir(parents=True)
    with zipfile.ZipFile(root / "data" / "test.zip", "w") as archive:
        archive.write(rows_path, "test.jsonl")
    rules = root / "rules" / "human_written_rules"
    rules.mkdir(parents=True)
    for path in shared_data_or_skip("bytesized32", "rules_human_written").iterdir():
        (rules / path.name).write_bytes(path.read_bytes())


def test_download_command_checks_what_it_fetched(tmp_path, monkeypatch, capsys):
    from rlvr_envs.cli import main

    make_mirror(tmp_path / "mirror", shared_data_or_skip("bytesized32", "test_sample.jsonl"))
    monkeypatch.setitem(bytesized32.EXPECTED_ROWS, "test", 7)
    argv = ["data", "bytesized32", "--data-dir", str(tmp_path / "data"), "--no-train",
            "--source", (tmp_path / "mirror").as_uri()]
    assert main(argv) == 0
    assert len(bytesized32.load_rows(bytesized32.split_file(tmp_path / "data", "test"))) == 7
    assert set(bytesized32.load_rules(tmp_path / "data")) >= {"volume-stone", "bird-life-cycle"}

    monkeypatch.setitem(bytesized32.EXPECTED_ROWS, "test", 2954)  # the real count: a short file is refused
    (tmp_path / "data" / "bytesized32" / "test.zip").unlink()
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "7 transitions, expected 2954" in err[0] and "retry the download" in err[0]
    assert not (tmp_path / "data" / "bytesized32" / "test.zip").exists()


def test_arbitrary_text_never_raises_and_stays_in_range(data_dir):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rlvr_envs.core.factory import build_task

    task = build_task("rlvr_envs.text_game.task:ByteSized32Task", data_dir=data_dir, split="test_sample",
                      reward="task")
    gold = task.target_text(1)
    pieces = st.sampled_from(['{"modified": [', "]", "}", '"removed": [2]', ", ", '"score": {}', "```json\n",
                              "Final answer:", "</think>", gold[:40], gold[40:], "'", "\\", "True", "null"])

    @settings(max_examples=150, deadline=None)
    @given(st.one_of(st.text(max_size=200), st.lists(pieces, max_size=12).map("".join)))
    def check(text):
        result = score(task, 1, text)
        assert 0.0 <= result.reward <= task.max_reward(1)
        assert result.parsed or (result.reward == 0.0 and result.error)

    check()
