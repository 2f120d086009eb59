"""Goal tasks on MiniWeb: a web agent's episodes, their success check, a scripted expert, the env.

Why: a web world model is worth training when an agent plans with it (RLVR-World's
WebArena agent rose from 12.06% to 14.29% success with the RLVR-trained world model). These
are the agent's tasks on MiniWeb's sites: each episode starts on a page of the site with a
natural-language goal; the agent acts with WebArena action strings; success is
checked on the true final state of the simulated site (`mini_web.SiteState`: the cart, the
votes, the accepted forms, the deleted records), not on the text of the last page.

Goal kinds (`KINDS`), each reachable from its start page by the scripted expert in at most
4 actions (plus the scrolls a long list needs):

* shop: `cart_product` add a named product of a category list to the cart (only it);
  `search_cart` search for a word and add a product whose name holds it (only such);
  `contact` send the contact form with a given name, email and message;
* forum: `upvote` upvote a named post and no other; `reply` post a given comment in the
  open thread; `create_post` submit a post with a given title and text;
* admin: `delete` delete a named customer and no one else; `subscribe` save the customer
  form with a given name and email and "Subscribe to newsletter" checked.

Forms succeed when at least one submission of the goal's form was accepted and every
accepted submission of it holds the goal's values (a wrong submission cannot be taken
back); the strict kinds ("only", "no other", "no one else") fail on any extra effect.

An episode is a pure function of (seed, index). It runs on the site of `seed`
(`mini_web.make_site`), the very site `RLVRWorld/MiniWeb-v0` with that seed renders, and
draws its session from MiniWeb's held-out stream (`split_stream(seed, "test")`), so a world
model trained on MiniWeb-v0's train split knows the site but never saw these sessions.
`Goal.text` is what the agent reads; `Goal.parse` reads it back, so components that only
see observations (a value function) can still use the structure.
"""

from __future__ import annotations

import math
import random
import re
import string
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from rlvr_envs.core.episode import refuse_mode
from rlvr_envs.core.actions import reset_options, transition_index
from rlvr_envs.core.util import as_tuple, index_rng, split_stream
from rlvr_envs.web import mini_web
from rlvr_envs.web.mini_web import CHARSET, MAX_ACTION_CHARS, SITES, ActionError, Browser, MiniWebConfig, SiteState

GOAL_ENV_ID = "RLVRWorld/MiniWeb-Goal-v0"
#: goal kind -> site
KINDS: dict[str, str] = {"cart_product": "shop", "search_cart": "shop", "contact": "shop",
                         "upvote": "forum", "reply": "forum", "create_post": "forum",
                         "delete": "admin", "subscribe": "admin"}
#: the goal text of each kind; `{target}` and the form's field names are filled in
TEMPLATES: dict[str, str] = {
    "cart_product": "Add the {target} to my cart.",
    "search_cart": "Search for '{target}' and add one of the results to my cart.",
    "contact": "Send the contact form as {Name} ({Email}) with the message '{Message}'.",
    "upvote": "Upvote the post '{target}' and no other.",
    "reply": "Reply '{Comment}' in the thread '{target}'.",
    "create_post": "Create a post titled '{Title}' with the text '{Body}'.",
    "delete": "Delete the customer {target} and no one else.",
    "subscribe": "Save the customer {Name} ({Email}) with 'Subscribe to newsletter' checked.",
}
#: form kinds: the fields the goal fills, the checkboxes it sets, the form (page title) it submits
FORM_FIELDS = {"contact": ("Name", "Email", "Message"), "reply": ("Comment",), "create_post": ("Title", "Body"),
               "subscribe": ("Name", "Email")}
FORM_CHECKS = {"subscribe": (("Subscribe to newsletter", True),)}
FORM_PAGES = {"contact": "Contact Us", "create_post": "Create submission", "subscribe": "Edit Customer"}
#: what random typing draws from (MiniWeb's own words and user names)
RANDOM_TEXTS = (*mini_web._WORDS, *mini_web._USERS, "hello")
_MESSAGES = ("Do you sell a {}?", "When is the {} back in stock?", "Please call me about the {}.")
_REPLIES = ("I had the same {} for years.", "Thanks, the {} tip helped.", "Which {} did you buy?")
_BODIES = ("I need a {} that lasts.", "Any brand of {} you trust?")


