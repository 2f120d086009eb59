"""LPIPS (Zhang et al., 2018) through the `lpips` package, batched, with an explicit backbone.

LPIPS = a frozen ImageNet classifier trunk (VGG16 or AlexNet from torchvision) plus
learned linear heads. The heads ship inside the `lpips` wheel; the trunk weights are
torchvision's ImageNet checkpoints, fetched from download.pytorch.org into the torch hub
cache (`$TORCH_HOME/hub/checkpoints`, default `~/.cache/torch/hub/checkpoints`). The
reference RLVR-World code scores with the VGG trunk, so VGG is the default; AlexNet (the
`lpips` package's own default) is available as `net="alex"`.

Where the trunk weights are missing and cannot be downloaded, `load_lpips` raises
`LPIPSWeightsUnavailable` saying which file to put where. Tests and offline smoke runs may
opt into a *seeded random trunk* (`random_backbone_seed=0`): the same code path and cost,
but values that are not comparable to published LPIPS numbers. Every model carries a
`backbone` label ("pretrained" or "random(seed=N)") and every result built from it
records that label, so a number can never silently come from the wrong trunk.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from rlvr_envs.video.metrics.image import FrameArray, as_unit_frames

LPIPS_NETS = ("vgg", "alex")
DEFAULT_LPIPS_NET = "vgg"
PRETRAINED = "pretrained"
# On CPU the trunk is compute-bound already at one frame per pass, so bigger passes only
# cost memory (VGG activations of one 256x320 frame take ~100 MB): cap the pixels per pass.
CPU_PIXELS_PER_PASS = 4 * 256 * 320


class LPIPSWeightsUnavailable(FileNotFoundError):
    """The ImageNet trunk weights LPIPS needs are neither cached nor downloadable: missing data,
    so a command reports it in one line with exit code 1."""


def _trunk_weights(net: str):
    from torchvision import models

    return {"vgg": models.VGG16_Weights.IMAGENET1K_V1, "alex": models.AlexNet_Weights.IMAGENET1K_V1}[net]


def trunk_url(net: str) -> str:
    """Where torchvision downloads the ImageNet trunk of `net` from."""
    return _trunk_weights(net).url


def trunk_checkpoint_path(net: str) -> Path:
    """Where torchvision looks for (and downloads) the ImageNet trunk of `net`."""
    return Path(torch.hub.get_dir()) / "checkpoints" / trunk_url(net).rsplit("/", 1)[-1]


def weights_hint(net: str) -> str:
    """What to do when the trunk of `net` is missing: the one command, and where its file goes."""
    checkpoint = trunk_checkpoint_path(net)
    return (f"LPIPS(net={net!r}) needs torchvision's ImageNet trunk weights at {checkpoint}, and they are not "
            f"there: run `rlvr-world data lpips --net {net}` where the network allows (torchvision downloads "
            f"{_trunk_weights(net).url} into that cache), or on another machine and copy the file to that path "
            "($TORCH_HOME moves the cache); offline tests may pass a random trunk (random_backbone_seed=0, values not "
            "comparable to published LPIPS)")


def add_data_arguments(parser) -> None:
    """Arguments of `rlvr-world data lpips`."""
    parser.add_argument("--net", choices=(*LPIPS_NETS, "all"), default=DEFAULT_LPIPS_NET,
                        help="which LPIPS trunk to fetch (vgg: the reference code's; alex: the lpips default)")


def run_data_command(args) -> int:
    """Fetch the LPIPS trunk(s) through torchvision's own downloader into its cache (checksummed)."""
    from rlvr_envs.core.errors import DownloadError

    for net in LPIPS_NETS if args.net == "all" else (args.net,):
        checkpoint = trunk_checkpoint_path(net)
        if not checkpoint.is_file():
            try:
                _trunk_weights(net).get_state_dict(progress=True, check_hash=True)
            except (OSError, RuntimeError) as error:  # URLError is an OSError; a bad hash a RuntimeError
                first = (str(error).splitlines() or [type(error).__name__])[0]
                raise DownloadError(f"could not download {_trunk_weights(net).url} ({first}): fetch it on a machine "
                                    f"with network access (same command) and copy it to {checkpoint}") from None
        print(f"LPIPS {net} trunk: {checkpoint} ({checkpoint.stat().st_size / 2**20:.0f} MiB)")
    return 0


