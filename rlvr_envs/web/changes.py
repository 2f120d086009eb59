"""The web-state answer format (`New items:` / `Deleted items:` / `Updated items:`) and its F1.

RLVR-World's web world model answers with three sections, each a list of item lines in
the accessibility-tree form, `None` for an empty section::

    New items:
    [1273] StaticText 'Vortex Running Shoes'

    Deleted items:
    None

    Updated items:
    [1220] textbox '\\ue60c' focused: True required: False

**Reading a response** (`parse_changes`): the answer is taken after any reasoning with
`rlvr_envs.core.answer.extract_answer` (after `</think>`, after a "final answer"
marker, or inside the last fenced block). A section starts at a line that begins with its
title (`New items:`, case-insensitive, optionally as a markdown heading or in bold); text
after the colon on that line is its first item. Blank lines right after a title are
skipped; the section then runs to the next blank line or title, so prose after the
answer is not read as items. When a title appears more than once, the last one wins (a
drafted answer in the reasoning is superseded by the final one). A missing section
predicts nothing; a response with no section at all is unparsable (reward 0).

Responses longer than `rlvr_envs.core.answer.MAX_RESPONSE_CHARS` are refused (reward 0
with the reason); everything else is read in time linear in its length.

**Lines** are compared in canonical form: an item line goes through
`acctree.parse_item(...).line` (so tabs, spacing and quote style do not matter) and its
attributes are compared as a set of `key: value` pairs (their order does not matter
either); a line that reads `None` in any letter case is the empty-section marker; any
other line (prose) is compared with whitespace stripped and counts as a (wrong) item.

**Score** (`score_changes`): the reward is the F1 of the predicted *items*:

* each section is a *multiset* of item lines; matches in a section = sum over distinct
  lines of min(predicted count, gold count), i.e. an exact-match assignment. A line
  repeated in the response therefore counts as one more prediction and lowers precision
  unless the gold repeats it too (RLVR-World's reference reads sections as sets, so
  repeating a right line cost nothing there);
* pooled over the three sections: precision = matches / predicted items, recall =
  matches / gold items, F1 = 2PR/(P+R) (0 when nothing matches);
* `None` is not an item: it says a section is empty. When the page does not change (the
  gold has no item at all) the reward is 1 if the response lists no item either (every
  section `None`, empty or absent) and 0 otherwise; a `None` written next to items in one
  section is ignored.

F1 is symmetric in prediction and gold, lies in [0, 1], and is 1 exactly when every
section's multiset of items equals the gold's.

Why `None` is not an item (a deliberate difference from RLVR-World, whose F1 counts it as
one): counted as an item, the constant answer "None / None / None" earns a matching line
for every empty gold section, 0.35 mean F1 on MiniWeb and 0.67 on a transition that adds
one item, without predicting anything; hedging with `None` plus guesses in every section
earns it too. RLVR-World's number is still reported as the metric `reference_f1` (their
rule on our canonical lines), and `WebChangeTask(reward="reference")` trains on it.

Other shortcuts and what they earn (tested in tests/test_web_rewards.py): repeating a gold
line counts every copy; copying the whole current tree into a section pays for every
line that is not a change through precision; prose lines are wrong items.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlvr_envs.web.acctree import Changes, TreeParseError, parse_item
from rlvr_envs.core.answer import THINK_END, AnswerError, check_response_size, extract_answer

SECTIONS = ("new", "deleted", "updated")
TITLES = {"new": "New items:", "deleted": "Deleted items:", "updated": "Updated items:"}
NONE_LINE = "None"
#: a section title up to its colon: `New items:`, `## Deleted items:`, `**Updated items:**`, ...
#: (no two adjacent quantifiers can take the same characters, so matching is linear; the
#: earlier `\s*(?:#+\s*)?(?:\*\*)?\s*` stalled for seconds on a long run of spaces)
_TITLE = re.compile(r"\s*(?:#+\s*)?(?:\*\*\s*)?(new|deleted|updated)\s+items\s*(?:\*\*\s*)?:", re.IGNORECASE)
_TITLE_START = frozenset("#*nNdDuU")


def _title(line: str) -> tuple[str, str] | None:
    """(section, text after the title) when `line` is a section title, else None.

    The language of the former single expression
    `\\s*(?:#+\\s*)?(?:\\*\\*)?\\s*(new|deleted|updated)\\s+items\\s*(?:\\*\\*)?\\s*:\\s*(?:\\*\\*)?(.*)$`:
    the title, then the first item (after spaces and a closing `**`), on one line.
    """
    line = line.lstrip()
    if not line or line[0] not in _TITLE_START:  # a cheap test that skips most lines
        return None
    match = _TITLE.match(line)
    if match is None:
        return None
    first = line[match.end():].lstrip()
    if first.startswith("**"):
        first = first[2:]
    if first.endswith("\n"):
        first = first[:-1]
    if "\n" in first:  # `.` stops at a line break and `$` allows only a final one
        return None
    return match.group(1).lower(), first


#: lines longer than this are not cached (a hostile response could otherwise fill the
#: caches with huge strings); real item lines are a few hundred characters at most
_CACHED_LINE_CHARS = 1_000


def _canonical(line: str) -> str:
    text = line.strip()
    if text.startswith("["):
        try:
            return parse_item(text).line
        except TreeParseError:
            pass
    if text.lower() == "none":
        return NONE_LINE
    return text


_canonical_cached = functools.lru_cache(maxsize=1 << 16)(_canonical)


def canonical_line(line: str) -> str:
    """The canonical form of one answer line: the canonical item line when it parses as
    an item, `None` for the empty-section marker (any letter case), else the line with
    outer whitespace stripped.

    Cached for lines of ordinary length: the answers of a GRPO group mostly repeat the same
    lines (copied from the tree and from each other), and parsing them is most of the
    verifier's time."""
    return _canonical_cached(line) if len(line) <= _CACHED_LINE_CHARS else _canonical(line)