@dataclass(frozen=True)
class Goal:
    """What an episode asks for, and the check of it on the site's true state.

    `target` names the product, search word, post, customer or thread; `fields` and
    `checks` are the values a form goal submits."""

    kind: str
    target: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    checks: tuple[tuple[str, bool], ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"goal kind must be one of {sorted(KINDS)}, got {self.kind!r}")

    @property
    def site(self) -> str:
        return KINDS[self.kind]

    @property
    def form(self) -> str | None:
        """The title of the page whose form the goal submits (None: not a form goal)."""
        if self.kind == "reply":
            return self.target
        return FORM_PAGES.get(self.kind)

    @property
    def text(self) -> str:
        return TEMPLATES[self.kind].format(target=self.target, **dict(self.fields))

    @classmethod
    def parse(cls, text: str) -> "Goal":
        """The goal a goal text states (the inverse of `text`); ValueError when no template fits."""
        for kind, template in TEMPLATES.items():
            pattern = ""
            for literal, name, _, _ in string.Formatter().parse(template):
                pattern += re.escape(literal) + (f"(?P<{name}>.+?)" if name else "")
            match = re.fullmatch(pattern, text.strip(), re.S)
            if match:
                values = match.groupdict()
                return cls(kind, values.get("target", ""), tuple((f, values[f]) for f in FORM_FIELDS.get(kind, ())),
                           FORM_CHECKS.get(kind, ()))
        raise ValueError(f"not a MiniWeb goal: {text[:80]!r}")

    def achieved(self, state: SiteState) -> bool:
        """Whether the site's true state fulfils the goal (rules in the module docstring)."""
        if self.kind == "cart_product":
            return bool(state.cart) and all(name == self.target for name in state.cart)
        if self.kind == "search_cart":
            word = self.target.lower()
            return (word in (q.lower() for q in state.searches) and bool(state.cart)
                    and all(word in name.lower() for name in state.cart))
        if self.kind == "upvote":
            return {title for title, up in state.votes.items() if up} == {self.target}
        if self.kind == "delete":
            return state.deleted == [self.target]
        sent = [s for s in state.submissions if s.form == self.form]
        return bool(sent) and all(
            all(s.fields.get(name) == value for name, value in self.fields)
            and all(s.checks.get(name) == want for name, want in self.checks) for s in sent)


# -- episodes ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MiniWebGoalConfig:
    """Arguments of `RLVRWorld/MiniWeb-Goal-v0` (pass them to `gym.make`)."""

    seed: int = 0  #: generator seed; episodes are a pure function of (config, index)
    size: int = 1000  #: `reset` without an index draws one of this many episodes
    sites: tuple[str, ...] = SITES  #: site kinds to draw goals from
    kinds: tuple[str, ...] | None = None  #: goal kinds (default: every kind of `sites`)
    list_items: int = 3  #: list entries visible at once
    list_extra: int = 3  #: up to this many more below the viewport
    max_steps: int = 6  #: actions before the episode is truncated

    def __post_init__(self):
        object.__setattr__(self, "sites", as_tuple(self.sites))
        object.__setattr__(self, "kinds", as_tuple(self.kinds))

    def goal_kinds(self) -> tuple[str, ...]:
        return self.kinds if self.kinds is not None else tuple(k for k, s in KINDS.items() if s in self.sites)

    def expert_steps(self) -> int:
        """The most actions the scripted expert needs from a start page (4 for the forms;
        a list goal scrolls at most ceil(list_extra / list_items) times, then clicks)."""
        return max(4, 1 + math.ceil(self.list_extra / self.list_items))

    def validate(self) -> None:
        MiniWebConfig(sites=self.sites, list_items=self.list_items, list_extra=self.list_extra).validate()
        if self.kinds is not None:
            unknown = [k for k in self.kinds if k not in KINDS or KINDS[k] not in self.sites]
            if not self.kinds or unknown:
                raise ValueError(f"kinds must be a non-empty subset of the kinds of sites {self.sites}: "
                                 f"{[k for k, s in KINDS.items() if s in self.sites]}, got {self.kinds!r}")
        if self.size < 1:
            raise ValueError(f"size must be positive, got {self.size}")
        if not self.expert_steps() <= self.max_steps <= 100:
            raise ValueError(f"max_steps must be in [{self.expert_steps()}, 100] (the scripted expert needs up to "
                             f"{self.expert_steps()} actions with list_items={self.list_items}, "
                             f"list_extra={self.list_extra}), got {self.max_steps}")


