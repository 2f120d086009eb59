"""Finding and parsing the answer inside free-form model output (never `eval`).

Reasoning models write thoughts, a "final answer" line, fenced blocks and slightly broken
JSON. These helpers take the answer the way the reference evaluations do and repair the
harmless defects (trailing commas, single quotes, Python literals) with `json_repair`, but
refuse *truncated* JSON: a response cut off by the length limit is not an answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

THINK_END = "</think>"
_FINAL_ANSWER = re.compile(r"final\s+answer\s*[:\-]?", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.DOTALL)


class AnswerError(ValueError):
    """The response holds no parsable answer; the message says why."""


def extract_answer(text: str) -> str:
    """The answer part of `text`: after any reasoning (`</think>`), then after the last
    "final answer" marker, else the last fenced block, else the whole text."""
    if THINK_END in text:
        text = text.rsplit(THINK_END, 1)[1]
    markers = list(_FINAL_ANSWER.finditer(text))
    if markers:
        text = text[markers[-1].end():]
    fences = _FENCE.findall(text)
    if fences:
        return fences[-1].strip()
    return text.strip()


def _unbalanced(candidate: str) -> str | None:
    """Why `candidate` is cut off (unclosed string or bracket), or None when complete."""
    depth, in_string, escaped, quote = [], False, False, ""
    for ch in candidate:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                in_string = False
        elif ch in "\"'":
            in_string, quote = True, ch
        elif ch in "{[":
            depth.append(ch)
        elif ch in "}]":
            if depth:
                depth.pop()
    if in_string:
        return "unterminated string"
    if depth:
        return f"{len(depth)} unclosed bracket(s)"
    return None


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse the JSON object in `text` (see `extract_answer` for where it is looked for).

    Raises `AnswerError` for no object, a truncated object, or irreparable JSON.
    """
    answer = extract_answer(text)
    start = answer.find("{")
    if start < 0:
        raise AnswerError("no JSON object in the answer")
    end = answer.rfind("}")
    if end < start:
        raise AnswerError("truncated JSON (the object is never closed)")
    candidate = answer[start:end + 1]
    reason = _unbalanced(candidate)
    if reason is not None:
        raise AnswerError(f"truncated JSON ({reason})")
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        import json_repair

        value = json_repair.loads(candidate)
    if not isinstance(value, dict):
        raise AnswerError(f"the answer is a JSON {type(value).__name__}, not an object")
    return value
