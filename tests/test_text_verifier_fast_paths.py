"""The text-game verifier's fast paths score exactly what the plain definitions score (issue 33).

Three shortcuts make the verifier cheaper, and each must change no reward or metric:
- `RebuiltState.flatten(known=...)` reuses the fields of objects the answer left untouched;
- `score_prediction` finds a right answer with one dict comparison and counts wrong fields once;
- `parse_json_object(required_keys=...)` refuses, before the slow repair, text that never names a key.
Each is checked against the plain definition on every single mutation of gold answers (generated
MiniTextWorld rows and the real ByteSized32 sample), on removals, creations and defects.
"""

from __future__ import annotations

import json
import math

import pytest

from rlvr_envs.core.answer import AnswerError, parse_json_object
from rlvr_envs.text_game import state as text_state
from tests.test_text_game_rewards import fixed_mutations, task_pairs  # noqa: F401  (fixture)

SOURCES = ("easy", "hard", "real")
_MISSING = ("<missing>",)


def plain_metrics(current_flat, gold_flat, predicted_flat) -> dict[str, float]:
    """The metrics straight from their definition: a field (a key of either side) is right iff
    both sides give it the same value."""
    def agree(keys):
        keys = list(keys)
        return sum(gold_flat.get(k, _MISSING) == predicted_flat.get(k, _MISSING) for k in keys), len(keys)

    keys = gold_flat.keys() | predicted_flat.keys()
    obj_ok, obj_n = agree(k for k in keys if k[0] != "score")
    score_ok, score_n = agree(k for k in keys if k[0] == "score")
    changed = {k for k in current_flat.keys() | gold_flat.keys()
               if current_flat.get(k, _MISSING) != gold_flat.get(k, _MISSING)}
    changed_ok, changed_n = agree(changed)
    acc_objects = obj_ok / obj_n if obj_n else 1.0
    acc_score = score_ok / score_n if score_n else 1.0
    exact = float(obj_ok == obj_n and score_ok == score_n)
    task_reward = (text_state.W_OBJECTS * acc_objects + text_state.W_SCORE * acc_score + text_state.W_EXACT * exact
                   + (text_state.W_CHANGED * changed_ok / changed_n if changed_n else 0.0))
    return {"exact": exact, "acc_objects": acc_objects, "acc_score": acc_score,
            "acc_changed": changed_ok / changed_n if changed_n else math.nan, "n_changed_fields": float(changed_n),
            "n_defects": float(sum(k[0] == "answer" for k in predicted_flat)), "task_reward": task_reward}


def answers(task, index: int):
    """The gold answer of `index`, every single mutation of it, and answers that remove every
    object, create one, and carry defects (a repeated uuid, an unknown removal, a non-object)."""
    gold = json.loads(task.target_text(index))
    yield gold
    yield from (variant for variant, _ in fixed_mutations(gold))
    state = task.transition(index).state
    uuids = [obj["uuid"] for obj in state["objects"]]
    yield {**gold, "removed": uuids}
    created = {**state["objects"][0], "uuid": state["max_UUID"] + 1}
    yield {**gold, "modified": gold["modified"] + [created]}
    first = state["objects"][0]
    yield {**gold, "modified": [first, first, "x", {"name": "no uuid"}], "removed": [10 ** 6, uuids[-1], uuids[-1]]}


def rows(task):
    return range(min(len(task), 8))


@pytest.mark.parametrize("source", SOURCES)
def test_fast_scoring_equals_the_plain_definition(task_pairs, source):  # noqa: F811
    task = task_pairs(source)["task"]
    checked = 0
    for index in rows(task):
        meta = task.transition(index).meta
        for answer in answers(task, index):
            try:
                rebuilt = text_state.apply_difference(meta["current_by_uuid"], answer)
            except AnswerError:
                continue  # incomplete answers never reach scoring
            full = rebuilt.flatten()
            assert rebuilt.flatten(known=meta["current_fields"]) == full
            fast = text_state.score_prediction(meta["current_flat"], meta["gold_flat"], full, meta["changed_fields"])
            plain = plain_metrics(meta["current_flat"], meta["gold_flat"], full)
            for key, value in plain.items():
                assert value == pytest.approx(fast[key], nan_ok=True), (key, answer)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("source", SOURCES)
def test_required_keys_refuse_nothing_the_task_accepts(task_pairs, source):  # noqa: F811
    task = task_pairs(source)["binary"]
    texts = []
    for index in rows(task):
        gold = task.target_text(index)
        texts += [(index, gold), (index, gold.replace('"removed"', '"remove"')), (index, gold.replace("{", "[", 1)),
                  (index, gold.replace('"', "'")), (index, gold[: len(gold) // 2])]
        for variant, _ in fixed_mutations(json.loads(gold)):
            text = json.dumps(variant)
            # as it is (the C decoder), and with a trailing comma (malformed: the path the check guards)
            texts += [(index, text), (index, text[:-1] + ",}")]
    for index, text in texts:
        try:
            plain = parse_json_object(text)
        except AnswerError:
            plain = None
        try:
            fast = parse_json_object(text, required_keys=text_state.ANSWER_KEYS)
        except AnswerError:
            fast = None
        if fast is None and plain is not None:  # refused early: the task would have refused it too
            with pytest.raises(AnswerError, match="has no"):
                text_state.check_answer(plain)
        else:
            assert fast == plain


def test_required_keys_are_found_through_escapes_and_named_when_missing():
    # malformed (single quotes, a trailing comma), so it reaches the check; the escape spells "modified"
    spelled = "{'\\u006dodified': [], 'removed': [], 'score': {'score': 0, 'gameOver': False, 'gameWon': False},}"
    assert parse_json_object(spelled, required_keys=text_state.ANSWER_KEYS)["modified"] == []
    with pytest.raises(AnswerError, match="no 'removed' key"):
        parse_json_object("{'modified': [], 'score': {},}", required_keys=text_state.ANSWER_KEYS)
    # truncation is still named as such (it is checked first)
    with pytest.raises(AnswerError, match="truncated JSON"):
        parse_json_object('{"modified": [{"uuid": 1}], "sc', required_keys=text_state.ANSWER_KEYS)
