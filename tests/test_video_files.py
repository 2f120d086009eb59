"""File helpers of the video data modules: npz reading that cannot be made to allocate,
atomic writes, JSON errors that name the file, strict episode numbers, the folder lock."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from rlvr_envs.core.errors import DataError
from rlvr_envs.core import files
from rlvr_envs.video import _files


def _npz_with_header(path, shape, payload=b"\0" * 16, compress=zipfile.ZIP_STORED):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", compression=compress) as archive:
        archive.writestr("image.npy", header.getvalue() + payload)
    return path


def test_read_npz_refuses_a_header_that_claims_more_than_the_member_holds(tmp_path):
    path = _npz_with_header(tmp_path / "episode_000001.npz", (2**40,))
    assert path.stat().st_size < 400
    with pytest.raises(DataError, match=r"episode_000001.npz: array 'image' is unreadable \(its header claims shape "
                                        r"\(1099511627776,\) uint8 \(1099511627776 bytes\) but the member holds 144"):
        _files.read_npz(path, ["image"], "test")


def test_read_npz_names_file_and_array_for_missing_truncated_and_flipped_data(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, image=np.arange(4000, dtype=np.uint8).reshape(40, 100), action=np.ones((40, 2)))
    with pytest.raises(DataError, match=r"a.npz: test npz lacks array\(s\) \['frames'\]; found \['action', 'image'\]"):
        _files.read_npz(path, ["frames"], "test")
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF  # inside image's data
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"a.npz: array 'image' is unreadable \(BadZipFile: Bad CRC-32"):
        _files.read_npz(path, ["image"], "test")
    path.write_bytes(bytes(data[:300]))
    with pytest.raises(DataError, match=r"a.npz: not a readable test npz file \(BadZipFile"):
        _files.read_npz(path, ["image"], "test")
    np.save(tmp_path / "b.npy", np.zeros(3))
    with pytest.raises(DataError, match=r"b.npy: not a readable test npz file"):
        _files.read_npz(tmp_path / "b.npy", ["image"], "test")
    np.savez(path, image=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DataError, match=r"a.npz: array 'image' is unreadable \(ValueError: Object arrays"):
        _files.read_npz(path, ["image"], "test")


def test_atomic_writer_leaves_the_old_file_or_the_new_one(tmp_path):
    path = tmp_path / "config.json"
    files.write_json_atomic(path, {"a": 1})
    with pytest.raises(RuntimeError):
        with files.atomic_writer(path, "w") as handle:
            handle.write('{"a": 2, "b"')
            raise RuntimeError("killed mid-write")
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["config.json"]  # the temporary file is gone
    # a writer killed outright leaves its temporary file; the next run under the lock removes it
    stale = tmp_path / ".config.json.12345.0123abcd.tmp"
    stale.write_text("{")
    assert files.remove_stale_temporaries(tmp_path) == 1 and not stale.exists()
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_read_json_names_file_line_and_column(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{\n  "shards": {\n    "a": 1,\n')
    with pytest.raises(DataError, match=r"manifest.json:4: the manifest is not valid JSON \(column 1.*; redo"):
        files.read_json(path, "the manifest", "redo")
    path.write_text("")
    with pytest.raises(DataError, match=r"manifest.json: the manifest is empty"):
        files.read_json(path, "the manifest")
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(DataError, match=r"manifest.json:1: the manifest is not UTF-8 text \(byte 0x[0-9a-f]{2}\)"):
        files.read_json(path, "the manifest")


def test_episode_numbers_take_ascii_digits_only():
    pattern = re.compile(r"episode_([0-9]+)\.npz", re.ASCII)
    assert _files.episode_number("episode_000042.npz", pattern) == 42
    for name in ("episode_\u00b2.npz", "episode_\u0663.npz", "episode_1.npz.tmp", "episode_.npz", "episode_-1.npz"):
        assert _files.episode_number(name, pattern) is None


def test_a_lock_held_by_a_killed_process_is_taken_over(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from rlvr_envs.core.files import OutputLock; "
         "OutputLock(sys.argv[1], 'holder').acquire(); print('locked', flush=True); time.sleep(60)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(files.OutputInUse, match=rf"pid {holder.pid}: `holder`"):
            files.OutputLock(tmp_path, "second").acquire()
    finally:
        holder.kill()
        holder.wait()
    with files.OutputLock(tmp_path, "third") as lock:
        assert lock.holder()["command"] == "third" and lock.holder()["pid"] == os.getpid()
