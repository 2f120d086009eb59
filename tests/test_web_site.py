"""MiniWeb as one consistent site: links render their targets, go_back restores the page,
search follows its rule, ids follow their rule, and a step draws nothing at random."""

from __future__ import annotations

import copy
import random

import pytest

from rlvr_envs.core.util import index_rng
from rlvr_envs.web.acctree import parse_tree
from rlvr_envs.web.mini_web import Browser, MiniWebConfig, generate, make_site, matches


def session(index: int, site: str, page: str, key: str | None = None, **config) -> Browser:
    browser = Browser(index_rng(11, index), MiniWebConfig(sites=(site,), **config))
    browser.open_page(page, key, push=False)
    return browser


def click(browser: Browser, node) -> None:
    browser.apply(f"click [{node.id}]")


def main_names(browser: Browser, role: str) -> list[str]:
    return [n.name for n, _ in browser.main.walk() if n.role == role]


def visible_rows(browser: Browser) -> list[str]:
    return [row.children[0].name for row in browser.list_container().children]


def test_the_site_is_a_pure_function_of_its_seed():
    config = MiniWebConfig()
    assert make_site(config) == make_site(MiniWebConfig(history=0)) == make_site(MiniWebConfig(sites=("shop",)))
    assert make_site(config) != make_site(MiniWebConfig(site_seed=1))
    site = make_site(config)
    assert len({p.name for p in site.products}) == len(site.products)
    assert len({p.title for p in site.posts}) == len(site.posts)


@pytest.mark.parametrize("index", range(6))
def test_a_product_link_opens_that_product(index):
    browser = session(index, "shop", "category")
    row = browser.list_container().children[index % 3]
    name, price = row.children[0].name, row.children[1].name
    click(browser, row.children[0])
    product = browser.content.product(name)
    assert browser.title == name and main_names(browser, "heading") == [name]
    assert price in main_names(browser, "StaticText") and product.price == price
    reviews = next(n for n, _ in browser.main.walk() if n.name.endswith("Reviews"))
    assert reviews.name == f"{len(product.reviews)} Reviews"
    click(browser, reviews)  # the review link opens that product's reviews
    assert browser.title == f"Reviews of {name}"
    assert main_names(browser, "StaticText") == [f"{user}: {text}" for user, text in product.reviews]


@pytest.mark.parametrize("index", range(5))
def test_a_category_link_opens_that_category_with_its_products(index):
    browser = session(index, "shop", "contact")
    menu = next(n for n in browser.root.children if n.behavior == "menu")
    browser.apply(f"hover [{menu.id}]")
    item = menu.children[index]
    category = item.name.strip()
    click(browser, item)
    products = browser.content.category(category)
    assert browser.title == category and len(products) >= 3
    assert main_names(browser, "heading") == [f"{category} Items 1-3 of {len(products)}"]
    assert [r.children[0].name for r in browser.list_container().data["rows"]] == [p.name for p in products]
    assert visible_rows(browser) == [p.name for p in products[:3]]


@pytest.mark.parametrize("index", range(5))
def test_a_post_link_opens_that_post_with_its_replies(index):
    browser = session(index, "forum", "front")
    row = browser.list_container().children[index % 3]
    title, score = row.children[0].name, row.children[2].name
    click(browser, row.children[3])  # upvote on the list, then open the post: the vote shows there too
    click(browser, row.children[0])
    post = browser.content.post(title)
    assert browser.title == title and browser.url.endswith(f"/f/{post.forum}/{post.number}")
    assert main_names(browser, "StaticText") == [str(int(score) + 1), *post.replies]
    assert "Retract upvote" in main_names(browser, "button")


def test_home_link_and_thanks_page_lead_to_the_sites_home():
    browser = session(0, "forum", "post")
    home = next(n for n in browser.root.children if n.behavior == "nav")
    click(browser, home)
    assert browser.title == "/f/books"
    assert [r.children[0].name for r in browser.list_container().data["rows"]] == [
        p.title for p in browser.content.forum("books")]


def test_the_cart_page_lists_what_was_added():
    browser = session(1, "shop", "category")
    rows = browser.list_container().children
    for row in rows[:2]:
        click(browser, row.children[2])
    cart = next(n for n, _ in browser.root.walk() if n.name.startswith(" My Cart"))
    assert cart.name == " My Cart 2"
    click(browser, cart)
    expected = [f"{p.name} {p.price}" for p in map(browser.content.product, browser.state.cart)]
    assert main_names(browser, "StaticText") == expected


@pytest.mark.parametrize("site, word", [("shop", "lamp"), ("shop", "pot"), ("shop", "vintage desk"),
                                        ("forum", "kettle"), ("admin", "example.com"), ("shop", "zebra")])
