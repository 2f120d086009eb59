"""Web-page state prediction: WMA/WebArena (`RLVRWorld/WebState-v0`) and MiniWeb (`RLVRWorld/MiniWeb-v0`).

The world model reads a web page's accessibility tree, the URL, the user's objective, the
previous and the current action, and predicts how the tree changes: the `New items:`,
`Deleted items:` and `Updated items:` of the next page (`None` for an empty section).
Gold answers come from the (tree, next tree) pair through `acctree.extract_changes`; the
reward is the F1 of exact-match item lines (`changes.score_changes`), as in RLVR-World,
where RL raised it from 49.94 to 65.11 on WMA, except that `None` (an empty section) is
not counted as a matching line, so the constant answer "nothing changes" earns nothing on
pages that change (`reward="reference"` restores their rule; `metrics["reference_f1"]`
always reports it).

Both ids share `WebChangeTask`; they differ only in where transitions come from (the WMA
files, or the MiniWeb generator) and in the default prompt (full instructions, or a
compact form for small models; `prompt="path/to/template.json"` loads RLVR-World's own).
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr_envs.core.task import TextTask, check_generated_size
from rlvr_envs.core.types import RewardResult, Transition
from rlvr_envs.core.util import as_tuple
from rlvr_envs.web import mini_web, wma
from rlvr_envs.web.acctree import extract_changes, parse_tree
from rlvr_envs.web.changes import SECTIONS, ChangeList, parse_changes, score_changes

#: the block every prompt ends with; its field labels are those of WMA/RLVR-World prompts,
#: which `rlvr_envs.web.wma.fields_from_prompt` reads back from the dataset's own prompts
TASK_BLOCK = """URL: {url}
 OBJECTIVE: {objective}
 PREVIOUS ACTION: {previous_action}
 CURRENT OBSERVATION: {observation}
 CURRENT ACTION: {current_action}
 """

#: our instructions (in our words) for large models: what is given, the action syntax and
#: the answer format
FULL_PROMPT = """You predict the next state of a web page. A web agent works toward the user's objective; you see the page's accessibility tree, its URL, the agent's previous action and the action it takes now, and you describe how the tree changes when that action is executed.

Actions are written as: click [id], type [id] [text] (Enter is pressed afterwards unless a trailing [0] is given), hover [id], press [keys], scroll [down|up], new_tab, tab_focus [index], close_tab, goto [url], go_back, go_forward, stop [answer].

Think about whether the action succeeds and what it changes, then answer with three sections, separated by an empty line:
New items:
Deleted items:
Updated items:
Under each title list one item per line in the tree's own form, [ID] role 'name' followed by its attributes as key: value (e.g. [1220] textbox 'Search' focused: True required: False); write None under a title with no items.

