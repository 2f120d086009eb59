"""Visual tokenizer of the video world models: frames <-> grids of discrete codes.

`FSQ` is finite scalar quantisation (Mentzer et al., 2023), the quantiser of RLVR-World's
iVideoGPT-style tokenizers: each latent channel is bounded and rounded to one of
`levels[c]` values, so a latent vector is one of prod(levels) codes with no codebook to
collapse (the paper: [7, 5, 5, 5, 5] = 4,375 codes).

`FrameTokenizer` encodes one frame into an (H/f) x (W/f) grid of codes with a small conv
encoder and decodes it back. Its decoder predicts a *residual over a static background*
(a learned image initialised from the training frames' median): robot and PushT frames are
mostly static background, and a plain L1 loss on such frames lets the whole grid collapse
onto one code; with the residual (and a loss weighted towards pixels that differ from the
background) every code spends its capacity on what moves.

Checkpoints are a directory with `config.json` and `model.safetensors`; `load` checks the
config against the weights before using them, so a mismatched checkpoint fails naming both.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import check_sizes, load_checked_weights, read_json

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
FORMAT_NAME = "rlvr-world-frame-tokenizer"
#: bounds on a tokenizer config's sizes, far above the shipped ones (64x64 frames; RT-1's 256x320),
#: checked before anything is built (a 100,000-pixel side would ask for a 120 GB background image)
SIZE_BOUNDS = {"resolution": 4096, "downsample": 1024, "channels": 4096, "levels": 1024}
MAX_CODEBOOK = 2**20  #: codes per token at most (the paper's tokenizer: 4,375)


class FSQ(nn.Module):
    """Finite scalar quantisation over the channel dim of a [B, C, h, w] latent.

    Channel c is squashed into `levels[c]` integer steps with a straight-through round;
    `indices` flattens the per-channel steps into one code id in [0, prod(levels)).
    """

    def __init__(self, levels: tuple[int, ...]):
        super().__init__()
        if not levels or any(int(level) < 2 for level in levels):
            raise ValueError(f"FSQ levels must be integers >= 2, got {levels}")
        self.levels = tuple(int(level) for level in levels)
        levels_t = torch.tensor(self.levels, dtype=torch.float32)
        basis = torch.cumprod(torch.tensor((1, *self.levels[:-1])), dim=0)
        self.register_buffer("_levels", levels_t, persistent=False)
        self.register_buffer("_basis", basis, persistent=False)

    @property
    def codebook_size(self) -> int:
        return math.prod(self.levels)

    def _shape(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(1, -1, 1, 1)

    def bound(self, z: torch.Tensor) -> torch.Tensor:
        """Squash to (-(L-1)/2, (L-1)/2) per channel, offset by half a step for even L."""
        levels = self._shape(self._levels)
        half = (levels - 1) * (1 - 1e-3) / 2
        offset = torch.where(levels % 2 == 0, 0.5, 0.0)
        shift = torch.atanh(offset / half)
        return torch.tanh(z + shift) * half - offset

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Quantised latent (straight-through gradients), scaled to about [-1, 1]."""
        bounded = self.bound(z)
        rounded = bounded + (torch.round(bounded) - bounded).detach()
        return rounded / self._shape(self._levels // 2)

    def indices(self, z: torch.Tensor) -> torch.Tensor:
        """Code ids [B, h, w] (int64) of a raw latent."""
        steps = torch.round(self.bound(z)) + self._shape(self._levels // 2)
        return (steps.long() * self._shape(self._basis)).sum(dim=1)

    def codes(self, indices: torch.Tensor) -> torch.Tensor:
        """The quantised latent [B, C, h, w] of code ids [B, h, w]."""
        steps = (indices.unsqueeze(1) // self._shape(self._basis)) % self._shape(self._levels).long()
        half = self._shape(self._levels // 2)
        return (steps - half) / half


@dataclass(frozen=True)
class FrameTokenizerConfig:
    """Shape of a frame tokenizer (saved beside its weights)."""

    resolution: tuple[int, int] = (64, 64)  #: (H, W) of the frames it reads
    downsample: int = 8  #: one code per downsample x downsample pixels (power of 2)
    levels: tuple[int, ...] = (8, 5, 5, 5)  #: FSQ levels: 1,000 codes
    channels: tuple[int, ...] = (16, 32, 64)  #: conv widths, one per halving (small at high resolution: CPU)
    format: str = field(default=FORMAT_NAME)

    def __post_init__(self):
        for name in ("resolution", "levels", "channels"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))

    def validate(self) -> "FrameTokenizerConfig":
        if self.format != FORMAT_NAME:
            raise ValueError(f"not a frame tokenizer config (format {self.format!r})")
        check_sizes(asdict(self), SIZE_BOUNDS)
        if not self.levels or min(self.levels) < 2:
            raise ValueError(f"levels must be one or more whole numbers >= 2 (FSQ steps per channel), got "
                             f"{list(self.levels)}")
        if self.codebook_size > MAX_CODEBOOK:
            raise ValueError(f"levels {self.levels} give {self.codebook_size:,} codes, more than {MAX_CODEBOOK:,}")
        halvings = int(math.log2(self.downsample))
        if 2 ** halvings != self.downsample or len(self.channels) != halvings:
            raise ValueError(f"downsample {self.downsample} needs one channel width per halving, got {self.channels}")
        if any(size % self.downsample for size in self.resolution):
            raise ValueError(f"resolution {self.resolution} is not a multiple of downsample {self.downsample}")
        return self

    @property
    def grid(self) -> tuple[int, int]:
        return self.resolution[0] // self.downsample, self.resolution[1] // self.downsample

    @property
    def tokens_per_frame(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def codebook_size(self) -> int:
        return math.prod(self.levels)


def read_tokenizer_config(path: Path, config_class: type, kind: str, *, drop: tuple[str, ...] = ("card",)) -> Any:
    """`config_class(**config.json).validate()`, failing as FileNotFoundError when the file is
    missing and as `DataError` naming it (and the field) when it is not a `kind` config."""
    if not path.is_file():
        raise FileNotFoundError(f"no {kind} at {path.parent} (expected {path.name})")
    raw = read_json(path, f"the {kind}'s config")
    try:
        if not isinstance(raw, dict):
            raise TypeError(f"expected a JSON object, found {type(raw).__name__}")
        return config_class(**{k: v for k, v in raw.items() if k not in drop}).validate()
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}: not a {kind} config ({exc})") from None


#: named tokenizer shapes (`python -m trainers.train_frame_tokenizer --preset NAME`):
#: "pusht64": the shipped PushT tokenizer, 64x64 frames, 8x8 = 64 tokens per frame, 1,000 codes;
#: "rt1": RLVR-World/iVideoGPT's RT-1 shape, 256x320 frames, one code per 16x16 pixels = 16x20 =
#: 320 tokens per frame, FSQ [7, 5, 5, 5, 5] = 4,375 codes (a 1,333-token single-step prompt).
TOKENIZER_PRESETS: dict[str, FrameTokenizerConfig] = {
    "pusht64": FrameTokenizerConfig(),
    "rt1": FrameTokenizerConfig(resolution=(256, 320), downsample=16, levels=(7, 5, 5, 5, 5),
                                channels=(32, 64, 128, 256)),
}


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())


class FrameTokenizer(nn.Module):
    """uint8 frames [N, H, W, 3] <-> code ids [N, tokens_per_frame] (row-major grid)."""

    def __init__(self, config: FrameTokenizerConfig):
        super().__init__()
        self.config = config.validate()
        widths = config.channels
        # residual-free conv stacks; no 3x3 block at the first (largest) scale, where it would
        # cost most of the compute for little gain
        down, cin = [], 3
        for depth, width in enumerate(widths):
            down += [nn.Conv2d(cin, width, 4, stride=2, padding=1), nn.SiLU()]
            down += [_block(width, width)] if depth else []
            cin = width
        self.encoder = nn.Sequential(*down, nn.Conv2d(cin, len(config.levels), 1))
        up = [nn.Conv2d(len(config.levels), widths[-1], 3, padding=1), nn.SiLU()]
        reversed_widths = widths[::-1]
        for depth, width in enumerate(reversed_widths):
            nxt = reversed_widths[depth + 1] if depth + 1 < len(widths) else widths[0]
            up += [_block(width, width)] if depth + 1 < len(widths) else []
            up += [nn.ConvTranspose2d(width, nxt, 2, stride=2), nn.SiLU()]
        self.decoder = nn.Sequential(*up, nn.Conv2d(widths[0], 3, 3, padding=1))
        self.quantizer = FSQ(config.levels)
        self.background = nn.Parameter(torch.full((3, *config.resolution), 0.5))

    # -- tensors -----------------------------------------------------------------------
    def _check_frames(self, frames: torch.Tensor) -> torch.Tensor:
        if frames.ndim != 4 or tuple(frames.shape[1:3]) != self.config.resolution or frames.shape[3] != 3:
            raise ValueError(f"expected frames [N, {self.config.resolution[0]}, {self.config.resolution[1]}, 3], "
                             f"got {tuple(frames.shape)}")
        return frames

    def to_input(self, frames: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 [N, H, W, 3] -> float [N, 3, H, W] in [0, 1] on this model's device."""
        frames = self._check_frames(torch.as_tensor(np.asarray(frames)))
        return frames.to(self.background.device).permute(0, 3, 1, 2).float() / 255.0

    def latent(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x - self.background)

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """Training path: frames in [0, 1] -> decoded frames (straight-through quantiser)."""
        return self.decode_latent(self.quantizer(self.latent(x)))

    def decode_latent(self, quantised: torch.Tensor) -> torch.Tensor:
        return self.background + self.decoder(quantised)

    # -- codes -------------------------------------------------------------------------
    @torch.no_grad()
    def encode(self, frames: np.ndarray | torch.Tensor, batch: int = 256) -> np.ndarray:
        """Code ids int64 [N, tokens_per_frame] of uint8 frames [N, H, W, 3]."""
        out = []
        for start in range(0, len(frames), batch):
            x = self.to_input(frames[start:start + batch])
            out.append(self.quantizer.indices(self.latent(x)).flatten(1).cpu())
        if not out:
            return np.zeros((0, self.config.tokens_per_frame), dtype=np.int64)
        return torch.cat(out).numpy()

    @torch.no_grad()
    def decode(self, codes: np.ndarray | torch.Tensor, batch: int = 256, keep_device: bool = False) -> torch.Tensor:
        """Frames float [N, H, W, 3] in [0, 1] (channels-last, as the metrics take them) of
        code ids [N, tokens_per_frame]; on the CPU, or with `keep_device` on this model's device
        (batched rewards then stay on the GPU)."""
        codes = torch.as_tensor(np.asarray(codes), dtype=torch.long)
        h, w = self.config.grid
        if codes.ndim != 2 or codes.shape[1] != h * w:
            raise ValueError(f"expected codes [N, {h * w}], got {tuple(codes.shape)}")
        if codes.numel() and (codes.min() < 0 or codes.max() >= self.config.codebook_size):
            raise ValueError(f"code ids must lie in [0, {self.config.codebook_size})")
        out = []
        for start in range(0, len(codes), batch):
            grid = codes[start:start + batch].view(-1, h, w).to(self.background.device)
            frames = self.decode_latent(self.quantizer.codes(grid)).clamp(0, 1).permute(0, 2, 3, 1)
            out.append(frames if keep_device else frames.cpu())
        if not out:
            return torch.zeros((0, *self.config.resolution, 3), device=self.background.device if keep_device else None)
        return torch.cat(out)

    # -- checkpoints -------------------------------------------------------------------
    def save(self, directory: str | Path, card: dict[str, Any] | None = None) -> Path:
        """Write `config.json` (+ an optional model card under "card") and safetensors weights."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {**asdict(self.config), **({"card": card} if card else {})}
        tmp = directory / (CONFIG_NAME + ".tmp")
        tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        save_file({k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()},
                  str(directory / WEIGHTS_NAME))
        tmp.replace(directory / CONFIG_NAME)
        return directory

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu") -> "FrameTokenizer":
        """A saved tokenizer; fails naming the file (and field or tensor) when the config is malformed,
        out of bounds or disagrees with the weights, before anything of its size is built."""
        directory = Path(directory)
        config = read_tokenizer_config(directory / CONFIG_NAME, FrameTokenizerConfig, "frame tokenizer")
        model = load_checked_weights(lambda: cls(config), directory / WEIGHTS_NAME, directory / CONFIG_NAME,
                                     "the frame tokenizer")
        return model.to(device).eval()

    @staticmethod
    def card(directory: str | Path) -> dict[str, Any]:
        """The model card saved with a checkpoint (data, command, steps, metrics)."""
        from rlvr_envs.core.files import read_json

        raw = read_json(Path(directory) / CONFIG_NAME, "the frame tokenizer's config")
        return raw.get("card", {}) if isinstance(raw, dict) else {}
