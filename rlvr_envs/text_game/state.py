"""Verifier for text-game states in the ByteSized32 schema.

A state is a list of objects `{name, uuid, type, properties{...}, contains[...]}` plus a
score record `{score, gameOver, gameWon}`. The model answers with the *state difference*
`{"modified": [full objects], "removed": [uuids], "score": {...}}`; we rebuild the full
next state from it and compare it field by field with the real next state. A field is
one of: an object's `name`, `type`, `contains` (order-free) or one of its properties, or
one of the three score keys.

Strict about content. An RL policy will take any shortcut to the maximum, so nothing the
answer must say is ever filled in for it:

  * the answer must be one JSON object with `modified` (a list), `removed` (a list) and
    `score` (an object holding `score`, `gameOver` and `gameWon`). An answer missing any
    of these, or whose score lacks or misnames one of its three keys, is *incomplete*: it
    is not parsed and gets the minimum reward, 0 on both rewards. So the constant answer
    `{"modified": [], "removed": [], "score": {}}` scores 0, never the credit for the
    unchanged objects it copies;
  * every object in `modified` replaces the current object of its uuid (or is created) and
    must carry `uuid`, `name`, `properties` and `contains`, and `type` where the real
    objects carry one (both datasets do): a missing or misnamed key is a wrong field, never
    taken from the current state (a missing `contains` is not an empty one; a missing
    `properties` is one wrong field besides every property it leaves out);
  * an entry of `modified` that is not an object, has no integer uuid, or repeats a uuid
    already listed counts as one wrong field (the last entry of a repeated uuid is used).
    A uuid is an integer, or its ASCII digits as a string ("5", "-5"); other digits
    ("٥", "５", "²") are not numbers here;
  * each entry of `removed` must be the uuid of an object of the current state, listed
    once; anything else (an unknown uuid, a name, a repeat) is a wrong removal, one wrong
    field. Removals apply after modifications;
  * a property key the real object does not have is one wrong field; so is an object key
    other than the five above (however long) and a score key other than the three;
  * a wrong field anywhere means `exact` = 0, so the binary reward is 0 and the task
    reward loses its 0.2.

Lenient about syntax, and only that: key order, the order of `contains`, numbers written
differently (500 == 500.0, "5" as a uuid), whitespace, code fences, reasoning before the
answer and repairable JSON (see `rlvr_envs.core.answer`). A number never equals a
boolean (1 != true) and a string never equals a number ("0" != 0) in a field. No value
the model writes can fail the whole answer: an integer beyond any float (400 digits) is
one field like any other.

Rewards: binary = `exact`; task = 0.09·acc_objects + 0.01·acc_score + 1.0·acc_changed +
0.2·exact (the reference's 0.1·acc_all split as in its code). acc_changed is the accuracy
over the fields that differ between the current and the next state; the term is dropped
when none does. Score fields count as changed fields, so a transition that changes only
the score has a maximum of 1.3 (the reference compares objects only there and gives 0.3).

Deliberate differences from the reference evaluation (documented in docs/environments.md):
  * objects the action *creates* are added when the state is rebuilt (the reference drops
    them, so 51 official test rows could never score 1);
  * an unexpected property key costs one wrong field instead of zeroing the reward;
  * nothing is filled in or ignored: the reference takes an empty `score` from the current
    state, reads a missing `contains` as empty and skips unknown removals, so a constant
    empty answer earned credit there; here they are an incomplete answer (0) or wrong fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr_envs.core.answer import AnswerError

SCORE_FIELDS = ("score", "gameOver", "gameWon")
#: keys every object of `modified` must carry ("type" only where the real objects carry it)
OBJECT_KEYS = ("uuid", "name", "type", "properties", "contains")
ANSWER_KEYS = ("modified", "removed", "score")
_OBJECT_KEY_SET = frozenset(OBJECT_KEYS)

#: the value of a field one side does not have (a lookup default)
_MISSING = ("<missing>",)
#: the value of a required object key the object lacks (never equal to a real value)
_ABSENT = ("<absent key>",)

#: weights of the task-specific reward: 0.1·acc_all + 1.0·acc_changed + 0.2·exact, with
#: acc_all split 0.09 objects + 0.01 score as in the reference code.
W_OBJECTS, W_SCORE, W_CHANGED, W_EXACT = 0.09, 0.01, 1.0, 0.2

#: the metrics every result reports (a failed parse reports them as 0)
METRIC_KEYS = ("exact", "acc_all", "acc_objects", "acc_score", "acc_changed", "n_changed_fields",
               "n_defects", "task_reward")


def _canonical(value: Any) -> Any:
    """A hashable, order-insensitive-where-it-should-be form of a field value.

    Numbers compare by value (500 == 500.0) but never equal booleans (True != 1) or strings.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        try:
            return ("num", float(value))
        except OverflowError:  # an integer beyond any float equals no float: it stays itself
            return ("num", value)
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_canonical(v) for v in value))
    return ("other", repr(value))


#: a uuid written as text: ASCII digits only (`str.isdigit` passes "٥", "５" and "²", and `int` reads the first two)
_UUID_TEXT = re.compile(r"-?[0-9]+")


