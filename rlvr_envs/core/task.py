"""Task = dataset of transitions + codec + batched verifier.

Every environment, vector env, TRL reward function and benchmark talks to a `Task`; a new
dataset family only has to implement this protocol. Text families subclass `TextTask`,
which supplies the token codec from any Hugging Face tokenizer.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlvr_envs.core.answer import AnswerError
from rlvr_envs.core.files import check_sizes
from rlvr_envs.core.types import RewardResult, Transition


#: the most transitions a generated task (`size=`) builds; they are all built up front, measured at
#: ~2 ms and 40-100 KB each (MiniWeb, MiniTextWorld on 2 CPU cores), so at most minutes and ~10 GB
MAX_GENERATED_SIZE = 100_000


def check_generated_size(size: Any) -> None:
    """Refuse a generated task's `size=` outside [1, MAX_GENERATED_SIZE] before any is built."""
    check_sizes({"size": size}, {"size": MAX_GENERATED_SIZE})


class Task(abc.ABC):
    """A verifiable next-state prediction task over token sequences.

    Subclasses set the class attributes and implement the abstract methods. The contract,
    tested for every registered id by `rlvr_envs.core.checker.check_llm_env`:
      * the gold response (`target_ids`) gets `max_reward(index)`;
      * `verify` never raises on model output: an undecodable response gets `min_reward`
        and an error string;
      * `verify` is deterministic for a fixed response.
    """

    #: "text", "web" or "video"
    modality: str = "text"
    #: one line saying what the reward measures (the registry's env table shows it)
    reward_description: str = ""
    #: the documented minimum reward (what malformed output gets)
    min_reward: float = 0.0
    #: True when random tokens can never form a valid answer (text formats); False where
    #: any token sequence decodes to some prediction (e.g. video frame codes)
    random_responses_score_minimum: bool = True
    #: True when the gold response scores `max_reward` exactly; False where a lossy codec
    #: stands between tokens and the prediction (video: the gold codes score at least as well
    #: as perturbed or random responses, and results report that ceiling)
    gold_reaches_max: bool = True

    vocab_size: int
    eos_token_id: int
    pad_token_id: int
    max_prompt_len: int
    max_response_len: int

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def transition(self, index: int) -> Transition: ...

    @abc.abstractmethod
    def prompt_ids(self, index: int) -> np.ndarray:
        """q(s, a): the prompt tokens (1-D int64, at most `max_prompt_len`)."""

    @abc.abstractmethod
    def target_ids(self, index: int) -> np.ndarray:
        """o(s'): the gold response tokens, without the trailing EOS."""

    @abc.abstractmethod
    def decode(self, index: int, response_ids: Sequence[int]) -> tuple[Any, str | None]:
        """Decode a response into a predicted next state: (prediction, None) or (None, reason)."""

    @abc.abstractmethod
    def verify(self, indices: Sequence[int], responses: Sequence[Sequence[int]]) -> list[RewardResult]:
        """Score a batch of responses (one per index) in one call; each result carries
        `max_reward(index)`."""

    @classmethod
    def describe_reward(cls, **kwargs: Any) -> str:
        """What the reward measures for these registry arguments (the env table's column)."""
        return cls.reward_description

    def blank_observation(self, index: int) -> np.ndarray:
        """The observation of transition `index` before any response, as one read-only int64
        row: the prompt padded to `max_prompt_len`, its length, `max_response_len` pad tokens,
        0 (the episode's observation dict is views of a copy). Cached (bounded), since every
        reset and step starts from it."""
        cache = self.__dict__.setdefault("_blank_observation_cache", {})
        row = cache.get(index)
        if row is None:
            if len(cache) >= 1024:  # bounded: long-prompt datasets would not fit otherwise
                cache.clear()
            ids = self.prompt_ids(index)[: self.max_prompt_len]
            row = np.full(self.max_prompt_len + self.max_response_len + 2, self.pad_token_id, dtype=np.int64)
            row[: len(ids)] = ids
            row[self.max_prompt_len] = len(ids)
            row[-1] = 0
            row.setflags(write=False)
            cache[index] = row
        return row

    def max_reward(self, index: int) -> float:
        """The reward of a perfect prediction for this transition."""
        return 1.0

    def empty_prediction(self, index: int) -> Any:
        """`info["prediction"]` of a response that did not parse (`info["parsed"]` False): the
        structure of a parsed prediction, empty. Gymnasium's vector envs give an info key the
        type of the first env that reports it (a dict is walked key by key, a number or array
        fixes the dtype), so a prediction that is None in one env and a dict or array in
        another crashes them. None suits a task whose predictions are other objects."""
        return None

    def is_complete(self, index: int, response_ids: Sequence[int]) -> bool:
        """True when the response structure is complete (token mode ends the episode)."""
        return False

    def forced_tokens(self, index: int, response_ids: Sequence[int]) -> Sequence[int]:
        """Tokens the env appends after the agent's latest token (e.g. given action tokens
        between predicted video frames). Empty for tasks where the agent writes everything."""
        return ()

    def render_text(self, index: int, response_ids: Sequence[int] | None = None) -> str:
        """Human-readable view of a transition and (optionally) a response."""
        return f"{type(self).__name__}[{index}] {self.transition(index).uid}"


