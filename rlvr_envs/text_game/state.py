"""Verifier for text-game states in the ByteSized32 schema (DESIGN.md §4).

A state is a list of objects `{name, uuid, type, properties{...}, contains[...]}` plus a
score record `{score, gameOver, gameWon}`. The model answers with the *state difference*
`{"modified": [full objects], "removed": [uuids], "score": {...}}`; we rebuild the full
next state from it and compare field by field.

Deliberate differences from the reference evaluation (documented in README):
  * objects the action *creates* are added when the state is rebuilt (the reference drops
    them, so 51 official test rows could never score 1);
  * an unexpected property key costs one wrong field instead of zeroing the reward.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from rlvr_envs.core.answer import AnswerError, parse_json_object

SCORE_FIELDS = ("score", "gameOver", "gameWon")
_MISSING = ("<missing>",)

#: weights of the task-specific reward: 0.1·acc_all + 1.0·acc_changed + 0.2·exact, with
#: acc_all split 0.09 objects + 0.01 score as in the reference code.
W_OBJECTS, W_SCORE, W_CHANGED, W_EXACT = 0.09, 0.01, 1.0, 0.2


def _canonical(value: Any) -> Any:
    """A hashable, order-insensitive-where-it-should-be form of a property value.

    Numbers compare by value (500 == 500.0) but never equal booleans (True != 1).
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return ("num", float(value))
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return ("other", repr(value))


def object_uuid(obj: Any) -> int:
    if not isinstance(obj, Mapping):
        raise AnswerError(f"an object must be a JSON object, got {type(obj).__name__}")
    if "uuid" not in obj:
        raise AnswerError(f"object {obj.get('name', '?')!r} has no uuid")
    uuid = obj["uuid"]
    if isinstance(uuid, bool) or not isinstance(uuid, (int, str)) or not str(uuid).strip().lstrip("-").isdigit():
        raise AnswerError(f"object uuid {uuid!r} is not an integer")
    return int(uuid)


def objects_by_uuid(objects: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    return {object_uuid(obj): obj for obj in objects}


def flatten_state(objects: Mapping[int, Mapping[str, Any]], score: Mapping[str, Any]) -> dict[tuple, Any]:
    """Every comparable field of a state: (uuid, field) for objects, ("score", key) for score.

    `contains` is compared as a multiset (order-free).
    """
    flat: dict[tuple, Any] = {}
    for uuid, obj in objects.items():
        flat[(uuid, "name")] = _canonical(obj.get("name"))
        flat[(uuid, "type")] = _canonical(obj.get("type"))
        properties = obj.get("properties") or {}
        if not isinstance(properties, Mapping):
            raise AnswerError(f"properties of object {uuid} must be a JSON object")
        for key, value in properties.items():
            flat[(uuid, f"properties.{key}")] = _canonical(value)
        contains = obj.get("contains") or []
        if not isinstance(contains, list):
            raise AnswerError(f"contains of object {uuid} must be a list")
        flat[(uuid, "contains")] = tuple(sorted(map(str, contains)))
    for key in SCORE_FIELDS:
        flat[("score", key)] = _canonical(score.get(key, _MISSING))
    return flat


def state_difference(current: list[Mapping], nxt: list[Mapping], next_score: Mapping) -> dict[str, Any]:
    """The gold answer: objects that changed or appeared (in full), uuids removed, the score."""
    before = objects_by_uuid(current)
    after = objects_by_uuid(nxt)
    modified = [
        dict(obj) for uuid, obj in after.items()
        if uuid not in before or flatten_state({uuid: obj}, {}) != flatten_state({uuid: before[uuid]}, {})
    ]
    removed = [uuid for uuid in before if uuid not in after]
    return {"modified": modified, "removed": removed, "score": {k: next_score[k] for k in SCORE_FIELDS}}


def apply_difference(current: Mapping[int, Mapping], current_score: Mapping, diff: Mapping[str, Any]):
    """Rebuild the full next state from a (predicted) difference; objects may be created."""
    for key in ("modified", "removed", "score"):
        if key not in diff:
            raise AnswerError(f"the answer has no {key!r} key")
    if not isinstance(diff["modified"], list):
        raise AnswerError("'modified' must be a list of objects")
    if not isinstance(diff["removed"], list):
        raise AnswerError("'removed' must be a list of uuids")
    if not isinstance(diff["score"], Mapping):
        raise AnswerError("'score' must be a JSON object")
    objects = dict(current)
    for obj in diff["modified"]:
        objects[object_uuid(obj)] = obj
    for uuid in diff["removed"]:
        objects.pop(object_uuid({"uuid": uuid}), None)
    score = {**current_score, **diff["score"]}
    return objects, score


def changed_fields(current: dict[tuple, Any], gold: dict[tuple, Any]) -> set[tuple]:
    """The fields whose value differs between s and s' (objects created/removed included)."""
    return {k for k in current.keys() | gold.keys() if current.get(k, _MISSING) != gold.get(k, _MISSING)}


def score_prediction(current_flat: dict[tuple, Any], gold_flat: dict[tuple, Any],
                     predicted_flat: dict[tuple, Any]) -> dict[str, float]:
    """Every metric component of a rebuilt prediction against the gold next state."""
    def agree(keys: Iterable[tuple]) -> tuple[int, int]:
        keys = list(keys)
        return sum(gold_flat.get(k, _MISSING) == predicted_flat.get(k, _MISSING) for k in keys), len(keys)

    object_keys = {k for k in gold_flat.keys() | predicted_flat.keys() if k[0] != "score"}
    score_keys = [("score", key) for key in SCORE_FIELDS]
    obj_ok, obj_n = agree(object_keys)
    score_ok, score_n = agree(score_keys)
    changed = changed_fields(current_flat, gold_flat)
    changed_ok, changed_n = agree(changed)
    acc_objects = obj_ok / obj_n if obj_n else 1.0
    acc_score = score_ok / score_n
    exact = float(obj_ok == obj_n and score_ok == score_n)
    acc_changed = changed_ok / changed_n if changed_n else math.nan
    task_reward = W_OBJECTS * acc_objects + W_SCORE * acc_score + W_EXACT * exact
    if changed_n:
        task_reward += W_CHANGED * acc_changed
    return {
        "exact": exact,
        "acc_all": (W_OBJECTS * acc_objects + W_SCORE * acc_score) / (W_OBJECTS + W_SCORE),
        "acc_objects": acc_objects,
        "acc_score": acc_score,
        "acc_changed": acc_changed,
        "n_changed_fields": float(changed_n),
        "task_reward": task_reward,
    }


def max_task_reward(has_changes: bool) -> float:
    return W_OBJECTS + W_SCORE + W_EXACT + (W_CHANGED if has_changes else 0.0)


def parse_difference(text: str) -> dict[str, Any]:
    return parse_json_object(text)
