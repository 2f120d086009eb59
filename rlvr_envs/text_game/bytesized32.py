"""ByteSized32-State-Prediction files: the public JSONL (or its zip) and the game rules.

Layout under the data root (`data_dir=` or `$RLVR_WORLD_DATA`, default
`~/.cache/rlvr_world`)::

    bytesized32/test.jsonl | test.zip      official test set, 2,954 transitions
    bytesized32/train.jsonl | train.zip    the remaining crawled transitions
    bytesized32/rules_human_written/{object,action,score}_rules.json

`rlvr-world data bytesized32 --data-dir <data root>` downloads exactly these from the
dataset authors' public repository (cognitiveailab/GPT-simulator) and checks what it got;
when the download fails (offline, a blocked host) it ends in one `DownloadError` line that
says what to do instead.

Every record is checked before it is used: a row of the wrong shape (not an object, a
state without `objects`, an object without an integer `uuid`, non-UTF-8 bytes, ...) or a
rules file that is not a JSON object of game name -> text raises
`rlvr_envs.core.errors.DataError` naming the file, the line and what was expected there.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from rlvr_envs.core.arguments import output_dir
from rlvr_envs.core.errors import DataError, DownloadError
from rlvr_envs.core.files import loads_json, read_json
from rlvr_envs.core.paths import data_root

ROW_KEYS = ("current_state", "action_state", "tick_state", "current_score_state", "next_score_state", "game",
            "state_id")
STATE_KEYS = ("objects", "max_UUID")
#: what every object of a state carries ("type" is checked only where present)
OBJECT_KEYS = ("uuid", "name", "properties", "contains")
SCORE_KEYS = ("score", "gameOver", "gameWon")
RULE_KINDS = ("object", "action", "score")
RULES_DIRNAME = "rules_human_written"
SOURCE = "https://raw.githubusercontent.com/cognitiveailab/GPT-simulator/main"
REMOTE_FILES = {
    "test.zip": "data/test.zip",
    "train.zip": "data/train.zip",
    **{f"{RULES_DIRNAME}/{kind}_rules.json": f"rules/human_written_rules/{kind}_rules.json" for kind in RULE_KINDS},
}
EXPECTED_ROWS = {"test": 2954}
_JSON_TYPES = {dict: "a JSON object", list: "a JSON array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def get_command(root: Path) -> str:
    """The command that fetches the data into the data root `root`."""
    return f"rlvr-world data bytesized32 --data-dir {root}"


def _missing(what: str, where: Path, root: Path) -> FileNotFoundError:
    """A missing file: what to run (with `root`, the data root, as --data-dir) or fetch by hand."""
    return FileNotFoundError(
        f"ByteSized32 {what} not found at {where}. Get it with `{get_command(root)}` (online), or download "
        f"data/test.zip (and train.zip) and rules/human_written_rules/*.json from "
        f"github.com/cognitiveailab/GPT-simulator into {root / 'bytesized32'}/ and "
        f"{root / 'bytesized32' / RULES_DIRNAME}/; then pass data_dir={str(root)!r} or set RLVR_WORLD_DATA."
    )


def split_file(data_dir: str | os.PathLike | None, split: str) -> Path:
    root = data_root(data_dir)
    folder = root / "bytesized32"
    for candidate in (folder / f"{split}.jsonl", folder / f"{split}.zip"):
        if candidate.exists():
            return candidate
    raise _missing(f"split {split!r} ({split}.jsonl or {split}.zip)", folder / f"{split}.jsonl", root)


# -- row checks: every record is checked before it is used, so a bad one is named -------------

def _check_object(obj: Any, where: str) -> int:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected an object {{uuid, name, type, properties, contains}}, got {_kind(obj)}")
    missing = [key for key in OBJECT_KEYS if key not in obj]
    if missing:
        raise DataError(f"{where}: object lacks {missing} (each object needs {list(OBJECT_KEYS)})")
    uuid = obj["uuid"]
    if isinstance(uuid, bool) or not isinstance(uuid, int):
        raise DataError(f"{where}: uuid must be an integer, got {_kind(uuid)} {uuid!r}")
    for key, kind in (("name", str), ("properties", dict), ("contains", list)):
        if not isinstance(obj[key], kind):
            raise DataError(f"{where}: {key} must be {_JSON_TYPES[kind]}, got {_kind(obj[key])}")
    if "type" in obj and not isinstance(obj["type"], str):
        raise DataError(f"{where}: type must be a string, got {_kind(obj['type'])}")
    return uuid


def _check_state(state: Any, where: str) -> None:
    if not isinstance(state, dict):
        raise DataError(f"{where}: expected a state object {{objects, max_UUID, ...}}, got {_kind(state)}")
    absent = [key for key in STATE_KEYS if key not in state]
    if absent:
        raise DataError(f"{where}: state lacks {absent}")
    if not isinstance(state["objects"], list):
        raise DataError(f"{where}.objects: expected a list of objects, got {_kind(state['objects'])}")
    max_uuid = state["max_UUID"]
    if isinstance(max_uuid, bool) or not isinstance(max_uuid, int):
        raise DataError(f"{where}.max_UUID: expected an integer, got {_kind(max_uuid)} {max_uuid!r}")
    for key in ("lastAction", "taskDesc"):
        if key in state and not isinstance(state[key], str):
            raise DataError(f"{where}.{key}: expected a string, got {_kind(state[key])}")
    seen: set[int] = set()
    for position, obj in enumerate(state["objects"]):
        uuid = _check_object(obj, f"{where}.objects[{position}]")
        if uuid in seen:
            raise DataError(f"{where}.objects[{position}]: uuid {uuid} appears twice in the state")
        seen.add(uuid)


def _check_score(score: Any, where: str) -> None:
    if not isinstance(score, dict):
        raise DataError(f"{where}: expected a score object {{score, gameOver, gameWon}}, got {_kind(score)}")
    absent = [key for key in SCORE_KEYS if key not in score]
    if absent:
        raise DataError(f"{where}: score lacks {absent}")
    for key in SCORE_KEYS:
        if isinstance(score[key], (dict, list)):
            raise DataError(f"{where}.{key}: expected a number or boolean, got {_kind(score[key])}")


def _check_row(row: Any, where: str) -> dict[str, Any]:
    """`row` if it is a ByteSized32 transition; else a `DataError` naming `where` and the field."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object (one transition with keys {list(ROW_KEYS)}), "
                        f"got {_kind(row)}")
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise DataError(f"{where}: missing key(s) {missing} (a transition has {list(ROW_KEYS)})")
    for key in ("current_state", "tick_state"):
        _check_state(row[key], f"{where}: {key}")
    if not isinstance(row["action_state"], dict):
        raise DataError(f"{where}: action_state: expected a state object, got {_kind(row['action_state'])}")
    for key in ("current_score_state", "next_score_state"):
        _check_score(row[key], f"{where}: {key}")
    if not isinstance(row["game"], str):
        raise DataError(f"{where}: game: expected a string (the game's name), got {_kind(row['game'])}")
    if isinstance(row["state_id"], (bool, dict, list)) or row["state_id"] is None:
        raise DataError(f"{where}: state_id: expected a number or string, got {_kind(row['state_id'])}")
    return row


