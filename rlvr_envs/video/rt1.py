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

Bad input raises `RT1FormatError` (a `DataError`) naming the shard, record index and what
is wrong (truncated record, a length larger than the file, CRC mismatch, missing keys -
listing the keys found against the ones expected, so a shard of another dataset says so -
lengths that disagree, undecodable or mis-sized image, non-finite action). With
`on_error="skip"` the converter instead skips that episode, counts it and lists it in the
manifest and the closing report; its number stays taken. A conversion that converts no
episode at all fails even when skipping. A shard whose record framing is broken
(truncated file, bad length CRC, a length past the end of the file) is always fatal: the
episodes after the break cannot be counted, so later numbers and splits would silently
shift.

Resuming trusts nothing it cannot check cheaply: `manifest.json` is written atomically and
records each npz file's size; a finished shard is skipped only when every npz it produced
is still there at that size, else the shard is redone. Redoing a shard opens each npz it
already has in full (zip CRCs, shapes) and compares its actions with the record's, and
rewrites the ones that fail (`ConversionReport.redone`). One conversion at a time per
output folder (`OUT/.rlvr-world.lock`, see `rlvr_envs.core.files`).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from rlvr_envs.core.arguments import at_least, output_dir
from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import OutputLock, atomic_writer, read_json, remove_stale_temporaries, write_json_atomic
from rlvr_envs.video._files import episode_number, episode_paths, read_npz

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
NPZ_NAME_PATTERN = re.compile(r"episode_([0-9]+)\.npz", re.ASCII)
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "rlvr-world/rt1-npz"
MANIFEST_REMEDY = "delete it to re-check the shards (npz files already written are verified and kept)"
EXPECTED_KEYS = (STEP_COUNT_KEY, IMAGE_KEY, *(f"steps/action/{name}" for name, _ in ACTION_KEYS))
KEYS_SHOWN = 40  # found keys listed in a missing-key error before "+N more"
SKIPS_PRINTED = 20  # skipped episodes listed by the CLI (all are in the manifest)


class RT1FormatError(DataError):
    """A shard or episode that does not match the RLDS layout; the message names where.

    `where` is the location (shard, record, episode) and `problem` what is wrong there, so
    a report can print the location once.
    """

    def __init__(self, message: str, *, where: str = "", problem: str = ""):
        super().__init__(message)
        self.where = where
        self.problem = problem or message


class ShardFramingError(RT1FormatError):
    """The record framing of a shard is broken: nothing after this point can be trusted."""


def _error(where: str, problem: str, kind: type[RT1FormatError] = RT1FormatError) -> RT1FormatError:
    return kind(f"{where}: {problem}", where=where, problem=problem)


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
        size = os.fstat(handle.fileno()).st_size
        record = 0
        while True:
            where = f"{path}: record {record}"
            header = handle.read(12)
            if not header:
                return
            if len(header) < 12:
                raise _error(where, f"truncated header ({len(header)} of 12 bytes)", ShardFramingError)
            length_bytes, length_crc = header[:8], header[8:]
            if _masked_crc(length_bytes) != length_crc:
                raise _error(where, "length CRC mismatch (corrupt shard)", ShardFramingError)
            (length,) = struct.unpack("<Q", length_bytes)
            left = size - handle.tell()
            if length + 4 > left:  # checked before reading: a corrupt length must not allocate
                raise _error(where, f"truncated: the header claims {length} payload bytes, only {max(0, left - 4)} "
                             f"are left in the {size}-byte file", ShardFramingError)
            payload = handle.read(length)
            data_crc = handle.read(4)
            if len(payload) < length or len(data_crc) < 4:
                raise _error(where, f"truncated ({len(payload)} of {length} payload bytes)", ShardFramingError)
            if _masked_crc(payload) != data_crc:
                yield _error(where, "payload CRC mismatch (corrupt record)")
            else:
                yield payload
            record += 1


