"""The episode machine: one response being written for one transition.

`NextStatePredictionEnv` steps one `Episode`; the batched vector env steps N of them and
verifies the finished ones in one call. Everything an episode does lives here (forced
tokens, EOS, the length limit, structure completion, writing the observation row; actions
are checked at the door by `rlvr_envs.core.actions`), so the two envs cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from rlvr_envs.core.actions import integer_array, token_from_action, transition_index
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


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def refuse_mode(mode: str | None, env: str, action: str) -> None:
    """The plain envs (learned simulators, the web agent env) have one action space: `mode=`
    is the next-state prediction ids' argument, so it is refused in one line that says why,
    rather than as an `__init__` TypeError (SB3 users pass `mode="token"` to every id)."""
    if mode is not None:
        raise ValueError(f"{env} takes no mode= (its action is {action}); mode={MODES} belongs to the "
                         f"next-state prediction ids")


def out_of_vocabulary(task: Task, tokens: list[int]) -> int | None:
    """The first token id outside [0, vocab_size), exactly as given, or None."""
    if tokens and (min(tokens) < 0 or max(tokens) >= task.vocab_size):  # two C loops in the common case
        return next(t for t in tokens if not 0 <= t < task.vocab_size)
    return None


class Episode:
    """The response written so far for transition `index`, and whether it is final.

    An action that names a token outside the vocabulary ends the episode with the task's
    documented minimum reward and an error that names the token; it is never written into
    the response, so the observation and later episodes stay intact.
    """

    __slots__ = ("task", "index", "response", "done", "error")

    def __init__(self, task: Task, index: int):
        index = transition_index(index, len(task))
        self.task, self.index = task, index
        self.response: list[int] = [int(t) for t in task.forced_tokens(index, [])]
        self.done = False
        self.error: str | None = None

    def _reject(self, token: int) -> None:
        self.error = f"token id {token} outside the vocabulary [0, {self.task.vocab_size})"
        self.done = True

    def push(self, action: Any) -> bool:
        """Token mode: append one token (then any forced tokens); True when the episode ends
        (EOS, the length limit, a complete structure, or an out-of-vocabulary token)."""
        if self.done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        token = token_from_action(action)
        task = self.task
        if token == task.eos_token_id:
            self.done = True
        elif not 0 <= token < task.vocab_size:
            self._reject(token)
        else:
            self.response.append(token)
            self.response.extend(int(t) for t in task.forced_tokens(self.index, self.response))
            if len(self.response) >= task.max_response_len or task.is_complete(self.index, self.response):
                del self.response[task.max_response_len:]
                self.done = True
        return self.done

    def set_response(self, action: Any) -> None:
        """Sequence mode: the whole response at once, the tokens before the first EOS.

        Accepts the padded `MultiDiscrete` array or any 1-D integer sequence; a response
        longer than `max_response_len` is cut there, exactly as token mode's limit would.
        """
        if self.done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        task = self.task
        # Python ints for every integer dtype (and object arrays of ints); list methods beat
        # numpy calls on a few hundred tokens
        tokens = integer_array(action, "a sequence-mode action", task.max_response_len).tolist()
        try:
            del tokens[tokens.index(task.eos_token_id):]
        except ValueError:  # no EOS: the whole response counts
            pass
        self.done = True
        bad = out_of_vocabulary(task, tokens)
        if bad is not None:
            self._reject(bad)
        else:
            self.response = tokens

    def rejected_result(self) -> RewardResult:
        """The result of an episode ended by an invalid action (no verification needed)."""
        return RewardResult.failure(self.task.min_reward, self.error, self.task.max_reward(self.index))

    def write_response(self, tail: np.ndarray) -> None:
        """Write the response into `tail`, a writable copy of the part of the task's blank
        observation row after the prompt ([prompt length, response slots, response length]),
        of a single env or of one row of a vector env's batch."""
        n = min(len(self.response), len(tail) - 2)
        if n:
            tail[1:1 + n] = self.response[:n]
            tail[-1] = n

    def observation(self) -> dict[str, np.ndarray]:
        """A fresh observation (gymnasium's rule: users keep what they are given): views of
        one copy of the task's blank row, with the response written in."""
        row = self.task.blank_observation(self.index).copy()
        self.write_response(row[self.task.max_prompt_len:])
        return observation_views(row, self.task.max_prompt_len)

    def info(self, result: RewardResult | None = None) -> dict[str, Any]:
        """The step info: which transition, and once final, the verified result.

        Every key keeps one type on every step of a task (`parsed` a bool, `metrics` floats,
        `prediction` the task's `empty_prediction` when nothing parsed, `error` None or a
        string), so gymnasium's own vector envs can stack the infos of a batch."""
        info: dict[str, Any] = {"index": self.index, "uid": self.task.transition(self.index).uid}
        if result is not None:
            prediction = result.prediction if result.parsed else self.task.empty_prediction(self.index)
            info.update(parsed=bool(result.parsed), error=result.error, prediction=prediction,
                        metrics={key: float(value) for key, value in result.metrics.items()},
                        max_reward=float(result.max_reward), response_len=len(self.response))
        return info


def observation_views(row: np.ndarray, max_prompt_len: int) -> dict[str, np.ndarray]:
    """The observation dict as views of one row laid out as `Task.blank_observation`."""
    p = max_prompt_len
    return {"prompt": row[:p], "prompt_len": row[p:p + 1], "response": row[p + 1:-1], "response_len": row[-1:]}


def batch_observation(task: Task, episodes: Sequence[Episode]) -> dict[str, np.ndarray]:
    """A fresh observation of a batch of episodes (the vector env's): the prompts copied once
    from the cached blank rows, each response written into its row."""
    p = task.max_prompt_len
    blanks = [task.blank_observation(e.index) for e in episodes]
    prompts = np.stack([blank[:p] for blank in blanks])
    tails = np.stack([blank[p:] for blank in blanks])
    for tail, episode in zip(tails, episodes):
        episode.write_response(tail)
    return {"prompt": prompts, "prompt_len": tails[:, :1].copy(), "response": tails[:, 1:-1].copy(),
            "response_len": tails[:, -1:].copy()}


def verify_episodes(task: Task, episodes: Sequence[Episode]) -> list[RewardResult]:
    """Results of finished episodes: one batched `verify` call for those with a valid
    response, the documented minimum for those ended by an invalid action."""
    valid = [e for e in episodes if e.error is None]
    verified = iter(task.verify([e.index for e in valid], [e.response for e in valid]) if valid else [])
    return [next(verified) if e.error is None else e.rejected_result() for e in episodes]
