"""The text-game rewards cannot be gamed: strict content, lenient syntax (issue 8).

Run on generated MiniTextWorld rows of every difficulty and on the real ByteSized32 sample
rows: the gold answer scores the maximum on every row; dropping or renaming any key of
it, or changing any value, scores strictly below the maximum on both rewards; the
constant answer scores 0.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr_envs.core.factory import build_task
from tests.samples import shared_data_or_skip

SOURCES = ("easy", "medium", "hard", "real")
ROWS_PER_DIFFICULTY = 32
CONSTANT = '{"modified": [], "removed": [], "score": {}}'


@pytest.fixture(scope="module")
def task_pairs():
    """{source: {"binary": task, "task": task}}, built once (the real one only if its data is here)."""
    built: dict[str, dict[str, Any]] = {}

    def get(source: str) -> dict[str, Any]:
        if source not in built:
            if source == "real":
                shared_data_or_skip("bytesized32", "test_sample.jsonl")
                kwargs = {"data_dir": str(shared_data_or_skip()), "split": "test_sample"}
                entry = "rlvr_envs.text_game.task:ByteSized32Task"
            else:
                kwargs = {"difficulty": source, "size": ROWS_PER_DIFFICULTY}
                entry = "rlvr_envs.text_game.task:MiniTextWorldTask"
            built[source] = {reward: build_task(entry, reward=reward, **kwargs) for reward in ("binary", "task")}
        return built[source]

    return get


def verify(task, index: int, text: str):
    return task.verify_text([index], [text])[0]


# -- mutations of a JSON answer ---------------------------------------------------------------

def sites(value: Any, path: tuple = ()):
    """(path, kind) of every key ("key": drop or rename it) and every node below the root
    ("value": change it) of a JSON value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield path + (key,), "key"
            yield from sites(child, path + (key,))
    elif isinstance(value, list):
        for position, child in enumerate(value):
            yield from sites(child, path + (position,))
    if path:
        yield path, "value"


def locate(answer: Any, path: tuple) -> tuple[Any, Any]:
    parent = answer
    for step in path[:-1]:
        parent = parent[step]
    return parent, path[-1]


def dropped(answer: dict, path: tuple) -> dict:
    answer = copy.deepcopy(answer)
    parent, key = locate(answer, path)
    del parent[key]
    return answer


def renamed(answer: dict, path: tuple, new_key: str) -> dict:
    answer = copy.deepcopy(answer)
    parent, key = locate(answer, path)
    assert new_key != key
    items = [(new_key if k == key else k, v) for k, v in parent.items()]
    parent.clear()
    parent.update(items)
    return answer


def changed(answer: dict, path: tuple, draw) -> dict:
    """`answer` with the node at `path` given a really different value (never one the
    lenient syntax would read as the same: 500 -> 500.0 or 5 -> "5" is no change)."""
    answer = copy.deepcopy(answer)
    parent, key = locate(answer, path)
    value = parent[key]
    if isinstance(value, bool):
        new = not value
    elif isinstance(value, (int, float)):
        new = value + draw(st.integers(-50, 50).filter(bool))
    elif isinstance(value, str):
        new = draw(st.text(max_size=12).filter(lambda text: text != value))
    elif value is None:
        new = draw(st.sampled_from([0, "", False, []]))
    elif isinstance(value, list):
        options = ["append", "scalar"] + (["remove"] if value else [])
        how = draw(st.sampled_from(options))
        if how == "remove":
            new = value[:]
            del new[draw(st.integers(0, len(value) - 1))]
        elif how == "append":
            new = value + [draw(st.one_of(st.integers(-3, 40), st.text(max_size=8), st.just({})))]
        else:
            new = draw(st.sampled_from(["x", 7, {}]))
    else:  # an object: replaced by something that is not one
        new = draw(st.sampled_from(["x", 7, [], None]))
    parent[key] = new
    return answer


def mutated(answer: dict, draw) -> tuple[dict, str]:
    """One random single mutation of `answer` and a description of it."""
    path, kind = draw(st.sampled_from(list(sites(answer))))
    if kind == "key":
        if draw(st.booleans()):
            return dropped(answer, path), f"drop {path}"
        new_key = draw(st.one_of(st.text(min_size=1, max_size=10),
                                 st.sampled_from([str(path[-1]).lower(), str(path[-1]).upper(), f"{path[-1]}s",
                                                  f" {path[-1]}", "id", "content"])).filter(lambda k: k != path[-1]))
        return renamed(answer, path, new_key), f"rename {path} -> {new_key!r}"
    return changed(answer, path, draw), f"change {path}"


