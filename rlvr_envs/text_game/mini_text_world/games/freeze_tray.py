"""Freeze-tray: fill the ice tray at the sink, then freeze it in the closed, running freezer."""

from __future__ import annotations

import random

from rlvr_envs.text_game.mini_text_world.game import Game, Score, add_freezer, add_sink, only, place, switch
from rlvr_envs.text_game.mini_text_world.world import Action, World, container, water_container


def setup(world: World, rng: random.Random) -> None:
    add_freezer(world, rng, is_on=rng.random() < 0.5)
    sink = add_sink(world, rng)
    world.add(rng.choice(("ice tray", "ice mold")), "IceTray", {**container(True), **water_container()},
              rng.choice([world.room, sink]))


def plan(world: World) -> Action | None:
    freezer, sink, tray = only(world, "Freezer"), only(world, "Sink"), only(world, "IceTray")
    if not tray.holds("Water", "Ice"):
        if tray.parent is not sink:
            return place(world, tray, sink)
        return switch(sink, True)
    if tray.parent is not freezer:
        return switch(sink, False) or place(world, tray, freezer)
    if freezer.is_("isOpen"):
        return Action("close", (freezer,))
    return switch(freezer, True)


def score(world: World) -> Score:
    tray = only(world, "IceTray")
    frozen = bool(world.of_type("Ice"))
    return Score(int(bool(tray.holds("Water", "Ice"))) + int(tray.parent.type == "Freezer") + int(frozen),
                 won=frozen)


GAME = Game("freeze-tray", "kitchen", "Your task is to make ice.",
           ("Freezer", "Sink", "IceTray", "Water"), (),
           "1 point when the ice tray holds water or ice, 1 more while it is in a freezer, 1 more and the game is "
           "won when any ice exists.",
           setup, plan, score)
