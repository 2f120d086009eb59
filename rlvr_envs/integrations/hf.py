"""Hugging Face causal LMs on text tasks: generation, held-out accuracy, trainer callbacks.

Accuracy here is "exact": a response scoring its transition's maximum reward. It is
always reported three ways, because the "nothing changes" answer alone scores about 58%
on MiniTextWorld: over all evaluated transitions, over those whose next state differs
from the current one (`Transition.changed`), and over those where it does not.

    from rlvr_envs.integrations.hf import evaluate_accuracy
    evaluate_accuracy(model, task, range(64))
    # {'accuracy': 0.61, 'accuracy_changed': 0.12, 'accuracy_unchanged': 0.98, 'n': 64, ...}

Both trainers (`trainers/sft.py`, `trainers/grpo_language.py`) evaluate through
`HeldOutEval`, so their numbers are the same measurement.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlvr_envs.integrations.trl import solved


def unwrap(model: Any) -> Any:
    """The module under DDP/accelerate wrappers (`.module`), peft models kept as they are."""
    while hasattr(model, "module") and not hasattr(model, "generate"):
        model = model.module
    return model


def generate(model: Any, task: Any, indices: Sequence[int], max_new_tokens: int | None = None,
             batch_size: int = 8, temperature: float = 0.0, top_k: int = 0, seed: int = 0) -> list[list[int]]:
    """Responses of `model` to the prompts of `indices` (token ids, cut at the first EOS).

    Prompts are the task's own ids (`task.prompt_ids`), left-padded; greedy when
    `temperature` is 0.
    """
    import torch

    model = unwrap(model)
    device = next(model.parameters()).device
    max_new_tokens = int(max_new_tokens or task.max_response_len)
    was_training = model.training
    model.eval()
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    out: list[list[int]] = []
    try:
        for start in range(0, len(indices), batch_size):
            chunk = [int(i) for i in indices[start:start + batch_size]]
            prompts = [task.prompt_ids(i) for i in chunk]
            width = max(len(p) for p in prompts)
            ids = torch.full((len(chunk), width), task.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, prompt in enumerate(prompts):
                ids[row, width - len(prompt):] = torch.as_tensor(prompt)
                mask[row, width - len(prompt):] = 1
            sampling = {"do_sample": True, "temperature": temperature, "top_k": top_k or None} if temperature > 0 \
                else {"do_sample": False}
            with torch.no_grad():
                generated = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device),
                                           max_new_tokens=max_new_tokens, eos_token_id=task.eos_token_id,
                                           pad_token_id=task.pad_token_id, use_cache=True, **sampling)
            for row in generated[:, width:].tolist():
                out.append(row[: row.index(task.eos_token_id)] if task.eos_token_id in row else row)
    finally:
        torch.random.set_rng_state(generator_state)
        model.train(was_training)
    return out


def solved_counts(model: Any, task: Any, indices: Sequence[int], samples: int, temperature: float,
                  top_k: int = 0, max_new_tokens: int | None = None, batch_size: int = 24, seed: int = 0) -> list[int]:
    """How many of `samples` sampled answers solve each prompt of `indices`: pass@k and
    per-sample accuracy for reports, reward spread for prompt filtering. A batch holds whole
    groups (at least one); batch b is seeded `seed + b`."""
    if samples < 1 or temperature <= 0:
        raise ValueError(f"need samples >= 1 and temperature > 0, got {samples} and {temperature}")
    indices = [int(i) for i in indices]
    per_batch = max(1, batch_size // samples)
    counts: list[int] = []
    for batch, start in enumerate(range(0, len(indices), per_batch)):
        chunk = indices[start:start + per_batch]
        rows = [i for i in chunk for _ in range(samples)]
        responses = generate(model, task, rows, max_new_tokens=max_new_tokens, batch_size=len(rows),
                             temperature=temperature, top_k=top_k, seed=seed + batch)
        hits = [solved(r) for r in task.verify(rows, responses)]
        counts += [sum(hits[k * samples:(k + 1) * samples]) for k in range(len(chunk))]
    return counts


def accuracy_report(task: Any, indices: Sequence[int], results: Sequence[Any]) -> dict[str, float]:
    """Exact accuracy overall / on changed / on unchanged transitions, mean reward, parse
    rate and the mean of every metric component, from verified results."""
    indices = [int(i) for i in indices]
    flags = [task.transition(i).changed for i in indices]
    hit = [solved(r) for r in results]

    def rate(keep: list[bool]) -> float:
        picked = [h for h, k in zip(hit, keep) if k]
        return float(np.mean(picked)) if picked else float("nan")

    report = {
        "accuracy": rate([True] * len(hit)),
        "accuracy_changed": rate([f is True for f in flags]),
        "accuracy_unchanged": rate([f is False for f in flags]),
        "reward": float(np.mean([r.reward for r in results])) if results else float("nan"),
        "parsed": float(np.mean([r.parsed for r in results])) if results else float("nan"),
        "n": len(hit), "n_changed": sum(f is True for f in flags), "n_unchanged": sum(f is False for f in flags),
    }
    keys = dict.fromkeys(k for r in results for k in r.metrics)
    for key in keys:
        values = [float(r.metrics[key]) for r in results if isinstance(r.metrics.get(key), (int, float))]
        if values:
            report[f"metrics/{key}"] = float(np.mean(values))
    return report


def evaluate_accuracy(model: Any, task: Any, indices: Sequence[int] | None = None, max_new_tokens: int | None = None,
                      batch_size: int = 8, per_transition: bool = False) -> dict[str, Any]:
    """Greedy held-out evaluation of `model` on `task` (all transitions when `indices` is None);
    with `per_transition`, the report also lists each transition's `rewards` and `solved`
    (what paired comparisons between models need)."""
    indices = list(range(len(task))) if indices is None else [int(i) for i in indices]
    responses = generate(model, task, indices, max_new_tokens=max_new_tokens, batch_size=batch_size)
    results = task.verify(indices, responses)
    return per_transition_report(task, indices, results) if per_transition else accuracy_report(task, indices, results)


def per_transition_report(task: Any, indices: Sequence[int], results: Sequence[Any]) -> dict[str, Any]:
    """`accuracy_report` plus each transition's `rewards` and `solved` (what `compare_reports` pairs)."""
    return {**accuracy_report(task, indices, results), "rewards": [float(r.reward) for r in results],
            "solved": [bool(solved(r)) for r in results]}


