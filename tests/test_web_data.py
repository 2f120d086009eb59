"""WMA data problems name their source; availability means a loadable file; the download
command fails in one line; length limits never drop real records silently.

Built on the two real WebArena transitions of ../shared/data/wma (tests.samples).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from rlvr_envs.core.errors import DataError, DownloadError
from rlvr_envs.web import wma
from tests.samples import real_records, write_jsonl


def write_parquet(path: Path, rows: list[dict], **kwargs) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, **kwargs)
    return path


def corrupt_second_page(path: Path) -> None:
    """Overwrite the start of a data page in the second row group (the footer stays valid)."""
    import pyarrow.parquet as pq

    column = pq.ParquetFile(path).metadata.row_group(1).column(0)
    data = bytearray(path.read_bytes())
    start = column.data_page_offset + 8
    data[start:start + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


# -- errors name the file and the row ----------------------------------------------------------

def test_unreadable_parquet_file_is_named(tmp_path):
    path = tmp_path / "wma" / "train.parquet"
    path.parent.mkdir()
    path.write_bytes(b"PAR1 not really parquet PAR1")
    with pytest.raises(DataError, match=r"train\.parquet: not a readable parquet file .*re-download it"):
        wma.load_records(tmp_path)


def test_corrupt_parquet_page_is_named_by_file_and_row(tmp_path):
    path = write_parquet(tmp_path / "wma" / "records.parquet", real_records() * 150, row_group_size=100)
    corrupt_second_page(path)
    with pytest.raises(DataError, match=r"records\.parquet row 100: unreadable parquet data from this row on") as info:
        wma.load_records(tmp_path)
    assert "\n" not in str(info.value)
    with pytest.warns(UserWarning, match=r"skipped 0 corrupt WMA row\(s\) and 1 unreadable file part\(s\)"):
        kept = wma.load_records(tmp_path, on_corrupt="skip")
    assert len(kept) == 100  # the first row group, before the damaged page


def test_non_utf8_jsonl_is_named_by_file_and_line(tmp_path):
    good = json.dumps(real_records()[0]).encode("utf-8")
    path = tmp_path / "wma" / "records.jsonl"
    path.parent.mkdir()
    path.write_bytes(good + b"\n" + b'{"url": "caf\xe9"}\n' + good + b"\n")
    with pytest.raises(DataError, match=r"records\.jsonl:2: not UTF-8 text \(byte 0xe9 at column 13\)"):
        wma.load_records(tmp_path)
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt WMA row\(s\); first: .*:2: not UTF-8"):
        assert len(wma.load_records(tmp_path, on_corrupt="skip")) == 2


def test_non_utf8_json_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "wma" / "records.json"
    path.parent.mkdir()
    text = json.dumps({"data": real_records()}, indent=1).encode("utf-8")
    path.write_bytes(text.replace(b"OpenStreetMap", b"OpenStreet\xffMap", 1))
    line = text[: text.index(b"OpenStreetMap")].count(b"\n") + 1
    with pytest.raises(DataError, match=rf"records\.json:{line}: the WMA records file is not UTF-8 text \(byte 0xff\)"):
        wma.load_records(tmp_path)


def test_bad_rows_raise_data_error(tmp_path):
    write_jsonl(tmp_path / "wma" / "records.jsonl", [real_records()[0], {"next_state_acctree": "[1] a 'b'"}])
    with pytest.raises(DataError, match=r"records\.jsonl:2: missing column\(s\)"):
        wma.load_records(tmp_path)


# -- availability: a loadable WMA file --------------------------------------------------------

def test_availability_needs_a_loadable_wma_file(tmp_path):
    from rlvr_envs.registration import entry

    available = entry("RLVRWorld/WebState-v0").availability
    assert available(data_dir=str(tmp_path))[0] is False
    folder = tmp_path / "wma"
    folder.mkdir()
    (folder / "dataset_info.json").write_text(json.dumps({"description": "not records"}))
    ok, hint = available(data_dir=str(tmp_path))
    assert not ok and "dataset_info.json" in hint and "rlvr-world data wma" in hint
    (folder / "broken.parquet").write_bytes(b"PAR1 nope PAR1")
    assert available(data_dir=str(tmp_path))[0] is False
    write_parquet(folder / "other.parquet", [{"text": "an unrelated table"}])
    assert available(data_dir=str(tmp_path))[0] is False
    write_jsonl(folder / "records.jsonl", real_records())
    ok, hint = available(data_dir=str(tmp_path))
    assert ok and "WMA records" in hint


def test_cli_list_reports_loadable_data(tmp_path, capsys):
    from rlvr_envs import cli

    (tmp_path / "wma").mkdir()
    (tmp_path / "wma" / "notes.json").write_text("[1, 2]")
    assert cli.main(["list", "--data-dir", str(tmp_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("RLVRWorld/WebState-v0"))
    assert "no: none of the 1 file(s)" in line


# -- the download command --------------------------------------------------------------------

def test_download_without_network_is_one_line(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from rlvr_envs import cli

    def no_network(**kwargs):
        raise ConnectionError("Max retries exceeded with url: /api/datasets/thuml/...\n(Caused by NameResolutionError)")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_network)
    with pytest.raises(DownloadError, match=r"could not download thuml/webarena-world-model-cot .*ConnectionError"):
        wma.run_data_command(cli.build_parser(["data", "wma"]).parse_args(["data", "wma", "--data-dir", str(tmp_path)]))
    assert cli.main(["data", "wma", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlvr-world: error: could not download") and err.count("\n") == 1
    assert "Traceback" not in err and str(tmp_path / "wma") in err


# -- length limits and tokenizers ------------------------------------------------------------

def test_default_keeps_every_real_record_and_a_limit_says_what_it_drops(tmp_path):
    from rlvr_envs.core.factory import build_task

    write_jsonl(tmp_path / "wma" / "records.jsonl", real_records() * 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default drops nothing and says nothing
        task = build_task("rlvr_envs.web.task:WebStateTask", data_dir=str(tmp_path), split="all")
    assert (len(task), task.n_filtered) == (10, 0)
    totals = sorted(len(task.prompt_ids(i)) + len(task.target_ids(i)) for i in range(len(task)))
    limit = totals[0]  # only the shorter of the two real transitions fits
    with pytest.warns(UserWarning, match=rf"max_total_len={limit} dropped 5 of 10 transitions .*tokenizer "
                                         r"'.*miniweb'.*pass your model's tokenizer"):
        short = build_task("rlvr_envs.web.task:WebStateTask", data_dir=str(tmp_path), split="all",
                           max_total_len=limit)
    assert (len(short), short.n_filtered) == (5, 5)
