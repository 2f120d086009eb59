"""One training loop for every world model trained from scratch: token rows with a label mask.

A world model of any modality trains on the same problem: rows of token ids, each with labels
(-100 where no loss applies: a video's action tokens, a text prompt when the loss is on the
answer only), next-token cross-entropy averaged over the labelled tokens of the whole batch.
`trainers.train_video_world_model` (MLE on frame codes; one window per row) and
`trainers.sft --from-scratch` (text SFT; several transitions packed per row) both train through
`train_loop` here, so what makes one fast makes the other fast:

* the rows live on the device (no host copy per step); a step's rows are drawn by a host
  generator seeded by (seed, step), so a resumed run draws what the uninterrupted one would;
* fused AdamW on CUDA (`trainers.common.adamw`), a warmup-cosine schedule over steps or, with a
  time limit, over the time given (`rlvr_envs.core.run_clock`), stopping before a step would pass the limit;
  bf16 autocast where the device computes bf16 natively (`rlvr_envs.core.device`);
* optional `torch.compile`: every forward has one shape (rows of one length, micro-batches of
  one size), so it compiles once;
* no host sync in a step: the loss comes back as a device tensor; the loop reads it only when
  it logs.

Text transitions vary in length (MiniTextWorld: ~300 to ~600 tokens). Padding each one to the
longest wastes up to half a batch; concatenating a whole batch into one row and masking makes
attention quadratic in the batch (TRL's padding-free batches: 64 x 492 tokens in one row, ~7x
the useful FLOPs on an H200). `pack_examples` instead fills rows of a fixed length (about two
of the longest examples) with whole transitions (best-fit decreasing), each transition's
positions starting at 0 and its attention confined to itself (`packed_attention`: a
block-diagonal causal mask for SDPA). A packed row gives each transition the logits it would get
alone, so the loss of a packed batch is the loss of its transitions one at a time (tested).
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from rlvr_envs.core.run_clock import RunClock

IGNORE = -100  #: the label of a token that carries no loss (Hugging Face's ignore index)


# -- rows ---------------------------------------------------------------------------------------
@dataclass
class TokenRows:
    """Host arrays of a training set: `input_ids` and `labels` [rows, length]; for packed rows also
    `segments` (which example of its row each token belongs to; -1 on padding) and `positions`
    (each token's position inside its example). Unpacked rows (None) are one example each,
    attended causally over the whole row."""

    input_ids: np.ndarray
    labels: np.ndarray
    segments: np.ndarray | None = None
    positions: np.ndarray | None = None
    examples: int = 0  #: examples in all rows (unpacked: one per row)

    def __post_init__(self) -> None:
        if not self.examples:
            self.examples = len(self.input_ids)

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[1])

    def counts(self) -> np.ndarray:
        """Labelled tokens per row (the loss shifts labels by one, so the first token never counts)."""
        return (self.labels[:, 1:] != IGNORE).sum(axis=1)

    def real_tokens(self) -> np.ndarray:
        """Tokens per row that belong to an example (not padding)."""
        if self.segments is None:
            return np.full(len(self.input_ids), self.length)
        return (self.segments >= 0).sum(axis=1)

    def padding_share(self) -> float:
        return 1.0 - float(self.real_tokens().sum()) / max(1, self.input_ids.size)

    def to(self, device: torch.device) -> "DeviceRows":
        """The rows resident on `device` (copied once, before training)."""
        as_tensor = lambda a: None if a is None else torch.as_tensor(a).to(device)  # noqa: E731
        return DeviceRows(as_tensor(self.input_ids), as_tensor(self.labels), as_tensor(self.segments),
                          as_tensor(self.positions))


@dataclass
class DeviceRows:
    input_ids: torch.Tensor
    labels: torch.Tensor
    segments: torch.Tensor | None = None
    positions: torch.Tensor | None = None


def auto_row_length(lengths: Sequence[int], multiple: int = 64) -> int:
    """The packed row length: twice the longest example, rounded up to `multiple` (rows hold two or
    more examples, so best-fit packing leaves little padding, and attention stays within a row of
    about two examples instead of a whole batch)."""
    return int(math.ceil(2 * max(lengths) / multiple) * multiple)


def pack_examples(sequences: Sequence[Sequence[int]], labels: Sequence[Sequence[int]], row_length: int,
                  pad_id: int) -> TokenRows:
    """Whole examples packed into rows of `row_length` tokens, best-fit decreasing (the longest
    first, each into the row it fills most closely; ties by order, so the packing is a pure
    function of the inputs). Each example keeps its own positions (0, 1, ...) and segment; the label
    of its first token is IGNORE (nothing before it in its own example predicts it); padding is
    `pad_id` with IGNORE labels and segment -1."""
    if len(sequences) != len(labels) or not sequences:
        raise ValueError(f"need one label row per sequence and at least one sequence, got {len(sequences)} "
                         f"and {len(labels)}")
    lengths = [len(s) for s in sequences]
    if max(lengths) > row_length:
        raise ValueError(f"an example of {max(lengths)} tokens does not fit rows of {row_length}")
    order = sorted(range(len(sequences)), key=lambda i: (-lengths[i], i))
    rows: list[list[int]] = []
    free: list[tuple[int, int]] = []  # (room left, row), sorted
    for i in order:
        at = bisect.bisect_left(free, (lengths[i], -1))
        if at < len(free):
            room, row = free.pop(at)
        else:
            room, row = row_length, len(rows)
            rows.append([])
        rows[row].append(i)
        if room - lengths[i] > 0:
            bisect.insort(free, (room - lengths[i], row))
    ids = np.full((len(rows), row_length), pad_id, dtype=np.int64)
    targets = np.full((len(rows), row_length), IGNORE, dtype=np.int64)
    segments = np.full((len(rows), row_length), -1, dtype=np.int64)
    positions = np.zeros((len(rows), row_length), dtype=np.int64)
    for r, members in enumerate(rows):
        at = 0
        for k, i in enumerate(sorted(members)):
            n = lengths[i]
            ids[r, at:at + n] = sequences[i]
            targets[r, at:at + n] = labels[i]
            targets[r, at] = IGNORE
            segments[r, at:at + n] = k
            positions[r, at:at + n] = np.arange(n)
            at += n
    return TokenRows(ids, targets, segments, positions, examples=len(sequences))


def packed_attention(segments: torch.Tensor) -> torch.Tensor:
    """[batch, 1, L, L] boolean SDPA mask for packed rows: a token attends to itself and to the earlier
    tokens of its own example (padding, segment -1, to earlier padding: never to an example). Built on
    the device from `segments` [batch, L]; one shape for every step."""
    length = segments.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=segments.device).tril()
    return ((segments[:, :, None] == segments[:, None, :]) & causal)[:, None]


# -- the step -----------------------------------------------------------------------------------
def training_step(model, optimizer, run, windows: torch.Tensor, targets: torch.Tensor, pick: np.ndarray,
                  counts: np.ndarray, micro: int, segments: torch.Tensor | None = None,
                  positions: torch.Tensor | None = None) -> torch.Tensor:
    """One optimizer step on this rank's rows `pick` (rows of the device-resident `windows` and
    `targets`; packed rows also give their `segments` and `positions`), in forwards of `micro` rows
    whose gradients accumulate. The loss is the mean over the whole batch's labelled tokens
    (`counts`: labelled tokens per row, on the host) for any split, and across DDP ranks. Returns it
    as a device tensor: nothing here waits for the GPU."""
    total = float(counts[pick].sum())
    scale = run.global_scale(total)
    rows = torch.as_tensor(pick).to(windows.device, non_blocking=True)
    optimizer.zero_grad(set_to_none=True)
    mean = torch.zeros((), device=windows.device)
    for start in range(0, len(pick), micro):
        part = rows[start:start + micro]
        packed = {} if segments is None else {"attention_mask": packed_attention(segments[part]),
                                              "position_ids": positions[part]}
        with run.precision.autocast():
            loss = model(input_ids=windows[part], labels=targets[part], **packed).loss
        weight = float(counts[pick[start:start + micro]].sum()) / max(total, 1.0)
        run.backward(loss * (weight * scale))
        mean += loss.detach() * weight
    run.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return mean


def make_optimizer(model, lr: float, device: torch.device, weight_decay: float = 0.01,
                   betas: tuple[float, float] = (0.9, 0.95)) -> torch.optim.Optimizer:
    """AdamW (fused on CUDA); the defaults are the video MLE trainer's."""
    from trainers.common import adamw

    return adamw(model.parameters(), device, lr=lr, weight_decay=weight_decay, betas=betas)


