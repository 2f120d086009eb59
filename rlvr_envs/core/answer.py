"""Finding and parsing the answer inside free-form model output (never `eval`).

Reasoning models write thoughts, a "final answer" line, fenced blocks and slightly broken
JSON. These helpers take the answer the way the reference evaluations do and repair the
harmless defects (trailing commas, single quotes, Python literals) with `json_repair`, but
refuse *truncated* JSON: a response cut off by the length limit is not an answer.

**Which object.** Later text overrides earlier text everywhere: the answer is the text after
`</think>` and after the last "final answer" marker, or its last fenced block if it has one
(`extract_answer`). The JSON is read from the answer's first "{" to its last "}" (what
follows is not read), and when that span holds several top-level objects, the *last* one is
parsed and the others are ignored: `{wrong} {right}` reads `{right}` and `{right} {wrong}`
reads `{wrong}`, at any length (a repair's guess used to decide, and only below
`MAX_REPAIR_CHARS`). Stray closing brackets after that object are formatting noise and not
read, however many (`{gold}}}}` reads `{gold}`: a repair used to decide that too, so 2,000
stray braces scored the maximum and 4,000 the minimum). When the span's last object is cut
off (an unclosed string or bracket), the answer is truncated, whatever came before it.

**Bounded work.** A reward must come back in bounded time whatever the policy writes, so
every step here is linear in the length of the response and some inputs are refused up
front with an `AnswerError` saying why (a task maps it to its minimum reward):

* a response longer than `MAX_RESPONSE_CHARS` characters (`check_response_size`; about
  125k tokens, far above any real answer, whose gold is at most a few tens of kilobytes,
  and a bound on the verifiers' time: about half a second for the slowest content);
* a JSON answer nested deeper than `MAX_JSON_DEPTH` brackets (answers here are about five
  levels deep; Python's own decoder would hit its recursion limit near 1,000 and
  `json_repair` much earlier);
* a JSON answer with defects beyond the harmless ones, when it is longer than
  `MAX_REPAIR_CHARS`: well-formed JSON of any allowed size parses with the C decoder,
  and single quotes, Python literals (True/False/None) and trailing commas are rewritten
  by a linear scan (`python_literals_to_json`) at any size, but everything else goes to
  `json_repair`, which is pure Python and quadratic on some inputs (49 KB of `a: b, `
  took 43 s), so only short answers get that repair;
* a JSON number longer than Python's integer-digit limit.

The scans (`extract_answer`'s markers and fences, the bracket scan before decoding) use
plain string searches or regular expressions without overlapping quantifiers.
"""

from __future__ import annotations

import json
import re
from typing import Any

THINK_END = "</think>"
#: responses longer than this many characters are refused before any parsing
MAX_RESPONSE_CHARS = 500_000
#: JSON answers nested deeper than this are refused before decoding
MAX_JSON_DEPTH = 100
#: JSON answers that need more than `python_literals_to_json` are repaired (by `json_repair`)
#: only up to this many characters (real answers are under 1,000)
MAX_REPAIR_CHARS = 4_000
_FINAL_ANSWER = re.compile(r"final\s+answer\s*[:\-]?", re.IGNORECASE)
_FENCE = "```"
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class AnswerError(ValueError):
    """The response holds no parsable answer; the message says why."""


def check_response_size(text: str, limit: int = MAX_RESPONSE_CHARS) -> None:
    """Raise `AnswerError` when `text` is longer than `limit` characters."""
    if len(text) > limit:
        raise AnswerError(f"response too long: {len(text):,} characters (the verifier reads at most {limit:,})")


def _fenced_blocks(text: str) -> list[str]:
    """The contents of the ```fenced``` blocks of `text`, in order.

    The same blocks as `re.findall(r"```[a-zA-Z]*[ \\t]*\\n?(.*?)```", text, re.DOTALL)`
    (an opening fence, an optional language tag, spaces and one newline, then everything
    up to the next fence), found with string searches in linear time: that pattern
    backtracks over the language tag for every unclosed fence (quadratic time).
    """
    blocks = []
    position = 0
    while True:
        start = text.find(_FENCE, position)
        if start < 0:
            return blocks
        end = text.find(_FENCE, start + 3)
        if end < 0:
            return blocks
        body = start + 3
        while body < end and text[body] in _ASCII_LETTERS:
            body += 1
        while body < end and text[body] in " \t":
            body += 1
        if body < end and text[body] == "\n":
            body += 1
        blocks.append(text[body:end])
        position = end + 3


def extract_answer(text: str) -> str:
    """The answer part of `text`: after any reasoning (`</think>`), then after the last
    "final answer" marker, else the last fenced block, else the whole text."""
    if THINK_END in text:
        text = text.rsplit(THINK_END, 1)[1]
    marker = None
    for marker in _FINAL_ANSWER.finditer(text):
        pass
    if marker is not None:
        text = text[marker.end():]
    fences = _fenced_blocks(text)
    if fences:
        return fences[-1].strip()
    return text.strip()


