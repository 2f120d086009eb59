"""npz files of the video datasets: strict episode file names, and arrays whose declared
shapes are checked against the file before anything is allocated. (Atomic writes, JSON and
the output lock are domain-free: `rlvr_envs.core.files`.)
"""

from __future__ import annotations

import math
import os
import re
import zipfile
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from rlvr_envs.core.errors import DataError

NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, MemoryError)
_DEFLATE_MAX_RATIO = 1100  # deflate cannot expand data more than ~1032x

def episode_number(name: str, pattern: re.Pattern[str]) -> int | None:
    """The episode number in a file name when it matches `pattern` exactly (ASCII digits only), else None.

    `str.isdigit` and `int` accept other scripts' digits ('²', '٣'), so a file named
    `episode_².npz` would pass `isdigit` and then crash `int`; `pattern` must use [0-9].
    """
    match = pattern.fullmatch(name)
    return int(match.group(1)) if match else None


def episode_paths(folder: Path, pattern: re.Pattern[str], error: type[DataError]) -> list[Path]:
    """The `episode_<number>.npz` files of `folder` in episode order; a stray or repeated
    episode file raises `error` naming it (nothing is silently skipped or shadowed)."""
    numbered: dict[int, Path] = {}
    for path in folder.glob("episode_*.npz"):
        number = episode_number(path.name, pattern)
        if number is None:
            raise error(f"{path}: not an episode file name (expected episode_<ASCII digits>.npz, "
                        "e.g. episode_000000.npz); remove or rename it")
        if number in numbered:
            raise error(f"{path}: episode {number} again (also {numbered[number].name}); remove one")
        numbered[number] = path
    return [numbered[number] for number in sorted(numbered)]


def _declared_size_problem(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    """Why the npy header of a member claims more data than the member can hold (checked before any allocation)."""
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _fortran, dtype = reader(handle)
    declared = math.prod(shape) * dtype.itemsize
    if declared > info.file_size:
        return f"its header claims shape {shape} {dtype} ({declared} bytes) but the member holds {info.file_size} bytes"
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > _DEFLATE_MAX_RATIO * info.compress_size + 4096:
        return (f"it claims {info.file_size} bytes uncompressed from {info.compress_size} compressed, more than "
                "deflate can produce")
    return None


def read_npz(path: str | os.PathLike, keys: Sequence[str], what: str) -> dict[str, np.ndarray]:
    """The arrays `keys` of an npz file (no pickles), each read in full.

    Each array's declared shape is checked against the bytes its zip member holds before
    anything is allocated, and reading a whole member checks its zip CRC, so a truncated,
    bit-flipped or lying file fails here: `DataError` naming the file and the array (the
    record) that could not be read, or the arrays that are missing next to the ones found.
    """
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except NPZ_ERRORS as error:
        raise DataError(f"{path}: not a readable {what} npz file ({type(error).__name__}: {error})") from error
    with archive:
        members = {info.filename[:-4]: info for info in archive.infolist() if info.filename.endswith(".npy")}
        missing = [key for key in keys if key not in members]
        if missing:
            raise DataError(f"{path}: {what} npz lacks array(s) {missing}; found {sorted(members)}")
        arrays = {}
        for key in keys:
            try:
                problem = _declared_size_problem(archive, members[key])
                if problem is None:
                    with archive.open(members[key]) as handle:
                        arrays[key] = np.lib.format.read_array(handle, allow_pickle=False)
            except NPZ_ERRORS as error:
                problem = f"{type(error).__name__}: {error}"
            if problem is not None:
                raise DataError(f"{path}: array {key!r} is unreadable ({problem}); the file is corrupt")
    return arrays
