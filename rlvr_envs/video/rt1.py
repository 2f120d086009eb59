"""RT-1 (`fractal20220817_data`, Open X-Embodiment RLDS) without TensorFlow.

Two on-disk forms:

(a) RLDS TFRecord shards as published (`fractal20220817_data-train.tfrecord-00000-of-01024`,
    ...): every record is one serialized `tf.train.Example` holding a whole episode, with
    the step features flattened under `steps/...` keys: `steps/observation/image` (one
    encoded JPEG/PNG per step, 256x320x3), `steps/action/<name>` (float lists of
    T * dim values; `terminate_episode` is an int64 one-hot), `steps/is_first`, ... Read
    with the `tfrecord` package's protobuf classes; record framing and both CRC32C checks
    are verified here because `tfrecord`'s own iterator skips them.
(b) per-episode npz as used by iVideoGPT/RLVR-World: `image` uint8 [T, 256, 320, 3] and
    `action` float32 [T, 13], written under `OUT/{train,test}/episode_{index:06d}.npz`
    with `OUT/manifest.json` recording per-shard counts (resumability, verification).

The 13 action dims concatenate the action keys in alphabetical order (`ACTION_KEYS`):
base_displacement_vector(2), base_displacement_vertical_rotation(1),
gripper_closedness_action(1), rotation_delta(3), terminate_episode(3), world_vector(3).
Episodes are numbered in order over the shards sorted by name; episode i is in the test
split when i % 100 == 0 (every 100th episode), else in train. The numbering counts
skipped episodes too, so skipping never moves an episode to the other split.

Bad input raises `RT1FormatError` naming the shard, record index and what is wrong
(truncated record, CRC mismatch, missing key, lengths that disagree, undecodable or
mis-sized image, non-finite action). With `on_error="skip"` the converter instead skips
that episode, counts it and lists it in the manifest and the closing report; its number
stays taken. A shard whose record framing is broken (truncated file, bad length CRC) is
always fatal: the episodes after the break cannot be counted, so later numbers and splits
would silently shift.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

ACTION_KEYS: tuple[tuple[str, int], ...] = (
    ("base_displacement_vector", 2),
    ("base_displacement_vertical_rotation", 1),
    ("gripper_closedness_action", 1),
    ("rotation_delta", 3),
    ("terminate_episode", 3),
    ("world_vector", 3),
)
assert [name for name, _ in ACTION_KEYS] == sorted(name for name, _ in ACTION_KEYS)
ACTION_DIM = sum(dim for _, dim in ACTION_KEYS)  # 13
ACTION_NAMES = tuple(f"{name}[{i}]" for name, dim in ACTION_KEYS for i in range(dim))
IMAGE_KEY = "steps/observation/image"
INSTRUCTION_KEY = "steps/observation/natural_language_instruction"
STEP_COUNT_KEY = "steps/is_first"
IMAGE_SHAPE = (256, 320, 3)
TEST_EVERY = 100
SHARD_GLOB = "*.tfrecord*"
NPZ_NAME = "episode_{index:06d}.npz"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "rlvr-world/rt1-npz"


class RT1FormatError(ValueError):
    """A shard or episode that does not match the RLDS layout; the message names where."""


class ShardFramingError(RT1FormatError):
    """The record framing of a shard is broken: nothing after this point can be trusted."""


def split_of(index: int) -> str:
    """"test" for every 100th episode (index % 100 == 0), else "train"."""
    return "test" if index % TEST_EVERY == 0 else "train"


@dataclass
class RT1Episode:
    """One decoded episode: `image` uint8 [T, 256, 320, 3], `action` float32 [T, 13]."""

    image: np.ndarray
    action: np.ndarray
    instruction: str = ""
    index: int = -1
    source: str = ""

    @property
    def split(self) -> str:
        return split_of(self.index)

    def __len__(self) -> int:
        return int(self.action.shape[0])


# --------------------------------------------------------------------------- TFRecord


def _masked_crc(data: bytes) -> bytes:
    from tfrecord.writer import TFRecordWriter

    return TFRecordWriter.masked_crc(data)


def iter_tfrecord(path: str | os.PathLike) -> Iterator[bytes]:
    """Yield the payload of each record of a TFRecord file, verifying framing and CRCs.

    Raises `ShardFramingError` on a truncated record or a bad length CRC (the rest of the
    file cannot be located) and `RT1FormatError` on a bad payload CRC.
    """
    for item in iter_shard_records(path):
        if isinstance(item, RT1FormatError):
            raise item
        yield item


def iter_shard_records(path: str | os.PathLike) -> Iterator[bytes | RT1FormatError]:
    """Like `iter_tfrecord` but yields a payload-CRC error in place of a corrupt record.

    A record with a bad payload CRC but an intact length can be stepped over; a broken
    length (truncation, length CRC) raises `ShardFramingError`.
    """
    path = Path(path)
    with open(path, "rb") as handle:
        record = 0
        while True:
            header = handle.read(12)
            if not header:
                return
            if len(header) < 12:
                raise ShardFramingError(f"{path}: record {record}: truncated header ({len(header)} of 12 bytes)")
            length_bytes, length_crc = header[:8], header[8:]
            if _masked_crc(length_bytes) != length_crc:
                raise ShardFramingError(f"{path}: record {record}: length CRC mismatch (corrupt shard)")
            (length,) = struct.unpack("<Q", length_bytes)
            payload = handle.read(length)
            data_crc = handle.read(4)
            if len(payload) < length or len(data_crc) < 4:
                raise ShardFramingError(
                    f"{path}: record {record}: truncated ({len(payload)} of {length} payload bytes)"
                )
            if _masked_crc(payload) != data_crc:
                yield RT1FormatError(f"{path}: record {record}: payload CRC mismatch (corrupt record)")
            else:
                yield payload
            record += 1


def _feature_values(example, key: str, where: str):
    features = example.features.feature
    if key not in features:
        raise RT1FormatError(f"{where}: missing key {key!r} (present: {sorted(features)[:12]}...)")
    feature = features[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    return getattr(feature, kind).value


def _decode_image(data: bytes, where: str, step: int, shape: tuple[int, int, int]) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    except Exception as error:  # PIL raises several unrelated types for bad bytes
        raise RT1FormatError(f"{where}: step {step}: undecodable image ({error})") from error
    if array.shape != shape:
        raise RT1FormatError(f"{where}: step {step}: image shape {array.shape}, expected {shape}")
    return array


def parse_episode(
    payload: bytes, where: str, index: int = -1, image_shape: tuple[int, int, int] = IMAGE_SHAPE
) -> RT1Episode:
    """Decode one serialized RLDS episode (`tf.train.Example`); `where` names it in errors."""
    from google.protobuf.message import DecodeError
    from tfrecord import example_pb2

    example = example_pb2.Example()
    try:
        example.ParseFromString(bytes(payload))
    except DecodeError as error:
        raise RT1FormatError(f"{where}: not a tf.train.Example ({error})") from error
    steps = len(_feature_values(example, STEP_COUNT_KEY, where))
    if steps == 0:
        raise RT1FormatError(f"{where}: episode has no steps")
    encoded = _feature_values(example, IMAGE_KEY, where)
    if len(encoded) != steps:
        raise RT1FormatError(f"{where}: {IMAGE_KEY} has {len(encoded)} images for {steps} steps")
    parts = []
    for name, dim in ACTION_KEYS:
        key = f"steps/action/{name}"
        values = np.asarray(_feature_values(example, key, where), dtype=np.float32)
        if values.size != steps * dim:
            raise RT1FormatError(f"{where}: {key} has {values.size} values, expected {steps} steps x {dim}")
        parts.append(values.reshape(steps, dim))
    action = np.concatenate(parts, axis=1)
    bad = ~np.isfinite(action)
    if bad.any():
        step, dim = (int(v) for v in np.argwhere(bad)[0])
        raise RT1FormatError(f"{where}: non-finite action at step {step}, dim {ACTION_NAMES[dim]} ({action[step, dim]})")
    image = np.stack([_decode_image(data, where, step, image_shape) for step, data in enumerate(encoded)])
    instruction = ""
    if INSTRUCTION_KEY in example.features.feature:
        texts = _feature_values(example, INSTRUCTION_KEY, where)
        instruction = texts[0].decode("utf-8", errors="replace") if texts else ""
    return RT1Episode(image=image, action=action, instruction=instruction, index=index, source=where)


def shard_paths(src: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The shards under a directory (sorted by name), or an explicit list kept in order."""
    if isinstance(src, (str, os.PathLike)):
        src = Path(src)
        paths = [src] if src.is_file() else sorted(p for p in src.glob(SHARD_GLOB) if p.is_file() and
                                                     not p.name.endswith((".index", ".json")))
        if not paths:
            raise FileNotFoundError(
                f"no RLDS TFRecord shards ({SHARD_GLOB}) under {src}: download fractal20220817_data from the Open "
                "X-Embodiment bucket (gs://gresearch/robotics/fractal20220817_data/0.1.0/) first"
            )
        return paths
    return [Path(p) for p in src]


