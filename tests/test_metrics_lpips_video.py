"""LPIPS wrapper vs the `lpips` package, backbone bookkeeping, the video reward, repetition."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlvr_envs.video import metrics
from rlvr_envs.video.metrics import LPIPSWeightsUnavailable, load_lpips

SEED = 0


def _reference(net: str, seed: int):
    """The lpips package itself, with the same seeded random trunk (offline)."""
    import warnings

    import lpips

    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lpips.LPIPS(net=net, pnet_rand=True, verbose=False).eval()


def _frames(rng, shape):
    return torch.from_numpy(rng.random(shape)).float()


@pytest.fixture(scope="module")
def pusht_pair():
    from rlvr_envs.video import pusht

    env = pusht.make_env(64, 10)
    env.reset(seed=7)
    first = pusht.render_frame(env)
    observation, *_ = env.step(np.array([256.0, 256.0], dtype=np.float32))
    env.close()
    return np.stack([first, observation]), np.stack([observation, first])


@pytest.mark.parametrize("net", ["vgg", "alex"])
def test_batched_lpips_equals_the_package_per_image(net, pusht_pair):
    model = load_lpips(net, random_backbone_seed=SEED)
    reference = _reference(net, SEED)
    rng = np.random.default_rng(0)
    pred = torch.cat([_frames(rng, (2, 64, 64, 3)), torch.from_numpy(pusht_pair[0]).float() / 255])
    target = torch.cat([_frames(rng, (2, 64, 64, 3)), torch.from_numpy(pusht_pair[1]).float() / 255])
    ours = model(pred, target)
    assert ours.shape == (4,)
    with torch.no_grad():
        for i in range(4):
            x = pred[i].permute(2, 0, 1)[None] * 2 - 1
            y = target[i].permute(2, 0, 1)[None] * 2 - 1
            assert float(ours[i]) == pytest.approx(float(reference(x, y)), abs=1e-5)
    assert model(pred[:1], pred[:1]).abs().max() < 1e-6


def test_models_are_cached_and_labelled():
    model = load_lpips("vgg", random_backbone_seed=SEED)
    assert model is load_lpips("vgg", "cpu", random_backbone_seed=SEED)
    assert model.backbone == "random(seed=0)" and model.net == "vgg"
    other = load_lpips("vgg", random_backbone_seed=1)
    assert other is not model and other.backbone == "random(seed=1)"
    x, y = torch.rand(1, 32, 32, 3), torch.rand(1, 32, 32, 3)
    assert float(model(x, y)) != float(other(x, y))  # different trunks really differ
    assert not torch.is_grad_enabled() or not any(p.requires_grad for p in model.network.parameters())


def test_missing_weights_fail_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    with pytest.raises(LPIPSWeightsUnavailable) as caught:
        load_lpips("alex", allow_download=False)
    message = str(caught.value)
    assert str(tmp_path / "checkpoints" / "alexnet-owt-7be5be79.pth") in message
    assert "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth" in message
    assert "random_backbone_seed" in message
    with pytest.raises(ValueError, match="net must be one of"):
        load_lpips("squeeze", random_backbone_seed=0)


def test_chunked_forward_matches_one_forward():
    model = load_lpips("alex", random_backbone_seed=SEED)
    rng = np.random.default_rng(3)
    pred, target = _frames(rng, (2, 3, 32, 32, 3)), _frames(rng, (2, 3, 32, 32, 3))
    whole = model(pred, target)
    assert whole.shape == (2, 3)
    torch.testing.assert_close(model(pred, target, max_batch=2), whole, rtol=0, atol=1e-6)


def test_frame_reward_is_minus_l1_plus_lpips_averaged_over_frames():
    model = load_lpips("vgg", random_backbone_seed=SEED)
    rng = np.random.default_rng(4)
    target = _frames(rng, (3, 2, 32, 32, 3))
    pred = target.clone()
    pred[1] = _frames(rng, (2, 32, 32, 3))
    pred[2, 1] = _frames(rng, (32, 32, 3))
    batch = metrics.frame_reward(pred, target, model)
    assert batch.reward.shape == (3,) and batch.lpips_backbone == "random(seed=0)" and batch.lpips_net == "vgg"
    assert float(batch.reward[0]) == pytest.approx(0.0, abs=1e-6)  # a perfect prediction
    assert float(batch.reward[0]) > float(batch.reward[2]) > float(batch.reward[1])  # fewer wrong frames is better
    for i in range(3):
        per_frame = metrics.mae(pred[i], target[i]) + model(pred[i], target[i])
        assert float(batch.reward[i]) == pytest.approx(-float(per_frame.mean()), abs=1e-6)
    assert batch.components(1)["l1"] == pytest.approx(float(batch.l1[1]))
    single = metrics.frame_reward(pred[:, 0], target[:, 0], model)  # [B, H, W, 3] reads as T = 1
    assert single.reward.shape == (3,)


def test_video_metrics_report_in_paper_units_with_provenance():
    model = load_lpips("vgg", random_backbone_seed=SEED)
    rng = np.random.default_rng(5)
    pred, target = _frames(rng, (2, 2, 32, 32, 3)), _frames(rng, (2, 2, 32, 32, 3))
    batch = metrics.video_prediction_metrics(pred, target, model)
    assert set(batch.values) == {"mse", "mae", "psnr", "ssim", "lpips"}
    report = batch.report()
    raw = batch.mean()
    for name in ("mse", "ssim", "lpips"):
        assert report[name] == pytest.approx(100 * raw[name])
    for name in ("mae", "psnr"):
        assert report[name] == pytest.approx(raw[name])
    assert report["lpips_backbone"] == "random(seed=0)" and report["lpips_net"] == "vgg"
    without = metrics.video_prediction_metrics(pred, target)
    assert "lpips" not in without.values and without.report()["lpips_backbone"] is None


def test_repetition_single_and_multi_step():
    last_context = torch.tensor([[1, 2, 3], [4, 5, 6]])
    prediction = torch.tensor([[1, 2, 3], [4, 5, 7]])
    flags = metrics.single_step_repetition(prediction, last_context)
    assert flags.tolist() == [True, False]
    assert metrics.repetition_rate(flags) == 0.5

    frames = torch.tensor([
        [[1, 1], [1, 1], [2, 2], [3, 3]],  # one repeat (frame 1 copies frame 0)
        [[1, 2], [3, 4], [5, 6], [7, 8]],  # none
    ])
    multi = metrics.multi_step_repetition(frames)
    assert multi.tolist() == [[True, False, False], [False, False, False]]
    assert metrics.repetition_rate(multi, per="frame") == pytest.approx(1 / 6)
    assert metrics.repetition_rate(multi, per="sample") == pytest.approx(1 / 2)
    with pytest.raises(ValueError, match="T>=2"):
        metrics.multi_step_repetition(frames[:, :1])
    with pytest.raises(ValueError, match="per must be"):
        metrics.repetition_rate(multi, per="episode")


def test_lpips_runs_on_the_requested_device():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_lpips("alex", device, random_backbone_seed=SEED)
    out = model(torch.rand(2, 32, 32, 3), torch.rand(2, 32, 32, 3))  # CPU inputs are moved
    assert out.device.type == device


def test_group_target_broadcast_equals_repeated_target():
    # A GRPO group: G predictions of one ground truth; the target is given once.
    model = load_lpips("alex", random_backbone_seed=SEED)
    rng = np.random.default_rng(6)
    pred, target = _frames(rng, (4, 2, 32, 32, 3)), _frames(rng, (1, 2, 32, 32, 3))
    repeated = target.expand(4, -1, -1, -1, -1).clone()
    torch.testing.assert_close(model(pred, target), model(pred, repeated), rtol=0, atol=1e-6)
    shared = metrics.frame_reward(pred, target, model)
    full = metrics.frame_reward(pred, repeated, model)
    torch.testing.assert_close(shared.reward, full.reward, rtol=0, atol=1e-6)
    torch.testing.assert_close(metrics.video_prediction_metrics(pred, target).values["ssim"],
                               metrics.video_prediction_metrics(pred, repeated).values["ssim"])
    with pytest.raises(ValueError, match="does not broadcast"):
        metrics.frame_reward(pred, _frames(rng, (3, 2, 32, 32, 3)), model)


def test_missing_weights_message_names_the_one_command_and_reads_cleanly(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    with pytest.raises(LPIPSWeightsUnavailable) as caught:
        load_lpips("vgg", allow_download=False)
    message = str(caught.value)
    assert "`rlvr-world data lpips --net vgg`" in message and ".." not in message and "\n" not in message


def test_trunk_comes_through_torchvisions_own_cache(tmp_path, monkeypatch, capsys):
    """`rlvr-world data lpips` fetches through torchvision's downloader (faked here: no network) into
    torchvision's cache; the pretrained LPIPS then loads from that cache with no download."""
    import argparse

    import torchvision

    from rlvr_envs.video.metrics import perceptual

    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    fetched = []

    def fake_download(url, dst, hash_prefix=None, progress=True):
        fetched.append(url)
        torch.save(torchvision.models.alexnet().state_dict(), dst)

    monkeypatch.setattr(torch.hub, "download_url_to_file", fake_download)
    assert perceptual.run_data_command(argparse.Namespace(net="alex")) == 0
    path = perceptual.trunk_checkpoint_path("alex")
    assert path.is_file() and path.parent == tmp_path / "checkpoints" and str(path) in capsys.readouterr().out
    monkeypatch.setattr(perceptual, "_MODELS", {})
    model = load_lpips("alex")
    assert model.backbone == "pretrained" and fetched == [perceptual._trunk_weights("alex").url]


def test_download_failure_is_one_line_naming_url_and_path(tmp_path, monkeypatch):
    import argparse
    import urllib.error

    from rlvr_envs.core.errors import DownloadError
    from rlvr_envs.video.metrics import perceptual

    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))

    def offline(url, dst, hash_prefix=None, progress=True):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(torch.hub, "download_url_to_file", offline)
    with pytest.raises(DownloadError, match=r"could not download https://download.pytorch.org/models/alexnet.*"
                                            r"copy it to .*alexnet-owt-7be5be79.pth"):
        perceptual.run_data_command(argparse.Namespace(net="alex"))
