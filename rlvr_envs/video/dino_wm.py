"""DINO-WM's released datasets (Zhou et al., 2024), loaded without unpickling arbitrary objects.

PushT (`pusht_noise/{train,val}/`)::

    states.pth        float [N, T_max, 5]  agent x, y, block x, y, angle (padded after seq_lengths)
    abs_actions.pth   float [N, T_max, 2]  absolute agent targets in pixels
    rel_actions.pth   float [N, T_max, 2]  target deltas in pixels
    seq_lengths.pkl   N episode lengths
    obses/episode_XXX.mp4   RGB video of episode XXX (index zero-padded to 3 digits)

Rope and Granular (FleX deformables, `deformable/{rope,granular}/`)::

    states.pth        float [N, T, P, 4]   particle positions (+ inverse mass)
    actions.pth       float [N, T, 4]
    000000/obses.pth  uint8 [T, H, W, 3]   frames of episode 0, one directory per episode

Safety: every `.pth` goes through `torch.load(weights_only=True)`, which rebuilds tensors
and plain containers only. `seq_lengths.pkl` is a pickle, so it is read with
`RestrictedUnpickler`, which admits exactly: list, tuple, int, numpy integer arrays and
numpy integer scalars (the classes numpy needs to rebuild them). Anything else, including
any callable a hostile pickle could name, is refused before it runs. Nothing in it may
make the reader allocate more than the file holds: the file is at most
`SEQ_LENGTHS_MAX_BYTES`, every opcode's declared length is checked against the bytes left
before unpickling (a 20-byte pickle can claim a 1 TB string), and the unpickled value
must be a flat list or tuple of integers or a 1-d integer array before it is turned into
an array (a 167-byte pickle of lists that share references expands to 10**7 integers).

All errors are `DinoWMFormatError` (a `DataError`) or `FileNotFoundError`. Bad input: lengths that disagree across files (episode count, per-episode length vs
video frames), a truncated or unreadable video, non-finite actions raise
`DinoWMFormatError` naming the file and episode; `on_error="skip"` in the episode
iterators skips such an episode instead and counts it in `skipped`.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from rlvr_envs.core.errors import DataError

PUSHT_STATE_DIM = 5
PUSHT_ACTION_DIM = 2
DEFORMABLE_ACTION_DIM = 4
PUSHT_ACTION_FILES = {"abs": "abs_actions.pth", "rel": "rel_actions.pth"}
SEQ_LENGTHS_MAX_BYTES = 64 * 2**20  # DINO-WM PushT's file is a few kB; 64 MiB is millions of episodes


class DinoWMFormatError(DataError):
    """A DINO-WM file that does not match the documented layout; the message names where."""


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles lists/tuples of ints and numpy integer arrays/scalars; refuses any other global."""

    ALLOWED_GLOBALS = {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self.ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name} (only int lists / numpy int arrays)")


