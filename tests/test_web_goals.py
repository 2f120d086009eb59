"""MiniWeb goal tasks: actions applied from strings, the success check on hand-made episodes,
the scripted expert, and the agent env `RLVRWorld/MiniWeb-Goal-v0`."""

from __future__ import annotations

import copy
import pickle
import random

import gymnasium as gym
import pytest

from rlvr_envs.core.util import index_rng
from rlvr_envs.web.goals import (GOAL_ENV_ID, KINDS, Goal, MiniWebGoalConfig, MiniWebGoalEnv, expert_action,
                                 make_episode, random_action)
from rlvr_envs.web.mini_web import ActionError, Browser, MiniWebConfig, parse_action


def episode(kind: str, index: int = 0, **kwargs):
    return make_episode(MiniWebGoalConfig(kinds=(kind,), **kwargs), index)


def row(browser: Browser, name: str):
    return next(r for r in browser.list_container().data["rows"] if r.children[0].name == name)


def other_row(browser: Browser, name: str):
    return next(r for r in browser.list_container().data["rows"] if r.children[0].name != name)


def press(browser: Browser, row_node, button: int) -> None:
    """Scroll `row_node` into view, then click its `button`-th child (as an agent would)."""
    while not any(r is row_node for r in browser.list_container().children):
        rows = browser.list_container().data["rows"]
        down = rows.index(row_node) >= browser.list_container().data["offset"]
        browser.apply("scroll [down]" if down else "scroll [up]")
    browser.apply(f"click [{row_node.children[button].id}]")


def fill(browser: Browser, values: dict[str, str]) -> None:
    for node, _ in browser.main.walk():
        if node.behavior == "field" and node.name in values:
            browser.apply(f"type [{node.id}] [{values[node.name]}] [0]")


def click_named(browser: Browser, behavior: str) -> None:
    node = next(n for n, _ in browser.main.walk() if n.behavior == behavior)
    browser.apply(f"click [{node.id}]")


def solve(browser: Browser, goal: Goal, limit: int = 6) -> int:
    for step in range(1, limit + 1):
        browser.apply(expert_action(browser, goal))
        if goal.achieved(browser.state):
            return step
    return 0


# -- actions from strings ------------------------------------------------------------------------------

def test_every_generated_action_string_is_accepted_and_written_back_the_same():
    config = MiniWebConfig()
    for index in range(150):
        browser = Browser(index_rng(3, index), config)
        for _ in range(3):
            before = copy.deepcopy(browser)
            action = browser.act()
            assert before.apply(action) == action


def test_apply_performs_the_action():
    browser, goal = episode("contact")
    name = next(n for n, _ in browser.main.walk() if n.name == "Name")
    written = browser.apply(f"type [{name.id}] [Ada] [0]")
    assert written == f"type [{name.id}] [Ada] [0] where [{name.id}] is textbox 'Name' required: True"
    assert name.children[0].name == "Ada" and name.attrs["focused"] == "True"
    assert browser.apply(f"type [{name.id}] [Bo]").startswith(f"type [{name.id}] [Bo] [1]")  # Enter by default
    assert name.children[0].name == "Bo"
    browser.apply("click [%d] where [whatever] is ignored" % next(n.id for n in browser.root.children
                                                                  if n.behavior == "dialog"))
    assert any(n.role == "dialog" for n in browser.root.children)


@pytest.mark.parametrize("action, reason", [
    ("", "empty action"),
    (42, "an action is a string"),
    ("press [Enter]", "unsupported action 'press'"),
    ("stop [done]", "unsupported action 'stop'"),
    ("click 12", "malformed click"),
    ("click [abc]", "malformed click"),
    ("type [5]", "malformed type"),
    ("scroll [left]", "malformed scroll"),
    ("click [999999]", r"no element \[999999\]"),
    ("type [{name}] [a\nb] [0]", "characters a page cannot show"),
    ("type [{name}] [  ] [0]", "non-empty text"),
    ("type [{name}] [" + "x" * 300 + "] [0]", "longer than"),
    ("click [{name}]", "takes type, not click"),
    ("hover [{submit}]", "takes click, not hover"),
    ("type [{root}] [x]", "takes no action"),
    ("scroll [down]", "nothing on this page scrolls"),
    ("go_back", "no earlier page"),
    ("click " * 500, "longer than 2000"),
])
def test_actions_outside_the_affordances_are_rejected_with_a_reason_and_change_nothing(action, reason):
    browser, _ = episode("contact")
    ids = {"name": next(n.id for n, _ in browser.main.walk() if n.name == "Name"),
           "submit": next(n.id for n, _ in browser.main.walk() if n.behavior == "submit"), "root": browser.root.id}
    if isinstance(action, str):
        action = action.replace("{name}", str(ids["name"])).replace("{submit}", str(ids["submit"])) \
            .replace("{root}", str(ids["root"]))
    page, state = browser.text(), browser.rng.getstate()
    with pytest.raises(ActionError, match=reason):
        browser.apply(action)
    assert browser.text() == page and browser.rng.getstate() == state


