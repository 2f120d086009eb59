"""Every environment id of the suite, in one table, registered with gymnasium.

`import rlvr_envs` calls `register_envs()`; `gym.make("rlvr_envs:RLVRWorld/...")` imports
the package for you (gymnasium 1.x's convention: no plugins, no import hooks).
"""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_envs.core.extras import MissingExtraError, needs_extra
from rlvr_envs.core.paths import ASSETS
from rlvr_envs.core.util import import_string

NAMESPACE = "RLVRWorld"
ENTRY_POINT = "rlvr_envs.core.factory:make_env"
VECTOR_ENTRY_POINT = "rlvr_envs.core.factory:make_vector_env"


@dataclass(frozen=True)
class EnvEntry:
    """One registered id: which task class builds it, with which fixed arguments.

    The task class is the one home of what the env is (`modality`, `describe_reward`);
    the entry adds only the id, the fixed arguments and a one-line description.
    """

    id: str
    task: str  # "module:Class" of a rlvr_envs.core.task.Task with a `Config` dataclass
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def task_class(self):
        """The task class; `MissingExtraError` (naming the extra) when its domain's packages are absent."""
        with needs_extra(self.id):
            return import_string(self.task)

    @property
    def modality(self) -> str:
        return self.task_class().modality

    @property
    def reward(self) -> str:
        return self.task_class().describe_reward(**self.kwargs)

    def availability(self, **kwargs: Any) -> tuple[bool, str]:
        """(available here?, what to get if not), without building the task."""
        try:
            check = getattr(self.task_class(), "availability", None)
        except MissingExtraError as exc:
            return False, str(exc)
        if check is None:
            return True, "embedded"
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(check).parameters.values()):
            return check(**{**self.kwargs, **kwargs})  # tasks that tell their ids apart by fixed arguments
        return check(kwargs.get("data_dir"))


