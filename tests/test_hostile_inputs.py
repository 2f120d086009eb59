"""Hostile inputs finish in bounded time and score within [min, max] with a reason.

The catalogue lives in `benchmarks/experiments/hostile_inputs.py` (which also times it next to the
normal throughput); here every case is asserted: a response comes back in well under
`BOUND_S` seconds (each is built to take about a second or less, the bound leaves room
for a slow CI machine), its reward lies in [min, max], and a failed parse says why. Web
datasets built from trees of 100,000 look-alike items take seconds, not quadratic time
and memory.
"""

from __future__ import annotations

import functools
import json
import re
import time
import tracemalloc

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlvr_envs  # noqa: F401  (registers the ids)
from benchmarks.experiments.hostile_inputs import BOUND_S, action_cases, run_text_case, text_cases, tree_cases
from rlvr_envs.core.answer import (
    AnswerError, _fenced_blocks, extract_answer, parse_json_object, python_literals_to_json)
from rlvr_envs.web.acctree import TreeParseError, extract_changes, parse_item, parse_tree
from rlvr_envs.web.changes import parse_changes

ENV_IDS = ("RLVRWorld/MiniTextWorld-v0", "RLVRWorld/MiniWeb-v0")
TEXTS = text_cases()
#: complete text-game answers with hostile content: they must parse
TEXT_GAME_ANSWERS = {"1,000-character object key", "uuids in other digits", "400-digit integers",
                     "two answers 10 KB apart", "an answer and 100,000 stray '}'"}


@functools.cache
def env(env_id: str, mode: str = "sequence"):
    return gym.make(env_id, size=16, mode=mode)


@functools.cache
def text(case: str) -> str:
    return TEXTS[case]()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("case", list(TEXTS))
def test_hostile_text_through_verify_text(case, env_id):
    task = env(env_id).unwrapped.task
    result = run_text_case(task, text(case))
    assert result["seconds"] < BOUND_S, f"{case}: {result['seconds']:.2f} s"
    assert task.min_reward <= result["reward"] <= result["max"]
    if not result["parsed"]:
        assert result["reward"] == task.min_reward and result["error"], case
    must_refuse = {"over the size limit", "'[' * 10**6 (over the size limit)"}
    if "TextWorld" in env_id:
        must_refuse |= {"'[' * 400,000", "'{\"a\":' * 10**5", "balanced nesting 50,000 deep",
                        "JSON that json_repair is quadratic on", "unterminated string of 400 KB",
                        "100,000-digit JSON number"}
    if case in must_refuse:
        assert not result["parsed"] and result["reward"] == task.min_reward
    if "TextWorld" in env_id and case in TEXT_GAME_ANSWERS:  # a defect costs its field, never the answer
        assert result["parsed"], f"{case}: {result['error']}"


@pytest.mark.parametrize("case, reason", [
    ("'[' * 10**6 (over the size limit)", "response too long: 1,000,000 characters"),
    ("over the size limit", "response too long"),
    ("'{\"a\":' * 10**5", "truncated JSON"),
    ("balanced nesting 50,000 deep", "nested deeper than 100 levels"),
    ("JSON that json_repair is quadratic on", "^malformed JSON of 48,002 characters .only answers of at most 4,000"),
    ("unterminated string of 400 KB", "truncated JSON (unterminated string)"),
    ("100,000-digit JSON number", "unreadable JSON"),
    ("'[' * 400,000", "no JSON object"),
])
def test_refused_json_answers_say_why(case, reason):
    start = time.perf_counter()
    with pytest.raises(AnswerError, match=reason if reason.startswith("^") else
                       reason.replace("(", r"\(").replace(")", r"\)")):
        parse_json_object(text(case))
    assert time.perf_counter() - start < BOUND_S


def test_refused_web_answers_say_why():
    with pytest.raises(AnswerError, match="response too long"):
        parse_changes(text("over the size limit"))
    with pytest.raises(AnswerError, match="no 'New items:'"):
        parse_changes(text("4 KB line of spaces"))


@pytest.mark.parametrize("stray", ["}", "]", "} ]"])
def test_stray_closing_brackets_after_the_answer_are_ignored_at_any_length(stray):
    """No length cliff: the gold answer followed by stray closers reads as the gold answer, whether
    there are 2,000 of them (once repaired below MAX_REPAIR_CHARS) or 100,000."""
    gold = {"modified": [{"uuid": 1, "name": "x"}], "removed": [2], "score": {"score": 1}}
    for count in (1, 2_000, 4_000, 100_000):
        assert parse_json_object(json.dumps(gold) + stray * count) == gold, count
    task = env("RLVRWorld/MiniTextWorld-v0").unwrapped.task
    answer = task.target_text(0)
    rewards = {count: task.verify_text([0], [answer + "}" * count])[0].reward for count in (2_000, 4_000, 100_000)}
    assert set(rewards.values()) == {task.max_reward(0)}, rewards