class TextTask(Task):
    """A task whose prompt and answer are text, tokenized by the world model's tokenizer.

    Subclasses write four methods: `format_prompt` and `format_target` (a transition as
    prompt text and as gold answer text), `parse` (answer text -> prediction, raising
    `AnswerError` with the reason) and `score` (prediction -> `RewardResult`). This class
    caches the token codec, applies the length limits, and turns any exception raised while
    reading model output into the minimum reward, so training never crashes on a bad sample.

    Arguments:
        transitions: the dataset.
        tokenizer: a `transformers` tokenizer (or a name/path for `AutoTokenizer`).
        max_prompt_len: drop transitions whose prompt is longer (None: keep all and use
            the longest prompt as the observation width).
        max_response_len: the response budget (None: longest gold answer plus 25%).
        max_total_len: drop transitions whose prompt plus gold answer is longer (the
            length filter of RLVR-World's web data).
    """

    #: metric names a failed parse reports as 0 (so every result logs the same keys)
    metric_keys: tuple[str, ...] = ()

    def __init__(
        self,
        transitions: Sequence[Transition],
        tokenizer: Any,
        max_prompt_len: int | None = None,
        max_response_len: int | None = None,
        max_total_len: int | None = None,
    ):
        from rlvr_envs.core.tokenizers import load_tokenizer

        self.tokenizer = load_tokenizer(tokenizer)
        if self.tokenizer.eos_token_id is None:
            raise ValueError(f"tokenizer {tokenizer!r} has no EOS token; the env needs one to end a response")
        self.eos_token_id = int(self.tokenizer.eos_token_id)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = int(pad) if pad is not None else self.eos_token_id
        self.vocab_size = len(self.tokenizer)

        prompts = self.tokenizer([self.format_prompt(t) for t in transitions], add_special_tokens=False)["input_ids"]
        targets = self.tokenizer([self.format_target(t) for t in transitions], add_special_tokens=False)["input_ids"]
        keep = [
            i for i, (p, t) in enumerate(zip(prompts, targets))
            if (max_prompt_len is None or len(p) <= max_prompt_len)
            and (max_total_len is None or len(p) + len(t) <= max_total_len)
        ]
        #: transitions dropped by the length limits (counted, never silent)
        self.n_filtered = len(transitions) - len(keep)
        if not keep:
            shortest = min((len(p), len(p) + len(t)) for p, t in zip(prompts, targets)) if prompts else "n/a"
            raise ValueError(
                f"no transition fits max_prompt_len={max_prompt_len}, max_total_len={max_total_len} "
                f"(shortest prompt, prompt+answer: {shortest})"
            )
        self._transitions = [transitions[i] for i in keep]
        self._prompt_ids = [np.asarray(prompts[i], dtype=np.int64) for i in keep]
        self._target_ids = [np.asarray(targets[i], dtype=np.int64) for i in keep]
        self.max_prompt_len = max_prompt_len or max(len(p) for p in self._prompt_ids)
        longest_target = max(len(t) for t in self._target_ids)
        if max_response_len is None:
            max_response_len = longest_target + max(16, longest_target // 4)
        if max_response_len < longest_target:
            raise ValueError(
                f"max_response_len={max_response_len} is shorter than the longest gold answer "
                f"({longest_target} tokens); the gold response would not fit"
            )
        self.max_response_len = int(max_response_len)

    # -- what subclasses write ---------------------------------------------------------
    @abc.abstractmethod
    def format_prompt(self, transition: Transition) -> str:
        """q(s, a) as text."""

    @abc.abstractmethod
    def format_target(self, transition: Transition) -> str:
        """The gold answer (`transition.target`) as text."""

    @abc.abstractmethod
    def parse(self, index: int, text: str) -> Any:
        """The prediction in response `text`; raises (e.g. `AnswerError`) saying why not."""

    @abc.abstractmethod
    def score(self, index: int, prediction: Any) -> RewardResult:
        """The verified reward of a parsed prediction of transition `index`."""

    # -- the Task protocol -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._transitions)

    def transition(self, index: int) -> Transition:
        return self._transitions[index]

    def prompt_ids(self, index: int) -> np.ndarray:
        return self._prompt_ids[index]

    def target_ids(self, index: int) -> np.ndarray:
        return self._target_ids[index]

    def prompt_text(self, index: int) -> str:
        return self.format_prompt(self._transitions[index])

    def target_text(self, index: int) -> str:
        return self.format_target(self._transitions[index])

    def response_text(self, response_ids: Sequence[int]) -> str:
        if type(response_ids) is list and set(map(type, response_ids)) <= {int}:
            ids = response_ids  # what the envs pass: checked with two C loops, no array round trip
        else:
            array = np.asarray(response_ids).reshape(-1)
            ids = array.tolist()
            if array.dtype.kind not in "iu":  # floats, bools, strings; object arrays only of ints
                bad = next((t for t in ids if not isinstance(t, int) or isinstance(t, bool)), None)
                if bad is not None:
                    raise ValueError(f"token id {bad!r} outside the vocabulary [0, {self.vocab_size})")
        if ids and (min(ids) < 0 or max(ids) >= self.vocab_size):
            bad = next(t for t in ids if not 0 <= t < self.vocab_size)
            raise ValueError(f"token id {bad!r} outside the vocabulary [0, {self.vocab_size})")
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is not None and not getattr(self.tokenizer, "clean_up_tokenization_spaces", False):
            # the Rust decoder directly: transformers' decode wrapper costs more than the decode
            return backend.decode(ids, skip_special_tokens=True)
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def decode(self, index: int, response_ids: Sequence[int]) -> tuple[Any, str | None]:
        try:
            return self.parse(int(index), self.response_text(response_ids)), None
        except Exception as exc:  # model output must never crash the caller
            return None, str(exc) if isinstance(exc, AnswerError) else f"{type(exc).__name__}: {exc}"

    def _verify_one(self, index: int, read_text) -> RewardResult:
        top = self.max_reward(index)
        try:
            result = self.score(index, self.parse(index, read_text()))
        except Exception as exc:  # model output must never crash training
            error = str(exc) if isinstance(exc, AnswerError) else f"{type(exc).__name__}: {exc}"
            result = RewardResult.failure(self.min_reward, error, metrics=dict.fromkeys(self.metric_keys, 0.0))
        result.max_reward = top
        return result

    def verify(self, indices: Sequence[int], responses: Sequence[Sequence[int]]) -> list[RewardResult]:
        if len(indices) != len(responses):
            raise ValueError(f"verify got {len(indices)} indices but {len(responses)} responses")
        return [self._verify_one(int(i), lambda r=r: self.response_text(r)) for i, r in zip(indices, responses)]

    def verify_text(self, indices: Sequence[int], texts: Sequence[str]) -> list[RewardResult]:
        """`verify` for completions held as strings (TRL reward functions, verl)."""
        if len(indices) != len(texts):
            raise ValueError(f"verify_text got {len(indices)} indices but {len(texts)} texts")
        return [self._verify_one(int(i), lambda t=t: str(t)) for i, t in zip(indices, texts)]

    def render_text(self, index: int, response_ids: Sequence[int] | None = None) -> str:
        lines = ["=== prompt ===", self.prompt_text(index), "=== gold ===", self.target_text(index)]
        if response_ids is not None:
            lines += ["=== response ===", self.tokenizer.decode([int(t) for t in response_ids])]
        return "\n".join(lines)
