"""MiniWeb: a small procedural web-page simulator that yields WebArena-style transitions.

Why: the WMA data is a large download and its trees run to thousands of tokens. MiniWeb
gives the web-state task an embedded default that a small model can learn on a CPU, with
the same observation format (WebArena accessibility-tree text), the same action strings,
and gold targets made by the same change extraction (`acctree.extract_changes`) as the
real task. It is a documented generator, not a dataset.

What it simulates: three kinds of site (a shop, a forum, an admin panel) sharing a header
(home link, menu with a hover/click submenu, search box, sign-in dialog) over pages with
product lists, posts, record grids and forms. Actions, written as WebArena writes them
(`click [12] where [12] is button 'Add to Cart'`, `type [7] [desk lamp] [1]`,
`hover [..]`, `scroll [down]`, `go_back`), have the effects a browser would show:
links navigate (main content deleted and new, title updated), dialogs and menus open and
close, typing fills a textbox (focus moves, a StaticText child appears), Enter in the
search box lists results, forms complain about empty required fields or submit,
"Add to Cart" shows a message and updates the cart link, "Delete" removes a grid row,
"Upvote" updates a score, sorting opens a listbox, scrolling moves a window over a long
list (items leave and enter the viewport), and clicking plain text changes nothing.
Node ids grow like browser backend ids (new nodes get fresh, larger ids; a page reached
again with `go_back` keeps its old ids).

Besides the page, a browser keeps what the site's server would (`SiteState`: products in
the cart, searches, votes, submitted forms, deleted records), so goal tasks
(`rlvr_envs.web.goals`) check the true outcome of an episode, not the text of its last page.
`Browser.apply` performs a given WebArena action string and rejects, with a reason
(`ActionError`), anything outside the page's current affordances.

A transition is a pure function of (config, seed, index): a seeded generator builds a
page, applies up to `config.history` random earlier actions (which become the
`previous_actions`), records the tree, applies one more random action and records the
next tree. The record has the WMA field names (`url`, `objective`, `previous_actions`,
`current_action`, `observation`, `next_state_acctree`), so the real and procedural tasks
share one conversion.
"""

from __future__ import annotations

import copy
import random
import re
import string
from dataclasses import dataclass, field
from typing import Any


from rlvr_envs.core.util import index_rng
from rlvr_envs.web.acctree import Item

SITES = ("shop", "forum", "admin")

_ADJECTIVES = ("Organic", "Wireless", "Stainless", "Vintage", "Compact", "Deluxe", "Portable", "Ceramic",
               "Bamboo", "Foldable")
_NOUNS = ("Coffee Maker", "Yoga Mat", "Desk Lamp", "Water Bottle", "Running Shoes", "Backpack", "Fax Machine",
          "Tea Kettle", "Notebook", "Headphones", "Plant Pot", "Office Chair")
_CATEGORIES = ("Home & Kitchen", "Office Products", "Sports & Outdoors", "Electronics", "Health & Household")
_USERS = ("alice", "bob", "chen", "dana", "emeka", "farah", "gus", "hana")
_FORUMS = ("books", "gardening", "movies", "cooking", "travel")
_TOPICS = ("Best {} for beginners?", "My {} broke after a week", "Show off your {}", "Is this {} worth it?",
           "Looking for a cheap {}")
_WORDS = ("lamp", "mat", "kettle", "bottle", "chair", "shoes", "notebook", "pot")
_FIELDS = {"shop": ("Name", "Email", "Message"), "forum": ("Title", "Body"), "admin": ("Name", "Email", "Phone")}


