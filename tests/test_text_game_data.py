"""ByteSized32 files: every bad record or rules file is a `DataError` naming the file and the
line, the missing-data hint names the right --data-dir, an offline download ends in one
line, and `availability()` means loadable (issue 7).

Rows are generated MiniTextWorld transitions (the ByteSized32 schema), so this runs with no
external data.
"""

from __future__ import annotations

import copy
import json
import re
import zipfile
from pathlib import Path

import pytest

from rlvr_envs.core.errors import DataError
from rlvr_envs.text_game import bytesized32
from rlvr_envs.text_game import mini_text_world as simulator
from rlvr_envs.text_game.task import ByteSized32Task


@pytest.fixture(scope="module")
def good_row():
    return simulator.generate_row(simulator.DIFFICULTIES["easy"], 1, 0)


def write_rules(root: Path, rules: dict | None = None) -> None:
    rules = rules or simulator.all_rules()
    folder = root / "bytesized32" / bytesized32.RULES_DIRNAME
    folder.mkdir(parents=True, exist_ok=True)
    for kind in bytesized32.RULE_KINDS:
        text = json.dumps({game: rules[game][kind] for game in rules}, indent=2)
        (folder / f"{kind}_rules.json").write_text(text, encoding="utf-8")


def write_data(root: Path, lines: list[bytes], name: str = "test.jsonl") -> Path:
    path = root / "bytesized32" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def line(row) -> bytes:
    return json.dumps(row).encode("utf-8")


def _set(row, path, value):
    target = row
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