def load_seq_lengths(path: str | os.PathLike) -> np.ndarray:
    """Episode lengths from `seq_lengths.pkl` as int64 [N], via `RestrictedUnpickler`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (DINO-WM datasets: https://osf.io/bmw48/)")
    size = path.stat().st_size
    if size > SEQ_LENGTHS_MAX_BYTES:
        raise DinoWMFormatError(f"{path}: {size} bytes, more than a list of episode lengths needs "
                                f"(limit {SEQ_LENGTHS_MAX_BYTES})")
    data = path.read_bytes()
    stream, position = io.BytesIO(data), 0
    try:
        for _ in pickletools.genops(stream):  # every declared length against the bytes left
            position = stream.tell()  # where the next opcode starts
        raw = RestrictedUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, MemoryError) as error:
        raise DinoWMFormatError(f"{path}: not a plain list of episode lengths (byte {position}: "
                                f"{type(error).__name__}: {error})") from error
    values = _flat_integers(raw, path)
    if values.size == 0:
        raise DinoWMFormatError(f"{path}: lists no episodes")
    if (values < 1).any():
        raise DinoWMFormatError(f"{path}: episode {int(np.argmax(values < 1))} has length {values.min()}")
    return values.astype(np.int64)


def _flat_integers(raw: Any, path: Path) -> np.ndarray:
    """`raw` as a 1-d integer array, refusing anything else by its type and shape alone (no expansion)."""
    if isinstance(raw, np.ndarray):
        if raw.dtype == object or raw.ndim != 1 or not np.issubdtype(raw.dtype, np.integer):
            raise DinoWMFormatError(f"{path}: expected a flat list of integers, got an array with dtype {raw.dtype} "
                                    f"and shape {raw.shape}")
        return raw
    if not isinstance(raw, (list, tuple)):
        raise DinoWMFormatError(f"{path}: expected a flat list of integers, got {type(raw).__name__}")
    for position, item in enumerate(raw):
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise DinoWMFormatError(f"{path}: expected a flat list of integers, item {position} is a "
                                    f"{type(item).__name__}")
    try:
        return np.array(raw, dtype=np.int64)
    except OverflowError as error:
        raise DinoWMFormatError(f"{path}: an episode length does not fit in int64 ({error})") from error


def load_tensor(path: str | os.PathLike):
    """`torch.load(path, weights_only=True)` as a float/uint8 tensor, with the file named on failure."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (DINO-WM datasets: https://osf.io/bmw48/)")
    try:
        value = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, EOFError... for bad files
        raise DinoWMFormatError(f"{path}: cannot load safely with weights_only=True ({error})") from error
    if not isinstance(value, torch.Tensor):
        raise DinoWMFormatError(f"{path}: expected a tensor, got {type(value).__name__}")
    return value


def read_video(path: str | os.PathLike) -> np.ndarray:
    """All frames of an mp4 as uint8 [T, H, W, 3] (imageio + ffmpeg)."""
    import imageio.v3 as iio

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    try:
        frames = iio.imread(path, index=None, plugin="FFMPEG")
    except Exception as error:  # ffmpeg reports truncation and bad containers in many ways
        raise DinoWMFormatError(f"{path}: unreadable or truncated video ({error})") from error
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] == 0:
        raise DinoWMFormatError(f"{path}: decoded to shape {frames.shape}, expected [T, H, W, 3]")
    return frames.astype(np.uint8, copy=False)


@dataclass
class DinoWMEpisode:
    """One episode: frames uint8 [T, H, W, 3], actions float32 [T, A], states float32 [T, ...]."""

    index: int
    frames: np.ndarray
    actions: np.ndarray
    states: np.ndarray

    def __len__(self) -> int:
        return int(self.actions.shape[0])


@dataclass
class _Skips:
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _check_actions(actions: np.ndarray, where: str) -> np.ndarray:
    bad = ~np.isfinite(actions)
    if bad.any():
        step = int(np.argwhere(bad)[0][0])
        raise DinoWMFormatError(f"{where}: non-finite action at step {step}")
    return actions