def backbone_label(random_backbone_seed: int | None) -> str:
    """"pretrained" or "random(seed=N)": the tag every LPIPS result carries."""
    return PRETRAINED if random_backbone_seed is None else f"random(seed={random_backbone_seed})"


@dataclass(frozen=True)
class LPIPSConfig:
    """Which LPIPS to build.

    Args:
        net: "vgg" (reference code, default) or "alex".
        device: where the model runs; inputs are moved there.
        random_backbone_seed: None for the real ImageNet trunk; an int to opt into a
            randomly initialised trunk drawn from that torch seed (tests, offline runs).
        allow_download: try torchvision's download when the trunk is not cached.
    """

    net: str = DEFAULT_LPIPS_NET
    device: str = "cpu"
    random_backbone_seed: int | None = None
    allow_download: bool = True

    def validate(self) -> "LPIPSConfig":
        if self.net not in LPIPS_NETS:
            raise ValueError(f"LPIPS net must be one of {LPIPS_NETS}; got {self.net!r}")
        if self.random_backbone_seed is not None and (
            not isinstance(self.random_backbone_seed, int) or self.random_backbone_seed < 0
        ):
            raise ValueError(f"random_backbone_seed must be a non-negative int or None; got {self.random_backbone_seed!r}")
        torch.device(self.device)  # raises on a malformed device string
        return self

    @property
    def backbone(self) -> str:
        return backbone_label(self.random_backbone_seed)