# (name, how to spoil a good row -> the bad line's bytes, what the message must say)
CORRUPTIONS = [
    ("row is an array", lambda r: line([r]), "expected a JSON object (one transition"),
    ("missing key", lambda r: line({k: v for k, v in r.items() if k != "tick_state"}), "missing key(s) ['tick_state']"),
    ("current_state is a list", lambda r: line({**r, "current_state": [r["current_state"]]}),
     "current_state: expected a state object"),
    ("objects not a list", lambda r: line({**r, "tick_state": {**r["tick_state"], "objects": {"0": 1}}}),
     "tick_state.objects: expected a list of objects, got a JSON object"),
    ("object without uuid", lambda r: _spoil(r, ("current_state", "objects", 1), delete="uuid"),
     "current_state.objects[1]: object lacks ['uuid']"),
    ("uuid is a string", lambda r: _spoil(r, ("tick_state", "objects", 2, "uuid"), "2"),
     "tick_state.objects[2]: uuid must be an integer, got a string '2'"),
    ("object is a string", lambda r: _spoil(r, ("current_state", "objects", 0), "room"),
     "current_state.objects[0]: expected an object"),
    ("properties a list", lambda r: _spoil(r, ("current_state", "objects", 2, "properties"), []),
     "properties must be a JSON object, got a JSON array"),
    ("contains a string", lambda r: _spoil(r, ("tick_state", "objects", 0, "contains"), "agent (ID: 0)"),
     "contains must be a JSON array, got a string"),
    ("name a number", lambda r: _spoil(r, ("tick_state", "objects", 0, "name"), 7), "name must be a string"),
    ("type a list", lambda r: _spoil(r, ("tick_state", "objects", 0, "type"), ["World"]), "type must be a string"),
    ("duplicate uuid",
     lambda r: _spoil(r, ("current_state", "objects", 2, "uuid"), r["current_state"]["objects"][1]["uuid"]),
     "appears twice"),
    ("max_UUID missing", lambda r: _spoil(r, ("current_state",), delete="max_UUID"), "state lacks ['max_UUID']"),
    ("max_UUID a string", lambda r: _spoil(r, ("tick_state", "max_UUID"), "9"),
     "tick_state.max_UUID: expected an integer"),
    ("lastAction a list", lambda r: _spoil(r, ("tick_state", "lastAction"), ["look"]), "lastAction: expected a string"),
    ("action_state a list", lambda r: line({**r, "action_state": []}), "action_state: expected a state object"),
    ("score lacks a key", lambda r: _spoil(r, ("next_score_state",), delete="gameWon"), "score lacks ['gameWon']"),
    ("score a number", lambda r: line({**r, "current_score_state": 3}), "current_score_state: expected a score object"),
    ("score value a list", lambda r: _spoil(r, ("next_score_state", "score"), [1]), "expected a number or boolean"),
    ("game a number", lambda r: line({**r, "game": 4}), "game: expected a string"),
    ("state_id null", lambda r: line({**r, "state_id": None}), "state_id: expected a number or string"),
    ("truncated JSON", lambda r: line(r)[:200], "the JSON line is not valid JSON"),
    ("not UTF-8", lambda r: line(r).replace(b'"look"', b'"lo\xffok"', 1), "not UTF-8 text"),
    ("nested 100k deep", lambda r: b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
]


def _spoil(row, path, value=None, delete=None):
    row = copy.deepcopy(row)
    if delete is not None:
        target = row
        for step in path:
            target = target[step]
        del target[delete]
    else:
        _set(row, path, value)
    return line(row)


@pytest.mark.parametrize("name,spoil,expected", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
@pytest.mark.parametrize("container", ["jsonl", "zip"])
def test_a_bad_record_is_a_data_error_naming_file_and_line(tmp_path, good_row, name, spoil, expected, container):
    lines = [line(good_row), b"", line(good_row), spoil(good_row), line(good_row)]  # the bad one is line 4
    path = write_data(tmp_path, lines)
    where = re.escape(str(path))
    if container == "zip":
        with zipfile.ZipFile(tmp_path / "test.zip", "w") as archive:
            archive.write(path, "test.jsonl")
        path = tmp_path / "test.zip"
        where = re.escape(f"{path}!test.jsonl")
    with pytest.raises(DataError) as caught:
        bytesized32.load_rows(path)
    message = str(caught.value)
    assert re.match(rf"{where}:4: ", message), message
    assert expected in message, message
    assert isinstance(caught.value, ValueError) and "\n" not in message


def test_a_bad_record_fails_gym_make_with_the_same_message(tmp_path, good_row):
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    write_rules(tmp_path)
    write_data(tmp_path, [line(good_row), _spoil(good_row, ("current_state", "objects", 1), delete="uuid")])
    with pytest.raises(DataError, match=r"test\.jsonl:2: current_state\.objects\[1\]: object lacks \['uuid'\]"):
        gym.make("RLVRWorld/TextGame-v0", data_dir=str(tmp_path))


def test_a_damaged_zip_is_a_data_error(tmp_path, good_row):
    path = write_data(tmp_path, [line(good_row)] * 20)
    with zipfile.ZipFile(tmp_path / "test.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(path, "test.jsonl")
    data = (tmp_path / "test.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"cut\.zip: not a valid zip file"):
        bytesized32.load_rows(tmp_path / "cut.zip")
    start = data.index(b"test.jsonl") + len(b"test.jsonl") + 40  # inside the compressed member
    flipped = data[:start] + bytes([data[start] ^ 0xFF]) + data[start + 1:]
    (tmp_path / "flipped.zip").write_bytes(flipped)
    with pytest.raises(DataError, match=r"flipped\.zip!test\.jsonl"):
        bytesized32.load_rows(tmp_path / "flipped.zip")
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        archive.write(path, "a.jsonl")
        archive.write(path, "b.jsonl")
    with pytest.raises(DataError, match=r"two\.zip: expected one \.jsonl inside"):
        bytesized32.load_rows(tmp_path / "two.zip")


RULE_CORRUPTIONS = [
    ("not UTF-8", b'{\n  "boil-pot": "caf\xe9"\n}', r"object_rules\.json:2: the object rules file is not UTF-8 text"),
    ("corrupt JSON", b'{\n  "boil-pot": "x",\n  "freeze-tray": \n}', r"object_rules\.json:4: the object rules file is not valid JSON"),
    ("an array", b'["boil-pot"]', r"object_rules\.json: expected a JSON object of game name -> object rule text"),
    ("rule not text", b'{\n  "boil-pot": "x",\n  "freeze-tray": ["a", "b"]\n}',
     r"object_rules\.json:3: the object rules of game 'freeze-tray' must be text, got a JSON array"),
]


@pytest.mark.parametrize("name,content,expected", RULE_CORRUPTIONS, ids=[c[0] for c in RULE_CORRUPTIONS])
def test_a_bad_rules_file_is_a_data_error_naming_it(tmp_path, name, content, expected):
    write_rules(tmp_path)
    (tmp_path / "bytesized32" / bytesized32.RULES_DIRNAME / "object_rules.json").write_bytes(content)
    with pytest.raises(DataError, match=expected):
        bytesized32.load_rules(tmp_path)


# -- newcomers: the missing-data hint, the offline download, availability -------------------------

def suggested_data_dir(message: str) -> Path:
    found = re.search(r"`rlvr-world data bytesized32 --data-dir (\S+)`", message)
    assert found, message
    return Path(found.group(1))


def test_missing_data_hint_names_the_data_root(tmp_path, good_row):
    with pytest.raises(FileNotFoundError) as caught:
        bytesized32.split_file(tmp_path, "test")
    assert suggested_data_dir(str(caught.value)) == tmp_path
    write_data(tmp_path, [line(good_row)])
    with pytest.raises(FileNotFoundError, match="object rules not found") as caught:
        bytesized32.load_rules(tmp_path)
    assert suggested_data_dir(str(caught.value)) == tmp_path
    # following the hint puts the files where the loader looks
    assert bytesized32.split_file(tmp_path, "test") == tmp_path / "bytesized32" / "test.jsonl"


def test_missing_data_hint_uses_the_environment_root(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_WORLD_DATA", str(tmp_path / "root"))
    with pytest.raises(FileNotFoundError) as caught:
        bytesized32.split_file(None, "test")
    assert suggested_data_dir(str(caught.value)) == tmp_path / "root"


def test_offline_download_ends_in_one_line(tmp_path, capsys):
    from rlvr_envs.cli import main

    code = main(["data", "bytesized32", "--data-dir", str(tmp_path), "--no-train", "--source", "http://127.0.0.1:9"])
    assert code == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("rlvr-world: error: could not download http://127.0.0.1:9/data/test.zip")
    assert "--source" in lines[0] and str(tmp_path / "bytesized32") in lines[0]
    assert not list((tmp_path / "bytesized32").glob("*.part"))
    assert "Traceback" not in captured.err + captured.out


def test_download_error_type_for_library_callers(tmp_path):
    import argparse

    from rlvr_envs.core.errors import DownloadError

    args = argparse.Namespace(data_dir=str(tmp_path), no_train=True, source="http://127.0.0.1:9")
    with pytest.raises(DownloadError, match="could not download"):
        bytesized32.run_data_command(args)


def test_availability_means_loadable(tmp_path, good_row):
    ok, hint = ByteSized32Task.availability(str(tmp_path))
    assert not ok and f"--data-dir {tmp_path}" in hint
    write_rules(tmp_path)
    rows = [line(simulator.generate_row(simulator.DIFFICULTIES["easy"], 1, i)) for i in range(5)]
    path = write_data(tmp_path, rows)
    assert ByteSized32Task.availability(str(tmp_path)) == (True, "data found (5 test transitions)")
    path.write_bytes(b"\n".join(rows)[:-100])  # a cut-off last line: present, not loadable
    ok, hint = ByteSized32Task.availability(str(tmp_path))
    assert not ok and "test.jsonl:5: the JSON line is not valid JSON" in hint and "rlvr-world data bytesized32" in hint
    path.write_bytes(b"\n".join(rows) + b"\n")
    (tmp_path / "bytesized32" / bytesized32.RULES_DIRNAME / "score_rules.json").write_text("[]")
    ok, hint = ByteSized32Task.availability(str(tmp_path))
    assert not ok and "score_rules.json" in hint
    path.unlink()
    path.with_suffix(".zip").write_bytes(b"PK\x03\x04 not really a zip")
    ok, hint = ByteSized32Task.availability(str(tmp_path))
    assert not ok and "not a valid zip file" in hint
