"""WMA web world-model records (WebArena trajectories): where they live, how they are read.

The web-state task learns from WMA's world-model data (Chae et al., 2024): transitions
collected by agents on the WebArena sites, ~14.7k records; RLVR-World kept the ~7k whose
prompt and answer fit in 5,000 tokens and split them 99/1 (published as
`thuml/webarena-world-model-cot` on the Hugging Face hub, `train.parquet` and
`test.parquet`).

Layout under the data root (`data_dir=` or `$RLVR_WORLD_DATA`, default
`~/.cache/rlvr_world`)::

    wma/**/*.parquet | *.jsonl | *.json     any number of files, read together

A record needs the current tree, the action and the next tree. Two column layouts are read:
  * WMA's: `observation`, `current_action`, `next_state_acctree` (+ `url`, `objective`,
    `previous_actions`, `task_id`, `step_idx` when present);
  * RLVR-World's (`thuml/...`), which keeps `next_state_acctree` and the filled-in prompt
    (`question`, or the chat `prompt` column) instead of the separate fields: url,
    objective, previous action, observation and action are read back from the prompt's
    `URL: / OBJECTIVE: / PREVIOUS ACTION: / CURRENT OBSERVATION: / CURRENT ACTION:` lines.
Rows that also carry `new_items`, `deleted_items`, `updated_items` (WMA's own change
lists) keep them, so a task can score against the published targets (`target="dataset"`).
`.json` files may hold a list of records or `{"data": [...]}` (how WMA's scripts save).

Split: when the files name both a train and a test split (file or folder names starting
with `train` / `test`), those are used; otherwise the pooled records are split 99/1 by a
hash of their content (identical transitions always land on the same side).

**The previous action** is shown the way the source wrote it: WMA keeps
`previous_actions` as a list (starting with "None") and its scripts fill the prompt's
`{previous_action}` with that list as Python prints it (`['None', 'click [12] ...']`),
so a list is rendered that way; a record read back from a filled-in prompt keeps that
prompt's text exactly, so `prompt=<RLVR-World's template file>` reproduces their prompt.

Errors are `rlvr_envs.core.errors.DataError`s naming the file and the row (0-based for
parquet and JSON lists, 1-based line for JSONL): unreadable parquet files or pages, text
that is not UTF-8, corrupt JSON, missing or mistyped columns. `on_corrupt="skip"` drops
such rows (or the rest of a file whose page cannot be read) instead and reports how many.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_envs.core.arguments import output_dir
from rlvr_envs.core.errors import DataError, DownloadError
from rlvr_envs.core.files import loads_json, read_json
from rlvr_envs.core.paths import data_root

SUBDIR = "wma"
PATTERNS = ("*.parquet", "*.jsonl", "*.json")
DEFAULT_REPO = "thuml/webarena-world-model-cot"
TEST_SHARE = 100  #: one record in TEST_SHARE goes to the test split (99/1) when files do not say
WMA_FIELDS = ("observation", "current_action", "next_state_acctree")
SECTION_COLUMNS = {"new": "new_items", "deleted": "deleted_items", "updated": "updated_items"}
_COLUMNS = ("url", "objective", "previous_actions", "previous_action", "current_action", "observation",
            "next_state_acctree", "question", "prompt", "task_id", "step_idx", *SECTION_COLUMNS.values())
_PROMPT_FIELDS = re.compile(
    r"URL: (?P<url>[^\n]*)\n\s*OBJECTIVE: (?P<objective>.*?)\n\s*PREVIOUS ACTION: (?P<previous_action>.*?)\n"
    r"\s*CURRENT OBSERVATION: ?\n?(?P<observation>.*?)\n\s*CURRENT ACTION: (?P<current_action>[^\n]*)", re.DOTALL)


@dataclass(frozen=True)
class WmaRecord:
    """One web transition in WMA's terms (trees as WebArena text)."""

    uid: str
    url: str
    objective: str
    previous_actions: tuple[str, ...]
    current_action: str
    observation: str
    next_state_acctree: str
    split: str = "train"
    #: WMA's own change lists (section -> lines) when the row carries them
    dataset_sections: dict[str, list[str]] | None = field(default=None, compare=False)
    #: the previous-action field exactly as the source wrote it (a filled-in prompt, or a
    #: single action string); None: render `previous_actions` as WMA does
    previous_action_text: str | None = field(default=None, compare=False)

    @property
    def previous_action(self) -> str:
        """What the prompt shows as the previous action (see the module docstring): the
        source's own text when it had one, else the list as WMA's scripts print it."""
        if self.previous_action_text is not None:
            return self.previous_action_text
        return format_previous_actions(self.previous_actions)


