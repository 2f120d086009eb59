"""WebArena accessibility trees as text: parsing, the canonical item line, change extraction.

WebArena (and WMA / RLVR-World after it) shows a web page to a language model as its
accessibility tree, one node a line, indented with one tab per depth::

    [1] RootWebArea 'Health & Household' focused: True
    	[407] combobox ' Search' autocomplete: both hasPopup: listbox required: False expanded: False
    	[410] button 'Search' disabled: True

A line is `[ID] role 'name' key: value key: value ...`. WebArena writes the name with
Python's `repr`, so it is double-quoted when it contains `'` (and escapes such as `\\ue60b`
stay in the text as written); the WMA data also has names single-quoted around embedded
quotes (`'Search results for: 'HP Inkjet Fax Machine''`). Lines such as
`Tab 0 (current): <title>` are headers, not nodes.

**Canonical line** (`Item.line`, the unit the web reward compares): no indentation,
single spaces between the parts, `[ID] role`, then the name quoted as `repr` would choose
(single quotes unless the name holds `'` and no `"`, then double quotes), then each
attribute as `key: value` in the tree's order. The name itself is kept verbatim (nothing
is unescaped). So the same node written with tabs, extra spaces or the other quote style
has one canonical line, and `parse_item(item.line)` gives the item back.

**Change extraction** (`extract_changes`): the gold target of a (tree, next tree) pair is
which items are new, deleted or updated. Items are matched by an optimal assignment
(scipy's `linear_sum_assignment`, the Hungarian algorithm) under the cost in
`match_cost`; matched pairs whose canonical lines differ are *updated* (reported with the
next tree's line), unmatched next-tree items are *new*, unmatched current-tree items are
*deleted*. Unlike WMA's reference script, which forces every item of the smaller tree to
match something (so an unrelated new heading can come out as an "update" of a deleted
link), a pair is only allowed between items that are plausibly the same node: the same id,
or the same role and name (a node re-rendered under a new id).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

#: `[ID] role rest`; the id is any run of non-space characters inside the brackets
_NODE = re.compile(r"\[\s*(?P<id>[^\]\s]+)\s*\]\s+(?P<role>\S+)(?:\s+(?P<rest>.*?))?\s*$")
#: `Tab 0 (current): title` lines that precede a tree in WebArena observations
_TAB_HEADER = re.compile(r"Tab\s+\d+(?:\s*\(current\))?\s*:")
#: one attribute key, as WebArena writes them (`hasPopup`, `required`, `aria-live`, ...)
_ATTR_KEY = r"[A-Za-z_][\w\-]*"
_ATTR_START = re.compile(rf"\s+(?={_ATTR_KEY}:\s)")
_ATTRS = re.compile(rf"(?:\s+{_ATTR_KEY}:\s+\S.*)?\s*")


class TreeParseError(ValueError):
    """A tree or item line could not be parsed; `line_no` (1-based) and `line` say where."""

    def __init__(self, line_no: int, line: str, reason: str):
        self.line_no, self.line, self.reason = line_no, line, reason
        shown = line if len(line) <= 120 else line[:117] + "..."
        super().__init__(f"line {line_no}: {reason}: {shown!r}")


@dataclass(frozen=True)
class Item:
    """One node of an accessibility tree.

    `name` is None when the line has no quoted name at all (WebArena always writes one,
    possibly ''); `attrs` keeps the tree's order; `depth` (number of leading tabs) and
    `line_no` say where the item stood and take no part in equality.
    """

    id: str
    role: str
    name: str | None
    attrs: tuple[tuple[str, str], ...] = ()
    depth: int = field(default=0, compare=False)
    line_no: int = field(default=0, compare=False)

    @property
    def line(self) -> str:
        """The canonical line (see the module docstring)."""
        parts = [f"[{self.id}] {self.role}"]
        if self.name is not None:
            parts.append(quote_name(self.name))
        parts.extend(f"{key}: {value}" for key, value in self.attrs)
        return " ".join(parts)

    def indented(self) -> str:
        """The line as it stands in a tree (tabs for depth)."""
        return "\t" * self.depth + self.line


def quote_name(name: str) -> str:
    """Quote a name the way `repr` chooses quotes, without escaping its content."""
    if "'" in name and '"' not in name:
        return f'"{name}"'
    return f"'{name}'"


def _split_attrs(tail: str) -> tuple[tuple[str, str], ...]:
    tail = tail.strip()
    if not tail:
        return ()
    pairs = []
    for chunk in _ATTR_START.split(" " + tail):
        chunk = chunk.strip()
        if not chunk:
            continue
        key, _, value = chunk.partition(":")
        pairs.append((key, value.strip()))
    return tuple(pairs)


def parse_item(line: str, line_no: int = 1) -> Item:
    """Parse one item line (indentation allowed); raise `TreeParseError` naming the line.

    The name ends at the *last* quote of its kind that is followed by nothing or by
    `key: value` attributes, so names with embedded quotes parse; an attribute value that
    itself contains that quote character would be read into the name (not seen in WebArena
    data, whose attribute values are booleans, enums, numbers and ids).
    """
    stripped = line.lstrip(" \t")
    depth = len(line) - len(line.lstrip("\t"))
    match = _NODE.fullmatch(stripped)
    if match is None:
        raise TreeParseError(line_no, line, "not an item line ('[ID] role 'name' key: value ...')")
    rest = match.group("rest") or ""
    name: str | None = None
    tail = rest
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        closing = [i for i in range(len(rest) - 1, 0, -1) if rest[i] == quote]
        for i in closing:
            if _ATTRS.fullmatch(rest[i + 1:]):
                name, tail = rest[1:i], rest[i + 1:]
                break
        else:
            raise TreeParseError(line_no, line, "unterminated name (no closing quote before the attributes)")
    elif rest and not _ATTRS.fullmatch(" " + rest):
        raise TreeParseError(line_no, line, "expected a quoted name or 'key: value' attributes after the role")
    return Item(id=match.group("id"), role=match.group("role"), name=name, attrs=_split_attrs(tail),
                depth=depth, line_no=line_no)


@dataclass(frozen=True)
class Tree:
    """A parsed tree: the items in document order, the header lines, and warnings.

    Warnings name the line of every irregularity that lenient parsing let through
    (unparsable lines it skipped, indentation that jumps or uses spaces, duplicate ids).
    """

    items: tuple[Item, ...]
    headers: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def lines(self) -> list[str]:
        return [item.line for item in self.items]

    def text(self) -> str:
        """The tree in WebArena's indented text form (headers first)."""
        return "\n".join([*self.headers, *(item.indented() for item in self.items)])