TEXT_GAME = "rlvr_envs.text_game.task"
#: the shipped PushT compressed tokenizer (kept here as a path so registering imports no torch)
VIDEO_ASSETS = ASSETS / "video"
PUSHT_COMPRESSED_TOKENIZER = str(VIDEO_ASSETS / "pusht_compressed_tokenizer")
ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("RLVRWorld/TextGame-v0", f"{TEXT_GAME}:ByteSized32Task",
             "ByteSized32 text-game state prediction", {"reward": "binary"}),
    EnvEntry("RLVRWorld/TextGame-TaskReward-v0", f"{TEXT_GAME}:ByteSized32Task",
             "ByteSized32, task-specific reward", {"reward": "task"}),
    EnvEntry("RLVRWorld/MiniTextWorld-v0", f"{TEXT_GAME}:MiniTextWorldTask",
             "procedural ByteSized32-style text games (embedded)", {"reward": "binary"}),
    EnvEntry("RLVRWorld/MiniTextWorld-TaskReward-v0", f"{TEXT_GAME}:MiniTextWorldTask",
             "MiniTextWorld, task-specific reward", {"reward": "task"}),
    EnvEntry("RLVRWorld/WebState-v0", "rlvr_envs.web.task:WebStateTask", "WMA/WebArena web-page state prediction"),
    EnvEntry("RLVRWorld/MiniWeb-v0", "rlvr_envs.web.task:MiniWebTask", "procedural WebArena-style pages (embedded)"),
    EnvEntry("RLVRWorld/PushT-SingleStep-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "PushT: 3 frames + actions -> next frame (embedded tokenizer, model, held-out set)", {"layout": "single"}),
    EnvEntry("RLVRWorld/PushT-MultiStep-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "PushT: 1 frame + 4 given actions -> 4 frames (embedded tokenizer, model, held-out set)",
             {"layout": "multi"}),
    EnvEntry("RLVRWorld/PushT-MultiStep-Compressed-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "PushT: 1 frame + 4 given actions -> 4 frames, compressed tokenizer (64 context + 16 codes per frame; embedded "
             "tokenizer and held-out set; no world model ships for it yet)",
             {"layout": "multi", "tokenizer": PUSHT_COMPRESSED_TOKENIZER}),
    EnvEntry("RLVRWorld/RT1-SingleStep-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "RT-1 (fractal20220817_data): 4 frames + actions -> next frame (needs data_dir=, tokenizer=)",
             {"dataset": "rt1", "layout": "single"}),
    EnvEntry("RLVRWorld/RT1-MultiStep-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "RT-1: 1 frame + 7 given actions -> 7 frames (needs data_dir=, tokenizer=)",
             {"dataset": "rt1", "layout": "multi"}),
    EnvEntry("RLVRWorld/Rope-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "DINO-WM Rope (FleX): 1 frame + action -> next frame (needs data_dir=, tokenizer=)",
             {"dataset": "rope", "layout": "single"}),
    EnvEntry("RLVRWorld/Granular-v0", "rlvr_envs.video.task:VideoPredictionTask",
             "DINO-WM Granular (FleX): 1 frame + action -> next frame (needs data_dir=, tokenizer=)",
             {"dataset": "granular", "layout": "single"}),
)


@dataclass(frozen=True)
class PlainEnv:
    """A plain gymnasium env (not a next-state-prediction task): a learned simulator or an agent env."""

    entry_point: str
    modality: str  #: the README table's column
    reward: str
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    default_model: str | None = None  #: the model a learned simulator loads when `model=` is not given
    requires: tuple[str, ...] = ()  #: modules it imports only once built (an extra's packages)

    def availability(self, **_: Any) -> tuple[bool, str]:
        """(available here?, what to get if not): its packages importable and its model shipped."""
        try:
            with needs_extra(self.entry_point.split(":")[0]):
                for module in self.requires:
                    if importlib.util.find_spec(module) is None:
                        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
                cls = import_string(self.entry_point)
        except MissingExtraError as exc:
            return False, str(exc)
        check = getattr(cls, "availability", None)
        if check is not None:
            return check(**self.kwargs)
        model = self.kwargs.get("model", self.default_model)
        if model is not None and not (Path(model) / "config.json").is_file():
            return False, f"the world model {model} is missing (shipped in the package: reinstall rlvr-world)"
        return True, "embedded"


LEARNED_SIM = "rlvr_envs.simulators.learned:LearnedPushTSim"
JUDGED = "success judged from the predicted frame"
TORCH = ("torch",)  #: learned simulators run a world model
#: plain envs by id: learned simulators (a world model wrapped as the original task's env)
#: and agent envs whose dynamics a world model can be asked to predict
SIMULATORS: dict[str, PlainEnv] = {
    "RLVRWorld/PushT-LearnedSim-v0": PlainEnv(
        LEARNED_SIM, "learned simulator", JUDGED,
        "PushT simulated by the shipped MLE single-step world model (action: a chunk of 5 targets; `model=` for "
        "another)", default_model=str(VIDEO_ASSETS / "pusht_single_step_model"), requires=TORCH),
    "RLVRWorld/PushT-LearnedSim-RLVR-v0": PlainEnv(
        LEARNED_SIM, "learned simulator", JUDGED,
        "PushT simulated by the shipped GRPO-post-trained single-step world model",
        {"model": str(VIDEO_ASSETS / "pusht_single_step_rlvr_model")}, requires=TORCH),
    "RLVRWorld/PushT-LearnedSim-MLE12k-v0": PlainEnv(
        LEARNED_SIM, "learned simulator", JUDGED,
        "PushT simulated by the shipped single-step model after 12k more MLE steps (the planning tables' base)",
        {"model": str(VIDEO_ASSETS / "pusht_single_step_mle12k_model")}, requires=TORCH),
    "RLVRWorld/PushT-LearnedSim-RolloutRLVR-v0": PlainEnv(
        LEARNED_SIM, "learned simulator", JUDGED,
        "PushT simulated by the MLE12k model after two rounds of GRPO on its own rollouts (the real simulator "
        "as verifier)",
        {"model": str(VIDEO_ASSETS / "pusht_single_step_rollout_rlvr_model")}, requires=TORCH),
    "RLVRWorld/MiniWeb-Goal-v0": PlainEnv(
        "rlvr_envs.web.goals:MiniWebGoalEnv", "web agent", "1 when the goal holds on the true site state",
        "MiniWeb goal tasks for web agents (action: a WebArena action string from the page's affordances)"),
}


def register_envs() -> None:
    """Register every id (idempotent)."""
    import gymnasium as gym

    # gymnasium 1.x's passive checker marks its first reset checked before it runs, so a first
    # reset that is refused (bad options) leaves it broken: the next valid reset's first step
    # fails inside the checker. Every id passes `check_env` in the tests; the checker stays
    # available with gym.make(..., disable_env_checker=False).
    for entry in ENVS:
        if entry.id not in gym.registry:
            gym.register(entry.id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT,
                         kwargs={"task": entry.task, "env_id": entry.id, **entry.kwargs}, disable_env_checker=True)
    for env_id, plain in SIMULATORS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=plain.entry_point, kwargs=dict(plain.kwargs), disable_env_checker=True)