def describe_keys(keys, limit: int = KEYS_SHOWN) -> str:
    """Feature keys grouped by parent, `steps/observation` and `steps/action` first (they tell
    datasets apart), at most `limit` of them: `steps/observation/{image_0, state}; ...; +N more`."""
    groups: dict[str, list[str]] = {}
    for key in sorted(keys):
        parent, _, leaf = key.rpartition("/")
        groups.setdefault(parent, []).append(leaf)

    def rank(parent: str) -> tuple[int, str]:
        order = ("steps/observation", "steps/action", "steps")
        return next((i for i, prefix in enumerate(order) if parent.startswith(prefix)), len(order)), parent

    parts, shown = [], 0
    for parent in sorted(groups, key=rank):
        leaves = groups[parent][: max(0, limit - shown)]
        if not leaves:
            break
        shown += len(leaves)
        more = len(groups[parent]) - len(leaves)
        listed = ", ".join(leaves) + (f", +{more} more" if more else "")
        parts.append(f"{parent}/{{{listed}}}" if parent else listed)
    hidden = len(keys) - shown
    return "; ".join(parts) + (f"; +{hidden} more keys" if hidden > 0 else "")


def _missing_keys_problem(features) -> str | None:
    missing = [key for key in EXPECTED_KEYS if key not in features]
    if not missing:
        return None
    return (f"missing key(s) {missing} (not an RT-1 fractal20220817_data episode?); "
            f"found {len(features)} keys: {describe_keys(list(features))}")