def test_a_modal_dialog_blocks_the_page_behind_it():
    browser, _ = episode("contact")
    sign_in = next(n for n in browser.root.children if n.behavior == "dialog")
    browser.apply(f"click [{sign_in.id}]")
    name = next(n for n, _ in browser.main.walk() if n.name == "Name")
    with pytest.raises(ActionError, match="behind the open dialog 'Sign In'; close it first"):
        browser.apply(f"type [{name.id}] [x] [0]")


def test_parse_action_reads_webarena_forms():
    assert parse_action("type [7] [a] b] [0] where [7] is textbox 'x'") == ("type", 7, "a] b", False)
    assert parse_action("  scroll [ up ]") == ("scroll", "up", None, False)
    assert parse_action("hover [3]") == ("hover", 3, None, False)


# -- the success check on hand-made episodes ---------------------------------------------------------------

def test_cart_goal_needs_the_named_product_and_nothing_else():
    browser, goal = episode("cart_product", 1)
    assert goal.text == f"Add the {goal.target} to my cart." and not goal.achieved(browser.state)
    wrong = copy.deepcopy(browser)
    press(wrong, other_row(wrong, goal.target), 2)
    assert not goal.achieved(wrong.state)
    press(wrong, row(wrong, goal.target), 2)
    assert wrong.state.cart[-1] == goal.target and not goal.achieved(wrong.state)  # the wrong one stays in
    press(browser, row(browser, goal.target), 2)
    assert goal.achieved(browser.state)


def test_search_goal_needs_the_search_and_a_matching_product():
    browser, goal = episode("search_cart", 2)
    box = next(n for n, _ in browser.root.walk() if n.behavior == "search")
    other = next(w for w in ("lamp", "kettle") if w != goal.target)
    elsewhere = copy.deepcopy(browser)
    elsewhere.apply(f"type [{box.id}] [{other}] [1]")
    press(elsewhere, elsewhere.list_container().data["rows"][0], 2)
    assert not goal.achieved(elsewhere.state)
    browser.apply(f"type [{box.id}] [{goal.target}] [1]")
    assert browser.state.searches == [goal.target] and not goal.achieved(browser.state)
    press(browser, browser.list_container().data["rows"][0], 2)
    assert goal.achieved(browser.state)


def test_contact_goal_needs_every_value_right_and_an_accepted_submission():
    browser, goal = episode("contact", 3)
    values = dict(goal.fields)
    missing = copy.deepcopy(browser)
    fill(missing, {"Message": values["Message"]})
    click_named(missing, "submit")  # required fields empty: the form complains, nothing is sent
    assert not missing.state.submissions and "This is a required field." in missing.text()
    wrong = copy.deepcopy(browser)
    fill(wrong, {**values, "Email": "someone@example.com"})
    click_named(wrong, "submit")
    assert wrong.state.submissions and not goal.achieved(wrong.state)
    fill(browser, values)
    click_named(browser, "submit")
    assert goal.achieved(browser.state) and browser.title == "Success"


def test_upvote_goal_fails_after_a_retraction_or_a_second_vote():
    browser, goal = episode("upvote", 4)
    retracted = copy.deepcopy(browser)
    press(retracted, row(retracted, goal.target), 3)
    assert goal.achieved(retracted.state)
    press(retracted, row(retracted, goal.target), 3)
    assert not goal.achieved(retracted.state)
    press(browser, row(browser, goal.target), 3)
    press(browser, other_row(browser, goal.target), 3)
    assert not goal.achieved(browser.state)
    press(browser, other_row(browser, goal.target), 3)  # retracting the stray vote repairs it
    assert goal.achieved(browser.state)


def test_reply_goal_needs_the_exact_text_in_the_thread():
    browser, goal = episode("reply", 5)
    assert goal.form == goal.target == browser.title
    wrong = copy.deepcopy(browser)
    fill(wrong, {"Comment": "Thanks!"})
    click_named(wrong, "submit")
    assert wrong.state.submissions[0].form == goal.target and not goal.achieved(wrong.state)
    fill(browser, dict(goal.fields))
    click_named(browser, "submit")
    assert goal.achieved(browser.state)


def test_delete_goal_fails_for_the_wrong_customer_or_two():
    browser, goal = episode("delete", 6)
    wrong = copy.deepcopy(browser)
    press(wrong, other_row(wrong, goal.target), 2)
    assert not goal.achieved(wrong.state)
    two = copy.deepcopy(browser)
    press(two, row(two, goal.target), 2)
    assert goal.achieved(two.state)
    press(two, other_row(two, goal.target), 2)
    assert len(two.state.deleted) == 2 and not goal.achieved(two.state)
    press(browser, row(browser, goal.target), 2)
    assert browser.state.deleted == [goal.target] and goal.achieved(browser.state)


