"""`NextStatePredictionEnv`: a verified next-state prediction task as a gymnasium env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlvr_envs.core.actions import reset_options
from rlvr_envs.core.episode import Episode, action_space, check_mode, observation_space, verify_episodes
from rlvr_envs.core.task import Task


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
    * `mode="token"`: `Discrete(vocab)`, one token per step (an int or a size-1 integer
      array). Fits SB3 / CleanRL.
    Actions are validated at the door (`rlvr_envs.core.actions`): anything but integer token
    ids (None, floats, strings, bools, a ragged list, a masked array) raises `TypeError`, a
    wrong shape (a 2-D sequence action, several values as one token) raises `ValueError`;
    a token id outside the vocabulary ends the episode with the documented minimum reward
    and `info["error"]` naming the id.

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
    `gym.make`; see the task's config dataclass. The episode logic itself lives in
    `rlvr_envs.core.episode.Episode`, shared with the batched vector env.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(self, task: Task, mode: str = "sequence", render_mode: str | None = None):
        modes = ["ansi", "rgb_array"] if hasattr(task, "render_frames") else ["ansi"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {modes} for {type(task).__name__}, got {render_mode!r}")
        # per instance: a text task renders no frames, and gymnasium's checker tries every listed mode
        self.metadata = {**type(self).metadata, "render_modes": modes}
        self.task = task
        self.mode = check_mode(mode)
        self.render_mode = render_mode
        self.observation_space = observation_space(task)
        self.action_space = action_space(task, mode)
        self._episode: Episode | None = None
        self._last_info: dict[str, Any] = {}

    def _obs(self) -> dict[str, np.ndarray]:
        return self._episode.observation()

    # -- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = reset_options(options, ("index",)).get("index")
        if index is None:
            index = int(self.np_random.integers(len(self.task)))
        self._episode = Episode(self.task, index)  # checks the index first: a refused reset changes nothing
        self._last_info = self._episode.info()
        return self._obs(), dict(self._last_info)

    def step(self, action):
        episode = self._episode
        if episode is None:
            raise RuntimeError("step() called before reset()")
        if self.mode == "sequence":
            episode.set_response(action)
        elif not episode.push(action):
            return self._obs(), 0.0, False, False, {"index": episode.index}
        result = verify_episodes(self.task, [episode])[0]
        self._last_info = episode.info(result)
        return self._obs(), float(result.reward), True, False, self._last_info

    def render(self):
        if self.render_mode == "rgb_array" and self._episode is not None:
            return self.task.render_frames(self._episode.index, self._episode.response)
        if self.render_mode == "ansi" and self._episode is not None:
            text = self.task.render_text(self._episode.index, self._episode.response)
            if self._episode.done and "metrics" in self._last_info:
                text += f"\n=== reward ===\n{self._last_info['metrics']} error={self._last_info['error']}"
            return text
        return None
