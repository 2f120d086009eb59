"""Compressed visual tokenizer of the multi-step world models: one rich context frame, cheap later frames.

After iVideoGPT's compressed tokenizer (RLVR-World's multi-step setting: 1,280 tokens for
the context frame and 80 for each later frame at 256x320). A clip is tokenized as

* the **context frame** on the fine grid (`context_downsample`, e.g. 8x8 = 64 codes for
  64x64 frames) with its own FSQ codebook (the "context codes"). This branch is a
  `FrameTokenizer` (same encoder, decoder, background residual), so a trained per-frame
  tokenizer can serve as it unchanged;
* every **later frame** on a coarse grid (`future_downsample`, e.g. 4x4 = 16 codes) with a
  second FSQ codebook (the "frame codes"). The later frame's encoder sees the frame and the
  decoded context frame; its decoder is conditioned on the context frame's *decoder feature
  maps* (concatenated at every matching resolution) and predicts a residual over the decoded
  context frame. The few future codes therefore only describe what changed since the
  context frame, the way the per-frame tokenizer's codes only describe what differs from
  the static background (the residual that keeps PushT's ~97% static frames from
  collapsing onto one code).

Checkpoints are a directory with `config.json` and `model.safetensors` (and an optional
`card.json`); `load` checks that the config, the weights and their shapes agree and fails
naming the file and what differs.
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
from rlvr_envs.core.files import check_sizes, load_checked_weights
from rlvr_envs.video.frame_tokenizer import (FSQ, MAX_CODEBOOK, SIZE_BOUNDS, FrameTokenizer, FrameTokenizerConfig,
                                             _block, read_tokenizer_config)

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
CARD_NAME = "card.json"
FORMAT_NAME = "rlvr-world-compressed-tokenizer"


@dataclass(frozen=True)
class CompressedTokenizerConfig:
    """Shape of a compressed tokenizer (saved beside its weights)."""

    resolution: tuple[int, int] = (64, 64)  #: (H, W) of the frames it reads
    context_downsample: int = 8  #: context frame: one code per 8x8 pixels (64x64 -> 8x8 = 64 codes)
    context_levels: tuple[int, ...] = (8, 5, 5, 5)  #: FSQ levels of the context codes (1,000)
    context_channels: tuple[int, ...] = (16, 32, 64)  #: context conv widths, one per halving
    future_downsample: int = 16  #: later frames: one code per 16x16 pixels (64x64 -> 4x4 = 16 codes)
    future_levels: tuple[int, ...] = (8, 5, 5, 5)  #: FSQ levels of the later-frame codes (1,000)
    future_channels: tuple[int, ...] = (16, 32, 64, 64)  #: later-frame conv widths, one per halving
    format: str = field(default=FORMAT_NAME)

    def __post_init__(self):
        for name in ("resolution", "context_levels", "context_channels", "future_levels", "future_channels"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))

    @property
    def context_config(self) -> FrameTokenizerConfig:
        """The context branch, a plain per-frame tokenizer."""
        return FrameTokenizerConfig(resolution=self.resolution, downsample=self.context_downsample,
                                    levels=self.context_levels, channels=self.context_channels)

    def validate(self) -> "CompressedTokenizerConfig":
        if self.format != FORMAT_NAME:
            raise ValueError(f"not a compressed tokenizer config (format {self.format!r})")
        check_sizes(asdict(self), {"resolution": SIZE_BOUNDS["resolution"],
                                   **{f"{branch}_{name}": SIZE_BOUNDS[name] for branch in ("context", "future")
                                      for name in ("downsample", "channels", "levels")}})
        self.context_config.validate()
        if self.future_codebook_size > MAX_CODEBOOK:
            raise ValueError(f"future_levels {self.future_levels} give {self.future_codebook_size:,} codes, more "
                             f"than {MAX_CODEBOOK:,}")
        halvings = int(math.log2(self.future_downsample))
        if 2 ** halvings != self.future_downsample or len(self.future_channels) != halvings:
            raise ValueError(f"future_downsample {self.future_downsample} needs one channel width per halving, "
                             f"got {self.future_channels}")
        if self.future_downsample < self.context_downsample:
            raise ValueError(f"later frames must be coarser than the context frame (future_downsample "
                             f"{self.future_downsample} < context_downsample {self.context_downsample})")
        if any(size % self.future_downsample for size in self.resolution):
            raise ValueError(f"resolution {self.resolution} is not a multiple of future_downsample "
                             f"{self.future_downsample}")
        if any(width % 8 for width in self.future_channels):
            raise ValueError(f"future_channels must be multiples of 8 (GroupNorm), got {self.future_channels}")
        return self

    @property
    def context_grid(self) -> tuple[int, int]:
        return self.context_config.grid

    @property
    def future_grid(self) -> tuple[int, int]:
        return self.resolution[0] // self.future_downsample, self.resolution[1] // self.future_downsample

    @property
    def tokens_per_context(self) -> int:
        return self.context_grid[0] * self.context_grid[1]

    @property
    def tokens_per_future(self) -> int:
        return self.future_grid[0] * self.future_grid[1]

    @property
    def context_codebook_size(self) -> int:
        return math.prod(self.context_levels)

    @property
    def future_codebook_size(self) -> int:
        return math.prod(self.future_levels)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _ConditionedDecoder(nn.Module):
    """Coarse later-frame latent -> residual image, fed the context decoder's maps at each scale."""

    def __init__(self, levels: int, widths: tuple[int, ...], context_widths: dict[int, int]):
        super().__init__()
        reversed_widths = widths[::-1]
        self.stem = nn.Sequential(nn.Conv2d(levels, reversed_widths[0], 3, padding=1), nn.SiLU())
        self.ups = nn.ModuleList()
        self.mixes = nn.ModuleDict()
        for depth, width in enumerate(reversed_widths):
            nxt = reversed_widths[depth + 1] if depth + 1 < len(widths) else widths[0]
            self.ups.append(nn.Sequential(nn.ConvTranspose2d(width, nxt, 2, stride=2), nn.SiLU()))
        # the scale of each up-step's output is 2**(len(widths) - 1 - depth)
        for depth in range(len(widths)):
            scale = 2 ** (len(widths) - 1 - depth)
            width = reversed_widths[depth + 1] if depth + 1 < len(widths) else widths[0]
            if scale in context_widths and scale > 1:
                self.mixes[str(scale)] = _block(width + context_widths[scale], width)
        top = widths[0] + context_widths.get(1, 0)
        self.head = nn.Conv2d(top, 3, 3, padding=1)
        # zero residual at initialisation: an untrained decoder reproduces the decoded context
        # frame exactly and training only has to learn what moved
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, quantised: torch.Tensor, context_maps: dict[int, torch.Tensor]) -> torch.Tensor:
        x = self.stem(quantised)
        for depth, up in enumerate(self.ups):
            x = up(x)
            scale = 2 ** (len(self.ups) - 1 - depth)
            if str(scale) in self.mixes:
                x = self.mixes[str(scale)](torch.cat([x, context_maps[scale]], dim=1))
        if 1 in context_maps:
            x = torch.cat([x, context_maps[1]], dim=1)
        return self.head(x)


