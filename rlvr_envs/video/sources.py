"""Where the video tasks' episodes and action bins come from, per dataset.

PushT (embedded generator), RT-1 (converted npz folders) and DINO-WM's deformables differ
in defaults (`DATASETS`), in how action bins are made (PushT: the arena; RT-1: a ranges
file or the train split; deformables: the train split) and in frame size (resized once to
the tokenizer's resolution). `VideoPredictionTask` picks from here by `dataset=`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rlvr_envs.video.action_bins import ActionBins

#: an episode whose index is a multiple of this is held out (split="test"; PushT and the
#: deformables; RT-1 holds out every 100th episode, in its own test folder)
TEST_EVERY = 10
#: PushT actions are absolute agent targets in pixels of the 512x512 arena
PUSHT_ACTION_RANGE = (0.0, 512.0)
TOKENIZER_HINT = ("a FrameTokenizer checkpoint dir (config.json + model.safetensors, `FrameTokenizer.save`) trained on "
                  "these frames; `python -m trainers.train_frame_tokenizer --dataset NAME --data DIR --resolution H,W` "
                  "trains one")
@dataclass(frozen=True)
class DatasetSpec:
    """What differs between the video datasets: labels, defaults and where to get the data."""

    label: str  #: shown in renders and messages
    frame_skip: int  #: default simulator steps between frames
    single_history: int  #: default history frames of the single-step layout
    multi_history: int  #: default context frames of the multi-step layout
    future: int  #: default predicted frames of the multi-step layout
    data_hint: str = ""  #: what `data_dir` must hold and how to get it ("" = embedded default)

    @property
    def embedded(self) -> bool:
        return not self.data_hint


_DEFORMABLE_HINT = ("DINO-WM's deformable/{name} folder: states.pth, actions.pth, 000000/obses.pth, ... "
                    "(datasets at https://osf.io/bmw48/)")
DATASETS: dict[str, DatasetSpec] = {
    "pusht": DatasetSpec("PushT", frame_skip=5, single_history=3, multi_history=1, future=4),
    "rt1": DatasetSpec("RT-1", frame_skip=1, single_history=4, multi_history=1, future=7, data_hint=(
        "converted RT-1 episodes, data_dir/{train,test}/episode_*.npz: `rlvr-world data rt1 --src "
        "<fractal20220817_data RLDS shards> --out <data_dir>`")),
    "rope": DatasetSpec("Rope", frame_skip=1, single_history=1, multi_history=1, future=4,
                        data_hint=_DEFORMABLE_HINT.format(name="rope")),
    "granular": DatasetSpec("Granular", frame_skip=1, single_history=1, multi_history=1, future=4,
                            data_hint=_DEFORMABLE_HINT.format(name="granular")),
}


def missing_arguments(dataset: str, data_dir: str | None, tokenizer: str | None) -> str | None:
    """Why a dataset without an embedded default cannot be built with these arguments, or None."""
    spec = DATASETS[dataset]
    if spec.embedded:
        return None
    missing = []
    if data_dir is None:
        missing.append(f"data_dir= ({spec.data_hint})")
    if tokenizer is None:
        missing.append(f"tokenizer= ({TOKENIZER_HINT})")
    if not missing:
        return None
    return (f"the {spec.label} video task (dataset={dataset!r}) ships no data or tokenizer; it needs "
            + " and ".join(missing))


def pusht_action_bins(frame_skip: int) -> ActionBins:
    """256 uniform bins over the arena for each of the chunk's 2 * frame_skip values."""
    low, high = PUSHT_ACTION_RANGE
    return ActionBins(np.full(2 * frame_skip, low), np.full(2 * frame_skip, high))


def tile_action_bins(bins: ActionBins, frame_skip: int) -> ActionBins:
    """The bins of one action chunk: `bins` repeated for each of the chunk's `frame_skip` actions."""
    if frame_skip == 1:
        return bins
    names = None if bins.names is None else tuple(f"{name}@{k}" for k in range(frame_skip) for name in bins.names)
    return ActionBins(np.tile(bins.low, frame_skip), np.tile(bins.high, frame_skip), bins.num_bins, names)


def resize_frames(frames: np.ndarray, resolution: tuple[int, int], batch: int = 64) -> np.ndarray:
    """uint8 frames [N, H, W, 3] at `resolution` (H, W): antialiased bilinear, rounded.

    Frames already at that size are returned as they are (no copy, no rounding change).
    """
    frames = np.asarray(frames)
    if tuple(frames.shape[1:3]) == tuple(resolution):
        return frames
    import torch.nn.functional as F

    out = []
    for start in range(0, len(frames), batch):
        x = torch.from_numpy(np.ascontiguousarray(frames[start:start + batch])).permute(0, 3, 1, 2).float()
        y = F.interpolate(x, size=tuple(resolution), mode="bilinear", antialias=True, align_corners=False)
        out.append(y.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy())
    if not out:
        return np.zeros((0, *resolution, 3), dtype=np.uint8)
    return np.ascontiguousarray(np.concatenate(out))


