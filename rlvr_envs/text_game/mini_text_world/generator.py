"""MiniTextWorld rows: the configuration, the difficulty presets and the playthroughs that
turn a game into ByteSized32 transitions, each a pure function of (config, seed, index)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from rlvr_envs.core.util import index_rng
from rlvr_envs.text_game.mini_text_world.game import Game, Score
from rlvr_envs.text_game.mini_text_world.games import GAMES
from rlvr_envs.text_game.mini_text_world.world import (
    ROOM_TEMPERATURE, Action, World, act, candidate_actions, container, item, tick, water_container,
)

#: descriptive properties added to items by the difficulty knob, in this order; only
#: "temperature" takes part in the dynamics (every object that has one warms and cools)
EXTRA_PROPERTIES = ("temperature", "weight", "color", "material")
COLORS = ("red", "blue", "green", "white", "black", "yellow")
MATERIALS = ("wood", "metal", "glass", "plastic", "cloth", "paper")


@dataclass(frozen=True)
class MiniTextWorldConfig:
    """What `generate_row` generates; the difficulty presets are in `DIFFICULTIES`.

    distractors: objects unrelated to the goal (plain items, boxes, baskets, a mug the
        sink can fill) placed in the room or inside each other; they widen the state and
        the action space.
    extra_properties: how many of `EXTRA_PROPERTIES` every item carries on top of the
        ones its type needs (temperature first, so the heat dynamics reach more objects).
    max_steps: the length of the playthrough (it stops earlier when the game ends); the
        transition is taken at a uniformly chosen step of it.
    rollout_plan_rate: the chance that a playthrough step follows the game's plan rather
        than a random action; high, so playthroughs get to the interesting parts (water
        boiling, food chilling, fires burning down, games won and lost).
    plan_rate: the chance that the transition's own action is the plan's; otherwise it is
        random (half idle: look/inventory/examine, half manipulation, often refused). It
        sets how often the state changes: 0.2 gives 41-50 % changed transitions (41.4 / 50.2 /
        47.7 % of 512 test transitions, easy / medium / hard), near the ByteSized32 test set's 41 % (1,210 of 2,954).
    """

    games: tuple[str, ...] = ("boil-pot", "chill-groceries", "freeze-tray", "keep-campfire")
    distractors: int = 0
    extra_properties: int = 0
    max_steps: int = 12
    rollout_plan_rate: float = 0.75
    plan_rate: float = 0.2

    def __post_init__(self):
        if isinstance(self.games, str):
            object.__setattr__(self, "games", (self.games,))
        elif not isinstance(self.games, tuple):
            object.__setattr__(self, "games", tuple(self.games))

    def validate(self) -> None:
        unknown = sorted(set(self.games) - set(GAMES))
        if not self.games or unknown:
            raise ValueError(f"games must be a non-empty subset of {sorted(GAMES)}, got {list(self.games)}")
        if not 0 <= self.distractors <= len(DISTRACTORS):
            raise ValueError(f"distractors must be in [0, {len(DISTRACTORS)}], got {self.distractors}")
        if not 0 <= self.extra_properties <= len(EXTRA_PROPERTIES):
            raise ValueError(f"extra_properties must be in [0, {len(EXTRA_PROPERTIES)}], got {self.extra_properties}")
        if not 1 <= self.max_steps <= 200:
            raise ValueError(f"max_steps must be in [1, 200], got {self.max_steps}")
        for name in ("rollout_plan_rate", "plan_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")

# -- distractors and the difficulty knob ----------------------------------------------------------

#: (base name, type, properties) of objects no goal needs; containers may hold other distractors
DISTRACTORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("apple", "Apple", item()),
    ("book", "Book", item()),
    ("spoon", "Spoon", item()),
    ("box", "Box", container(True, openable=True, is_open=False)),
    ("mug", "Mug", {**container(True), **water_container()}),
    ("basket", "Basket", container(True)),
    ("towel", "Towel", item()),
    ("plate", "Plate", container(True, prefix="on")),
)


def _extra_properties(rng: random.Random, count: int) -> dict[str, Any]:
    values = {"temperature": ROOM_TEMPERATURE, "weight": rng.randrange(50, 2000, 10),
              "color": rng.choice(COLORS), "material": rng.choice(MATERIALS)}
    return {key: values[key] for key in EXTRA_PROPERTIES[:count]}


def build_world(game: Game, config: MiniTextWorldConfig, rng: random.Random) -> World:
    """The initial world: the game's objects, then distractors, then the extra properties."""
    world = World(game.room)
    game.setup(world, rng)
    for base, type_, properties in rng.sample(DISTRACTORS, config.distractors):
        holders = [world.room] + [thing for thing in world.reachable()
                                  if thing.type in ("Box", "Basket", "Plate") and thing.is_("isMoveable")]
        world.add(base, type_, dict(properties), rng.choice(holders))
    for thing in world.things():
        if thing.is_("isMoveable") and thing.type not in ("World", "Agent"):
            for key, value in _extra_properties(rng, config.extra_properties).items():
                thing.properties.setdefault(key, value)
    world.shuffle_uuids(rng)
    return world