def paired_test(reference: Sequence[float], other: Sequence[float]) -> dict[str, float]:
    """Mean of other - reference over the same transitions, its standard error and the paired
    t-test's p (`rlvr_envs.video.evaluation.paired_difference`, the video benchmarks' test)."""
    from rlvr_envs.video.evaluation import paired_difference

    result = paired_difference(np.asarray(reference, dtype=float), np.asarray(other, dtype=float))
    return {"mean_difference": result.mean, "standard_error": result.stderr, "p_value": result.p}


def compare_reports(reference: dict[str, Any], other: dict[str, Any], changed: Sequence[Any]) -> dict[str, Any]:
    """`other` - `reference` (two `evaluate_accuracy(..., per_transition=True)` reports on the
    same transitions, whose `changed` flags are given): the reward over all of them, and exact
    accuracy on the changed and on the unchanged ones, each as a `paired_test`."""
    out: dict[str, Any] = {"reward": paired_test(reference["rewards"], other["rewards"])}
    for name, flag in (("exact_changed", True), ("exact_unchanged", False)):
        keep = [i for i, c in enumerate(changed) if c is flag]
        if len(keep) >= 2:
            out[name] = paired_test([float(reference["solved"][i]) for i in keep],
                                    [float(other["solved"][i]) for i in keep])
    return out


def held_out_indices(task: Any, limit: int) -> list[int]:
    """The first `limit` transitions of a held-out task (all when it has fewer)."""
    return list(range(min(int(limit), len(task))))


def format_report(report: dict[str, Any]) -> str:
    """One line of held-out accuracy; changed and unchanged rates carry their 95% Wilson interval,
    since a few dozen transitions move them by several points on their own."""
    from rlvr_envs.core.util import wilson_interval

    def missing(value: Any) -> bool:
        return value is None or (isinstance(value, float) and math.isnan(value))

    def pct(key: str) -> str:
        value = report.get(key, float("nan"))
        return "  n/a" if missing(value) else f"{100 * value:5.1f}"

    def rate(key: str, n: int) -> str:
        value = report.get(key, float("nan"))
        if missing(value) or not n:
            return f"{pct(key)}%"
        low, high = wilson_interval(round(value * n), n)
        return f"{pct(key)}% [{100 * low:.0f}-{100 * high:.0f}]"

    n_changed, n_unchanged = report.get("n_changed", 0), report.get("n_unchanged", 0)
    return (f"exact {pct('accuracy')}% (changed {rate('accuracy_changed', n_changed)} of {n_changed}, "
            f"unchanged {rate('accuracy_unchanged', n_unchanged)} of {n_unchanged}), "
            f"reward {report.get('reward', float('nan')):.3f}, parsed {pct('parsed')}%")


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    from rlvr_envs.core.files import json_line

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json_line(record))  # strict JSON: NaN and inf as null