def iter_rlds_episodes(src, image_shape: tuple[int, int, int] = IMAGE_SHAPE) -> Iterator[RT1Episode]:
    """All episodes of the shards in order, numbered globally; errors raise `RT1FormatError`."""
    index = 0
    for path in shard_paths(src):
        for record, payload in enumerate(iter_tfrecord(path)):
            yield parse_episode(payload, f"{path}: record {record} (episode {index})", index, image_shape)
            index += 1


# --------------------------------------------------------------------------- npz form


def save_npz_episode(path: str | os.PathLike, episode: RT1Episode) -> Path:
    """Write `image`/`action` (the iVideoGPT layout) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        np.savez(handle, image=episode.image, action=episode.action.astype(np.float32))
    os.replace(temporary, path)
    return path


def load_npz_episode(path: str | os.PathLike, image_shape: tuple[int, int, int] = IMAGE_SHAPE) -> RT1Episode:
    """Read and check one per-episode npz (`allow_pickle=False`)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            image, action = data["image"], data["action"]
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise RT1FormatError(f"{path}: not an RT-1 episode npz ({error})") from error
    if image.dtype != np.uint8 or image.ndim != 4 or image.shape[1:] != image_shape:
        raise RT1FormatError(f"{path}: image {image.shape} {image.dtype}, expected uint8 [T, {image_shape}]")
    if action.shape != (image.shape[0], ACTION_DIM):
        raise RT1FormatError(f"{path}: action {action.shape} does not match {image.shape[0]} frames x {ACTION_DIM}")
    if not np.isfinite(action).all():
        raise RT1FormatError(f"{path}: non-finite action values")
    stem = path.stem.rsplit("_", 1)[-1]
    return RT1Episode(image=image, action=action.astype(np.float32), index=int(stem) if stem.isdigit() else -1,
                      source=str(path))