def fixed_mutations(answer: dict):
    """Every single mutation with fixed choices (the exhaustive sweep), an added key included."""
    for path, kind in sites(answer):
        if kind == "key":
            yield dropped(answer, path), f"drop {path}"
            yield renamed(answer, path, f"{path[-1]}_"), f"rename {path}"
            continue
        parent, key = locate(answer, path)
        value = parent[key]
        if isinstance(value, bool):
            options = [not value]
        elif isinstance(value, (int, float)):
            options = [value + 1, value - 7]
        elif isinstance(value, str):
            options = [value + "x", value.upper() if value.upper() != value else value + " "]
        elif isinstance(value, list):
            options = [value[1:], value + [value[0]]] if value else [[1], ["x"]]
            options += ["x"]
        elif value is None:
            options = [0]
        else:  # an object, or one with a key no real one has (the 1,000-character key of issue 40)
            options = [7, [], {**value, "junk" * 250: 1}]
        for option in options:
            variant = copy.deepcopy(answer)
            target, last = locate(variant, path)
            target[last] = option
            yield variant, f"change {path} to {option!r}"[:120]


# -- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source", SOURCES)
def test_gold_scores_the_maximum_on_every_row(task_pairs, source):
    for reward, task in task_pairs(source).items():
        for i in range(len(task)):
            result = verify(task, i, task.target_text(i))
            assert result.parsed and result.reward == pytest.approx(task.max_reward(i)), (source, reward, i)
            assert result.metrics["n_defects"] == 0.0


@pytest.mark.parametrize("source", SOURCES)
def test_the_constant_answer_scores_zero(task_pairs, source):
    for reward, task in task_pairs(source).items():
        for i in range(len(task)):
            result = verify(task, i, CONSTANT)
            assert result.reward == 0.0 and not result.parsed, (source, reward, i)
            assert "score lacks" in result.error


@pytest.mark.parametrize("source", SOURCES)
def test_every_single_mutation_of_gold_scores_below_the_maximum(task_pairs, source):
    """The exhaustive sweep: drop and rename every key, change every value, of every row."""
    task = task_pairs(source)["task"]
    count = 0
    for i in range(len(task)):
        gold = json.loads(task.target_text(i))
        for answer, what in fixed_mutations(gold):
            result = verify(task, i, json.dumps(answer))
            assert result.reward < task.max_reward(i) - 1e-9, (source, i, what)
            assert result.metrics["exact"] == 0.0, (source, i, what)  # the binary reward
            count += 1
    assert count >= 10 * len(task)


@pytest.mark.parametrize("source", SOURCES)
def test_random_mutations_of_gold_score_below_the_maximum_on_both_rewards(task_pairs, source):
    pair = task_pairs(source)

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data):
        index = data.draw(st.integers(0, len(pair["task"]) - 1))
        gold = json.loads(pair["task"].target_text(index))
        answer, what = mutated(gold, data.draw)
        text = json.dumps(answer, indent=data.draw(st.sampled_from([None, 2])))
        for reward, task in pair.items():
            result = verify(task, index, text)
            assert 0.0 <= result.reward < task.max_reward(index) - 1e-9, (reward, index, what)

    check()


@pytest.mark.parametrize("source", ["easy", "real"])
def test_formatting_noise_keeps_the_maximum(task_pairs, source):
    """Key order, contains order, 500 vs 500.0, a uuid as digits, whitespace and fences are forgiven."""
    pair = task_pairs(source)

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def check(data):
        index = data.draw(st.integers(0, len(pair["task"]) - 1))
        gold = json.loads(pair["task"].target_text(index))
        rng = data.draw(st.randoms(use_true_random=False))

        def noisy(value, in_uuid=False):
            if isinstance(value, dict):
                items = [(k, noisy(v, in_uuid=k == "uuid")) for k, v in value.items()]
                rng.shuffle(items)
                return dict(items)
            if isinstance(value, list):
                return [noisy(v) for v in value]
            if isinstance(value, int) and not isinstance(value, bool):
                return rng.choice([value, float(value)] + ([str(value)] if in_uuid else []))
            return value

        answer = noisy(gold)
        for obj in answer["modified"]:
            rng.shuffle(obj["contains"])
        text = json.dumps(answer, indent=rng.choice([None, 1, 4]))
        text = rng.choice(["{}", "```json\n{}\n```", "Thinking...</think>\nFinal answer:\n{}\n"]).format(text)
        for reward, task in pair.items():
            assert verify(task, index, text).reward == pytest.approx(task.max_reward(index)), reward

    check()