class LPIPSModel:
    """A frozen LPIPS network that scores channels-last frame batches in one forward pass.

    Call it as `model(pred, target)` with `[..., H, W, 3]` frames (uint8 or float in
    [0, 1]); it returns LPIPS per frame shaped like the (broadcast) leading dimensions.
    Inputs are scaled to [-1, 1] as LPIPS expects.

    `target` may broadcast against `pred` (e.g. pred `[G, T, H, W, 3]`, target
    `[1, T, H, W, 3]`): a GRPO group scores G predictions of one ground truth, and the
    trunk then runs once per distinct frame instead of once per pair, which is about half
    the work. The distance itself is the `lpips` package's (same trunk, heads, feature
    normalisation and spatial average), evaluated on the two feature sets; the tests check
    it against `lpips.LPIPS.forward` to 1e-5.
    """

    def __init__(self, network: torch.nn.Module, config: LPIPSConfig):
        self.network = network
        self.config = config
        self.net = config.net
        self.backbone = config.backbone
        self.device = torch.device(config.device)

    def __repr__(self) -> str:
        return f"LPIPSModel(net={self.net!r}, backbone={self.backbone!r}, device={str(self.device)!r})"

    def _features(self, frames: torch.Tensor, max_batch: int | None) -> list[torch.Tensor]:
        """Unit-normalised trunk features of `[N, H, W, 3]` frames in [0, 1]."""
        import lpips

        network = self.network
        x = (frames.permute(0, 3, 1, 2).to(torch.float32) * 2 - 1).contiguous(memory_format=torch.channels_last)
        step = x.shape[0] if max_batch is None else max(1, int(max_batch))
        per_chunk = []
        for i in range(0, x.shape[0], step):
            chunk = x[i : i + step]
            scaled = network.scaling_layer(chunk) if network.version == "0.1" else chunk
            per_chunk.append([lpips.normalize_tensor(f) for f in network.net.forward(scaled)])
        return [torch.cat(level) for level in zip(*per_chunk)]

    @torch.inference_mode()
    def __call__(self, pred: FrameArray, target: FrameArray, max_batch: int | None = None) -> torch.Tensor:
        """LPIPS per frame.

        `max_batch` bounds the frames per trunk pass. None means all frames in one pass on
        GPU, and passes of at most `CPU_PIXELS_PER_PASS` pixels on CPU (bounds memory).
        """
        import lpips

        pred_t = as_unit_frames(pred, device=self.device)
        target_t = as_unit_frames(target, device=self.device)
        if pred_t.shape[-3:] != target_t.shape[-3:]:
            raise ValueError(f"prediction frames {tuple(pred_t.shape)} and target frames {tuple(target_t.shape)} differ")
        try:
            leading = torch.broadcast_shapes(pred_t.shape[:-3], target_t.shape[:-3])
        except RuntimeError as error:
            raise ValueError(f"prediction shape {tuple(pred_t.shape)} and target shape {tuple(target_t.shape)} "
                             "do not broadcast") from error
        if math.prod(leading) == 0:
            return torch.zeros(leading, device=self.device)
        frame_shape = pred_t.shape[-3:]
        if max_batch is None and self.device.type == "cpu":
            max_batch = max(1, CPU_PIXELS_PER_PASS // (frame_shape[0] * frame_shape[1]))
        features = []
        for frames in (pred_t, target_t):
            levels = self._features(frames.reshape(-1, *frame_shape), max_batch)
            features.append([f.reshape(*frames.shape[:-3], *f.shape[1:]) for f in levels])  # own leading shape
        total = 0
        for level, (pred_f, target_f) in enumerate(zip(*features)):
            squared = ((pred_f - target_f) ** 2).reshape(-1, *pred_f.shape[len(pred_t.shape) - 3 :])  # broadcasts
            total = total + lpips.spatial_average(self.network.lins[level](squared), keepdim=True)
        return total.reshape(leading)


def _build_network(config: LPIPSConfig) -> torch.nn.Module:
    import lpips

    with warnings.catch_warnings():
        # lpips 0.1.4 still calls torchvision's deprecated `pretrained=` argument.
        warnings.filterwarnings("ignore", category=UserWarning)
        if config.random_backbone_seed is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(config.random_backbone_seed)
                return lpips.LPIPS(net=config.net, pnet_rand=True, verbose=False)
        checkpoint = trunk_checkpoint_path(config.net)
        how_to_get = weights_hint(config.net)
        if not checkpoint.is_file() and not config.allow_download:
            raise LPIPSWeightsUnavailable(how_to_get)
        try:
            return lpips.LPIPS(net=config.net, pnet_rand=False, verbose=False)
        except (OSError, RuntimeError, ValueError) as error:  # URLError is an OSError
            first = (str(error).splitlines() or [type(error).__name__])[0]
            raise LPIPSWeightsUnavailable(f"{how_to_get} (the download failed: {first})") from None


_MODELS: dict[tuple[str, str, str], LPIPSModel] = {}


def _cached_model(config: LPIPSConfig) -> LPIPSModel:
    key = (config.net, config.device, config.backbone)  # allow_download does not change the model
    if key not in _MODELS:
        network = _build_network(config).to(config.device).eval()
        network.net.to(memory_format=torch.channels_last)  # ~25 % faster convolutions on CPU
        for parameter in network.parameters():
            parameter.requires_grad_(False)
        _MODELS[key] = LPIPSModel(network, config)
    return _MODELS[key]


def load_lpips(
    net: str = DEFAULT_LPIPS_NET,
    device: str | torch.device = "cpu",
    *,
    random_backbone_seed: int | None = None,
    allow_download: bool = True,
) -> LPIPSModel:
    """The LPIPS model for (net, device, backbone), built once per process and cached.

    Raises `LPIPSWeightsUnavailable` (with the cache path and download URL) when the real
    trunk is needed but missing; pass `random_backbone_seed` to opt into a random trunk.
    """
    config = LPIPSConfig(
        net=net, device=str(torch.device(device)), random_backbone_seed=random_backbone_seed,
        allow_download=allow_download,
    ).validate()
    return _cached_model(config)
