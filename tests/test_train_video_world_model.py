"""`trainers.train_video_world_model` on the non-PushT datasets: the model it saves serves that dataset's env."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rlvr_envs  # noqa: F401  (registers the ids)
from tests.samples import generated_deformable_dir, generated_rt1_dir, untrained_tokenizer_dir
from trainers.train_video_world_model import Args, main, parse_args


@pytest.mark.parametrize("dataset, layout, env_id, data, frame_skip, future", [
    ("rt1", "multi", "RLVRWorld/RT1-MultiStep-v0", generated_rt1_dir, 1, 7),
    ("rope", "single", "RLVRWorld/Rope-v0", lambda: generated_deformable_dir("rope"), 1, 4)])
def test_a_world_model_trained_on_a_dataset_serves_its_env(tmp_path, dataset, layout, env_id, data, frame_skip,
                                                            future):
    data_dir, tokenizer, out = data(), untrained_tokenizer_dir(64, 64), tmp_path / "model"
    card = main(parse_args(["--dataset", dataset, "--data", data_dir, "--tokenizer", tokenizer, "--layout", layout,
                            "--steps", "2", "--batch-size", "2", "--eval-windows", "2", "--eval-every", "1000",
                            "--checkpoint-every", "1000", "--threads", "1", "--out", str(out)]))
    assert card["args"]["frame_skip"] == frame_skip and card["args"]["future"] == future  # the dataset's defaults
    assert card["train_windows"] > 0 and card["held_out"]["model"]["parsed"] >= 0.0
    label = {"rt1": "RT-1", "rope": "Rope"}[dataset]
    assert f"{layout}-step {label} world model" in card["what"]
    # a model for another vocabulary or layout would fail here
    env = gym.make(env_id, data_dir=data_dir, tokenizer=tokenizer, reward="mae", model=str(out), layout=layout)
    env.reset(seed=0)


def test_pusht_keeps_its_defaults_and_bad_datasets_fail_early():
    args = Args().validate()
    assert (args.dataset, args.frame_skip, args.future) == ("pusht", 5, 4)
    assert Args(frame_skip=2, future=3).validate().frame_skip == 2
    with pytest.raises(ValueError, match="one of pusht, rt1, rope, granular"):
        Args(dataset="rt2").validate()
