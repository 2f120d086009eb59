"""MiniWeb: a small procedural website that yields WebArena-style transitions.

Why: the WMA data is a large download and its trees run to thousands of tokens. MiniWeb
gives the web-state task an embedded default that a small model can learn on a CPU, with
the same observation format (WebArena accessibility-tree text), the same action strings,
and gold targets made by the same change extraction (`acctree.extract_changes`) as the
real task. It is a documented generator, not a dataset.

One site per seed. `make_site(config)` builds the site's content as a pure function of
(`config.site_seed`, list sizes): a catalog (products with name, price, category and
reviews, in five categories), forums with posts and their replies, and customers. Like
WebArena's sites it is fixed: every session of a seed, train or test split, visits the
same site, so a world model can learn it. What a session changes (cart, votes, accepted
forms, deleted customers, searches) is its `SiteState`; every page is rendered from the
site and that state, so the same page looks the same wherever it is reached from.

The rules a world model can learn (`benchmarks.experiments.miniweb_predictability` measures them):

* a link carries its target and following it renders that target: a product link opens
  that product (name, price, "N Reviews"), a category that category's products in catalog
  order, a post that post (score, upvote state, replies), "N Reviews" that product's
  reviews, the home link the site's first category / forum / the customer grid;
* search: the results are the items whose name (products, post titles; customers: name or
  email) contains every word of the query, case-insensitively, in catalog order;
* sorting by name or price sorts the whole list (stable, ascending); "Position" restores
  catalog order; scrolling moves a window of `list_items` rows over the list;
* `go_back` restores the previous page exactly as it was left (ids, typed text, menus),
  an open dialog excepted;
* ids: nodes keep their ids while they stay on the page; every node that appears (a new
  page's content, a row scrolling into view, a message, typed text) takes the next ids
  after the largest id on the page before the action, in document order.

Actions, written as WebArena writes them (`click [12] where [12] is button 'Add to Cart'`,
`type [7] [desk lamp] [1]`, `hover [..]`, `scroll [down]`, `go_back`), have the effects a
browser would show: dialogs and menus open and close, typing fills a textbox (focus moves,
a StaticText child appears), forms complain about empty required fields or submit,
"Add to Cart" shows a message and updates the cart link, "Delete" removes a grid row,
"Upvote" updates a score, and clicking plain text changes nothing. `Browser.apply`
performs a given WebArena action string and rejects, with a reason (`ActionError`),
anything outside the page's current affordances. The session's random generator only
picks the start page, the objective and the generator's own actions; no step draws from it.

A transition is a pure function of (config, seed, index): a seeded generator opens a start
page of the site, applies up to `config.history` random earlier actions (which become the
`previous_actions`), records the tree, applies one more random action and records the
next tree. The record has the WMA field names (`url`, `objective`, `previous_actions`,
`current_action`, `observation`, `next_state_acctree`), so the real and procedural tasks
share one conversion.
"""

from __future__ import annotations

import copy
import functools
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
#: category -> the kinds of product it sells
_CATALOG = {"Home & Kitchen": ("Coffee Maker", "Tea Kettle", "Plant Pot"),
            "Office Products": ("Desk Lamp", "Notebook", "Office Chair", "Fax Machine"),
            "Sports & Outdoors": ("Yoga Mat", "Running Shoes", "Water Bottle", "Backpack"),
            "Electronics": ("Headphones", "Bluetooth Speaker", "Phone Charger"),
            "Health & Household": ("Hand Soap", "Toothbrush", "Vitamin Gummies")}
_CATEGORIES = tuple(_CATALOG)
_NOUNS = tuple(noun for nouns in _CATALOG.values() for noun in nouns)
_USERS = ("alice", "bob", "chen", "dana", "emeka", "farah", "gus", "hana")
_SURNAMES = ("Lee", "Kim", "Diaz", "Okafor")
_FORUMS = ("books", "gardening", "movies", "cooking", "travel")
_TOPICS = ("Best {} for beginners?", "My {} broke after a week", "Show off your {}", "Is this {} worth it?",
           "Looking for a cheap {}")
_REPLIES = ("+1", "Same here.", "Try the other one.", "Thanks!")
_REVIEWS = ("Works as described.", "Broke after a month.", "Great value.", "Would buy again.")
#: the words the generator searches for and writes about
_WORDS = ("lamp", "mat", "kettle", "bottle", "chair", "shoes", "notebook", "pot")
_FIELDS = {"shop": ("Name", "Email", "Message"), "forum": ("Title", "Body"), "admin": ("Name", "Email", "Phone")}
_HOSTS = {"shop": "http://onestopmarket.com", "forum": "http://postmill.local", "admin": "http://shop.admin"}


