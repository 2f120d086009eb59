"""A natively batched vector env: one task, N episodes, one `verify` call per step.

Per-env verification wastes the hardware (one LPIPS forward per frame instead of one for
the batch), so `gym.make_vec(id, num_envs=N)` builds this class through the registry's
`vector_entry_point`. It is also the GRPO group: `reset(options={"index": i})` puts all N
copies on transition i.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rlvr_envs.core.actions import action_batch, integer_array, reset_options, token_from_action
from rlvr_envs.core.episode import (Episode, action_space, batch_observation, check_mode, observation_space,
                                    verify_episodes)
from rlvr_envs.core.task import Task


#: info values kept whole (one object per env) instead of being split into arrays
OPAQUE_INFO_KEYS = ("prediction",)


def batch_infos(per_env: dict[int, dict[str, Any]], num_envs: int) -> dict[str, Any]:
    """Gymnasium's vector-info layout (an array per key plus a `_key` mask), built key by
    key in one pass instead of env by env (`VectorEnv._add_info` is the slow path)."""
    out: dict[str, Any] = {}
    keys = dict.fromkeys(key for info in per_env.values() for key in info)
    for key in keys:
        present = {i: info[key] for i, info in per_env.items() if key in info}
        mask = np.zeros(num_envs, dtype=bool)
        mask[list(present)] = True
        values = list(present.values())
        if key not in OPAQUE_INFO_KEYS and all(isinstance(v, dict) for v in values):
            out[key] = batch_infos(present, num_envs)
        else:
            if all(isinstance(v, (bool, np.bool_)) for v in values):
                array = np.zeros(num_envs, dtype=bool)
            elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
                array = np.zeros(num_envs, dtype=np.int64)
            elif all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
                array = np.zeros(num_envs, dtype=np.float64)
            else:
                array = np.full(num_envs, None, dtype=object)
            for i, value in present.items():
                array[i] = value
            out[key] = array
        out[f"_{key}"] = mask
    return out


class BatchedNextStatePredictionVectorEnv(VectorEnv):
    """N `NextStatePredictionEnv` episodes over one shared task, verified as a batch.

    Same spaces, rewards and `info` keys as the single env (batched the gymnasium way:
    arrays plus `_key` masks). Autoreset is `SAME_STEP`: a step that ends an episode returns
    its reward, puts the finished episode's observation and info in
    `info["final_obs"]` / `info["final_info"]`, and the returned observation already
    belongs to the next episode (a random transition from `np_random`).

    `reset(options={"index": i})` resets every env onto transition i (a GRPO group);
    `options={"index": array_of_N}` gives each env its own transition.
    """

    metadata = {"render_modes": ["ansi"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, task: Task, num_envs: int = 1, mode: str = "sequence", render_mode: str | None = None):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.task = task
        self.mode = check_mode(mode)
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.single_observation_space = observation_space(task)
        self.single_action_space = action_space(task, mode)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._episodes: list[Episode] = []

    def _batch_obs(self) -> dict[str, np.ndarray]:
        return batch_observation(self.task, self._episodes)

    # -- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = reset_options(options, ("index",)).get("index")
        if index is None:
            indices = self.np_random.integers(len(self.task), size=self.num_envs)
        elif np.ndim(index) == 0:
            indices = np.full(self.num_envs, int(index))
        else:
            indices = np.asarray(index, dtype=np.int64).reshape(-1)
            if indices.shape != (self.num_envs,):
                raise ValueError(f"options['index'] must be an int or {self.num_envs} ints, got shape {indices.shape}")
        self._episodes = [Episode(self.task, int(i)) for i in indices]
        return self._batch_obs(), batch_infos({i: e.info() for i, e in enumerate(self._episodes)}, self.num_envs)

    def step(self, actions):
        if not self._episodes:
            raise RuntimeError("step() called before reset()")
        actions = action_batch(actions, self.num_envs)
        # validate every action before any episode moves, so a bad one leaves the batch intact
        if self.mode == "sequence":
            actions = [integer_array(a, "a sequence-mode action", self.task.max_response_len) for a in actions]
            for episode, action in zip(self._episodes, actions):
                episode.set_response(action)
        else:
            for episode, token in zip(self._episodes, [token_from_action(a) for a in actions]):
                episode.push(token)
        done = np.array([e.done for e in self._episodes], dtype=bool)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        infos: dict[str, Any] = {}
        finished = np.flatnonzero(done).tolist()
        if finished:
            results = verify_episodes(self.task, [self._episodes[i] for i in finished])
            last = self._batch_obs()
            final_infos, final_obs = {}, np.full(self.num_envs, None, dtype=object)
            for i, result in zip(finished, results):
                rewards[i] = result.reward
                final_infos[i] = self._episodes[i].info(result)
                final_obs[i] = {key: value[i] for key, value in last.items()}
            infos = {"final_info": batch_infos(final_infos, self.num_envs), "_final_info": done.copy(),
                     "final_obs": final_obs, "_final_obs": done.copy()}
            for i, index in zip(finished, self.np_random.integers(len(self.task), size=len(finished))):
                self._episodes[i] = Episode(self.task, int(index))
            infos.update(batch_infos({i: self._episodes[i].info() for i in finished}, self.num_envs))
        return self._batch_obs(), rewards, done, np.zeros(self.num_envs, dtype=bool), infos

    def render(self):
        if self.render_mode == "ansi":
            return "\n\n".join(self.task.render_text(e.index, e.response) for e in self._episodes)
        return None
