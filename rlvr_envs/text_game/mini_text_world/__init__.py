"""MiniTextWorld: a small procedural text-game simulator that writes ByteSized32 rows.

Why it exists: ByteSized32 needs a download and its prompts run to thousands of tokens;
MiniTextWorld gives the language side an embedded, unlimited, CPU-sized source of
transitions with *the same schema*, so `TextGameTask`'s codec and the text-state verifier
apply unchanged (`RLVRWorld/MiniTextWorld-v0`).

The simulator is an object tree (a room holding the agent and the game's objects) with
real dynamics driven by object types, as ByteSized32 games are:
  * containers hold things; open/close, take/put move them (and fail with a message when
    a rule forbids it: a closed container, an immovable object, ...);
  * devices switch on/off; a switched-on sink fills every empty water container in it by
    *creating* a water object (uuid = max_UUID, which then increments);
  * thermal devices (stove, fridge, freezer) move the temperature of everything inside
    them toward their target each tick; everything else drifts toward room temperature;
    water at >= 100 degrees turns into steam and at <= 0 into ice (the old object is
    *removed* and a new one created), ice above 0 melts back into water;
  * food that gets to freezing point is frozen for good; a burning fire pit burns its
    logs down, turning each spent log into ash;
  * every game scores its sub-goals and can be won, and most can be lost.

One step is ByteSized32's: the action's effect (`action_state`), then the world tick
(`tick_state`), then the score (`next_score_state`). `generate_row(config, seed, index)`
plays a random-but-sensible playthrough (mostly the game's reactive plan, sometimes a
random action) and returns the step at an `index`-determined point of it, with an action
that is the plan's or, more often, a random one (looking around, or an attempt the rules
refuse), so 41-50 % of transitions change the state (ByteSized32's test set: 41 %). It
is a pure function of its arguments. The rules text keeps ByteSized32's three kinds
(object, action, score) but is terse, so that prompts fit a small model on a CPU.

Layout (as minigrid splits its envs): `world` holds the world rules (objects, devices,
heat, the tick, the actions and the rules text), `game` what a game is and the pieces
games share, `games/` one small module per game (boil_pot, chill_groceries, freeze_tray,
keep_campfire), and `generator` the configuration, the difficulty presets and the
playthroughs. This package re-exports the public names of all of them.
"""

from __future__ import annotations

from rlvr_envs.text_game.mini_text_world.game import Game, Score
from rlvr_envs.text_game.mini_text_world.games import GAMES, all_rules, game_rules
from rlvr_envs.text_game.mini_text_world.generator import (
    COLORS, DIFFICULTIES, DISTRACTORS, EXTRA_PROPERTIES, MATERIALS, MiniTextWorldConfig, build_world, choose_action,
    generate_row, generate_rows, run_tick, score_state, step_row,
)
from rlvr_envs.text_game.mini_text_world.world import (
    ACTION_RULES, BASE_TYPES, BOILING_POINT, COLD_ENOUGH, MASS_NOUNS, MELTING_POINT, OBJECT_RULES, ROOM_DRIFT,
    ROOM_TEMPERATURE, SCORCH_TEMPERATURE, TOGGLES, Action, Thing, World, act, candidate_actions, container, device,
    item, thermal, tick, water_container,
)

__all__ = [
    "ACTION_RULES", "BASE_TYPES", "BOILING_POINT", "COLD_ENOUGH", "COLORS", "DIFFICULTIES", "DISTRACTORS",
    "EXTRA_PROPERTIES", "GAMES", "MASS_NOUNS", "MATERIALS", "MELTING_POINT", "OBJECT_RULES", "ROOM_DRIFT",
    "ROOM_TEMPERATURE", "SCORCH_TEMPERATURE", "TOGGLES", "Action", "Game", "MiniTextWorldConfig", "Score", "Thing",
    "World", "act", "all_rules", "build_world", "candidate_actions", "choose_action", "container", "device",
    "game_rules", "generate_row", "generate_rows", "item", "run_tick", "score_state", "step_row", "thermal", "tick",
    "water_container",
]
