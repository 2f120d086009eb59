"""Build tasks and envs from a registry entry: the `entry_point`s that `gym.make` calls."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from rlvr_envs.core.extras import needs_extra
from rlvr_envs.core.task import Task
from rlvr_envs.core.util import import_string


def build_task(task: str | type[Task], env_id: str | None = None, **kwargs: Any) -> Task:
    """Instantiate `task` ("module:Class" or the class) from its `Config` dataclass (`task_config`)."""
    cls, config = task_config(task, env_id, **kwargs)
    try:
        hash(config)
    except TypeError:  # holds an unhashable object (e.g. a tokenizer instance): no caching
        return cls(config)
    return _cached_task(cls, config)


def task_config(task: str | type[Task], env_id: str | None = None, **kwargs: Any) -> tuple[type[Task], Any]:
    """The task class and its validated `Config`, without loading any data: a trainer checks its
    env kwargs with it before any work.

    Unknown keyword arguments fail here, naming the allowed ones, so a typo in
    `gym.make(..., data_dri=...)` is caught at once instead of being silently ignored.
    `env_id` is the id the user asked for: a missing extra names it, not the internal class.
    """
    if isinstance(task, str):
        domain = task.split(".")[1] if task.startswith("rlvr_envs.") else task
        with needs_extra(env_id or f"{task} (the {domain} ids)"):
            try:
                cls = import_string(task)
            except AttributeError:
                raise TypeError(f"task {task!r} names nothing in its module") from None
    else:
        cls = task
    if not (isinstance(cls, type) and issubclass(cls, Task)):  # checked before it is called
        raise TypeError(f"task {task!r} is not a Task class")
    config_cls = cls.Config
    allowed = [f.name for f in dataclasses.fields(config_cls)]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        import difflib

        from rlvr_envs.core.errors import UnknownArgumentError

        near = [match for key in unknown for match in difflib.get_close_matches(key, [*allowed, "mode"], n=1)]
        hint = f" (did you mean {', '.join(f'{k}=' for k in near)}?)" if near else ""
        raise UnknownArgumentError(f"{env_id or cls.__name__} got unknown argument(s) {unknown}{hint}; allowed: "
                                   f"{allowed} (and mode, render_mode)")
    config = config_cls(**kwargs)
    config.validate()
    return cls, config


@functools.lru_cache(maxsize=8)
def _cached_task(cls: type[Task], config: Any) -> Task:
    # Tasks are immutable after construction, so the G copies of a GRPO group (or a
    # SyncVectorEnv's sub-envs) can share one tokenized dataset.
    return cls(config)


def make_env(task: str | type[Task], mode: str = "sequence", render_mode: str | None = None,
             env_id: str | None = None, **kwargs: Any):
    """`gym.make` entry point: one `NextStatePredictionEnv` over a freshly built task (the
    registry passes `env_id`, which gymnasium does not, so errors can name the id)."""
    from rlvr_envs.core.env import NextStatePredictionEnv

    return NextStatePredictionEnv(build_task(task, env_id, **kwargs), mode=mode, render_mode=render_mode)


def make_vector_env(task: str | type[Task], num_envs: int = 1, mode: str = "sequence",
                    render_mode: str | None = None, env_id: str | None = None, **kwargs: Any):
    """`gym.make_vec` entry point: the natively batched vector env over one shared task."""
    from rlvr_envs.core.vector import BatchedNextStatePredictionVectorEnv

    return BatchedNextStatePredictionVectorEnv(build_task(task, env_id, **kwargs), num_envs=num_envs, mode=mode,
                                               render_mode=render_mode)