def _key(line: str) -> str:
    if line.startswith("[") and line.count(": ") > 1:  # two attributes or more: order them
        try:
            item = parse_item(line)
        except TreeParseError:
            return line
        if len(item.attrs) > 1:
            return dataclasses.replace(item, attrs=tuple(sorted(item.attrs))).line
    return line


_key_cached = functools.lru_cache(maxsize=1 << 16)(_key)


def comparison_key(line: str) -> str:
    """What a canonical line is compared by: the line with its attributes sorted (so their
    order does not matter), or the line itself when it is not an item."""
    return _key_cached(line) if len(line) <= _CACHED_LINE_CHARS else _key(line)


def clear_caches() -> None:
    """Empty the line caches (benchmarks time cold runs with it)."""
    _canonical_cached.cache_clear()
    _key_cached.cache_clear()


canonical_line.cache_clear = clear_caches  # type: ignore[attr-defined]  (the name callers know)


@dataclass(frozen=True)
class ChangeList:
    """The three sections as canonical lines (a section that is `None` holds `("None",)`)."""

    new: tuple[str, ...]
    deleted: tuple[str, ...]
    updated: tuple[str, ...]

    @classmethod
    def from_sections(cls, sections: Mapping[str, Sequence[str]]) -> "ChangeList":
        """Gold form: canonicalise every line and write an empty section as `None`."""
        return cls(**{s: tuple(canonical_line(x) for x in sections.get(s, ())) or (NONE_LINE,) for s in SECTIONS})

    @classmethod
    def from_changes(cls, changes: Changes) -> "ChangeList":
        return cls.from_sections(changes.sections())

    def section(self, name: str) -> tuple[str, ...]:
        return getattr(self, name)

    def text(self) -> str:
        """The answer text (the gold response of a task)."""
        return "\n\n".join(TITLES[s] + "\n" + "\n".join(self.section(s)) for s in SECTIONS)

    def as_dict(self) -> dict[str, list[str]]:
        return {s: list(self.section(s)) for s in SECTIONS}

    @functools.cached_property
    def key_counts(self) -> dict[str, Counter]:
        """Each section as a multiset of comparison keys (computed once: a gold answer is
        scored against every response of its group)."""
        return {s: Counter(comparison_key(line) for line in self.section(s)) for s in SECTIONS}