def _callback_base():
    from transformers import TrainerCallback

    return TrainerCallback


class HeldOutEval(_callback_base()):
    """A `transformers.TrainerCallback` running `evaluate_accuracy` on held-out transitions
    at the start, every `every` optimizer steps and at the end (main process only; the
    others wait at their next collective). Each report is kept in `history`, appended to
    `log_path` as {"step", "eval/...": ...} and printed."""

    def __init__(self, task: Any, indices: Sequence[int], every: int, log_path: str | Path | None = None,
                 max_new_tokens: int | None = None, batch_size: int = 8, at_start: bool = True):
        self.task, self.indices, self.every = task, list(indices), int(every)
        self.log_path, self.max_new_tokens, self.batch_size = log_path, max_new_tokens, batch_size
        self.at_start = at_start
        self.history: list[dict[str, Any]] = []
        self._last_step: int | None = None

    def run(self, model: Any, step: int) -> dict[str, Any]:
        started = time.perf_counter()
        report = evaluate_accuracy(model, self.task, self.indices, self.max_new_tokens, self.batch_size)
        record = {"step": int(step), **{f"eval/{k}": v for k, v in report.items()},
                  "eval/seconds": time.perf_counter() - started}
        self.history.append(record)
        self._last_step = int(step)
        if self.log_path is not None:
            append_jsonl(self.log_path, record)
        from tqdm.auto import tqdm

        tqdm.write(f"[eval step {step}] {format_report(report)}")
        return record

    def _maybe(self, state: Any, model: Any, force: bool = False) -> None:
        if not state.is_world_process_zero or model is None or self._last_step == state.global_step:
            return
        if force or (state.global_step > 0 and state.global_step % self.every == 0):
            self.run(model, state.global_step)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self.at_start:
            self._maybe(state, model, force=True)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self._maybe(state, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self._maybe(state, model, force=True)


class JsonlLog(_callback_base()):
    """Appends every trainer log ({"step", ...}) to a JSON-lines file (main process only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            append_jsonl(self.path, {"step": int(state.global_step), **logs})


class TimeLimit(_callback_base()):
    """Stops training before the next step would pass the time limit (`seconds` of training, 0 = none, and/or
    the absolute `end_at`: `rlvr_envs.core.run_clock.RunClock`), so a run fits its time and still ends with
    its final evaluation and save. Under several processes the main process's clock decides for all
    (broadcast), so no process waits at a collective that the others have left. It also times the steps:
    the first one (a compiled model compiles in it) apart from the rest (`steady_rate`)."""

    def __init__(self, seconds: float = 0.0, end_at: float = 0.0):
        self.seconds, self.end_at = float(seconds), float(end_at)
        self.clock = None
        self.stopped_at: int | None = None

    @property
    def steps(self) -> int:
        """Steps of this run."""
        return self.clock.steps if self.clock else 0

    @property
    def first_step_seconds(self) -> float | None:
        return self.clock.first_step_seconds if self.clock else None

    def on_train_begin(self, args, state, control, **kwargs):
        from rlvr_envs.core.run_clock import RunClock

        self.clock = RunClock(self.seconds, self.end_at)

    def steady_rate(self) -> float | None:
        """Steps per second after the first step (None before a second step)."""
        if self.steps < 2 or not self.clock.recent:
            return None
        after_first = self.clock.last - self.clock.start - self.first_step_seconds
        return (self.steps - 1) / after_first if after_first > 0 else None

    def on_step_end(self, args, state, control, **kwargs):
        if self.clock is None:
            return
        self.clock.step_done()
        if not self.clock.limited:
            return
        stop = self.clock.time_to_stop()
        import torch

        if torch.distributed.is_available() and torch.distributed.is_initialized():
            nccl = torch.distributed.get_backend() == "nccl"  # NCCL moves CUDA tensors only
            flag = torch.tensor([float(stop)], device=torch.cuda.current_device() if nccl else "cpu")
            torch.distributed.broadcast(flag, src=0)
            stop = bool(flag.item())
        if stop:
            control.should_training_stop = True
            self.stopped_at = int(state.global_step)
            if state.is_world_process_zero:
                from tqdm.auto import tqdm

                tqdm.write(f"stopping at step {state.global_step}: the next step (~{self.clock.predicted_step():.2f} s)"
                           f" would pass the time limit")
