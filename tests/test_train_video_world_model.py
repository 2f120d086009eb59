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


def test_pusht_keeps_its_defaults_and_bad_datasets_fail_early(tmp_path):
    from rlvr_envs.video.task import default_tokenizer_dir

    tokenizer = str(default_tokenizer_dir())
    args = Args(out=str(tmp_path / "model"), tokenizer=tokenizer).validate()
    assert (args.dataset, args.frame_skip, args.future) == ("pusht", 5, 4)
    assert Args(frame_skip=2, future=3, tokenizer=tokenizer, out=str(tmp_path / "m2")).validate().frame_skip == 2
    with pytest.raises(ValueError, match="one of pusht, rt1, rope, granular"):
        Args(dataset="rt2").validate()
    with pytest.raises(FileNotFoundError, match="no frame tokenizer there"):
        Args(tokenizer=str(tmp_path / "missing"), out=str(tmp_path / "m3")).validate()


def test_a_step_in_micro_batches_equals_the_step_in_one_forward():
    """Gradient accumulation: the same update whatever the split (the loss is the batch's token mean)."""
    import numpy as np
    import torch

    from rlvr_envs.core.device import setup_device
    from rlvr_envs.core.sizing import config_cost, micro_batch
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.world_model import build_world_model
    from trainers.distributed import TrainRun
    from trainers.train_video_world_model import make_optimizer, training_step

    vocab = VideoVocabulary(frame_codes=30, action_bins=4)
    rng = np.random.default_rng(0)
    windows = torch.as_tensor(rng.integers(0, 30, (6, 12)))
    labels = windows.clone()
    labels[:, :3] = -100
    labels[1, :9] = -100  # windows with different numbers of labelled tokens
    counts = (labels[:, 1:] != -100).sum(1).numpy()
    run = TrainRun(None, setup_device("cpu", "fp32"))
    pick = np.array([0, 1, 2, 3])
    results = []
    for micro in (4, 2, 1):
        model = build_world_model(vocab, 12, "tiny", seed=0)
        optimizer = make_optimizer(model, 1e-2, torch.device("cpu"))
        loss = training_step(model, optimizer, run, windows, labels, pick, counts, micro)
        results.append((float(loss), {name: p.grad.clone() for name, p in model.named_parameters()}))
    for loss, grads in results[1:]:  # gradients, not weights: Adam's first step is ~lr * sign(gradient)
        assert abs(loss - results[0][0]) < 1e-5
        assert all(torch.allclose(grads[k], results[0][1][k], rtol=1e-4, atol=1e-7) for k in grads)
    cost = config_cost(model.config, 12)
    assert micro_batch(cost, 64, None) == 64  # no memory figure (a CPU): the whole batch
    assert micro_batch(cost, 64, cost.state_bytes / 0.9 + 5.5 * cost.activation_bytes_per_sample) == 4  # divisor of 64
    assert micro_batch(cost, 64, 1.0) == 1


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="torch.compile's warm-up takes ~40 s on a CPU; on a GPU machine run "
                    "`pytest -k compiled` (benchmarks.world_model_speed reports the same difference)")
def test_a_compiled_step_gives_the_eager_loss_on_cuda():
    import numpy as np
    import torch

    from rlvr_envs.core.device import setup_device
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.world_model import build_world_model
    from trainers.distributed import TrainRun
    from trainers.train_video_world_model import make_optimizer, training_step

    run = TrainRun(None, setup_device("cuda"))
    windows = torch.as_tensor(np.random.default_rng(0).integers(0, 30, (4, 64))).cuda()
    counts, pick = np.full(4, 63), np.arange(4)
    losses = []
    for compiled in (False, True):
        model = build_world_model(VideoVocabulary(frame_codes=30, action_bins=4), 64, "tiny", seed=0).cuda()
        step_model = torch.compile(model) if compiled else model
        losses.append(float(training_step(step_model, make_optimizer(model, 1e-3, run.device), run, windows, windows,
                                          pick, counts, 4)))
    assert abs(losses[0] - losses[1]) < 1e-2 * abs(losses[0])  # bf16 autocast: rounding, not arithmetic