def parse_changes(text: str) -> ChangeList:
    """Read the sections of a response (rules in the module docstring).

    Raises `AnswerError` when no section title is present or the response is over the
    size limit. Sections are kept as written (an empty one stays empty).
    """
    check_response_size(text)
    # extract_answer may pick a fenced block that merely quotes an action (```click [5]```);
    # then the sections are read from everything after the reasoning instead.
    for candidate in (extract_answer(text), text.rsplit(THINK_END, 1)[-1]):
        lines = candidate.splitlines()
        starts: dict[str, int] = {}
        firsts: dict[str, str] = {}
        titles: list[int] = []
        for number, line in enumerate(lines):
            title = _title(line)
            if title is not None:
                key, first = title
                starts[key], firsts[key] = number, first
                titles.append(number)
        if starts:
            break
    else:
        raise AnswerError("no 'New items:', 'Deleted items:' or 'Updated items:' section in the answer")
    title_set = set(titles)
    sections: dict[str, tuple[str, ...]] = {}
    for key in SECTIONS:
        if key not in starts:
            sections[key] = ()
            continue
        found = [firsts[key].strip()] if firsts[key].strip() else []
        number = starts[key] + 1
        if not found:
            while number < len(lines) and not lines[number].strip() and number not in title_set:
                number += 1
        while number < len(lines) and lines[number].strip() and number not in title_set:
            found.append(lines[number])
            number += 1
        sections[key] = tuple(canonical_line(x) for x in found)
    return ChangeList(**sections)


def _prf(matches: int, predicted: int, gold: int) -> tuple[float, float, float]:
    precision = matches / predicted if predicted else 0.0
    recall = matches / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if matches else 0.0
    return precision, recall, f1


def _item_prf(matches: int, predicted: int, gold: int) -> tuple[float, float, float]:
    """Precision, recall, F1 of items; no item predicted where none is gold is perfect."""
    if not predicted and not gold:
        return 1.0, 1.0, 1.0
    return _prf(matches, predicted, gold)


def score_changes(predicted: ChangeList, gold: ChangeList) -> dict[str, float]:
    """The item F1 (the reward) and its parts, plus RLVR-World's F1 (rules in the module
    docstring).

    Keys: `f1`, `precision`, `recall`, `matches`, `predicted`, `gold` (items pooled over
    the sections), `<section>_f1`, `<section>_precision`, `<section>_recall`, and
    `reference_f1` (`None` counted as an ordinary line, as RLVR-World scores).
    """
    metrics: dict[str, float] = {}
    total_matches = total_pred = total_gold = 0
    ref_matches = ref_pred = ref_gold = 0
    for key in SECTIONS:
        pred_counts, gold_counts = predicted.key_counts[key], gold.key_counts[key]
        common = pred_counts & gold_counts
        all_matches, all_pred, all_gold = sum(common.values()), sum(pred_counts.values()), sum(gold_counts.values())
        ref_matches += all_matches
        ref_pred += all_pred
        ref_gold += all_gold
        matches = all_matches - common.get(NONE_LINE, 0)  # None lines are not items
        n_pred, n_gold = all_pred - pred_counts.get(NONE_LINE, 0), all_gold - gold_counts.get(NONE_LINE, 0)
        p, r, f = _item_prf(matches, n_pred, n_gold)
        metrics.update({f"{key}_precision": p, f"{key}_recall": r, f"{key}_f1": f})
        total_matches += matches
        total_pred += n_pred
        total_gold += n_gold
    p, r, f = _item_prf(total_matches, total_pred, total_gold)
    metrics.update({"f1": f, "precision": p, "recall": r, "matches": float(total_matches),
                    "predicted": float(total_pred), "gold": float(total_gold),
                    "reference_f1": _prf(ref_matches, ref_pred, ref_gold)[2]})
    return metrics
