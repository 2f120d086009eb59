"""The MiniTextWorld games, one module each (a setup, a reactive plan, a score); add a game by
writing a module with a `GAME` and listing it here."""

from __future__ import annotations

from rlvr_envs.text_game.mini_text_world.game import Game
from rlvr_envs.text_game.mini_text_world.games import boil_pot, chill_groceries, freeze_tray, keep_campfire

GAMES: dict[str, Game] = {module.GAME.name: module.GAME
                          for module in (boil_pot, chill_groceries, freeze_tray, keep_campfire)}


def game_rules(game: str) -> dict[str, str]:
    """The human-readable {"object", "action", "score"} rules of a game (ByteSized32 style)."""
    if game not in GAMES:
        raise KeyError(f"unknown MiniTextWorld game {game!r}; games: {sorted(GAMES)}")
    return GAMES[game].rules()


def all_rules() -> dict[str, dict[str, str]]:
    """Rules for every game, in the shape `TextGameTask(rules=...)` takes."""
    return {name: game_rules(name) for name in GAMES}