def parse_uuid(value: Any) -> int | None:
    """`value` as a uuid (an integer, or its ASCII digits as a string), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _UUID_TEXT.fullmatch(text := value.strip()):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts from text
            return None
    return None


def object_uuid(obj: Any) -> int:
    """The uuid of a well-formed object (gold data); raises `AnswerError` otherwise."""
    if not isinstance(obj, Mapping):
        raise AnswerError(f"an object must be a JSON object, got {type(obj).__name__}")
    if "uuid" not in obj:
        raise AnswerError(f"object {obj.get('name', '?')!r} has no uuid")
    uuid = parse_uuid(obj["uuid"])
    if uuid is None:
        raise AnswerError(f"object uuid {obj['uuid']!r} is not an integer")
    return uuid


def objects_by_uuid(objects: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    return {object_uuid(obj): obj for obj in objects}


def _contains_value(contains: Any) -> Any:
    if contains is _ABSENT:
        return _ABSENT
    if not isinstance(contains, list):
        return ("<not a list>", _canonical(contains))
    return ("multiset", tuple(sorted((_canonical(item) for item in contains), key=repr)))


def flatten_object(uuid: int, obj: Mapping[str, Any]) -> dict[tuple, Any]:
    """The fields of one object; a missing required key gets a value no real one equals."""
    flat: dict[tuple, Any] = {}
    flat[(uuid, "name")] = _canonical(obj["name"]) if "name" in obj else _ABSENT
    flat[(uuid, "type")] = _canonical(obj["type"]) if "type" in obj else _ABSENT
    properties = obj.get("properties", _ABSENT)
    if isinstance(properties, Mapping):
        for key, value in properties.items():
            flat[(uuid, f"properties.{key}")] = _canonical(value)
    else:  # absent or not an object: one wrong field (the real state has no such key)
        flat[(uuid, "properties")] = _ABSENT if properties is _ABSENT else ("<not an object>", _canonical(properties))
    flat[(uuid, "contains")] = _contains_value(obj.get("contains", _ABSENT))
    for key in obj.keys() - _OBJECT_KEY_SET:  # a key the real objects never have: a wrong field
        flat[(uuid, f"key {key}")] = _canonical(obj[key])
    return flat


#: uuid -> (object, its fields): objects flattened before, reused while they stay the same object
KnownFields = Mapping[int, tuple[Mapping[str, Any], dict[tuple, Any]]]


def flatten_state(objects: Mapping[int, Mapping[str, Any]], score: Mapping[str, Any],
                  known: KnownFields | None = None) -> dict[tuple, Any]:
    """Every comparable field of a state: (uuid, field) for objects, ("score", key) for score.

    An object found in `known` (`object_fields` of the current state) as the very same object
    reuses its fields: a rebuilt state shares most objects with the current one, and
    flattening them again was the verifier's main cost on large states."""
    known = known or {}
    flat: dict[tuple, Any] = {}
    for uuid, obj in objects.items():
        cached = known.get(uuid)
        flat.update(cached[1] if cached is not None and cached[0] is obj else flatten_object(uuid, obj))
    for key in SCORE_FIELDS:
        flat[("score", key)] = _canonical(score[key]) if key in score else _ABSENT
    for key in score:
        if key not in SCORE_FIELDS:
            flat[("score", str(key))] = _canonical(score[key])
    return flat


def object_fields(objects: Mapping[int, Mapping[str, Any]]) -> dict[int, tuple[Mapping[str, Any], dict[tuple, Any]]]:
    """uuid -> (object, its fields): the `known` that `flatten_state` reuses for untouched objects."""
    return {uuid: (obj, flatten_object(uuid, obj)) for uuid, obj in objects.items()}


def state_difference(current: list[Mapping], nxt: list[Mapping], next_score: Mapping) -> dict[str, Any]:
    """The gold answer: objects that changed or appeared (in full), uuids removed, the score."""
    before = objects_by_uuid(current)
    after = objects_by_uuid(nxt)
    modified = [
        dict(obj) for uuid, obj in after.items()
        if uuid not in before or flatten_object(uuid, obj) != flatten_object(uuid, before[uuid])
    ]
    removed = [uuid for uuid in before if uuid not in after]
    return {"modified": modified, "removed": removed, "score": {k: next_score[k] for k in SCORE_FIELDS}}


@dataclass
class RebuiltState:
    """The next state an answer describes, and the wrong entries it could not place."""

    objects: dict[int, Mapping[str, Any]]
    score: Mapping[str, Any]
    #: (key, reason) of every entry counted as one wrong field (an unknown removal, ...)
    defects: list[tuple[tuple, str]] = field(default_factory=list)

    def flatten(self, known: KnownFields | None = None) -> dict[tuple, Any]:
        """Every comparable field (see `flatten_state`, which reuses `known`), defects included."""
        flat = flatten_state(self.objects, self.score, known)
        for key, reason in self.defects:
            flat[key] = ("<defect>", reason)  # a key the real state never has: a wrong field
        return flat

    def as_dict(self) -> dict[str, list]:
        """The prediction `info` reports: the objects, the score as [key, value] pairs and the
        defects' reasons. Lists only: gymnasium's vector envs walk into dicts and type each leaf
        by the first env's value, so a dict keyed and valued by the model could crash them."""
        return {"objects": list(self.objects.values()), "score": [[key, value] for key, value in self.score.items()],
                "defects": [reason for _, reason in self.defects]}


