"""The web reward as an RL policy sees it: shortcuts must score below the maximum.

Each test writes a strategy a policy could find without predicting the next page (a
constant answer, copies of the current tree, repeated or reformatted lines) and checks
what it earns on MiniWeb transitions and the real WebArena pairs; the rules themselves are
documented in rlvr_envs.web.changes.
"""

from __future__ import annotations

import functools
import statistics

import pytest

from rlvr_envs.web.acctree import parse_item, parse_tree
from rlvr_envs.web.changes import SECTIONS, TITLES, ChangeList, parse_changes, score_changes
from tests.samples import EXPECTED, real_pairs

ALL_NONE = "New items:\nNone\n\nDeleted items:\nNone\n\nUpdated items:\nNone"


@functools.cache
def transitions(size: int = 200):
    from rlvr_envs.web.task import MiniWebTaskConfig, miniweb_records, record_transition

    return [record_transition(r) for r in miniweb_records(MiniWebTaskConfig(size=size, split="train"))]


def answer(sections: dict[str, list[str]]) -> str:
    return "\n\n".join(TITLES[s] + "\n" + ("\n".join(sections.get(s, [])) or "None") for s in SECTIONS)


def scores(strategy, key: str = "f1") -> list[float]:
    return [score_changes(parse_changes(strategy(t)), t.target)[key] for t in transitions()]


def items(change_list: ChangeList, section: str) -> list[str]:
    return [line for line in change_list.section(section) if line != "None"]


def test_constant_nothing_changes_earns_only_the_unchanged_pages():
    f1 = scores(lambda t: ALL_NONE)
    unchanged = [not t.changed for t in transitions()]
    assert 0 < sum(unchanged) < len(unchanged)
    assert f1 == [1.0 if u else 0.0 for u in unchanged]
    # under RLVR-World's rule (None an ordinary line) the same constant earned about a third
    assert statistics.mean(scores(lambda t: ALL_NONE, "reference_f1")) > 0.25


def test_none_next_to_items_earns_nothing():
    def hedge(t):  # "None" and a guess in every section, the guess being the right items
        return answer({s: ["None", *items(t.target, s)] for s in SECTIONS})

    assert scores(hedge) == scores(lambda t: t.target.text())  # the None lines change nothing
    wrong = "[999999] StaticText 'a guess'"
    hedged_wrong = scores(lambda t: answer({s: ["None", wrong] for s in SECTIONS}))
    assert max(hedged_wrong) == 0.0


def test_repeating_a_right_line_lowers_precision():
    changed = [t for t in transitions() if t.changed]
    for t in changed[:40]:
        section = next(s for s in SECTIONS if items(t.target, s))
        line = items(t.target, section)[0]
        previous = 1.0
        for copies in (2, 5, 50):
            sections = {s: items(t.target, s) for s in SECTIONS}
            sections[section] = sections[section] + [line] * (copies - 1)
            f1 = score_changes(parse_changes(answer(sections)), t.target)["f1"]
            gold_items = sum(len(x) for x in sections.values()) - (copies - 1)
            assert f1 < previous and f1 == pytest.approx(2 * gold_items / (2 * gold_items + copies - 1))
            previous = f1
        # a single right line repeated many times alone is worth one line
        one = score_changes(parse_changes(answer({section: [line] * 1000})), t.target)
        assert one["matches"] == 1 and one["f1"] < 0.01


def test_copying_the_current_tree_scores_low():
    def tree_lines(t):
        return parse_tree(t.state).lines()

    into_deleted = scores(lambda t: answer({"deleted": tree_lines(t)}))
    into_all = scores(lambda t: answer({s: tree_lines(t) for s in SECTIONS}))
    assert statistics.mean(into_deleted) < 0.2 and statistics.mean(into_all) < 0.1
    assert max(into_all) < 0.5
    for t, f1 in zip(transitions(), into_deleted):
        gold = sum(len(items(t.target, s)) for s in SECTIONS)
        deleted = len(items(t.target, "deleted"))
        # matches can only be the deleted items; every other current line is a wrong one
        assert f1 <= 2 * deleted / (len(tree_lines(t)) + gold) + 1e-9


def test_reformatted_lines_are_the_same_line_not_extra_credit():
    t = next(t for t in transitions() if any("expanded" in x or "required" in x for x in items(t.target, "updated")
                                            + items(t.target, "new")))
    gold = {s: items(t.target, s) for s in SECTIONS}

    def restyle(line: str) -> str:  # tabs, double spaces, the other quotes, attributes reversed
        item = parse_item(line)
        attrs = "  ".join(f"{k}:  {v}" for k, v in reversed(item.attrs))
        name = f' "{item.name}"' if item.name is not None and '"' not in item.name else (
            f" '{item.name}'" if item.name is not None else "")
        return f"\t[{item.id}]   {item.role}{name}  {attrs}  "

    restyled = {s: [restyle(x) for x in lines] for s, lines in gold.items()}
    assert score_changes(parse_changes(answer(restyled)), t.target)["f1"] == 1.0  # syntax is forgiven
    both = {s: gold[s] + restyled[s] for s in SECTIONS}  # but a restyled copy is the same line again
    m = score_changes(parse_changes(answer(both)), t.target)
    assert m["recall"] == 1.0 and m["precision"] == 0.5 and m["f1"] < 1.0


def test_prose_and_stray_lines_are_wrong_items():
    t = next(t for t in transitions() if t.changed)
    gold = {s: items(t.target, s) for s in SECTIONS}
    chatty = {s: lines + ["This item should appear.", "[12] maybe something"] for s, lines in gold.items()}
    m = score_changes(parse_changes(answer(chatty)), t.target)
    assert m["recall"] == 1.0 and m["precision"] < 1.0 and m["f1"] < 1.0


@pytest.mark.parametrize("k", [0, 1])
def test_real_pairs_shortcuts(k):
    """The real WebArena pairs change every section, so the constant answer earns 0, and the
    current tree copied into Deleted earns only its precision-limited share."""
    observation, _, _ = real_pairs()[k]
    gold = ChangeList.from_sections(EXPECTED[k])
    assert score_changes(parse_changes(gold.text()), gold)["f1"] == 1.0
    assert score_changes(parse_changes(ALL_NONE), gold)["f1"] == 0.0
    dump = score_changes(parse_changes(answer({"deleted": parse_tree(observation).lines()})), gold)
    assert dump["f1"] < 0.5 and dump["matches"] == len(EXPECTED[k]["deleted"])
    everywhere = score_changes(parse_changes(answer({s: parse_tree(observation).lines() for s in SECTIONS})), gold)
    assert everywhere["f1"] < dump["f1"]


def test_reference_reward_option_trains_on_rlvr_worlds_rule():
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    env = gym.make("RLVRWorld/MiniWeb-v0", size=32, reward="reference")
    task = env.unwrapped.task
    index = next(i for i in range(len(task)) if task.transition(i).changed
                 and "None" in task.transition(i).target.as_dict()["deleted"])
    [result] = task.verify_text([index], [ALL_NONE])
    assert result.reward == result.metrics["reference_f1"] > 0 and result.metrics["f1"] == 0.0
    assert task.reward_description.startswith("RLVR-World's line F1")
    with pytest.raises(ValueError, match="reward must be one of"):
        gym.make("RLVRWorld/MiniWeb-v0", size=8, reward="set")
