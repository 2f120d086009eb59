"""RT-1 RLDS shards (written here in the real layout with `tfrecord`'s writer) -> npz."""

from __future__ import annotations

import argparse
import io
import json

import numpy as np
import pytest

from rlvr_envs.video import rt1
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec
from rlvr_envs.video.rt1 import ACTION_DIM, ACTION_NAMES, RT1FormatError, ShardFramingError

HEIGHT, WIDTH = rt1.IMAGE_SHAPE[:2]
# Written deliberately in non-alphabetical order: the reader must sort, not trust file order.
ACTION_LAYOUT = [("world_vector", 3), ("terminate_episode", 3), ("rotation_delta", 3),
                 ("gripper_closedness_action", 1), ("base_displacement_vertical_rotation", 1),
                 ("base_displacement_vector", 2)]


def _png(array: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def make_episode(seed: int, steps: int = 3):
    """Frames (smooth, so PNGs stay small), per-key actions and the expected 13-dim matrix."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    frames = np.stack([
        np.stack([(xs + 7 * t + seed) % 256, (ys + 3 * t) % 256, np.full_like(xs, 40 * seed % 256)], -1)
        for t in range(steps)
    ]).astype(np.uint8)
    actions = {}
    for name, dim in ACTION_LAYOUT:
        if name == "terminate_episode":
            onehot = np.zeros((steps, dim), dtype=np.int64)
            onehot[:, 1] = 1
            onehot[-1] = [1, 0, 0]
            actions[name] = onehot
        else:
            actions[name] = rng.uniform(-1, 1, size=(steps, dim)).astype(np.float32)
    expected = np.concatenate([actions[name] for name in sorted(actions)], axis=1).astype(np.float32)
    return frames, actions, expected


def write_shard(path, episodes, mutate=None):
    """One tf.train.Example per episode with flattened `steps/...` keys, as RLDS stores them."""
    from tfrecord import TFRecordWriter

    writer = TFRecordWriter(str(path))
    for number, (frames, actions, _) in enumerate(episodes):
        steps = frames.shape[0]
        datum = {
            "steps/observation/image": ([_png(f) for f in frames], "byte"),
            "steps/observation/natural_language_instruction": ([b"pick coke can"] * steps, "byte"),
            "steps/observation/natural_language_embedding": (np.zeros(steps * 512, np.float32), "float"),
            "steps/is_first": ([1] + [0] * (steps - 1), "int"),
            "steps/is_last": ([0] * (steps - 1) + [1], "int"),
            "steps/is_terminal": ([0] * (steps - 1) + [1], "int"),
            "steps/reward": (np.zeros(steps, np.float32), "float"),
        }
        for name, values in actions.items():
            datum[f"steps/action/{name}"] = (values.ravel(), "int" if values.dtype == np.int64 else "float")
        if mutate is not None:
            mutate(number, datum)
        writer.write(datum)
    writer.close()
    return path


@pytest.fixture
def shards(tmp_path):
    """Two shards, 3 + 2 episodes, real file names."""
    src = tmp_path / "rlds"
    src.mkdir()
    episodes = [make_episode(seed) for seed in range(5)]
    write_shard(src / "fractal20220817_data-train.tfrecord-00000-of-00002", episodes[:3])
    write_shard(src / "fractal20220817_data-train.tfrecord-00001-of-00002", episodes[3:])
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

    path = write_shard(tmp_path / "x.tfrecord-00000-of-00001", [(frames, actions, None)], mutate=as_jpeg)
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
        (lambda n, d: d.pop("steps/action/gripper_closedness_action"), r"missing key 'steps/action/gripper"),
        (lambda n, d: d.update({"steps/observation/image": ([_png(np.zeros((8, 8, 3), np.uint8))] * 3, "byte")}),
         r"step 0: image shape \(8, 8, 3\)"),
        (lambda n, d: d.update({"steps/observation/image": ([b"not an image"] * 3, "byte")}),
         r"step 0: undecodable image"),
    ],
)
def test_bad_episodes_name_file_and_episode(tmp_path, mutate, message):
    episodes = [make_episode(0), make_episode(1)]
    path = write_shard(tmp_path / "bad.tfrecord-00000-of-00001", episodes,
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
    write_shard(src / "s.tfrecord-00000-of-00001", episodes, mutate=nan_in_episode_one)
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


def test_cli_functions_convert_and_report(shards, tmp_path, capsys):
    src, _ = shards
    parser = argparse.ArgumentParser()
    rt1.add_data_arguments(parser)
    args = parser.parse_args(["--convert", "--src", str(src), "--out", str(tmp_path / "npz"), "--no-progress"])
    assert rt1.run_data_command(args) == 0
    printed = capsys.readouterr().out
    assert "episodes seen" in printed and "train" in printed
    bad = parser.parse_args(["--convert", "--src", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert rt1.run_data_command(bad) == 2
    assert "no RLDS TFRecord shards" in capsys.readouterr().out
