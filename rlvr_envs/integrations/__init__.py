"""Thin adapters from the suite's tasks to RL training libraries.

- `rlvr_envs.integrations.trl`: a TRL reward function and prompt dataset from any env id.
- `rlvr_envs.integrations.verl`: verl's `compute_score` and its dataset rows.
- `rlvr_envs.integrations.hf`: greedy generation and held-out accuracy (overall, changed,
  unchanged) of any Hugging Face causal LM on a text task; the trainers' evaluation.

SB3 needs no adapter: it runs on `gym.make(id, mode="token")` directly (`trainers/sb3_ppo.py`).
Not a domain: these modules may import every domain, and nothing in the package imports them.
"""

from __future__ import annotations

from typing import Any


def task_from_env_id(env_id: str, **env_kwargs: Any):
    """The `Task` behind `gym.make(env_id, **env_kwargs)`, without the env around it.

    `env_id` may carry gymnasium's module prefix (`rlvr_envs:RLVRWorld/...`); registry
    arguments are overridden by `env_kwargs` as in `gym.make`. Tasks are cached per config
    (`rlvr_envs.core.factory.build_task`), so a reward function and a prompt dataset built
    from the same arguments share one tokenized dataset.
    """
    from rlvr_envs.core.factory import build_task
    from rlvr_envs.registration import entry

    env_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("mode", "render_mode")}
    found = entry(env_id.split(":", 1)[-1])
    return build_task(found.task, **{**found.kwargs, **env_kwargs})