def _npz_image_shape(path: Path) -> tuple[int, int, int]:
    """The per-frame shape of an RT-1 npz episode's `image` array, read from its header only."""
    import zipfile

    from rlvr_envs.video.rt1 import RT1FormatError

    try:
        with zipfile.ZipFile(path) as archive, archive.open("image.npy") as handle:
            version = np.lib.format.read_magic(handle)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            shape, _, _ = reader(handle)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise RT1FormatError(f"{path}: not a readable RT-1 npz episode ({type(exc).__name__}: {exc})") from None
    if len(shape) != 4:
        raise RT1FormatError(f"{path}: image shape {shape}, expected [T, H, W, 3]")
    return tuple(int(v) for v in shape[1:])


class RT1Episodes:
    """The converted RT-1 episodes of one split ("train", "test") or both ("all"), in episode
    order, each split read by `RT1NpzDataset`; the frame size is read from the first file."""

    def __init__(self, root: str | Path, split: str = "all"):
        from rlvr_envs.video import rt1

        self.root = Path(root)
        names = ("train", "test") if split == "all" else (split,)
        present = [name for name in names if any((self.root / name).glob("episode_*.npz"))]
        if not present:
            where = self.root / ("{train,test}" if split == "all" else split)
            raise FileNotFoundError(f"no RT-1 npz episodes under {where}: {DATASETS['rt1'].data_hint}")
        first = min((next((self.root / name).glob("episode_*.npz")) for name in present))
        self.image_shape = _npz_image_shape(first)
        self.splits = [rt1.RT1NpzDataset(self.root, name, self.image_shape) for name in present]
        order = []
        for part, dataset in enumerate(self.splits):
            for position, path in enumerate(dataset.paths):
                order.append((rt1.episode_number(path.name, rt1.NPZ_NAME_PATTERN), part, position))
        self._order = sorted(order)

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, position: int):
        _, part, inner = self._order[position]
        return self.splits[part][inner]


def episode_source(dataset: str, data_dir: str | Path, split: str = "all"):
    """The episodes of `dataset` in `data_dir`, read by the loader its envs use. RT-1: `split`
    names the converted folder(s) read; the other datasets hold every episode (split by index)."""
    if dataset == "pusht":
        from rlvr_envs.video.pusht import PushTEpisodeDataset

        return PushTEpisodeDataset(data_dir)
    if dataset == "rt1":
        return RT1Episodes(data_dir, split)
    from rlvr_envs.video.dino_wm import DinoWMDeformableDataset

    return DinoWMDeformableDataset(data_dir)


def rt1_train_action_bins(root: str | Path) -> tuple[ActionBins, str]:
    """256 bins per RT-1 action dim from the min/max of the train split's actions (`action`
    arrays only), and a line saying so."""
    from rlvr_envs.core.errors import DataError
    from rlvr_envs.video import rt1
    from rlvr_envs.video._files import episode_paths, read_npz

    folder = Path(root) / "train"
    paths = episode_paths(folder, rt1.NPZ_NAME_PATTERN, rt1.RT1FormatError) if folder.is_dir() else []
    if not paths:
        raise FileNotFoundError(f"no RT-1 train episodes under {folder} to derive the action ranges from: pass "
                                "action_ranges= a JSON of per-dimension [min, max] rows (the format of RLVR-World's "
                                "frac_action_ranges.json), or convert the train shards too")
    actions = []
    for path in paths:
        try:
            action = read_npz(path, ("action",), "RT-1 episode")["action"]
        except DataError as exc:
            raise rt1.RT1FormatError(str(exc)) from exc
        if action.ndim != 2 or action.shape[1] != rt1.ACTION_DIM:
            raise rt1.RT1FormatError(f"{path}: action shape {action.shape}, expected [T, {rt1.ACTION_DIM}]")
        actions.append(action)
    bins = ActionBins.from_data(np.concatenate(actions), names=rt1.ACTION_NAMES)
    return bins, f"data: min/max of the train split's actions ({len(paths)} episodes under {folder})"


def deformable_train_action_bins(source) -> tuple[ActionBins, str]:
    """256 bins per action dim from the min/max of the train episodes' actions (index % 10 != 0;
    all episodes when there is no train episode)."""
    train = [i for i in range(len(source)) if i % TEST_EVERY != 0] or list(range(len(source)))
    bins = ActionBins.from_data(source.actions[train])
    return bins, f"data: min/max of the actions of {len(train)} train episodes in {source.root / 'actions.pth'}"


def ranges_file_action_bins(path: str, dims: int, label: str) -> tuple[ActionBins, str]:
    """Bins from a ranges JSON ("values": [[min, max], ...]), checked to have `dims` rows."""
    from rlvr_envs.core.errors import DataError

    bins = ActionBins.from_ranges_file(path)
    if bins.dim != dims:
        raise DataError(f"{path}: {bins.dim} rows of action ranges, but the {label} actions have {dims} dims")
    return bins, f"file: {path}"