def parse_tree(text: str, strict: bool = False) -> Tree:
    """Parse WebArena accessibility-tree text.

    Blank lines and `Tab N (current): ...` headers are not items. With `strict=False`
    (how datasets are read, and how WMA's own script read them) a line that is not an item
    is skipped, a depth jump of more than one level, space indentation and a repeated id
    are accepted, and each is recorded in `Tree.warnings` with its line number; the
    extraction never uses depth, and repeated ids simply stay two items. With
    `strict=True` each of these raises `TreeParseError` naming the line.
    """
    items: list[Item] = []
    headers: list[str] = []
    warnings: list[str] = []
    seen: dict[str, int] = {}
    previous_depth = -1

    def problem(line_no: int, line: str, reason: str) -> None:
        if strict:
            raise TreeParseError(line_no, line, reason)
        warnings.append(str(TreeParseError(line_no, line, reason)))

    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if _TAB_HEADER.match(line.lstrip()) and not _NODE.fullmatch(line.strip()):
            headers.append(line.strip())
            continue
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        try:
            item = parse_item(line, line_no)
        except TreeParseError as exc:
            problem(line_no, line, exc.reason)
            continue
        if " " in indent:
            problem(line_no, line, "indented with spaces (WebArena indents with one tab per depth)")
        if item.depth > previous_depth + 1:
            problem(line_no, line, f"broken indentation: depth jumps from {max(previous_depth, 0)} to {item.depth}")
        if item.id in seen:
            problem(line_no, line, f"duplicate id [{item.id}] (first on line {seen[item.id]})")
        seen.setdefault(item.id, line_no)
        previous_depth = item.depth
        items.append(item)
    return Tree(tuple(items), tuple(headers), tuple(warnings))


def as_tree(tree: Tree | str) -> Tree:
    return tree if isinstance(tree, Tree) else parse_tree(tree)


# -- change extraction ---------------------------------------------------------------------

#: cost of leaving an item unmatched (it is then new or deleted)
UNMATCHED_COST = 3.0
#: a pair between different ids costs at least this; any same-id pair costs less
OTHER_ID_COST = 4.0
NAME_COST = 1.5
ROLE_COST = 1.0
ATTRS_COST = 1.0
POSITION_COST = 0.25
_FORBIDDEN = 1e6


def matchable(a: Item, b: Item) -> bool:
    """Whether `a` (current tree) may be matched to `b` (next tree) at all: the same id, or
    the same role and name (the same node re-rendered under a new id)."""
    return a.id == b.id or (a.role == b.role and a.name == b.name)