""" + TASK_BLOCK + "\nPredict the next state in that format."

#: the compact prompt for small models: one instruction line, then the same task block
COMPACT_PROMPT = (
    "Predict how the web page's accessibility tree changes after the current action. Answer with the sections "
    "'New items:', 'Deleted items:' and 'Updated items:', separated by an empty line, each listing one item per "
    "line as [ID] role 'name' key: value, or None.\n" + TASK_BLOCK)
PROMPTS = {"full": FULL_PROMPT, "compact": COMPACT_PROMPT}
PROMPT_FIELDS = ("url", "objective", "previous_action", "observation", "current_action")


@functools.lru_cache(maxsize=16)
def prompt_template(prompt: str) -> str:
    """The template for `prompt=`: "full", "compact", or a file holding another template.

    A file is either plain text or JSON with a "template" key (the layout of RLVR-World's
    prompt files, e.g. `prompts/wma/rlvr_world_model_prompt.json` of their repository, to
    reproduce their exact prompt); it must use the placeholders {url}, {objective},
    {previous_action}, {observation} and {current_action}.
    """
    if prompt in PROMPTS:
        return PROMPTS[prompt]
    path = Path(prompt).expanduser()
    if not path.is_file():
        raise ValueError(f"prompt must be one of {sorted(PROMPTS)} or a template file, got {prompt!r}")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            text = json.loads(text)["template"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ValueError(f"{path}: expected JSON with a 'template' string") from None
    missing = [name for name in PROMPT_FIELDS if "{" + name + "}" not in text]
    if missing:
        raise ValueError(f"{path}: the template lacks the placeholder(s) {missing}")
    return text


TARGETS = ("extracted", "dataset")
#: reward="items": F1 of item lines, `None` not an item (the default, see rlvr_envs.web.changes);
#: reward="reference": RLVR-World's F1, `None` an ordinary line (a constant all-None answer earns it)
REWARDS = {"items": "F1 of exact-match item lines over New/Deleted/Updated items",
           "reference": "RLVR-World's line F1 over New/Deleted/Updated items (None counted as a line)"}
METRIC_KEYS = ("f1", "precision", "recall", "matches", "predicted", "gold", "reference_f1",
               *(f"{s}_{m}" for s in SECTIONS for m in ("precision", "recall", "f1")))


def record_transition(record: wma.WmaRecord, target: str = "extracted") -> Transition:
    """A WMA-style record as a Transition whose `target` is the gold `ChangeList`.

    `target="extracted"` (default) derives the gold from the two trees with
    `extract_changes`; `"dataset"` uses the change lists the record carries (WMA's own
    targets, for comparing with published numbers).
    """
    changes = extract_changes(parse_tree(record.observation), parse_tree(record.next_state_acctree))
    if target == "extracted":
        gold = ChangeList.from_changes(changes)
    elif target == "dataset":
        if record.dataset_sections is None:
            raise ValueError(f"{record.uid}: target='dataset' needs the new_items/deleted_items/updated_items columns")
        gold = ChangeList.from_sections(record.dataset_sections)
    else:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    return Transition(
        uid=record.uid, state=record.observation, action=record.current_action, next_state=record.next_state_acctree,
        target=gold, split=record.split, changed=changes.changed,
        meta={"url": record.url, "objective": record.objective, "previous_action": record.previous_action})


def web_prompt(transition: Transition, style: str = "full") -> str:
    """q(s, a): the template named by `style` (see `prompt_template`), filled in."""
    meta = transition.meta
    template = PROMPTS.get(style) or prompt_template(style)
    return template.format(url=meta["url"], objective=meta["objective"],
                                 previous_action=meta["previous_action"], observation=transition.state,
                                 current_action=transition.action)


class WebChangeTask(TextTask):
    """Item-change prediction over web transitions (any source of `WmaRecord`s).

    Reward (`reward="items"`, the default): F1 in [0, 1] of exact-match canonical item
    lines pooled over the three sections (duplicated lines counted as a multiset; `None`
    marks an empty section and is not an item, so an unchanged page scores 1 exactly when
    no item is predicted). `reward="reference"` trains on RLVR-World's F1 instead, where
    `None` counts as a line (a constant all-None answer then earns 0.35 on MiniWeb); both
    are always in `metrics` (`f1`, `reference_f1`) with pooled precision/recall, counts,
    and precision/recall/F1 per section. A response with no section title scores 0 with an
    error. See `rlvr_envs.web.changes`.

    `max_total_len` drops transitions whose prompt plus gold answer exceed it, counted with
    this task's tokenizer; `n_filtered` says how many, and a warning names the count and
    the tokenizer (RLVR-World kept those of at most 5,000 tokens of *their* tokenizer).
    """

    modality = "web"
    min_reward = 0.0
    metric_keys = METRIC_KEYS
    reward_description = REWARDS["items"]

    @classmethod
    def describe_reward(cls, reward: str = "items", **kwargs: Any) -> str:
        return REWARDS.get(reward, REWARDS["items"])

    def __init__(self, records: Sequence[wma.WmaRecord], tokenizer: Any, prompt: str, target: str,
                 max_total_len: int | None, max_response_len: int | None, reward: str = "items"):
        prompt_template(prompt)  # fails early, naming the choices
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {reward!r}")
        self.reward = reward
        self.reward_description = REWARDS[reward]
        self.prompt_style = prompt
        transitions = [record_transition(r, target) for r in records]
        if not transitions:
            raise ValueError("no transitions to build the task from")
        super().__init__(transitions, tokenizer, None, max_response_len, max_total_len)
        if self.n_filtered:
            name = getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__
            warnings.warn(
                f"max_total_len={max_total_len} dropped {self.n_filtered} of {len(transitions)} transitions "
                f"(prompt + gold answer counted with the tokenizer {name!r}, vocabulary {self.vocab_size}); token "
                f"counts depend on the tokenizer: pass your model's tokenizer, a larger limit, or max_total_len=None",
                stacklevel=3)

    def format_prompt(self, transition: Transition) -> str:
        return web_prompt(transition, self.prompt_style)

    def format_target(self, transition: Transition) -> str:
        return transition.target.text()

    def parse(self, index: int, text: str) -> ChangeList:
        return parse_changes(text)

    def score(self, index: int, prediction: ChangeList) -> RewardResult:
        metrics = score_changes(prediction, self.transition(index).target)
        reward = metrics["f1"] if self.reward == "items" else metrics["reference_f1"]
        return RewardResult(reward=reward, metrics=metrics, parsed=True, prediction=prediction.as_dict())

    def empty_prediction(self, index: int) -> dict[str, list[str]]:
        return ChangeList(new=(), deleted=(), updated=()).as_dict()


@dataclass(frozen=True)
class WebStateConfig:
    """Arguments of `RLVRWorld/WebState-v0` (pass them to `gym.make`)."""

    data_dir: str | None = None  #: data root; default $RLVR_WORLD_DATA or ~/.cache/rlvr_world
    split: str = "test"  #: "train", "test" (the 99/1 split, see rlvr_envs.web.wma) or "all"
    tokenizer: Any = "miniweb"  #: the world model's tokenizer (HF name/path/object); default the embedded web BPE
    prompt: str = "full"  #: "full", "compact" or a template file (e.g. RLVR-World's prompt JSON)
    target: str = "extracted"  #: gold from the trees ("extracted") or the files' change lists ("dataset")
    reward: str = "items"  #: "items" (item F1, None not an item) or "reference" (RLVR-World's line F1)
    #: drop transitions whose prompt + gold answer is longer, in tokens of `tokenizer`
    #: (RLVR-World kept <= 5,000 tokens of their model's tokenizer; the embedded web BPE
    #: counts about 3x more tokens for WebArena trees, so no limit by default)
    max_total_len: int | None = None
    max_response_len: int | None = None  #: response budget (default: longest gold + 25%)
    limit: int | None = None  #: keep the first N records of the split (before the length filter)
    on_corrupt: str = "raise"  #: "raise" at a bad row (named by file and row) or "skip" it

    def validate(self) -> None:
        if self.split not in ("train", "test", "all"):
            raise ValueError(f"split must be 'train', 'test' or 'all', got {self.split!r}")
        prompt_template(self.prompt)
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        if self.on_corrupt not in ("raise", "skip"):
            raise ValueError(f"on_corrupt must be 'raise' or 'skip', got {self.on_corrupt!r}")
        for name in ("max_total_len", "max_response_len", "limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive, got {value}")


class WebStateTask(WebChangeTask):
    """
    ## Description
    Web-page state prediction on WMA's WebArena transitions, RLVR-World's web domain: from
    the accessibility tree, URL, objective, previous and current action, predict the
    `New items:` / `Deleted items:` / `Updated items:` of the next page. Needs the WMA files
    (`rlvr-world data wma`; see `rlvr_envs.web.wma`).

    ## Reward
    Item-change F1 in [0, 1] (max 1.0 for every transition; unparsable answers 0; `None`
    is not an item, so an unchanged page scores 1 exactly when no item is predicted).
    `reward="reference"` uses RLVR-World's F1 (`None` counted as a line) instead.

    ## Arguments
    ```python
    import gymnasium as gym
    env = gym.make("RLVRWorld/WebState-v0", data_dir="~/data", split="test", tokenizer="Qwen/Qwen2.5-1.5B")
    ```
    See `WebStateConfig`.

    ## Version History
    * v0: initial release.
    """

    Config = WebStateConfig

    def __init__(self, config: WebStateConfig):
        records = wma.load_records(config.data_dir, config.split, config.on_corrupt)
        if not records:
            raise ValueError(f"no WMA records in split {config.split!r} under {wma.folder(config.data_dir)}")
        if config.limit is not None:
            records = records[: config.limit]
        super().__init__(records, config.tokenizer, config.prompt, config.target, config.max_total_len,
                         config.max_response_len, config.reward)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        """Whether a loadable WMA file is under the data root (`rlvr_envs.web.wma.availability`)."""
        return wma.availability(data_dir)


@dataclass(frozen=True)
class MiniWebTaskConfig:
    """Arguments of `RLVRWorld/MiniWeb-v0` (pass them to `gym.make`)."""

    seed: int = 0  #: generator seed; transitions are a pure function of (config, seed, index)
    split: str = "test"  #: "train" or "test": disjoint generator streams of the same seed
    size: int = 256  #: number of transitions
    tokenizer: Any = "miniweb"  #: the world model's tokenizer (HF name/path/object); default the embedded web BPE
    prompt: str = "compact"  #: "compact" (short, for small models), "full" or a template file
    reward: str = "items"  #: "items" (item F1, None not an item) or "reference" (RLVR-World's line F1)
    sites: tuple[str, ...] = mini_web.SITES  #: site kinds: shop, forum, admin
    list_items: int = 3  #: list entries visible at once
    list_extra: int = 3  #: up to this many more below the viewport
    history: int = 2  #: at most this many earlier actions before the predicted one
    max_total_len: int | None = None  #: drop transitions whose prompt + gold answer is longer
    max_response_len: int | None = None  #: response budget (default: longest gold + 25%)

    def __post_init__(self):
        object.__setattr__(self, "sites", as_tuple(self.sites))

    def generator_config(self) -> mini_web.MiniWebConfig:
        return mini_web.MiniWebConfig(sites=self.sites, list_items=self.list_items, list_extra=self.list_extra,
                                      history=self.history, site_seed=self.seed)

    def validate(self) -> None:
        if self.split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {self.split!r}")
        check_generated_size(self.size)
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        prompt_template(self.prompt)
        for name in ("max_total_len", "max_response_len"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        self.generator_config().validate()


def miniweb_records(config: MiniWebTaskConfig) -> list[wma.WmaRecord]:
    """The `config.size` MiniWeb transitions of a task, as WMA records."""
    generator = config.generator_config()
    stream = 2 * config.seed + (config.split == "test")  # train and test never share a stream
    records = []
    for index in range(config.size):
        row = mini_web.generate(generator, stream, index)
        records.append(wma.WmaRecord(
            uid=f"miniweb/{config.split}/{config.seed}/{index}", url=row["url"], objective=row["objective"],
            previous_actions=tuple(row["previous_actions"]), current_action=row["current_action"],
            observation=row["observation"], next_state_acctree=row["next_state_acctree"], split=config.split))
    return records


class MiniWebTask(WebChangeTask):
    """
    ## Description
    The web-state task on MiniWeb, a procedural website shipped with the package
    (`rlvr_envs.web.mini_web`): one site per `seed` (a catalog, forums, customers; the train
    and test splits visit the same site in different sessions), shop, forum and admin pages
    in WebArena's tree format rendered from it; clicks, typing, hovering, scrolling and going
    back, with their effects, by rules a model can learn. Gold answers
    come from the same change extraction as `RLVRWorld/WebState-v0`. Trees are ~10-40
    lines; with the embedded web tokenizer (`python -m trainers.miniweb_tokenizer`) the
    compact prompt is ~250 tokens and the answer ~85, small enough for a CPU. No download.

    ## Reward
    Item-change F1 in [0, 1], exactly as WebState-v0.

    ## Arguments
    ```python
    import gymnasium as gym
    env = gym.make("RLVRWorld/MiniWeb-v0", split="train", size=5000, seed=0)
    ```
    See `MiniWebTaskConfig`.

    ## Version History
    * v0: initial release.
    """

    Config = MiniWebTaskConfig

    def __init__(self, config: MiniWebTaskConfig):
        super().__init__(miniweb_records(config), config.tokenizer, config.prompt, "extracted",
                         config.max_total_len, config.max_response_len, config.reward)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        return True, "embedded"
