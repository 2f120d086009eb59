"""Train the visual frame tokenizer (FSQ codes per frame) on recorded video episodes.

Not to be confused with `trainers.tokenizer` / `trainers.miniweb_tokenizer`, which build
the text BPE vocabularies. This one learns `rlvr_envs.video.frame_tokenizer.FrameTokenizer`
by reconstruction: L1 weighted towards the pixels that differ from the static background
(plain L1 on mostly-background frames collapses the grid onto one code).

    rlvr-world data pusht --episodes 300 --resolution 64 --out data/pusht64
    python -m trainers.train_frame_tokenizer --data data/pusht64 --out runs/frame_tokenizer
    python -m trainers.train_frame_tokenizer --dataset rt1 --data data/rt1 --resolution 64,80 --out runs/rt1_tokenizer

`--dataset` reads any video env's episodes (pusht, rt1, rope, granular: the envs' `dataset=`),
from the same loaders the envs use; `--resolution H,W` resizes the frames first (the envs resize
their frames to the tokenizer's resolution, so this sets the size an env works at). RT-1 holds
out its converted `test` folder, as its envs do; the other datasets every episode whose index is
a multiple of `--test-every`. The run ends with held-out PSNR / SSIM / MAE of the
reconstructions and writes them into the model card.
Checkpoints (`--out/checkpoint/`) let an interrupted run resume with `--resume` (at any number of
processes); a finished run (the tokenizer saved in `--out`) is final, and `--resume` on it is refused
(`trainers.common.check_run_folder`, the contract of every trainer). `--device` follows
`rlvr_envs.core.device` (fp32, TF32 matmuls on CUDA: FSQ rounds its latents, which bf16 would move); under `accelerate launch` each process trains on its share of
every batch, DDP averages the gradients and rank 0 evaluates and saves.
The compressed tokenizer of the multi-step world models has its own script,
`trainers.train_compressed_tokenizer`, which reuses this one's data loading and loss.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr_envs.core.files import json_line, keep_log_until, load_torch_file
from trainers.common import (RESUME_REMEDY, adamw, check_ranges, check_run_folder, owns_run_folder,
                             parse_dataclass_args, resume_line, run_command)


@dataclass
class Args:
    data: str = "data/pusht64"  #: folder of episodes (PushT: `rlvr-world data pusht`; RT-1: `rlvr-world data rt1`)
    dataset: str = "pusht"  #: pusht, rt1, rope or granular: which video env's episodes `data` holds
    resolution: str = ""  #: H,W to resize the frames to ("" = as recorded)
    #: a named shape (rlvr_envs.video.frame_tokenizer.TOKENIZER_PRESETS: pusht64, or rt1 = 256x320 frames,
    #: 320 tokens, 4,375 codes); it sets resolution, levels, downsample and channel widths
    preset: str = ""
    out: str = "runs/frame_tokenizer"
    steps: int = 6000
    batch_size: int = 64
    lr: float = 2e-3
    foreground_weight: float = 10.0  #: extra loss weight of pixels that differ from the background
    levels: str = "8,5,5,5"  #: FSQ levels (1,000 codes)
    downsample: int = 8  #: 64x64 frames -> 8x8 codes
    test_every: int = 10  #: episode index % test_every == 0 is held out
    eval_frames: int = 2048
    checkpoint_every: int = 500
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N (under accelerate launch: auto or cuda)
    resume: bool = False  #: continue the unfinished run in --out (a finished one is refused: choose another --out)

    def validate(self) -> "Args":
        from rlvr_envs.video.sources import DATASETS

        check_ranges(self, at_least={name: 1 for name in (
            "steps", "batch_size", "downsample", "eval_frames", "checkpoint_every", "threads")} | {
            "test_every": 2, "seed": 0}, positive=("lr",), non_negative=("foreground_weight",))
        if self.dataset not in DATASETS:
            raise ValueError(f"--dataset {self.dataset!r}: one of {', '.join(DATASETS)}")
        from rlvr_envs.core.device import resolve_device
        from rlvr_envs.video.frame_tokenizer import TOKENIZER_PRESETS

        resolve_device(self.device)  # an absent or malformed device fails before any work
        if self.preset:
            if self.preset not in TOKENIZER_PRESETS:
                raise ValueError(f"--preset {self.preset!r}: one of {', '.join(TOKENIZER_PRESETS)}")
            shape = TOKENIZER_PRESETS[self.preset]
            self.resolution = ",".join(map(str, shape.resolution))
            self.levels, self.downsample = ",".join(map(str, shape.levels)), shape.downsample
        size = self.frame_size()
        if size is not None and any(v % self.downsample for v in size):
            raise ValueError(f"--resolution {self.resolution}: both sides must be multiples of --downsample "
                             f"{self.downsample}")
        check_run_folder(self.out, self.resume, "", self)
        return self

    def frame_size(self) -> tuple[int, int] | None:
        """`--resolution` as (H, W), or None for the recorded size."""
        if not self.resolution:
            return None
        try:
            height, width = (int(v) for v in self.resolution.split(","))
        except ValueError:
            raise ValueError(f"--resolution {self.resolution!r}: expected H,W, e.g. 64,80") from None
        if height < 1 or width < 1:
            raise ValueError(f"--resolution {self.resolution!r}: sides must be positive")
        return height, width


def episode_sources(data: str, dataset: str) -> list[tuple[Any, bool | None]]:
    """(episode source, held out?) pairs read by the loaders the envs use; None: split by index."""
    from rlvr_envs.video.sources import episode_source

    if dataset == "rt1":  # RT-1's held-out episodes are its converted `test` folder, as in its envs
        return [(episode_source(dataset, data, "train"), False), (episode_source(dataset, data, "test"), True)]
    return [(episode_source(dataset, data), None)]


def load_episode_frames(data: str, test_every: int, dataset: str = "pusht",
                        resolution: tuple[int, int] | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(train episodes, held-out episodes): each a list of uint8 frames [T, H, W, 3] (resized to
    `resolution` when given), split as `episode_sources` says (else index % test_every == 0 is
    held out)."""
    from tqdm.auto import tqdm

    from rlvr_envs.video.frames import frames_and_actions
    from rlvr_envs.video.sources import resize_frames

    try:
        sources = episode_sources(data, dataset)
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    train, test = [], []
    for source, held_out in sources:
        for position in tqdm(range(len(source)), desc="loading episodes", unit="episode"):
            episode = source[position]
            frames, _ = frames_and_actions(episode)
            if resolution is not None:
                frames = resize_frames(frames, resolution)
            is_test = int(episode.index) % test_every == 0 if held_out is None else held_out
            (test if is_test else train).append(frames)
    if not train or not test:
        raise SystemExit(f"{data}: need episodes on both sides of the split (got {len(train)} train, {len(test)} test)")
    return train, test