def _unique(names: list[str], rng: random.Random) -> str:
    """A name that occurs once in `names` (so the goal names one item), if there is one."""
    once = [n for n in names if names.count(n) == 1]
    return rng.choice(once or names)


def _row_names(browser: Browser) -> list[str]:
    return [row.children[0].name for row in browser.list_container().data["rows"]]


def _build(kind: str, browser: Browser, rng: random.Random) -> Goal:
    """Open the goal's start page on `browser` and draw the goal."""
    word, user = rng.choice(mini_web._WORDS), rng.choice(mini_web._USERS)
    email = f"{user}{rng.randint(1, 99)}@example.com"
    if kind == "cart_product":
        browser.open_page("category", push=False)
        return Goal(kind, _unique(_row_names(browser), rng))
    if kind == "search_cart":  # a word the catalog has products for (search rule: `mini_web.matches`)
        browser.open_page(rng.choice(browser.landing_pages()), push=False)
        return Goal(kind, rng.choice([w for w in mini_web._WORDS if browser.content.search("shop", w)]))
    if kind == "contact":
        browser.open_page("contact", push=False)
        return Goal(kind, fields=(("Name", user.title()), ("Email", email),
                                  ("Message", rng.choice(_MESSAGES).format(word))))
    if kind == "upvote":
        browser.open_page("front", push=False)
        return Goal(kind, _unique(_row_names(browser), rng))
    if kind == "reply":
        browser.open_page("post", push=False)
        return Goal(kind, browser.title, fields=(("Comment", rng.choice(_REPLIES).format(word)),))
    if kind == "create_post":
        browser.open_page("submit", push=False)
        return Goal(kind, fields=(("Title", f"Looking for a good {word}"), ("Body", rng.choice(_BODIES).format(word))))
    if kind == "delete":
        browser.open_page("grid", push=False)
        return Goal(kind, _unique(_row_names(browser), rng))
    browser.open_page("record", push=False)
    return Goal(kind, fields=(("Name", f"{user.title()} {rng.choice(('Lee', 'Kim', 'Diaz'))}"), ("Email", email)),
                checks=FORM_CHECKS[kind])


def make_episode(config: MiniWebGoalConfig, index: int) -> tuple[Browser, Goal]:
    """The start page (a browser on it) and the goal of episode `index` (a pure function)."""
    rng = index_rng(split_stream(config.seed, "test"), index)
    kind = rng.choice(config.goal_kinds())
    site_config = MiniWebConfig(sites=(KINDS[kind],), list_items=config.list_items, list_extra=config.list_extra,
                                history=0, site_seed=config.seed)
    browser = Browser(rng, site_config)
    return browser, _build(kind, browser, rng)


# -- the scripted expert ---------------------------------------------------------------------------

def _dialog(browser: Browser) -> mini_web.Node | None:
    return next((n for n in browser.root.children if n.role == "dialog"), None)


def _idle(browser: Browser) -> str:
    """An action that changes nothing (clicking plain text), else going back."""
    for _, verb, target in browser.affordances():
        if verb == "click" and target.behavior == "text":
            return browser.format_action("click", target)
    return "go_back" if browser.history else browser.format_action(*browser.affordances()[0][1:])


def _back(browser: Browser) -> str:
    return "go_back" if browser.history else _idle(browser)


def _towards(browser: Browser, row: mini_web.Node) -> str | None:
    """The scroll that brings `row` of the page's list into view (None when visible)."""
    table = browser.list_container()
    if any(r is row for r in table.children):
        return None
    index = next(i for i, r in enumerate(table.data["rows"]) if r is row)
    return "scroll [down]" if index >= table.data["offset"] else "scroll [up]"


def _find_row(browser: Browser, name: str) -> mini_web.Node | None:
    table = browser.list_container()
    rows = table.data["rows"] if table is not None else []
    return next((r for r in rows if r.children and r.children[0].name == name), None)


def _row_click(browser: Browser, row: mini_web.Node, button: mini_web.Node) -> str:
    return _towards(browser, row) or browser.format_action("click", button)