# -- the shortcuts issue 8 names, one by one ---------------------------------------------------------

def changing_row(task) -> int:
    """A row whose gold modifies at least one object with a non-empty `contains`."""
    for i in range(len(task)):
        target = task.transition(i).target
        if task.transition(i).changed and any(obj["contains"] for obj in target["modified"]):
            return i
    raise AssertionError("no suitable row")


@pytest.mark.parametrize("source", ["easy", "real"])
def test_score_shortcuts_are_incomplete_answers(task_pairs, source):
    for reward, task in task_pairs(source).items():
        for i in range(len(task)):
            gold = json.loads(task.target_text(i))
            for score in ({}, {"score": gold["score"]["score"], "gameover": gold["score"]["gameOver"],
                               "gameWon": gold["score"]["gameWon"]}):
                result = verify(task, i, json.dumps(dict(gold, score=score)))
                assert result.reward == 0.0 and not result.parsed and "score lacks" in result.error


@pytest.mark.parametrize("source", ["easy", "real"])
def test_a_missing_contains_is_not_an_empty_one(task_pairs, source):
    pair = task_pairs(source)
    i = changing_row(pair["task"])
    gold = json.loads(pair["task"].target_text(i))
    for obj in gold["modified"]:
        obj.pop("contains")
    for reward, task in pair.items():
        result = verify(task, i, json.dumps(gold))
        assert result.parsed and result.metrics["exact"] == 0.0 and result.reward < task.max_reward(i)


@pytest.mark.parametrize("source", ["easy", "real"])
def test_unknown_removal_costs_a_field(task_pairs, source):
    pair = task_pairs(source)
    for i in range(len(pair["task"])):
        gold = json.loads(pair["task"].target_text(i))
        unknown = max(obj["uuid"] for obj in pair["task"].transition(i).state["objects"]) + 100
        for extra in (unknown, "stone (ID: 3)", gold["removed"][0] if gold["removed"] else unknown + 1):
            answer = dict(gold, removed=gold["removed"] + [extra])
            for reward, task in pair.items():
                result = verify(task, i, json.dumps(answer))
                assert result.parsed and result.metrics["exact"] == 0.0 and result.metrics["n_defects"] == 1
                assert result.reward < task.max_reward(i)
                assert any("removed[" in reason for reason in result.prediction["defects"])


def test_defects_of_modified_entries_cost_one_field_each(task_pairs):
    task = task_pairs("easy")["task"]
    i = changing_row(task)
    gold = json.loads(task.target_text(i))
    first = gold["modified"][0]
    for extra, reason in [(7, "is not an object"), ({"name": "x"}, "has no uuid"),
                          ({"uuid": "two"}, "not an integer"), (dict(first), "repeats uuid")]:
        result = verify(task, i, json.dumps(dict(gold, modified=gold["modified"] + [extra])))
        assert result.parsed and result.metrics["n_defects"] == 1 and result.metrics["exact"] == 0.0
        assert reason in result.prediction["defects"][0]
        assert result.metrics["acc_changed"] == 1.0  # the rest of the answer still counts


def with_change(answer: dict, change) -> dict:
    """A deep copy of `answer` with `change(copy)` applied."""
    answer = copy.deepcopy(answer)
    change(answer)
    return answer


@pytest.mark.parametrize("source", ["easy", "real"])
def test_an_unknown_object_key_costs_like_an_unknown_property(task_pairs, source):
    pair = task_pairs(source)
    i = changing_row(pair["task"])
    gold = json.loads(pair["task"].target_text(i))
    junk = "junk" * 250
    on_object = with_change(gold, lambda answer: answer["modified"][0].update({junk: 1}))
    on_properties = with_change(gold, lambda answer: answer["modified"][0]["properties"].update({junk: 1}))
    for reward, task in pair.items():
        result = verify(task, i, json.dumps(on_object))
        assert result.parsed and result.metrics["exact"] == 0.0 and result.reward < task.max_reward(i)
        assert result.reward == verify(task, i, json.dumps(on_properties)).reward, reward


