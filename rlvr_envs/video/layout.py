"""Token layouts of the video world models: where frames, actions and markers go.

One vocabulary for a world model (`VideoVocabulary`): frame codes first, then the context
codes of a compressed tokenizer (none by default), then the action bins (shared by every
action dim, one token per dim, as in RLVR-World), then bos, eos and pad. Two layouts over
it, after RLVR-World's iVideoGPT sequences:

* `SingleStepLayout(history=k)`: prompt `[f1 a1] .. [fk ak] bos`, response `f_{k+1}` and
  eos. The agent writes one frame of codes.
* `MultiStepLayout(history=k, future=T)`: prompt `[f1 a1] .. [fk ak]`, response
  `[f_{k+1} a_{k+1}] .. [f_{k+T} a_{k+T}]`. The agent writes only frame codes: after each
  generated frame the env inserts that step's given action tokens (`forced_tokens`), and
  those positions carry no loss (`loss_mask`). With a compressed tokenizer
  (`context_len > 0`, the paper's multi-step setting) the prompt starts with the context
  frame's codes, `[ctx][f1 a1] .. [fk ak]`, and every frame after it has few codes.

A layout is data: it builds prompts and responses from codes and action bins, says which
response positions are forced, splits a response back into frames, and checks that a
response has the right kind of token at every position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VideoVocabulary:
    """Token ids: [0, frame_codes) frame codes, then `context_codes` context codes (a compressed
    tokenizer's context frame; none by default, which leaves every other id where it was),
    then `action_bins` bins, then bos, eos, pad."""

    frame_codes: int
    action_bins: int = 256
    context_codes: int = 0

    def __post_init__(self):
        if self.frame_codes < 1 or self.action_bins < 1 or self.context_codes < 0:
            raise ValueError(f"need frame_codes and action_bins >= 1 and context_codes >= 0, got "
                             f"{self.frame_codes}, {self.action_bins}, {self.context_codes}")

    @property
    def context_offset(self) -> int:
        return self.frame_codes

    @property
    def action_offset(self) -> int:
        return self.frame_codes + self.context_codes

    @property
    def bos(self) -> int:
        return self.action_offset + self.action_bins

    @property
    def eos(self) -> int:
        return self.bos + 1

    @property
    def pad(self) -> int:
        return self.bos + 2

    @property
    def size(self) -> int:
        return self.bos + 3

    def action_tokens(self, bins: np.ndarray) -> np.ndarray:
        """Token ids of action bins (int [..., dims] in [0, action_bins))."""
        bins = np.asarray(bins, dtype=np.int64)
        if bins.size and (bins.min() < 0 or bins.max() >= self.action_bins):
            raise ValueError(f"action bins must lie in [0, {self.action_bins})")
        return bins + self.action_offset

    def context_tokens(self, codes: np.ndarray) -> np.ndarray:
        """Token ids of context codes (int [...] in [0, context_codes))."""
        codes = np.asarray(codes, dtype=np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= self.context_codes):
            raise ValueError(f"context codes must lie in [0, {self.context_codes})")
        return codes + self.context_offset

    def is_frame_code(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens)
        return (tokens >= 0) & (tokens < self.frame_codes)

    def is_context_code(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens)
        return (tokens >= self.context_offset) & (tokens < self.action_offset)

    def is_action_token(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens)
        return (tokens >= self.action_offset) & (tokens < self.bos)

    def kind(self, token: int) -> str:
        """What one token id is, in words (for error reasons)."""
        token = int(token)
        if 0 <= token < self.frame_codes:
            return "a frame code"
        if self.is_context_code(token):
            return "a context code"
        if self.is_action_token(token):
            return "an action token"
        names = {self.bos: "bos", self.eos: "eos", self.pad: "pad"}
        return names.get(token, f"out of the vocabulary [0, {self.size})")


def _interleave(frames: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """[f1 a1 f2 a2 ...] of frame codes [n, F] and action tokens [n, A]."""
    return np.concatenate([frames, actions], axis=1).reshape(-1)


@dataclass(frozen=True)
class SingleStepLayout:
    """`[f1 a1] .. [fk ak] bos` -> `f_{k+1}` (then eos)."""

    vocab: VideoVocabulary
    tokens_per_frame: int
    action_dims: int
    history: int = 3

    @property
    def future(self) -> int:
        return 1

    @property
    def prompt_len(self) -> int:
        return self.history * (self.tokens_per_frame + self.action_dims) + 1

    @property
    def response_len(self) -> int:
        """Tokens the agent writes (without eos)."""
        return self.tokens_per_frame

    def prompt(self, history_codes: np.ndarray, history_action_tokens: np.ndarray) -> np.ndarray:
        return np.concatenate([_interleave(history_codes, history_action_tokens), [self.vocab.bos]]).astype(np.int64)

    def response(self, future_codes: np.ndarray, future_action_tokens: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(future_codes, dtype=np.int64).reshape(-1)

    def forced_tokens(self, response: list[int], future_action_tokens: np.ndarray | None) -> tuple[int, ...]:
        return ()

    def is_complete(self, response: list[int]) -> bool:
        return len(response) >= self.response_len

    def loss_mask(self) -> np.ndarray:
        """Which response positions the model is trained to predict (all of them here)."""
        return np.ones(self.response_len, dtype=bool)

    def frames(self, response: np.ndarray) -> tuple[np.ndarray | None, str | None]:
        """(frame codes [1, F], None) of a response, or (None, why it is malformed)."""
        return _split_frames(self, np.asarray(response), 1)


@dataclass(frozen=True)
class MultiStepLayout:
    """`[ctx] [f1 a1] .. [fk ak]` -> `[f_{k+1} a_{k+1}] .. [f_{k+T} a_{k+T}]`, actions forced.

    `[ctx]` (`context_len` context codes of a compressed tokenizer's context frame) is there
    only when `context_len > 0`; the default has none and is the plain multi-step layout."""

    vocab: VideoVocabulary
    tokens_per_frame: int
    action_dims: int
    history: int = 1
    future: int = 4
    context_len: int = 0

    def __post_init__(self):
        if self.context_len < 0:
            raise ValueError(f"context_len must be >= 0, got {self.context_len}")
        if self.context_len and not self.vocab.context_codes:
            raise ValueError(f"a layout with {self.context_len} context tokens needs a vocabulary with context "
                             "codes (VideoVocabulary(context_codes=...))")

    @property
    def step_len(self) -> int:
        return self.tokens_per_frame + self.action_dims

    @property
    def prompt_len(self) -> int:
        return self.context_len + self.history * self.step_len

    @property
    def response_len(self) -> int:
        return self.future * self.step_len

    def prompt(self, history_codes: np.ndarray, history_action_tokens: np.ndarray,
               context_codes: np.ndarray | None = None) -> np.ndarray:
        """The prompt ids; `context_codes` (raw codes [context_len] in [0, vocab.context_codes),
        mapped to their ids here) is required exactly when the layout has a context frame."""
        steps = _interleave(history_codes, history_action_tokens).astype(np.int64)
        if not self.context_len:
            if context_codes is not None:
                raise ValueError("this layout has no context frame; context_codes must be None")
            return steps
        if context_codes is None:
            raise ValueError(f"this layout starts with {self.context_len} context codes; pass context_codes")
        context = np.asarray(context_codes).reshape(-1)
        if len(context) != self.context_len:
            raise ValueError(f"expected {self.context_len} context codes, got {len(context)}")
        return np.concatenate([self.vocab.context_tokens(context), steps])

    def response(self, future_codes: np.ndarray, future_action_tokens: np.ndarray) -> np.ndarray:
        return _interleave(np.asarray(future_codes), np.asarray(future_action_tokens)).astype(np.int64)

    def forced_tokens(self, response: list[int], future_action_tokens: np.ndarray) -> tuple[int, ...]:
        """The given action of step t right after the agent finished frame t."""
        n = len(response)
        if n and n % self.step_len == self.tokens_per_frame:
            return tuple(int(t) for t in future_action_tokens[n // self.step_len])
        return ()

    def is_complete(self, response: list[int]) -> bool:
        return len(response) >= self.response_len

    def loss_mask(self) -> np.ndarray:
        mask = np.zeros((self.future, self.step_len), dtype=bool)
        mask[:, : self.tokens_per_frame] = True
        return mask.reshape(-1)

    def frames(self, response: np.ndarray) -> tuple[np.ndarray | None, str | None]:
        return _split_frames(self, np.asarray(response), self.future)


def _split_frames(layout, response: np.ndarray, count: int) -> tuple[np.ndarray | None, str | None]:
    if len(response) != layout.response_len:
        return None, f"the response has {len(response)} tokens; {layout.response_len} expected ({count} frame(s))"
    mask = layout.loss_mask()
    codes = response[mask]
    if not layout.vocab.is_frame_code(codes).all():
        bad = int(codes[~layout.vocab.is_frame_code(codes)][0])
        return None, (f"token {bad} ({layout.vocab.kind(bad)}) stands where a frame code "
                      f"(< {layout.vocab.frame_codes}) belongs")
    return codes.reshape(count, layout.tokens_per_frame), None