def _feature_values(example, key: str, where: str):
    features = example.features.feature
    if key not in features:
        raise _error(where, _missing_keys_problem(features) or f"missing key {key!r}")
    feature = features[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    return getattr(feature, kind).value


def _decode_image(data: bytes, where: str, step: int, shape: tuple[int, int, int]) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            if (image.height, image.width) != shape[:2]:  # before decoding: a huge header must not allocate
                raise _error(where, f"step {step}: image shape {(image.height, image.width, 3)}, expected {shape}")
            array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    except RT1FormatError:
        raise
    except Exception as error:  # PIL raises several unrelated types for bad bytes
        raise _error(where, f"step {step}: undecodable image ({error})") from error
    if array.shape != shape:
        raise _error(where, f"step {step}: image shape {array.shape}, expected {shape}")
    return array


def _parse_example(payload: bytes, where: str):
    """The `tf.train.Example` of a record, checked to hold every key RT-1 needs."""
    from google.protobuf.message import DecodeError
    from tfrecord import example_pb2

    example = example_pb2.Example()
    try:
        example.ParseFromString(bytes(payload))
    except DecodeError as error:
        raise _error(where, f"not a tf.train.Example ({error})") from error
    problem = _missing_keys_problem(example.features.feature)
    if problem:
        raise _error(where, problem)
    return example


def _episode_actions(example, where: str) -> np.ndarray:
    """The [T, 13] float32 action matrix of a parsed episode (no image is decoded)."""
    steps = len(_feature_values(example, STEP_COUNT_KEY, where))
    if steps == 0:
        raise _error(where, "episode has no steps")
    parts = []
    for name, dim in ACTION_KEYS:
        key = f"steps/action/{name}"
        values = np.asarray(_feature_values(example, key, where), dtype=np.float32)
        if values.size != steps * dim:
            raise _error(where, f"{key} has {values.size} values, expected {steps} steps x {dim}")
        parts.append(values.reshape(steps, dim))
    action = np.concatenate(parts, axis=1)
    bad = ~np.isfinite(action)
    if bad.any():
        step, dim = (int(v) for v in np.argwhere(bad)[0])
        raise _error(where, f"non-finite action at step {step}, dim {ACTION_NAMES[dim]} ({action[step, dim]})")
    return action


def parse_episode(
    payload: bytes, where: str, index: int = -1, image_shape: tuple[int, int, int] = IMAGE_SHAPE
) -> RT1Episode:
    """Decode one serialized RLDS episode (`tf.train.Example`); `where` names it in errors."""
    example = _parse_example(payload, where)
    action = _episode_actions(example, where)
    steps = action.shape[0]
    encoded = _feature_values(example, IMAGE_KEY, where)
    if len(encoded) != steps:
        raise _error(where, f"{IMAGE_KEY} has {len(encoded)} images for {steps} steps")
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
    with atomic_writer(path) as handle:
        np.savez(handle, image=episode.image, action=episode.action.astype(np.float32))
    return path


def load_npz_episode(path: str | os.PathLike, image_shape: tuple[int, int, int] = IMAGE_SHAPE) -> RT1Episode:
    """Read and check one per-episode npz (`allow_pickle=False`; every array read in full, so
    zip CRCs are checked). The index comes from an `episode_<ASCII digits>.npz` name, else -1."""
    path = Path(path)
    where = str(path)
    try:
        arrays = read_npz(path, ("image", "action"), "RT-1 episode")
    except DataError as error:
        raise RT1FormatError(str(error), where=where, problem=str(error).removeprefix(f"{where}: ")) from error
    image, action = arrays["image"], arrays["action"]
    if image.dtype != np.uint8 or image.ndim != 4 or image.shape[1:] != image_shape:
        raise _error(where, f"image {image.shape} {image.dtype}, expected uint8 [T, {image_shape}]")
    if action.shape != (image.shape[0], ACTION_DIM):
        raise _error(where, f"action {action.shape} does not match {image.shape[0]} frames x {ACTION_DIM}")
    if not np.isfinite(action).all():
        raise _error(where, "non-finite action values")
    number = episode_number(path.name, NPZ_NAME_PATTERN)
    return RT1Episode(image=image, action=action.astype(np.float32), index=-1 if number is None else number,
                      source=str(path))


class RT1NpzDataset:
    """The converted episodes of one split, in index order; frames `image`, actions `action`."""

    def __init__(self, root: str | os.PathLike, split: str = "train", image_shape: tuple[int, int, int] = IMAGE_SHAPE):
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test'; got {split!r}")
        self.root, self.split, self.image_shape = Path(root), split, tuple(image_shape)
        self.paths = episode_paths(self.root / split, NPZ_NAME_PATTERN, RT1FormatError)
        if not self.paths:
            raise FileNotFoundError(
                f"no RT-1 npz episodes under {self.root / split}: convert the RLDS shards with "
                f"`rlvr-world data rt1 --src <shards dir> --out {self.root}`"
            )

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, position: int) -> RT1Episode:
        return load_npz_episode(self.paths[position], self.image_shape)

    def episode_lengths(self) -> list[int]:
        """Steps per episode, read from the small `action` arrays only."""
        lengths = []
        for path in self.paths:
            try:
                action = read_npz(path, ("action",), "RT-1 episode")["action"]
            except DataError as error:
                raise RT1FormatError(str(error)) from error
            if action.ndim != 2:
                raise RT1FormatError(f"{path}: action shape {action.shape}, expected [T, {ACTION_DIM}]")
            lengths.append(int(action.shape[0]))
        return lengths

    def frame_action_counts(self) -> list[tuple[int, int]]:
        """(frames, actions) per episode for `FrameWindowDataset`: one action per frame."""
        return [(n, n) for n in self.episode_lengths()]


# --------------------------------------------------------------------------- conversion


@dataclass
class ConversionReport:
    """What a conversion did.

    `skipped` lists {"where", "reason", "episode"} per skipped episode (the location once,
    in "where"); `redone` lists {"episode", "file", "reason"} per npz from an earlier run
    that failed its check and was written again.
    """

    shards: int = 0
    episodes: int = 0
    written: int = 0
    reused: int = 0
    train: int = 0
    test: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    redone: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> str:
        rows = [("shards", self.shards), ("episodes seen", self.episodes), ("npz written now", self.written),
                ("npz kept from earlier run", self.reused), ("npz redone (failed check)", len(self.redone)),
                ("train", self.train), ("test", self.test), ("skipped", len(self.skipped))]
        return "\n".join(f"{name:<26}{value:>10}" for name, value in rows)


def _shard_signature(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"bytes": stat.st_size}


