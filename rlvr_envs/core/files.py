"""Files that survive interruption and say what is wrong with them: atomic writes, JSON
that names its file when it is broken, and a lock that keeps two runs out of one folder.

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
import os
import re
import secrets
from pathlib import Path
from typing import Any, Iterator

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
    """Parse a JSON file; a broken one raises `DataError` as `PATH:LINE: WHAT is ...; REMEDY`."""
    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(f"{path}:{line}: {what} is not UTF-8 text (byte 0x{data[error.start]:02x}){hint}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        if not text.strip():
            raise DataError(f"{path}: {what} is empty, e.g. cut short by an interrupted run{hint}") from None
        raise DataError(f"{path}:{error.lineno}: {what} is not valid JSON (column {error.colno}: {error.msg}), "
                        f"e.g. cut short by an interrupted run{hint}") from None
    except RecursionError:
        raise DataError(f"{path}: {what} is nested too deeply to read{hint}") from None


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