# -- playthroughs and rows ----------------------------------------------------------------------

def choose_action(world: World, game: Game, rng: random.Random, plan_rate: float) -> Action:
    """The game's plan with probability `plan_rate`, else a random action (half of them idle)."""
    if rng.random() < plan_rate:
        planned = game.plan(world)
        return planned if planned is not None else Action("look")
    candidates = candidate_actions(world)
    idle = [a for a in candidates if a.is_idle]
    busy = [a for a in candidates if not a.is_idle]
    return rng.choice(idle if not busy or rng.random() < 0.5 else busy)


def score_state(score: Score) -> dict[str, Any]:
    return {"score": score.score, "gameOver": score.lost or score.won, "gameWon": score.won}


def run_tick(world: World, action_message: str) -> str:
    """Tick the world; return the step's observation (the action's message, then the tick's)."""
    world.messages = []
    tick(world)
    return "\n".join([action_message, *world.messages])


def step_row(world: World, game: Game, action: Action, observation: str, last_action: str) -> dict[str, Any]:
    """Play one step and return it as a ByteSized32 row (without `game`/`state_id`)."""
    current = world.snapshot(game.task, observation, last_action)
    current_score = score_state(game.score(world))
    message = act(world, action)
    action_state = world.snapshot(game.task, message, action.text)
    tick_state = world.snapshot(game.task, run_tick(world, message), action.text)
    return {"current_state": current, "action_state": action_state, "tick_state": tick_state,
            "current_score_state": current_score, "next_score_state": score_state(game.score(world))}


def generate_row(config: MiniTextWorldConfig, seed: int, index: int) -> dict[str, Any]:
    """Transition number `index` of the stream `seed`: a pure function of its arguments.

    The game is `config.games[index % len(games)]` (so every slice is balanced). A mostly
    goal-directed playthrough of up to `max_steps` steps is played (it stops when the game
    ends); at a uniformly chosen step of it a fresh action is drawn (the plan's with
    probability `plan_rate`, else a random one) and that step is the transition. All
    randomness comes from `rlvr_envs.core.util.index_rng(seed, index)`, the package's one
    recipe for procedural data, so any row is generated alone, in any order.
    """
    config.validate()
    rng = index_rng(seed, index)
    game = GAMES[config.games[index % len(config.games)]]
    world = build_world(game, config, rng)
    observation, last_action = world.look_text(), ""
    history: list[tuple[World, str, str]] = []  # the world before each step, with the observation and action that led to it
    for _ in range(config.max_steps):
        history.append((world.clone(), observation, last_action))
        action = choose_action(world, game, rng, config.rollout_plan_rate)
        observation, last_action = run_tick(world, act(world, action)), action.text
        outcome = game.score(world)
        if outcome.lost or outcome.won:
            break
    world, observation, last_action = history[rng.randrange(len(history))]
    action = choose_action(world, game, rng, config.plan_rate)
    return {**step_row(world, game, action, observation, last_action), "game": game.name, "state_id": index}


def generate_rows(config: MiniTextWorldConfig, seed: int, count: int, start: int = 0) -> list[dict[str, Any]]:
    return [generate_row(config, seed, index) for index in range(start, start + count)]


DIFFICULTIES: dict[str, MiniTextWorldConfig] = {
    "easy": MiniTextWorldConfig(distractors=0, extra_properties=0, max_steps=12),
    "medium": MiniTextWorldConfig(distractors=2, extra_properties=1, max_steps=16),
    "hard": MiniTextWorldConfig(distractors=4, extra_properties=3, max_steps=24),
}