def match_cost(a: Item, b: Item, position_gap: float = 0.0) -> float:
    """The cost of reading `b` as `a` after the action (only for `matchable` pairs).

    cost = 4·[ids differ] + 1.5·[names differ] + 1·[roles differ]
           + 1·(share of attributes not equal) + 0.25·position_gap,
    with `position_gap` = |i/n - j/m| in [0, 1] (relative places in the two documents).

    Why these numbers: an identical item costs only its position gap, so it is always kept
    as unchanged; any same-id pair (at most 1.5 + 1 + 1 + 0.25 = 3.75) is cheaper than any
    pair across ids (at least 4), so a node that keeps its id is preferred over a look-alike;
    every allowed pair costs less than leaving both items unmatched (2 × 3 = 6), so the
    assignment keeps every plausible correspondence; and among look-alikes (twenty
    "Add to Cart" buttons) the position term pairs them in document order.
    """
    keys = {key for key, _ in a.attrs} | {key for key, _ in b.attrs}
    attr_share = 0.0
    if keys:
        da, db = dict(a.attrs), dict(b.attrs)
        attr_share = sum(da.get(k) != db.get(k) for k in keys) / len(keys)
    return (OTHER_ID_COST * (a.id != b.id) + NAME_COST * (a.name != b.name) + ROLE_COST * (a.role != b.role)
            + ATTRS_COST * attr_share + POSITION_COST * position_gap)


@dataclass(frozen=True)
class Changes:
    """What an action changed: items of the next tree that are new, items of the current
    tree that are deleted, and (current, next) pairs of matched items whose lines differ."""

    new: tuple[Item, ...]
    deleted: tuple[Item, ...]
    updated: tuple[tuple[Item, Item], ...]

    @property
    def changed(self) -> bool:
        return bool(self.new or self.deleted or self.updated)

    def sections(self) -> dict[str, list[str]]:
        """Canonical lines per section (`new`, `deleted`, `updated`; updated items are
        reported with their next-tree line, as WMA does). Empty sections are empty lists;
        the answer format writes them as `None` (see `web_changes`)."""
        return {"new": [i.line for i in self.new], "deleted": [i.line for i in self.deleted],
                "updated": [b.line for _, b in self.updated]}


def _components(n: int, edges: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in edges:
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    groups: dict[int, list[int]] = defaultdict(list)
    for x in range(n):
        groups[find(x)].append(x)
    return groups


def match_items(before: Sequence[Item], after: Sequence[Item]) -> list[tuple[int, int]]:
    """The optimal partial matching of `before` to `after` as (i, j) index pairs.

    Minimises the sum of `match_cost` over matched pairs plus `UNMATCHED_COST` per
    unmatched item, over matchings that use only `matchable` pairs. The bipartite graph of
    allowed pairs splits into independent components (items that share an id or a
    role+name); each is solved exactly with `linear_sum_assignment` on the square matrix
    [[pair costs, deletion diagonal], [insertion diagonal, 0]], which is the whole problem's
    optimum because no allowed pair crosses components. Components are tiny on real pages,
    which keeps 500-line trees fast.
    """
    from scipy.optimize import linear_sum_assignment

    n, m = len(before), len(after)
    by_id: dict[str, list[int]] = defaultdict(list)
    by_content: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for j, b in enumerate(after):
        by_id[b.id].append(j)
        by_content[(b.role, b.name)].append(j)
    candidates: dict[int, set[int]] = {}
    edges = []
    for i, a in enumerate(before):
        js = set(by_id.get(a.id, ())) | set(by_content.get((a.role, a.name), ()))
        candidates[i] = js
        edges.extend((i, n + j) for j in js)

    pairs: list[tuple[int, int]] = []
    for members in _components(n + m, edges).values():
        rows = [x for x in members if x < n]
        cols = [x - n for x in members if x >= n]
        if not rows or not cols:
            continue
        if len(rows) == 1 and len(cols) == 1:  # the common case: one item, one candidate
            pairs.append((rows[0], cols[0]))
            continue
        k, l_ = len(rows), len(cols)
        cost = np.full((k + l_, l_ + k), _FORBIDDEN)
        for r, i in enumerate(rows):
            for c, j in enumerate(cols):
                if j in candidates[i]:
                    gap = abs(i / max(n, 1) - j / max(m, 1))
                    cost[r, c] = match_cost(before[i], after[j], gap)
            cost[r, l_ + r] = UNMATCHED_COST
        for c in range(l_):
            cost[k + c, c] = UNMATCHED_COST
        cost[k:, l_:] = 0.0
        row_ind, col_ind = linear_sum_assignment(cost)
        for r, c in zip(row_ind, col_ind):
            if r < k and c < l_ and cost[r, c] < _FORBIDDEN:
                pairs.append((rows[r], cols[c]))
    return sorted(pairs)


def extract_changes(before: Tree | str, after: Tree | str) -> Changes:
    """New, deleted and updated items between two trees (see `match_items`).

    Sections keep document order: new and updated in the next tree's order, deleted in the
    current tree's.
    """
    a_items, b_items = as_tree(before).items, as_tree(after).items
    pairs = match_items(a_items, b_items)
    matched_a = {i for i, _ in pairs}
    matched_b = {j: i for i, j in pairs}
    new = tuple(b for j, b in enumerate(b_items) if j not in matched_b)
    deleted = tuple(a for i, a in enumerate(a_items) if i not in matched_a)
    updated = tuple((a_items[matched_b[j]], b) for j, b in enumerate(b_items)
                    if j in matched_b and a_items[matched_b[j]].line != b.line)
    return Changes(new=new, deleted=deleted, updated=updated)
