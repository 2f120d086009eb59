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

**Bounded work.** Model output and downloaded data go through these functions, so every
step is linear or near-linear in its input: item lines are read by string scanning and
regular expressions without overlapping quantifiers (the former patterns took 91 s on one
100 KB line), and the matching groups look-alike items instead of costing every pair (the
former dense assignment took 20 s and 742 MB for 2,000 identical items and could not run
100,000; now about a second). See `match_items` for when the result is the exact optimum.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: `Tab 0 (current): title` lines that precede a tree in WebArena observations (no two
#: adjacent quantifiers can take the same characters, so matching is linear)
_TAB_HEADER = re.compile(r"Tab\s+\d+\s*(?:\(current\)\s*)?:")
#: one attribute key, as WebArena writes them (`hasPopup`, `required`, `aria-live`, ...),
#: followed by its colon and a whitespace character
_KEY_COLON_SPACE = re.compile(r"[A-Za-z_][\w\-]*:\s")
_WHITESPACE_RUN = re.compile(r"\s+")
_KEY_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


_NONSPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")
#: the usual item head, `[ID] role`, matched without any backtracking (`[^\]\s]+` and `\]`
#: cannot take the same character; `\S+` ends the pattern)
_HEAD = re.compile(r"\[([^\]\s]+)\] (\S+)")
#: the common item line in full: `[ID] role`, an optional name in either quotes holding no
#: quote of its kind, then ` key: value` attributes whose values hold no space, quote or
#: colon (each part ends where the next begins, so there is no backtracking); any other
#: line takes the general path, which reads the same lines to the same items
_FAST_ITEM = re.compile(r"\[([^\]\s]+)\] (\S+)(?: '([^'\n]*)'| \"([^\"\n]*)\")?((?: [A-Za-z_][\w\-]*: [^\s'\":]+)*)")
_FAST_ATTR = re.compile(r" ([A-Za-z_][\w\-]*): ([^\s'\":]+)")
#: what may follow a name: whitespace, `key:`, whitespace, a value character (adjacent
#: parts cannot take the same characters, so a failed match costs its length once)
_ATTR_HEAD = re.compile(r"\s+[A-Za-z_][\w\-]*:\s+\S")


def _skip_space(text: str, i: int) -> int:
    """The first index at or after `i` that is not whitespace (`str.isspace`, which is
    exactly what regular expressions call `\\s`)."""
    match = _NONSPACE.search(text, i)
    return match.start() if match else len(text)


def _skip_nonspace(text: str, i: int) -> int:
    match = _SPACE.search(text, i)
    return match.start() if match else len(text)


def _node_fields(text: str) -> tuple[str, str, str] | None:
    """(id, role, rest) of an item line without its indentation, or None.

    Accepts exactly the lines `\\[\\s*(?P<id>[^\\]\\s]+)\\s*\\]\\s+(?P<role>\\S+)(?:\\s+(?P<rest>.*?))?\\s*`
    matches in full, with `rest` stripped of outer whitespace: `[`, an id (no `]` and no
    whitespace, spaces allowed around it), `]`, whitespace, a role (no whitespace), then
    optionally whitespace and the rest, which cannot span a line break. One pass over the
    text; the regular expression took quadratic time on long whitespace runs.
    """
    head = _HEAD.match(text)
    if head is not None:  # the usual form, read by one regular expression
        rest = text[head.end():].strip()
        return (head.group(1), head.group(2), rest) if "\n" not in rest else None
    if not text.startswith("["):
        return None
    n = len(text)
    start = _skip_space(text, 1)
    end = start
    while end < n and text[end] != "]" and not text[end].isspace():
        end += 1
    if end == start:
        return None
    close = _skip_space(text, end)
    if close >= n or text[close] != "]":
        return None
    role_start = _skip_space(text, close + 1)
    if role_start == close + 1 or role_start >= n:
        return None
    role_end = _skip_nonspace(text, role_start)
    rest = text[role_end:].strip()
    if "\n" in rest:
        return None
    return text[start:end], text[role_start:role_end], rest


def _is_attribute_tail(text: str, start: int = 0, one_line: bool = False) -> bool:
    """Whether `text[start:]` is nothing but whitespace, or whitespace, `key:`, whitespace
    and a value (then anything on the same line): what may follow an item's name.

    Equal to `re.fullmatch(r"(?:\\s+KEY:\\s+\\S.*)?\\s*", text[start:])`, decided by reading only
    the leading whitespace, the key and the whitespace after its colon, so trying every
    quote of a long name stays linear. `one_line=True` says the caller knows `text` holds
    no line break (item rests never do), which skips the one search for it.
    """
    if _NONSPACE.search(text, start) is None:
        return True
    match = _ATTR_HEAD.match(text, start)
    if match is None:
        return False
    k = match.end() - 1  # the value's first character
    if one_line:
        return True
    last = len(text.rstrip())  # the value runs to the last non-space character, within one line
    return text.find("\n", k, last) < 0


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
    """`key: value` pairs of an attribute tail; a pair starts at each whitespace run that is
    followed by `key:` and whitespace (so values may hold spaces). Linear: every run is
    found once and looked past once."""
    tail = tail.strip()
    if not tail:
        return ()
    text = " " + tail
    cuts = [m.start() for m in _WHITESPACE_RUN.finditer(text) if _KEY_COLON_SPACE.match(text, m.end())]
    pairs = []
    for begin, end in zip(cuts, cuts[1:] + [len(text)]):
        chunk = text[begin:end].strip()
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
    fast = _FAST_ITEM.fullmatch(stripped)
    if fast is not None:
        item_id, role, single, double, attrs = fast.groups()
        return Item(id=item_id, role=role, name=single if single is not None else double,
                    attrs=tuple(_FAST_ATTR.findall(attrs)), depth=depth, line_no=line_no)
    fields = _node_fields(stripped)
    if fields is None:
        raise TreeParseError(line_no, line, "not an item line ('[ID] role 'name' key: value ...')")
    item_id, role, rest = fields
    name: str | None = None
    tail = rest
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        i = rest.rfind(quote)
        while i > 0 and not _is_attribute_tail(rest, i + 1, one_line=True):
            i = rest.rfind(quote, 0, i)
        if i <= 0:
            raise TreeParseError(line_no, line, "unterminated name (no closing quote before the attributes)")
        name, tail = rest[1:i], rest[i + 1:]
    elif rest and not _is_attribute_tail(" " + rest, one_line=True):
        raise TreeParseError(line_no, line, "expected a quoted name or 'key: value' attributes after the role")
    return Item(id=item_id, role=role, name=name, attrs=_split_attrs(tail), depth=depth, line_no=line_no)


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
        if _TAB_HEADER.match(line.lstrip()) and _node_fields(line.strip()) is None:
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


#: a component of k + l items is solved exactly (one assignment over a (k+l)² matrix)
#: when (k+l)² is at most this (400 items)
EXACT_SIZE = 160_000
#: at most this many matrix cells are solved exactly per extraction (real pages need a
#: few thousand); components beyond it are matched by `_match_large`
EXACT_BUDGET = 500_000
#: inside `_match_large`, groups of at most this many matrix cells are solved exactly
_SMALL_GROUP_SIZE = 10_000


def _components(before: Sequence[Item], after: Sequence[Item]) -> list[tuple[list[int], list[int]]]:
    """The connected components of the allowed-pair graph, as (before rows, after columns).

    Items are joined through their id and their (role, name) when the other tree has that
    id / role+name too: every before-item of such a group may pair with every after-item of
    it, so joining through the groups gives exactly the components of the pair graph, in
    time linear in the number of items (the pairs themselves can be quadratic). The
    union-find runs over groups, once per distinct (id, role+name) combination.
    """
    ids_after = {b.id for b in after}
    content_after = {(b.role, b.name) for b in after}
    ids_both = {a.id for a in before if a.id in ids_after}
    content_both = {(a.role, a.name) for a in before if (a.role, a.name) in content_after}
    parent: dict[tuple, tuple] = {}

    def find(x: tuple) -> tuple:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def groups(item: Item) -> tuple[tuple | None, tuple | None]:
        id_key = ("id", item.id) if item.id in ids_both else None
        content = (item.role, item.name)
        return id_key, (("content", *content) if content in content_both else None)

    keys = [groups(item) for item in before] + [groups(item) for item in after]
    for id_key, content_key in set(keys):
        for key in (id_key, content_key):
            if key is not None and key not in parent:
                parent[key] = key
        if id_key is not None and content_key is not None:
            rx, ry = find(id_key), find(content_key)
            if rx != ry:
                parent[ry] = rx
    n = len(before)
    members: dict[tuple, tuple[list[int], list[int]]] = {}
    for x, (id_key, content_key) in enumerate(keys):
        key = id_key if id_key is not None else content_key
        if key is None:
            continue
        rows, cols = members.setdefault(find(key), ([], []))
        if x < n:
            rows.append(x)
        else:
            cols.append(x - n)
    return [(rows, cols) for rows, cols in members.values() if rows and cols]


def _match_exact(before: Sequence[Item], after: Sequence[Item], rows: list[int],
                 cols: list[int]) -> list[tuple[int, int]]:
    """The optimal partial matching of `rows` to `cols` (allowed pairs only), with
    `linear_sum_assignment` on the square matrix [[pair costs, deletion diagonal],
    [insertion diagonal, 0]] (forbidden pairs cost `_FORBIDDEN`)."""
    from scipy.optimize import linear_sum_assignment

    n, m = len(before), len(after)
    k, l_ = len(rows), len(cols)
    cost = np.full((k + l_, l_ + k), _FORBIDDEN)
    for r, i in enumerate(rows):
        a = before[i]
        for c, j in enumerate(cols):
            b = after[j]
            if matchable(a, b):
                cost[r, c] = match_cost(a, b, abs(i / max(n, 1) - j / max(m, 1)))
        cost[r, l_ + r] = UNMATCHED_COST
    for c in range(l_):
        cost[k + c, c] = UNMATCHED_COST
    cost[k:, l_:] = 0.0
    row_ind, col_ind = linear_sum_assignment(cost)
    return [(rows[r], cols[c]) for r, c in zip(row_ind, col_ind) if r < k and c < l_ and cost[r, c] < _FORBIDDEN]


def _pair_in_order(rows: list[int], cols: list[int], n: int, m: int) -> list[tuple[int, int]]:
    """Pair two sorted index lists monotonically: all of the shorter list, each to the
    element of the longer one at the same rank scaled to its length (for one element, the
    nearest relative position). For equal lengths this is the matching that minimises the
    position term (pairing points on a line in sorted order)."""
    if not rows or not cols:
        return []
    if len(rows) == len(cols):
        return list(zip(rows, cols))
    swap = len(rows) > len(cols)
    short, long_, ns, nl = (cols, rows, m, n) if swap else (rows, cols, n, m)
    if len(short) == 1:
        picked = [min(long_, key=lambda j: abs(short[0] / ns - j / nl))]
    else:
        scale = (len(long_) - 1) / (len(short) - 1)
        picked = [long_[round(t * scale)] for t in range(len(short))]
    pairs = list(zip(picked, short)) if swap else list(zip(short, picked))
    return pairs


def _match_large(before: Sequence[Item], after: Sequence[Item], rows: list[int], cols: list[int],
                 budget: list[int]) -> list[tuple[int, int]]:
    """A near-linear matching for components too large for one exact assignment (long
    lists of look-alike items): pairs are taken in the order of the cost's preferences.

    1. identical items (same id, role, name and attributes: cost = position term only)
       are paired in document order;
    2. what is left is grouped by id (any same-id pair is cheaper than any pair across
       ids); each group is solved exactly when small, else paired by role and name, then
       in document order (groups of at most 100 items are solved exactly while the
       extraction's `EXACT_BUDGET` lasts);
    3. what is left is grouped by role and name (pairs across ids), paired by attributes,
       then in document order.
    Every step only pairs allowed items, and each costs O(k log k) for k items.
    """
    n, m = max(len(before), 1), max(len(after), 1)
    pairs: list[tuple[int, int]] = []
    left_rows, left_cols = list(rows), list(cols)

    def by(key, sub_keys=()):
        nonlocal left_rows, left_cols
        groups = _groups(key, before, after, left_rows, left_cols)
        used_rows, used_cols = set(), set()
        for group_rows, group_cols in groups:
            size = (len(group_rows) + len(group_cols)) ** 2
            if sub_keys and size <= min(_SMALL_GROUP_SIZE, budget[0]):
                budget[0] -= size
                found = _match_exact(before, after, group_rows, group_cols)
            else:
                found = []
                for sub_key in sub_keys:  # finer groups first, then what remains in order
                    found += _grouped_in_order(before, after, group_rows, group_cols, sub_key, found, n, m)
                taken_r, taken_c = {i for i, _ in found}, {j for _, j in found}
                found += _pair_in_order([i for i in group_rows if i not in taken_r],
                                        [j for j in group_cols if j not in taken_c], n, m)
            pairs.extend(found)
            used_rows.update(i for i, _ in found)
            used_cols.update(j for _, j in found)
        left_rows = [i for i in left_rows if i not in used_rows]
        left_cols = [j for j in left_cols if j not in used_cols]

    by(lambda item: (item.id, item.role, item.name, item.attrs))
    by(lambda item: item.id, sub_keys=(lambda item: (item.role, item.name),))
    by(lambda item: (item.role, item.name), sub_keys=(lambda item: item.attrs,))
    return pairs


def _groups(key, before: Sequence[Item], after: Sequence[Item], rows: Sequence[int],
            cols: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """(rows, cols) of each value of `key` that both sides have, in first-seen order."""
    row_keys = [key(before[i]) for i in rows]
    col_keys = [key(after[j]) for j in cols]
    common = set(row_keys).intersection(col_keys)
    if not common:
        return []
    groups: dict[Any, tuple[list[int], list[int]]] = {}
    for i, k in zip(rows, row_keys):
        if k in common:
            group = groups.get(k)
            if group is None:
                group = groups[k] = ([], [])
            group[0].append(i)
    for j, k in zip(cols, col_keys):
        if k in common:
            groups[k][1].append(j)
    return list(groups.values())


def _grouped_in_order(before, after, rows, cols, key, taken, n, m) -> list[tuple[int, int]]:
    """`_pair_in_order` within the groups of `key`, skipping items already in `taken`."""
    taken_r, taken_c = {i for i, _ in taken}, {j for _, j in taken}
    found = []
    for group_rows, group_cols in _groups(key, before, after, [i for i in rows if i not in taken_r],
                                          [j for j in cols if j not in taken_c]):
        found += _pair_in_order(group_rows, group_cols, n, m)
    return found


def match_items(before: Sequence[Item], after: Sequence[Item]) -> list[tuple[int, int]]:
    """The optimal partial matching of `before` to `after` as (i, j) index pairs.

    Minimises the sum of `match_cost` over matched pairs plus `UNMATCHED_COST` per
    unmatched item, over matchings that use only `matchable` pairs. The bipartite graph of
    allowed pairs splits into independent components (items that share an id or a
    role+name); each is solved exactly with `linear_sum_assignment`, which is the whole
    problem's optimum because no allowed pair crosses components. Components are tiny on
    real pages, which keeps 500-line trees fast.

    Bounded work: a component of more than 400 items (`EXACT_SIZE`), or any component
    once `EXACT_BUDGET` matrix cells have been solved for this extraction, is matched
    by `_match_large` instead (identical items first, then same id, then same role and
    name, each in document order), so trees of 100,000 look-alike items are matched in
    about a second instead of exhausting memory. Such components never occur on real
    pages; there the result is the exact optimum.
    """
    pairs: list[tuple[int, int]] = []
    budget = [EXACT_BUDGET]
    for rows, cols in _components(before, after):
        size = (len(rows) + len(cols)) ** 2
        if size == 4:  # the common case: one item, one candidate
            pairs.append((rows[0], cols[0]))
        elif size <= min(EXACT_SIZE, budget[0]):
            budget[0] -= size
            pairs.extend(_match_exact(before, after, rows, cols))
        else:
            pairs.extend(_match_large(before, after, rows, cols, budget))
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
                    if j in matched_b and a_items[matched_b[j]] != b and a_items[matched_b[j]].line != b.line)
    return Changes(new=new, deleted=deleted, updated=updated)
