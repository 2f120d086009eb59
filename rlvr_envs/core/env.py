"""`NextStatePredictionEnv`: a verified next-state prediction task as a gymnasium env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlvr_envs.core.task import Task
from rlvr_envs.core.types import RewardResult

MODES = ("sequence", "token")


def observation_space(task: Task) -> spaces.Dict:
    """Fixed-shape integer observation (SB3's `MultiInputPolicy` accepts it as is)."""
    high = task.vocab_size - 1
    return spaces.Dict(
        {
            "prompt": spaces.Box(0, high, shape=(task.max_prompt_len,), dtype=np.int64),
            "prompt_len": spaces.Box(0, task.max_prompt_len, shape=(1,), dtype=np.int64),
            "response": spaces.Box(0, high, shape=(task.max_response_len,), dtype=np.int64),
            "response_len": spaces.Box(0, task.max_response_len, shape=(1,), dtype=np.int64),
        }
    )


def action_space(task: Task, mode: str) -> spaces.Space:
    if mode == "sequence":
        return spaces.MultiDiscrete(np.full(task.max_response_len, task.vocab_size, dtype=np.int64))
    return spaces.Discrete(task.vocab_size)


def response_from_action(task: Task, action: Any) -> np.ndarray:
    """The response a sequence-mode action encodes: the tokens before the first EOS.

    Accepts the padded `MultiDiscrete` array or any 1-D integer sequence; a response longer
    than `max_response_len` is cut there, exactly as token mode's length limit would.
    """
    tokens = np.asarray(action).reshape(-1)
    if tokens.size and tokens.dtype.kind not in "iu":
        raise TypeError(f"a sequence-mode action must hold integer token ids, got dtype {tokens.dtype}")
    tokens = tokens[: task.max_response_len]
    is_eos = tokens == task.eos_token_id
    first = int(is_eos.argmax()) if tokens.size else 0
    if tokens.size and is_eos[first]:
        tokens = tokens[:first]
    return tokens.astype(np.int64, copy=False)


def observation(task: Task, index: int, response: Sequence[int]) -> dict[str, np.ndarray]:
    """The observation of transition `index` with `response` written so far.

    Every call returns fresh arrays (gymnasium's rule: users keep what they are given);
    response ids outside the vocabulary (possible in a sequence-mode action) are clipped in
    the view only.
    """
    prompt, prompt_len = task.padded_prompt(index)
    blank = task.blank_response()
    n = min(len(response), len(blank))
    tokens = blank.copy()  # copying a template is ~4x cheaper than np.full on this hot path
    if n:
        tokens[:n] = response[:n]
        if tokens.view(np.uint64).max() >= task.vocab_size:  # negatives wrap to huge values
            np.clip(tokens, 0, task.vocab_size - 1, out=tokens)
    return {"prompt": prompt.copy(), "prompt_len": prompt_len.copy(), "response": tokens,
            "response_len": np.array([n], dtype=np.int64)}


def result_info(task: Task, index: int, result: RewardResult, response: Sequence[int]) -> dict[str, Any]:
    """The terminal `info`: decoded prediction, every metric component, parse status."""
    return {
        "index": index,
        "transition_id": task.transition(index).uid,
        "parsed": result.parsed,
        "error": result.error,
        "prediction": result.prediction,
        "metrics": dict(result.metrics),
        "max_reward": task.max_reward(index),
        "response_len": len(response),
    }


class NextStatePredictionEnv(gym.Env):
    """
    ## Description
    One episode = one transition (s, a, s') of a world-model dataset. The agent is the
    world model: it reads the prompt tokens q(s, a) and writes a response o(s') that should
    describe the next state. The episode's only reward is the task's verified metric of the
    decoded prediction (exact state match, item-change F1, -(L1+LPIPS) of frames), as in
    RLVR-World (Wu et al., 2025).

    ## Observation Space
    `Dict` of fixed-shape int64 arrays: `prompt` (max_prompt_len,), `prompt_len` (1,),
    `response` (max_response_len,), `response_len` (1,); padding uses the pad token.

    ## Action Space
    * `mode="sequence"` (default): `MultiDiscrete([vocab] * max_response_len)`, the whole
      response in one step; tokens after the first EOS are ignored. Any 1-D integer array
      of at most that length is accepted too. Fits GRPO-style trainers.
    * `mode="token"`: `Discrete(vocab)`, one token per step. Fits SB3 / CleanRL.

    ## Reward
    0 until the response is complete, then the task's verified reward (see `info["metrics"]`
    for every component and `info["max_reward"]` for this transition's maximum). Malformed
    output scores the task's documented `min_reward` with `info["error"]` set.

    ## Episode End
    Sequence mode: after the single step. Token mode: on EOS, when the response reaches
    `max_response_len`, or when the task reports the response structure complete. These
    all *terminate* (the response is final and scored); nothing truncates.

    ## Arguments
    ```python
    import gymnasium as gym
    env = gym.make("RLVRWorld/MiniTextWorld-v0", mode="token")
    obs, info = env.reset(seed=0, options={"index": 3})  # pick a transition
    ```
    Task keyword arguments (data_dir, tokenizer, difficulty, ...) are passed through
    `gym.make`; see the task's config dataclass.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, task: Task, mode: str = "sequence", render_mode: str | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task = task
        self.mode = mode
        self.render_mode = render_mode
        self.observation_space = observation_space(task)
        self.action_space = action_space(task, mode)
        self._index = 0
        self._response: list[int] = []
        self._done = True
        self._last_info: dict[str, Any] = {}

    # -- helpers -----------------------------------------------------------------------
    def _obs(self) -> dict[str, np.ndarray]:
        return observation(self.task, self._index, self._response)

    def _finish(self) -> tuple[float, dict[str, Any]]:
        result = self.task.verify([self._index], [self._response])[0]
        self._done = True
        self._last_info = result_info(self.task, self._index, result, self._response)
        return float(result.reward), self._last_info

    # -- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = (options or {}).get("index")
        if index is None:
            index = int(self.np_random.integers(len(self.task)))
        index = int(index)
        if not 0 <= index < len(self.task):
            raise IndexError(f"options['index']={index} outside the task's {len(self.task)} transitions")
        self._index = index
        self._response = []
        self._done = False
        self._response.extend(int(t) for t in self.task.forced_tokens(index, self._response))
        self._last_info = {"index": index, "transition_id": self.task.transition(index).uid}
        return self._obs(), dict(self._last_info)

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        if self.mode == "sequence":
            self._response = response_from_action(self.task, action)
            reward, info = self._finish()
            return self._obs(), reward, True, False, info

        token = int(np.asarray(action).item())  # a scalar or a size-1 array (SB3 passes either)
        if token == self.task.eos_token_id:
            reward, info = self._finish()
            return self._obs(), reward, True, False, info
        self._response.append(token)
        self._response.extend(int(t) for t in self.task.forced_tokens(self._index, self._response))
        if len(self._response) >= self.task.max_response_len or self.task.is_complete(self._index, self._response):
            self._response = self._response[: self.task.max_response_len]
            reward, info = self._finish()
            return self._obs(), reward, True, False, info
        return self._obs(), 0.0, False, False, {"index": self._index}

    def render(self):
        if self.render_mode == "ansi":
            text = self.task.render_text(self._index, self._response)
            if self._done and "metrics" in self._last_info:
                text += f"\n=== reward ===\n{self._last_info['metrics']} error={self._last_info['error']}"
            return text
        return None