def _main_node(browser: Browser, behavior: str, name: str | None = None) -> mini_web.Node | None:
    return next((n for n, _ in browser.main.walk() if n.behavior == behavior and (name is None or n.name == name)),
                None)


def expert_action(browser: Browser, goal: Goal) -> str:
    """The scripted expert: the next action toward `goal` from the true page and state.

    Closes a dialog first; off the goal's page it goes back; on it, scrolls to the named
    row and clicks its button, searches then adds a result, or fills each form field,
    sets the checkboxes and submits. From a start page it needs at most
    `MiniWebGoalConfig.expert_steps()` actions; after mistakes it repairs what can be
    repaired (retypes a field, retracts a stray vote) and otherwise does no harm.
    """
    dialog = _dialog(browser)
    if dialog is not None:
        close = next(n for n, _ in dialog.walk() if n.behavior == "dialog_close")
        return browser.format_action("click", close)
    kind = goal.kind
    if kind in ("cart_product", "delete"):
        row = _find_row(browser, goal.target)
        if row is None:
            return _idle(browser) if goal.achieved(browser.state) else _back(browser)
        return _row_click(browser, row, row.children[2])
    if kind == "upvote":
        table = browser.list_container()
        if table is None or _find_row(browser, goal.target) is None:
            return _back(browser)
        for row in table.data["rows"]:  # every row whose vote is wrong: the target unvoted, a stray vote
            button = row.children[3]
            if (row.children[0].name == goal.target) != (button.name == "Retract upvote"):
                return _row_click(browser, row, button)
        return _idle(browser)
    if kind == "search_cart":
        if browser.title == f"Search results for: '{goal.target}'" and browser.list_container() is not None:
            row = next((r for r in browser.list_container().data["rows"]
                        if goal.target in r.children[0].name.lower()), None)
            if row is not None:
                return _row_click(browser, row, row.children[2])
        box = next(n for n, _ in browser.root.walk() if n.behavior == "search")
        return browser.format_action("type", box, goal.target, True)
    submit = _main_node(browser, "submit")
    if browser.title != goal.form or submit is None:
        return _back(browser)
    for name, value in goal.fields:
        box = _main_node(browser, "field", name)
        if box is not None and (box.children[0].name if box.children else None) != value:
            return browser.format_action("type", box, value, False)
    for name, want in goal.checks:
        box = _main_node(browser, "checkbox", name)
        if box is not None and (box.attrs.get("checked") == "true") != want:
            return browser.format_action("click", box)
    return browser.format_action("click", submit)


def random_action(browser: Browser, rng: random.Random) -> str:
    """A random affordance of the page (weighted as the generator weights them); typing
    draws its text from `RANDOM_TEXTS` and presses Enter half the time."""
    options = browser.affordances()
    _, verb, target = rng.choices(options, weights=[o[0] for o in options])[0]
    if verb == "type":
        return browser.format_action(verb, target, rng.choice(RANDOM_TEXTS), rng.random() < 0.5)
    return browser.format_action(verb, target)


def affordance_lines(browser: Browser) -> list[str]:
    """The page's affordances as short action strings (`type` with a placeholder text)."""
    lines: list[str] = []
    for _, verb, target in browser.affordances():
        if verb in ("scroll", "go_back"):
            line = browser.format_action(verb, target)
        elif verb == "type":
            line = f"type [{target.id}] [text] [0|1]"
        else:
            line = f"{verb} [{target.id}]"
        if line not in lines:
            lines.append(line)
    return lines


# -- the env ---------------------------------------------------------------------------------------

#: longest text of each observation field (a MiniWeb page is ~1-3 thousand characters)
OBSERVATION_CHARS = {"goal": 1_000, "url": 1_000, "page": 20_000, "actions": 10_000}