_ENTRY_FIELDS = {"signature": dict, "first_index": int, "episodes": int, "skipped": list, "complete": bool}


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"a {type(entry).__name__}, expected an object"
    for name, kind in _ENTRY_FIELDS.items():
        if not isinstance(entry.get(name), kind):
            return f"field {name!r} is {entry.get(name)!r}, expected {kind.__name__}"
    if not all(isinstance(item, dict) and isinstance(item.get("episode"), int) for item in entry["skipped"]):
        return "field 'skipped' must list objects with an integer 'episode'"
    return None


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """A conversion manifest, checked; a broken one raises `RT1FormatError` naming the file and line or shard."""
    path = Path(path)
    manifest = read_json(path, "the RT-1 conversion manifest", MANIFEST_REMEDY)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise RT1FormatError(f"{path}: not an RT-1 conversion manifest (format {found!r}, expected "
                             f"{MANIFEST_FORMAT!r}); {MANIFEST_REMEDY}")
    if not isinstance(manifest.get("shards"), dict):
        raise RT1FormatError(f"{path}: field 'shards' is not an object; {MANIFEST_REMEDY}")
    for name, entry in manifest["shards"].items():
        problem = _entry_problem(entry)
        if problem:
            raise RT1FormatError(f"{path}: entry for shard {name!r}: {problem}; {MANIFEST_REMEDY}")
    return manifest


def _files_intact(out: Path, entry: dict[str, Any]) -> bool:
    """Every npz a finished shard produced is still there with the size the manifest recorded."""
    sizes = entry.get("npz_bytes")
    if not isinstance(sizes, list) or len(sizes) != entry["episodes"]:
        return False  # a manifest from before sizes were recorded: check the files one by one
    skipped = {item["episode"] for item in entry["skipped"]}
    for offset, size in enumerate(sizes):
        index = entry["first_index"] + offset
        if index in skipped:
            continue
        try:
            if (out / split_of(index) / NPZ_NAME.format(index=index)).stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def _reuse_problem(target: Path, payload: bytes, where: str, image_shape: tuple[int, int, int]) -> str | None:
    """Why the npz at `target` is not the episode in `payload` (None when it is: whole, right shapes, same actions).

    Raises `RT1FormatError` when the record itself is bad.
    """
    action = _episode_actions(_parse_example(payload, where), where)
    try:
        stored = load_npz_episode(target, image_shape)
    except RT1FormatError as error:
        return error.problem
    if stored.action.shape != action.shape or not np.array_equal(stored.action, action):
        return f"holds actions {stored.action.shape} that differ from the record's {action.shape} (a stale file?)"
    return None