def auto_micro_batch(model, tokens: int, wanted: int, device: torch.device) -> int:
    """The largest forward that fits `device` by the sizing estimate (all of `wanted` on a CPU), a
    divisor of `wanted` (equal parts)."""
    from rlvr_envs.core.sizing import config_cost, micro_batch

    memory = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    micro = micro_batch(config_cost(model.config, tokens), wanted, memory)
    while wanted % micro:
        micro -= 1
    return micro


# -- the loop -----------------------------------------------------------------------------------
@dataclass
class LoopResult:
    step: int  #: the step reached (a resumed run counts from its checkpoint)
    steps_run: int  #: steps this run took
    seconds: float  #: this run's training seconds (the queued GPU work waited for)
    first_step_seconds: float | None  #: the first step whole (a compiled model compiles in it)
    tokens: int  #: row tokens this run trained on, padding included, every rank
    real_tokens: int  #: of them, tokens of examples (not padding)
    mean_loss: float | None  #: mean of the step losses (None when no step ran)
    compiled: bool  #: still compiled at the end (a failed compile falls back to eager)
    model: Any  #: the model trained (compiled, or eager after a fallback)
    stopped_by_time: bool = False

    def rate(self, real: bool = True) -> float:
        tokens = self.real_tokens if real else self.tokens
        return tokens / max(self.seconds, 1e-9)

    def steady_rate(self, first_tokens: int, real: bool = True) -> float:
        """Tokens per second after the first step (0 without a second step); `first_tokens` is the
        first step's (estimated for real tokens: the mean row's)."""
        tokens = (self.real_tokens if real else self.tokens) - first_tokens
        if self.steps_run < 2 or self.first_step_seconds is None:
            return 0.0
        return tokens / max(self.seconds - self.first_step_seconds, 1e-9)