class MiniWebGoalEnv(gym.Env):
    """
    ## Description
    A web agent's task on MiniWeb (`rlvr_envs.web.mini_web`): reach a natural-language goal
    (add a product to the cart, upvote a post, reply in a thread, delete a customer, fill
    and send a form, ...) on a procedural shop, forum or admin site by WebArena actions.
    The page is simulated exactly; success is checked on the site's true state (the cart,
    votes, accepted forms, deleted records; see `rlvr_envs.web.goals`). Every goal is
    reachable by the scripted expert (`expert_action`) within the step limit.

    ## Observation Space
    `Dict` of `Text` (printable ASCII): `goal` (the goal text), `url`, `page` (the
    accessibility tree as WebArena prints it) and `actions` (the page's affordances, one a
    line: `click [12]`, `hover [5]`, `type [7] [text] [0|1]`, `scroll [down]`, `go_back`).

    ## Action Space
    `Text`: one WebArena action string, e.g. `click [12]`, `type [7] [desk lamp] [1]`,
    `hover [5]`, `scroll [down]`, `go_back` (a trailing `where [12] is ...` is allowed).
    An action the page does not afford (malformed, an unsupported verb, an unknown id, a
    verb the element does not take, an element behind the open dialog) is rejected: the
    page does not change, `info["error"]` says why and `info["invalid_actions"]` counts it.

    ## Reward
    1.0 on the step the goal is achieved, else 0.0.

    ## Episode End
    Terminated when the goal is achieved; truncated after `max_steps` actions (rejected
    ones included).

    ## Arguments
    ```python
    import gymnasium as gym
    env = gym.make("RLVRWorld/MiniWeb-Goal-v0", kinds=("upvote", "delete"), max_steps=6)
    obs, info = env.reset(seed=0)                  # or options={"index": i}
    obs, reward, terminated, truncated, info = env.step("scroll [down]")
    ```
    See `MiniWebGoalConfig`. `render_mode="ansi"` renders the goal, the page and the last action.
    `mode=` is refused (ValueError): it belongs to the next-state prediction ids.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, render_mode: str | None = None, mode: str | None = None, **kwargs: Any):
        refuse_mode(mode, "RLVRWorld/MiniWeb-Goal-v0 (a web agent env)", "one WebArena action string")
        self.config = MiniWebGoalConfig(**kwargs)
        self.config.validate()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {key: spaces.Text(max_length=n, charset=CHARSET) for key, n in OBSERVATION_CHARS.items()})
        self.action_space = spaces.Text(max_length=MAX_ACTION_CHARS, charset=CHARSET)
        self.browser: Browser | None = None
        self.goal: Goal | None = None
        self.index = -1
        self.steps = self.invalid_actions = 0
        self.actions: list[str] = []
        self._last: tuple[str, str | None] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = reset_options(options, ("index",)).get("index")  # None: a random one, as on every id
        if index is not None:
            index = transition_index(index, self.config.size)
        else:
            index = int(self.np_random.integers(self.config.size))
        self.index = index
        self.browser, self.goal = make_episode(self.config, index)
        self.steps = self.invalid_actions = 0
        self.actions, self._last = [], None
        return self._observation(), {"index": index, "site": self.goal.site, "goal_kind": self.goal.kind,
                                     "max_steps": self.config.max_steps}

    def step(self, action: str):
        if self.browser is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        try:
            applied, error = self.browser.apply(action), None
            self.actions.append(applied)
        except ActionError as exc:
            applied, error = None, str(exc)
            self.invalid_actions += 1
        self._last = (str(action), error)
        success = self.goal.achieved(self.browser.state)
        truncated = not success and self.steps >= self.config.max_steps
        info = {"index": self.index, "goal_kind": self.goal.kind, "success": success, "steps": self.steps,
                "action": applied, "error": error, "invalid_actions": self.invalid_actions}
        return self._observation(), float(success), success, truncated, info

    def _observation(self) -> dict[str, str]:
        return {"goal": self.goal.text, "url": self.browser.url, "page": self.browser.text(),
                "actions": "\n".join(affordance_lines(self.browser))}

    def expert_action(self) -> str:
        """The scripted expert's next action in this episode."""
        return expert_action(self.browser, self.goal)

    def render(self):
        if self.render_mode != "ansi" or self.browser is None:
            return None
        lines = [f"goal: {self.goal.text}", f"url: {self.browser.url}", self.browser.text()]
        if self._last is not None:
            action, error = self._last
            lines.append(f"last action: {action}" + (f" (rejected: {error})" if error else ""))
        return "\n".join(lines)


__all__ = ["GOAL_ENV_ID", "KINDS", "TEMPLATES", "Goal", "MiniWebGoalConfig", "MiniWebGoalEnv", "affordance_lines",
           "expert_action", "make_episode", "random_action"]
