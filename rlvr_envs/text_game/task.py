"""Text-game state prediction: ByteSized32 (`RLVRWorld/TextGame-v0`, `-TaskReward-v0`) and
MiniTextWorld (`RLVRWorld/MiniTextWorld-v0`, `-TaskReward-v0`).

The world model reads the game's rules, the current state (objects as JSON), the UUID base
for new objects and the action, and answers with the state difference. Any source of rows
in the ByteSized32 JSONL schema can use `TextGameTask` (MiniTextWorld does).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr_envs.core.answer import parse_json_object
from rlvr_envs.core.errors import DataError
from rlvr_envs.core.task import TextTask, check_generated_size
from rlvr_envs.core.types import RewardResult, Transition
from rlvr_envs.core.util import as_tuple, split_stream
from rlvr_envs.text_game import bytesized32
from rlvr_envs.text_game import mini_text_world as simulator
from rlvr_envs.text_game import state as text_state
from rlvr_envs.text_game.state import SCORE_FIELDS

REWARD_DESCRIPTIONS = {"binary": "binary: rebuilt next state matches exactly",
                       "task": "0.1*acc_all + 1.0*acc_changed + 0.2*exact"}
REWARDS = tuple(REWARD_DESCRIPTIONS)

PROMPT = """You are simulating a text game. Predict how the game state changes after the action.
Task: {task}
Object rules:
{object_rules}
Action rules:
{action_rules}
Score rules:
{score_rules}
Current state:
{objects}
Current score: {score}
UUID base: {uuid_base} (a new object gets the next free uuid from here)
Action: {action}
Answer with one JSON object: {{"modified": [every object that changes or is created, in full], "removed": [uuids of objects that disappear], "score": {{"score": ..., "gameOver": ..., "gameWon": ...}}}}.
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def game_prompt(transition: Transition) -> str:
    """q(s, a) for a text-game transition (see PROMPT)."""
    state, rules = transition.state, transition.meta["rules"]
    return PROMPT.format(
        task=state["task"], object_rules=rules["object"].strip(), action_rules=rules["action"].strip(),
        score_rules=rules["score"].strip(), objects=_dumps(state["objects"]), score=_dumps(state["score"]),
        uuid_base=state["max_UUID"], action=transition.action)


def game_target(transition: Transition) -> str:
    """o(s'): the gold state difference as compact JSON."""
    return _dumps(transition.target)


def row_to_transition(row: Mapping[str, Any], split: str, rules: Mapping[str, str]) -> Transition:
    """A ByteSized32 row as a Transition; the simulated action is `tick_state.lastAction`."""
    current, tick = row["current_state"], row["tick_state"]
    current_score = {k: row["current_score_state"].get(k) for k in SCORE_FIELDS}
    next_score = {k: row["next_score_state"].get(k) for k in SCORE_FIELDS}
    before = text_state.objects_by_uuid(current["objects"])
    after = text_state.objects_by_uuid(tick["objects"])
    current_fields = text_state.object_fields(before)  # flattened once: every verification reuses them
    current_flat = text_state.flatten_state(before, current_score, known=current_fields)
    gold_flat = text_state.flatten_state(after, next_score)
    changed_fields = frozenset(text_state.changed_fields(current_flat, gold_flat))
    return Transition(
        uid=f"{row['game']}/{row['state_id']}",
        state={"objects": current["objects"], "score": current_score, "max_UUID": current["max_UUID"],
               "task": current.get("taskDesc", "")},
        action=tick.get("lastAction", ""),
        next_state={"objects": tick["objects"], "score": next_score},
        target=text_state.state_difference(current["objects"], tick["objects"], next_score),
        split=split,
        changed=bool(changed_fields),
        meta={"game": row["game"], "state_id": row["state_id"], "rules": rules,
              "current_flat": current_flat, "gold_flat": gold_flat, "changed_fields": changed_fields,
              "current_by_uuid": before, "current_fields": current_fields},
    )


