"""Frame-window sampling over episode sources, and the uniform action bins."""

from __future__ import annotations

import numpy as np
import pytest

from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec, frames_and_actions
from rlvr_envs.video.action_bins import ActionBins
from tests.samples import shared_data_or_skip


class Episodes:
    """Episodes whose frame t is filled with the value t and action t equals [episode, t]."""

    def __init__(self, frame_counts, action_counts):
        self.episodes = []
        for episode, (frames, actions) in enumerate(zip(frame_counts, action_counts)):
            video = np.broadcast_to(np.arange(frames, dtype=np.uint8)[:, None, None, None], (frames, 4, 4, 3))
            self.episodes.append((video, np.array([[episode, t] for t in range(actions)], dtype=np.float32)))

    def __len__(self):
        return len(self.episodes)

    def __getitem__(self, index):
        return self.episodes[index]


def test_single_step_windows_hold_k_history_one_future_and_the_actions_between():
    source = Episodes(frame_counts=[7, 5], action_counts=[6, 4])  # PushT style: F frames, F-1 actions
    data = FrameWindowDataset(source, WindowSpec.single_step(history=4))
    assert len(data) == (7 - 5 + 1) + (5 - 5 + 1)
    window = data[1]
    assert (window.episode, window.start) == (0, 1)
    assert window.history[:, 0, 0, 0].tolist() == [1, 2, 3, 4]
    assert window.future[:, 0, 0, 0].tolist() == [5]
    assert window.actions[:, 1].tolist() == [1, 2, 3, 4]  # a_t leads from frame t to t+1
    last = data[len(data) - 1]
    assert (last.episode, last.start) == (1, 0)


def test_multi_step_windows_with_an_action_after_every_frame():
    source = Episodes(frame_counts=[12, 12], action_counts=[12, 11])  # RT-1 style vs PushT style
    spec = WindowSpec.multi_step(context=1, future=8)
    assert (spec.frames, spec.actions) == (9, 9)
    data = FrameWindowDataset(source, spec)
    starts = [(int(w.episode), int(w.start)) for w in data]
    assert starts == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]  # 11 actions cap episode 1
    window = data[3]
    assert window.history.shape == (1, 4, 4, 3) and window.future.shape == (8, 4, 4, 3)
    assert window.future[:, 0, 0, 0].tolist() == list(range(4, 12))
    assert window.actions[:, 1].tolist() == list(range(3, 12))


def test_stride_short_episodes_and_sampling():
    source = Episodes(frame_counts=[10, 3], action_counts=[9, 2])
    data = FrameWindowDataset(source, WindowSpec(history=2, future=2, stride=3))
    assert [w.start for w in data] == [0, 3, 6]  # the 3-frame episode is too short for 4 frames
    rng = np.random.default_rng(0)
    sample = data.sample(rng, 5)
    assert len(sample) == 5 and all(w.episode == 0 for w in sample)
    empty = FrameWindowDataset(Episodes([3], [2]), WindowSpec(history=4, future=1))
    with pytest.raises(ValueError, match="no windows"):
        empty.sample(rng, 1)
    with pytest.raises(ValueError, match=">= 1"):
        WindowSpec(history=0).validate()


def test_windows_over_generated_pusht_episodes():
    from rlvr_envs.video import pusht

    config = pusht.PushTGenerationConfig(episodes=1, resolution=32, seed=0, max_steps=6,
                                         policy_weights={"random": 1.0})
    generator = pusht.PushTGenerator(config)
    episode = generator.episode(0)
    generator.close()
    data = FrameWindowDataset([episode], WindowSpec.single_step(history=3))
    assert len(data) == len(episode) + 1 - 4 + 1
    window = data[0]
    np.testing.assert_array_equal(window.future[0], episode.frames[3])
    np.testing.assert_array_equal(window.actions, episode.actions[:3])
    frames, actions = frames_and_actions(episode)
    assert frames.shape[0] == actions.shape[0] + 1
    with pytest.raises(TypeError, match="cannot read frames"):
        frames_and_actions(object())