class CompressedTokenizer(nn.Module):
    """uint8 clips <-> (context codes [N, tokens_per_context], frame codes [N, T, tokens_per_future])."""

    def __init__(self, config: CompressedTokenizerConfig):
        super().__init__()
        self.config = config.validate()
        self.context = FrameTokenizer(config.context_config)
        widths = config.future_channels
        down, cin = [], 6  # the later frame and the decoded context frame, both minus the background
        for depth, width in enumerate(widths):
            down += [nn.Conv2d(cin, width, 4, stride=2, padding=1), nn.SiLU()]
            down += [_block(width, width)] if depth else []
            cin = width
        self.future_encoder = nn.Sequential(*down, nn.Conv2d(cin, len(config.future_levels), 1))
        self.future_decoder = _ConditionedDecoder(len(config.future_levels), widths, self._context_widths())
        self.future_quantizer = FSQ(config.future_levels)

    # -- sizes -------------------------------------------------------------------------
    @property
    def tokens_per_context(self) -> int:
        return self.config.tokens_per_context

    @property
    def tokens_per_future(self) -> int:
        return self.config.tokens_per_future

    @property
    def context_codebook_size(self) -> int:
        return self.config.context_codebook_size

    @property
    def future_codebook_size(self) -> int:
        return self.config.future_codebook_size

    @property
    def resolution(self) -> tuple[int, int]:
        return self.config.resolution

    def _context_widths(self) -> dict[int, int]:
        """{downsample factor: channels} of the context decoder maps the later-frame decoder reads."""
        with torch.no_grad():
            q = torch.zeros(1, len(self.config.context_levels), *self.config.context_grid)
            return {scale: m.shape[1] for scale, m in self._context_maps(q).items()}

    # -- tensors -----------------------------------------------------------------------
    def _context_maps(self, quantised: torch.Tensor) -> dict[int, torch.Tensor]:
        """The context decoder's last activation at every resolution, keyed by downsample factor."""
        maps: dict[int, torch.Tensor] = {}
        x = quantised
        layers = list(self.context.decoder.children())
        for layer in layers[:-1]:  # the last layer maps to RGB
            x = layer(x)
            maps[self.config.resolution[0] // x.shape[-2]] = x
        return maps

    def _check_clip(self, frames: torch.Tensor) -> torch.Tensor:
        h, w = self.config.resolution
        if frames.ndim != 5 or tuple(frames.shape[2:4]) != (h, w) or frames.shape[4] != 3:
            raise ValueError(f"expected frames [N, T, {h}, {w}, 3], got {tuple(frames.shape)}")
        return frames

    def to_input(self, frames: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 [N, H, W, 3] -> float [N, 3, H, W] in [0, 1] (checked, on this model's device)."""
        return self.context.to_input(frames)

    def context_latent(self, x: torch.Tensor) -> torch.Tensor:
        return self.context.quantizer(self.context.latent(x))

    def future_latent(self, x: torch.Tensor, context_image: torch.Tensor) -> torch.Tensor:
        background = self.context.background
        return self.future_encoder(torch.cat([x - background, context_image - background], dim=1))

    def decode_future_latent(self, quantised: torch.Tensor, context_image: torch.Tensor,
                             context_maps: dict[int, torch.Tensor]) -> torch.Tensor:
        """Later frames [B, 3, H, W]: the decoded context frame plus a context-conditioned residual."""
        return context_image + self.future_decoder(quantised, context_maps)

    def context_decode(self, quantised: torch.Tensor) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """(decoded context frame [B, 3, H, W], its decoder maps) of a quantised context latent."""
        maps = self._context_maps(quantised)
        finest = maps[min(maps)]
        return self.context.background + self.context.decoder[-1](finest), maps

    def reconstruct(self, x: torch.Tensor, context_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Training path: (decoded context [B, 3, H, W], decoded later frames [B, 3, H, W]) of
        later frames `x` and their context frames `context_x` in [0, 1] (straight-through quantisers)."""
        context_image, maps = self.context_decode(self.context_latent(context_x))
        future = self.future_quantizer(self.future_latent(x, context_image))
        return context_image, self.decode_future_latent(future, context_image, maps)

    # -- codes -------------------------------------------------------------------------
    @torch.no_grad()
    def encode_context(self, frames: np.ndarray | torch.Tensor, batch: int = 256) -> np.ndarray:
        """Context code ids int64 [N, tokens_per_context] of uint8 context frames [N, H, W, 3]."""
        return self.context.encode(frames, batch=batch)

    def _context_from_codes(self, codes: torch.Tensor) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        h, w = self.config.context_grid
        grid = codes.view(-1, h, w).to(self.context.background.device)
        return self.context_decode(self.context.quantizer.codes(grid))

    def _check_codes(self, codes: Any, shape: tuple[int, ...], size: int, what: str) -> torch.Tensor:
        codes = torch.as_tensor(np.asarray(codes), dtype=torch.long)
        if codes.ndim != len(shape) or any(want is not None and got != want for got, want in zip(codes.shape, shape)):
            spec = ", ".join("NT"[i] if want is None else str(want) for i, want in enumerate(shape))
            raise ValueError(f"expected {what} [{spec}], got {tuple(codes.shape)}")
        if codes.numel() and (codes.min() < 0 or codes.max() >= size):
            raise ValueError(f"{what} must lie in [0, {size})")
        return codes

    @torch.no_grad()
    def encode_future(self, frames: np.ndarray | torch.Tensor, context_frames: np.ndarray | torch.Tensor,
                      batch: int = 64) -> np.ndarray:
        """Frame code ids int64 [N, T, tokens_per_future] of uint8 clips [N, T, H, W, 3], each clip
        encoded against its context frame (uint8 [N, H, W, 3]; it may be one of the clip's frames)."""
        frames = self._check_clip(torch.as_tensor(np.asarray(frames)))
        context_frames = torch.as_tensor(np.asarray(context_frames))
        if len(context_frames) != len(frames):
            raise ValueError(f"{len(frames)} clips but {len(context_frames)} context frames")
        context_codes = torch.as_tensor(self.encode_context(context_frames))
        n, t = frames.shape[:2]
        out = []
        for start in range(0, n, batch):
            context_image, _ = self._context_from_codes(context_codes[start:start + batch])
            clip = frames[start:start + batch]
            x = self.to_input(clip.reshape(-1, *clip.shape[2:]))
            latent = self.future_latent(x, context_image.repeat_interleave(t, dim=0))
            out.append(self.future_quantizer.indices(latent).flatten(1).view(len(clip), t, -1).cpu())
        if not out:
            return np.zeros((0, t, self.tokens_per_future), dtype=np.int64)
        return torch.cat(out).numpy()

    @torch.no_grad()
    def decode_context(self, context_codes: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Context frames float [N, H, W, 3] in [0, 1] of context code ids [N, tokens_per_context]."""
        codes = self._check_codes(context_codes, (None, self.tokens_per_context), self.context_codebook_size,
                                  "context codes")
        return self.context.decode(codes)

    @torch.no_grad()
    def decode(self, context_codes: np.ndarray | torch.Tensor, future_codes: np.ndarray | torch.Tensor,
               batch: int = 64, keep_device: bool = False) -> torch.Tensor:
        """Frames float [N, T, H, W, 3] in [0, 1] (channels-last, as the metrics take them) of
        context codes [N, tokens_per_context] and frame codes [N, T, tokens_per_future]; on the
        CPU, or with `keep_device` on this model's device."""
        context = self._check_codes(context_codes, (None, self.tokens_per_context), self.context_codebook_size,
                                    "context codes")
        future = self._check_codes(future_codes, (None, None, self.tokens_per_future), self.future_codebook_size,
                                   "frame codes")
        if len(context) != len(future):
            raise ValueError(f"{len(context)} context code rows but {len(future)} clips of frame codes")
        n, t = future.shape[:2]
        h, w = self.config.future_grid
        out = []
        for start in range(0, n, batch):
            context_image, maps = self._context_from_codes(context[start:start + batch])
            rows = future[start:start + batch]
            grid = rows.reshape(-1, h, w).to(context_image.device)
            repeat = {scale: m.repeat_interleave(t, dim=0) for scale, m in maps.items()}
            frames = self.decode_future_latent(self.future_quantizer.codes(grid),
                                               context_image.repeat_interleave(t, dim=0), repeat)
            frames = frames.clamp(0, 1).permute(0, 2, 3, 1).reshape(len(rows), t, *self.resolution, 3)
            out.append(frames if keep_device else frames.cpu())
        if not out:
            return torch.zeros((0, t, *self.resolution, 3),
                               device=self.context.background.device if keep_device else None)
        return torch.cat(out)

    # -- checkpoints -------------------------------------------------------------------
    def save(self, directory: str | Path, card: dict[str, Any] | None = None) -> Path:
        """Write `config.json`, `model.safetensors` and (optionally) the model card `card.json`."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / (CONFIG_NAME + ".tmp")
        tmp.write_text(json.dumps(self.config.to_json(), indent=2) + "\n", encoding="utf-8")
        save_file({k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()},
                  str(directory / WEIGHTS_NAME), metadata={"format": FORMAT_NAME})
        if card is not None:
            (directory / CARD_NAME).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        tmp.replace(directory / CONFIG_NAME)
        return directory

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu",
             expect: CompressedTokenizerConfig | None = None) -> "CompressedTokenizer":
        """A saved tokenizer. Fails naming the file when it is missing, when the config is not a
        compressed tokenizer's (or differs from `expect`), or when the weights do not fit it."""
        directory = Path(directory)
        config_path = directory / CONFIG_NAME
        config = read_tokenizer_config(config_path, CompressedTokenizerConfig, "compressed tokenizer", drop=())
        if expect is not None and config != expect.validate():
            diff = {k: (v, getattr(expect, k)) for k, v in asdict(config).items() if v != getattr(expect, k)}
            raise DataError(f"{config_path} does not match the expected tokenizer config: "
                            + "; ".join(f"{k} is {got}, expected {want}" for k, (got, want) in diff.items()))
        model = load_checked_weights(lambda: cls(config), directory / WEIGHTS_NAME, config_path,
                                     "the compressed tokenizer")
        return model.to(device).eval()

    @staticmethod
    def card(directory: str | Path) -> dict[str, Any]:
        """The model card saved with a checkpoint (data, command, steps, metrics), {} if none."""
        path = Path(directory) / CARD_NAME
        from rlvr_envs.core.files import read_json

        return read_json(path, "the compressed tokenizer's card") if path.is_file() else {}


def is_compressed_tokenizer(directory: str | Path) -> bool:
    """Whether `directory/config.json` names a compressed tokenizer (False when it is missing,
    unreadable or another kind: the per-frame loader then reports what is wrong)."""
    try:
        raw = json.loads((Path(directory) / CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(raw, dict) and raw.get("format") == FORMAT_NAME


def check_tokenizer_layout(directory: str | Path, layout: str) -> None:
    """Fail clearly when the tokenizer at `directory` cannot serve `layout` ("single" or
    "multi"): a compressed tokenizer serves only the multi-step layout (its later frames are
    coded against a context frame). Reads `config.json` only."""
    if layout == "single" and is_compressed_tokenizer(directory):
        raise ValueError(f"the tokenizer at {directory} is a compressed tokenizer (a context frame of context "
                         "codes, later frames coded against it); it serves only the multi-step layout "
                         "(layout='multi'). For single-step prediction pass tokenizer= a per-frame FrameTokenizer "
                         "checkpoint")


def load_video_tokenizer(directory: str | Path, layout: str | None = None,
                         device: str | torch.device = "cpu") -> FrameTokenizer | CompressedTokenizer:
    """The visual tokenizer saved at `directory`, of the kind its `config.json` names: a
    `CompressedTokenizer` (format "rlvr-world-compressed-tokenizer") or a `FrameTokenizer`
    (anything else; its loader reports a missing or malformed checkpoint).

    `layout`, when given, is the token layout it will serve, checked first
    (`check_tokenizer_layout`: a single-step layout over a compressed tokenizer fails before
    any weights are read).
    """
    if layout is not None:
        check_tokenizer_layout(directory, layout)
    if is_compressed_tokenizer(directory):
        return CompressedTokenizer.load(directory, device=device)
    return FrameTokenizer.load(directory, device=device)


#: per-frame metrics of held-out clips (`evaluate_clips`)
CLIP_METRICS = ("psnr", "ssim", "mae", "mse")
PSNR_CAP = 100.0  #: an exact copy has infinite PSNR; it counts as this many dB


def heldout_clips(episodes: list[np.ndarray], frame_skip: int = 5, clip_frames: int = 5, clip_stride: int = 10,
                  max_clips: int | None = None, seed: int = 0) -> np.ndarray:
    """uint8 clips [N, clip_frames, H, W, 3]: frames t, t + skip, ..., starting every `clip_stride` frames."""
    span = (clip_frames - 1) * frame_skip
    clips = [frames[t: t + span + 1: frame_skip] for frames in episodes
             for t in range(0, len(frames) - span, clip_stride)]
    if not clips:
        raise ValueError(f"no episode is longer than {span} frames")
    clips = np.stack(clips)
    if max_clips is not None and len(clips) > max_clips:
        clips = clips[np.sort(np.random.default_rng(seed).permutation(len(clips))[:max_clips])]
    return clips


def _frame_metrics(pred: torch.Tensor, truth: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-frame metrics of [N, T, H, W, 3] frames: {key: [N, T]}."""
    from rlvr_envs.video import metrics

    n, t = truth.shape[:2]
    flat_pred, flat_truth = pred.reshape(-1, *pred.shape[2:]), truth.reshape(-1, *truth.shape[2:])
    out = {}
    for key in CLIP_METRICS:
        value = getattr(metrics, key)(flat_pred, flat_truth).reshape(n, t)
        out[key] = value.clamp(max=PSNR_CAP) if key == "psnr" else value
    return out


def _summary(values: dict[str, torch.Tensor], columns: slice) -> dict[str, float]:
    return {key: float(v[:, columns].mean()) for key, v in values.items()}


@torch.no_grad()
def evaluate_clips(model, clips: np.ndarray, frame_tokenizer=None) -> dict:
    """Metrics of the compressed tokenizer (and the per-frame one) on uint8 clips [N, T, H, W, 3]."""
    truth = torch.as_tensor(clips).float() / 255.0
    context_codes = model.encode_context(clips[:, 0])
    future_codes = model.encode_future(clips, clips[:, 0])
    decoded = model.decode(context_codes, future_codes)
    context_decoded = model.decode_context(context_codes)
    comp = _frame_metrics(decoded, truth)
    copy = _frame_metrics(truth[:, :1].expand_as(truth), truth)
    ctx = _frame_metrics(context_decoded[:, None], truth[:, :1])
    t = clips.shape[1]
    result = {
        "clips": int(len(clips)), "frames_per_clip": int(t),
        "compressed": {"future_frames": _summary(comp, slice(1, None)), "frame0_coarse": _summary(comp, slice(0, 1)),
                       "context_frame_fine": _summary(ctx, slice(0, 1)),
                       "by_offset": [_summary(comp, slice(i, i + 1)) for i in range(t)],
                       "future_codes_used": int(np.unique(future_codes).size),
                       "context_codes_used": int(np.unique(context_codes).size)},
        "copy_context_pixels": {"future_frames": _summary(copy, slice(1, None)),
                                "by_offset": [_summary(copy, slice(i, i + 1)) for i in range(t)]},
        "tokens_per_clip": {"compressed": model.tokens_per_context + t * model.tokens_per_future,
                            "compressed_without_frame0": model.tokens_per_context + (t - 1) * model.tokens_per_future,
                            "tokens_per_context": model.tokens_per_context,
                            "tokens_per_future": model.tokens_per_future},
    }
    if frame_tokenizer is not None:
        flat = clips.reshape(-1, *clips.shape[2:])
        per_frame = frame_tokenizer.decode(frame_tokenizer.encode(flat)).reshape(truth.shape)
        pf = _frame_metrics(per_frame, truth)
        result["per_frame"] = {"future_frames": _summary(pf, slice(1, None)),
                               "by_offset": [_summary(pf, slice(i, i + 1)) for i in range(t)]}
        result["tokens_per_clip"]["per_frame"] = t * frame_tokenizer.config.tokens_per_frame
    return result