@dataclass(frozen=True)
class MiniWebConfig:
    """Shape of the site and its sessions (all transitions of a task share one config)."""

    sites: tuple[str, ...] = SITES  #: which site kinds sessions are drawn from
    list_items: int = 3  #: items (products, posts, rows) visible at once on a list page
    list_extra: int = 3  #: a list (category, forum, customers) holds up to this many more below the viewport
    history: int = 2  #: at most this many earlier actions lead to the current page
    site_seed: int = 0  #: which site (catalog, forums, customers) the sessions visit

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


# -- the site: fixed content per seed ------------------------------------------------------------

@dataclass(frozen=True)
class Product:
    name: str
    price: str
    category: str
    reviews: tuple[tuple[str, str], ...]  #: (user, text)

    @property
    def slug(self) -> str:
        return self.name.lower().replace(" ", "-")


@dataclass(frozen=True)
class Post:
    title: str
    forum: str
    number: int  #: the post's number in its URL
    user: str
    hours: int
    score: int
    replies: tuple[str, ...]  #: "user: text"


@dataclass(frozen=True)
class Customer:
    name: str
    email: str


def matches(text: str, query: str) -> bool:
    """The search rule: `text` contains every word of `query` (case-insensitive)."""
    words = query.lower().split()
    return bool(words) and all(word in text.lower() for word in words)


@dataclass(frozen=True)
class Site:
    """A site's fixed content (catalog, forums, customers), in catalog order."""

    products: tuple[Product, ...]
    posts: tuple[Post, ...]
    customers: tuple[Customer, ...]

    def __deepcopy__(self, memo):  # immutable: browsers copied for look-ahead share it
        return self

    def category(self, name: str) -> list[Product]:
        return [p for p in self.products if p.category == name]

    def product(self, name: str) -> Product:
        return next(p for p in self.products if p.name == name)

    def forum(self, name: str) -> list[Post]:
        return [p for p in self.posts if p.forum == name]

    def post(self, title: str) -> Post:
        return next(p for p in self.posts if p.title == title)

    def search(self, kind: str, query: str) -> list:
        """Search results by the search rule, in catalog order (`kind`: the site kind)."""
        if kind == "shop":
            return [p for p in self.products if matches(p.name, query)]
        if kind == "forum":
            return [p for p in self.posts if matches(p.title, query)]
        return [c for c in self.customers if matches(f"{c.name} {c.email}", query)]


@functools.lru_cache(maxsize=32)
def _site(seed: int, list_items: int, list_extra: int) -> Site:
    rng = random.Random(f"miniweb-site-{seed}")
    sizes = range(list_items, list_items + list_extra + 1)
    products = []
    names = [f"{a} {n}" for n in _NOUNS for a in _ADJECTIVES]
    rng.shuffle(names)
    for category, nouns in _CATALOG.items():
        chosen = [n for n in names if n.split(" ", 1)[1] in nouns][: rng.choice(sizes)]
        for name in chosen:
            reviews = tuple((rng.choice(_USERS), rng.choice(_REVIEWS)) for _ in range(rng.randint(1, 3)))
            products.append(Product(name, f"${rng.randint(3, 300)}.{rng.choice(('00', '49', '99'))}", category,
                                    reviews))
    titles = [t.format(w) for t in _TOPICS for w in _WORDS]
    rng.shuffle(titles)
    numbers = rng.sample(range(10, 1000), len(titles))
    posts = []
    for forum in _FORUMS:
        for _ in range(rng.choice(sizes)):
            replies = tuple(f"{rng.choice(_USERS)}: {rng.choice(_REPLIES)}" for _ in range(rng.randint(1, 3)))
            posts.append(Post(titles.pop(), forum, numbers.pop(), rng.choice(_USERS), rng.randint(1, 23),
                              rng.randint(0, 99), replies))
    users = rng.sample(_USERS, min(rng.choice(sizes), len(_USERS)))
    customers = tuple(Customer(f"{u.title()} {rng.choice(_SURNAMES)}", f"{u}{rng.randint(1, 99)}@example.com")
                      for u in users)
    return Site(tuple(products), tuple(posts), customers)


def make_site(config: MiniWebConfig) -> Site:
    """The site of `config.site_seed` (a pure function of the seed and the list sizes)."""
    return _site(config.site_seed, config.list_items, config.list_extra)