def test_subscribe_goal_needs_the_checkbox():
    browser, goal = episode("subscribe", 7)
    unchecked = copy.deepcopy(browser)
    fill(unchecked, dict(goal.fields))
    click_named(unchecked, "submit")
    assert unchecked.state.submissions[0].checks == {"Subscribe to newsletter": False}
    assert not goal.achieved(unchecked.state)
    fill(browser, dict(goal.fields))
    click_named(browser, "checkbox")
    click_named(browser, "submit")
    assert goal.achieved(browser.state)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_goal_texts_read_back_and_name_their_site(kind):
    for index in range(5):
        browser, goal = episode(kind, index)
        assert Goal.parse(goal.text) == goal and goal.site == browser.site == KINDS[kind]
    with pytest.raises(ValueError, match="not a MiniWeb goal"):
        Goal.parse("Buy me a pony.")


# -- the expert and random actions -------------------------------------------------------------------------

def test_the_expert_solves_every_goal_within_the_step_limit_and_random_actions_rarely_do():
    config = MiniWebGoalConfig()
    solved, lucky, rng = 0, 0, random.Random(0)
    for index in range(40):
        browser, goal = make_episode(config, index)
        steps = solve(copy.deepcopy(browser), goal, config.max_steps)
        solved += 0 < steps <= config.expert_steps()
        for _ in range(config.max_steps):
            browser.apply(random_action(browser, rng))
            if goal.achieved(browser.state):
                lucky += 1
                break
    assert solved == 40 and lucky <= 6


def test_the_expert_repairs_a_detour():
    browser, goal = episode("reply", 8)
    link = next(n for n, _ in browser.root.walk() if n.behavior == "nav")
    browser.apply(f"click [{link.id}]")
    assert expert_action(browser, goal) == "go_back"
    assert solve(browser, goal) == 3


def test_long_lists_need_more_steps_and_the_config_says_so():
    with pytest.raises(ValueError, match=r"max_steps must be in \[7, 100\]"):
        MiniWebGoalConfig(list_items=1, list_extra=6).validate()
    config = MiniWebGoalConfig(list_items=1, list_extra=6, max_steps=7, kinds=("delete",))
    assert all(0 < solve(*make_episode(config, i), limit=7) for i in range(10))
    for bad, match in [({"kinds": ("fly",)}, "kinds must be"), ({"sites": ("shop",), "kinds": ("delete",)},
                                                                 "kinds must be"),
                       ({"size": 0}, "size must be"), ({"sites": ("bank",)}, "sites must be")]:
        with pytest.raises(ValueError, match=match):
            MiniWebGoalConfig(**bad).validate()


# -- the env -------------------------------------------------------------------------------------------------

def test_goal_env_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    check_env(MiniWebGoalEnv(), skip_render_check=True)


def test_goal_env_is_registered_and_an_episode_runs_to_success():
    import rlvr_envs  # noqa: F401  (registers the ids)

    env = gym.make(GOAL_ENV_ID, render_mode="ansi")
    obs, info = env.reset(seed=0)
    assert set(obs) == {"goal", "url", "page", "actions"} and info["goal_kind"] in KINDS
    assert obs["goal"] == env.unwrapped.goal.text and env.observation_space.contains(obs)
    assert "go_back" not in obs["actions"].splitlines()
    for _ in range(6):
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        if terminated:
            break
    assert terminated and not truncated and reward == 1.0 and info["success"] and info["error"] is None
    assert "goal:" in env.render()


def test_invalid_actions_are_rejected_counted_and_truncate_at_the_limit():
    env = MiniWebGoalEnv(max_steps=6, render_mode="ansi")
    obs, _ = env.reset(options={"index": 3})
    for step in range(1, 7):
        after, reward, terminated, truncated, info = env.step("press [Enter]")
        assert after == obs and reward == 0.0 and not terminated
        assert info["invalid_actions"] == step and "unsupported action" in info["error"] and info["action"] is None
        assert truncated == (step == 6)
    assert "(rejected: unsupported action 'press'" in env.render()
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"index": -1})
    with pytest.raises(RuntimeError, match="reset"):
        MiniWebGoalEnv().step("go_back")


def test_goal_env_is_deterministic_by_seed_and_picklable():
    def rollout(env, seed):
        obs, info = env.reset(seed=seed)
        pages = [obs]
        for _ in range(3):
            pages.append(env.step(env.unwrapped.expert_action())[0])
        return info["index"], pages

    assert rollout(MiniWebGoalEnv(), 11) == rollout(MiniWebGoalEnv(), 11)
    assert len({MiniWebGoalEnv().reset(seed=s)[1]["index"] for s in range(8)}) > 1
    env = MiniWebGoalEnv()
    env.reset(seed=5)
    env.step(random_action(env.browser, random.Random(1)))
    clone = pickle.loads(pickle.dumps(env))
    action = env.expert_action()
    assert clone.step(action) == env.step(action)
