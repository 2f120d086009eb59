"""`trainers.train_frame_tokenizer` on every video dataset: a tokenizer it trains serves that dataset's env."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest

import rlvr_envs  # noqa: F401  (registers the ids)
from tests.samples import generated_deformable_dir, generated_rt1_dir
from trainers.train_frame_tokenizer import main, parse_args

QUICK = ["--steps", "3", "--batch-size", "4", "--eval-frames", "8", "--checkpoint-every", "100", "--threads", "1"]


@pytest.mark.parametrize("dataset, env_id, data", [
    ("rt1", "RLVRWorld/RT1-SingleStep-v0", generated_rt1_dir),
    ("rope", "RLVRWorld/Rope-v0", lambda: generated_deformable_dir("rope"))])
def test_a_tokenizer_trained_on_a_datasets_episodes_serves_its_env(tmp_path, dataset, env_id, data):
    data_dir, out = data(), tmp_path / "tokenizer"
    card = main(parse_args(["--dataset", dataset, "--data", data_dir, "--resolution", "32,48", "--out", str(out),
                            *QUICK]))
    assert card["dataset"] == dataset and "frames (32x48)" in card["what"]
    assert card["train_frames"] > 0 and card["held_out_frames"] > 0
    assert json.loads((out / "config.json").read_text())["card"]["dataset"] == dataset
    env = gym.make(env_id, data_dir=data_dir, tokenizer=str(out), reward="mae")
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert task.resolution == (32, 48) and task.native_resolution not in (None, (32, 48))
    _, reward, terminated, _, step_info = env.step(task.target_ids(info["index"]))
    assert terminated and math.isfinite(reward) and "mae" in step_info["metrics"]


def test_rt1_holds_out_its_test_folder(tmp_path):
    card = main(parse_args(["--dataset", "rt1", "--data", generated_rt1_dir(), "--resolution", "32,32",
                            "--out", str(tmp_path / "t"), "--eval-frames", "10000", *QUICK[:4], *QUICK[6:]]))
    from rlvr_envs.video.sources import RT1Episodes

    held_out = RT1Episodes(generated_rt1_dir(), "test")
    test_frames = sum(len(held_out[i].image) for i in range(len(held_out)))
    assert card["held_out_frames"] == test_frames


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "nope"], "one of pusht, rt1, rope, granular"),
    (["--resolution", "30,48"], "multiples of --downsample 8"),
    (["--resolution", "64"], "expected H,W"),
])
def test_bad_arguments_fail_before_loading_anything(argv, message, tmp_path, capsys):
    # refused while parsing (validate() at the command line: one line, exit 2) and by main() itself
    with pytest.raises(SystemExit) as caught:
        parse_args([*argv, "--data", str(tmp_path / "absent"), "--out", str(tmp_path / "t")])
    assert caught.value.code == 2 and message in capsys.readouterr().err
    from trainers.train_frame_tokenizer import Args

    with pytest.raises(ValueError, match=message):
        main(Args(**{a[2:].replace("-", "_"): v for a, v in zip(argv[::2], argv[1::2])},
                  data=str(tmp_path / "absent"), out=str(tmp_path / "t")))


def test_an_rt1_folder_without_episodes_names_the_converter(tmp_path):
    with pytest.raises(SystemExit, match="rlvr-world data rt1"):
        main(parse_args(["--dataset", "rt1", "--data", str(tmp_path), "--out", str(tmp_path / "t"), *QUICK]))
