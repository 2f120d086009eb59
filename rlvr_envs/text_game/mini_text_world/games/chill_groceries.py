"""Chill-groceries: chill every food item in the fridge (closed and on); the freezer ruins food."""

from __future__ import annotations

import random

from rlvr_envs.text_game.mini_text_world.game import Game, Score, add_freezer, add_fridge, only, place, switch
from rlvr_envs.text_game.mini_text_world.world import COLD_ENOUGH, ROOM_TEMPERATURE, Action, World, container, item


FOODS = ("milk", "cheese", "butter", "yogurt", "chicken", "fish")


def setup(world: World, rng: random.Random) -> None:
    add_fridge(world, rng)
    add_freezer(world, rng, is_on=True)
    counter = world.add(rng.choice(("counter", "table", "shelf")), "Counter", container(False, prefix="on"))
    for base in rng.sample(FOODS, rng.choice([1, 2])):
        world.add(base, "Food", {**item(True), "temperature": ROOM_TEMPERATURE, "isFrozen": False},
                  rng.choice([counter, world.room]))


def plan(world: World) -> Action | None:
    fridge = only(world, "Fridge")
    for food in world.of_type("Food"):
        if food.parent is not fridge:
            return place(world, food, fridge)
    if fridge.is_("isOpen"):
        return Action("close", (fridge,))
    return switch(fridge, True)


def score(world: World) -> Score:
    foods = world.of_type("Food")
    cold = [food for food in foods if food.properties["temperature"] <= COLD_ENOUGH and not food.is_("isFrozen")]
    return Score(len(cold), lost=any(food.is_("isFrozen") for food in foods), won=len(cold) == len(foods))


GAME = Game("chill-groceries", "kitchen", "Your task is to chill the groceries in the fridge.",
           ("Fridge", "Freezer", "Food"), (),
           f"1 point for each food at {COLD_ENOUGH} or colder and not frozen; the game is won when every food is. "
           "The game is lost if any food is frozen.",
           setup, plan, score)