def train_loop(model, optimizer, schedule, run, rows: TokenRows, device_rows: DeviceRows, *, steps: int,
               step: int, batch_rows: int, micro: int, seed: int, clock: RunClock | None = None,
               compiled: bool = False, raw_model: Any = None, on_step: Callable[[int, torch.Tensor], None] | None = None,
               say: Callable[..., None] = print, desc: str = "train") -> LoopResult:
    """Train from `step` to `steps`: each step draws `batch_rows` rows (this rank's share, `run.shard`)
    with a generator seeded by (seed, step), takes one optimizer step and one schedule step, then calls
    `on_step(step, loss)` on the main rank (logging, checkpoints, evaluations: the caller's). Stops
    early when the next step would pass `clock`'s end time (all ranks agree; `rlvr_envs.core.run_clock`).
    A compiled model that fails on its first step trains eager instead (`raw_model`), one process only."""
    from tqdm.auto import tqdm

    counts, real = rows.counts(), rows.real_tokens()
    started, tokens, real_tokens, first_step_seconds, ran = time.perf_counter(), 0, 0, None, 0
    loss_sum = torch.zeros((), device=device_rows.input_ids.device)
    stopped, clock = False, clock or RunClock()
    bar = tqdm(total=steps, initial=step, desc=desc, unit="step", disable=not run.is_main)
    while step < steps:
        if run.agree(clock.time_to_stop()):
            bar.write(f"stopping at step {step}: the next step (~{clock.predicted_step():.2f} s) would pass the "
                      f"time limit")
            stopped = True
            break
        model.train()
        pick = run.shard(np.random.default_rng([seed, step]).integers(len(rows.input_ids), size=batch_rows))
        began = time.perf_counter() if first_step_seconds is None else None
        arguments = (device_rows.input_ids, device_rows.labels, pick, counts, micro, device_rows.segments,
                     device_rows.positions)
        try:
            loss = training_step(model, optimizer, run, *arguments)
        except Exception as exc:  # torch.compile broke on this stack: say so and train eager (one process)
            if not (compiled and began is not None and run.world == 1 and raw_model is not None):
                raise
            say(f"torch.compile failed on the first step ({type(exc).__name__}: {str(exc)[:200]}); training "
                f"without it (--no-compile skips the attempt)", flush=True)
            model, compiled = raw_model, False
            loss = training_step(model, optimizer, run, *arguments)
        schedule.step()
        if began is not None:  # the first step holds torch.compile's warm-up: time it whole
            if run.device.type == "cuda":
                torch.cuda.synchronize(run.device)
            first_step_seconds = time.perf_counter() - began
        clock.step_done()
        step += 1
        ran += 1
        loss_sum += loss.detach()
        tokens += len(pick) * rows.length * run.world
        real_tokens += int(real[pick].sum()) * run.world
        bar.update(1)
        if run.is_main and on_step is not None:
            on_step(step, loss)
    bar.close()
    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)  # the steps are queued ahead of the GPU: wait before timing them
    return LoopResult(step=step, steps_run=ran, seconds=time.perf_counter() - started,
                      first_step_seconds=first_step_seconds, tokens=tokens, real_tokens=real_tokens,
                      mean_loss=float(loss_sum) / ran if ran else None, compiled=compiled, model=model,
                      stopped_by_time=stopped)
