"""The RT-1, Rope and Granular video ids on fixtures written in the datasets' real formats
(RT-1: RLDS TFRecord shards converted by the project's converter; DINO-WM: `states.pth`,
`actions.pth`, `{i:06d}/obses.pth`): required arguments, action ranges, frame resizing and
world-model checkpoints that do not fit the task. The env contract itself (checkers,
determinism, gold vs perturbed, single vs vector) runs in tests/test_registry.py.
"""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import numpy as np
import pytest

import rlvr_envs  # noqa: F401  (registers the ids)
from rlvr_envs.core.errors import DataError
from rlvr_envs.registration import entry
from rlvr_envs.video.sources import resize_frames
from rlvr_envs.video.task import VideoPredictionTask, VideoTaskConfig, shipped_world_model
from tests.samples import (generated_deformable_dir, generated_rt1_dir, shared_data_or_skip, untrained_tokenizer_dir,
                           video_fixture_kwargs, write_action_ranges)

RT1 = "RLVRWorld/RT1-SingleStep-v0"
NEEDS_DATA = {"RLVRWorld/RT1-SingleStep-v0": "rlvr-world data rt1", "RLVRWorld/RT1-MultiStep-v0": "rlvr-world data rt1",
              "RLVRWorld/Rope-v0": "deformable/rope", "RLVRWorld/Granular-v0": "deformable/granular"}


def task_of(env_id: str, **kwargs) -> VideoPredictionTask:
    dataset = entry(env_id).kwargs["dataset"]
    return gym.make(env_id, **{**video_fixture_kwargs(dataset), **kwargs}).unwrapped.task


def rt1_train_actions(data_dir: str) -> np.ndarray:
    from rlvr_envs.video.rt1 import RT1NpzDataset

    train = RT1NpzDataset(data_dir, "train", image_shape=(128, 128, 3))
    return np.concatenate([episode.action for episode in train])


# -- required arguments -------------------------------------------------------------------------

@pytest.mark.parametrize("env_id", sorted(NEEDS_DATA))
def test_missing_data_dir_and_tokenizer_fail_at_make_naming_them_and_how_to_get_them(env_id):
    with pytest.raises(ValueError) as caught:
        gym.make(env_id)
    message = str(caught.value)
    assert "data_dir=" in message and "tokenizer=" in message and NEEDS_DATA[env_id] in message
    assert "train_frame_tokenizer --dataset NAME" in message  # a trainer that reads this dataset
    with pytest.raises(ValueError) as caught:
        gym.make(env_id, data_dir=video_fixture_kwargs(entry(env_id).kwargs["dataset"])["data_dir"])
    assert "tokenizer=" in str(caught.value) and "data_dir=" not in str(caught.value)