@dataclass(frozen=True)
class MiniWebConfig:
    """Shape of the generated pages (all transitions of a task share one config)."""

    sites: tuple[str, ...] = SITES  #: which site kinds to draw from
    list_items: int = 3  #: items (products, posts, rows) visible at once on a list page
    list_extra: int = 3  #: up to this many more items lie below the viewport (for scrolling)
    history: int = 2  #: at most this many earlier actions lead to the current page

    def __post_init__(self):
        if isinstance(self.sites, str):
            object.__setattr__(self, "sites", (self.sites,))
        elif not isinstance(self.sites, tuple):
            object.__setattr__(self, "sites", tuple(self.sites))

    def validate(self) -> None:
        unknown = sorted(set(self.sites) - set(SITES))
        if not self.sites or unknown:
            raise ValueError(f"sites must be a non-empty subset of {SITES}, got {self.sites!r}")
        if not 1 <= self.list_items <= 20:
            raise ValueError(f"list_items must be in [1, 20], got {self.list_items}")
        if not 0 <= self.list_extra <= 20:
            raise ValueError(f"list_extra must be in [0, 20], got {self.list_extra}")
        if not 0 <= self.history <= 10:
            raise ValueError(f"history must be in [0, 10], got {self.history}")


@dataclass(frozen=True)
class Submission:
    """One form the site accepted: which form (the page title, or the dialog's name), the
    text of each field ('' when empty) and the state of each checkbox."""

    form: str
    fields: dict[str, str]
    checks: dict[str, bool]


@dataclass
class SiteState:
    """What the site's server keeps, in order of the actions that changed it (the page
    shows only part of it, and `go_back` restores pages, not this)."""

    cart: list[str] = field(default_factory=list)  #: names of the products added to the cart
    searches: list[str] = field(default_factory=list)  #: queries searched for
    votes: dict[int, tuple[str, bool]] = field(default_factory=dict)  #: upvote button id -> (post title, upvoted)
    submissions: list[Submission] = field(default_factory=list)  #: forms accepted
    deleted: list[str] = field(default_factory=list)  #: names of the deleted records


class ActionError(ValueError):
    """An action string the page cannot take; the message is the reason."""


#: the verbs MiniWeb performs (WebArena has more: press, new_tab, goto, stop, ...)
VERBS = ("click", "type", "hover", "scroll", "go_back")
#: characters a page, a typed text or an action may hold (printable ASCII, tab and newline)
CHARSET = string.printable
MAX_ACTION_CHARS = 2_000
MAX_TYPED_CHARS = 200
_TYPED_CHARS = frozenset(CHARSET) - frozenset("\t\n\r\x0b\x0c")
_WHERE = r"(?:\s+where\b.*)?"
_ACTION_FORMS = {
    "click": re.compile(r"click\s*\[\s*(\d+)\s*\]" + _WHERE, re.S),
    "hover": re.compile(r"hover\s*\[\s*(\d+)\s*\]" + _WHERE, re.S),
    "type": re.compile(r"type\s*\[\s*(\d+)\s*\]\s*\[(.*?)\](?:\s*\[([01])\])?" + _WHERE, re.S),
    "scroll": re.compile(r"scroll\s*\[\s*(down|up)\s*\]", re.S),
    "go_back": re.compile(r"go_back", re.S),
}
_FORMS_HELP = "click [id], type [id] [text] [0|1], hover [id], scroll [down|up] or go_back"


def parse_action(action: Any) -> tuple[str, int | str | None, str | None, bool]:
    """(verb, target id or scroll direction, typed text, press Enter) of a WebArena action
    string; raises `ActionError` saying why not. A trailing `where [id] is ...` is ignored;
    `type` presses Enter unless `[0]` follows the text (WebArena's default)."""
    if not isinstance(action, str):
        raise ActionError(f"an action is a string, got {type(action).__name__}")
    text = action.strip()
    if not text:
        raise ActionError("empty action")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    verb = re.match(r"[A-Za-z_]*", text).group(0)
    form = _ACTION_FORMS.get(verb)
    if form is None:
        raise ActionError(f"unsupported action {verb or text[:20]!r}: MiniWeb takes {_FORMS_HELP}")
    match = form.fullmatch(text)
    if match is None:
        raise ActionError(f"malformed {verb} action {text[:80]!r}: write {_FORMS_HELP}")
    if verb == "go_back":
        return verb, None, None, False
    if verb == "scroll":
        return verb, match.group(1), None, False
    if verb != "type":
        return verb, int(match.group(1)), None, False
    typed = match.group(2)
    if not typed.strip():
        raise ActionError("type needs a non-empty text")
    if len(typed) > MAX_TYPED_CHARS:
        raise ActionError(f"typed text longer than {MAX_TYPED_CHARS} characters")
    bad = sorted(set(typed) - _TYPED_CHARS)
    if bad:
        raise ActionError(f"typed text holds characters a page cannot show: {''.join(bad)[:10]!r}")
    return verb, int(match.group(1)), typed, match.group(3) != "0"


