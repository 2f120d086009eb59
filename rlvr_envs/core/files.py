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
import math
import os
import re
import secrets
from pathlib import Path
from typing import Any, Callable, Iterator

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
    if not text.strip():
        raise DataError(f"{path}: {what} is empty, e.g. cut short by an interrupted run{hint}")
    return loads_json(text, str(path), what, remedy, whole_file=True)


def loads_json(text: str, where: str, what: str, remedy: str = "", whole_file: bool = False) -> Any:
    """`json.loads`, failing as `DataError` that names `where` (`FILE:LINE` of a JSON line, or a
    whole file, whose failing line is added); nesting too deep for the parser is refused the same way."""
    hint = f"; {remedy}" if remedy else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        line, why = (f":{error.lineno}", ", e.g. cut short by an interrupted run") if whole_file else ("", "")
        raise DataError(f"{where}{line}: {what} is not valid JSON (column {error.colno}: {error.msg}){why}"
                        f"{hint}") from None
    except RecursionError:
        raise DataError(f"{where}: {what} is nested too deeply to read (a damaged or hostile file){hint}") from None


#: JSON files a Hugging Face style checkpoint directory may hold (checked before a library reads them)
CHECKPOINT_JSON = ("config.json", "card.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "adapter_config.json")


def check_safetensors(path: str | os.PathLike, what: str, remedy: str = "") -> None:
    """Refuse a truncated, padded or hostile `.safetensors` file as `DataError` naming it, by its
    header alone (8-byte length, JSON header, data offsets that must cover the file exactly)."""
    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= length <= min(size - 8, 100 * 2**20):
            raise DataError(f"{path}: {what} is not a safetensors file or is cut short ({size:,} bytes, header "
                            f"length {length:,}){hint}")
        header = loads_json(handle.read(length).decode("utf-8", "replace"), str(path), f"{what}'s header", remedy)
    if not isinstance(header, dict):
        raise DataError(f"{path}: {what}'s header is not a JSON object{hint}")
    ends = [entry.get("data_offsets", [0, 0])[1] for key, entry in header.items()
            if key != "__metadata__" and isinstance(entry, dict) and isinstance(entry.get("data_offsets"), list)
            and len(entry["data_offsets"]) == 2]
    expected = 8 + length + max((e for e in ends if isinstance(e, int)), default=0)
    if expected != size:
        state = "cut short" if size < expected else "longer than its header says"
        raise DataError(f"{path}: {what} is {state} ({size:,} bytes, the header needs {expected:,}), e.g. an "
                        f"interrupted copy or download{hint}")


def check_checkpoint_dir(directory: str | os.PathLike, what: str, remedy: str = "") -> Path:
    """Check a saved model or tokenizer directory before a library loads it: every JSON file it
    holds parses and every `.safetensors` file is whole, else `DataError` naming the file."""
    directory = Path(directory)
    for name in CHECKPOINT_JSON:
        if (directory / name).is_file():
            read_json(directory / name, f"{what}'s {name}", remedy)
    for weights in sorted(directory.glob("*.safetensors")):
        check_safetensors(weights, f"{what}'s weights file", remedy)
    return directory


def check_model_source(spec: str | os.PathLike, what: str, remedy: str = "") -> None:
    """Before `from_pretrained(spec)`: a local directory is checked whole (`check_checkpoint_dir`),
    a path that names nothing or a file is refused naming it; a hub name is left to the hub."""
    text = str(spec)
    path = Path(text).expanduser()
    if path.is_dir():
        check_checkpoint_dir(path, what, remedy)
    elif path.exists():
        raise DataError(f"{text}: {what} must be a directory (as `save_pretrained` writes), not a file")
    elif text.startswith(("/", ".", "~")) or text.count("/") > 1:
        raise FileNotFoundError(f"no {what} at {text}: pass a directory written by `save_pretrained` "
                                "(or a hub name such as Qwen/Qwen2.5-0.5B, cached when HF_HUB_OFFLINE=1)")


def load_torch_file(path: str | os.PathLike, what: str, remedy: str = "") -> Any:
    """`torch.load(path, weights_only=True)` (tensors and plain containers only: a pickle that
    would run code is refused), failing as `DataError` that names the file and what to do."""
    import pickle

    import torch

    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "weights_only" in str(error) or "Unsupported global" in str(error):
            raise DataError(f"{path}: {what} holds objects other than tensors and plain values, refused unread "
                            f"(a foreign or hostile file){hint}") from None
        raise DataError(f"{path}: {what} is unreadable ({first[:200]}){hint}") from None
    except (RuntimeError, EOFError, ValueError, OSError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataError(f"{path}: {what} is unreadable or cut short ({first[:200]}){hint}") from None


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float (NaN, inf) as None: JSON has no NaN, and a log line
    holding one is unreadable to strict parsers (jq, JavaScript, `json.loads(..., parse_constant=...)`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy / torch scalars
        return strict_json(value.item())
    return value


def json_line(record: dict[str, Any]) -> str:
    """One strict-JSON log line (no NaN or inf: see `strict_json`), newline included."""
    return json.dumps(strict_json(record), allow_nan=False, default=float) + "\n"


def keep_log_until(path: str | os.PathLike, step: int, redone: Callable[[dict], bool] | None = None) -> None:
    """Before a resumed run appends to its JSON-lines log: drop the records of steps after the
    checkpoint's `step` (the run repeats those steps) and, at `step` itself, those `redone`
    says the resumed run writes again (e.g. an evaluation run at its start), so every step is
    logged once. Rewritten atomically; lines a kill cut short are dropped too."""
    path = Path(path)
    if not path.exists():
        return
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # the last line of a killed run, half written
            continue
        at = record.get("step", 0) if isinstance(record, dict) else 0
        if at < step or (at == step and not (redone and redone(record))):
            kept.append(line)
    if len(kept) != len(lines):
        with atomic_writer(path, "w") as handle:
            handle.write("".join(line + "\n" for line in kept))


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