def format_previous_actions(actions) -> str:
    """The previous actions as WMA's prompts show them: the Python list, printed
    (`str(["None", "click [5] ..."])`), which is what `str.format` makes of WMA's
    `previous_actions` column."""
    return str(list(actions))


def _actions_from_text(text: str) -> tuple[str, ...]:
    """The actions in a previous-action field: a printed list of strings (WMA's form) is
    read back (literals only, never evaluated), anything else is one action."""
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]") and len(stripped) <= 100_000:
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    return (text,)


def folder(data_dir: str | os.PathLike | None = None) -> Path:
    return data_root(data_dir) / SUBDIR


def missing_message(where: Path) -> str:
    return (f"WMA world-model data not found under {where} (no .parquet/.jsonl/.json files). Get it with "
            f"`rlvr-world data wma --data-dir {where.parent}` (online; downloads {DEFAULT_REPO} from the Hugging Face "
            f"hub), or put WMA's parquet/JSONL files (columns observation, current_action, next_state_acctree, "
            f"...) there yourself; then pass data_dir= or set RLVR_WORLD_DATA.")


def data_files(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The record files under `<data root>/wma/` (sorted), or FileNotFoundError saying what to get."""
    where = folder(data_dir)
    files = sorted({p for pattern in PATTERNS for p in where.rglob(pattern)
                    if p.is_file() and not any(part.startswith(".") for part in p.relative_to(where).parts)})
    if not files:
        raise FileNotFoundError(missing_message(where))
    return files


def _file_split(path: Path, root: Path) -> str | None:
    for part in reversed(path.relative_to(root).with_suffix("").parts):
        lowered = part.lower()
        if lowered.startswith("train"):
            return "train"
        if lowered.startswith(("test", "val")):
            return "test"
    return None


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, shortened (pyarrow's span several lines)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _decode_utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {exc.start + 1}); "
                        f"WMA files are UTF-8, re-export or re-download the file") from None


def _raw_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, row) for every row of a file; `where` is `file row N` (0-based) or `file:LINE`.

    A row that cannot be read is yielded as a `DataError` (so `on_corrupt="skip"` can
    count it); a file (or parquet page) that cannot be read raises `DataError`.
    """
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            handle = pq.ParquetFile(path)
            columns = [c for c in handle.schema_arrow.names if c in _COLUMNS]
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise DataError(f"{path}: not a readable parquet file ({_one_line(exc)}); re-download it") from None
        row = 0
        for group in range(handle.metadata.num_row_groups):  # row groups keep a damaged page local
            batches = handle.iter_batches(batch_size=256, row_groups=[group], columns=columns)
            while True:
                try:
                    batch = next(batches, None)
                    records = batch.to_pylist() if batch is not None else None
                except Exception as exc:  # a damaged page: name where reading stopped
                    raise DataError(f"{path} row {row}: unreadable parquet data from this row on "
                                    f"({type(exc).__name__}: {_one_line(exc)}); re-download the file") from None
                if records is None:
                    break
                for record in records:
                    yield f"{path} row {row}", record
                    row += 1
    elif path.suffix == ".jsonl":
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                where = f"{path}:{number}"
                try:
                    line = _decode_utf8(raw, where)
                except DataError as exc:
                    yield where, exc
                    continue
                if not line.strip():
                    continue
                try:
                    yield where, loads_json(line, where, "the JSON line")
                except DataError as exc:
                    yield where, exc
    else:
        data = read_json(path, "the WMA records file", "WMA files are UTF-8 JSON: re-export or re-download it")
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a list of records or {{'data': [...]}}, got {type(data).__name__}")
        for number, record in enumerate(data):
            yield f"{path} row {number}", record


def fields_from_prompt(text: str) -> dict[str, str] | None:
    """url, objective, previous_action, observation, current_action read back from a filled-in
    RLVR-World prompt (its last `URL:` ... `CURRENT ACTION:` block), or None."""
    start = text.rfind("\nURL: ") + 1  # 0 when the prompt starts with the block (or lacks it)
    match = _PROMPT_FIELDS.match(text, start)
    if match is None:
        return None
    found = match.groupdict()
    return {k: v.strip("\n") if k == "observation" else v.strip() for k, v in found.items()}


def _text(value: Any, name: str, where: str) -> str:
    if value is None:
        raise DataError(f"{where}: column {name!r} is empty")
    if not isinstance(value, str):
        raise DataError(f"{where}: column {name!r} should be text, got {type(value).__name__}")
    return value


def _prompt_text(row: dict[str, Any]) -> str | None:
    if isinstance(row.get("question"), str):
        return row["question"]
    messages = row.get("prompt")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        content = messages[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def record_from_row(row: Any, where: str, split: str | None) -> WmaRecord:
    """Normalise one row (either column layout); `DataError` names `where` and the problem."""
    if isinstance(row, Exception):
        raise row if isinstance(row, DataError) else DataError(f"{where}: {row}")
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a record (JSON object), got {type(row).__name__}")
    fields = {k: row.get(k) for k in ("url", "objective", "current_action", "observation")}
    previous: Any = row.get("previous_actions", row.get("previous_action"))
    prompt = _prompt_text(row)
    recovered = fields_from_prompt(prompt) if prompt else None
    if fields["observation"] is None or fields["current_action"] is None:
        if recovered is None:
            missing = [k for k in WMA_FIELDS if row.get(k) is None]
            raise DataError(f"{where}: missing column(s) {missing} and no RLVR-World prompt (question/prompt) to "
                            f"read them from; columns present: {sorted(k for k, v in row.items() if v is not None)}")
        fields = {k: fields[k] if fields[k] is not None else recovered[k] for k in fields}
    observation = _text(fields["observation"], "observation", where)
    following = _text(row.get("next_state_acctree"), "next_state_acctree", where)
    action = _text(fields["current_action"], "current_action", where)
    if not observation.strip() or not following.strip():
        raise DataError(f"{where}: empty accessibility tree")
    shown: str | None = None  # the previous-action field as the source wrote it
    if previous is None and recovered is not None:
        previous = _actions_from_text(recovered["previous_action"])
    if previous is None:
        previous_actions: tuple[str, ...] = ()
        shown = "None"
    elif isinstance(previous, str):
        previous_actions, shown = (previous,), previous
    elif isinstance(previous, (list, tuple)) and all(isinstance(p, str) for p in previous):
        previous_actions = tuple(previous)
    else:
        raise DataError(f"{where}: previous_actions should be text or a list of text, got {previous!r:.80}")
    if recovered is not None:  # a filled-in prompt shows the field exactly as the model saw it
        shown = recovered["previous_action"]
    sections = None
    if all(isinstance(row.get(c), str) for c in SECTION_COLUMNS.values()):
        sections = {k: [line for line in row[c].splitlines() if line.strip()] for k, c in SECTION_COLUMNS.items()}
    if split is None:
        digest = hashlib.sha1("\x00".join((observation, action, following)).encode("utf-8")).digest()
        split = "test" if int.from_bytes(digest[:8], "big") % TEST_SHARE == 0 else "train"
    task_id, step = row.get("task_id"), row.get("step_idx")
    uid = f"wma/{task_id}/{step}" if task_id is not None and step is not None else f"wma/{where}"
    return WmaRecord(uid=uid, url=str(fields["url"] or ""), objective=str(fields["objective"] or ""),
                     previous_actions=previous_actions, current_action=action, observation=observation,
                     next_state_acctree=following, split=split, dataset_sections=sections,
                     previous_action_text=shown)


def load_records(data_dir: str | os.PathLike | None = None, split: str = "all",
                 on_corrupt: str = "raise") -> list[WmaRecord]:
    """All records of `split` ("train", "test" or "all"), in file order.

    `on_corrupt="raise"` stops at the first bad row with a `DataError` naming file and
    row; `"skip"` drops bad rows (and the rest of a file that cannot be read further) with
    one warning that counts them and names the first.
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt must be 'raise' or 'skip', got {on_corrupt!r}")
    root = folder(data_dir)
    files = data_files(data_dir)
    hints = {path: _file_split(path, root) for path in files}
    use_hints = {"train", "test"} <= set(hints.values())
    records, skipped, unreadable = [], [], []
    seen: dict[str, int] = {}
    for path in files:
        rows = _raw_rows(path)
        while True:
            try:
                where, row = next(rows)
            except StopIteration:
                break
            except DataError as exc:  # the file, or the rest of it, cannot be read
                if on_corrupt == "raise":
                    raise
                unreadable.append(str(exc))
                break
            try:
                record = record_from_row(row, where, hints[path] if use_hints else None)
            except DataError as exc:
                if on_corrupt == "raise":
                    raise
                skipped.append(str(exc))
                continue
            if record.uid in seen:  # WMA ids repeat across agent runs: keep uids unique
                seen[record.uid] += 1
                record = dataclasses.replace(record, uid=f"{record.uid}#{seen[record.uid]}")
            else:
                seen[record.uid] = 0
            if split == "all" or record.split == split:
                records.append(record)
    if skipped or unreadable:
        first = (skipped + unreadable)[0]
        parts = f" and {len(unreadable)} unreadable file part(s)" if unreadable else ""
        warnings.warn(f"skipped {len(skipped)} corrupt WMA row(s){parts}; first: {first}", stacklevel=2)
    return records


def check_file(path: Path) -> str | None:
    """Why `path` is not a loadable WMA file, or None when it is, reading little of it:
    a parquet file's footer and columns; the first record of a JSONL file; the first
    record of a JSON file (files over 64 MB only have their beginning checked for the
    `next_state_acctree` key)."""
    required = "next_state_acctree"
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            names = set(pq.ParquetFile(path).schema_arrow.names)
            if required not in names:
                return f"{path}: no {required!r} column (columns: {sorted(names)[:8]})"
            if not ({"observation", "current_action"} <= names or names & {"question", "prompt"}):
                return f"{path}: neither observation/current_action nor an RLVR-World prompt column"
            return None
        if path.suffix == ".json" and path.stat().st_size > 64 << 20:
            with open(path, "rb") as handle:
                head = handle.read(1 << 20)
            return None if f'"{required}"'.encode() in head else f"{path}: no {required!r} key in its first megabyte"
        for where, row in _raw_rows(path):
            record_from_row(row, where, "train")
            return None
        return f"{path}: no records"
    except DataError as exc:
        return str(exc)
    except Exception as exc:  # anything else a damaged file raises
        return f"{path}: {type(exc).__name__}: {_one_line(exc)}"


def availability(data_dir: str | os.PathLike | None = None) -> tuple[bool, str]:
    """(True, what was found) when at least one WMA file under the data root loads (see
    `check_file`), else (False, what to do, naming the first bad file)."""
    try:
        files = data_files(data_dir)
    except FileNotFoundError:
        return False, f"run `rlvr-world data wma` (no WMA files under {folder(data_dir)})"
    problems = []
    for path in files:
        reason = check_file(path)
        if reason is None:
            return True, f"WMA records in {path.parent}"
        problems.append(reason)
    return False, (f"none of the {len(files)} file(s) under {folder(data_dir)} is a loadable WMA file "
                   f"(first: {problems[0]}); run `rlvr-world data wma` or fix the files")


# -- download command -----------------------------------------------------------------------

def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=output_dir, default=None,
                        help="data root (None: $RLVR_WORLD_DATA or ~/.cache/rlvr_world)")
    parser.add_argument("--repo", default=DEFAULT_REPO, help="Hugging Face dataset id")
    parser.add_argument("--revision", default=None, help="dataset revision (branch, tag or commit)")


def run_data_command(args: argparse.Namespace) -> int:
    """Download the records into <data root>/wma/ and check every row parses.

    Raises `DownloadError` (one line: what failed and what to do) when the hub cannot be
    reached or HF_HUB_OFFLINE forbids it.
    """
    from rlvr_envs.web.acctree import parse_tree

    target = folder(args.data_dir)
    by_hand = (f"or copy WMA's parquet/JSONL files (e.g. train.parquet and test.parquet of {args.repo}) into "
               f"{target} yourself")
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        raise DownloadError(f"HF_HUB_OFFLINE is set, so {args.repo} cannot be downloaded: unset it and rerun "
                            f"`rlvr-world data wma`, {by_hand}")
    from huggingface_hub import snapshot_download

    target.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(repo_id=args.repo, repo_type="dataset", revision=args.revision, local_dir=str(target),
                          allow_patterns=["*.parquet", "*.jsonl", "*.json", "README.md"])
    except Exception as exc:  # no network, a missing repo or revision, an authentication error
        reason = _one_line(exc)
        raise DownloadError(f"could not download {args.repo} from the Hugging Face hub ({type(exc).__name__}: "
                            f"{reason}); check the network and the repository name and rerun, {by_hand}") from None
    records = load_records(args.data_dir, split="all", on_corrupt="skip")
    if not records:
        raise DataError(f"{target}: no usable records were downloaded from {args.repo}")
    warned = sum(bool(parse_tree(r.observation).warnings or parse_tree(r.next_state_acctree).warnings)
                 for r in records)
    counts = {s: sum(r.split == s for r in records) for s in ("train", "test")}
    with_targets = sum(r.dataset_sections is not None for r in records)
    print(f"{'split':<8}{'records':>10}\n{'train':<8}{counts['train']:>10}\n{'test':<8}{counts['test']:>10}")
    print(f"{with_targets} records carry WMA's own change lists; {warned} have tree lines that parse with warnings")
    print(f"OK: {target}")
    return 0