class TextGameTask(TextTask):
    """State-difference prediction over rows in the ByteSized32 schema.

    Rewards (`reward=`): "binary" = 1 iff the rebuilt next state matches on every object
    field (`contains` order-free) and score field, else 0; "task" = 0.1·acc_all +
    1.0·acc_changed + 0.2·exact (acc_changed dropped when nothing changes, so the maximum is
    1.3 for changing transitions and 0.3 otherwise). Unparsable or incomplete answers
    (no `modified`/`removed`/`score`, or a score without `score`, `gameOver`, `gameWon`)
    score 0; every other fault is a wrong field. The rules are in `rlvr_envs.text_game.state`.
    """

    modality = "text"
    min_reward = 0.0
    metric_keys = text_state.METRIC_KEYS

    @classmethod
    def describe_reward(cls, reward: str = "binary", **kwargs: Any) -> str:
        return REWARD_DESCRIPTIONS[reward]

    def __init__(self, rows: Sequence[Mapping[str, Any]], rules: Mapping[str, Mapping[str, str]], split: str,
                 reward: str, tokenizer: Any, max_prompt_len: int | None, max_response_len: int | None):
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward = reward
        self.reward_description = self.describe_reward(reward=reward)
        missing = sorted({row["game"] for row in rows} - set(rules))
        if missing:
            raise ValueError(f"no rules for game(s) {missing}; rules cover {sorted(rules)}")
        transitions = [row_to_transition(row, split, rules[row["game"]]) for row in rows]
        super().__init__(transitions, tokenizer, max_prompt_len, max_response_len)

    def format_prompt(self, transition: Transition) -> str:
        return game_prompt(transition)

    def format_target(self, transition: Transition) -> str:
        return game_target(transition)

    def unchanged_answer(self, index: int) -> str:
        """The "nothing changes" answer (no object modified or removed, the current score): the
        constant baseline, right on every unchanged transition and wrong on every changed one."""
        state = self.transition(index).state
        return _dumps(text_state.state_difference(state["objects"], state["objects"], state["score"]))

    def max_reward(self, index: int) -> float:
        if self.reward == "binary":
            return 1.0
        return text_state.max_task_reward(bool(self.transition(index).changed))

    def parse(self, index: int, text: str) -> text_state.RebuiltState:
        """The next state rebuilt from the predicted difference (raises `AnswerError` for an
        answer that is unparsable or incomplete, see `rlvr_envs.text_game.state`)."""
        diff = parse_json_object(text, required_keys=text_state.ANSWER_KEYS)
        return text_state.apply_difference(self.transition(index).meta["current_by_uuid"], diff)

    def score(self, index: int, prediction: text_state.RebuiltState) -> RewardResult:
        meta = self.transition(index).meta
        metrics = text_state.score_prediction(meta["current_flat"], meta["gold_flat"],
                                              prediction.flatten(known=meta["current_fields"]),
                                              meta["changed_fields"])
        reward = metrics["exact"] if self.reward == "binary" else metrics["task_reward"]
        return RewardResult(reward=reward, metrics=metrics, parsed=True, prediction=prediction.as_dict())

    def empty_prediction(self, index: int) -> dict[str, list]:
        return text_state.RebuiltState({}, {}).as_dict()


@dataclass(frozen=True)
class ByteSized32Config:
    """Arguments of `RLVRWorld/TextGame-v0` (pass them to `gym.make`)."""

    data_dir: str | None = None  #: data root; default $RLVR_WORLD_DATA or ~/.cache/rlvr_world
    split: str = "test"  #: file stem under <data_dir>/bytesized32/ (test, train, ...)
    reward: str = "binary"  #: "binary" or "task"
    tokenizer: Any = None  #: the world model's tokenizer (HF name/path/object); default embedded
    games: tuple[str, ...] | None = None  #: keep only these games
    limit: int | None = None  #: keep the first N transitions
    max_prompt_len: int | None = None  #: drop longer prompts
    max_response_len: int | None = None  #: response budget (default: longest gold + 25%)

    def __post_init__(self):
        object.__setattr__(self, "games", as_tuple(self.games))

    def validate(self) -> None:
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be positive, got {self.limit}")


