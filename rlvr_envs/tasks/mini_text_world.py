"""MiniTextWorld state prediction (`RLVRWorld/MiniTextWorld-v0`, `-TaskReward-v0`).

The embedded default of the language side: transitions come from our procedural
simulator (`rlvr_envs.data.mini_text_world`) in exactly the ByteSized32 row schema, so the
prompt, the state-difference answer and both rewards are `TextGameTask`'s, and the
tokenizer is the small byte-level BPE shipped in the package. Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rlvr_envs.data import mini_text_world as simulator
from rlvr_envs.tasks.text_game import REWARDS, TextGameTask

#: the `seed` of each split's transition stream; disjoint, so no split reuses another's playthroughs
SPLIT_SEEDS = {"train": 0, "test": 1}
DEFAULT_SIZES = {"train": 2048, "test": 512}


@dataclass(frozen=True)
class MiniTextWorldTaskConfig:
    """Arguments of `RLVRWorld/MiniTextWorld-v0` (pass them to `gym.make`)."""

    split: str = "test"  #: "train" or "test" (different seeds, so different playthroughs)
    n_transitions: int | None = None  #: how many transitions (default 2048 train, 512 test)
    difficulty: str = "easy"  #: "easy", "medium" or "hard" (distractors, extra properties, steps)
    games: tuple[str, ...] | None = None  #: keep only these games (default: all)
    reward: str = "binary"  #: "binary" or "task"
    tokenizer: Any = None  #: the world model's tokenizer (HF name/path/object); default embedded
    max_prompt_tokens: int | None = None  #: drop longer prompts
    max_response_tokens: int | None = None  #: response budget (default: longest gold + 25%)

    def __post_init__(self):
        if isinstance(self.games, str):
            object.__setattr__(self, "games", (self.games,))
        elif self.games is not None and not isinstance(self.games, tuple):
            object.__setattr__(self, "games", tuple(self.games))

    def validate(self) -> None:
        if self.split not in SPLIT_SEEDS:
            raise ValueError(f"split must be one of {sorted(SPLIT_SEEDS)}, got {self.split!r}")
        if self.difficulty not in simulator.DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {list(simulator.DIFFICULTIES)}, got {self.difficulty!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.n_transitions is not None and self.n_transitions < 1:
            raise ValueError(f"n_transitions must be positive, got {self.n_transitions}")
        self.generator_config().validate()

    def generator_config(self) -> simulator.MiniTextWorldConfig:
        preset = simulator.DIFFICULTIES[self.difficulty]
        return preset if self.games is None else dataclasses.replace(preset, games=self.games)


class MiniTextWorldTask(TextGameTask):
    """Text-game state prediction on generated MiniTextWorld transitions.

    Transition `i` of a split is `generate_row(difficulty preset, SPLIT_SEEDS[split], i)`, so
    a task is reproducible from its config alone; rewards are `TextGameTask`'s.
    """

    name = "minitextworld"
    Config = MiniTextWorldTaskConfig

    def __init__(self, config: MiniTextWorldTaskConfig):
        config.validate()
        self.config = config
        count = config.n_transitions or DEFAULT_SIZES[config.split]
        rows = simulator.generate_rows(config.generator_config(), SPLIT_SEEDS[config.split], count)
        super().__init__(rows, simulator.all_rules(), config.split, config.reward, config.tokenizer,
                         config.max_prompt_tokens, config.max_response_tokens)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        return True, "embedded"