def _parse_line(raw: bytes, where: str) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r} at offset {exc.start}); "
                        f"the file is damaged, re-download it") from None
    row = loads_json(line, where, "the JSON line", "the file is damaged, re-download it "
                     "(`rlvr-world data bytesized32`)")
    return _check_row(row, where)


@contextlib.contextmanager
def _open_lines(path: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """(name for messages, binary stream) of a `.jsonl` file or the one `.jsonl` in a `.zip`."""
    if path.suffix != ".zip":
        with open(path, "rb") as handle:
            yield str(path), handle
        return
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"{path}: not a valid zip file ({exc}); re-download it") from None
    with archive:
        members = [m for m in archive.namelist() if m.endswith(".jsonl") and not m.startswith("__MACOSX")]
        if len(members) != 1:
            raise DataError(f"{path}: expected one .jsonl inside, found {members}")
        with archive.open(members[0]) as raw:
            yield f"{path}!{members[0]}", raw


def load_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All transitions of a `.jsonl` file or a `.zip` holding one; a bad record raises
    `DataError` naming the file, the line and what was expected."""
    path = Path(path)
    rows = []
    with _open_lines(path) as (name, lines):
        try:
            for number, raw in enumerate(lines, start=1):
                if raw.strip():
                    rows.append(_parse_line(raw, f"{name}:{number}"))
        except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
            raise DataError(f"{name}: damaged archive ({exc}); re-download it") from None
    return rows


def check_file(path: str | os.PathLike) -> int:
    """Check that a split file is loadable without parsing all of it: it opens (a zip's
    directory, at its end, is intact), every byte reads back (a zip member's checksum is
    verified) and its first and last records are valid transitions. Returns the line count."""
    path = Path(path)
    first = last = None
    count = 0
    with _open_lines(path) as (name, lines):
        try:
            for number, raw in enumerate(lines, start=1):
                if raw.strip():
                    if first is None:
                        first = (raw, number)
                    last = (raw, number)
                    count += 1
        except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
            raise DataError(f"{name}: damaged archive ({exc}); re-download it") from None
    if first is None:
        raise DataError(f"{name}: no transitions in the file")
    for raw, number in (first, last):
        _parse_line(raw, f"{name}:{number}")
    return count


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def load_rules(data_dir: str | os.PathLike | None) -> dict[str, dict[str, str]]:
    """{game: {"object": text, "action": text, "score": text}} from the human-written rules;
    a file that is not a JSON object of game name -> rule text raises `DataError` naming it."""
    root = data_root(data_dir)
    folder = root / "bytesized32" / RULES_DIRNAME
    per_kind = {}
    for kind in RULE_KINDS:
        path = folder / f"{kind}_rules.json"
        if not path.exists():
            raise _missing(f"{kind} rules", path, root)
        rules = read_json(path, f"the {kind} rules file", "re-download it")
        if not isinstance(rules, dict):
            raise DataError(f"{path}: expected a JSON object of game name -> {kind} rule text, got {_kind(rules)}")
        for game, rule in rules.items():
            if not isinstance(rule, str):
                line = _line_of(path.read_text(encoding="utf-8"), json.dumps(game))
                raise DataError(f"{path}{f':{line}' if line else ''}: the {kind} rules of game {game!r} must be "
                                f"text, got {_kind(rule)}")
        per_kind[kind] = rules
    games = set().union(*per_kind.values())
    return {game: {kind: per_kind[kind].get(game, "") for kind in RULE_KINDS} for game in sorted(games)}


# -- download command -------------------------------------------------------------------

def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=output_dir, default=None,
                        help="data root (None: $RLVR_WORLD_DATA or ~/.cache/rlvr_world)")
    parser.add_argument("--no-train", action="store_true", help="skip the large train split")
    parser.add_argument("--source", default=SOURCE, help="base URL of a mirror with the same layout")


def _fetch(url: str, target: Path, folder: Path) -> None:
    """Download `url` to `target` (via a .part file); a failure is one `DownloadError` line."""
    partial = target.with_suffix(target.suffix + ".part")
    try:
        urllib.request.urlretrieve(url, partial)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(
            f"could not download {url} ({reason}). Check the network or pass --source with a mirror of the same "
            f"layout, or copy data/test.zip (and train.zip) and rules/human_written_rules/*.json from "
            f"github.com/cognitiveailab/GPT-simulator into {folder}/ and {folder / RULES_DIRNAME}/ by hand"
        ) from None
    partial.replace(target)


def run_data_command(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    folder = data_root(args.data_dir) / "bytesized32"
    (folder / RULES_DIRNAME).mkdir(parents=True, exist_ok=True)
    wanted = {k: v for k, v in REMOTE_FILES.items() if not (args.no_train and k == "train.zip")}
    # the progress bar only on a terminal: a log or a failing download keeps stderr to one line
    with tqdm(wanted.items(), desc="bytesized32", unit="file", disable=None) as progress:
        for local, remote in progress:
            target = folder / local
            if not target.exists():
                _fetch(f"{args.source.rstrip('/')}/{remote}", target, folder)
    for split in ("test", "train"):
        path = folder / f"{split}.zip"
        if path.exists():
            try:
                rows = load_rows(path)
                expected = EXPECTED_ROWS.get(split)
                if expected is not None and len(rows) != expected:
                    raise DataError(f"{path}: {len(rows)} transitions, expected {expected}")
            except DataError as exc:
                path.replace(path.with_suffix(".zip.bad"))
                raise DataError(f"{exc}; moved it to {path.name}.bad, retry the download") from None
            print(f"{split}: {len(rows)} transitions OK ({path})")
    rules = load_rules(args.data_dir)
    print(f"rules: {len(rules)} games OK ({folder / RULES_DIRNAME})")
    return 0
