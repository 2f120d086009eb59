"""ByteSized32-State-Prediction files: the public JSONL (or its zip) and the game rules.

Layout under the data root (`data_dir=` or `$RLVR_WORLD_DATA`, default
`~/.cache/rlvr_world`)::

    bytesized32/test.jsonl | test.zip      official test set, 2,954 transitions
    bytesized32/train.jsonl | train.zip    the remaining crawled transitions
    bytesized32/rules_human_written/{object,action,score}_rules.json

`rlvr-world data bytesized32` downloads exactly these from the dataset authors' public
repository (cognitiveailab/GPT-simulator) and checks what it got.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from rlvr_envs.core.paths import data_root

ROW_KEYS = ("current_state", "action_state", "tick_state", "current_score_state", "next_score_state", "game",
            "state_id")
STATE_KEYS = ("objects", "max_UUID")
RULE_KINDS = ("object", "action", "score")
RULES_DIRNAME = "rules_human_written"
SOURCE = "https://raw.githubusercontent.com/cognitiveailab/GPT-simulator/main"
REMOTE_FILES = {
    "test.zip": "data/test.zip",
    "train.zip": "data/train.zip",
    **{f"{RULES_DIRNAME}/{kind}_rules.json": f"rules/human_written_rules/{kind}_rules.json" for kind in RULE_KINDS},
}
EXPECTED_ROWS = {"test": 2954}


def _missing(what: str, where: Path) -> FileNotFoundError:
    return FileNotFoundError(
        f"ByteSized32 {what} not found at {where}. Get it with `rlvr-world data bytesized32 --data-dir "
        f"{where.parent if where.suffix else where}` (online), or download data/test.zip (and train.zip) and "
        f"rules/human_written_rules/*.json from github.com/cognitiveailab/GPT-simulator into "
        f"<data_dir>/bytesized32/ and <data_dir>/bytesized32/{RULES_DIRNAME}/; then pass data_dir= or set "
        f"RLVR_WORLD_DATA."
    )


def split_file(data_dir: str | os.PathLike | None, split: str) -> Path:
    folder = data_root(data_dir) / "bytesized32"
    for candidate in (folder / f"{split}.jsonl", folder / f"{split}.zip"):
        if candidate.exists():
            return candidate
    raise _missing(f"split {split!r} ({split}.jsonl or {split}.zip)", folder / f"{split}.jsonl")


def _check_row(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}")
    for key in ("current_state", "tick_state"):
        absent = [k for k in STATE_KEYS if k not in row[key]]
        if absent:
            raise ValueError(f"{where}: {key} lacks {absent}")
    return row


def _parse_lines(lines: io.TextIOBase, name: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}:{number}: corrupt JSON line ({exc.msg} at column {exc.colno})") from None
        rows.append(_check_row(row, f"{name}:{number}"))
    return rows


def load_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All transitions of a `.jsonl` file or a `.zip` holding one; errors name file and line."""
    path = Path(path)
    if path.suffix == ".zip":
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise ValueError(f"{path}: not a valid zip file (re-download it)") from None
        with archive:
            members = [m for m in archive.namelist() if m.endswith(".jsonl") and not m.startswith("__MACOSX")]
            if len(members) != 1:
                raise ValueError(f"{path}: expected one .jsonl inside, found {members}")
            with archive.open(members[0]) as raw:
                return _parse_lines(io.TextIOWrapper(raw, encoding="utf-8"), f"{path}!{members[0]}")
    with open(path, encoding="utf-8") as handle:
        return _parse_lines(handle, str(path))


def load_rules(data_dir: str | os.PathLike | None) -> dict[str, dict[str, str]]:
    """{game: {"object": text, "action": text, "score": text}} from the human-written rules."""
    folder = data_root(data_dir) / "bytesized32" / RULES_DIRNAME
    per_kind = {}
    for kind in RULE_KINDS:
        path = folder / f"{kind}_rules.json"
        if not path.exists():
            raise _missing(f"{kind} rules", path)
        try:
            per_kind[kind] = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: corrupt JSON ({exc.msg} at line {exc.lineno})") from None
    games = set().union(*per_kind.values())
    return {game: {kind: per_kind[kind].get(game, "") for kind in RULE_KINDS} for game in sorted(games)}


# -- download command -------------------------------------------------------------------

def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None, help="data root (default: $RLVR_WORLD_DATA or ~/.cache/rlvr_world)")
    parser.add_argument("--no-train", action="store_true", help="skip the large train split")
    parser.add_argument("--source", default=SOURCE, help="base URL of a mirror with the same layout")


def run_data_command(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    folder = data_root(args.data_dir) / "bytesized32"
    (folder / RULES_DIRNAME).mkdir(parents=True, exist_ok=True)
    wanted = {k: v for k, v in REMOTE_FILES.items() if not (args.no_train and k == "train.zip")}
    for local, remote in tqdm(wanted.items(), desc="bytesized32", unit="file"):
        target = folder / local
        if target.exists():
            continue
        partial = target.with_suffix(target.suffix + ".part")
        urllib.request.urlretrieve(f"{args.source}/{remote}", partial)
        partial.replace(target)
    for split in ("test", "train"):
        path = folder / f"{split}.zip"
        if path.exists():
            rows = load_rows(path)
            expected = EXPECTED_ROWS.get(split)
            if expected is not None and len(rows) != expected:
                path.replace(path.with_suffix(".zip.bad"))
                raise SystemExit(f"{path}: {len(rows)} transitions, expected {expected}; moved it to "
                                 f"{path.name}.bad, retry the download")
            print(f"{split}: {len(rows)} transitions OK ({path})")
    rules = load_rules(args.data_dir)
    print(f"rules: {len(rules)} games OK ({folder / RULES_DIRNAME})")
    return 0