@dataclass
class Node:
    """A DOM node: what the tree shows (`role`, `name`, `attrs`) plus how it behaves."""

    id: int
    role: str
    name: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list["Node"] = field(default_factory=list)
    behavior: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The node's line without its id, as WebArena action strings quote it."""
        return Item(str(self.id), self.role, self.name, tuple(self.attrs.items())).line.split("] ", 1)[1]

    def walk(self, depth: int = 0):
        yield self, depth
        for child in self.children:
            yield from child.walk(depth + 1)


class _Browser:
    """One tab of a simulated site. Every action method mutates the page in place."""

    def __init__(self, rng: random.Random, config: MiniWebConfig):
        self.rng, self.config = rng, config
        self.next_id = rng.randint(1, 120)
        self.site = rng.choice(config.sites)
        self.history: list[tuple[str, str, Node]] = []
        self.cart = 0
        self.state = SiteState()
        self.root = self.node("RootWebArea", "", {"focused": "True"})
        self.root.children = self.header()
        self.main = self.node("main", "")
        self.root.children.append(self.main)
        self.url, self.title = "", ""
        self.open_page(self.rng.choice(self.landing_pages()), push=False)

    # -- building ---------------------------------------------------------------------------
    def node(self, role: str, name: str, attrs: dict[str, str] | None = None, children: list[Node] | None = None,
             behavior: str | None = None, **data: Any) -> Node:
        node_id = self.next_id
        self.next_id += self.rng.randint(1, 3)
        return Node(node_id, role, name, dict(attrs or {}), list(children or []), behavior, data)

    def product(self, word: str | None = None) -> dict[str, Any]:
        noun = self.rng.choice([n for n in _NOUNS if word is None or word in n.lower()] or list(_NOUNS))
        name = f"{self.rng.choice(_ADJECTIVES)} {noun}"
        return {"name": name, "price": f"${self.rng.randint(3, 300)}.{self.rng.choice(('00', '49', '99'))}"}

    def header(self) -> list[Node]:
        home = {"shop": "One Stop Market", "forum": "Postmill", "admin": "Magento Admin Panel"}[self.site]
        submenu = [self.node("menuitem", f" {c}", {}, behavior="nav", page="category") for c in _CATEGORIES[:3]]
        nodes = [
            self.node("link", home, behavior="nav", page=self.landing_pages()[0]),
            self.node("menuitem", " Categories" if self.site != "admin" else " Reports",
                      {"hasPopup": "menu", "expanded": "False"}, behavior="menu", submenu=submenu),
            self.node("link", "Sign In" if self.site != "admin" else "Account Settings", behavior="dialog"),
            self.node("textbox", "Search", {"required": "False"}, behavior="search"),
            self.node("button", "Search", behavior="search_button"),
        ]
        if self.site == "shop":
            nodes.insert(3, self.node("link", " My Cart", behavior="nav", page="contact"))
        return nodes

    def landing_pages(self) -> tuple[str, ...]:
        return {"shop": ("category", "product", "contact"), "forum": ("front", "post", "submit"),
                "admin": ("grid", "record")}[self.site]

    def list_page(self, heading: str, entries: list[dict[str, Any]], make) -> list[Node]:
        """A heading over a scrollable list: only `list_items` entries are in the viewport."""
        rows = [make(entry) for entry in entries]
        container = self.node("list", "", behavior=None, rows=rows, offset=0)
        container.children = rows[: self.config.list_items]
        return [self.node("heading", heading, behavior="text"), container]

    def page_nodes(self, page: str, query: str | None = None) -> tuple[str, str, list[Node]]:
        """(url path, title, main-content nodes) of a page."""
        count = self.config.list_items + self.rng.randint(0, self.config.list_extra)
        if page == "search" and self.site != "shop":
            page = "front" if self.site == "forum" else "grid"
        if page in ("category", "search"):
            if page == "search":
                title = f"Search results for: '{query}'"
                entries = [self.product(query) for _ in range(count)]
                path = f"/catalogsearch/result/?q={query.replace(' ', '+')}"
            else:
                category = self.rng.choice(_CATEGORIES)
                title = category
                entries = [self.product() for _ in range(count)]
                path = "/" + category.lower().replace(" & ", "-").replace(" ", "-") + ".html"

            def make(entry):
                return self.node("listitem", "", children=[
                    self.node("link", entry["name"], behavior="nav", page="product", product=entry),
                    self.node("StaticText", entry["price"], behavior="text"),
                    self.node("button", "Add to Cart", behavior="cart", product=entry)])
            sort = self.node("combobox", "Sort By", {"hasPopup": "listbox", "expanded": "False"}, behavior="sort")
            nodes = self.list_page(f"{title} Items 1-{min(count, self.config.list_items)} of {count}", entries, make)
            return path, title, [nodes[0], sort, nodes[1]]
        if page == "product":
            entry = self.product()
            return (f"/{entry['name'].lower().replace(' ', '-')}.html", entry["name"], [
                self.node("heading", entry["name"], behavior="text"),
                self.node("StaticText", entry["price"], behavior="text"),
                self.node("StaticText", "In stock", behavior="text"),
                self.node("textbox", "Qty", {"required": "False"}, behavior="field"),
                self.node("button", "Add to Cart", behavior="cart", product=entry),
                self.node("link", f"{self.rng.randint(1, 40)} Reviews", behavior="nav", page="category")])
        if page == "front":
            forum = self.rng.choice(_FORUMS)

            def make(entry):
                return self.node("article", "", children=[
                    self.node("link", entry["title"], behavior="nav", page="post"),
                    self.node("StaticText", f"Submitted by {entry['user']} {entry['hours']} hours ago",
                              behavior="text"),
                    self.node("StaticText", str(entry["score"]), behavior="text"),
                    self.node("button", "Upvote", behavior="upvote")])
            entries = [{"title": self.rng.choice(_TOPICS).format(query or self.rng.choice(_WORDS)),
                        "user": self.rng.choice(_USERS), "hours": self.rng.randint(1, 23),
                        "score": self.rng.randint(0, 99)} for _ in range(count)]
            if query:
                return f"/search?q={query}", f"Search results for: '{query}'", self.list_page(
                    f"Search results for: '{query}'", entries, make)
            return f"/f/{forum}", f"/f/{forum}", self.list_page(f"/f/{forum}", entries, make)
        if page == "post":
            topic = self.rng.choice(_TOPICS).format(self.rng.choice(_WORDS))
            replies = ("+1", "Same here.", "Try the other one.", "Thanks!")
            comments = [self.node("StaticText", f"{self.rng.choice(_USERS)}: {self.rng.choice(replies)}", behavior="text")
                        for _ in range(self.rng.randint(1, 3))]
            return f"/f/{self.rng.choice(_FORUMS)}/{self.rng.randint(10, 999)}", topic, [
                self.node("heading", topic, behavior="text"),
                self.node("StaticText", str(self.rng.randint(0, 99)), behavior="text"),
                self.node("button", "Upvote", behavior="upvote"),
                *comments,
                self.node("textbox", "Comment", {"required": "True"}, behavior="field"),
                self.node("button", "Post", behavior="submit")]
        if page == "grid":
            def make(entry):
                return self.node("row", "", children=[
                    self.node("gridcell", entry["name"], {"required": "False"}, behavior="text"),
                    self.node("gridcell", entry["email"], {"required": "False"}, behavior="text"),
                    self.node("button", "Delete", behavior="delete")])
            entries = [{"name": f"{u.title()} {self.rng.choice(('Lee', 'Kim', 'Diaz', 'Okafor'))}",
                        "email": f"{u}{self.rng.randint(1, 99)}@example.com"}
                       for u in self.rng.sample(_USERS, min(count, len(_USERS)))]
            nodes = self.list_page(f"{len(entries)} records found", entries, make)
            nodes[1].role = "table"
            return "/admin/customer/index/", "Customers / Magento Admin", nodes
        if page in ("contact", "submit", "record"):
            heading = {"contact": "Contact Us", "submit": "Create submission", "record": "Edit Customer"}[page]
            fields = [self.node("textbox", f, {"required": "True" if i < 2 else "False"}, behavior="field")
                      for i, f in enumerate(_FIELDS[self.site])]
            return f"/{page}", heading, [
                self.node("heading", heading, behavior="text"), *fields,
                self.node("checkbox", "Remember me" if page != "record" else "Subscribe to newsletter",
                          {"checked": "false"}, behavior="checkbox"),
                self.node("button", "Submit" if page != "submit" else "Create submission", behavior="submit")]
        if page == "thanks":
            return "/success", "Success", [
                self.node("heading", "Thank you", behavior="text"),
                self.node("StaticText", "Your request has been saved.", behavior="text"),
                self.node("link", "Continue", behavior="nav", page=self.landing_pages()[0])]
        raise ValueError(f"unknown page {page!r}")

    def open_page(self, page: str, query: str | None = None, push: bool = True) -> None:
        if push:
            self.history.append((self.url, self.title, copy.deepcopy(self.main)))
        path, title, nodes = self.page_nodes(page, query)
        host = {"shop": "http://onestopmarket.com", "forum": "http://postmill.local", "admin": "http://shop.admin"}
        self.url, self.title = host[self.site] + path, title
        self.root.name = title
        self.main.children = nodes
        self.close_dialog()

    # -- rendering ----------------------------------------------------------------------------
    def text(self) -> str:
        lines = [f"Tab 0 (current): {self.title}"]
        for node, depth in self.root.walk():
            lines.append(Item(str(node.id), node.role, node.name, tuple(node.attrs.items()), depth).indented())
        return "\n".join(lines)

    def find(self, node_id: int) -> tuple[Node, Node | None]:
        for node, _ in self.root.walk():
            for child in node.children:
                if child.id == node_id:
                    return child, node
        return self.root, None

    # -- actions ------------------------------------------------------------------------------
    def affordances(self) -> list[tuple[float, str, Any]]:
        """(weight, verb, target) of every action the page offers."""
        options: list[tuple[float, str, Any]] = []
        dialog = next((n for n in self.root.children if n.role == "dialog"), None)
        if dialog is not None:  # a modal dialog takes all input until it closes
            for node, _ in dialog.walk():
                if node.behavior in ("field", "submit", "dialog_close"):
                    options.append((1.5 if node.behavior == "field" else 1.0,
                                    "type" if node.behavior == "field" else "click", node))
            return options
        for node, _ in self.root.walk():
            b = node.behavior
            if b in ("nav", "cart", "dialog", "dialog_close", "checkbox", "submit", "delete", "upvote", "sort",
                     "option", "search_button"):
                options.append((1.0, "click", node))
            elif b == "menu":
                options.append((0.5, "click", node))
                options.append((0.5, "hover", node))
            elif b in ("field", "search"):
                options.append((1.5, "type", node))
            elif b == "text":
                options.append((0.1, "click", node))
        rows = self.list_container()
        if rows is not None and len(rows.data["rows"]) > self.config.list_items:
            options.append((0.75, "scroll", "down"))
            options.append((0.25, "scroll", "up"))
        if self.history:
            options.append((0.3, "go_back", None))
        return options

    def list_container(self) -> Node | None:
        return next((n for n, _ in self.main.walk() if "rows" in n.data), None)

    def act(self) -> str:
        """Take a random affordance (the generator's actions); returns its action string."""
        options = self.affordances()
        weight, verb, target = self.rng.choices(options, weights=[o[0] for o in options])[0]
        text, enter = self.typed_text(target) if verb == "type" else (None, False)
        return self.execute(verb, target, text, enter)

    @staticmethod
    def format_action(verb: str, target: Any, text: str | None = None, enter: bool = False) -> str:
        """The WebArena action string of an affordance; the target is described as it is
        now, i.e. as it was when the action was chosen."""
        if verb == "scroll":
            return f"scroll [{target}]"
        if verb == "go_back":
            return "go_back"
        where = f"where [{target.id}] is {target.describe()}"
        if verb == "type":
            return f"type [{target.id}] [{text}] [{int(enter)}] {where}"
        return f"{verb} [{target.id}] {where}"

    def execute(self, verb: str, target: Any, text: str | None = None, enter: bool = False) -> str:
        """Perform one affordance (`verb`, `target` as `affordances` gives them); returns its
        action string."""
        action = self.format_action(verb, target, text, enter)
        if verb == "scroll":
            self.scroll(target)
        elif verb == "go_back":
            url, title, main = self.history.pop()
            self.url, self.title, self.root.name = url, title, title
            self.main.children = main.children
            self.close_dialog()
        elif verb == "type":
            self.type(target, text, enter)
        elif verb == "hover":
            self.open_menu(target)
        else:
            self.click(target)
        return action

    def resolve(self, action: str) -> tuple[str, Any, str | None, bool]:
        """(verb, target, text, enter) of an action string the page affords now; raises
        `ActionError` with the reason otherwise (malformed, unknown id, a verb the element
        does not take, an element behind the open dialog, nothing to scroll or go back to)."""
        verb, ref, text, enter = parse_action(action)
        options = self.affordances()
        if verb == "go_back":
            if not self.history:
                raise ActionError("go_back: there is no earlier page in this tab")
            return verb, None, None, False
        if verb == "scroll":
            if not any(v == "scroll" and t == ref for _, v, t in options):
                raise ActionError(f"scroll [{ref}]: nothing on this page scrolls")
            return verb, ref, None, False
        node = next((n for n, _ in self.root.walk() if n.id == ref), None)
        if node is None:
            raise ActionError(f"{verb} [{ref}]: no element [{ref}] on the page")
        takes = sorted({v for _, v, t in options if t is node})
        label = f"[{ref}] {node.role} {node.name!r}"
        if not takes:
            dialog = next((n for n in self.root.children if n.role == "dialog"), None)
            if dialog is not None and not any(n is node for n, _ in dialog.walk()):
                raise ActionError(f"{verb} [{ref}]: {label} is behind the open dialog {dialog.name!r}; close it first")
            raise ActionError(f"{verb} [{ref}]: {label} takes no action")
        if verb not in takes:
            raise ActionError(f"{verb} [{ref}]: {label} takes {' or '.join(takes)}, not {verb}")
        return verb, node, text, enter

    def apply(self, action: str) -> str:
        """Perform a given WebArena action string; returns it written out as the generator
        writes actions (`... where [id] is ...`). Raises `ActionError`, leaving the page
        and the random state untouched, when the page does not afford it."""
        return self.execute(*self.resolve(action))

    def typed_text(self, node: Node) -> tuple[str, bool]:
        if node.behavior == "search":
            return self.rng.choice(_WORDS), self.rng.random() < 0.7
        field = node.name.lower()
        user = self.rng.choice(_USERS)
        text = {"email": f"{user}@example.com", "name": user.title(), "phone": f"555-{self.rng.randint(1000, 9999)}",
                "qty": str(self.rng.randint(1, 5))}.get(field, self.rng.choice(_TOPICS).format(self.rng.choice(_WORDS)))
        return text, False

    def focus(self, target: Node) -> None:
        for node, _ in self.root.walk():
            if node is not self.root:
                node.attrs.pop("focused", None)
        # WebArena lists `focused` before the other states of the node
        target.attrs = {"focused": "True", **target.attrs}

    def type(self, node: Node, text: str, enter: bool) -> None:
        self.focus(node)
        value = next((c for c in node.children if c.role == "StaticText"), None)
        if value is None:
            node.children.append(self.node("StaticText", text, behavior="text"))
        else:
            value.name = text
        if node.behavior == "search" and enter:
            self.search(node)

    def search(self, box: Node) -> None:
        query = box.children[0].name if box.children else ""
        if query:
            self.state.searches.append(query)
            self.open_page("search", query)

    def click(self, node: Node) -> None:
        b = node.behavior
        if b == "nav":
            self.open_page(node.data["page"])
        elif b == "search_button":
            box = next(n for n, _ in self.root.walk() if n.behavior == "search")
            self.search(box)
        elif b == "cart":
            self.cart += 1
            self.state.cart.append(node.data["product"]["name"])
            cart = next((n for n, _ in self.root.walk() if n.name.startswith(" My Cart")), None)
            if cart is not None:
                cart.name = f" My Cart {self.cart}"
            message = f"You added {node.data['product']['name']} to your shopping cart."
            self.replace_message(message)
        elif b == "dialog":
            self.open_dialog(node)
        elif b == "dialog_close":
            self.close_dialog()
        elif b == "checkbox":
            node.attrs["checked"] = "true" if node.attrs.get("checked") == "false" else "false"
        elif b == "submit":
            self.submit(node)
        elif b == "delete":
            row, table = self.find(node.id)[1], self.list_container()
            table.data["rows"] = [r for r in table.data["rows"] if r.id != row.id]
            self.state.deleted.append(row.children[0].name)
            self.relayout(table)
            heading = self.main.children[0]
            heading.name = f"{len(table.data['rows'])} records found"
            self.replace_message("You deleted the record.")
        elif b == "upvote":
            parent = self.find(node.id)[1]
            score = next(c for c in reversed(parent.children[: parent.children.index(node)]) if c.role == "StaticText"
                         and c.name.isdigit())
            voted = node.name == "Upvote"
            score.name = str(int(score.name) + (1 if voted else -1))
            node.name = "Retract upvote" if voted else "Upvote"
            title = next((c.name for c in parent.children if c.role in ("link", "heading")), "")
            self.state.votes[node.id] = (title, voted)
        elif b == "sort":
            self.toggle_listbox(node)
        elif b == "option":
            self.choose_option(node)
        elif b == "menu":
            self.open_menu(node)
        # "text": clicking plain text changes nothing

    def replace_message(self, text: str) -> None:
        """Show a status message at the top of the main content (replacing an older one)."""
        old = next((n for n in self.main.children if n.data.get("message")), None)
        if old is not None:
            self.main.children.remove(old)
        self.main.children.insert(0, self.node("StaticText", text, behavior="text", message=True))

    def submit(self, button: Node) -> None:
        parent = self.find(button.id)[1]
        errors = [n for n in parent.children if n.data.get("error")]
        for error in errors:
            parent.children.remove(error)
        empty = [n for n in parent.children if n.behavior == "field" and n.attrs.get("required") == "True"
                 and not n.children]
        if not empty:
            fields = {n.name: n.children[0].name if n.children else "" for n in parent.children
                      if n.behavior == "field"}
            checks = {n.name: n.attrs.get("checked") == "true" for n in parent.children if n.behavior == "checkbox"}
            form = parent.name if parent.role == "dialog" else self.title
            self.state.submissions.append(Submission(form, fields, checks))
            self.open_page("thanks")
            return
        for field_node in empty:
            position = parent.children.index(field_node) + 1
            parent.children.insert(position, self.node("StaticText", "This is a required field.", behavior="text",
                                                       error=True))

    def open_dialog(self, link: Node) -> None:
        if any(n.role == "dialog" for n in self.root.children):
            return
        self.root.children.append(self.node("dialog", link.name, {"modal": "True"}, children=[
            self.node("textbox", "Email", {"required": "True"}, behavior="field"),
            self.node("textbox", "Password", {"required": "True"}, behavior="field"),
            self.node("button", link.name, behavior="submit"),
            self.node("button", "Close", behavior="dialog_close")]))

    def close_dialog(self) -> None:
        self.root.children = [n for n in self.root.children if n.role != "dialog"]

    def open_menu(self, item: Node) -> None:
        if item.attrs.get("expanded") == "True":
            return
        item.attrs["expanded"] = "True"
        item.children = [self.node(c.role, c.name, dict(c.attrs), behavior=c.behavior, **c.data)
                         for c in item.data["submenu"]]

    def toggle_listbox(self, combo: Node) -> None:
        parent = self.find(combo.id)[1]
        if combo.attrs.get("expanded") == "True":
            combo.attrs["expanded"] = "False"
            parent.children = [n for n in parent.children if n.role != "listbox"]
            return
        combo.attrs["expanded"] = "True"
        options = [self.node("option", name, {"selected": "False"}, behavior="option", key=name)
                   for name in ("Position", "Product Name", "Price")]
        parent.children.insert(parent.children.index(combo) + 1, self.node("listbox", "", children=options))

    def choose_option(self, option: Node) -> None:
        listbox, parent = self.find(self.find(option.id)[1].id)
        combo = parent.children[parent.children.index(listbox) - 1]
        parent.children.remove(listbox)
        combo.attrs["expanded"] = "False"
        table = self.list_container()
        if table is not None and option.data["key"] != "Position":
            column = 0 if option.data["key"] == "Product Name" else 1
            table.data["rows"].sort(key=lambda r: r.children[column].name if column == 0
                                    else float(r.children[1].name.lstrip("$")))
            self.relayout(table)

    def relayout(self, table: Node) -> None:
        rows, window = table.data["rows"], self.config.list_items
        table.data["offset"] = max(0, min(table.data["offset"], len(rows) - window))
        table.children = rows[table.data["offset"]: table.data["offset"] + window]

    def scroll(self, direction: str) -> None:
        table = self.list_container()
        if table is None:
            return
        step = self.config.list_items if direction == "down" else -self.config.list_items
        table.data["offset"] += step
        self.relayout(table)

    def objective(self) -> str:
        """A WebArena-like intent for the session (context for the model, not a goal test)."""
        word, user = self.rng.choice(_WORDS), self.rng.choice(_USERS)
        return self.rng.choice({
            "shop": (f"Add the cheapest {word} to my cart", f"What is the price of the best rated {word}?",
                     f"Send a message to the store asking about a {word}"),
            "forum": (f"Upvote the newest post about a {word}", f"Find the post by {user} and reply to it",
                      f"Create a post asking for a good {word}"),
            "admin": (f"Delete the customer named {user.title()}", f"Update the phone number of {user.title()}",
                      f"How many customers are registered with an example.com email?"),
        }[self.site])


#: the simulator (one tab of a generated site), public for the goal tasks
Browser = _Browser


def generate(config: MiniWebConfig, seed: int, index: int) -> dict[str, Any]:
    """One transition as a WMA-style record (a pure function of its arguments)."""
    rng = index_rng(seed, index)
    browser = _Browser(rng, config)
    objective = browser.objective()
    previous = ["None"]
    for _ in range(rng.randint(0, config.history)):
        previous.append(browser.act())
    url, observation = browser.url, browser.text()
    action = browser.act()
    return {"url": url, "objective": objective, "previous_actions": previous, "current_action": action,
            "observation": observation, "next_state_acctree": browser.text(), "site": browser.site}