class RT1NpzDataset:
    """The converted episodes of one split, in index order; frames `image`, actions `action`."""

    def __init__(self, root: str | os.PathLike, split: str = "train", image_shape: tuple[int, int, int] = IMAGE_SHAPE):
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test'; got {split!r}")
        self.root, self.split, self.image_shape = Path(root), split, tuple(image_shape)
        self.paths = sorted((self.root / split).glob("episode_*.npz"))
        if not self.paths:
            raise FileNotFoundError(
                f"no RT-1 npz episodes under {self.root / split}: convert the RLDS shards with "
                f"`rlvr-world data rt1 --convert --src <shards dir> --out {self.root}`"
            )

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, position: int) -> RT1Episode:
        return load_npz_episode(self.paths[position], self.image_shape)

    def episode_lengths(self) -> list[int]:
        """Steps per episode, read from the small `action` arrays only."""
        lengths = []
        for path in self.paths:
            with np.load(path, allow_pickle=False) as data:
                lengths.append(int(data["action"].shape[0]))
        return lengths

    def frame_action_counts(self) -> list[tuple[int, int]]:
        """(frames, actions) per episode for `FrameWindowDataset`: one action per frame."""
        return [(n, n) for n in self.episode_lengths()]


# --------------------------------------------------------------------------- conversion


@dataclass
class ConversionReport:
    """What a conversion did; `skipped` lists {"where", "reason", "episode"} per skipped episode."""

    shards: int = 0
    episodes: int = 0
    written: int = 0
    reused: int = 0
    train: int = 0
    test: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> str:
        rows = [("shards", self.shards), ("episodes seen", self.episodes), ("npz written now", self.written),
                ("npz kept from earlier run", self.reused), ("train", self.train), ("test", self.test),
                ("skipped", len(self.skipped))]
        return "\n".join(f"{name:<26}{value:>10}" for name, value in rows)


def _shard_signature(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"bytes": stat.st_size}