@pytest.mark.parametrize("source", ["easy", "real"])
def test_only_ascii_digits_are_uuids(task_pairs, source):
    """A uuid in Arabic-Indic or fullwidth digits names no object (`int` would read both)."""
    pair = task_pairs(source)
    i = changing_row(pair["task"])
    gold = json.loads(pair["task"].target_text(i))
    uuid = str(gold["modified"][0]["uuid"])
    for digits in ("٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９"):
        written = uuid.translate(str.maketrans("0123456789", digits))
        answer = with_change(gold, lambda answer: answer["modified"][0].update(uuid=written))
        for reward, task in pair.items():
            result = verify(task, i, json.dumps(answer, ensure_ascii=False))
            assert result.parsed and result.metrics["exact"] == 0.0, (reward, written)
            assert "not an integer" in result.prediction["defects"][0]


@pytest.mark.parametrize("source", ["easy", "real"])
def test_an_unreadable_value_costs_its_field_not_the_answer(task_pairs, source):
    """A uuid `int` refuses, or an integer no float holds, is one wrong field: the same
    reward as an ordinary wrong value there, never the minimum for the whole answer."""
    pair = task_pairs(source)
    i = changing_row(pair["task"])
    gold = json.loads(pair["task"].target_text(i))
    key = next(iter(gold["modified"][0]["properties"]))
    cases = [(lambda answer, v=v: answer["removed"].append(v), lambda answer: answer["removed"].append("stone"))
             for v in ("²", "--5", "9" * 5_000)]
    cases.append((lambda answer: answer["modified"][0]["properties"].update({key: 10**400}),
                  lambda answer: answer["modified"][0]["properties"].update({key: "surely wrong"})))
    for unreadable, ordinary in cases:
        for reward, task in pair.items():
            result = verify(task, i, json.dumps(with_change(gold, unreadable)))
            assert result.parsed and result.metrics["exact"] == 0.0, result.error
            assert result.reward == verify(task, i, json.dumps(with_change(gold, ordinary))).reward, reward
            if reward == "task":
                assert result.reward > 1.0  # only the one field is lost (the answer used to score 0)


@pytest.mark.parametrize("length", [1_000, 10_000])
def test_the_last_of_several_objects_is_the_answer_at_any_length(task_pairs, length):
    """`{wrong} ... {gold}` reads the gold and `{gold} ... {wrong}` the wrong one, whether the
    response is short or long (a repair used to decide, and only under 4,000 characters)."""
    task = task_pairs("easy")["binary"]
    i = changing_row(task)
    gold = task.target_text(i)
    wrong = json.dumps(with_change(json.loads(gold), lambda answer: answer["score"].update(score=-99)))
    for first, last, expected in ((wrong, gold, 1.0), (gold, wrong, 0.0)):
        prose = "\nOn second thought [that's not it], let me check again.\n"
        filler = prose * (1 + max(0, length - len(first) - len(last)) // len(prose))
        text = first + filler + last
        assert len(text) >= length
        result = verify(task, i, text)
        assert result.parsed and result.reward == expected, (length, expected)
    cut_off = gold + filler + gold[: len(gold) // 2] + "}"  # a truncated last object ends in a "}" too
    assert not verify(task, i, cut_off).parsed


def test_score_only_change_counts_as_changed_fields(task_pairs):
    """A transition that changes only the score has the maximum 1.3 (the reference: 0.3)."""
    task = task_pairs("real")["task"]
    i = next(k for k in range(len(task)) if task.transition(k).uid == "volume-stone/264")
    t = task.transition(i)
    assert t.target["modified"] == [] and t.target["removed"] == [] and t.changed
    assert task.max_reward(i) == pytest.approx(1.3)
    stale = dict(t.target, score=t.state["score"])
    result = verify(task, i, json.dumps(stale))
    # the answer 264 ends the game: only gameOver changes
    assert result.metrics["n_changed_fields"] == 1 and result.metrics["acc_changed"] == 0.0
    assert result.reward == pytest.approx(0.09 + 0.01 * 2 / 3)
