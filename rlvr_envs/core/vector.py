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

from rlvr_envs.core.env import MODES, action_space, observation_space, response_from_action, result_info
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
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.task = task
        self.mode = mode
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.single_observation_space = observation_space(task)
        self.single_action_space = action_space(task, mode)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._indices = np.zeros(self.num_envs, dtype=np.int64)
        self._responses: list[list[int]] = [[] for _ in range(self.num_envs)]

    # -- helpers -----------------------------------------------------------------------
    def _batch_obs(self) -> dict[str, np.ndarray]:
        """The batched observation, built array by array (not env by env: this is hot)."""
        task = self.task
        prompts = np.empty((self.num_envs, task.max_prompt_len), dtype=np.int64)
        prompt_lens = np.empty((self.num_envs, 1), dtype=np.int64)
        for row, index in enumerate(self._indices.tolist()):  # row assignment: cheaper than np.stack
            prompts[row], prompt_lens[row] = task.padded_prompt(index)
        width = task.max_response_len
        responses = np.full((self.num_envs, width), task.pad_token_id, dtype=np.int64)
        lengths = np.zeros((self.num_envs, 1), dtype=np.int64)
        for row, response in enumerate(self._responses):
            n = lengths[row, 0] = min(len(response), width)
            responses[row, :n] = response[:n]
        if responses.view(np.uint64).max() >= task.vocab_size:  # out-of-vocabulary ids: clip the view
            np.clip(responses, 0, task.vocab_size - 1, out=responses)
        return {"prompt": prompts, "prompt_len": prompt_lens, "response": responses, "response_len": lengths}

    def _start(self, envs: np.ndarray, indices: np.ndarray) -> None:
        for i, index in zip(envs, indices):
            if not 0 <= int(index) < len(self.task):
                raise IndexError(f"index {int(index)} outside the task's {len(self.task)} transitions")
            self._indices[i] = int(index)
            self._responses[i] = [int(t) for t in self.task.forced_tokens(int(index), [])]

    def _reset_infos(self, envs) -> dict[int, dict[str, Any]]:
        return {int(i): {"index": int(self._indices[i]), "transition_id": self.task.transition(int(self._indices[i])).uid}
                for i in envs}

    # -- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = (options or {}).get("index")
        if index is None:
            indices = self.np_random.integers(len(self.task), size=self.num_envs)
        elif np.ndim(index) == 0:
            indices = np.full(self.num_envs, int(index))
        else:
            indices = np.asarray(index, dtype=np.int64).reshape(-1)
            if indices.shape != (self.num_envs,):
                raise ValueError(f"options['index'] must be an int or {self.num_envs} ints, got shape {indices.shape}")
        self._start(np.arange(self.num_envs), indices)
        return self._batch_obs(), batch_infos(self._reset_infos(range(self.num_envs)), self.num_envs)

    def step(self, actions):
        task = self.task
        done = np.zeros(self.num_envs, dtype=bool)
        if self.mode == "sequence":
            if len(actions) != self.num_envs:
                raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
            self._responses = [response_from_action(task, a) for a in actions]
            done[:] = True
        else:
            tokens = np.asarray(actions).reshape(-1)
            if tokens.shape != (self.num_envs,):
                raise ValueError(f"expected {self.num_envs} tokens, got shape {tokens.shape}")
            for i, token in enumerate(tokens.tolist()):
                if token == task.eos_token_id:
                    done[i] = True
                    continue
                response = self._responses[i]
                response.append(int(token))
                response.extend(int(t) for t in task.forced_tokens(int(self._indices[i]), response))
                if len(response) >= task.max_response_len or task.is_complete(int(self._indices[i]), response):
                    del response[task.max_response_len:]
                    done[i] = True

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        infos: dict[str, Any] = {}
        finished = np.flatnonzero(done)
        if finished.size:
            results = task.verify(self._indices[finished].tolist(), [self._responses[i] for i in finished])
            final_infos, final_obs = {}, np.full(self.num_envs, None, dtype=object)
            last = self._batch_obs()
            for i, result in zip(finished.tolist(), results):
                rewards[i] = result.reward
                final_infos[i] = result_info(task, int(self._indices[i]), result, self._responses[i])
                final_obs[i] = {key: value[i] for key, value in last.items()}
            infos = {"final_info": batch_infos(final_infos, self.num_envs), "_final_info": done.copy(),
                     "final_obs": final_obs, "_final_obs": done.copy()}
            self._start(finished, self.np_random.integers(len(task), size=finished.size))
            infos.update(batch_infos(self._reset_infos(finished), self.num_envs))
        return self._batch_obs(), rewards, done.copy(), np.zeros(self.num_envs, dtype=bool), infos

    def render(self):
        if self.render_mode == "ansi":
            return "\n\n".join(
                self.task.render_text(int(self._indices[i]), self._responses[i]) for i in range(self.num_envs)
            )
        return None