def convert_rlds_to_npz(
    src, out: str | os.PathLike, on_error: str = "raise", expected_episodes: int | None = None,
    image_shape: tuple[int, int, int] = IMAGE_SHAPE, progress: bool = True,
) -> ConversionReport:
    """Convert RLDS shards to per-episode npz; resumable shard by shard; verifies counts.

    A shard finished in an earlier run (listed in the manifest with the same size) is not
    read again; a partly converted shard is redone, keeping npz files already written.
    At the end the number of npz files per split must equal what the manifest says, and
    `expected_episodes` (e.g. 87212 for the full dataset) the total episodes seen.
    """
    from tqdm import tqdm

    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip'; got {on_error!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "test_every": TEST_EVERY, "shards": {}}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != MANIFEST_FORMAT:
            raise RT1FormatError(f"{manifest_path}: not an RT-1 conversion manifest")
    paths = shard_paths(src)
    report = ConversionReport(shards=len(paths))
    index = 0
    for path in tqdm(paths, desc="RT-1 shards", unit="shard", disable=not progress):
        done = manifest["shards"].get(path.name)
        if done is not None and done.get("complete") and done["signature"] == _shard_signature(path):
            if done["first_index"] != index:
                raise RT1FormatError(f"{path}: manifest says it starts at episode {done['first_index']}, "
                                     f"but the shards before it hold {index} episodes (shard list changed?)")
            index += done["episodes"]
            report.episodes += done["episodes"]
            report.reused += done["episodes"] - len(done["skipped"])
            report.skipped.extend(done["skipped"])
            continue
        entry = {"signature": _shard_signature(path), "first_index": index, "episodes": 0, "skipped": [],
                 "complete": False}
        records = iter_shard_records(path)
        while True:
            where = f"{path}: record {entry['episodes']} (episode {index})"
            try:
                item = next(records)
            except StopIteration:
                break
            except ShardFramingError as error:
                # Always fatal: without the framing, the episodes after this point cannot be
                # counted, so every later episode's number (and split) would be wrong.
                raise ShardFramingError(f"{error}; re-download this shard") from error
            target = out / split_of(index) / NPZ_NAME.format(index=index)
            try:
                if isinstance(item, RT1FormatError):
                    raise item
                if target.is_file():
                    report.reused += 1
                else:
                    save_npz_episode(target, parse_episode(item, where, index, image_shape))
                    report.written += 1
            except RT1FormatError as error:
                if on_error == "raise":
                    raise
                entry["skipped"].append({"where": where, "reason": str(error), "episode": index})
            entry["episodes"] += 1
            index += 1
        entry["complete"] = True
        manifest["shards"][path.name] = entry
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        report.episodes += entry["episodes"]
        report.skipped.extend(entry["skipped"])

    skipped_indices = {item["episode"] for item in report.skipped}
    expected = {"train": 0, "test": 0}
    for i in range(index):
        if i not in skipped_indices:
            expected[split_of(i)] += 1
    for split in ("train", "test"):
        found = len(list((out / split).glob("episode_*.npz"))) if (out / split).is_dir() else 0
        if found != expected[split]:
            raise RT1FormatError(f"{out / split}: {found} npz files, but the shards hold {expected[split]} "
                                 f"readable {split} episodes (stale or foreign files?)")
        setattr(report, split, found)
    if expected_episodes is not None and index != expected_episodes:
        raise RT1FormatError(f"the shards hold {index} episodes, expected {expected_episodes} (missing shards?)")
    return report


# --------------------------------------------------------------------------- CLI


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `rlvr-world data rt1`."""
    parser.add_argument("--convert", action="store_true", required=True,
                        help="convert RLDS TFRecord shards to per-episode npz")
    parser.add_argument("--src", required=True, help="directory with fractal20220817_data-*.tfrecord-* shards")
    parser.add_argument("--out", required=True, help="output directory (resumable)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="stop at the first bad episode (default) or skip, count and report it")
    parser.add_argument("--expected-episodes", type=int, default=None,
                        help="verify the total (87212 for the full fractal20220817_data)")
    parser.add_argument("--no-progress", action="store_true")


def run_data_command(args: argparse.Namespace) -> int:
    """Run the conversion and print its report; exit status 2 on bad data."""
    try:
        report = convert_rlds_to_npz(args.src, args.out, on_error=args.on_error,
                                     expected_episodes=args.expected_episodes, progress=not args.no_progress)
    except (RT1FormatError, FileNotFoundError) as error:
        print(f"error: {error}")
        return 2
    print(report.table())
    for item in report.skipped:
        print(f"skipped {item['where']}: {item['reason']}")
    return 0
