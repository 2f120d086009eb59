"""Keep-campfire: light the fire pit and keep it fed with logs until it has burned long enough."""

from __future__ import annotations

import random

from rlvr_envs.text_game.mini_text_world.game import Game, Score, fetch, only, place
from rlvr_envs.text_game.mini_text_world.world import Action, World, container, item


def setup(world: World, rng: random.Random) -> None:
    fuels = [rng.randint(2, 3) for _ in range(rng.randint(2, 3))]
    # logs burn side by side, so the longest fire adds each log when the last one has 1 fuel left
    longest_fire = sum(fuels) - (len(fuels) - 1)
    goal = longest_fire - rng.randint(0, 1)
    world.add(rng.choice(("fire pit", "fire ring")), "FirePit", {
        **container(False), "isBurning": False, "burnTime": 0, "burnGoal": goal})
    for fuel in fuels:
        world.add(rng.choice(("log", "branch")), "Log", {**item(True), "fuel": fuel})
    for _ in range(rng.randint(1, 2)):
        world.add("match", "Match", item(True))


def plan(world: World) -> Action | None:
    pit = only(world, "FirePit")
    spare_logs = [log for log in world.of_type("Log") if log.parent is not pit]
    held_logs = [log for log in spare_logs if world.in_inventory(log)]
    if not pit.is_("isBurning"):
        if not pit.holds("Log"):
            return place(world, spare_logs[0], pit) if spare_logs else None
        if len(held_logs) < len(spare_logs):  # gather the spare logs first: fetching one takes a tick
            return fetch(world, next(log for log in spare_logs if log not in held_logs))
        matches = world.of_type("Match")
        if not matches:
            return None
        return Action("light", (pit, matches[0])) if world.in_inventory(matches[0]) else fetch(world, matches[0])
    if held_logs and max(log.properties["fuel"] for log in pit.holds("Log")) <= 1:
        return Action("put", (held_logs[0], pit))
    if len(held_logs) < len(spare_logs):
        return fetch(world, next(log for log in spare_logs if log not in held_logs))
    return None


def score(world: World) -> Score:
    pit = only(world, "FirePit")
    burned = pit.properties["burnTime"]
    won = burned >= pit.properties["burnGoal"]
    out = not pit.is_("isBurning") and (burned > 0 or not world.of_type("Match"))
    return Score(burned, lost=out and not won, won=won)


GAME = Game("keep-campfire", "campsite", "Your task is to keep the campfire burning.",
           ("FirePit", "Match"), ("light",),
           "The score is the fire pit's burnTime; the game is won when it reaches burnGoal. The game is lost if the "
           "fire goes out, or if no match is left and the fire never burned.",
           setup, plan, score)