def test_search_lists_the_items_whose_name_holds_every_word_in_catalog_order(site, word):
    browser = session(2, site, {"shop": "contact", "forum": "submit", "admin": "record"}[site])
    box = next(n for n, _ in browser.root.walk() if n.behavior == "search")
    browser.apply(f"type [{box.id}] [{word}] [1]")
    content = browser.content
    names = {"shop": [p.name for p in content.products], "forum": [p.title for p in content.posts],
             "admin": [c.name for c in content.customers]}[site]
    texts = {"shop": names, "forum": names, "admin": [f"{c.name} {c.email}" for c in content.customers]}[site]
    expected = [n for n, t in zip(names, texts) if all(w in t.lower() for w in word.split())]
    assert [r.children[0].name for r in browser.list_container().data["rows"]] == expected
    assert browser.title == f"Search results for: '{word}'" and browser.state.searches == [word]
    assert matches("Vintage Desk Lamp", "desk vintage") and not matches("Desk Lamp", "desk chair")
    assert not matches("Desk Lamp", "  ")


def test_sorting_sorts_the_whole_list_and_position_restores_catalog_order():
    browser = session(3, "shop", "category", "Office Products")
    catalog = [p.name for p in browser.content.category("Office Products")]
    combo = next(n for n, _ in browser.main.walk() if n.behavior == "sort")
    for option, expected in [("Price", sorted(catalog, key=lambda n: float(browser.content.product(n).price[1:]))),
                             ("Product Name", sorted(catalog)), ("Position", catalog)]:
        click(browser, combo)
        click(browser, next(n for n, _ in browser.main.walk() if n.role == "option" and n.name == option))
        assert [r.children[0].name for r in browser.list_container().data["rows"]] == expected
        assert visible_rows(browser) == expected[:3]


def test_go_back_restores_the_previous_page_exactly():
    """Over generated sessions: after a click that navigates, go_back shows the page as it was (typing
    with Enter navigates too, and go_back then shows the page as it was left: with the typed text)."""
    navigations = 0
    for index in range(150):
        browser = Browser(index_rng(5, index), MiniWebConfig())
        for _ in range(4):
            before, depth = browser.text(), len(browser.history)
            dialog = any(n.role == "dialog" for n in browser.root.children)
            action = browser.act()
            if len(browser.history) == depth + 1 and not dialog and action.startswith("click"):
                navigations += 1
                browser.apply("go_back")
                assert browser.text() == before
    assert navigations > 100


def test_new_nodes_take_the_next_ids_after_the_pages_largest_in_document_order():
    for index in range(200):
        row = generate(MiniWebConfig(), 9, index)
        before = [item.id for item in parse_tree(row["observation"]).items]
        after = [item.id for item in parse_tree(row["next_state_acctree"]).items]
        if row["current_action"] == "go_back":
            continue
        fresh = [int(i) for i in after if i not in before]
        start = max(map(int, before)) + 1
        assert fresh == list(range(start, start + len(fresh))), row["current_action"]


def test_a_step_draws_nothing_at_random():
    """The next page depends on the page, the action and the site, never on the generator."""
    for index in range(60):
        browser = Browser(index_rng(6, index), MiniWebConfig())
        for _ in range(3):
            other = copy.deepcopy(browser)
            other.rng = random.Random(index)
            action = browser.act()
            state = other.rng.getstate()
            other.apply(action)
            assert other.text() == browser.text() and other.rng.getstate() == state


def test_same_seed_and_index_give_the_same_transition():
    config = MiniWebConfig(site_seed=3)
    assert generate(config, 4, 7) == generate(config, 4, 7)
    other = MiniWebConfig(site_seed=4)  # the same sessions on another site
    assert any(generate(config, 4, i) != generate(other, 4, i) for i in range(10))


def test_every_id_tokenizes_one_way_in_pages_actions_and_answers():
    """Over the prompts and gold answers of a generated MiniWeb task, every `[id]` is the
    tokens of `[`, each digit and `]` alone, wherever it stands (WMA item lines unchanged)."""
    import re

    from rlvr_envs.core.tokenizers import load_tokenizer
    from rlvr_envs.web.task import MiniWebTaskConfig, miniweb_records, record_transition, web_prompt

    tokenizer = load_tokenizer("miniweb")
    config = MiniWebTaskConfig(split="train", size=120)
    texts = []
    for record in miniweb_records(config):
        transition = record_transition(record)
        texts += [web_prompt(transition, config.prompt), transition.target.text()]
    alone = {ch: tokenizer(ch, add_special_tokens=False)["input_ids"] for ch in "[]0123456789"}
    assert all(len(ids) == 1 for ids in alone.values())
    seen = set()
    for text in texts:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        starts = {start: (end, token) for token, (start, end) in zip(encoded["input_ids"], encoded["offset_mapping"])}
        for match in re.finditer(r"\[(\d+)\]", text):
            position, tokens = match.start(), []
            while position < match.end():
                end, token = starts[position]  # a token starts at every character of the id: none spans two
                tokens.append(token)
                position = end
            assert tokens == [alone[ch][0] for ch in match.group(0)], match.group(0)
            seen.add(match.group(1))
    assert len(seen) > 120
