"""Accessibility-tree parsing, canonical lines and change extraction (rlvr_envs.web.acctree).

The extraction is checked line by line on the two real WebArena (tree, next tree) pairs in
../shared/data/wma/text_only_acctree_format.json (the few-shot examples of WMA's prompt).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr_envs.web.acctree import (
    UNMATCHED_COST, Item, TreeParseError, extract_changes, match_cost, match_items, matchable, parse_item,
    parse_tree, quote_name)
from tests.samples import EXPECTED, real_pairs


# -- the real pairs ---------------------------------------------------------------------------

@pytest.mark.parametrize("k", [0, 1])
def test_real_pairs_parse_strictly(k):
    observation, _, following = real_pairs()[k]
    before, after = parse_tree(observation, strict=True), parse_tree(following, strict=True)
    assert (len(before.items), len(after.items)) == [(33, 65), (46, 71)][k]
    assert before.headers == ((), ("Tab 0 (current): Health & Household",))[k]
    assert not before.warnings and not after.warnings
    assert before.items[0].role == "RootWebArea" and before.items[0].depth == 0
    assert max(i.depth for i in after.items) == 4


@pytest.mark.parametrize("k", [0, 1])
def test_real_pairs_extract_line_by_line(k):
    observation, _, following = real_pairs()[k]
    sections = extract_changes(observation, following).sections()
    for section in ("new", "deleted", "updated"):
        assert sections[section] == EXPECTED[k][section], section


def test_real_pair_details():
    (obs0, action0, next0), (obs1, _, next1) = real_pairs()
    assert action0.startswith("click [707]")
    changes = extract_changes(obs0, next0)
    updated = {b.id: a for a, b in changes.updated}
    # the search box lost its focus: same id, attributes changed
    assert updated["62"].line == "[62] textbox 'Search' focused: True required: False"
    # the results panel's close button was re-rendered under a new id: same role and name
    assert updated["1452"].line == "[684] button 'Close'"
    # names with embedded single quotes parse, and are canonically double-quoted
    root = parse_tree(next1).items[0]
    assert root.name == "Search results for: 'HP Inkjet Fax Machine'"
    assert root.attrs == (("focused", "True"),)
    # escapes are kept as written, unicode as it is
    assert any(i.name == "12 \\xa0Reviews" for i in parse_tree(next1).items)
    assert any("Café" in (i.name or "") for i in parse_tree(next0).items)


# -- items and canonical lines ---------------------------------------------------------------

def test_parse_item_fields():
    item = parse_item("\t\t[1122] tab 'Loading... Bestsellers' expanded: True selected: True controls: grid_tab_x")
    assert (item.id, item.role, item.name, item.depth) == ("1122", "tab", "Loading... Bestsellers", 2)
    assert item.attrs == (("expanded", "True"), ("selected", "True"), ("controls", "grid_tab_x"))
    assert parse_item("[5]  link   'a'   hasPopup:  menu  ").line == "[5] link 'a' hasPopup: menu"
    assert parse_item("[ 7 ] generic").name is None and parse_item("[7] generic").line == "[7] generic"
    assert parse_item("[8] button focused: True").attrs == (("focused", "True"),)


@pytest.mark.parametrize("written, name, canonical", [
    ("[1] link 'plain'", "plain", "[1] link 'plain'"),
    ("[1] link \"Women's shoes\"", "Women's shoes", "[1] link \"Women's shoes\""),
    ("[1] link 'Women's shoes'", "Women's shoes", "[1] link \"Women's shoes\""),
    ("[1] heading 'Rating: 'Good' Votes: 5' level: 2", "Rating: 'Good' Votes: 5",
     "[1] heading \"Rating: 'Good' Votes: 5\" level: 2"),
    ("[1] link 'say \"hi\"'", 'say "hi"', "[1] link 'say \"hi\"'"),
    ("[1] link 'it\\'s \"x\"'", "it\\'s \"x\"", "[1] link 'it\\'s \"x\"'"),
    ("[1] StaticText ''", "", "[1] StaticText ''"),
    ("[1] StaticText '\\ue60b 日本語 ♥'", "\\ue60b 日本語 ♥", "[1] StaticText '\\ue60b 日本語 ♥'"),
])
def test_quotes_and_unicode(written, name, canonical):
    item = parse_item(written)
    assert item.name == name
    assert item.line == canonical
    assert parse_item(canonical) == item


@pytest.mark.parametrize("line, reason", [
    ("link 'no id'", "not an item line"),
    ("[12]", "not an item line"),
    ("[12] link 'never closed", "unterminated name"),
    ("[12] link 'a' b", "unterminated name"),
    ("[12] link stray words", "expected a quoted name"),
])
def test_bad_item_lines_fail_naming_the_line(line, reason):
    with pytest.raises(TreeParseError, match=f"line 7: {reason}") as info:
        parse_item(line, line_no=7)
    assert info.value.line_no == 7 and info.value.line == line


_names = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)
_words = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,7}", fullmatch=True)
_values = st.from_regex(r"[A-Za-z0-9_#/.\-]{1,8}", fullmatch=True)
_items = st.builds(
    Item, id=st.integers(0, 99999).map(str), role=_words, name=st.one_of(st.none(), _names),
    attrs=st.lists(st.tuples(_words, _values), max_size=3).map(tuple))


@settings(max_examples=300, deadline=None)
@given(_items, st.integers(0, 4), st.sampled_from([" ", "  "]))
def test_canonical_line_round_trips(item, depth, gap):
    """Any item prints to a line that parses back to it; indentation, extra spaces and the
    other quote style give the same canonical line."""
    assert parse_item(item.line) == item
    assert parse_item(item.line).line == item.line
    written = "\t" * depth + item.line.replace("] ", "]" + gap, 1) + gap
    assert parse_item(written).line == item.line
    if item.name is not None and "'" not in item.name and '"' not in item.name:
        other = item.line.replace(quote_name(item.name), f'"{item.name}"', 1)
        assert parse_item(other).line == item.line


# -- trees ---------------------------------------------------------------------------------------

def test_tree_headers_depth_and_text():
    text = ("Tab 0 (current): Home\n\n[1] RootWebArea 'Home' focused: True\n"
            "\t[2] link 'A'\n\t\t[3] img 'x'\n\t[4] link 'B'")
    tree = parse_tree(text, strict=True)
    assert tree.headers == ("Tab 0 (current): Home",)
    assert [i.depth for i in tree.items] == [0, 1, 2, 1]
    assert [i.line_no for i in tree.items] == [3, 4, 5, 6]
    again = parse_tree(tree.text(), strict=True)
    assert again == tree and [i.depth for i in again.items] == [0, 1, 2, 1]


@pytest.mark.parametrize("text, line_no, reason", [
    ("[1] RootWebArea 'r'\n\t\t\t[2] link 'a'", 2, "broken indentation: depth jumps from 0 to 3"),
    ("[1] RootWebArea 'r'\n\t[2] link 'a'\n\t[2] link 'b'", 3, r"duplicate id \[2\] \(first on line 2\)"),
    ("[1] RootWebArea 'r'\n    [2] link 'a'", 2, "indented with spaces"),
    ("[1] RootWebArea 'r'\n\tthis is not an item", 2, "not an item line"),
    ("[1] RootWebArea 'r'\n\t[2] link 'open", 2, "unterminated name"),
])
def test_bad_trees_fail_strictly_and_warn_leniently(text, line_no, reason):
    with pytest.raises(TreeParseError, match=f"line {line_no}: {reason}"):
        parse_tree(text, strict=True)
    tree = parse_tree(text)
    assert len(tree.warnings) == 1 and re.search(f"line {line_no}: {reason}", tree.warnings[0])
    assert tree.items[0].id == "1"


def test_duplicate_ids_stay_two_items():
    tree = parse_tree("[1] RootWebArea 'r'\n\t[2] link 'a'\n\t[2] link 'a'")
    assert [i.line for i in tree.items] == ["[1] RootWebArea 'r'", "[2] link 'a'", "[2] link 'a'"]
    changes = extract_changes(tree, parse_tree("[1] RootWebArea 'r'\n\t[2] link 'a'"))
    assert [i.line for i in changes.deleted] == ["[2] link 'a'"] and not changes.new and not changes.updated


# -- extraction ----------------------------------------------------------------------------------

def test_unrelated_items_are_new_and_deleted_not_updated():
    """WMA's script forces every item of the smaller tree into a match, so a new heading could
    come out as an update of a deleted link; here only plausible pairs match."""
    changes = extract_changes("[1] RootWebArea 'p'\n\t[5] link 'Old'", "[1] RootWebArea 'p'\n\t[9] heading 'New'")
    assert [i.line for i in changes.new] == ["[9] heading 'New'"]
    assert [i.line for i in changes.deleted] == ["[5] link 'Old'"]
    assert changes.updated == ()


def test_same_id_is_preferred_over_a_look_alike():
    before = "[5] button 'Save' disabled: True"
    after = "[5] button 'Save'\n[8] button 'Save' disabled: True"
    changes = extract_changes(before, after)
    assert [(a.line, b.line) for a, b in changes.updated] == [("[5] button 'Save' disabled: True",
                                                                "[5] button 'Save'")]
    assert [i.line for i in changes.new] == ["[8] button 'Save' disabled: True"]


def test_identical_trees_have_no_changes():
    observation, _, following = real_pairs()[1]
    for text in (observation, following):
        assert not extract_changes(text, text).changed


def apply(before: list[str], sections: dict[str, list[str]], updated_old: list[str]) -> Counter:
    return Counter(before) - Counter(sections["deleted"]) - Counter(updated_old) + Counter(
        sections["new"]) + Counter(sections["updated"])


_tree_items = st.lists(st.builds(
    Item, id=st.integers(1, 12).map(str), role=st.sampled_from(["link", "button", "StaticText"]),
    name=st.sampled_from(["", "A", "B", "Add to Cart"]),
    attrs=st.sampled_from([(), (("focused", "True"),), (("expanded", "False"),)])), max_size=7)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tree_items, _tree_items)
def test_extraction_accounts_for_every_item(before, after):
    """before - deleted - (updated, old lines) + new + (updated, new lines) == after, as multisets;
    every pair is an allowed one; sections keep document order."""
    changes = extract_changes(parse_tree("\n".join(i.line for i in before)),
                              parse_tree("\n".join(i.line for i in after)))
    sections = changes.sections()
    assert apply([i.line for i in before], sections, [a.line for a, _ in changes.updated]) == Counter(
        i.line for i in after)
    assert all(matchable(a, b) and a.line != b.line for a, b in changes.updated)


def brute_force_cost(before: list[Item], after: list[Item]) -> float:
    """The least total cost over every partial matching of allowed pairs (exponential)."""
    n, m = len(before), len(after)
    best = UNMATCHED_COST * (n + m)
    for k in range(1, min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.permutations(range(m), k):
                if not all(matchable(before[i], after[j]) for i, j in zip(rows, cols)):
                    continue
                cost = sum(match_cost(before[i], after[j], abs(i / n - j / m)) for i, j in zip(rows, cols))
                best = min(best, cost + UNMATCHED_COST * (n + m - 2 * k))
    return best


@settings(max_examples=150, deadline=None)
@given(_tree_items.filter(lambda x: len(x) <= 4), _tree_items.filter(lambda x: len(x) <= 4))
def test_matching_is_optimal(before, after):
    pairs = match_items(before, after)
    n, m = len(before), len(after)
    cost = sum(match_cost(before[i], after[j], abs(i / max(n, 1) - j / max(m, 1))) for i, j in pairs)
    cost += UNMATCHED_COST * (n + m - 2 * len(pairs))
    assert cost == pytest.approx(brute_force_cost(before, after))


def test_miniweb_transitions_account_for_every_item():
    from rlvr_envs.web.mini_web import MiniWebConfig, generate

    for index in range(60):
        row = generate(MiniWebConfig(), 5, index)
        before, after = parse_tree(row["observation"], strict=True), parse_tree(row["next_state_acctree"], strict=True)
        changes = extract_changes(before, after)
        assert apply(before.lines(), changes.sections(), [a.line for a, _ in changes.updated]) == Counter(
            after.lines())


# -- the linear parser reads the same language as the former regular expressions ---------------

_REF_NODE = re.compile(r"\[\s*(?P<id>[^\]\s]+)\s*\]\s+(?P<role>\S+)(?:\s+(?P<rest>.*?))?\s*$")
_REF_ATTRS = re.compile(r"(?:\s+[A-Za-z_][\w\-]*:\s+\S.*)?\s*")
_REF_ATTR_START = re.compile(r"\s+(?=[A-Za-z_][\w\-]*:\s)")


def reference_parse_item(line: str):
    """The former regex parser (backtracking: quadratic on long whitespace runs), kept as
    the specification of the accepted language for short lines."""
    stripped = line.lstrip(" \t")
    match = _REF_NODE.fullmatch(stripped)
    if match is None:
        return "not an item line"
    rest = match.group("rest") or ""
    name, tail = None, rest
    if rest[:1] in ("'", '"'):
        for i in (i for i in range(len(rest) - 1, 0, -1) if rest[i] == rest[0]):
            if _REF_ATTRS.fullmatch(rest[i + 1:]):
                name, tail = rest[1:i], rest[i + 1:]
                break
        else:
            return "unterminated name"
    elif rest and not _REF_ATTRS.fullmatch(" " + rest):
        return "expected a quoted name"
    pairs = []
    for chunk in _REF_ATTR_START.split(" " + tail.strip()) if tail.strip() else ():
        if chunk.strip():
            key, _, value = chunk.strip().partition(":")
            pairs.append((key, value.strip()))
    return (match.group("id"), match.group("role"), name, tuple(pairs))


_line_parts = st.sampled_from(["[", "]", " ", "\t", "\n", "'", '"', ":", "a", "B", "1", "-", "_", "k: ", " x: y",
                               "\xa0", "é", "\u3000", "link", " focused: True", "[1] ", "[ 12 ] button ", "'a'",
                               ":\n", "\r", " k: a'b", " k: x:", "  k:  v w"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_line_parts, max_size=14).map("".join), st.booleans())
def test_linear_parser_equals_the_former_regular_expressions(body, with_head):
    line = ("[7] " + body) if with_head else body
    expected = reference_parse_item(line)
    try:
        item = parse_item(line)
        got = (item.id, item.role, item.name, item.attrs)
    except TreeParseError as exc:
        got = exc.reason
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected)
    else:
        assert got == expected