def load_frames(data: str, test_every: int, dataset: str = "pusht",
                resolution: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(train frames, held-out frames), uint8 [N, H, W, 3], split as `load_episode_frames` does."""
    train, test = load_episode_frames(data, test_every, dataset, resolution)
    return np.concatenate(train), np.concatenate(test)


def foreground_weight(x: torch.Tensor, background: torch.Tensor, weight: float,
                      reference: torch.Tensor | None = None) -> torch.Tensor:
    """Per-pixel loss weight [B, 1, H, W]: 1 + `weight` where `x` differs from the background
    (or, given, from `reference`, e.g. the context frame) by more than 0.1 in some channel."""
    moved = (x - background).abs().amax(dim=1, keepdim=True) > 0.1
    if reference is not None:
        moved = moved | ((x - reference).abs().amax(dim=1, keepdim=True) > 0.1)
    return 1.0 + weight * moved.float()


@torch.no_grad()
def evaluate(model, frames: np.ndarray) -> dict[str, float]:
    """Reconstruction metrics of held-out frames (LPIPS only where its weights exist)."""
    from rlvr_envs.video import metrics

    codes = model.encode(frames)
    decoded = model.decode(codes)
    target = torch.as_tensor(frames).float() / 255.0  # decode returns frames on the CPU
    result = {"psnr": float(metrics.psnr(decoded, target).mean()), "ssim": float(metrics.ssim(decoded, target).mean()),
              "mae": float(metrics.mae(decoded, target).mean()), "mse": float(metrics.mse(decoded, target).mean()),
              "codes_used": int(np.unique(codes).size)}
    try:
        lpips = metrics.load_lpips("vgg", allow_download=False)
        result["lpips"] = float(lpips(decoded, target).mean())
    except metrics.LPIPSWeightsUnavailable:
        result["lpips"] = None  # the real backbone weights are not on this machine
    return result


@owns_run_folder()
def main(args: Args) -> dict:
    from tqdm.auto import tqdm

    from rlvr_envs.video.frame_tokenizer import FrameTokenizer, FrameTokenizerConfig
    from rlvr_envs.video.sources import DATASETS
    from trainers.distributed import Method, machine_line, start_run

    args.validate()
    torch.manual_seed(args.seed)
    run = start_run(args.device, "fp32", args.threads)
    run.check_divisible(args.batch_size, "--batch-size")
    rng = np.random.default_rng(args.seed)
    train, test = load_frames(args.data, args.test_every, args.dataset, args.frame_size())
    test = test[rng.permutation(len(test))[: args.eval_frames]]
    from rlvr_envs.video.frame_tokenizer import TOKENIZER_PRESETS

    widths = {"channels": TOKENIZER_PRESETS[args.preset].channels} if args.preset else {}
    config = FrameTokenizerConfig(resolution=train.shape[1:3], downsample=args.downsample,
                                  levels=tuple(int(v) for v in args.levels.split(",")), **widths).validate()
    model = FrameTokenizer(config)
    sample = train[rng.choice(len(train), size=min(4096, len(train)), replace=False)]
    background = torch.as_tensor(np.median(sample, axis=0)).permute(2, 0, 1).float() / 255.0
    model.background.data.copy_(background)
    model.to(run.device)
    background = background.to(run.device)
    optimizer = adamw(model.parameters(), run.device, lr=args.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps, pct_start=0.05)
    out = Path(args.out)
    checkpoint = out / "checkpoint"
    start_step = 0
    if args.resume and (checkpoint / "state.pt").exists():
        model = FrameTokenizer.load(checkpoint, device=run.device)
        optimizer = adamw(model.parameters(), run.device, lr=args.lr, weight_decay=1e-4)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps,
                                                       pct_start=0.05)
        state = load_torch_file(checkpoint / "state.pt", "the training state", RESUME_REMEDY)
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        start_step = int(state["step"])
        rng = np.random.default_rng([args.seed, start_step])
    if args.resume and run.is_main:
        print(resume_line(out, checkpoint if start_step else None, start_step), flush=True)
    if run.is_main:
        out.mkdir(parents=True, exist_ok=True)
        keep_log_until(out / "log.jsonl", start_step, redone=lambda record: True)  # steps from start_step run again
    log = (out / "log.jsonl").open("a", encoding="utf-8") if run.is_main else None
    model.train()
    trained, optimizer = run.prepare(Method(model, "reconstruct"), optimizer)
    started = time.perf_counter()
    bar = tqdm(range(start_step, args.steps), desc="frame tokenizer", unit="step", initial=start_step,
               total=args.steps, disable=not run.is_main)
    for step in bar:
        # every rank draws the global batch (same rng) and trains on its share; equal shares, so DDP's
        # average of the per-rank means is the global mean
        batch = torch.as_tensor(run.shard(train[rng.integers(len(train), size=args.batch_size)]))
        x = batch.to(run.device, non_blocking=True).permute(0, 3, 1, 2).float() / 255.0
        weight = foreground_weight(x, background, args.foreground_weight)
        loss = ((trained(x) - x).abs() * weight).mean()
        optimizer.zero_grad(set_to_none=True)
        run.backward(loss)
        optimizer.step()
        schedule.step()
        if not run.is_main:
            continue
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
            log.write(json_line({"step": step, "loss": loss.item(), "seconds": time.perf_counter() - started}))
            log.flush()
        if (step + 1) % args.checkpoint_every == 0 and step + 1 < args.steps:
            model.save(checkpoint)
            torch.save({"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(), "step": step + 1},
                       checkpoint / "state.pt")
    seconds = time.perf_counter() - started
    if not run.is_main:  # rank 0 evaluates and saves
        run.end()
        return {"rank": run.rank}
    model.eval()
    held_out = evaluate(model, test)
    card = {"what": f"FrameTokenizer trained by reconstruction on {DATASETS[args.dataset].label} frames "
                    f"({train.shape[1]}x{train.shape[2]})",
            "dataset": args.dataset, "data": args.data, "train_frames": int(len(train)),
            "held_out_frames": int(len(test)),
            "command": "python -m trainers.train_frame_tokenizer " + " ".join(sys.argv[1:]),
            "args": dataclasses.asdict(args), "steps": args.steps, "train_seconds_this_run": round(seconds, 1),
            "machine": machine_line(run), "processes": run.world,
            "held_out": held_out, "lpips_note": "None: the LPIPS backbone weights are not on this machine"}
    model.save(out, card=card)
    print(json.dumps(held_out, indent=2))
    run.end()
    return card


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    run_command(main, parse_args)
