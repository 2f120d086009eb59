"""File helpers of the video data modules: atomic writes, JSON that names its file when it
is broken, strict episode file names, and a lock that keeps two runs out of one folder.

Atomic writes go to a hidden temporary file next to the target (`.NAME.PID.RANDOM.tmp`,
created exclusively, so two writers never share one) and are renamed over the target with
`os.replace`: a reader sees the old file or the new one, never half of one, even when the
writer is killed. `remove_stale_temporaries` clears what killed writers left behind; call
it only while holding the folder's `OutputLock`.

`OutputLock` is an exclusive `flock` on `FOLDER/.rlvr-world.lock`. The kernel releases it
when the last process holding the open file dies, so a crashed run never leaves a lock
that needs deleting by hand (a later run takes it over), and worker processes forked from
the holder keep it held for as long as any of them lives. The file records the holder's
pid, command, start time and worker pids, for the message that refuses a second run and
for anyone (tests, a person) who wants to see who is writing. The file is never deleted:
deleting a flock file while others wait on it lets two runs lock different files.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import re
import secrets
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from rlvr_envs.core.errors import DataError

try:  # POSIX; elsewhere the lock falls back to a pid check
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".rlvr-world.lock"
_TEMPORARY = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$", re.ASCII)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb", durable: bool = False) -> Iterator[Any]:
    """Open a temporary file next to `path`; on success rename it over `path`, else delete it.

    `durable=True` also fsyncs the data before the rename (metadata files: survive a power
    cut, not only a killed process).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies, unlike mkstemp
    try:
        with os.fdopen(descriptor, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_json_atomic(path: str | os.PathLike, data: Any, indent: int | None = 2) -> Path:
    """Write `data` as JSON atomically and durably (see `atomic_writer`)."""
    with atomic_writer(path, "w", durable=True) as handle:
        handle.write(json.dumps(data, indent=indent) + "\n")
    return Path(path)


def read_json(path: str | os.PathLike, what: str, remedy: str = "") -> Any:
    """Parse a JSON file; a broken one raises `DataError` naming the file, line and column."""
    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: {what} is not UTF-8 text (byte {error.start}){hint}") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        state = "empty" if not text.strip() else f"not valid JSON at line {error.lineno} column {error.colno} ({error.msg})"
        raise DataError(f"{path}: {what} is {state}, e.g. cut short by an interrupted run{hint}") from error


def remove_stale_temporaries(folder: str | os.PathLike) -> int:
    """Delete the temporary files `atomic_writer` leaves when its process is killed; returns how many."""
    folder = Path(folder)
    removed = 0
    if folder.is_dir():
        for path in folder.iterdir():
            if _TEMPORARY.match(path.name) and path.is_file():
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
    return removed


def episode_number(name: str, pattern: re.Pattern[str]) -> int | None:
    """The episode number in a file name when it matches `pattern` exactly (ASCII digits only), else None.

    `str.isdigit` and `int` accept other scripts' digits ('²', '٣'), so a file named
    `episode_².npz` would pass `isdigit` and then crash `int`; `pattern` must use [0-9].
    """
    match = pattern.fullmatch(name)
    return int(match.group(1)) if match else None


class OutputInUse(DataError):
    """Another live run holds the output folder's lock."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """Exclusive lock on an output folder for one run (see the module docstring).

    Use as a context manager; `acquire` raises `OutputInUse` naming the holder when a live
    run (or a worker it started) holds it, and takes over a lock left by a dead one.
    """

    def __init__(self, folder: str | os.PathLike, command: str):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.command = command
        self.info: dict[str, Any] = {}
        self._descriptor: int | None = None

    def holder(self) -> dict[str, Any]:
        """What the lock file says about its last holder ({} when unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _refuse(self) -> OutputInUse:
        holder = self.holder()
        pid = holder.get("pid", "?")
        workers = holder.get("workers") or []
        who = f"pid {pid}" + (f" or its workers (pids {', '.join(map(str, workers))})" if workers else "")
        since = f" since {holder['started']}" if holder.get("started") else ""
        return OutputInUse(
            f"{self.folder} is being written by another run ({who}: `{holder.get('command', '?')}`{since}); "
            f"wait for it to finish or stop it, then rerun (lock file {self.path})"
        )

    def acquire(self) -> "OutputLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        if fcntl is not None:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                raise self._refuse() from None
        else:  # pragma: no cover - no flock: trust a live pid in the file
            holder = self.holder()
            pids = [holder.get("pid"), *(holder.get("workers") or [])]
            if any(isinstance(p, int) and p != os.getpid() and _alive(p) for p in pids):
                os.close(descriptor)
                raise self._refuse()
        self._descriptor = descriptor
        self.info = {"pid": os.getpid(), "command": self.command, "workers": [],
                     "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
        self._write()
        return self

    def update(self, **fields: Any) -> None:
        """Record more about this run (e.g. `workers=[pids]`) in the lock file."""
        self.info.update(fields)
        self._write()

    def _write(self) -> None:
        if self._descriptor is None:
            raise RuntimeError(f"{self.path}: lock not held")
        data = (json.dumps(self.info) + "\n").encode()
        os.ftruncate(self._descriptor, 0)
        os.lseek(self._descriptor, 0, os.SEEK_SET)
        os.write(self._descriptor, data)

    def release(self) -> None:
        if self._descriptor is not None:
            with contextlib.suppress(OSError):
                self.info.update(workers=[], finished=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
                self._write()
            os.close(self._descriptor)  # closing drops the flock (workers' copies are gone by now)
            self._descriptor = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()


NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, MemoryError)
_DEFLATE_MAX_RATIO = 1100  # deflate cannot expand data more than ~1032x


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
