"""Train the compressed visual tokenizer (multi-step world models) on recorded video episodes.

Not to be confused with the text BPE builders (`trainers.tokenizer`,
`trainers.miniweb_tokenizer`). This learns `rlvr_envs.video.compressed_tokenizer.
CompressedTokenizer`: a context frame on the fine grid, later frames on a coarse grid
decoded with the context frame's features. It reuses `trainers.train_frame_tokenizer`'s
episode loading and foreground-weighted L1 (weighted towards pixels that differ from the
background or from the context frame), plus LPIPS when its weights are on the machine.

    python -m trainers.train_compressed_tokenizer --data data/pusht64 --out runs/compressed_tokenizer \\
        --init-context rlvr_envs/assets/video/pusht_frame_tokenizer --max-seconds 600

Each training example is a (context frame, later frame) pair of one episode, the later
frame 0, 1, .., `--max-offset` kept frames after the context frame at `--frame-skip`
simulator steps per kept frame (the PushT tasks' frame stride). `--init-context` starts the
context branch from a trained per-frame tokenizer (frozen unless `--train-context`), so its
context codes are that tokenizer's codes. Training stops at `--steps` or `--max-seconds`
(the learning-rate schedule follows whichever ends first); the run ends with held-out
metrics (`rlvr_envs.video.compressed_tokenizer.evaluate_clips`) written into the model card.

`--device` follows `rlvr_envs.core.device` (fp32, TF32 matmuls on CUDA: the FSQ quantisers round
their latents); under `accelerate launch` each process trains on its share of every batch, DDP
averages the gradients, the schedule follows rank 0's clock, and rank 0 evaluates and saves.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rlvr_envs.core.files import json_line, keep_log_until, load_torch_file
from trainers.common import (RESUME_REMEDY, adamw, check_ranges, check_run_folder, owns_run_folder,
                             parse_dataclass_args, resume_line, run_command)
from trainers.train_frame_tokenizer import foreground_weight, load_episode_frames


@dataclass
class Args:
    data: str = "data/pusht64"  #: folder of PushT episodes (`rlvr-world data pusht`)
    out: str = "runs/compressed_tokenizer"
    steps: int = 4000
    max_seconds: float = 600.0  #: wall-time cap of the training loop (the schedule ends with it)
    batch_size: int = 32
    lr: float = 2e-3
    foreground_weight: float = 10.0  #: extra loss weight of pixels that differ from the background or context
    lpips_weight: float = 0.0  #: weight of an LPIPS term (used only when the LPIPS weights are on the machine)
    context_levels: str = "8,5,5,5"
    context_downsample: int = 8  #: 64x64 -> 8x8 context codes
    future_levels: str = "8,5,5,5"
    future_downsample: int = 16  #: 64x64 -> 4x4 codes per later frame
    init_context: str = ""  #: a FrameTokenizer directory to start the context branch from
    train_context: bool = False  #: also train the context branch (always, without --init-context)
    frame_skip: int = 5  #: simulator steps between kept frames
    max_offset: int = 4  #: later frames lie 0..max_offset kept frames after the context frame
    test_every: int = 10  #: episode index % test_every == 0 is held out
    eval_clips: int = 1000
    checkpoint_every: int = 500
    seed: int = 0
    threads: int = 1
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N (under accelerate launch: auto or cuda)
    resume: bool = False  #: continue the unfinished run in --out (a finished one is refused: choose another --out)

    def validate(self) -> "Args":
        check_ranges(self, at_least={name: 1 for name in (
            "steps", "batch_size", "context_downsample", "future_downsample", "eval_clips", "checkpoint_every",
            "threads")} | {"test_every": 2, "seed": 0}, positive=("lr", "max_seconds"),
            non_negative=("foreground_weight", "lpips_weight"))
        if self.frame_skip < 1 or self.max_offset < 0:
            raise ValueError("frame_skip must be positive and max_offset non-negative")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # an absent or malformed device fails before any work
        check_run_folder(self.out, self.resume, "", self)
        return self


def _levels(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def learning_rate(base: float, progress: float, warmup: float = 0.05) -> float:
    """Linear warm-up then cosine decay to 1% over progress in [0, 1]."""
    if progress < warmup:
        return base * max(progress / warmup, 0.01)
    return base * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warmup) / (1 - warmup)))))


class PairSampler:
    """Random (context frame, later frame) pairs of the same episode."""

    def __init__(self, episodes: list[np.ndarray], frame_skip: int, max_offset: int, rng: np.random.Generator):
        span = max_offset * frame_skip
        usable = [e for e in episodes if len(e) > span]
        if not usable:
            raise SystemExit(f"no training episode is longer than {span} frames")
        self.frames = np.concatenate(usable)
        starts = np.cumsum([0] + [len(e) for e in usable[:-1]])
        # every context index whose furthest later frame stays in its episode
        self.contexts = np.concatenate([s + np.arange(len(e) - span) for s, e in zip(starts, usable)])
        self.skip, self.max_offset, self.rng = frame_skip, max_offset, rng

    def __call__(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        context = self.contexts[self.rng.integers(len(self.contexts), size=batch)]
        later = context + self.skip * self.rng.integers(0, self.max_offset + 1, size=batch)
        to_x = lambda idx: torch.as_tensor(self.frames[idx]).permute(0, 3, 1, 2).float().div(255.0)  # noqa: E731
        return to_x(later).contiguous(memory_format=torch.channels_last), \
            to_x(context).contiguous(memory_format=torch.channels_last)


def _perceptual(weight: float, device: torch.device | str = "cpu"):
    """An LPIPS loss on `device` when asked for and its real weights are here, else None (and why)."""
    if weight <= 0:
        return None, "not used (--lpips-weight 0)"
    from rlvr_envs.video import metrics

    try:
        lpips = metrics.load_lpips("vgg", device=device, allow_download=False)
    except metrics.LPIPSWeightsUnavailable:
        return None, "not used: the LPIPS backbone weights are not on this machine"
    return lpips, f"LPIPS (vgg) x {weight}"


@owns_run_folder()
def main(args: Args) -> dict:
    from tqdm.auto import tqdm

    from rlvr_envs.video.compressed_tokenizer import (CompressedTokenizer, CompressedTokenizerConfig, evaluate_clips,
                                                      heldout_clips)
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from trainers.distributed import Method, machine_line, start_run

    args.validate()
    torch.manual_seed(args.seed)
    run = start_run(args.device, "fp32", args.threads)
    run.check_divisible(args.batch_size, "--batch-size")
    rng = np.random.default_rng(args.seed)
    train, test = load_episode_frames(args.data, args.test_every)
    resolution = train[0].shape[1:3]
    config = CompressedTokenizerConfig(resolution=resolution, context_downsample=args.context_downsample,
                                       context_levels=_levels(args.context_levels),
                                       future_downsample=args.future_downsample,
                                       future_levels=_levels(args.future_levels))
    model = CompressedTokenizer(config)
    if args.init_context:
        frame_tokenizer = FrameTokenizer.load(args.init_context)
        if frame_tokenizer.config != config.context_config:
            raise SystemExit(f"{args.init_context}: its config {frame_tokenizer.config} is not the context branch "
                             f"{config.context_config}")
        model.context.load_state_dict(frame_tokenizer.state_dict())
    else:
        flat = np.concatenate(train)
        sample = flat[rng.choice(len(flat), size=min(4096, len(flat)), replace=False)]
        model.context.background.data.copy_(torch.as_tensor(np.median(sample, axis=0)).permute(2, 0, 1).float() / 255)
        del flat
    train_context = args.train_context or not args.init_context
    for parameter in model.context.parameters():
        parameter.requires_grad_(train_context)
    out = Path(args.out)
    checkpoint = out / "checkpoint"
    start_step, spent = 0, 0.0
    if args.resume and (checkpoint / "state.pt").exists():
        model = CompressedTokenizer.load(checkpoint)
        for parameter in model.context.parameters():
            parameter.requires_grad_(train_context)
    model.to(run.device)  # before the optimizer loads its state, so the state lands on the device too
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = adamw(params, run.device, lr=args.lr, weight_decay=1e-4)
    if args.resume and (checkpoint / "state.pt").exists():
        state = load_torch_file(checkpoint / "state.pt", "the training state", RESUME_REMEDY)
        optimizer.load_state_dict(state["optimizer"])
        start_step, spent = int(state["step"]), float(state["seconds"])
        rng = np.random.default_rng([args.seed, start_step])
    if args.resume and run.is_main:
        print(resume_line(out, checkpoint if start_step else None, start_step), flush=True)
    sampler = PairSampler(train, args.frame_skip, args.max_offset, rng)
    test_clips = heldout_clips(test, args.frame_skip, args.max_offset + 1, 10, args.eval_clips, args.seed)
    del train
    perceptual, perceptual_note = _perceptual(args.lpips_weight, run.device)
    model = model.to(memory_format=torch.channels_last).train()
    background = model.context.background.detach()
    trained, optimizer = run.prepare(Method(model, "reconstruct"), optimizer)
    if run.is_main:
        out.mkdir(parents=True, exist_ok=True)
        keep_log_until(out / "log.jsonl", start_step, redone=lambda record: True)  # steps from start_step run again
    log = (out / "log.jsonl").open("a", encoding="utf-8") if run.is_main else None
    started = time.perf_counter() - spent
    bar = tqdm(range(start_step, args.steps), desc="compressed tokenizer", unit="step", initial=start_step,
               total=args.steps, disable=not run.is_main)
    step = start_step
    for step in bar:
        elapsed = run.from_main(time.perf_counter() - started)  # one clock: every rank stops and decays alike
        if elapsed >= args.max_seconds:
            break
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(args.lr, max(step / args.steps, elapsed / args.max_seconds))
        x, context_x = (run.shard(t).to(run.device, non_blocking=True) for t in sampler(args.batch_size))
        context_image, decoded = trained(x, context_x)
        loss = ((decoded - x).abs() * foreground_weight(x, background, args.foreground_weight, context_x)).mean()
        if train_context:
            loss = loss + ((context_image - context_x).abs()
                           * foreground_weight(context_x, background, args.foreground_weight)).mean()
        if perceptual is not None:
            loss = loss + args.lpips_weight * perceptual(decoded.permute(0, 2, 3, 1), x.permute(0, 2, 3, 1)).mean()
        optimizer.zero_grad(set_to_none=True)
        run.backward(loss)
        optimizer.step()
        if not run.is_main:
            continue
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
            log.write(json_line({"step": step, "loss": loss.item(), "seconds": time.perf_counter() - started}))
            log.flush()
        if (step + 1) % args.checkpoint_every == 0 and step + 1 < args.steps:
            model.save(checkpoint)
            torch.save({"optimizer": optimizer.state_dict(), "step": step + 1,
                        "seconds": time.perf_counter() - started}, checkpoint / "state.pt")
    else:
        step = args.steps
    seconds = time.perf_counter() - started
    bar.close()
    if not run.is_main:  # rank 0 evaluates and saves
        run.end()
        return {"rank": run.rank}
    model = model.to(memory_format=torch.contiguous_format).eval()
    held_out = evaluate_clips(model, test_clips)
    summary = {"future_frames": held_out["compressed"]["future_frames"],
               "frame0_coarse": held_out["compressed"]["frame0_coarse"],
               "context_frame": held_out["compressed"]["context_frame_fine"],
               "future_codes_used": held_out["compressed"]["future_codes_used"],
               "clips": held_out["clips"], "tokens_per_clip": held_out["tokens_per_clip"]}
    card = {"what": "CompressedTokenizer (context frame fine grid + later frames on a coarse grid decoded with the "
                    "context frame's features) trained by reconstruction on PushT frames from `rlvr-world data pusht`",
            "data": args.data, "train_pairs_from_frames": int(len(sampler.frames)),
            "held_out": "episodes with index % {} == 0; clips of {} frames at frame stride {}".format(
                args.test_every, args.max_offset + 1, args.frame_skip),
            "command": "python -m trainers.train_compressed_tokenizer " + " ".join(sys.argv[1:]),
            "args": dataclasses.asdict(args), "steps": int(step), "train_seconds": round(seconds, 1),
            "context_branch": (f"initialised from {args.init_context}" + ("" if train_context else " and frozen"))
            if args.init_context else "trained jointly from scratch",
            "perceptual_loss": perceptual_note,
            "machine": machine_line(run), "processes": run.world,
            "held_out_metrics": summary}
    model.save(out, card=card)
    print(json.dumps(summary, indent=2))
    run.end()
    return card


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    run_command(main, parse_args)
