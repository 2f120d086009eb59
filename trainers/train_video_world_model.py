"""MLE pre-training of a video world model (LLaMA over frame codes and action bins).

Builds the video task on the training episodes (the same codec the envs use, so a trained
model's responses are exactly what `RLVRWorld/PushT-*`, or with `--dataset rt1|rope|granular`
the RT-1 and DINO-WM envs, verify), trains next-token
prediction on every frame code (action tokens, given by the env, carry no loss), and
evaluates on held-out episodes against the baselines every claim needs:

* copy the last frame, in token space (its codes as the prediction) and in pixels;
* the tokenizer's ceiling (the gold codes, decoded);
* the model's samples (temperature 1, top-k 100 as in the paper's evaluation).

    python -m trainers.train_video_world_model --data data/pusht64 --tokenizer runs/frame_tokenizer \\
        --layout single --out runs/wm_single
    python -m trainers.train_video_world_model --dataset rt1 --data data/rt1 --tokenizer runs/rt1_tokenizer \\
        --layout multi --out runs/wm_rt1_multi

`--device auto|cpu|cuda|cuda:N` (auto: CUDA when present) and `--precision` follow the one
policy of `rlvr_envs.core.device` (bf16 autocast only where the device computes bf16 natively).
Under `accelerate launch` (configs in `configs/accelerate/`, see docs/scale_out.md) each process
trains on its share of every global batch of `--batch-size` windows, DDP averages the
gradients, and rank 0 alone evaluates and saves: a 2-process run equals a 1-process run at the
same global batch (tested).

Checkpoints (`--out/checkpoint/`, `save_pretrained` + optimizer state) let an interrupted
run resume with `--resume`, at any number of processes; the final model is saved with `save_pretrained` in `--out` with
a model card (`card.json`) holding data, command, steps, wall time and held-out metrics. A finished run is
final: `--resume` on it is refused in one line (train further with `--init OUT --out NEW`), as is a run into a
folder that holds one without `--resume`, or `--resume` where there is no run (`trainers.common.check_run_folder`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rlvr_envs.core.files import json_line, keep_log_until, load_torch_file, strict_json
from rlvr_envs.core.run_clock import RunClock, warmup_cosine
from trainers.common import (RESUME_REMEDY, check_ranges, check_run_folder, owns_run_folder, parse_dataclass_args,
                             resume_line, run_command)
# the one token-row loop every from-scratch world model trains through (text SFT too)
from trainers.token_rows import TokenRows, auto_micro_batch, make_optimizer, train_loop, training_step  # noqa: F401


@dataclass
class Args:
    data: str = "data/pusht64"  #: episodes (`rlvr-world data pusht` or `... rt1`), held out as their envs do
    dataset: str = "pusht"  #: pusht, rt1, rope or granular: which video env's episodes `data` holds
    tokenizer: str = "runs/frame_tokenizer"  #: a FrameTokenizer checkpoint
    layout: str = "single"  #: "single" or "multi"
    out: str = "runs/wm_single"
    preset: str = "pusht"  #: LLaMA size (rlvr_envs.video.world_model.PRESETS); "pusht" is the shipped 2.3M
    frame_skip: int = 0  #: simulator steps between frames; 0 = the dataset's default (PushT 5, the others 1)
    future: int = 0  #: multi-step: frames to predict; 0 = the dataset's default (PushT 4, RT-1 7, DINO-WM 4)
    steps: int = 2000
    batch_size: int = 16
    lr: float = 1e-3
    warmup: int = 100
    eval_windows: int = 128
    eval_every: int = 500
    checkpoint_every: int = 250
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N
    precision: str = "auto"  #: auto (bf16 autocast where the device computes bf16 natively), bf16 or fp32
    bf16: bool = False  #: force bf16 autocast (same as --precision bf16; emulated, so slower, on CPUs without AMX)
    no_compile: bool = False  #: skip torch.compile (on by default on CUDA; its warm-up is the card's first_step_seconds)
    micro_batch: int = 0  #: windows per forward; 0 = the largest that fits the GPU by rlvr_envs.core.sizing (accumulating to --batch-size)
    resume: bool = False  #: continue the unfinished run in --out (a finished one is refused: --init OUT --out NEW)
    init: str = ""  #: continue training this saved model (e.g. the shipped one) instead of a fresh one
    max_seconds: float = 0.0  #: stop after this much training time (0 = run all steps); for matched-time baselines
    #: also stop before this absolute time, setup included (seconds since the epoch, as `date +%s`; 0 = none):
    #: the run stops before a step that would pass it, and its learning rate anneals over the time given
    end_at: float = 0.0

    def validate(self) -> "Args":
        from rlvr_envs.video.sources import DATASETS

        if self.layout not in ("single", "multi"):
            raise ValueError(f"layout must be 'single' or 'multi', got {self.layout!r}")
        check_ranges(self, at_least={name: 1 for name in (
            "steps", "batch_size", "warmup", "eval_windows", "eval_every", "checkpoint_every", "threads")} | {
            "seed": 0}, positive=("lr",), non_negative=("max_seconds", "end_at", "micro_batch"))
        if self.dataset not in DATASETS:
            raise ValueError(f"--dataset {self.dataset!r}: one of {', '.join(DATASETS)}")
        if self.frame_skip < 0 or self.future < 0:
            raise ValueError("frame_skip and future must be >= 0 (0: the dataset's default)")
        from rlvr_envs.core.device import PRECISIONS, resolve_device

        if self.precision not in PRECISIONS:
            raise ValueError(f"--precision {self.precision!r}: one of {', '.join(PRECISIONS)}")
        resolve_device(self.device)  # an absent or malformed device fails before any work
        spec = DATASETS[self.dataset]  # resolved here, so the card records the values used
        self.frame_skip = self.frame_skip or spec.frame_skip
        self.future = self.future or spec.future
        if not (Path(self.tokenizer) / "config.json").is_file():
            raise FileNotFoundError(f"--tokenizer {self.tokenizer}: no frame tokenizer there (expected its config.json; "
                                    "python -m trainers.train_frame_tokenizer makes one)")
        check_run_folder(self.out, self.resume, "--init", self)
        return self


def build_task(args: Args, split: str, device: str = "cpu"):
    """The video task over one split (tokenizer and decoding on `device`); training windows come
    from every phase of the frame skip."""
    from rlvr_envs.video.task import VideoPredictionTask, VideoTaskConfig

    offsets = tuple(range(args.frame_skip)) if split == "train" else (0,)
    return VideoPredictionTask(VideoTaskConfig(layout=args.layout, dataset=args.dataset, data_dir=args.data,
                                               split=split, reward="mae",
                                               tokenizer=args.tokenizer, frame_skip=args.frame_skip,
                                               frame_offsets=offsets, future=args.future, window_stride=1,
                                               device=device))


def training_arrays(task) -> tuple[np.ndarray, np.ndarray]:
    """(token sequences [N, L], labels [N, L] with -100 where no loss applies).

    The loss covers every frame code (history frames too) and, single-step, the eos after
    the predicted frame; action tokens and bos are given, never predicted.
    """
    layout, vocab = task.layout, task.vocab
    sequences, labels = [], []
    for i in range(len(task)):
        tail = [vocab.eos] if task.config.layout == "single" else []
        sequence = np.concatenate([task.prompt_ids(i), task.target_ids(i), tail]).astype(np.int64)
        label = np.where(vocab.is_frame_code(sequence) | (sequence == vocab.eos), sequence, -100)
        label[: layout.tokens_per_frame] = -100  # the first frame has no context to predict it from
        sequences.append(sequence)
        labels.append(label)
    return np.stack(sequences), np.stack(labels)


@torch.no_grad()
def evaluate(model, task, windows: list[int], seed: int, top_k: int = 100, batch: int = 16) -> dict[str, dict]:
    """Held-out metrics of the model's samples and of the baselines, in raw units."""
    from baselines.video import copy_last_frame_pixels, copy_last_frame_responses
    from rlvr_envs.video.world_model import generate_responses

    layout = task.layout
    rows: dict[str, list] = {"model": [], "copy_last_frame_tokens": [], "tokenizer_ceiling": []}
    pixel_copy = []
    model.eval()
    for start in range(0, len(windows), batch):
        chunk = windows[start:start + batch]
        prompts = np.stack([task.prompt_ids(i) for i in chunk])
        given = None if task.config.layout == "single" else np.stack([task.given_action_tokens(i) for i in chunk])
        sampled = generate_responses(model, prompts, layout, given, temperature=1.0, top_k=top_k,
                                     seed=seed + start)
        rows["model"] += task.verify(chunk, list(sampled))
        rows["copy_last_frame_tokens"] += task.verify(chunk, copy_last_frame_responses(task, chunk))
        rows["tokenizer_ceiling"] += task.verify(chunk, [task.target_ids(i) for i in chunk])
        pixel_copy += copy_last_frame_pixels(task, chunk)
    report = {name: {key: float(np.mean([r.metrics[key] for r in results]))
                     for key in ("mae", "mse", "psnr", "ssim", "repetition")} | {
                         "parsed": float(np.mean([r.parsed for r in results]))}
              for name, results in rows.items()}
    report["copy_last_frame_pixels"] = {key: float(np.mean([m[key] for m in pixel_copy]))
                                        for key in ("mae", "mse", "psnr", "ssim")}
    return report


