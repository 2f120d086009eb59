"""RT-1 RLDS shards (written here in the real layout with `tfrecord`'s writer) -> npz."""

from __future__ import annotations

import argparse
import io
import json
import re
import struct

import numpy as np
import pytest

from rlvr_envs.core.errors import DataError
from rlvr_envs.video import rt1
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec
from rlvr_envs.video.rt1 import ACTION_DIM, ACTION_NAMES, RT1FormatError, ShardFramingError
from tests.samples import png_bytes, rt1_fixture_episode, write_rlds_shard

HEIGHT, WIDTH = rt1.IMAGE_SHAPE[:2]


def make_episode(seed: int, steps: int = 3):
    """Frames (smooth, so PNGs stay small), per-key actions and the expected 13-dim matrix."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    frames = np.stack([
        np.stack([(xs + 7 * t + seed) % 256, (ys + 3 * t) % 256, np.full_like(xs, 40 * seed % 256)], -1)
        for t in range(steps)
    ]).astype(np.uint8)
    return rt1_fixture_episode(seed, frames)


@pytest.fixture
def shards(tmp_path):
    """Two shards, 3 + 2 episodes, real file names."""
    src = tmp_path / "rlds"
    src.mkdir()
    episodes = [make_episode(seed) for seed in range(5)]
    write_rlds_shard(src / "fractal20220817_data-train.tfrecord-00000-of-00002", episodes[:3])
    write_rlds_shard(src / "fractal20220817_data-train.tfrecord-00001-of-00002", episodes[3:])
    return src, episodes


def test_action_keys_are_the_alphabetical_13_dims():
    assert ACTION_DIM == 13
    assert list(ACTION_NAMES[:3]) == ["base_displacement_vector[0]", "base_displacement_vector[1]",
                                      "base_displacement_vertical_rotation[0]"]
    assert ACTION_NAMES[7:10] == ("terminate_episode[0]", "terminate_episode[1]", "terminate_episode[2]")


def test_reader_decodes_images_and_concatenates_actions_alphabetically(shards):
    src, episodes = shards
    read = list(rt1.iter_rlds_episodes(src))
    assert [e.index for e in read] == [0, 1, 2, 3, 4]
    for episode, (frames, _, expected) in zip(read, episodes):
        assert episode.image.dtype == np.uint8 and episode.image.shape == (3, HEIGHT, WIDTH, 3)
        np.testing.assert_array_equal(episode.image, frames)
        np.testing.assert_array_equal(episode.action, expected)
        assert episode.instruction == "pick coke can"
    assert [e.split for e in read] == ["test", "train", "train", "train", "train"]


def test_jpeg_images_decode_close_to_the_source(tmp_path):
    from PIL import Image

    frames, actions, _ = make_episode(0, steps=2)

    def as_jpeg(number, datum):
        encoded = []
        for frame in frames:
            buffer = io.BytesIO()
            Image.fromarray(frame).save(buffer, format="JPEG", quality=95)
            encoded.append(buffer.getvalue())
        datum["steps/observation/image"] = (encoded, "byte")

    path = write_rlds_shard(tmp_path / "x.tfrecord-00000-of-00001", [(frames, actions, None)], mutate=as_jpeg)
    episode = next(rt1.iter_rlds_episodes(path))
    assert np.abs(episode.image.astype(int) - frames).mean() < 3.0


def test_convert_writes_npz_per_split_reads_back_exactly_and_resumes(shards, tmp_path):
    src, episodes = shards
    out = tmp_path / "npz"
    report = rt1.convert_rlds_to_npz(src, out, progress=False, expected_episodes=5)
    assert (report.episodes, report.written, report.reused, report.train, report.test) == (5, 5, 0, 4, 1)
    assert sorted(p.name for p in (out / "test").iterdir()) == ["episode_000000.npz"]
    train = rt1.RT1NpzDataset(out, "train")
    assert [e.index for e in train] == [1, 2, 3, 4]
    for episode in train:
        frames, _, expected = episodes[episode.index]
        np.testing.assert_array_equal(episode.image, frames)
        np.testing.assert_array_equal(episode.action, expected)
        assert episode.action.dtype == np.float32
    assert train.episode_lengths() == [3, 3, 3, 3]
    windows = FrameWindowDataset(train, WindowSpec.single_step(history=2))  # lengths from the npz headers
    assert len(windows) == 4  # 3 frames per episode: one window of 2 history + 1 future each
    np.testing.assert_array_equal(windows[1].future[0], episodes[2][0][2])  # train position 1 = episode 2
    np.testing.assert_array_equal(windows[1].actions, episodes[2][2][0:2])

    again = rt1.convert_rlds_to_npz(src, out, progress=False)
    assert (again.written, again.reused, again.train, again.test) == (0, 5, 4, 1)

    # An interrupted shard (not marked complete) is redone, keeping files already written.
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"]["fractal20220817_data-train.tfrecord-00001-of-00002"]["complete"] = False
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "train" / "episode_000004.npz").unlink()
    resumed = rt1.convert_rlds_to_npz(src, out, progress=False)
    assert (resumed.written, resumed.reused, resumed.train) == (1, 4, 4)


def test_convert_refuses_stray_files_and_wrong_totals(shards, tmp_path):
    src, _ = shards
    out = tmp_path / "npz"
    rt1.convert_rlds_to_npz(src, out, progress=False)
    (out / "train" / "episode_000099.npz").write_bytes(b"stray")
    with pytest.raises(RT1FormatError, match="5 npz files, but the shards hold 4"):
        rt1.convert_rlds_to_npz(src, out, progress=False)
    with pytest.raises(RT1FormatError, match="hold 5 episodes, expected 87212"):
        rt1.convert_rlds_to_npz(src, tmp_path / "other", progress=False, expected_episodes=87212)


def test_truncated_shard_names_file_and_record_and_is_fatal_even_when_skipping(shards, tmp_path):
    src, _ = shards
    shard = src / "fractal20220817_data-train.tfrecord-00000-of-00002"
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(ShardFramingError, match=r"tfrecord-00000-of-00002: record 2: truncated"):
        list(rt1.iter_rlds_episodes(src))
    with pytest.raises(ShardFramingError, match="re-download this shard"):
        rt1.convert_rlds_to_npz(src, tmp_path / "npz", on_error="skip", progress=False)


def test_corrupt_record_raises_or_is_skipped_counted_and_reported(shards, tmp_path):
    src, _ = shards
    shard = src / "fractal20220817_data-train.tfrecord-00000-of-00002"
    data = bytearray(shard.read_bytes())
    data[40] ^= 0xFF  # inside record 0's payload
    shard.write_bytes(bytes(data))
    with pytest.raises(RT1FormatError, match="record 0: payload CRC mismatch"):
        rt1.convert_rlds_to_npz(src, tmp_path / "a", progress=False)
    report = rt1.convert_rlds_to_npz(src, tmp_path / "b", on_error="skip", progress=False)
    assert [item["episode"] for item in report.skipped] == [0]
    assert (report.episodes, report.test, report.train) == (5, 0, 4)  # episode numbers did not shift
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["shards"]["fractal20220817_data-train.tfrecord-00000-of-00002"]["skipped"][0]["episode"] == 0


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda n, d: d.update({"steps/action/world_vector": (np.zeros(8, np.float32), "float")}),
         r"steps/action/world_vector has 8 values, expected 3 steps x 3"),
        (lambda n, d: d.update({"steps/action/rotation_delta": (np.full(9, np.nan, np.float32), "float")}),
         r"non-finite action at step 0, dim rotation_delta\[0\]"),
        (lambda n, d: d["steps/observation/image"][0].pop(), r"has 2 images for 3 steps"),
        (lambda n, d: d.pop("steps/action/gripper_closedness_action"),
         r"missing key\(s\) \['steps/action/gripper_closedness_action'\]"),
        (lambda n, d: d.update({"steps/observation/image": ([png_bytes(np.zeros((8, 8, 3), np.uint8))] * 3, "byte")}),
         r"step 0: image shape \(8, 8, 3\)"),
        (lambda n, d: d.update({"steps/observation/image": ([b"not an image"] * 3, "byte")}),
         r"step 0: undecodable image"),
    ],
)
def test_bad_episodes_name_file_and_episode(tmp_path, mutate, message):
    episodes = [make_episode(0), make_episode(1)]
    path = write_rlds_shard(tmp_path / "bad.tfrecord-00000-of-00001", episodes,
                       mutate=lambda n, d: mutate(n, d) if n == 1 else None)
    with pytest.raises(RT1FormatError, match=message) as caught:
        list(rt1.iter_rlds_episodes(path))
    assert "bad.tfrecord-00000-of-00001: record 1 (episode 1)" in str(caught.value)


def test_skip_mode_keeps_good_episodes_and_numbers(tmp_path):
    episodes = [make_episode(seed) for seed in range(3)]

    def nan_in_episode_one(number, datum):
        if number == 1:
            datum["steps/action/world_vector"] = (np.full(9, np.nan, np.float32), "float")

    src = tmp_path / "rlds"
    src.mkdir()
    write_rlds_shard(src / "s.tfrecord-00000-of-00001", episodes, mutate=nan_in_episode_one)
    report = rt1.convert_rlds_to_npz(src, tmp_path / "npz", on_error="skip", progress=False)
    assert [item["episode"] for item in report.skipped] == [1]
    assert "non-finite action" in report.skipped[0]["reason"]
    assert [e.index for e in rt1.RT1NpzDataset(tmp_path / "npz", "train")] == [2]


def test_npz_loader_rejects_mismatched_lengths(tmp_path):
    path = tmp_path / "train" / "episode_000001.npz"
    path.parent.mkdir()
    np.savez(path, image=np.zeros((3, HEIGHT, WIDTH, 3), np.uint8), action=np.zeros((2, ACTION_DIM), np.float32))
    with pytest.raises(RT1FormatError, match=r"episode_000001.npz: action \(2, 13\) does not match 3 frames"):
        rt1.load_npz_episode(path)


def test_cli_converts_by_default_and_accepts_convert_for_compatibility(shards, tmp_path, capsys):
    from rlvr_envs.cli import main

    src, _ = shards
    assert main(["data", "rt1", "--src", str(src), "--out", str(tmp_path / "npz"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "episodes seen" in printed and "train" in printed
    assert len(rt1.RT1NpzDataset(tmp_path / "npz", "train")) == 4
    assert main(["data", "rt1", "--convert", "--src", str(src), "--out", str(tmp_path / "npz"), "--no-progress"]) == 0
    assert re.search(r"npz kept from earlier run +5\n", capsys.readouterr().out)
    assert main(["data", "rt1", "--src", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no RLDS TFRecord shards" in err


def test_cli_functions_report_each_skip_location_once(tmp_path, capsys):
    episodes = [make_episode(seed) for seed in range(3)]
    path = write_rlds_shard(tmp_path / "s.tfrecord-00000-of-00001", episodes, mutate=lambda n, d: d.update(
        {"steps/action/world_vector": (np.full(9, np.nan, np.float32), "float")}) if n != 1 else None)
    parser = argparse.ArgumentParser()
    rt1.add_data_arguments(parser)
    args = parser.parse_args(["--src", str(path), "--out", str(tmp_path / "npz"), "--on-error", "skip",
                              "--no-progress"])
    assert rt1.run_data_command(args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipped /")]
    assert len(lines) == 2
    for line, episode in zip(lines, (0, 2)):
        assert line.count(str(path)) == 1 and line.count(": record ") == 1
        assert f"(episode {episode}): non-finite action at step 0" in line


def test_truncated_manifest_names_file_and_line(shards, tmp_path):
    src, _ = shards
    out = tmp_path / "npz"
    rt1.convert_rlds_to_npz(src, out, progress=False)
    manifest = out / "manifest.json"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # written through a temporary file
    manifest.write_text(manifest.read_text()[:150])
    with pytest.raises(DataError, match=r"manifest.json:1: the RT-1 conversion manifest is not valid JSON "
                                        r"\(column \d+.*delete it to re-check"):
        rt1.convert_rlds_to_npz(src, out, progress=False)
    manifest.write_text(json.dumps({"format": rt1.MANIFEST_FORMAT, "shards": {"a.tfrecord": {"episodes": "3"}}}))
    with pytest.raises(RT1FormatError, match=r"manifest.json: entry for shard 'a.tfrecord': field 'signature'"):
        rt1.convert_rlds_to_npz(src, out, progress=False)
    manifest.unlink()  # the remedy: everything is re-checked, the npz files are kept
    report = rt1.convert_rlds_to_npz(src, out, progress=False)
    assert (report.written, report.reused, report.redone) == (0, 5, [])


def test_record_length_past_the_end_of_the_file_is_refused_before_allocating(tmp_path):
    from tfrecord.writer import TFRecordWriter

    path = write_rlds_shard(tmp_path / "s.tfrecord-00000-of-00001", [make_episode(0)])
    length = struct.pack("<Q", 2**40)
    path.write_bytes(path.read_bytes() + length + TFRecordWriter.masked_crc(length) + b"\0" * 64)
    with pytest.raises(ShardFramingError, match=r"s.tfrecord-00000-of-00001: record 1: truncated: the header claims "
                                                r"1099511627776 payload bytes, only 60 are left"):
        list(rt1.iter_rlds_episodes(path))


def test_corrupt_or_stale_npz_from_an_earlier_run_is_checked_and_redone(shards, tmp_path):
    src, episodes = shards
    out = tmp_path / "npz"
    rt1.convert_rlds_to_npz(src, out, progress=False)
    # (a) truncated file of a finished shard: its size no longer matches the manifest
    truncated = out / "train" / "episode_000002.npz"
    truncated.write_bytes(truncated.read_bytes()[:1000])
    report = rt1.convert_rlds_to_npz(src, out, progress=False)
    assert [item["episode"] for item in report.redone] == [2] and report.written == 1
    assert "episode_000002.npz" in report.redone[0]["file"] and report.redone[0]["reason"]
    np.testing.assert_array_equal(rt1.load_npz_episode(truncated).image, episodes[2][0])
    # (b) a flipped byte (same size): caught by the zip CRC once the shard is redone
    flipped = out / "train" / "episode_000004.npz"
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with pytest.raises(RT1FormatError, match=r"episode_000004.npz: array 'image' is unreadable .*CRC"):
        rt1.load_npz_episode(flipped)
    # (c) a whole but foreign file: another episode's arrays under this name
    foreign = out / "train" / "episode_000003.npz"
    foreign.write_bytes((out / "train" / "episode_000001.npz").read_bytes())
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"]["fractal20220817_data-train.tfrecord-00001-of-00002"]["complete"] = False
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = rt1.convert_rlds_to_npz(src, out, progress=False)
    reasons = {item["episode"]: item["reason"] for item in report.redone}
    assert sorted(reasons) == [3, 4] and "CRC" in reasons[4] and "differ from the record's" in reasons[3]
    for index in (3, 4):
        np.testing.assert_array_equal(rt1.load_npz_episode(out / "train" / f"episode_{index:06d}.npz").image,
                                      episodes[index][0])


def test_episode_file_names_need_ascii_digits(shards, tmp_path):
    src, _ = shards
    out = tmp_path / "npz"
    rt1.convert_rlds_to_npz(src, out, progress=False)
    odd = out / "train" / "episode_\u00b2.npz"
    odd.write_bytes((out / "train" / "episode_000001.npz").read_bytes())
    assert rt1.load_npz_episode(odd).index == -1  # no number: loads, does not crash on int('\u00b2')
    with pytest.raises(RT1FormatError, match="episode_\u00b2.npz: not an episode file name"):
        rt1.RT1NpzDataset(out, "train")


def _other_dataset_shard(path, episodes=2, steps=2):
    """A shard laid out like another Open X-Embodiment dataset (bridge-style keys)."""
    from tfrecord import TFRecordWriter

    writer = TFRecordWriter(str(path))
    frame = png_bytes(np.zeros((8, 8, 3), np.uint8))
    for _ in range(episodes):
        writer.write({
            "episode_metadata/file_path": ([b"/data/bridge/0.npy"], "byte"),
            "episode_metadata/has_language": ([1], "int"),
            "steps/action": (np.zeros(7 * steps, np.float32), "float"),
            "steps/is_first": ([1] + [0] * (steps - 1), "int"),
            "steps/is_last": ([0] * (steps - 1) + [1], "int"),
            "steps/language_instruction": ([b"put the spoon in the pot"] * steps, "byte"),
            "steps/observation/image_0": ([frame] * steps, "byte"),
            "steps/observation/image_1": ([frame] * steps, "byte"),
            "steps/observation/state": (np.zeros(7 * steps, np.float32), "float"),
        })
    writer.close()
    return path


def test_a_shard_of_another_dataset_fails_and_says_which_keys_it_has(tmp_path, capsys):
    from rlvr_envs.cli import main

    src = tmp_path / "bridge"
    src.mkdir()
    _other_dataset_shard(src / "bridge_dataset-train.tfrecord-00000-of-00001")
    with pytest.raises(RT1FormatError) as caught:
        rt1.convert_rlds_to_npz(src, tmp_path / "npz", on_error="skip", progress=False)
    message = str(caught.value)
    assert message.startswith("nothing was converted: all 2 episodes in 1 shard(s) were skipped; the first, ")
    assert message.count("bridge_dataset-train.tfrecord-00000-of-00001") == 1
    assert "bridge_dataset-train.tfrecord-00000-of-00001: record 0 (episode 0): missing key(s) " in message
    assert "'steps/observation/image'" in message and "'steps/action/world_vector'" in message
    assert "found 9 keys: steps/observation/{image_0, image_1, state}; steps/{action, is_first" in message
    assert "episode_metadata/{file_path, has_language}" in message

    status = main(["data", "rt1", "--src", str(src), "--out", str(tmp_path / "npz2"), "--on-error", "skip",
                   "--no-progress"])
    captured = capsys.readouterr()
    assert status == 1
    assert len(captured.err.strip().splitlines()) == 1 and "nothing was converted" in captured.err
    assert "steps/observation/{image_0" in captured.err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.tfrecord-00000-of-00001").write_bytes(b"")
    with pytest.raises(RT1FormatError, match="no episodes in the shard.s.; nothing was converted"):
        rt1.convert_rlds_to_npz(empty, tmp_path / "npz3", progress=False)


def test_key_listing_keeps_the_informative_keys_when_truncating():
    keys = [f"episode_metadata/field_{i:02d}" for i in range(60)] + ["steps/observation/rgb", "steps/action"]
    text = rt1.describe_keys(keys, limit=5)
    assert text.startswith("steps/observation/{rgb}; steps/{action}; episode_metadata/{field_00, field_01, "
                           "field_02, +57 more}")
    assert text.endswith("+57 more keys")


def test_a_conversion_into_a_folder_in_use_is_refused(shards, tmp_path):
    from rlvr_envs.core.files import OutputInUse, OutputLock

    src, _ = shards
    with OutputLock(tmp_path / "npz", "another conversion"):
        with pytest.raises(OutputInUse, match="being written by another run"):
            rt1.convert_rlds_to_npz(src, tmp_path / "npz", progress=False)