def convert_rlds_to_npz(
    src, out: str | os.PathLike, on_error: str = "raise", expected_episodes: int | None = None,
    image_shape: tuple[int, int, int] = IMAGE_SHAPE, progress: bool = True,
) -> ConversionReport:
    """Convert RLDS shards to per-episode npz; resumable shard by shard; verifies counts.

    A shard finished in an earlier run (listed in the manifest with the same size) is not
    read again when all its npz files are there at their recorded sizes; otherwise, and
    for a partly converted shard, the shard is redone: npz files already written are
    checked against their records and kept, or written again when they fail. At the end
    the number of npz files per split must equal what the manifest says, at least one
    episode must have been converted, and `expected_episodes` (e.g. 87212 for the full
    dataset) must equal the total episodes seen.
    """
    from tqdm import tqdm

    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip'; got {on_error!r}")
    out = Path(out)
    paths = shard_paths(src)
    with OutputLock(out, f"rlvr-world data rt1 --src {src} --out {out}"):
        for folder in (out, out / "train", out / "test"):
            remove_stale_temporaries(folder)
        manifest_path = out / MANIFEST
        manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "test_every": TEST_EVERY, "shards": {}}
        if manifest_path.is_file():
            manifest = read_manifest(manifest_path)
        report = ConversionReport(shards=len(paths))
        index = 0
        for path in tqdm(paths, desc="RT-1 shards", unit="shard", disable=not progress):
            done = manifest["shards"].get(path.name)
            if done is not None and done["complete"] and done["signature"] == _shard_signature(path):
                if done["first_index"] != index:
                    raise RT1FormatError(f"{path}: manifest says it starts at episode {done['first_index']}, "
                                         f"but the shards before it hold {index} episodes (shard list changed?)")
                if _files_intact(out, done):
                    index += done["episodes"]
                    report.episodes += done["episodes"]
                    report.reused += done["episodes"] - len(done["skipped"])
                    report.skipped.extend(done["skipped"])
                    continue
            entry = {"signature": _shard_signature(path), "first_index": index, "episodes": 0, "skipped": [],
                     "complete": False, "npz_bytes": []}
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
                    raise _error(error.where, f"{error.problem}; re-download this shard", ShardFramingError) from error
                target = out / split_of(index) / NPZ_NAME.format(index=index)
                size = 0
                try:
                    if isinstance(item, RT1FormatError):
                        raise item
                    problem = _reuse_problem(target, item, where, image_shape) if target.is_file() else "new"
                    if problem is None:
                        report.reused += 1
                    else:
                        save_npz_episode(target, parse_episode(item, where, index, image_shape))
                        report.written += 1
                        if problem != "new":
                            report.redone.append({"episode": index, "file": str(target), "reason": problem})
                    size = target.stat().st_size
                except RT1FormatError as error:
                    if on_error == "raise":
                        raise
                    target.unlink(missing_ok=True)  # whatever is there cannot be this record's episode
                    entry["skipped"].append({"where": where, "reason": error.problem, "episode": index})
                entry["npz_bytes"].append(size)
                entry["episodes"] += 1
                index += 1
            entry["complete"] = True
            manifest["shards"][path.name] = entry
            write_json_atomic(manifest_path, manifest, indent=None)
            report.episodes += entry["episodes"]
            report.skipped.extend(entry["skipped"])

        skipped_indices = {item["episode"] for item in report.skipped}
        expected = {"train": 0, "test": 0}
        for i in range(index):
            if i not in skipped_indices:
                expected[split_of(i)] += 1
        if not expected["train"] + expected["test"]:
            source = str(paths[0]) if len(paths) == 1 else f"{len(paths)} shards under {paths[0].parent}"
            if index == 0:
                raise RT1FormatError(f"{source}: no episodes in the shard(s); nothing was converted")
            first = report.skipped[0]
            raise RT1FormatError(f"nothing was converted: all {index} episodes in {len(paths)} shard(s) were "
                                 f"skipped; the first, {first['where']}: {first['reason']}")
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
    """Arguments of `rlvr-world data rt1` (converting is what it does; `--convert` is accepted for old scripts)."""
    parser.add_argument("--convert", action="store_true",
                        help="convert RLDS TFRecord shards to per-episode npz (the default; kept for compatibility)")
    parser.add_argument("--src", required=True, help="directory with fractal20220817_data-*.tfrecord-* shards")
    parser.add_argument("--out", type=output_dir, required=True, help="output directory (resumable)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="stop at the first bad episode (default) or skip, count and report it")
    parser.add_argument("--expected-episodes", type=at_least(1), default=None,
                        help="verify the total (87212 for the full fractal20220817_data)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run_data_command(args: argparse.Namespace) -> int:
    """Run the conversion and print its report.

    Bad data raises `RT1FormatError` (a `DataError`) and missing shards `FileNotFoundError`,
    which the CLI prints as one line with exit status 1.
    """
    report = convert_rlds_to_npz(args.src, args.out, on_error=args.on_error,
                                 expected_episodes=args.expected_episodes, progress=not args.no_progress)
    print(report.table())
    for item in report.redone:
        print(f"redone {item['file']}: {item['reason']}")
    for item in report.skipped[:SKIPS_PRINTED]:
        print(f"skipped {item['where']}: {item['reason']}")
    if len(report.skipped) > SKIPS_PRINTED:
        print(f"... and {len(report.skipped) - SKIPS_PRINTED} more skipped episodes, all listed in "
              f"{Path(args.out) / MANIFEST}")
    return 0
