"""What a MiniTextWorld game is (`Game`, `Score`) and the pieces its modules share: plan
steps (fetch, place, switch) and the kitchen appliances."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from rlvr_envs.text_game.mini_text_world.world import (
    ACTION_RULES, BASE_TYPES, COLD_ENOUGH, OBJECT_RULES, Action, Thing, World, container, device, thermal,
)


@dataclass(frozen=True)
class Score:
    score: int
    lost: bool = False
    won: bool = False


@dataclass(frozen=True)
class Game:
    """A game: how to set it up, a reactive plan that solves it, and how it is scored.

    `plan` looks at the current world and returns the next sensible action (None when the
    plan can only wait); random actions interleaved with it keep playthroughs varied.
    """

    name: str
    room: str
    task: str
    object_types: tuple[str, ...]
    verbs: tuple[str, ...]
    score_rule: str
    setup: Callable[[World, random.Random], None]
    plan: Callable[[World], Action | None]
    score: Callable[[World], Score]

    def rules(self) -> dict[str, str]:
        objects = "\n".join(OBJECT_RULES[kind] for kind in (*BASE_TYPES, *self.object_types))
        verbs = ("look", "take", "put", "open", "turn", *self.verbs, "tick")
        return {"object": objects, "action": "\n".join(ACTION_RULES[verb] for verb in verbs),
                "score": self.score_rule}


def fetch(world: World, thing: Thing) -> Action:
    """Take `thing`, opening what holds it first (the first step of moving it anywhere)."""
    for holder in reversed(list(thing.ancestors())):
        if holder.is_("isOpenable") and not holder.is_("isOpen"):
            return Action("open", (holder,))
    return Action("take", (thing,))


def place(world: World, thing: Thing, target: Thing) -> Action:
    """The next action that moves `thing` into `target` (open it, take the thing, put it)."""
    if target.is_("isOpenable") and not target.is_("isOpen"):
        return Action("open", (target,))
    if not world.in_inventory(thing):
        return fetch(world, thing)
    return Action("put", (thing, target))


def switch(thing: Thing, on: bool) -> Action | None:
    if thing.is_("isOn") == on:
        return None
    return Action("turn on" if on else "turn off", (thing,))


def only(world: World, type_: str) -> Thing:
    return world.of_type(type_)[0]


# Shared appliances. Names and settings vary with the seed so that playthroughs differ from
# their first step (a fixed kitchen would make many train and test transitions identical).
def add_stove(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("stove", "cooktop")), "Stove", {
        **container(False, prefix="on"), **device(False),
        **thermal(rng.choice((200, 250, 300)), rng.choice((20, 25, 30, 40)))})


def add_sink(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("sink", "basin")), "Sink", {**container(False), **device(rng.random() < 0.2)})


def add_fridge(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("fridge", "refrigerator")), "Fridge", {
        **container(False, openable=True, is_open=False), **device(rng.random() < 0.5),
        **thermal(rng.randint(1, COLD_ENOUGH), rng.choice((3, 4, 5)))})


def add_freezer(world: World, rng: random.Random, is_on: bool) -> Thing:
    return world.add(rng.choice(("freezer", "chest freezer")), "Freezer", {
        **container(False, openable=True, is_open=False), **device(is_on),
        **thermal(rng.choice((-20, -15, -10)), rng.choice((5, 10, 15)))})