def check_answer(diff: Mapping[str, Any]) -> None:
    """Raise `AnswerError` for an incomplete answer (see the module docstring)."""
    for key in ANSWER_KEYS:
        if key not in diff:
            raise AnswerError(f"the answer has no {key!r} key (it needs {', '.join(map(repr, ANSWER_KEYS))})")
    if not isinstance(diff["modified"], list):
        raise AnswerError("'modified' must be a list of objects")
    if not isinstance(diff["removed"], list):
        raise AnswerError("'removed' must be a list of uuids")
    if not isinstance(diff["score"], Mapping):
        raise AnswerError("'score' must be a JSON object")
    lacking = [key for key in SCORE_FIELDS if key not in diff["score"]]
    if lacking:
        raise AnswerError(f"the score lacks {', '.join(map(repr, lacking))} "
                          f"(it needs {', '.join(map(repr, SCORE_FIELDS))})")


def apply_difference(current: Mapping[int, Mapping], diff: Mapping[str, Any]) -> RebuiltState:
    """Rebuild the full next state from a (predicted) difference; objects may be created.

    Raises `AnswerError` only for an incomplete answer; every other fault is a defect (one
    wrong field each)."""
    check_answer(diff)
    objects = dict(current)
    defects: list[tuple[tuple, str]] = []
    listed: set[int] = set()
    for position, obj in enumerate(diff["modified"]):
        uuid = parse_uuid(obj.get("uuid")) if isinstance(obj, Mapping) else None
        if uuid is None:
            what = "is not an object" if not isinstance(obj, Mapping) else (
                "has no uuid" if "uuid" not in obj else f"has uuid {obj['uuid']!r}, not an integer")
            defects.append((("answer", "modified", position), f"modified[{position}] {what}"))
            continue
        if uuid in listed:
            defects.append((("answer", "modified", position), f"modified[{position}] repeats uuid {uuid}"))
        listed.add(uuid)
        objects[uuid] = obj
    removed: set[int] = set()
    for position, entry in enumerate(diff["removed"]):
        uuid = parse_uuid(entry)
        if uuid is None or uuid not in current or uuid in removed:
            why = ("is not a uuid" if uuid is None else "is already removed" if uuid in removed
                   else "is not an object of the current state")
            defects.append((("answer", "removed", position), f"removed[{position}] = {entry!r} {why}"))
            continue
        removed.add(uuid)
        objects.pop(uuid, None)
    return RebuiltState(objects, dict(diff["score"]), defects)


def changed_fields(current: dict[tuple, Any], gold: dict[tuple, Any]) -> set[tuple]:
    """The fields whose value differs between s and s' (objects created/removed included)."""
    return {k for k in current.keys() | gold.keys() if current.get(k, _MISSING) != gold.get(k, _MISSING)}


def score_prediction(current_flat: dict[tuple, Any], gold_flat: dict[tuple, Any],
                     predicted_flat: dict[tuple, Any], changed: Iterable[tuple] | None = None) -> dict[str, float]:
    """Every metric component of a rebuilt prediction against the gold next state.

    Fields are the union of both sides' keys, so a field only one side has is wrong."""
    if changed is None:  # tasks pass the transition's changed fields, computed once when it is built
        changed = changed_fields(current_flat, gold_flat)
    changed = changed if isinstance(changed, (set, frozenset)) else set(changed)
    if gold_flat == predicted_flat:  # one comparison in C: a right answer has no wrong field
        wrong: set[tuple] = set()
        score_n = obj_n = 0  # (every accuracy is 1 then)
    else:
        all_keys = gold_flat.keys() | predicted_flat.keys()
        wrong = {k for k in all_keys if gold_flat.get(k, _MISSING) != predicted_flat.get(k, _MISSING)}
        score_n = sum(k[0] == "score" for k in all_keys)
        obj_n = len(all_keys) - score_n
    score_wrong = sum(k[0] == "score" for k in wrong)
    obj_wrong = len(wrong) - score_wrong
    changed_n = len(changed)
    changed_ok = changed_n - len(wrong & changed) if changed_n else 0
    acc_objects = (obj_n - obj_wrong) / obj_n if obj_n else 1.0
    acc_score = (score_n - score_wrong) / score_n if score_n else 1.0
    exact = float(not wrong)
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
        # defect keys are never in the gold state, so every one is a wrong field
        "n_defects": float(sum(k[0] == "answer" for k in wrong)),
        "task_reward": task_reward,
    }


def max_task_reward(has_changes: bool) -> float:
    return W_OBJECTS + W_SCORE + W_EXACT + (W_CHANGED if has_changes else 0.0)