def test_action_bins_round_trip_within_half_a_bin():
    rng = np.random.default_rng(0)
    actions = rng.uniform([-1, 0, 5], [1, 3, 5], size=(500, 3))  # last dim is constant
    bins = ActionBins.from_data(actions)
    ids = bins.encode(actions)
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() <= 255
    assert (ids[:, 2] == 0).all()
    error = np.abs(bins.decode(ids) - actions)
    assert (error <= bins.bin_width / 2 + 1e-12).all()
    np.testing.assert_allclose(bins.decode(ids)[:, 2], 5.0)
    np.testing.assert_array_equal(bins.low, actions.min(axis=0))
    bins = ActionBins(np.array([-1.0, 0.0, 5.0]), np.array([1.0, 3.0, 5.0]))
    assert bins.encode(np.array([[-1.0, 0.0, 5.0]]))[0, :2].tolist() == [0, 0]
    assert bins.encode(np.array([[1.0, 3.0, 5.0]]))[0, :2].tolist() == [255, 255]
    assert bins.encode(np.array([[7.0, -9.0, 5.0]]))[0, :2].tolist() == [255, 0]  # clipped
    # bin edges: width 2/256, so -1 + 2/256 starts bin 1
    assert bins.encode(np.array([[-1 + 2 / 256 + 1e-9, 0, 5]]))[0, 0] == 1


def test_action_bins_from_the_published_rt1_ranges():
    from rlvr_envs.video.rt1 import ACTION_NAMES

    path = shared_data_or_skip("rt1", "frac_action_ranges.json")
    bins = ActionBins.from_ranges_file(path)
    assert bins.dim == 13 and bins.names == ACTION_NAMES
    rng = np.random.default_rng(1)
    actions = rng.uniform(bins.low, bins.high, size=(1000, 13))
    error = np.abs(bins.decode(bins.encode(actions)) - actions)
    assert (error <= bins.bin_width / 2 + 1e-12).all()
    onehot = np.zeros((1, 13))
    onehot[0, 7] = 1.0
    decoded = bins.decode(bins.encode(onehot))
    assert abs(decoded[0, 7] - 1.0) <= bins.bin_width[7] / 2


def test_action_bins_validation():
    with pytest.raises(ValueError, match="high"):
        ActionBins(np.array([1.0]), np.array([0.0]))
    bins = ActionBins(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="dimension 2"):
        bins.encode(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        bins.encode(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match=r"\[0, 256\)"):
        bins.decode(np.array([[256, 0]]))


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"values": [[-1, 1], [0, 2]', r"ranges.json:1: the action ranges file is not valid JSON \(column \d+"),
        ('{"values": [[-1, 1], [0, "2"]]}', r"ranges.json: 'values' row 1 is \[0, '2'\], expected \[min, max\] numbers"),
        ('{"values": [[-1, 1], [2, 0]]}', r"ranges.json: dimension 1: high 0.0 < low 2.0"),
        ('{"values": [[-1, 1], [0, NaN]]}', r"ranges.json: dimension 1: range \[0.0, nan\] is not finite"),
        ('{"values": [[-1, 1]], "names": ["a", "b"]}', r"ranges.json: 2 names for 1 dimensions"),
        ('[[-1, 1]]', r"ranges.json: expected an object with a non-empty 'values' list"),
    ],
)
def test_a_broken_ranges_file_names_the_file_and_row(tmp_path, text, message):
    from rlvr_envs.core.errors import DataError

    path = tmp_path / "ranges.json"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        ActionBins.from_ranges_file(path)


def test_windows_name_the_episode_file_when_it_holds_less_than_counted():
    from rlvr_envs.core.errors import DataError

    source = Episodes(frame_counts=[6], action_counts=[5])
    source.paths = ["/data/episode_000000.npz"]
    windows = FrameWindowDataset(source, WindowSpec.single_step(history=2), lengths=[(8, 7)])  # stale lengths
    windows[3]  # frames 3..5 exist
    with pytest.raises(DataError, match=r"/data/episode_000000.npz \(episode 0\): holds 6 frames and 5 actions"):
        windows[5]
    source.episodes[0] = (np.zeros((6, 4, 4)), np.zeros((5, 2)))
    with pytest.raises(DataError, match=r"episode_000000.npz \(episode 0\): frames shaped \(6, 4, 4\)"):
        FrameWindowDataset(source, WindowSpec.single_step(history=2))