@owns_run_folder("--init")
def main(args: Args) -> dict:
    from transformers import LlamaForCausalLM

    from rlvr_envs.core.device import maybe_compile
    from rlvr_envs.video.world_model import build_world_model, check_world_model_config, save_world_model
    from trainers.distributed import machine_line, start_run

    args.validate()
    torch.manual_seed(args.seed)
    run = start_run(args.device, "bf16" if args.bf16 else args.precision, args.threads)
    run.check_divisible(args.batch_size, "--batch-size")
    say = print if run.is_main else (lambda *a, **k: None)
    say(f"encoding episodes of {args.data} with {args.tokenizer} on {run.describe()} ...", flush=True)
    train_task, test_task = build_task(args, "train", str(run.device)), build_task(args, "test", str(run.device))
    sequences, labels = training_arrays(train_task)
    rng = np.random.default_rng(args.seed)
    eval_windows = sorted(rng.choice(len(test_task), size=min(args.eval_windows, len(test_task)),
                                     replace=False).tolist())
    say(f"{len(sequences)} training windows of {sequences.shape[1]} tokens; {len(test_task)} held-out windows "
        f"({len(eval_windows)} evaluated)", flush=True)

    out = Path(args.out)
    checkpoint = out / "checkpoint"
    step = 0
    resuming = args.resume and (checkpoint / "state.pt").exists()
    if resuming:
        model = LlamaForCausalLM.from_pretrained(checkpoint)
        state = load_torch_file(checkpoint / "state.pt", "the training state", RESUME_REMEDY)
        step = int(state["step"])
    elif args.init:
        from rlvr_envs.video.world_model import load_world_model

        model = load_world_model(args.init, train_task.vocab)
        state = None
    else:
        model = build_world_model(train_task.vocab, sequences.shape[1], args.preset, args.seed)
        state = None
    if args.resume:
        say(resume_line(out, checkpoint if resuming else None, step), flush=True)
    check_world_model_config(model.config, train_task.vocab, train_task.layout)
    model.to(run.device)  # before the optimizer loads its state, so the state lands on the device too
    optimizer = make_optimizer(model, args.lr, run.device)
    clock = RunClock(args.max_seconds, args.end_at)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(
        args.warmup, args.steps, lambda: run.from_main(clock.fraction())))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
    parameters = sum(p.numel() for p in model.parameters())
    per_rank = args.batch_size // run.world
    micro = min(args.micro_batch, per_rank) if args.micro_batch else \
        auto_micro_batch(model, sequences.shape[1], per_rank, run.device)
    while per_rank % micro:  # equal parts
        micro -= 1
    compiled = run.device.type == "cuda" and not args.no_compile
    say(f"LLaMA preset {args.preset}: {parameters / 1e6:.1f}M parameters; {per_rank} windows per step in forwards "
        f"of {micro}{'; torch.compile' if compiled else ''}", flush=True)
    raw_model = model
    model, optimizer = run.prepare(maybe_compile(model, compiled), optimizer)
    rows = TokenRows(sequences, labels)  # one window per row
    if run.is_main:
        out.mkdir(parents=True, exist_ok=True)
        keep_log_until(out / "log.jsonl", step)  # a resumed run repeats the steps after its checkpoint: log them once
    run.wait()
    log = (out / "log.jsonl").open("a", encoding="utf-8") if run.is_main else None
    started = time.perf_counter()
    history = []

    def on_step(step: int, loss: torch.Tensor) -> None:  # rank 0: log, checkpoint, evaluate
        if step % 25 == 0:
            log.write(json_line({"step": step, "loss": loss.item(), "lr": schedule.get_last_lr()[0],
                                 "seconds": time.perf_counter() - started}))
            log.flush()
        if step % args.checkpoint_every == 0 and step < args.steps:
            run.unwrap(model).save_pretrained(checkpoint)
            torch.save({"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(), "step": step},
                       checkpoint / "state.pt")
        if step % args.eval_every == 0 or step == args.steps:
            report = evaluate(raw_model, test_task, eval_windows, args.seed)
            history.append({"step": step, **report})
            log.write(json_line({"step": step, "eval": report}))
            log.flush()
            print(f"step {step}: model MAE {report['model']['mae']:.5f} | copy-last-frame (tokens) "
                  f"{report['copy_last_frame_tokens']['mae']:.5f} | ceiling {report['tokenizer_ceiling']['mae']:.5f}",
                  flush=True)

    done = train_loop(model, optimizer, schedule, run, rows, rows.to(run.device), steps=args.steps, step=step,
                      batch_rows=args.batch_size, micro=micro, seed=args.seed, clock=clock,
                      compiled=compiled, raw_model=raw_model, on_step=on_step, say=say,
                      desc=f"MLE {args.layout}-step")
    step, compiled, seconds, tokens = done.step, done.compiled, done.seconds, done.tokens
    first_step_seconds = done.first_step_seconds
    first_tokens = args.batch_size * sequences.shape[1]  # the first step's, compile included
    steady = done.steady_rate(first_tokens, real=False)
    if not run.is_main:  # rank 0 evaluates and saves; the others are done
        run.end()
        return {"rank": run.rank, "steps": step}
    if not history or history[-1]["step"] != step:  # stopped early by its time limit
        history.append({"step": step, **evaluate(raw_model, test_task, eval_windows, args.seed)})
    save_world_model(raw_model, str(out))  # bfloat16 on disk: half the bytes of a shipped checkpoint
    card = {"what": f"LLaMA {args.layout}-step {train_task.config.spec.label} world model, MLE on frame codes",
            "command": "python -m trainers.train_video_world_model " + " ".join(sys.argv[1:]),
            "args": dataclasses.asdict(args), "parameters": parameters, "train_windows": int(len(sequences)),
            "held_out_windows": len(eval_windows), "steps": step, "train_seconds_this_run": round(seconds, 1),
            "tokens_per_second": round(tokens / max(seconds, 1e-9)), "processes": run.world,
            "tokens_per_second_after_first_step": round(steady), "micro_batch": micro, "compiled": compiled, "first_step_seconds": round(first_step_seconds or 0.0, 2),
            "stopped_by_time": done.stopped_by_time, "clock": clock.record(),
            "final_learning_rate": schedule.get_last_lr()[0], "machine": machine_line(run),
            "held_out": history[-1] if history else None, "eval_history": history}
    (out / "card.json").write_text(json.dumps(strict_json(card), indent=2, allow_nan=False) + "\n",  # inf PSNR: null
                                   encoding="utf-8")
    print(json.dumps(card["held_out"], indent=2))
    run.end()
    return card


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    run_command(main, parse_args)