class DinoWMPushTDataset(_Skips):
    """DINO-WM's PushT split directory. `action_type` is "rel" (DINO-WM's default) or "abs".

    Episode i has `seq_lengths[i]` frames (from `obses/episode_{i:03d}.mp4`), as many
    actions and states; action t is applied at frame t.
    """

    def __init__(self, root: str | os.PathLike, action_type: str = "rel"):
        if action_type not in PUSHT_ACTION_FILES:
            raise ValueError(f"action_type must be one of {sorted(PUSHT_ACTION_FILES)}; got {action_type!r}")
        super().__init__()
        self.root = Path(root)
        self.action_path = self.root / PUSHT_ACTION_FILES[action_type]
        self.states = load_tensor(self.root / "states.pth").float().numpy()
        self.actions = load_tensor(self.action_path).float().numpy()
        self.seq_lengths = load_seq_lengths(self.root / "seq_lengths.pkl")
        count = len(self.seq_lengths)
        if self.states.ndim != 3 or self.states.shape[0] != count or self.states.shape[2] != PUSHT_STATE_DIM:
            raise DinoWMFormatError(f"{self.root / 'states.pth'}: shape {self.states.shape}, expected "
                                    f"[{count} (seq_lengths), T, {PUSHT_STATE_DIM}]")
        if self.actions.ndim != 3 or self.actions.shape[0] != count or self.actions.shape[2] != PUSHT_ACTION_DIM:
            raise DinoWMFormatError(f"{self.action_path}: shape {self.actions.shape}, expected "
                                    f"[{count} (seq_lengths), T, {PUSHT_ACTION_DIM}]")
        longest = int(self.seq_lengths.max())
        if longest > self.states.shape[1] or longest > self.actions.shape[1]:
            episode = int(np.argmax(self.seq_lengths))
            raise DinoWMFormatError(f"{self.root}: episode {episode} has seq_length {longest} but states/actions hold "
                                    f"{self.states.shape[1]}/{self.actions.shape[1]} steps")

    def __len__(self) -> int:
        return len(self.seq_lengths)

    def video_path(self, index: int) -> Path:
        return self.root / "obses" / f"episode_{index:03d}.mp4"

    def episode_lengths(self) -> list[int]:
        return [int(n) for n in self.seq_lengths]

    def frame_action_counts(self) -> list[tuple[int, int]]:
        return [(n, n) for n in self.episode_lengths()]

    def __getitem__(self, index: int) -> DinoWMEpisode:
        length = int(self.seq_lengths[index])
        path = self.video_path(index)
        frames = read_video(path)
        if frames.shape[0] < length:
            raise DinoWMFormatError(f"{path}: episode {index} video has {frames.shape[0]} frames, "
                                    f"seq_lengths.pkl says {length} (truncated video?)")
        actions = _check_actions(self.actions[index, :length], f"{self.action_path}: episode {index}")
        return DinoWMEpisode(index, frames[:length], actions, self.states[index, :length])

    def episodes(self, on_error: str = "raise") -> Iterator[DinoWMEpisode]:
        """Every episode in order; with on_error="skip" bad ones are skipped and listed in `skipped`."""
        yield from _iterate(self, on_error)


class DinoWMDeformableDataset(_Skips):
    """DINO-WM's Rope or Granular directory: equal-length episodes, frames in `{i:06d}/obses.pth`."""

    def __init__(self, root: str | os.PathLike):
        super().__init__()
        self.root = Path(root)
        self.states = load_tensor(self.root / "states.pth").float().numpy()
        self.actions = load_tensor(self.root / "actions.pth").float().numpy()
        if self.states.ndim != 4 or self.states.shape[-1] != 4:
            raise DinoWMFormatError(f"{self.root / 'states.pth'}: shape {self.states.shape}, expected [N, T, P, 4]")
        if self.actions.shape[:2] != self.states.shape[:2] or self.actions.shape[2:] != (DEFORMABLE_ACTION_DIM,):
            raise DinoWMFormatError(f"{self.root / 'actions.pth'}: shape {self.actions.shape} does not match states "
                                    f"{self.states.shape[:2]} x {DEFORMABLE_ACTION_DIM}")

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def episode_lengths(self) -> list[int]:
        return [int(self.states.shape[1])] * len(self)

    def frame_action_counts(self) -> list[tuple[int, int]]:
        return [(n, n) for n in self.episode_lengths()]

    def __getitem__(self, index: int) -> DinoWMEpisode:
        import torch

        path = self.root / f"{index:06d}" / "obses.pth"
        frames = load_tensor(path)
        if frames.dtype != torch.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
            raise DinoWMFormatError(f"{path}: episode {index} frames {tuple(frames.shape)} {frames.dtype}, "
                                    "expected uint8 [T, H, W, 3]")
        length = int(self.states.shape[1])
        if frames.shape[0] != length:
            raise DinoWMFormatError(f"{path}: episode {index} has {frames.shape[0]} frames, states.pth says {length}")
        actions = _check_actions(self.actions[index], f"{self.root / 'actions.pth'}: episode {index}")
        return DinoWMEpisode(index, frames.numpy(), actions, self.states[index])

    def episodes(self, on_error: str = "raise") -> Iterator[DinoWMEpisode]:
        """Every episode in order; with on_error="skip" bad ones are skipped and listed in `skipped`."""
        yield from _iterate(self, on_error)


def _iterate(dataset, on_error: str) -> Iterator[DinoWMEpisode]:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip'; got {on_error!r}")
    dataset.skipped = []
    for index in range(len(dataset)):
        try:
            episode = dataset[index]
        except (DinoWMFormatError, FileNotFoundError) as error:
            if on_error == "raise":
                raise
            dataset.skipped.append({"episode": index, "reason": str(error)})
            continue
        yield episode
