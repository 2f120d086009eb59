"""DINO-WM PushT and Rope/Granular layouts, written here with torch.save / imageio / pickle."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from rlvr_envs.video import dino_wm
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec
from rlvr_envs.video.dino_wm import DinoWMFormatError

SIZE = 64


def _frames(seed: int, count: int) -> np.ndarray:
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    return np.stack([
        np.stack([(xs * 4 + 9 * t + seed * 30) % 256, (ys * 4) % 256, np.full_like(xs, 128)], -1) for t in range(count)
    ]).astype(np.uint8)


def write_pusht(root, lengths=(5, 4), pad_to=6, seq_lengths_obj=None):
    """DINO-WM's PushT split: padded tensors, seq_lengths.pkl and one mp4 per episode."""
    import imageio.v3 as iio
    import torch

    root.mkdir(parents=True, exist_ok=True)
    (root / "obses").mkdir(exist_ok=True)
    count = len(lengths)
    rng = np.random.default_rng(0)
    states = torch.zeros(count, pad_to, 5)
    abs_actions = torch.zeros(count, pad_to, 2)
    for i, length in enumerate(lengths):
        states[i, :length] = torch.from_numpy(rng.uniform(0, 512, (length, 5)).astype(np.float32))
        abs_actions[i, :length] = torch.from_numpy(rng.uniform(0, 512, (length, 2)).astype(np.float32))
        iio.imwrite(root / "obses" / f"episode_{i:03d}.mp4", _frames(i, length), fps=10, codec="libx264",
                    plugin="FFMPEG", macro_block_size=16)
    torch.save(states, root / "states.pth")
    torch.save(abs_actions, root / "abs_actions.pth")
    torch.save(abs_actions - states[..., :2], root / "rel_actions.pth")
    with open(root / "seq_lengths.pkl", "wb") as handle:
        pickle.dump(list(lengths) if seq_lengths_obj is None else seq_lengths_obj, handle)
    return states, abs_actions


def write_deformable(root, episodes=2, steps=4, particles=6):
    import torch

    root.mkdir(parents=True, exist_ok=True)
    states = torch.randn(episodes, steps, particles, 4, generator=torch.Generator().manual_seed(0))
    actions = torch.randn(episodes, steps, 4, generator=torch.Generator().manual_seed(1))
    frames = []
    for i in range(episodes):
        (root / f"{i:06d}").mkdir(exist_ok=True)
        episode_frames = torch.from_numpy(_frames(i, steps))
        torch.save(episode_frames, root / f"{i:06d}" / "obses.pth")
        frames.append(episode_frames)
    torch.save(states, root / "states.pth")
    torch.save(actions, root / "actions.pth")
    return states, actions, frames


def test_pusht_round_trip(tmp_path):
    states, abs_actions = write_pusht(tmp_path / "train")
    data = dino_wm.DinoWMPushTDataset(tmp_path / "train", action_type="abs")
    assert len(data) == 2 and data.episode_lengths() == [5, 4]
    for i, length in enumerate([5, 4]):
        episode = data[i]
        assert episode.frames.shape == (length, SIZE, SIZE, 3) and episode.frames.dtype == np.uint8
        # mp4 is lossy (yuv420): frames come back close, not equal; the tensors are exact.
        assert np.abs(episode.frames.astype(int) - _frames(i, length)).mean() < 4.0
        np.testing.assert_array_equal(episode.actions, abs_actions[i, :length].numpy())
        np.testing.assert_array_equal(episode.states, states[i, :length].numpy())
    windows = FrameWindowDataset(data, WindowSpec.single_step(history=3))
    assert [(w.episode, w.start) for w in windows] == [(0, 0), (0, 1), (1, 0)]
    np.testing.assert_array_equal(windows[1].actions, abs_actions[0, 1:4].numpy())
    relative = dino_wm.DinoWMPushTDataset(tmp_path / "train")  # DINO-WM's default: rel_actions.pth
    np.testing.assert_allclose(relative[0].actions, (abs_actions - states[..., :2])[0, :5].numpy())


def test_seq_lengths_accepts_numpy_int_arrays_and_refuses_other_objects(tmp_path):
    path = tmp_path / "seq_lengths.pkl"
    with open(path, "wb") as handle:
        pickle.dump(np.array([3, 7], dtype=np.int64), handle)
    np.testing.assert_array_equal(dino_wm.load_seq_lengths(path), [3, 7])
    with open(path, "wb") as handle:
        pickle.dump([np.int32(3), 4], handle)
    np.testing.assert_array_equal(dino_wm.load_seq_lengths(path), [3, 4])

    class Exploit:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with open(path, "wb") as handle:
        pickle.dump([Exploit()], handle)
    with pytest.raises(DinoWMFormatError, match=r"refusing to load global (posix|os|nt)\.system"):
        dino_wm.load_seq_lengths(path)
    with open(path, "wb") as handle:
        pickle.dump({"lengths": [1, 2]}, handle)
    with pytest.raises(DinoWMFormatError, match="flat list of integers"):
        dino_wm.load_seq_lengths(path)


def test_pth_files_are_loaded_weights_only(tmp_path):
    import torch

    write_pusht(tmp_path / "train")
    torch.save({"not": "a tensor", "obj": object}, tmp_path / "train" / "states.pth")
    with pytest.raises(DinoWMFormatError, match=r"states.pth: cannot load safely with weights_only=True"):
        dino_wm.DinoWMPushTDataset(tmp_path / "train")


