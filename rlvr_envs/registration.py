"""Every environment id of the suite, in one table, registered with gymnasium.

`gym.make("RLVRWorld/...")` works without importing this package first: the install adds
a startup hook (`rlvr_world_gym.pth`, see `rlvr_envs/_gym_hook.py`) that registers these
ids as soon as gymnasium is imported; the `gymnasium.envs` entry point does the same for
gymnasium versions that load plugins.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

NAMESPACE = "RLVRWorld"
ENTRY_POINT = "rlvr_envs.core.factory:make_env"
VECTOR_ENTRY_POINT = "rlvr_envs.core.factory:make_vector_env"


@dataclass(frozen=True)
class EnvEntry:
    """One registered id: which task class builds it, with which fixed arguments."""

    id: str
    task: str  # "module:Class" of a rlvr_envs.core.task.Task with a `Config` dataclass
    modality: str
    reward: str
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def task_class(self):
        module, _, name = self.task.partition(":")
        return getattr(importlib.import_module(module), name)

    def availability(self, **kwargs: Any) -> tuple[bool, str]:
        """(available here?, what to get if not), without building the task."""
        check = getattr(self.task_class(), "availability", None)
        return check(kwargs.get("data_dir")) if check else (True, "embedded")


ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("RLVRWorld/TextGame-v0", "rlvr_envs.tasks.text_game:ByteSized32Task", "text",
             "binary: rebuilt next state matches exactly", "ByteSized32 text-game state prediction",
             {"reward": "binary"}),
    EnvEntry("RLVRWorld/TextGame-TaskReward-v0", "rlvr_envs.tasks.text_game:ByteSized32Task", "text",
             "0.1*acc_all + 1.0*acc_changed + 0.2*exact", "ByteSized32, task-specific reward",
             {"reward": "task"}),
    EnvEntry("RLVRWorld/MiniTextWorld-v0", "rlvr_envs.tasks.mini_text_world:MiniTextWorldTask", "text",
             "binary: rebuilt next state matches exactly", "procedural ByteSized32-style text games (embedded)",
             {"reward": "binary"}),
    EnvEntry("RLVRWorld/MiniTextWorld-TaskReward-v0", "rlvr_envs.tasks.mini_text_world:MiniTextWorldTask", "text",
             "0.1*acc_all + 1.0*acc_changed + 0.2*exact", "MiniTextWorld, task-specific reward",
             {"reward": "task"}),
    EnvEntry("RLVRWorld/WebState-v0", "rlvr_envs.tasks.web_state:WebStateTask", "web",
             "F1 of exact-match changed item lines", "WMA/WebArena web-page state prediction"),
    EnvEntry("RLVRWorld/MiniWeb-v0", "rlvr_envs.tasks.web_state:MiniWebTask", "web",
             "F1 of exact-match changed item lines", "procedural WebArena-style pages (embedded)"),
)


def register_envs() -> None:
    """Register every id (idempotent)."""
    import gymnasium as gym

    for entry in ENVS:
        if entry.id not in gym.registry:
            gym.register(entry.id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT,
                         kwargs={"task": entry.task, **entry.kwargs})


def entry(env_id: str) -> EnvEntry:
    for candidate in ENVS:
        if candidate.id == env_id:
            return candidate
    raise KeyError(f"unknown id {env_id!r}; registered: {[e.id for e in ENVS]}")


def markdown_table() -> str:
    """The env table of README.md (generated, never typed: `rlvr-world list --markdown`)."""
    lines = ["| id | modality | reward | what |", "|---|---|---|---|"]
    lines += [f"| `{e.id}` | {e.modality} | {e.reward} | {e.description} |" for e in ENVS]
    return "\n".join(lines)