@dataclass(frozen=True)
class Submission:
    """One form the site accepted: which form (the page title, or the dialog's name), the
    text of each field ('' when empty) and the state of each checkbox."""

    form: str
    fields: dict[str, str]
    checks: dict[str, bool]


@dataclass
class SiteState:
    """What a session changed on the server, in order of the actions that changed it (the
    page shows only part of it, and `go_back` restores pages, not this)."""

    cart: list[str] = field(default_factory=list)  #: names of the products added to the cart
    searches: list[str] = field(default_factory=list)  #: queries searched for
    votes: dict[str, bool] = field(default_factory=dict)  #: post title -> upvoted by this user
    submissions: list[Submission] = field(default_factory=list)  #: forms accepted
    deleted: list[str] = field(default_factory=list)  #: names of the deleted customers


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
    """A DOM node: what the tree shows (`role`, `name`, `attrs`) plus how it behaves. A node
    gets its `id` when it appears on the page (see the id rule in the module docstring)."""

    id: int | None
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


def _forget_ids(node: Node) -> None:
    for each, _ in node.walk():
        each.id = None


class _Browser:
    """One tab of a session on a site. Every action method mutates the page in place."""

    def __init__(self, rng: random.Random, config: MiniWebConfig, content: Site | None = None):
        self.rng, self.config = rng, config
        self.content = content if content is not None else make_site(config)
        self.next_id = rng.randint(1, 120)
        self.site = rng.choice(config.sites)
        self.history: list[tuple[str, str, Node]] = []
        self.state = SiteState()
        self.root = self.node("RootWebArea", "", {"focused": "True"})
        self.root.children = self.header()
        self.main = self.node("main", "")
        self.root.children.append(self.main)
        self.url, self.title = "", ""
        self.open_page(self.rng.choice(self.landing_pages()), push=False)

    @property
    def cart(self) -> int:
        return len(self.state.cart)

    # -- building ---------------------------------------------------------------------------
    @staticmethod
    def node(role: str, name: str, attrs: dict[str, str] | None = None, children: list[Node] | None = None,
             behavior: str | None = None, **data: Any) -> Node:
        return Node(None, role, name, dict(attrs or {}), list(children or []), behavior, data)

    def number(self) -> None:
        """Give every node without an id the next id, in document order."""
        for node, _ in self.root.walk():
            if node.id is None:
                node.id = self.next_id
                self.next_id += 1

    def home(self) -> tuple[str, str | None]:
        """(page, key) of the site's home link."""
        return {"shop": ("category", _CATEGORIES[0]), "forum": ("front", _FORUMS[0]), "admin": ("grid", None)}[
            self.site]

    def header(self) -> list[Node]:
        name = {"shop": "One Stop Market", "forum": "Postmill", "admin": "Magento Admin Panel"}[self.site]
        menu = {"shop": (" Categories", [(f" {c}", "category", c) for c in _CATEGORIES]),
                "forum": (" Forums", [(f" /f/{f}", "front", f) for f in _FORUMS]),
                "admin": (" Customers", [(" All Customers", "grid", None), (" New Customer", "record", None)])}
        label, submenu = menu[self.site]
        page, key = self.home()
        nodes = [
            self.node("link", name, behavior="nav", page=page, key=key),
            self.node("menuitem", label, {"hasPopup": "menu", "expanded": "False"}, behavior="menu", submenu=submenu),
            self.node("link", "Sign In" if self.site != "admin" else "Account Settings", behavior="dialog"),
            self.node("textbox", "Search", {"required": "False"}, behavior="search"),
            self.node("button", "Search", behavior="search_button"),
        ]
        if self.site == "shop":
            nodes.insert(3, self.node("link", " My Cart", behavior="nav", page="cart", key=None))
        return nodes

    def landing_pages(self) -> tuple[str, ...]:
        return {"shop": ("category", "product", "contact"), "forum": ("front", "post", "submit"),
                "admin": ("grid", "record")}[self.site]

    def list_page(self, heading: str, rows: list[Node]) -> list[Node]:
        """A heading over a scrollable list: only `list_items` rows are in the viewport."""
        for position, row in enumerate(rows):
            row.data["position"] = position
        container = self.node("list", "", rows=rows, offset=0)
        container.children = rows[: self.config.list_items]
        return [self.node("heading", self.list_heading(heading, len(rows)), behavior="text", title=heading),
                container]

    def list_heading(self, title: str, count: int) -> str:
        shown = min(count, self.config.list_items)
        return f"{title} Items 1-{shown} of {count}" if count else f"{title} Items 0 of 0"

    def product_row(self, product: Product) -> Node:
        return self.node("listitem", "", children=[
            self.node("link", product.name, behavior="nav", page="product", key=product.name),
            self.node("StaticText", product.price, behavior="text"),
            self.node("button", "Add to Cart", behavior="cart", product=product.name)])

    def post_row(self, post: Post) -> Node:
        voted = self.state.votes.get(post.title, False)
        return self.node("article", "", children=[
            self.node("link", post.title, behavior="nav", page="post", key=post.title),
            self.node("StaticText", f"Submitted by {post.user} {post.hours} hours ago", behavior="text"),
            self.node("StaticText", str(post.score + voted), behavior="text"),
            self.node("button", "Retract upvote" if voted else "Upvote", behavior="upvote", post=post.title)])

    def customer_row(self, customer: Customer) -> Node:
        return self.node("row", "", children=[
            self.node("gridcell", customer.name, {"required": "False"}, behavior="text"),
            self.node("gridcell", customer.email, {"required": "False"}, behavior="text"),
            self.node("button", "Delete", behavior="delete")])

    def customers(self, query: str | None = None) -> list[Customer]:
        found = self.content.customers if query is None else self.content.search("admin", query)
        return [c for c in found if c.name not in self.state.deleted]

    def random_key(self, page: str) -> str | None:
        """The start page's subject (a start page is the session's random choice)."""
        if page == "category":
            return self.rng.choice(_CATEGORIES)
        if page == "product":
            return self.rng.choice(self.content.products).name
        if page == "front":
            return self.rng.choice(_FORUMS)
        if page == "post":
            return self.rng.choice(self.content.posts).title
        return None

    def page_nodes(self, page: str, key: str | None = None) -> tuple[str, str, list[Node]]:
        """(url path, title, main-content nodes) of a page, rendered from the site and the
        session's state; `key` names its subject (a category, product, forum, post or query)."""
        if page == "search":
            return self.search_page(key)
        if page == "category":
            path = "/" + key.lower().replace(" & ", "-").replace(" ", "-") + ".html"
            nodes = self.list_page(key, [self.product_row(p) for p in self.content.category(key)])
            return path, key, [nodes[0], self.sort_box(), nodes[1]]
        if page == "product":
            product = self.content.product(key)
            return f"/{product.slug}.html", product.name, [
                self.node("heading", product.name, behavior="text"),
                self.node("StaticText", product.price, behavior="text"),
                self.node("StaticText", "In stock", behavior="text"),
                self.node("textbox", "Qty", {"required": "False"}, behavior="field"),
                self.node("button", "Add to Cart", behavior="cart", product=product.name),
                self.node("link", f"{len(product.reviews)} Reviews", behavior="nav", page="reviews", key=product.name)]
        if page == "reviews":
            product = self.content.product(key)
            return f"/{product.slug}.html#reviews", f"Reviews of {product.name}", [
                self.node("heading", f"Reviews of {product.name}", behavior="text"),
                *[self.node("StaticText", f"{user}: {text}", behavior="text") for user, text in product.reviews],
                self.node("link", product.name, behavior="nav", page="product", key=product.name)]
        if page == "cart":
            items = [self.content.product(name) for name in self.state.cart]
            lines = [self.node("StaticText", f"{p.name} {p.price}", behavior="text") for p in items] or [
                self.node("StaticText", "You have no items in your shopping cart.", behavior="text")]
            return "/checkout/cart/", "Shopping Cart", [
                self.node("heading", "Shopping Cart", behavior="text"), *lines,
                self.node("link", "Contact Us", behavior="nav", page="contact", key=None)]
        if page == "front":
            return f"/f/{key}", f"/f/{key}", self.list_page(f"/f/{key}", [self.post_row(p)
                                                                          for p in self.content.forum(key)])
        if page == "post":
            post = self.content.post(key)
            voted = self.state.votes.get(post.title, False)
            return f"/f/{post.forum}/{post.number}", post.title, [
                self.node("heading", post.title, behavior="text"),
                self.node("StaticText", str(post.score + voted), behavior="text"),
                self.node("button", "Retract upvote" if voted else "Upvote", behavior="upvote", post=post.title),
                *[self.node("StaticText", reply, behavior="text") for reply in post.replies],
                self.node("textbox", "Comment", {"required": "True"}, behavior="field"),
                self.node("button", "Post", behavior="submit")]
        if page == "grid":
            nodes = self.list_page("Customers", [self.customer_row(c) for c in self.customers()])
            nodes[0].name = f"{len(nodes[1].data['rows'])} records found"
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
            home, home_key = self.home()
            return "/success", "Success", [
                self.node("heading", "Thank you", behavior="text"),
                self.node("StaticText", "Your request has been saved.", behavior="text"),
                self.node("link", "Continue", behavior="nav", page=home, key=home_key)]
        raise ValueError(f"unknown page {page!r}")

    def search_page(self, query: str) -> tuple[str, str, list[Node]]:
        """The results of `query` on this site by the search rule (`Site.search`)."""
        title = f"Search results for: '{query}'"
        if self.site == "shop":
            nodes = self.list_page(title, [self.product_row(p) for p in self.content.search("shop", query)])
            return f"/catalogsearch/result/?q={query.replace(' ', '+')}", title, [nodes[0], self.sort_box(), nodes[1]]
        if self.site == "forum":
            return f"/search?q={query.replace(' ', '+')}", title, self.list_page(
                title, [self.post_row(p) for p in self.content.search("forum", query)])
        nodes = self.list_page(title, [self.customer_row(c) for c in self.customers(query)])
        nodes[0].name = f"{len(nodes[1].data['rows'])} records found"
        nodes[1].role = "table"
        return f"/admin/customer/index/?search={query.replace(' ', '+')}", title, nodes

    def sort_box(self) -> Node:
        return self.node("combobox", "Sort By", {"hasPopup": "listbox", "expanded": "False"}, behavior="sort")

    def open_page(self, page: str, key: str | None = None, push: bool = True) -> None:
        """Navigate to `page` about `key` (a start page picks a random subject when None)."""
        self.close_dialog()
        if push:
            self.number()
            self.history.append((self.url, self.title, copy.deepcopy(self.root)))
        if key is None:
            key = self.random_key(page)
        path, title, nodes = self.page_nodes(page, key)
        self.url, self.title = _HOSTS[self.site] + path, title
        self.root.name = title
        self.main.children = nodes
        self.number()

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
            options.append((3.0, "scroll", "down"))
            options.append((1.0, "scroll", "up"))
        if self.history:
            options.append((1.5, "go_back", None))
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
        action string. Nodes that appear take ids after the page's largest (the id rule)."""
        action = self.format_action(verb, target, text, enter)
        self.next_id = max(node.id for node, _ in self.root.walk()) + 1
        if verb == "scroll":
            self.scroll(target)
        elif verb == "go_back":
            self.url, self.title, self.root = self.history.pop()
            self.main = next(n for n in self.root.children if n.role == "main")
        elif verb == "type":
            self.type(target, text, enter)
        elif verb == "hover":
            self.open_menu(target)
        else:
            self.click(target)
        self.number()
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
            self.open_page(node.data["page"], node.data["key"])
        elif b == "search_button":
            box = next(n for n, _ in self.root.walk() if n.behavior == "search")
            self.search(box)
        elif b == "cart":
            self.state.cart.append(node.data["product"])
            cart = next((n for n, _ in self.root.walk() if n.name.startswith(" My Cart")), None)
            if cart is not None:
                cart.name = f" My Cart {self.cart}"
            self.replace_message(f"You added {node.data['product']} to your shopping cart.")
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
            self.state.votes[node.data["post"]] = voted
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
        item.children = [self.node("menuitem", name, behavior="nav", page=page, key=key)
                         for name, page, key in item.data["submenu"]]

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
        """Sort the whole list (stable, ascending): by catalog position, name or price."""
        listbox, parent = self.find(self.find(option.id)[1].id)
        combo = parent.children[parent.children.index(listbox) - 1]
        parent.children.remove(listbox)
        combo.attrs["expanded"] = "False"
        table = self.list_container()
        if table is not None:
            key = {"Position": lambda r: r.data["position"], "Product Name": lambda r: r.children[0].name,
                   "Price": lambda r: float(r.children[1].name.lstrip("$"))}[option.data["key"]]
            table.data["rows"].sort(key=key)
            self.relayout(table)

    def relayout(self, table: Node) -> None:
        """Show the rows of the window; a row that enters the viewport is a new node."""
        rows, window = table.data["rows"], self.config.list_items
        table.data["offset"] = max(0, min(table.data["offset"], len(rows) - window))
        shown = rows[table.data["offset"]: table.data["offset"] + window]
        for row in shown:
            if not any(row is old for old in table.children):
                _forget_ids(row)
        table.children = shown

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


#: the simulator (one tab of a session on a site), public for the goal tasks
Browser = _Browser


def generate(config: MiniWebConfig, seed: int, index: int) -> dict[str, Any]:
    """One transition as a WMA-style record (a pure function of its arguments; the site is
    `make_site(config)`, the session is drawn from stream `seed`)."""
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
