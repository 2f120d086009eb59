"""The frame-transition interface video tasks sample from: windows of history, actions, future.

Every video dataset here reduces to episodes of frames f_0..f_{F-1} (uint8 [H, W, 3])
and actions where a_t is the action applied at frame t (it leads from f_t to f_{t+1}).
A window starting at frame s with `history` k and `future` T holds

    history  f_s .. f_{s+k-1}                 [k, H, W, 3]   what the model is shown
    future   f_{s+k} .. f_{s+k+T-1}           [T, H, W, 3]   what it must predict
    actions  a_s .. a_{s+k+T-2}               [k+T-1, A]     every action between those frames
             (+ a_{s+k+T-1} when `action_after_last_frame`, for token layouts that put an
             action after every frame, as RLVR-World's multi-step layout does)

Single-step prediction (RLVR-World RT-1: 4 history frames, 1 future) is
`WindowSpec.single_step(4)`; multi-step (1 context frame + T future frames) is
`WindowSpec.multi_step(context=1, future=T)`. Windows never cross episode ends and only
exist where every frame and action they need exists.

Sources: anything with `__len__` and `__getitem__(i)` returning an episode object
(optionally `frame_action_counts()`); `frames_and_actions` knows the episode types of
this package (PushT generator, RT-1 npz, DINO-WM) and (frames, actions) tuples.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from rlvr_envs.core.errors import DataError


class EpisodeSource(Protocol):
    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def frames_and_actions(episode: Any) -> tuple[np.ndarray, np.ndarray]:
    """(frames uint8 [F, H, W, 3], actions [A_count, A]) of any episode type of this package."""
    for frames_name, actions_name in (("frames", "actions"), ("image", "action")):
        if hasattr(episode, frames_name) and hasattr(episode, actions_name):
            return np.asarray(getattr(episode, frames_name)), np.asarray(getattr(episode, actions_name))
    if isinstance(episode, tuple) and len(episode) == 2:
        return np.asarray(episode[0]), np.asarray(episode[1])
    raise TypeError(f"cannot read frames and actions from {type(episode).__name__}")


@dataclass(frozen=True)
class WindowSpec:
    """Shape of a sampling window; see the module docstring.

    Args:
        history: frames shown to the model (k >= 1).
        future: frames to predict (T >= 1).
        stride: distance between consecutive window starts within an episode.
        action_after_last_frame: also return the action applied at the last future frame.
    """

    history: int = 4
    future: int = 1
    stride: int = 1
    action_after_last_frame: bool = False

    def validate(self) -> "WindowSpec":
        if self.history < 1 or self.future < 1 or self.stride < 1:
            raise ValueError(f"history, future and stride must be >= 1; got {self}")
        return self

    @classmethod
    def single_step(cls, history: int = 4, stride: int = 1) -> "WindowSpec":
        return cls(history=history, future=1, stride=stride).validate()

    @classmethod
    def multi_step(cls, context: int = 1, future: int = 8, stride: int = 1,
                   action_after_last_frame: bool = True) -> "WindowSpec":
        return cls(history=context, future=future, stride=stride,
                   action_after_last_frame=action_after_last_frame).validate()

    @property
    def frames(self) -> int:
        return self.history + self.future

    @property
    def actions(self) -> int:
        return self.frames - 1 + int(self.action_after_last_frame)

    def starts(self, num_frames: int, num_actions: int) -> range:
        """Valid window starts in an episode with that many frames and actions."""
        last_by_frames = num_frames - self.frames
        last_by_actions = num_actions - self.actions
        return range(0, min(last_by_frames, last_by_actions) + 1, self.stride)


@dataclass
class FrameWindow:
    """One sample: history [k, H, W, 3], future [T, H, W, 3], actions [k+T-1(+1), A]."""

    history: np.ndarray
    future: np.ndarray
    actions: np.ndarray
    episode: int
    start: int


class FrameWindowDataset:
    """All windows of `spec` over the episodes of `source`, in (episode, start) order.

    `lengths` gives (frames, actions) per episode; without it the source's
    `frame_action_counts()` is used when it has one (the datasets of this package read
    only small arrays for it), else each episode is loaded once to count them. Recently used episodes are kept in a small cache
    (`cache_episodes`), because consecutive windows share frames.
    """

    def __init__(self, source: EpisodeSource, spec: WindowSpec,
                 lengths: list[tuple[int, int]] | None = None, cache_episodes: int = 2):
        self.source, self.spec = source, spec.validate()
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_size = max(1, cache_episodes)
        if lengths is None and hasattr(source, "frame_action_counts"):
            lengths = list(source.frame_action_counts())
        if lengths is None:
            lengths = []
            for episode in range(len(source)):
                frames, actions = self._episode(episode)
                lengths.append((frames.shape[0], actions.shape[0]))
        if len(lengths) != len(source):
            raise ValueError(f"{len(lengths)} lengths for {len(source)} episodes")
        index = [(episode, start) for episode, (num_frames, num_actions) in enumerate(lengths)
                 for start in spec.starts(num_frames, num_actions)]
        self._index = np.array(index, dtype=np.int64).reshape(-1, 2)

    def _where(self, episode: int) -> str:
        """The episode's file when the source lists them (`paths`), else the source type and position."""
        paths = getattr(self.source, "paths", None)
        if isinstance(paths, (list, tuple)) and 0 <= episode < len(paths):
            return f"{paths[episode]} (episode {episode})"
        return f"{type(self.source).__name__} episode {episode}"

    def _episode(self, episode: int) -> tuple[np.ndarray, np.ndarray]:
        if episode in self._cache:
            self._cache.move_to_end(episode)
            return self._cache[episode]
        frames, actions = frames_and_actions(self.source[episode])
        if frames.ndim != 4 or frames.shape[-1] != 3:
            raise DataError(f"{self._where(episode)}: frames shaped {frames.shape}, expected [F, H, W, 3]")
        if actions.ndim != 2:
            raise DataError(f"{self._where(episode)}: actions shaped {actions.shape}, expected [count, dim]")
        self._cache[episode] = (frames, actions)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return frames, actions

    def __len__(self) -> int:
        return int(self._index.shape[0])

    def __getitem__(self, item: int) -> FrameWindow:
        episode, start = (int(v) for v in self._index[item])
        frames, actions = self._episode(episode)
        spec = self.spec
        middle = start + spec.history
        if middle + spec.future > frames.shape[0] or start + spec.actions > actions.shape[0]:
            raise DataError(f"{self._where(episode)}: holds {frames.shape[0]} frames and {actions.shape[0]} actions, "
                            f"fewer than its recorded length promised for the window at frame {start} "
                            "(the file changed after the windows were counted?)")
        return FrameWindow(
            history=frames[start:middle],
            future=frames[middle : middle + spec.future],
            actions=actions[start : start + spec.actions],
            episode=episode,
            start=start,
        )

    def __iter__(self) -> Iterator[FrameWindow]:
        return (self[i] for i in range(len(self)))

    def sample(self, rng: np.random.Generator, count: int) -> list[FrameWindow]:
        """`count` windows drawn uniformly (with replacement) using `rng`."""
        if len(self) == 0:
            raise ValueError("no windows: every episode is shorter than the window")
        return [self[int(i)] for i in rng.integers(0, len(self), size=count)]