def entry(env_id: str) -> EnvEntry:
    for candidate in ENVS:
        if candidate.id == env_id:
            return candidate
    raise KeyError(f"unknown id {env_id!r}; registered: {[e.id for e in ENVS]}")


def prediction_entry(env_id: str) -> EnvEntry:
    """The entry of a next-state prediction id, what world models train on (gymnasium's module
    prefix allowed); a one-line ValueError naming those ids for an unknown id or a plain env."""
    name = env_id.split(":", 1)[-1]
    try:
        return entry(name)
    except KeyError:
        what = f"a {SIMULATORS[name].modality}, not a next-state prediction id" if name in SIMULATORS else "unknown"
        raise ValueError(f"--env-id {env_id!r} is {what}; world models train on {', '.join(e.id for e in ENVS)}") \
            from None


def check_env_kwargs(env_id: str, **env_kwargs: Any) -> None:
    """`env_id`'s task arguments with `env_kwargs` validated, no data loaded (a trainer's check
    before any work: a bad value is its one-line argument error, not a traceback mid-run)."""
    from rlvr_envs.core.factory import task_config

    found = prediction_entry(env_id)
    task_config(found.task, found.id, **{**found.kwargs, **env_kwargs})


def task_from_env_id(env_id: str, **env_kwargs: Any):
    """The `Task` behind `gym.make(env_id, **env_kwargs)`, without the env around it.

    `env_id` may carry gymnasium's module prefix (`rlvr_envs:RLVRWorld/...`); registry
    arguments are overridden by `env_kwargs` as in `gym.make`. Tasks are cached per config
    (`rlvr_envs.core.factory.build_task`), so a reward function and a prompt dataset built
    from the same arguments share one tokenized dataset.
    """
    from rlvr_envs.core.factory import build_task

    env_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("mode", "render_mode")}
    found = entry(env_id.split(":", 1)[-1])
    return build_task(found.task, found.id, **{**found.kwargs, **env_kwargs})


def all_ids() -> list[str]:
    """Every registered id: the task envs, then the plain envs (learned simulators, agent envs)."""
    return [e.id for e in ENVS] + list(SIMULATORS)


def availability(env_id: str, **kwargs: Any) -> tuple[bool, str]:
    """(can `gym.make(env_id, **kwargs)` work here?, what is missing and how to get it)."""
    return SIMULATORS[env_id].availability(**kwargs) if env_id in SIMULATORS else entry(env_id).availability(**kwargs)


def markdown_table() -> str:
    """The env table of README.md (generated, never typed: `rlvr-world list --markdown`)."""
    lines = ["| id | modality | reward | what |", "|---|---|---|---|"]
    lines += [f"| `{e.id}` | {e.modality} | {e.reward} | {e.description} |" for e in ENVS]
    lines += [f"| `{env_id}` | {plain.modality} | {plain.reward} | {plain.description} |"
              for env_id, plain in SIMULATORS.items()]
    return "\n".join(lines)