def _last_object(candidate: str, max_depth: int = MAX_JSON_DEPTH) -> tuple[int, int, str | None]:
    """Where the last top-level object of `candidate` starts and ends (the index past its closing
    bracket: stray closers after it are not part of it), and why it cannot be a complete answer
    (an unclosed string or bracket, or nesting deeper than `max_depth`) or None.

    `candidate` runs from a "{" to a "}". An object ends at its matching bracket, strings
    (double- or single-quoted, as the repairs allow) skipped; between objects only "{" is
    read, so prose there may hold quotes and brackets. One pass, constant memory."""
    depth, start, end = 0, 0, len(candidate)
    in_string, escaped, quote = False, False, ""
    for position, ch in enumerate(candidate):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                in_string = False
        elif not depth:
            if ch == "{":
                depth, start = 1, position
        elif ch == '"' or ch == "'":
            in_string, quote = True, ch
        elif ch == "{" or ch == "[":
            depth += 1
            if depth > max_depth:
                return start, end, f"nested deeper than {max_depth} levels"
        elif ch == "}" or ch == "]":
            depth -= 1
            if not depth:
                end = position + 1
    if in_string:
        return start, end, "unterminated string"
    if depth:
        return start, end, f"{depth} unclosed bracket(s)"
    return start, end, None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests lists/objects more than `limit` deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


_LITERALS = {"True": "true", "False": "false", "None": "null"}
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def python_literals_to_json(text: str) -> str:
    """Rewrite the harmless defects of a JSON-like answer in one linear pass: single-quoted
    strings become double-quoted, the bare words True/False/None become true/false/null,
    and a comma right before a closing bracket is dropped. Double-quoted strings are
    copied as they are; anything else is left for the decoder to refuse."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif ch == "'":
            out.append('"')
            j = i + 1
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    out.append("'" if text[j + 1] == "'" else text[j:j + 2])
                    j += 2
                    continue
                out.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"')
            i = j + 1
        elif ch in _WORD:
            j = i + 1
            while j < n and text[j] in _WORD:
                j += 1
            word = text[i:j]
            out.append(_LITERALS.get(word, word))
            i = j
        elif ch == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j >= n or text[j] not in "}]":
                out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _decode(candidate: str) -> Any:
    """JSON, else JSON after `python_literals_to_json`, else (short answers only) `json_repair`."""
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(python_literals_to_json(candidate))
    except json.JSONDecodeError:
        pass
    if len(candidate) > MAX_REPAIR_CHARS:
        raise AnswerError(f"malformed JSON of {len(candidate):,} characters (only answers of at most "
                          f"{MAX_REPAIR_CHARS:,} characters are repaired beyond quotes, literals and commas)")
    import json_repair

    try:
        return json_repair.loads(candidate)
    except (ValueError, RecursionError) as exc:
        raise AnswerError(f"malformed JSON that could not be repaired ({type(exc).__name__})") from None


#: what `_well_formed` returns for text the C decoder cannot read
_MALFORMED = object()


def _well_formed(candidate: str) -> Any:
    """`candidate` read by the C decoder (most answers are well-formed JSON), or `_MALFORMED`."""
    try:
        value = json.loads(candidate)
    except (json.JSONDecodeError, RecursionError):
        return _MALFORMED  # explained (truncated, too deep, several objects) or repaired by the caller
    except ValueError as exc:  # e.g. a number longer than Python's integer-digit limit
        raise AnswerError(f"unreadable JSON ({str(exc)[:120]})") from None
    # no deeper than its opening brackets: walk the value only when there are enough of them
    if candidate.count("{") + candidate.count("[") > MAX_JSON_DEPTH and _deeper_than(value, MAX_JSON_DEPTH):
        raise AnswerError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def parse_json_object(text: str, required_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """Parse the JSON object in `text`: in the answer (`extract_answer`), the span from the
    first "{" to the last "}"; when that span holds several objects, the last one (see the
    module docstring).

    Raises `AnswerError` for a response over the size limit, no object, a truncated or too
    deeply nested object, or JSON that cannot be repaired (see the module docstring).
    `required_keys` (the task checks them after parsing) lets malformed JSON whose text never
    names one of them be refused before the slow repair (`json_repair`, pure Python), where
    most malformed model output would otherwise go. Only the key *names* are looked for, so
    this never refuses an answer the task would accept.
    """
    check_response_size(text)
    answer = extract_answer(text)
    start = answer.find("{")
    if start < 0:
        raise AnswerError("no JSON object in the answer")
    end = answer.rfind("}")
    if end < start:
        raise AnswerError("truncated JSON (the object is never closed)")
    candidate = answer[start:end + 1]
    value = _well_formed(candidate)
    if value is _MALFORMED:
        last, end, reason = _last_object(candidate)
        if reason is not None:
            if reason.startswith("nested"):
                raise AnswerError(f"JSON {reason}")
            raise AnswerError(f"truncated JSON ({reason})")
        trimmed = candidate[last:end]  # the last object alone: earlier objects and stray closers dropped
        value = _well_formed(trimmed) if trimmed != candidate else _MALFORMED
        candidate = trimmed
    if value is _MALFORMED:
        if "\\" not in candidate:  # (a \u escape could spell a key) no repair can add a key the text never names
            for key in required_keys:
                if key not in candidate:
                    raise AnswerError(f"the answer has no {key!r} key (it needs {', '.join(map(repr, required_keys))})")
        try:
            value = _decode(candidate)
        except AnswerError:
            raise
        except ValueError as exc:  # e.g. a number longer than Python's integer-digit limit
            raise AnswerError(f"unreadable JSON ({str(exc)[:120]})") from None
    if not isinstance(value, dict):
        raise AnswerError(f"the answer is a JSON {type(value).__name__}, not an object")
    return value