def test_pusht_mismatched_lengths_name_the_file(tmp_path):
    write_pusht(tmp_path / "a", seq_lengths_obj=[5, 4, 3])
    with pytest.raises(DinoWMFormatError, match=r"states.pth: shape \(2, 6, 5\), expected \[3 \(seq_lengths\)"):
        dino_wm.DinoWMPushTDataset(tmp_path / "a")
    write_pusht(tmp_path / "b", seq_lengths_obj=[5, 9])
    with pytest.raises(DinoWMFormatError, match="episode 1 has seq_length 9 but states/actions hold 6/6"):
        dino_wm.DinoWMPushTDataset(tmp_path / "b")


def test_pusht_truncated_and_short_videos_and_nan_actions(tmp_path):
    import torch

    root = tmp_path / "train"
    write_pusht(root, lengths=(5, 4, 3))
    video = root / "obses" / "episode_001.mp4"
    video.write_bytes(video.read_bytes()[: len(video.read_bytes()) // 3])
    actions = torch.load(root / "abs_actions.pth", weights_only=True)
    actions[2, 1, 0] = float("nan")
    torch.save(actions, root / "abs_actions.pth")
    data = dino_wm.DinoWMPushTDataset(root, action_type="abs")
    with pytest.raises(DinoWMFormatError, match=r"episode_001.mp4: unreadable or truncated video"):
        data[1]
    with pytest.raises(DinoWMFormatError, match=r"abs_actions.pth: episode 2: non-finite action at step 1"):
        data[2]
    kept = list(data.episodes(on_error="skip"))
    assert [e.index for e in kept] == [0]
    assert [s["episode"] for s in data.skipped] == [1, 2]


def test_pusht_video_shorter_than_seq_length(tmp_path):
    import imageio.v3 as iio

    root = tmp_path / "train"
    write_pusht(root)
    iio.imwrite(root / "obses" / "episode_000.mp4", _frames(0, 2), fps=10, codec="libx264", plugin="FFMPEG")
    with pytest.raises(DinoWMFormatError, match="episode 0 video has 2 frames, seq_lengths.pkl says 5"):
        dino_wm.DinoWMPushTDataset(root)[0]


def test_deformable_round_trip_and_errors(tmp_path):
    import torch

    root = tmp_path / "rope"
    states, actions, frames = write_deformable(root)
    data = dino_wm.DinoWMDeformableDataset(root)
    assert len(data) == 2 and data.episode_lengths() == [4, 4]
    for i in range(2):
        episode = data[i]
        np.testing.assert_array_equal(episode.frames, frames[i].numpy())  # .pth frames are exact
        np.testing.assert_array_equal(episode.actions, actions[i].numpy())
        np.testing.assert_array_equal(episode.states, states[i].numpy())

    torch.save(frames[1][:3], root / "000001" / "obses.pth")
    with pytest.raises(DinoWMFormatError, match=r"000001/obses.pth: episode 1 has 3 frames, states.pth says 4"):
        data[1]
    (root / "000001" / "obses.pth").unlink()
    assert [e.index for e in data.episodes(on_error="skip")] == [0]
    assert data.skipped[0]["episode"] == 1 and "not found" in data.skipped[0]["reason"]

    torch.save(actions[:, :3], root / "actions.pth")
    with pytest.raises(DinoWMFormatError, match=r"actions.pth: shape \(2, 3, 4\) does not match states"):
        dino_wm.DinoWMDeformableDataset(root)


def test_seq_lengths_refuses_expanding_or_oversized_pickles_before_allocating(tmp_path):
    import struct
    import tracemalloc

    path = tmp_path / "seq_lengths.pkl"
    nested = [0] * 10
    for _ in range(6):
        nested = [nested] * 10  # shared references: 10**7 integers once expanded
    path.write_bytes(pickle.dumps(nested, protocol=2))
    assert path.stat().st_size < 200
    tracemalloc.start()
    with pytest.raises(DinoWMFormatError, match=r"seq_lengths.pkl: expected a flat list of integers, item 0 is a list"):
        dino_wm.load_seq_lengths(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * 2**20  # the expansion would take hundreds of MB

    claim = struct.pack("<Q", 2**40)  # BINBYTES8 claiming a terabyte (a bare MemoryError when unpickled)
    path.write_bytes(b"\x80\x04\x8e" + claim + b"abc.")
    with pytest.raises(DinoWMFormatError, match=r"seq_lengths.pkl: not a plain list of episode lengths \(byte 2: "
                                                r"ValueError: expected 1099511627776 bytes"):
        dino_wm.load_seq_lengths(path)
    path.write_bytes(pickle.dumps([]))
    with pytest.raises(DinoWMFormatError, match="seq_lengths.pkl: lists no episodes"):
        dino_wm.load_seq_lengths(path)
    path.write_bytes(pickle.dumps([3, True]))
    with pytest.raises(DinoWMFormatError, match="item 1 is a bool"):
        dino_wm.load_seq_lengths(path)
    with open(path, "wb") as handle:
        handle.truncate(dino_wm.SEQ_LENGTHS_MAX_BYTES + 1)
    with pytest.raises(DinoWMFormatError, match=r"seq_lengths.pkl: \d+ bytes, more than a list of episode lengths"):
        dino_wm.load_seq_lengths(path)


def test_format_errors_are_data_errors():
    from rlvr_envs.core.errors import DataError

    assert issubclass(DinoWMFormatError, DataError)