class ByteSized32Task(TextGameTask):
    """ByteSized32-State-Prediction (Wang et al., 2024) from the public files."""

    Config = ByteSized32Config

    def __init__(self, config: ByteSized32Config):
        rows = bytesized32.load_rows(bytesized32.split_file(config.data_dir, config.split))
        if config.games is not None:
            unknown = sorted(set(config.games) - {row["game"] for row in rows})
            if unknown:
                raise ValueError(f"games {unknown} not in split {config.split!r}")
            rows = [row for row in rows if row["game"] in config.games]
        if config.limit is not None:
            rows = rows[: config.limit]
        super().__init__(rows, bytesized32.load_rules(config.data_dir), config.split, config.reward,
                         config.tokenizer, config.max_prompt_len, config.max_response_len)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        """(True, ...) only when the test split and the rules are loadable, not merely present
        (see `bytesized32.check_file`)."""
        root = bytesized32.data_root(data_dir)
        try:
            count = bytesized32.check_file(bytesized32.split_file(data_dir, "test"))
            bytesized32.load_rules(data_dir)
        except FileNotFoundError:
            return False, f"run `{bytesized32.get_command(root)}` (nothing usable in {root / 'bytesized32'})"
        except DataError as exc:
            return False, f"unusable data: {exc}; rerun `{bytesized32.get_command(root)}`"
        return True, f"data found ({count} test transitions)"


# -- MiniTextWorld: the embedded default of the language side ----------------------------
DEFAULT_SIZES = {"train": 2048, "test": 512}


@dataclass(frozen=True)
class MiniTextWorldTaskConfig:
    """Arguments of `RLVRWorld/MiniTextWorld-v0` (pass them to `gym.make`)."""

    split: str = "test"  #: "train" or "test": disjoint generator streams of the same seed
    size: int | None = None  #: how many transitions (default 2048 train, 512 test)
    seed: int = 0  #: generator seed; transitions are a pure function of (config, seed, split, index)
    difficulty: str = "easy"  #: "easy", "medium" or "hard" (distractors, extra properties, steps)
    games: tuple[str, ...] | None = None  #: keep only these games (default: all)
    reward: str = "binary"  #: "binary" or "task"
    tokenizer: Any = None  #: the world model's tokenizer (HF name/path/object); default embedded
    max_prompt_len: int | None = None  #: drop longer prompts
    max_response_len: int | None = None  #: response budget (default: longest gold + 25%)

    def __post_init__(self):
        object.__setattr__(self, "games", as_tuple(self.games))

    def validate(self) -> None:
        split_stream(self.seed, self.split)  # names the valid splits
        if self.difficulty not in simulator.DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {list(simulator.DIFFICULTIES)}, got {self.difficulty!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.size is not None:
            check_generated_size(self.size)
        self.generator_config().validate()

    def generator_config(self) -> simulator.MiniTextWorldConfig:
        preset = simulator.DIFFICULTIES[self.difficulty]
        return preset if self.games is None else dataclasses.replace(preset, games=self.games)


class MiniTextWorldTask(TextGameTask):
    """Text-game state prediction on generated MiniTextWorld transitions.

    Transition `i` is `generate_row(difficulty preset, split_stream(seed, split), i)`, so
    a task is reproducible from its config alone; rewards are `TextGameTask`'s.
    """

    Config = MiniTextWorldTaskConfig

    def __init__(self, config: MiniTextWorldTaskConfig):
        config.validate()
        self.config = config
        count = config.size or DEFAULT_SIZES[config.split]
        rows = simulator.generate_rows(config.generator_config(), split_stream(config.seed, config.split), count)
        super().__init__(rows, simulator.all_rules(), config.split, config.reward, config.tokenizer,
                         config.max_prompt_len, config.max_response_len)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        return True, "embedded"