def test_availability_says_what_is_missing_without_building(monkeypatch, tmp_path, capsys):
    from rlvr_envs.cli import main
    from rlvr_envs.video.metrics import perceptual

    def never(*args, **kwargs):
        raise AssertionError("availability() must not build the task")

    monkeypatch.setattr(VideoPredictionTask, "__init__", never)
    ok, hint = entry(RT1).availability()
    assert not ok and "data_dir=" in hint and "rlvr-world data rt1" in hint
    fixture = video_fixture_kwargs("rt1")
    ok, hint = entry(RT1).availability(data_dir=fixture["data_dir"])
    assert not ok and "tokenizer=" in hint and "data_dir=" not in hint
    assert entry(RT1).availability(data_dir=fixture["data_dir"], tokenizer=fixture["tokenizer"], reward="mae")[0]
    ok, hint = entry("RLVRWorld/Rope-v0").availability(data_dir=fixture["data_dir"], tokenizer=fixture["tokenizer"])
    assert not ok and "nothing usable" in hint and "states.pth" in hint  # an RT-1 folder is no Rope folder
    assert entry("RLVRWorld/PushT-SingleStep-v0").availability(reward="mae") == (True, "embedded")
    # the default reward needs the LPIPS trunk weights, which only a download brings
    monkeypatch.setattr(perceptual, "trunk_checkpoint_path", lambda net: tmp_path / f"{net}.pth")
    ok, hint = entry("RLVRWorld/PushT-SingleStep-v0").availability()
    assert not ok and "LPIPS vgg trunk" in hint and str(tmp_path / "vgg.pth") in hint and "reward='mae'" in hint
    (tmp_path / "vgg.pth").write_bytes(b"")
    assert entry("RLVRWorld/PushT-SingleStep-v0").availability() == (True, "embedded")
    assert main(["list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "no: " in rows["RLVRWorld/Granular-v0"] and "data_dir=" in rows["RLVRWorld/Granular-v0"]


def test_per_dataset_defaults():
    rt1_single, rt1_multi = VideoTaskConfig(dataset="rt1"), VideoTaskConfig(dataset="rt1", layout="multi")
    assert (rt1_single.frame_skip, rt1_single.history_frames) == (1, 4)  # RT-1 is already 3 Hz
    assert (rt1_multi.history_frames, rt1_multi.future_frames) == (1, 7)
    assert VideoTaskConfig(dataset="rt1", layout="multi", future=3).future_frames == 3
    pusht = VideoTaskConfig()
    assert (pusht.frame_skip, pusht.history_frames, VideoTaskConfig(layout="multi").future_frames) == (5, 3, 4)
    assert VideoTaskConfig(dataset="rope").frame_skip == 1
    with pytest.raises(ValueError, match="dataset must be one of"):
        VideoTaskConfig(dataset="bridge").validate()


def test_multi_step_future_is_configurable():
    task = task_of("RLVRWorld/RT1-MultiStep-v0", future=3)
    assert task.config.future_frames == 3 and task.layout.response_len == 3 * (64 + 13)
    assert task.verify([0], [task.target_ids(0)])[0].parsed


# -- episodes and splits ----------------------------------------------------------------------

def test_rt1_split_follows_the_converted_folders():
    test = task_of(RT1, split="test")
    train = task_of(RT1, split="train")
    assert {t.uid.split("/")[1] for t in map(test.transition, range(len(test)))} == {"0"}  # every 100th episode
    assert {t.uid.split("/")[1] for t in map(train.transition, range(len(train)))} == {"1", "2", "3"}
    assert len(task_of(RT1)) == len(test) + len(train)


def test_deformable_split_holds_out_every_tenth_episode():
    rope = task_of("RLVRWorld/Rope-v0", split="test")
    assert {rope.transition(i).uid.split("/")[:2] == ["rope", "0"] for i in range(len(rope))} == {True}
    granular = task_of("RLVRWorld/Granular-v0", split="train")
    assert {granular.transition(i).uid.split("/")[1] for i in range(len(granular))} == {"1", "2"}


def test_missing_rt1_episodes_name_the_converter(tmp_path):
    with pytest.raises(FileNotFoundError, match="rlvr-world data rt1"):
        gym.make(RT1, data_dir=str(tmp_path), tokenizer=video_fixture_kwargs("rt1")["tokenizer"], reward="mae")


# -- action ranges: a file in frac_action_ranges.json's format, or the train split ------------

def test_rt1_action_ranges_from_the_train_split_by_default():
    task = task_of(RT1)
    actions = rt1_train_actions(task.config.data_dir)
    np.testing.assert_array_equal(task.bins.low, actions.min(axis=0))
    np.testing.assert_array_equal(task.bins.high, actions.max(axis=0))
    assert task.describe()["action_ranges"].startswith("data: min/max of the train split's actions (3 episodes")
    assert "action ranges from data" in task.render_text(0)


def test_rt1_action_ranges_from_a_ranges_file(tmp_path):
    from rlvr_envs.video.action_bins import ActionBins
    from rlvr_envs.video.rt1 import ACTION_NAMES

    path = write_action_ranges(tmp_path / "ranges.json", [-2.0] * 13, [2.0] * 13, ACTION_NAMES)
    from_file, from_data = task_of(RT1, action_ranges=str(path)), task_of(RT1)
    assert from_file.describe()["action_ranges"] == f"file: {path}"
    assert from_file.bins.names == ACTION_NAMES and (from_file.bins.high == 2.0).all()
    # the prompt's action tokens are the file's bins of the real actions
    transition = from_file.transition(0)
    expected = from_file.vocab.action_tokens(ActionBins(np.full(13, -2.0), np.full(13, 2.0)).encode(transition.action))
    k = from_file.config.history_frames
    prompt = from_file.prompt_ids(0)[:-1].reshape(k, -1)  # [f a] x k, then bos
    np.testing.assert_array_equal(prompt[:, -13:], expected[:k])
    assert not np.array_equal(from_file.prompt_ids(0), from_data.prompt_ids(0))
    write_action_ranges(tmp_path / "short.json", [-1.0] * 12, [1.0] * 12)
    with pytest.raises(DataError, match=r"short.json: 12 rows of action ranges, but the RT-1 actions have 13 dims"):
        task_of(RT1, action_ranges=str(tmp_path / "short.json"))


def test_rt1_action_ranges_from_the_published_file():
    path = shared_data_or_skip("rt1", "frac_action_ranges.json")
    values = np.asarray(json.loads(path.read_text())["values"])
    task = task_of("RLVRWorld/RT1-MultiStep-v0", action_ranges=str(path))
    np.testing.assert_array_equal(task.bins.low, values[:, 0])
    np.testing.assert_array_equal(task.bins.high, values[:, 1])
    assert task.bins.names[0] == "base_displacement_vector[0]" and task.bins.num_bins == 256


def test_rt1_without_train_episodes_asks_for_a_ranges_file(tmp_path):
    data = tmp_path / "npz"
    shutil.copytree(generated_rt1_dir(), data)
    shutil.rmtree(data / "train")
    with pytest.raises(FileNotFoundError, match="pass action_ranges="):
        task_of(RT1, data_dir=str(data), split="test")
    path = write_action_ranges(tmp_path / "ranges.json", [-1.0] * 13, [1.0] * 13)
    assert len(task_of(RT1, data_dir=str(data), split="test", action_ranges=str(path))) > 0


def test_deformable_action_ranges_from_the_train_episodes():
    import torch

    task = task_of("RLVRWorld/Rope-v0")
    actions = torch.load(f"{task.config.data_dir}/actions.pth", weights_only=True).numpy()
    np.testing.assert_allclose(task.bins.low, actions[1:].reshape(-1, 4).min(axis=0))  # episode 0 is held out
    np.testing.assert_allclose(task.bins.high, actions[1:].reshape(-1, 4).max(axis=0))
    assert "2 train episodes" in task.describe()["action_ranges"]


# -- frames are resized once to the tokenizer's resolution ---------------------------------------

def test_frames_are_resized_to_the_tokenizer_resolution_and_scored_there():
    from rlvr_envs.video.rt1 import RT1NpzDataset

    tokenizer = untrained_tokenizer_dir(32, 40)  # not even RT-1's aspect ratio: resized all the same
    task = task_of(RT1, tokenizer=tokenizer)
    assert task.describe()["frames"].startswith("128x128 resized to 32x40")
    transition = task.transition(0)  # episode 0 (test split), window at frame 0
    original = RT1NpzDataset(task.config.data_dir, "test", image_shape=(128, 128, 3))[0].image
    k = task.config.history_frames
    np.testing.assert_array_equal(transition.state, resize_frames(original[:k], (32, 40)))
    np.testing.assert_array_equal(transition.next_state, resize_frames(original[k:k + 1], (32, 40)))
    result = task.verify([0], [task.target_ids(0)])[0]
    decoded, _ = task.decode(0, task.target_ids(0))
    assert result.parsed and tuple(decoded.shape) == (1, 32, 40, 3)
    assert task.render_frames(0, task.target_ids(0)).shape == (64, 40, 3)


def test_frames_at_the_tokenizer_resolution_are_kept_exactly():
    import torch

    task = task_of("RLVRWorld/Granular-v0")
    frames = torch.load(f"{generated_deformable_dir('granular')}/000000/obses.pth", weights_only=True).numpy()
    np.testing.assert_array_equal(task.transition(0).next_state[0], frames[1])
    assert task.describe()["frames"] == "64x64 (the tokenizer's resolution)"
    assert resize_frames(frames, (64, 64)) is frames
    up = np.repeat(np.repeat(frames, 2, axis=1), 2, axis=2)
    assert np.abs(resize_frames(up, (64, 64)).astype(int) - frames).mean() < 2.0


# -- world-model checkpoints ---------------------------------------------------------------------

def _save_model(directory, vocab, max_len):
    from rlvr_envs.video.world_model import build_world_model

    build_world_model(vocab, max_len, "tiny").save_pretrained(str(directory))
    return str(directory)


def test_a_world_model_for_another_vocabulary_fails_naming_both(tmp_path):
    from rlvr_envs.video.layout import VideoVocabulary

    task = task_of(RT1)
    needed = task.layout.prompt_len + task.layout.response_len
    other = _save_model(tmp_path / "other", VideoVocabulary(frame_codes=500), needed)
    with pytest.raises(ValueError) as caught:
        task_of(RT1, model=other)
    message = str(caught.value)
    assert other in message and task.tokenizer_dir in message
    assert "vocabulary size 759" in message and "needs 1259" in message
    short = _save_model(tmp_path / "short", task.vocab, needed - 1)
    with pytest.raises(ValueError, match=f"{short} has {needed - 1} positions.*needs {needed}"):
        task_of(RT1, model=short)
    with pytest.raises(ValueError, match="no world model ships for RT-1: pass model="):
        shipped_world_model(task)


def test_a_matching_world_model_loads(tmp_path):
    task = task_of(RT1)
    directory = _save_model(tmp_path / "model", task.vocab, task.layout.prompt_len + task.layout.response_len)
    with_model = task_of(RT1, model=directory)
    assert with_model.describe()["model"] == directory
    model = shipped_world_model(with_model)  # the task's model= (sampling it: tests/test_video_task.py)
    assert model.config.vocab_size == task.vocab.size and model.card == {}
