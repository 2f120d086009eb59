"""Pixel metrics against scikit-image, on random frames and real gym-pusht renders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlvr_envs.video.metrics import as_unit_frames, gaussian_window, mae, mse, psnr, ssim


def _skimage_ssim(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return structural_similarity(a, b, data_range=1.0, channel_axis=-1, gaussian_weights=True, sigma=1.5,
                                 use_sample_covariance=False)


def _skimage_psnr(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import peak_signal_noise_ratio

    return peak_signal_noise_ratio(a, b, data_range=1.0)


@pytest.fixture(scope="module")
def pusht_frames() -> np.ndarray:
    """Six consecutive real PushT frames (96x96) rendered by gym-pusht."""
    from rlvr_envs.video import pusht

    env = pusht.make_env(96, 10)
    env.reset(seed=3)
    frames = [pusht.render_frame(env)]
    target = pusht.physics_state(env)[4:6]
    for _ in range(5):
        observation, *_ = env.step(target.astype(np.float32))
        frames.append(observation)
    env.close()
    return np.stack(frames)


def _pairs(rng: np.random.Generator):
    noisy = rng.random((3, 40, 52, 3))
    return {
        "random": (rng.random((3, 40, 52, 3)), rng.random((3, 40, 52, 3))),
        "correlated": (noisy, np.clip(noisy + rng.normal(0, 0.05, noisy.shape), 0, 1)),
    }


@pytest.mark.parametrize("kind", ["random", "correlated"])
def test_ssim_and_psnr_match_skimage_on_random_frames(kind):
    pred, target = _pairs(np.random.default_rng(0))[kind]
    ours_ssim = ssim(torch.from_numpy(pred).float(), torch.from_numpy(target).float())
    ours_psnr = psnr(torch.from_numpy(pred).float(), torch.from_numpy(target).float())
    for i in range(pred.shape[0]):
        assert float(ours_ssim[i]) == pytest.approx(_skimage_ssim(pred[i], target[i]), abs=1e-5)
        assert float(ours_psnr[i]) == pytest.approx(_skimage_psnr(pred[i], target[i]), abs=1e-5)


def test_metrics_match_references_on_real_pusht_frames(pusht_frames):
    pred, target = pusht_frames[:-1], pusht_frames[1:]  # "predict" each frame by the previous one
    unit_pred, unit_target = pred / 255.0, target / 255.0
    ours = {name: fn(pred, target) for name, fn in (("ssim", ssim), ("psnr", psnr), ("mse", mse), ("mae", mae))}
    assert ours["ssim"].shape == (5,)
    for i in range(5):
        assert float(ours["ssim"][i]) == pytest.approx(_skimage_ssim(unit_pred[i], unit_target[i]), abs=1e-5)
        if (pred[i] != target[i]).any():
            assert float(ours["psnr"][i]) == pytest.approx(_skimage_psnr(unit_pred[i], unit_target[i]), abs=1e-5)
        assert float(ours["mse"][i]) == pytest.approx(np.mean((unit_pred[i] - unit_target[i]) ** 2), abs=1e-7)
        assert float(ours["mae"][i]) == pytest.approx(np.mean(np.abs(unit_pred[i] - unit_target[i])), abs=1e-7)
    assert (ours["ssim"] < 1).any()  # the scene moved


def test_identical_frames_are_perfect():
    frames = torch.rand(2, 3, 16, 16, 3)
    assert torch.allclose(ssim(frames, frames), torch.ones(2, 3))
    assert torch.isinf(psnr(frames, frames)).all()
    assert (mse(frames, frames) == 0).all() and (mae(frames, frames) == 0).all()


def test_batched_shapes_equal_per_frame_values():
    rng = np.random.default_rng(1)
    pred = torch.from_numpy(rng.random((2, 3, 24, 20, 3))).float()
    target = torch.from_numpy(rng.random((2, 3, 24, 20, 3))).float()
    for fn in (ssim, psnr, mse, mae):
        batched = fn(pred, target)
        assert batched.shape == (2, 3)
        single = torch.stack([fn(pred[b, t][None], target[b, t][None])[0] for b in range(2) for t in range(3)])
        torch.testing.assert_close(batched.reshape(-1), single, rtol=0, atol=1e-6)


def test_gaussian_window_is_the_11_tap_sigma_1_5_window():
    taps = gaussian_window()
    assert taps.numel() == 11 and float(taps.sum()) == pytest.approx(1.0)
    assert float(taps[5] / taps[4]) == pytest.approx(np.exp(0.5 / 1.5**2))


def test_input_checks():
    with pytest.raises(ValueError, match=r"channels-last"):
        mse(torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mae(torch.rand(1, 16, 16, 3) * 255, torch.rand(1, 16, 16, 3))
    with pytest.raises(ValueError, match="NaN"):
        mae(torch.full((1, 16, 16, 3), float("nan")), torch.rand(1, 16, 16, 3))
    with pytest.raises(ValueError, match="shape"):
        ssim(torch.rand(1, 16, 16, 3), torch.rand(1, 16, 17, 3))
    with pytest.raises(ValueError, match="at least 11x11"):
        ssim(torch.rand(1, 8, 8, 3), torch.rand(1, 8, 8, 3))
    uint8 = np.full((1, 4, 4, 3), 255, dtype=np.uint8)
    assert float(as_unit_frames(uint8).max()) == 1.0


def test_runs_on_the_device_of_its_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    pred, target = torch.rand(2, 16, 16, 3, device=device), torch.rand(2, 16, 16, 3, device=device)
    for fn in (ssim, psnr, mse, mae):
        out = fn(pred, target)
        assert out.device.type == device
        torch.testing.assert_close(out.cpu(), fn(pred.cpu(), target.cpu()), rtol=1e-5, atol=1e-5)
