"""PushT episodes on disk: one npz per episode, `config.json`, and the dataset reader.

Layout (`FORMAT_NAME`, version `FORMAT_VERSION`; arrays in the package docstring)::

    OUT/config.json                   the PushTGenerationConfig, format name and version
    OUT/summary.json                  success rate and coverage, overall and per policy
    OUT/episodes/episode_000000.npz   one np.savez_compressed file per episode
    OUT/.rlvr-world.lock              who is writing OUT (see rlvr_envs.video._files)

Every file is written atomically (temporary file + rename), so a killed run leaves whole
files or none. Reading never trusts a file: a truncated or corrupt npz, a broken
`config.json` or an episode file whose name is not `episode_<ASCII digits>.npz` raises
`PushTFormatError` (a `DataError`) naming the file and the array or line at fault.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import atomic_writer, read_json, write_json_atomic
from rlvr_envs.video._files import episode_number, episode_paths, read_npz
from rlvr_envs.video.pusht.episodes import PushTEpisode, PushTFormatError, PushTGenerationConfig
from rlvr_envs.video.pusht.physics import ENV_ID

FORMAT_NAME = "rlvr-world/pusht-episodes"
FORMAT_VERSION = 1
EPISODE_FILE = "episode_{index:06d}.npz"
EPISODE_NAME = re.compile(r"episode_([0-9]+)\.npz", re.ASCII)
EPISODE_ARRAYS = ("index", "policy", "noise", "seed", "frames", "actions", "physics", "coverage", "success")
CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"
CONFIG_REMEDY = ("delete it to start over (episodes already in episodes/ are then checked against the new "
                 "config and redone where they differ)")


def save_episode(path: str | os.PathLike, episode: PushTEpisode) -> Path:
    """Write one episode atomically (temporary file + rename) so a crash never leaves half a file."""
    path = Path(path)
    with atomic_writer(path) as handle:
        np.savez_compressed(
            handle, frames=episode.frames, actions=episode.actions, physics=episode.physics,
            states=episode.states, coverage=episode.coverage, success=np.bool_(episode.success),
            policy=np.str_(episode.policy), noise=np.float64(episode.noise), seed=np.int64(episode.seed),
            index=np.int64(episode.index),
        )
    return path


def _scalar(arrays: dict[str, np.ndarray], key: str, kind: type, path: Path):
    value = arrays[key]
    if value.ndim != 0:
        raise PushTFormatError(f"{path}: array {key!r} has shape {value.shape}, expected a scalar")
    try:
        return kind(value)
    except (TypeError, ValueError) as error:
        raise PushTFormatError(f"{path}: array {key!r} ({value.dtype}) is not a {kind.__name__}") from error


def load_episode(path: str | os.PathLike) -> PushTEpisode:
    """Read and check one episode file written by `save_episode` (no pickles: `allow_pickle=False`).

    When the file name carries an episode number it must equal the stored index.
    """
    path = Path(path)
    try:
        arrays = read_npz(path, EPISODE_ARRAYS, "PushT episode")
    except DataError as error:  # keep read_npz's message, raise PushT's type
        raise PushTFormatError(str(error)) from error
    episode = PushTEpisode(
        index=_scalar(arrays, "index", int, path), policy=_scalar(arrays, "policy", str, path),
        noise=_scalar(arrays, "noise", float, path), seed=_scalar(arrays, "seed", int, path),
        frames=arrays["frames"], actions=arrays["actions"], physics=arrays["physics"],
        coverage=arrays["coverage"], success=_scalar(arrays, "success", bool, path),
    )
    number = episode_number(path.name, EPISODE_NAME)
    if number is not None and number != episode.index:
        raise PushTFormatError(f"{path}: holds episode {episode.index}, but its name says episode {number}")
    return episode.validate(str(path))


def episode_metadata(config: PushTGenerationConfig) -> dict[str, Any]:
    """The content of `config.json` for `config`."""
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "env_id": ENV_ID, "config": config.to_json()}


def write_metadata(root: str | os.PathLike, config: PushTGenerationConfig) -> Path:
    return write_json_atomic(Path(root) / CONFIG_FILE, episode_metadata(config))


def read_metadata(root: str | os.PathLike) -> dict[str, Any]:
    """`config.json` as a dict; a broken file raises `DataError` naming it and the line."""
    path = Path(root) / CONFIG_FILE
    meta = read_json(path, "the PushT config", CONFIG_REMEDY)
    if not isinstance(meta, dict):
        raise PushTFormatError(f"{path}: expected a JSON object, found {type(meta).__name__}")
    return meta


def same_format_config(meta: dict[str, Any]) -> dict[str, Any]:
    """`config.json`'s content with its config written as this version writes it (options added
    since read as what the folder's episodes did), so a folder made before an option compares
    equal to the config that reproduces it; left as it is when its config does not parse."""
    try:
        return {**meta, "config": PushTGenerationConfig.from_json(meta["config"]).to_json()}
    except (KeyError, TypeError, ValueError):
        return meta


def read_config(root: str | os.PathLike) -> PushTGenerationConfig:
    """The generation config of a PushT folder, checked for format and version."""
    path = Path(root) / CONFIG_FILE
    meta = read_metadata(root)
    if meta.get("format") != FORMAT_NAME or meta.get("version") != FORMAT_VERSION:
        raise PushTFormatError(f"{path}: expected format {FORMAT_NAME} v{FORMAT_VERSION}, got "
                               f"{meta.get('format')} v{meta.get('version')}")
    try:
        return PushTGenerationConfig.from_json(meta["config"])
    except (KeyError, TypeError, ValueError) as error:
        raise PushTFormatError(f"{path}: field 'config' is not a PushT generation config "
                               f"({type(error).__name__}: {error}); {CONFIG_REMEDY}") from error


class PushTEpisodeDataset:
    """The episodes of a generated directory, loaded lazily, in index order."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        config_path = self.root / CONFIG_FILE
        if not config_path.is_file():
            raise FileNotFoundError(
                f"{config_path} not found: generate PushT data with `rlvr-world data pusht --out {self.root}`"
            )
        self.config = read_config(self.root)
        self.paths = episode_paths(self.root / "episodes", EPISODE_NAME, PushTFormatError)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, position: int) -> PushTEpisode:
        return load_episode(self.paths[position])

    def __iter__(self) -> Iterator[PushTEpisode]:
        return (load_episode(path) for path in self.paths)

    def frame_action_counts(self) -> list[tuple[int, int]]:
        """(frames, actions) = (T + 1, T) per episode, from the small `actions` arrays only."""
        counts = []
        for path in self.paths:
            try:
                actions = read_npz(path, ("actions",), "PushT episode")["actions"]
            except DataError as error:
                raise PushTFormatError(str(error)) from error
            if actions.ndim != 2:
                raise PushTFormatError(f"{path}: array 'actions' has shape {actions.shape}, expected [T, 2]")
            steps = int(actions.shape[0])
            counts.append((steps + 1, steps))
        return counts