def test_valid_large_json_still_parses():
    value = parse_json_object(text("valid JSON of 420 KB"))
    assert len(value["modified"]) == 5_000
    # harmless defects are repaired at any size by a linear rewrite, not json_repair
    repaired = parse_json_object("{'modified': [" + "{'uuid': 1, 'ok': True, 'x': None}, " * 5_000 + "], }")
    assert len(repaired["modified"]) == 5_000 and repaired["modified"][0] == {"uuid": 1, "ok": True, "x": None}


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "```", "a", "B", " ", "\t", "\n", "x y", "1"]), max_size=25).map("".join))
def test_fence_scan_equals_the_former_regular_expression(text):
    assert _fenced_blocks(text) == re.findall(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", text, re.DOTALL)


_python_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text("ab '\"\\\né", max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text("ab'\"", max_size=4), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=500, deadline=None)
@given(_python_values)
def test_python_literals_rewrite_reads_python_reprs(value):
    """Single quotes, True/False/None and trailing commas (the defects a model copies from
    Python) are repaired in one linear pass at any size."""
    text = repr(value)
    assert json.loads(python_literals_to_json(text)) == value
    if isinstance(value, (list, dict)) and value:
        assert json.loads(python_literals_to_json(text[:-1] + ",\n" + text[-1])) == value


def test_fenced_blocks_are_found_in_linear_time():
    for case in ("unclosed fence + 200 KB letters", "100k fences"):
        start = time.perf_counter()
        extract_answer(text(case))
        assert time.perf_counter() - start < BOUND_S
    assert extract_answer("a ```json\n{}\n``` b ```\nc 1\n``` d") == "c 1"


@pytest.mark.parametrize("line", [
    "[1] link 'a" + " " * 100_000 + "b",
    "[1] link" + " " * 100_000 + "x",
    "[1] link 'a' k: v" + " " * 100_000 + "x",
    "[1] link '" + "'a: " * 25_000,
    "[" + " " * 100_000 + "1" + " " * 100_000 + "] link",
    "[" + "9" * 100_000 + "] link 'x'",
    "[1] link 'a'" + " k: v" * 20_000,
])
def test_item_lines_parse_in_linear_time(line):
    start = time.perf_counter()
    try:
        parse_item(line)
    except TreeParseError:
        pass
    parse_tree(line + "\nTab 1" + " " * 100_000 + "x")
    assert time.perf_counter() - start < BOUND_S


#: the brief's size (10**5 identical items on each side) once, the other shapes at 20,000
#: to keep CI short (the benchmark runs all at 10**5)
TREE_CASES = {**tree_cases(20_000), "100,000 identical items": tree_cases(100_000)["100,000 identical items"]}


@pytest.mark.parametrize("case", list(TREE_CASES))
def test_dataset_build_on_look_alike_trees(case):
    from benchmarks.experiments.hostile_inputs import run_tree_case

    result = run_tree_case(TREE_CASES[case])
    # seconds for 10**5 items (quadratic extraction took 17 s and 688 MB for 2,000)
    assert result["extract_seconds"] < 5 * BOUND_S and result["parse_seconds"] < 5 * BOUND_S, result
    sections = result["sections"]
    before, after = result["items"]
    # every item is accounted for: matched (unchanged or updated), new or deleted
    assert before - sections["deleted"] == after - sections["new"]


def test_extraction_memory_is_linear():
    """Quadratic extraction needed a 4000 x 4000 matrix (~128 MB) for 2,000 look-alikes."""
    tree = "\n".join(f"[{i}] button 'Add to Cart'" for i in range(10_000))
    following = "\n".join(f"[{10_000 + i}] button 'Add to Cart'" for i in range(10_000))
    before, after = parse_tree(tree), parse_tree(following)
    tracemalloc.start()
    changes = extract_changes(before, after)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(changes.updated) == 10_000 and peak < 30 * 2**20  # quadratic: 10**8 cells, 1.6 GB


#: actions are checked at one door (rlvr_envs.core.actions): ids too large for int64 stay exact
#: (object arrays) and are named; non-integers and wrong shapes are refused by type
@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("case", list(action_cases(1024)))
def test_hostile_actions_through_gym_make(env_id, case):
    from benchmarks.experiments.hostile_inputs import run_action_case

    e = env(env_id)
    build, expected, bad = action_cases(e.unwrapped.task.vocab_size)[case]
    result = run_action_case(e, build(), expected)
    assert result["outcome"] == expected, result
    assert result["seconds"] < BOUND_S
    if expected == "oov":
        assert result["reward"] == 0.0 and result["terminated"]
        assert f"token id {bad} outside the vocabulary" in result["error"]
    elif expected == "ok":
        assert result["terminated"] and 0.0 <= result["reward"] <= 1.3


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_token_mode_out_of_range_ids(env_id):
    e = env(env_id, "token")
    for token in (2**63, 2**64 - 1, -1, np.uint64(2**63), e.unwrapped.task.vocab_size):
        e.reset(options={"index": 0})
        _, reward, terminated, _, info = e.step(token)
        assert terminated and reward == 0.0 and f"token id {int(token)} outside" in info["error"]
    for bad in (1.5, True, "None"):
        e.reset(options={"index": 0})
        with pytest.raises(TypeError):
            e.step(bad)
