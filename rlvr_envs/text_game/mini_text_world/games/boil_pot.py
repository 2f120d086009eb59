"""Boil-pot: fill a pot at the sink and boil it on the stove; an empty pot left on the stove scorches."""

from __future__ import annotations

import random

from rlvr_envs.text_game.mini_text_world.game import Game, Score, add_sink, add_stove, only, place, switch
from rlvr_envs.text_game.mini_text_world.world import ROOM_TEMPERATURE, Action, World, container, water_container


def setup(world: World, rng: random.Random) -> None:
    add_stove(world, rng)
    sink = add_sink(world, rng)
    world.add(rng.choice(("pot", "saucepan", "kettle")), "Pot", {
        **container(True), **water_container(), "temperature": ROOM_TEMPERATURE, "isScorched": False},
        rng.choice([world.room, sink]))


def plan(world: World) -> Action | None:
    stove, sink, pot = only(world, "Stove"), only(world, "Sink"), only(world, "Pot")
    if not pot.holds("Water"):
        if pot.parent is not sink:
            return place(world, pot, sink)
        return switch(sink, True)
    if pot.parent is not stove:
        return switch(sink, False) or place(world, pot, stove)
    return switch(stove, True)


def score(world: World) -> Score:
    pots = world.of_type("Pot")
    with_water = [pot for pot in pots if pot.holds("Water", "Steam")]
    heating = [pot for pot in with_water if pot.parent.type == "Stove" and pot.parent.is_("isOn")]
    boiled = bool(world.of_type("Steam"))
    return Score(int(bool(with_water)) + int(bool(heating)) + int(boiled),
                 lost=any(pot.is_("isScorched") for pot in pots), won=boiled)


GAME = Game("boil-pot", "kitchen", "Your task is to boil water.",
           ("Stove", "Sink", "Pot", "Water"), (),
           "1 point when a pot holds water, 1 more while it is on a stove that is on, 1 more and the game is won "
           "when the water boils into steam. The game is lost if a pot is scorched.",
           setup, plan, score)
