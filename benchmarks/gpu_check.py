"""The prepared GPU check: one script, one hard deadline (default 8 minutes), every figure against the
hardware's own ceilings measured in the same run, and the models it trains brought back to be adopted.

    python -m benchmarks.gpu_check --device cuda                        # writes benchmarks/results/gpu_check/
    python -m benchmarks.gpu_check --device cpu --tiny --out /tmp/gc    # the same code path in a few minutes
    python -m benchmarks.gpu_check --device cuda --stages pusht,web     # the optional set (+180 s, +240 s)

Each stage runs in its own process, killed at its end time (`run_stage_process`); the JSON and Markdown
are rewritten after every stage, so a stage cut short or a crash loses nothing already measured. The
trainers take the stage's end time (`--end-at`): each stops before a step that would pass it and anneals
its learning rate over the time it has (`rlvr_envs.core.run_clock`), so a run cut by time has finished its
schedule; a trainer compiles only when its seconds exceed 3x the compile warm-up. Stages, in order:

1. ceilings: a large bf16 matmul's FLOP/s and the device copy rate (`benchmarks.world_model_speed`).
2. ship: the models CPU users get by default, at their own sizes (the PushT single-step world model, the
   MiniTextWorld SFT model), trained on more fresh data than their CPU runs saw, then GRPO (PushT on the
   demo's pose reward); each comes back as one bf16 bundle in --out (`rlvr_envs.core.bundle`), and
   `rlvr-world adopt` judges it on a CPU against the shipped one. A model that saw fewer training
   sequences than the shipped one is reported "undertrained". Never the stage shrunk for time.
3. speed: the paper preset (120M) on RT-1's single-step shapes: decoding eager vs static KV cache
   + CUDA graphs and its variants (tokens/s, share of the memory floor), and the MLE training step eager
   vs compiled (tokens/s, MFU against stage 1's matmul rate).
4. rewards: -(L1 + LPIPS) of 256x320 frames, one batched call vs one call per frame (goal >= 5x).
5. text: MiniTextWorld SFT of the ~57M "medium" text preset from scratch (`text_sft_args`: the token-row loop,
   transitions packed into fixed-length rows, loss on prompt and answer) on fresh procedural transitions,
   then GRPO with groups of 16; held-out exact accuracy on changed and unchanged transitions with 95%
   Wilson intervals, next to the shipped CPU models (paired tests).

The optional second set, run when named, each stage adding its own seconds to the deadline:

6. pusht: PushT single-step with the ~22M "base" world model: MLE on freshly generated episodes, then GRPO;
   held-out MAE against copy-last-frame and the tokenizer ceiling, the GRPO step time (the median of >= 5
   steps after the first, which captures the decoder's graphs), and the candidate-ranking agreement with
   the true simulator.
7. web: MiniWeb SFT from scratch on fresh procedural transitions, GRPO from it, then the web-agent
   table (`benchmarks.web_agent`: policy alone, + SFT world model, + GRPO world model, + the true
   simulator) on >= 100 goal episodes with Wilson intervals, every episode of an agent in one
   lockstep batch, so each step decodes all their candidates at once.

Each stage gets its planned seconds, shrunk so the later stages keep their minimums; a stage whose minimum
no longer fits is skipped and says so. If the deadline itself passes, the check records the running stage
as stopped and exits with status 3 (`DEADLINE_EXIT`), keeping what was measured. Everything it writes to
--out fits `BRING_BACK_LIMITS`. The LPIPS trunk is the seeded random one unless its real weights are on
the machine; the output says which. docs/scale_out.md says what the H200 runs measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "gpu_check"
TEXT_ENV = "RLVRWorld/MiniTextWorld-v0"
PUSHT_ENV = "RLVRWorld/PushT-SingleStep-v0"
WEB_ENV = "RLVRWorld/MiniWeb-v0"
#: stages of the optional second set, run only when named, each adding its own seconds to the deadline
#: (`Sizes.second_set_deadlines`): the larger-preset PushT model and the web table
SECOND_SET = ("pusht", "web")
#: the ship stage's bundles in --out: one file per model (`rlvr_envs.core.bundle`), judged by `rlvr-world adopt`
SHIP_BUNDLES = {"text": "ship_text_model.safetensors", "pusht": "ship_pusht_model.safetensors"}
#: what a run may bring back from its --out: files, MiB per file, MiB in all
BRING_BACK_LIMITS = (8, 15, 60)
WEB_GRPO_PROMPTS = 2000  #: MiniWeb GRPO's training transitions (a few hundred are drawn in its seconds)
SHIPPED_TEXT = ("minitextworld_sft_model", "minitextworld_sft_longer_model")


@dataclass(frozen=True)
class Sizes:
    """Everything the two scales differ in (the code path is the same)."""

    deadline: float = 480.0  #: seconds for the whole check (model loading, evaluation and planning included)
    #: per stage: (planned seconds, minimum seconds); a stage is shrunk towards its minimum, then skipped
    #: `ship` comes first after the ceilings and is never the one shrunk for time: the speed and larger-preset
    #: stages after it shrink towards their minimums, and the larger PushT model is in the optional set
    plans: tuple[tuple[str, float, float], ...] = (("ceilings", 10, 5), ("ship", 230, 120), ("speed", 100, 40),
                                                   ("rewards", 10, 5), ("text", 120, 60), ("pusht", 160, 80),
                                                   ("web", 230, 60))
    #: seconds each optional stage adds to the deadline when it runs
    second_set_deadlines: tuple[tuple[str, float], ...] = (("pusht", 180.0), ("web", 240.0))
    speed: Any = None  #: benchmarks.world_model_speed sizes (None: its defaults)
    #: time compiled training and the compiled decode step too (each warm-up is tens of seconds; the speed
    #: stage's 130 s are sized for them)
    speed_compile: bool = True
    reward_frames: int = 256
    reward_resolution: tuple[int, int] = (256, 320)
    text_preset: str = "medium"
    text_batch: int = 64
    text_train_size: int = 8192  #: SFT's procedural transitions (0 = the task's default 2,048; ~1.8 ms each to build)
    text_group: int = 16
    text_prompts: int = 8
    text_completion: int = 256
    text_eval: int = 128
    text_reserve: float = 35.0  #: seconds kept for the four held-out evaluations
    #: compile the from-scratch SFT (text and web): its packed rows have one length, so it compiles once (TRL's
    #: batches varied in length, and a compiled model recompiled for each new shape: 2 steps took 87 s on an H200)
    text_compile: bool = True
    #: SFT's seconds outside its time limit besides building the transitions (model, tokenising, saving, its
    #: end evaluation): ~17 s on an H200 (run 6682f1f: 62 s in all, 30 s training, ~15 s building)
    sft_overhead: float = 20.0
    text_grpo_overhead: float = 25.0  #: GRPO's loading and its own start/end evaluations
    text_grpo_minimum: float = 20.0  #: fewer seconds of GRPO than this are skipped
    trainer_eval: int = 16  #: the trainers' own end-of-run evaluations (the check evaluates text_eval itself)
    text_sft_share: float = 0.75  #: of the text training seconds, the rest GRPO
    pusht_preset: str = "base"  #: ~22M: its bf16 weights travel as 3 shards of <= 15 MiB
    pusht_episodes: int = 300
    pusht_batch: int = 64
    pusht_group: int = 16
    pusht_prompts: int = 8
    pusht_eval: int = 96
    pusht_overhead: float = 25.0  #: seconds between the two trainings: MLE's evaluation, GRPO's loading and start evaluation
    pusht_reserve: float = 30.0  #: seconds kept after GRPO: its final evaluation, baselines, planning agreement, export
    pusht_mle_share: float = 0.65  #: of the PushT training seconds, the rest GRPO
    pusht_grpo_minimum: float = 20.0  #: GRPO's seconds at least (its median step needs steps after the first)
    agreement_episodes: int = 4
    agreement_candidates: int = 32
    web_preset: str = "medium"
    web_batch: int = 64
    web_train_size: int = 8000  #: fresh procedural MiniWeb transitions for SFT (~2 ms each to build)
    web_sft_share: float = 0.7  #: of the web training seconds, the rest GRPO
    web_group: int = 16
    web_prompts: int = 8
    web_completion: int = 256  #: GRPO's and the agents' response budget (MiniWeb answers are shorter)
    web_grpo_overhead: float = 15.0  #: GRPO's loading and its own evaluations
    web_grpo_minimum: float = 15.0  #: fewer seconds of GRPO than this are skipped
    web_reserve: float = 70.0  #: seconds kept for the web-agent table
    web_episodes: int = 100
    web_k: int = 4
    #: the ship stage: the shipped-size models (the MiniTextWorld SFT model's "small" preset, the PushT
    #: single-step model's "pusht" preset) on more fresh data than their CPU runs saw, then GRPO
    ship_text_preset: str = "small"
    ship_text_train_size: int = 16384
    ship_text_batch: int = 64
    ship_text_share: float = 0.4  #: of the ship stage's seconds, for text (the rest PushT)
    ship_pusht_preset: str = "pusht"
    ship_pusht_episodes: int = 600  #: ~64 s on 15 simulator workers (300 took 31.8 s on the H200 machine)
    ship_pusht_batch: int = 64
    ship_grpo_share: float = 0.25  #: of each model's training seconds, GRPO's (the rest SFT/MLE)
    ship_reserve: float = 15.0  #: seconds kept after the last GRPO: its save and the two bundles
    #: torch.compile's warm-up, an estimate from the H200 runs (23-88 s): a trainer compiles only when its
    #: seconds exceed 3x this, so a compile never eats the time it would save
    compile_warmup: float = 30.0
    grpo_timed_steps: int = 5  #: GRPO steps after the first (graph capture) its step time is the median of
    max_steps: int = 10**6  #: a cap on every trainer's steps (the tiny run's budget is steps, not seconds)
    utilisation: float = 0.3  #: planning figure: the share of the matmul rate a training step is expected to reach


TINY = Sizes(deadline=600.0, plans=(("ceilings", 10, 1), ("ship", 200, 10), ("speed", 60, 5), ("rewards", 10, 1),
                                    ("text", 200, 10), ("pusht", 200, 10), ("web", 200, 10)),
             second_set_deadlines=(("pusht", 300.0), ("web", 300.0)), ship_text_preset="micro",
             ship_text_train_size=16, ship_text_batch=2, ship_pusht_preset="tiny", ship_pusht_episodes=12,
             ship_pusht_batch=2, ship_reserve=0.0,
             web_preset="micro", web_batch=2, web_train_size=16, web_group=2, web_prompts=2, web_completion=8,
             web_grpo_overhead=0.0, web_grpo_minimum=0.0, web_reserve=0.0, web_episodes=2, web_k=2,
             speed="tiny", speed_compile=False, reward_frames=4, reward_resolution=(64, 64), text_preset="micro",
             text_batch=2, text_train_size=16, text_group=2, text_prompts=2, text_completion=8, text_eval=4,
             text_reserve=0.0, sft_overhead=0.0, text_grpo_overhead=0.0, text_grpo_minimum=0.0, trainer_eval=2,
             pusht_preset="tiny", pusht_episodes=12, pusht_batch=2, pusht_group=2, pusht_prompts=2,
             pusht_grpo_minimum=0.0, pusht_eval=2, pusht_overhead=0.0, pusht_reserve=0.0, agreement_episodes=1,
             agreement_candidates=4, max_steps=6)


class Deadline:
    """One wall-clock deadline for the whole check; `clock` is injectable so tests can fake time."""

    def __init__(self, seconds: float, clock=time.monotonic):
        self.clock = clock
        self.end = clock() + seconds

    def remaining(self) -> float:
        return self.end - self.clock()

    def arm(self, on_expiry) -> Any:
        """Call `on_expiry()` from a daemon thread when the deadline passes (the hard stop: a stage
        that overruns its budget is cut there, not left to run on)."""
        import threading

        timer = threading.Timer(max(0.0, self.remaining()), on_expiry)
        timer.daemon = True
        timer.start()
        return timer

    def budget(self, planned: float, minimum: float, reserved_after: float) -> float | None:
        """`planned` seconds, shrunk so `reserved_after` (the later stages' minimums) stays free;
        None when even `minimum` no longer fits."""
        available = self.remaining() - reserved_after
        return None if available < minimum else min(planned, available)


def split_training(available: float, first_share: float, grpo_minimum: float,
                   grpo_overhead: float) -> tuple[float, float]:
    """A stage's training seconds for its first trainer (SFT or MLE) and for GRPO after it. GRPO's
    seconds and its loading and evaluation are set aside before the first trainer starts, so a long
    first trainer cannot leave GRPO nothing (two H200 runs gave GRPO 1 s and 0 s that way); where
    both do not fit, the first trainer gets everything and GRPO 0 (skipped, and the report says so)."""
    grpo = max(grpo_minimum, available * (1 - first_share))
    first = available - grpo - grpo_overhead
    if first < grpo_minimum:
        return max(1.0, available), 0.0
    return first, grpo


def grpo_limit(planned: float, remaining: float, minimum: float) -> tuple[float, str | None]:
    """GRPO's time limit once the first trainer is done: the seconds set aside for it, fewer where the
    first trainer overran; (0, why) when GRPO is skipped."""
    if not planned:
        return 0.0, "the stage's seconds did not fit both trainers"
    seconds = min(planned, remaining)
    if seconds <= 0 or seconds < minimum:
        return 0.0, f"{max(0.0, remaining):.0f} s left for it, {minimum:.0f} s needed"
    return seconds, None


def build_seconds(env_id: str, transitions: int) -> float:
    """Seconds to build `transitions` procedural transitions of `env_id`, timed on 64: CPU work before
    a trainer's own time limit starts, so the check keeps it out of the trainer's seconds."""
    from rlvr_envs.registration import task_from_env_id

    began = time.perf_counter()
    timed = task_from_env_id(env_id, split="train", size=64)
    return (time.perf_counter() - began) / len(timed) * transitions


def run_stages(names: list[str], plans: dict[str, tuple[float, float]], deadline: Deadline, call, record) -> None:
    """Run each stage with its budget (`call(name, budget) -> dict`) and `record(name, result)` it;
    a stage that does not fit is recorded as skipped, one that fails as its error."""
    for position, name in enumerate(names):
        planned, minimum = plans[name]
        reserved = sum(plans[later][1] for later in names[position + 1:])
        budget = deadline.budget(planned, minimum, reserved)
        started = deadline.clock()
        if budget is None:
            result = {"skipped": f"{deadline.remaining():.0f} s left of the deadline, {minimum:.0f} s needed "
                                 f"+ {reserved:.0f} s kept for the later stages"}
        else:
            print(f"[gpu_check] stage {name}: budget {budget:.0f} s ({deadline.remaining():.0f} s left)", flush=True)
            try:
                result = call(name, budget)
            except Exception as exc:  # a failed stage is recorded; the later ones still run
                result = {"error": f"{type(exc).__name__}: {exc}"}
            result["budget_seconds"] = round(budget, 1)
        result["stage_seconds"] = round(deadline.clock() - started, 1)
        print(f"[gpu_check] stage {name}: " + (result.get("skipped") or result.get("error") or
                                                f"done in {result['stage_seconds']} s"), flush=True)
        record(name, result)


# -- each stage in its own process ------------------------------------------------------------------
#: seconds a stage's process may run past its end time to write its result before it is killed
CHILD_GRACE = 3.0


def write_json(path: Path, data: Any) -> None:
    """Write `data` as JSON atomically (a killed writer leaves the previous file, never half of one)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2, default=_plain) + "\n")
    os.replace(partial, path)


def stage_result_path(work: Path, name: str) -> Path:
    return work / f"stage_{name}.json"


def run_stage_process(name: str, budget: float, argv: list[str], work: Path, ceilings: dict[str, float],
                      hard_limit: float, started=None) -> dict[str, Any]:
    """Run stage `name` as `python -m benchmarks.gpu_check ARGV --child-stage NAME --child-end-at T` in its own
    process group, killed at its end time (+ `CHILD_GRACE`, within `hard_limit` seconds): a trainer's step,
    a compile or an evaluation cannot hold the check past it. Returns the stage's result, or, when it was
    killed, the parts it had finished (`Context.note`) marked "stopped". `started(process)` sees the process
    (the check's hard stop, a second later, kills it too)."""
    import signal

    result_path = stage_result_path(work, name)
    result_path.unlink(missing_ok=True)
    write_json(work / "context.json", {"ceilings": ceilings})
    end_at = time.time() + budget
    command = [sys.executable, "-m", "benchmarks.gpu_check", *argv, "--child-stage", name,
               "--child-end-at", f"{end_at:.3f}"]
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))  # from any folder
    process = subprocess.Popen(command, start_new_session=True, env={**os.environ, "PYTHONPATH": path})
    if started is not None:
        started(process)
    try:
        process.wait(timeout=max(0.0, min(budget + CHILD_GRACE, hard_limit - 1.0)))  # before the hard stop
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        killed = True
    try:
        result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    except json.JSONDecodeError:
        result = {}
    if killed:
        result["stopped"] = (f"its process was killed at its end time ({budget:.0f} s), keeping what it had "
                             f"finished: {', '.join(result) or 'nothing'}")
    elif process.returncode and "error" not in result:
        result["error"] = f"its process exited with status {process.returncode} before writing a result"
    return result


def run_as_child(ctx: Context, name: str, end_at: float) -> dict[str, Any]:
    """The child's side: run stage `name` until `end_at` and write its result (or its error) for the parent."""
    ctx.stage_end = end_at
    context = work_context(ctx.work)
    ctx.ceilings.update(context.get("ceilings", {}))
    try:
        result = STAGES[name](ctx, end_at - time.time())
    except Exception as exc:  # the parent records it; the later stages still run
        result = {**ctx.finished, "error": f"{type(exc).__name__}: {exc}"}
    write_json(stage_result_path(ctx.work, name), result)
    return result


def work_context(work: Path) -> dict[str, Any]:
    path = work / "context.json"
    return json.loads(path.read_text()) if path.is_file() else {}


# -- the record ------------------------------------------------------------------------------
class Report:
    """One JSON + one Markdown, rewritten after each stage."""

    def __init__(self, out: Path, argv: list[str], args: argparse.Namespace, sizes: Sizes, device: Any):
        import torch

        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parents[1])
        gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
        self.data: dict[str, Any] = {
            "command": "python -m benchmarks.gpu_check " + " ".join(argv),
            "machine": {"device": gpu or "CPU", "platform": platform.machine(), "cpu_count": os.cpu_count(),
                        "torch": torch.__version__, "cuda": torch.version.cuda,
                        "memory_gib": round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)
                        if gpu else None},
            "git_commit": commit.stdout.strip() or None, "tiny": args.tiny, "sizes": asdict(sizes),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_before": _load(), "stages": {}}

    running: str | None = None  #: the stage under way (what the deadline cuts, if it passes)

    def stage(self, name: str, result: dict[str, Any]) -> None:
        self.data["stages"][name] = result
        self.data["load_after"] = _load()
        self.data["ended"] = time.strftime("%Y-%m-%d %H:%M:%S")
        write_json(self.out / "gpu_check.json", self.data)
        (self.out / "gpu_check.md").write_text(markdown(self.data))


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _plain(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Context:
    """What every stage reads: the sizes, the command line, the device policy, the folders, and
    the device's ceilings once stage 1 has measured them."""

    sizes: Sizes
    args: argparse.Namespace
    precision: Any
    work: Path
    out: Path
    ceilings: dict[str, float] = field(default_factory=dict)
    stage_end: float = 0.0  #: the running stage's end time (seconds since the epoch): its trainers' `end_at`
    finished: dict[str, Any] = field(default_factory=dict)  #: what the running stage has finished so far

    @property
    def device(self):
        return self.precision.device

    def note(self, **parts: Any) -> None:
        """Record finished parts of the running stage in its result file at once, so a stage killed at its end
        time still reports them (`run_stage_process`)."""
        self.finished.update(parts)
        write_json(stage_result_path(self.work, self.args.child_stage), self.finished)

    def decoding(self, seconds: float):
        """The static decoder's settings for `seconds` of generating: its default fast path (a compiled step)
        only where the compile pays, else the plain step an H200 run measured (each decoder shape compiles)."""
        from rlvr_envs.video.static_decoder import decoder_settings

        if self.compile_worth(seconds):
            return decoder_settings()
        return decoder_settings(attention="sdpa", compiled=False, bf16_weights=False)

    def compile_worth(self, seconds: float) -> bool:
        """Compile a trainer on CUDA only when its seconds exceed 3x the compile warm-up (`Sizes.compile_warmup`)."""
        return self.device.type == "cuda" and self.sizes.text_compile and seconds > 3 * self.sizes.compile_warmup

    def planned_steps(self, seconds: float, cost, tokens_per_step: float) -> int:
        """Optimizer steps that `seconds` allow at `sizes.utilisation` of the measured matmul rate, so a
        trainer's cosine schedule ends near its time limit (the limit still stops it)."""
        from rlvr_envs.core.sizing import H200_BF16_PEAK

        peak = self.ceilings.get("matmul_flops") or H200_BF16_PEAK
        planned = int(seconds / cost.train_seconds(tokens_per_step, peak_flops=peak, utilisation=self.sizes.utilisation))
        return max(2, min(self.sizes.max_steps, planned))

    def mfu(self, tokens_per_second: float | None, flops_per_token: float) -> float | None:
        """Share of the measured bf16 matmul rate (None before the ceilings stage ran, or without a rate)."""
        rate = self.ceilings.get("matmul_flops")
        return tokens_per_second * flops_per_token / rate if rate and tokens_per_second else None

    def sft_speed(self, result: dict[str, Any], batch: int, flops_per_token: float) -> dict[str, Any]:
        """`trainers.sft`'s speed over its training seconds and after its first step (where a compiled model
        compiles), the rate the hardware is judged by: the transitions' own tokens (padding not counted) as its
        token-row loop counted them, or (TRL) estimated from the mean example length x batch x steps."""
        if "tokens_per_second" in result:  # the token-row loop (from scratch)
            overall, steady = result["tokens_per_second"], result["tokens_per_second_after_first_step"]
        else:
            tokens_per_step = batch * result["mean_example_tokens"]
            overall = result["steps"] * tokens_per_step / result["train_runtime"] if result["train_runtime"] else None
            rate = result["steps_per_second_after_first_step"]
            steady = rate * tokens_per_step if rate else None
        return {"tokens_per_second_estimate": round(overall) if overall else None,
                "mfu_estimate": self.mfu(overall, flops_per_token),
                "first_step_seconds": None if result["first_step_seconds"] is None else
                round(result["first_step_seconds"], 2),
                "tokens_per_second_after_first_step": round(steady) if steady else None,
                "mfu_after_first_step": self.mfu(steady, flops_per_token)}


def _speed_sizes(sizes: Sizes):
    from benchmarks import world_model_speed

    return world_model_speed.TINY if sizes.speed == "tiny" else (sizes.speed or world_model_speed.SpeedSizes())


# -- 1. ceilings and 2. speed -------------------------------------------------------------------
def stage_ceilings(ctx: Context, budget: float) -> dict[str, Any]:
    from benchmarks import world_model_speed

    ctx.ceilings.update(world_model_speed.ceilings(ctx.device, _speed_sizes(ctx.sizes)))
    return dict(ctx.ceilings)


def stage_speed(ctx: Context, budget: float) -> dict[str, Any]:
    """Decoding (eager vs static and its variants) and the MLE step (eager vs compiled) of the paper preset;
    the compiled ones only when the budget allows."""
    from benchmarks import world_model_speed

    speed = _speed_sizes(ctx.sizes)
    limits = ctx.ceilings or world_model_speed.ceilings(ctx.device, speed)
    compile_too = ctx.sizes.speed_compile and budget >= 0.8 * dict((n, p) for n, p, _ in ctx.sizes.plans)["speed"]
    # the default fast path and the plain step the H200 measured: each further variant costs its own compile
    return {"decoding": world_model_speed.decoding(ctx.device, ctx.precision, speed, limits["copy_bytes_per_second"],
                                                   compile_too, variants=["static_plain"]),
            "training": world_model_speed.training(ctx.device, ctx.precision, speed, limits["matmul_flops"],
                                                   compile_too)}


# -- ship: the shipped-size models, retrained ---------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
#: the shipped models the ship stage's models would replace (`rlvr-world adopt` judges them against these)
SHIPPED = {"text": ROOT / "rlvr_envs" / "assets" / "text" / "minitextworld_sft_longer_model",
           "pusht": ROOT / "rlvr_envs" / "assets" / "video" / "pusht_single_step_model"}


def shipped_sequences(folder: Path) -> int:
    """Training sequences a shipped model saw: steps x batch from its card, through the models it started
    from. A retrained model that saw fewer is "undertrained": reported as such, never as a quality figure."""
    card = json.loads((folder / "card.json").read_text())
    args = card.get("args", {})
    seen = int(card.get("steps", 0)) * int(args.get("batch_size", 0))
    parent = args.get("model") or args.get("init")
    if parent and (ROOT / parent / "card.json").is_file():
        seen += shipped_sequences(ROOT / parent)
    return seen


def ship_bundle(ctx: Context, kind: str, folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Write `record` into the trained model's card and pack the model as one bf16 file in --out."""
    from rlvr_envs.core import bundle

    card_path = folder / "card.json"
    card = json.loads(card_path.read_text()) if card_path.is_file() else {}
    card["ship"] = record
    card_path.write_text(json.dumps(card, indent=2, default=_plain) + "\n")
    packed = bundle.pack(folder, ctx.out / SHIP_BUNDLES[kind])
    return {"file": SHIP_BUNDLES[kind], "mib": round(packed["bytes"] / 2**20, 2)}


def trained_record(kind: str, sequences: int) -> dict[str, Any]:
    needed = shipped_sequences(SHIPPED[kind])
    return {"sequences": sequences, "shipped_sequences": needed, "undertrained": sequences < needed,
            "judge_with": f"rlvr-world adopt {SHIP_BUNDLES[kind]} --kind {kind} --target {SHIPPED[kind].name}"}


def ship_mle_args(sizes: Sizes, data: str, out: Path, *, device: str, threads: int, end_at: float, compiled: bool):
    """The ship stage's PushT MLE arguments (tests/test_device_entry_points.py trains through this same builder):
    the shipped model's preset, tokenizer and learning rate, a GPU-sized batch, steps bounded by `end_at`."""
    from rlvr_envs.video.task import default_tokenizer_dir
    from trainers import train_video_world_model as mle

    return mle.Args(data=data, tokenizer=str(default_tokenizer_dir()), layout="single", out=str(out),
                    preset=sizes.ship_pusht_preset, batch_size=sizes.ship_pusht_batch, lr=1e-3, warmup=50,
                    steps=sizes.max_steps, eval_every=10**9, eval_windows=sizes.trainer_eval, checkpoint_every=10**9,
                    threads=threads, device=device, seed=0, end_at=end_at, no_compile=not compiled).validate()


def ship_pusht(ctx: Context, end_at: float) -> dict[str, Any]:
    """The PushT single-step world model at the shipped preset: MLE on freshly generated episodes, then GRPO on
    the demo's reward (pose), both stopped by their end times."""
    import shutil

    from trainers import grpo, train_video_world_model as mle
    from trainers.demo import reward_kwargs
    from trainers.grpo_config import GRPOConfig

    sizes, args, work = ctx.sizes, ctx.args, ctx.work
    data_began = time.time()
    data = pusht_data(replace(sizes, pusht_episodes=sizes.ship_pusht_episodes), work)
    data_seconds = time.time() - data_began
    mle_out, grpo_out = work / "ship_pusht_mle", work / "ship_pusht_grpo"
    for folder in (mle_out, grpo_out):
        shutil.rmtree(folder, ignore_errors=True)
    mle_end = end_at - (end_at - time.time()) * sizes.ship_grpo_share
    mle_card = mle.main(ship_mle_args(sizes, data, mle_out, device=args.device, threads=args.threads, end_at=mle_end,
                                      compiled=ctx.compile_worth(mle_end - time.time())))
    sequences = mle_card["steps"] * sizes.ship_pusht_batch
    ctx.note(pusht_mle={"steps": mle_card["steps"], "sequences": sequences})
    with ctx.decoding(end_at - time.time()):
        grpo_card = grpo.main(GRPOConfig(env_id=PUSHT_ENV, env_kwargs=(*reward_kwargs("pose"), f"data_dir={data}"),
                                         model=str(mle_out), out=str(grpo_out), steps=sizes.max_steps, end_at=end_at,
                                         prompts_per_step=sizes.pusht_prompts, group_size=sizes.pusht_group, lr=1e-4,
                                         eval_windows=sizes.trainer_eval, eval_every=10**6, checkpoint_every=10**6,
                                         threads=args.threads, device=args.device, seed=0))
    record = {**trained_record("pusht", sequences), "episodes": sizes.ship_pusht_episodes,
              "mle_steps": mle_card["steps"], "grpo_steps": grpo_card["steps"]}
    return {"preset": sizes.ship_pusht_preset, "parameters": mle_card["parameters"],
            "data": {"episodes": sizes.ship_pusht_episodes, "windows": mle_card["train_windows"],
                     "seconds": round(data_seconds, 1)},
            "mle": {"steps": mle_card["steps"], "seconds": mle_card["train_seconds_this_run"],
                    "compiled": mle_card["compiled"], "stopped_by_time": mle_card["stopped_by_time"],
                    "final_learning_rate": mle_card["final_learning_rate"]},
            "grpo": {"steps": grpo_card["steps"], "seconds": grpo_card["train_seconds_this_run"],
                     **grpo_step_seconds(grpo_out / "log.jsonl", sizes.grpo_timed_steps)},
            **record, "bundle": ship_bundle(ctx, "pusht", grpo_out, record)}


def ship_text(ctx: Context, end_at: float) -> dict[str, Any]:
    """The MiniTextWorld model at the shipped preset: SFT from scratch through the text stage's arguments on
    fresh transitions, then GRPO, both stopped by their end times."""
    import shutil

    from trainers import grpo, sft
    from trainers.grpo_config import GRPOConfig

    sizes, args, work = ctx.sizes, ctx.args, ctx.work
    for name in ("ship_text_sft", "ship_text_grpo"):
        shutil.rmtree(work / name, ignore_errors=True)
    sft_end = end_at - (end_at - time.time()) * sizes.ship_grpo_share
    shipped_size = replace(sizes, text_preset=sizes.ship_text_preset, text_train_size=sizes.ship_text_train_size,
                           text_batch=sizes.ship_text_batch)
    sft_args = text_sft_args(shipped_size, steps=sizes.max_steps, seconds=0.0, out=work / "ship_text_sft",
                             device=args.device, threads=args.threads, compiled=ctx.compile_worth(sft_end - time.time()))
    sft_args.end_at = sft_end
    sft_result = sft.main(sft_args)
    sequences = round(sft_result["steps"] * sft_result["transitions_per_step"])
    ctx.note(text_sft={"steps": sft_result["steps"], "sequences": sequences})
    grpo_result = grpo.main(GRPOConfig(env_id=TEXT_ENV, model=sft_result["final_model"], out=str(work / "ship_text_grpo"),
                                       steps=sizes.max_steps, end_at=end_at, group_size=sizes.text_group,
                                       prompts_per_step=sizes.text_prompts, max_completion_len=sizes.text_completion,
                                       balance=True, lr=1e-5, eval_windows=sizes.trainer_eval, eval_every=10**9,
                                       checkpoint_every=10**6, threads=args.threads, device=args.device, seed=0,
                                       env_kwargs=(f"size={min(sizes.ship_text_train_size, 2048)}",)))
    record = {**trained_record("text", sequences), "train_transitions": sft_result["transitions"],
              "sft_steps": sft_result["steps"], "grpo_steps": grpo_result["steps"]}
    return {"preset": sizes.ship_text_preset, "parameters": sft_result["parameters"],
            "sft": {"steps": sft_result["steps"], "seconds": round(sft_result["train_runtime"], 1),
                    "train_loss": sft_result["train_loss"], "compiled": sft_result["compiled"],
                    "stopped_by_time": sft_result["stopped_by_time"],
                    "final_learning_rate": sft_result["final_learning_rate"]},
            "grpo": {"steps": grpo_result["steps"], "seconds": round(grpo_result["seconds"], 1)},
            **record, "bundle": ship_bundle(ctx, "text", Path(grpo_result["final_model"]), record)}


def stage_ship(ctx: Context, budget: float) -> dict[str, Any]:
    """Retrain the models CPU users get by default at their own sizes, on more fresh data than their CPU runs
    saw, GRPO each, and bring each back as one bf16 bundle for `rlvr-world adopt` to judge against the
    shipped one (it replaces a default only when it wins). PushT first: it is the headline model."""
    sizes = ctx.sizes
    pusht_end = time.time() + (budget - sizes.ship_reserve) * (1 - sizes.ship_text_share)
    pusht = ship_pusht(ctx, pusht_end)
    ctx.note(pusht=pusht)
    text = ship_text(ctx, ctx.stage_end - sizes.ship_reserve)
    return {"pusht": pusht, "text": text}


def bring_back(out: Path) -> dict[str, Any]:
    """The files under --out against `BRING_BACK_LIMITS` (files, MiB each, MiB in all)."""
    files = {str(p.relative_to(out)): p.stat().st_size / 2**20 for p in sorted(out.rglob("*")) if p.is_file()}
    count, each, total = BRING_BACK_LIMITS
    return {"files": len(files), "largest_mib": round(max(files.values(), default=0.0), 2),
            "total_mib": round(sum(files.values()), 2), "limits": {"files": count, "mib_each": each, "mib_total": total},
            "within_limits": len(files) <= count and max(files.values(), default=0.0) <= each
            and sum(files.values()) <= total}


# -- 2. rewards ------------------------------------------------------------------------------
def stage_rewards(ctx: Context, budget: float) -> dict[str, Any]:
    import torch

    from rlvr_envs.video import metrics

    sizes, device = ctx.sizes, ctx.device
    try:
        lpips, trunk = metrics.load_lpips("vgg", device, allow_download=False), "real VGG weights"
    except metrics.LPIPSWeightsUnavailable:
        lpips, trunk = metrics.load_lpips("vgg", device, random_backbone_seed=0), "seeded random VGG trunk"
    generator = torch.Generator(device=device).manual_seed(0)
    shape = (sizes.reward_frames, *sizes.reward_resolution, 3)
    pred = torch.randint(0, 256, shape, generator=generator, device=device, dtype=torch.uint8)
    target = torch.randint(0, 256, shape, generator=generator, device=device, dtype=torch.uint8)

    def batched() -> torch.Tensor:
        return metrics.frame_reward(pred, target, lpips).reward

    def per_frame() -> torch.Tensor:
        return torch.cat([metrics.frame_reward(pred[i:i + 1], target[i:i + 1], lpips).reward
                          for i in range(len(pred))])

    timings = {}
    for name, run in (("batched", batched), ("per_frame", per_frame)):
        run()  # warm-up
        _sync(device)
        began = time.perf_counter()
        values = run()
        _sync(device)
        timings[name] = time.perf_counter() - began
        timings[f"{name}_values"] = values.float().cpu()
    agree = float((timings.pop("batched_values") - timings.pop("per_frame_values")).abs().max())
    return {"frames": sizes.reward_frames, "resolution": list(sizes.reward_resolution), "lpips_trunk": trunk,
            "batched_seconds": round(timings["batched"], 4), "per_frame_seconds": round(timings["per_frame"], 4),
            "frames_per_second_batched": round(sizes.reward_frames / timings["batched"], 1),
            "speedup": round(timings["per_frame"] / timings["batched"], 2), "goal_speedup": 5.0,
            "max_reward_difference": agree}


# -- 3. text ---------------------------------------------------------------------------------
def _text_row(report: dict[str, Any]) -> dict[str, Any]:
    from rlvr_envs.core.util import wilson_interval

    row = {k: report[k] for k in ("accuracy", "accuracy_changed", "accuracy_unchanged", "reward", "n", "n_changed",
                                  "n_unchanged")}
    for kind in ("changed", "unchanged"):
        hits = round(report[f"accuracy_{kind}"] * report[f"n_{kind}"]) if report[f"n_{kind}"] else 0
        row[f"wilson_{kind}"] = list(wilson_interval(hits, report[f"n_{kind}"]))
    return row


def evaluation_size(batch_seconds: float, batch: int, wanted: int, models: int, seconds: float) -> int:
    """Held-out items (whole batches, at most `wanted`, at least one batch) that `models` models can each be
    evaluated on in `seconds`, from one timed batch: a fixed size overran the deadline in a GPU run."""
    batches = int(seconds / max(batch_seconds * models, 1e-9))
    return min(wanted, max(1, batches) * batch)


def text_lr(preset: str) -> float:
    """SFT's learning rate for a from-scratch text preset: 1e-3 at the medium preset's width (640), scaled as
    1 / width (Adam's update per weight is ~lr, so narrower models take larger steps): 5e-3 for tiny."""
    from trainers.sft import TEXT_PRESETS

    return 1e-3 * 640 / TEXT_PRESETS[preset]["hidden_size"]


def text_sft_args(sizes: Sizes, *, steps: int, seconds: float, out: str | Path, device: str, threads: int,
                  compiled: bool):
    """The text stage's `trainers.sft` arguments (tests/test_token_rows.py trains through this same builder):
    a from-scratch model of `sizes.text_preset` on balanced fresh transitions with the loss on prompt and answer
    (as the shipped models were trained; answer-only SFT learned nothing in a GPU run), packed token rows,
    warmup-cosine over `steps`, stopped at `seconds` (0: none)."""
    from trainers import sft

    # the check's own evaluation covers text_eval transitions: the trainer's end-of-run one stays small
    return sft.Args(env_id=TEXT_ENV, from_scratch=True, preset=sizes.text_preset, balance=True, prompt_loss=True,
                    steps=steps, batch_size=sizes.text_batch, lr=text_lr(sizes.text_preset), warmup_steps=20,
                    train_size=sizes.text_train_size, eval_size=sizes.trainer_eval, eval_every=10**9,
                    checkpoint_every=10**9, max_seconds=seconds, out=str(out), threads=threads, seed=0,
                    device=device, no_compile=not compiled)


#: the text stage's sizes for the memorisation check (`memorise`): the tiny preset on 8 transitions, all 8 a step
MEMORISE = replace(TINY, text_preset="tiny", text_batch=8, text_train_size=8, trainer_eval=2)


def memorise(out: str | Path, device: str = "cpu", threads: int = 1, steps: int = 100) -> dict[str, Any]:
    """The text stage's SFT (`text_sft_args`, the arguments the GPU run uses, at `MEMORISE` sizes) for `steps`
    steps on 8 MiniTextWorld transitions, then greedy exact answers on those 8: an SFT that cannot memorise 8
    transitions cannot learn 8,192 in a GPU window (tests/test_token_rows.py wants >= 6 of 8 in 100 steps)."""
    from transformers import AutoModelForCausalLM

    from rlvr_envs.integrations.hf import evaluate_accuracy
    from rlvr_envs.registration import task_from_env_id
    from trainers import sft

    args = text_sft_args(MEMORISE, steps=steps, seconds=0.0, out=out, device=device, threads=threads, compiled=False)
    result = sft.main(args)
    task = task_from_env_id(TEXT_ENV, split="train", size=MEMORISE.text_train_size)
    model = AutoModelForCausalLM.from_pretrained(result["final_model"]).eval()
    report = evaluate_accuracy(model, task, range(len(task)), batch_size=len(task))
    return {"preset": MEMORISE.text_preset, "transitions": len(task), "steps": result["steps"],
            "exact": round(report["accuracy"] * len(task)), "lr": args.lr, "warmup_steps": args.warmup_steps,
            "prompt_loss": result["prompt_loss"], "trainer": result["trainer"], "final_loss_mean": result["train_loss"],
            "train_seconds": round(result["train_runtime"], 1)}


def stage_text(ctx: Context, budget: float) -> dict[str, Any]:
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    from rlvr_envs.core.sizing import preset_cost
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import compare_reports, evaluate_accuracy
    from trainers import grpo, sft
    from trainers.grpo_config import GRPOConfig

    sizes, args, device, work = ctx.sizes, ctx.args, ctx.device, ctx.work
    began = time.perf_counter()
    left = lambda: budget - (time.perf_counter() - began)  # noqa: E731
    assets = Path(__file__).resolve().parents[1] / "rlvr_envs" / "assets" / "text"
    for name in ("text_sft", "text_grpo"):
        shutil.rmtree(work / name, ignore_errors=True)
    probe = task_from_env_id(TEXT_ENV, split="test", size=64)  # example lengths; its build also loads the tokenizer
    grpo_size = min(sizes.text_train_size or 2048, 2048)
    build = build_seconds(TEXT_ENV, (sizes.text_train_size or 2048) + grpo_size)
    sft_seconds, grpo_planned = split_training(left() - sizes.text_reserve - build - sizes.sft_overhead,
                                               sizes.text_sft_share, sizes.text_grpo_minimum, sizes.text_grpo_overhead)
    example = np.mean([len(probe.prompt_ids(i)) + len(probe.target_ids(i)) + 1 for i in range(len(probe))])
    planned_cost = preset_cost(sft.TEXT_PRESETS[sizes.text_preset], len(probe.tokenizer), int(example))
    sft_steps = ctx.planned_steps(sft_seconds, planned_cost, sizes.text_batch * example)
    compiled = ctx.compile_worth(sft_seconds)
    sft_began = time.perf_counter()
    sft_args = text_sft_args(sizes, steps=sft_steps, seconds=sft_seconds, out=work / "text_sft", device=args.device,
                             threads=args.threads, compiled=compiled)
    sft_args.end_at = ctx.stage_end - sizes.text_reserve - (grpo_planned + sizes.text_grpo_overhead if grpo_planned else 0)
    sft_result = sft.main(sft_args)
    ctx.note(sft={"steps": sft_result["steps"], "train_loss": sft_result["train_loss"]})
    sft_seconds = time.perf_counter() - sft_began
    grpo_began = time.perf_counter()
    limit, skipped = grpo_limit(grpo_planned, left() - sizes.text_reserve - sizes.text_grpo_overhead,
                                sizes.text_grpo_minimum)
    grpo_card = None
    if not skipped:
        grpo_card = grpo.main(GRPOConfig(env_id=TEXT_ENV, model=sft_result["final_model"], out=str(work / "text_grpo"),
                                         steps=sizes.max_steps, max_seconds=limit,
                                         end_at=ctx.stage_end - sizes.text_reserve, generation_cache="static",
                                         group_size=sizes.text_group, prompts_per_step=sizes.text_prompts,
                                         max_completion_len=sizes.text_completion, balance=True, lr=1e-5,
                                         eval_windows=sizes.trainer_eval, eval_every=10**9, checkpoint_every=10**6,
                                         threads=args.threads, device=args.device, seed=0,
                                         env_kwargs=(f"size={grpo_size}",)))
    grpo_seconds = time.perf_counter() - grpo_began

    held_out = task_from_env_id(TEXT_ENV, split="test")
    models = {f"shipped {name} (CPU)": assets / name for name in SHIPPED_TEXT}
    models[f"SFT {sizes.text_preset} (this run)"] = Path(sft_result["final_model"])
    if grpo_card is not None:
        models["GRPO (this run)"] = Path(grpo_card["final_model"])
    batch = 128 if device.type == "cuda" else 8
    wanted = min(sizes.text_eval, len(held_out))
    indices, first_batch_seconds = list(range(min(batch, wanted))), None
    reports, rows = {}, {}
    for name, directory in models.items():
        model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32).to(device).eval()
        with ctx.precision.autocast():
            if first_batch_seconds is None:  # size the evaluation from one timed batch (the slowest model last)
                began = time.time()
                evaluate_accuracy(model, held_out, indices, sizes.text_completion, batch_size=batch)
                first_batch_seconds = time.time() - began
                indices = list(range(evaluation_size(first_batch_seconds, batch, wanted, len(models),
                                                     ctx.stage_end - time.time() - 5.0)))
            reports[name] = evaluate_accuracy(model, held_out, indices, sizes.text_completion, batch_size=batch,
                                              per_transition=True)
        rows[name] = _text_row(reports[name])
        del model
    changed = [held_out.transition(i).changed for i in indices]
    reference = reports[f"shipped {SHIPPED_TEXT[0]} (CPU)"]
    paired = {name: compare_reports(reference, report, changed) for name, report in reports.items()
              if report is not reference}
    cost = preset_cost(sft.TEXT_PRESETS[sizes.text_preset], len(probe.tokenizer), int(sft_result["mean_example_tokens"]))
    runtime = sft_result["train_runtime"] or sft_seconds
    return {"preset": sizes.text_preset, "parameters": sft_result["parameters"], "cost": cost.as_dict(),
            "train_transitions": sizes.text_train_size or "task default", "build_seconds_estimate": round(build, 1),
            "sft": {"steps": sft_result["steps"], "planned_steps": sft_steps, "seconds": round(sft_seconds, 1),
                    "train_runtime": round(runtime, 1),
                    "train_loss": sft_result["train_loss"], "batch": sizes.text_batch,
                    "compiled": sft_result.get("compiled", compiled), "prompt_loss": sft_result.get("prompt_loss"),
                    "trainer": sft_result.get("trainer"), "row_tokens": sft_result.get("row_tokens"),
                    "rows_per_step": sft_result.get("rows_per_step"),
                    "padding_share": sft_result.get("padding_share"),
                    "mean_example_tokens": round(sft_result["mean_example_tokens"], 1),
                    **ctx.sft_speed(sft_result, sizes.text_batch, cost.train_flops_per_token)},
            "grpo": {"steps": grpo_card["steps"], "seconds": round(grpo_seconds, 1), "group_size": sizes.text_group,
                     "prompts_per_step": sizes.text_prompts, "generation_cache": "static"} if grpo_card else
                    {"skipped": skipped},
            "held_out": rows, "paired_vs_shipped_sft": paired,
            "held_out_transitions": len(indices), "greedy_max_new_tokens": sizes.text_completion}


# -- 4. PushT ---------------------------------------------------------------------------------
def pusht_data(sizes: Sizes, work: Path) -> str:
    """Episodes for the larger world model: generated here with the real simulator (many workers on a
    GPU machine's CPUs); the tiny run reuses the embedded held-out set."""
    from rlvr_envs.video import pusht
    from rlvr_envs.video.task import embedded_heldout_dir

    if sizes.pusht_episodes <= 12:
        return embedded_heldout_dir(12, 64)
    folder = work / f"pusht64-n{sizes.pusht_episodes}"
    config = pusht.PushTGenerationConfig(episodes=sizes.pusht_episodes, resolution=64, seed=30_000)
    pusht.generate_dataset(config, folder, workers=max(1, min(16, (os.cpu_count() or 2) - 1)), progress=False)
    return str(folder)


def grpo_step_seconds(log: Path, timed: int) -> dict[str, float | int | None]:
    """Wall seconds of a video GRPO step (generate + update) from its log: the first step apart (it captures
    the decoder's CUDA graphs and compiles), the median of the steps after it, given only when at least
    `timed` of them ran (fewer say nothing steady)."""
    seconds = [r["generate_seconds"] + r["update_seconds"] for r in map(json.loads, log.read_text().splitlines())
               if "generate_seconds" in r]
    steady = seconds[1:]
    return {"first_step_seconds": seconds[0] if seconds else None, "timed_steps": len(steady),
            "median_step_seconds": float(np.median(steady)) if len(steady) >= timed else None}


def stage_pusht(ctx: Context, budget: float) -> dict[str, Any]:
    import shutil

    from benchmarks import planning_agreement
    from rlvr_envs.core.sizing import preset_cost
    from baselines.video import score_baselines
    from rlvr_envs.video.evaluation import held_out_indices, summarize
    from rlvr_envs.video.task import default_tokenizer_dir
    from rlvr_envs.video.world_model import PRESETS
    from trainers import grpo, train_video_world_model as mle
    from trainers.grpo_config import GRPOConfig
    from trainers.grpo_video import build_held_out

    sizes, args, device, work = ctx.sizes, ctx.args, ctx.device, ctx.work
    began = time.perf_counter()
    left = lambda: budget - (time.perf_counter() - began)  # noqa: E731
    data = pusht_data(sizes, work)
    data_seconds = time.perf_counter() - began
    mle_out, grpo_out = work / "pusht_mle", work / "pusht_grpo"
    for folder in (mle_out, grpo_out):
        shutil.rmtree(folder, ignore_errors=True)
    mle_args = mle.Args(data=data, tokenizer=str(default_tokenizer_dir()), layout="single", out=str(mle_out),
                        preset=sizes.pusht_preset, batch_size=sizes.pusht_batch, lr=5e-4, warmup=50,
                        steps=sizes.max_steps, eval_every=10**9, eval_windows=sizes.pusht_eval,
                        checkpoint_every=10**9, threads=args.threads, device=args.device,
                        seed=0).validate()
    probe = mle.build_task(mle_args, "test")
    mle_args.max_seconds, grpo_planned = split_training(left() - sizes.pusht_reserve, sizes.pusht_mle_share,
                                                        sizes.pusht_grpo_minimum, sizes.pusht_overhead)
    tokens = probe.layout.prompt_len + probe.layout.response_len + 1
    cost = preset_cost(PRESETS[sizes.pusht_preset], probe.vocab.size, tokens)
    mle_args.steps = ctx.planned_steps(mle_args.max_seconds, cost, sizes.pusht_batch * tokens)
    mle_args.end_at = ctx.stage_end - sizes.pusht_reserve - (grpo_planned + sizes.pusht_overhead if grpo_planned else 0)
    mle_args.no_compile = not ctx.compile_worth(mle_args.max_seconds)
    mle_card = mle.main(mle_args)
    grpo_args = GRPOConfig(env_id=PUSHT_ENV, env_kwargs=("reward=mae", f"data_dir={data}"), model=str(mle_out),
                           out=str(grpo_out), steps=sizes.max_steps,
                           # GRPO always runs (its model is the one exported), at least a second
                           max_seconds=max(1.0, min(grpo_planned, left() - sizes.pusht_reserve)),
                           end_at=ctx.stage_end - sizes.pusht_reserve,
                           prompts_per_step=sizes.pusht_prompts, group_size=sizes.pusht_group, lr=5e-5,
                           eval_windows=sizes.pusht_eval, eval_every=10**6, checkpoint_every=10**6,
                           threads=args.threads, device=args.device, seed=0)
    with ctx.decoding(grpo_args.max_seconds):
        grpo_card = grpo.main(grpo_args)
    held_out = build_held_out(grpo_args, device)
    baselines = {k: summarize(v) for k, v in score_baselines(held_out, held_out_indices(len(held_out),
                                                                                         sizes.pusht_eval)).items()}
    agreement_path = work / "planning_agreement"
    planning_agreement.main(["--models", f"mle={mle_out}", f"grpo={grpo_out}", "--episodes",
                             str(sizes.agreement_episodes), "--candidates", str(sizes.agreement_candidates),
                             "--top-k", str(max(1, sizes.agreement_candidates // 8)), "--device", args.device,
                             "--threads", str(args.threads), "--out", str(agreement_path)])
    agreement = json.loads(agreement_path.with_suffix(".json").read_text())
    steady = mle_card["tokens_per_second_after_first_step"]
    return {"preset": sizes.pusht_preset, "parameters": mle_card["parameters"], "cost": cost.as_dict(),
            "data": {"episodes": sizes.pusht_episodes, "seconds": round(data_seconds, 1)},
            "mle": {"steps": mle_card["steps"], "planned_steps": mle_args.steps, "seconds": mle_card["train_seconds_this_run"],
                    "first_step_seconds": mle_card["first_step_seconds"], "micro_batch": mle_card["micro_batch"],
                    "compiled": mle_card["compiled"], "tokens_per_second": mle_card["tokens_per_second"],
                    "tokens_per_second_after_first_step": steady, "mfu": ctx.mfu(steady, cost.train_flops_per_token),
                    "held_out": mle_card["held_out"]},
            "grpo": {"steps": grpo_card["steps"], "seconds": grpo_card["train_seconds_this_run"],
                     "planned_seconds": round(grpo_planned, 1),
                     **grpo_step_seconds(grpo_out / "log.jsonl", sizes.grpo_timed_steps),
                     "start": grpo_card["start"], "final": grpo_card["final"]},
            "baselines": baselines, "held_out_transitions": grpo_card["held_out_transitions"],
            "planning_agreement": {"episodes": agreement["episodes"], "candidates": agreement["candidates"],
                                   "summary": agreement["summary"]}}


# -- 6. web (the optional second set) ------------------------------------------------------------
def stage_web(ctx: Context, budget: float) -> dict[str, Any]:
    import shutil

    from benchmarks import web_agent
    from rlvr_envs.core.sizing import preset_cost
    from rlvr_envs.registration import task_from_env_id
    from trainers import grpo, sft
    from trainers.grpo_config import GRPOConfig

    sizes, args, work = ctx.sizes, ctx.args, ctx.work
    began = time.perf_counter()
    left = lambda: budget - (time.perf_counter() - began)  # noqa: E731
    for name in ("web_sft", "web_grpo", "web_agent"):
        shutil.rmtree(work / name, ignore_errors=True)
    probe = task_from_env_id(WEB_ENV, split="test", size=64)  # example lengths; its build also loads the tokenizer
    grpo_size = min(sizes.web_train_size, WEB_GRPO_PROMPTS)
    build = build_seconds(WEB_ENV, sizes.web_train_size + grpo_size)
    sft_seconds, grpo_planned = split_training(left() - sizes.web_reserve - build - sizes.sft_overhead,
                                               sizes.web_sft_share, sizes.web_grpo_minimum, sizes.web_grpo_overhead)
    example = np.mean([len(probe.prompt_ids(i)) + len(probe.target_ids(i)) + 1 for i in range(len(probe))])
    cost = preset_cost(sft.TEXT_PRESETS[sizes.web_preset], len(probe.tokenizer), int(example))
    sft_steps = ctx.planned_steps(sft_seconds, cost, sizes.web_batch * example)
    compiled = ctx.compile_worth(sft_seconds)  # as the text stage: packed rows of one length
    sft_result = sft.main(sft.Args(env_id=WEB_ENV, from_scratch=True, preset=sizes.web_preset, steps=sft_steps,
                                   batch_size=sizes.web_batch, lr=7e-4, warmup_steps=20,
                                   train_size=sizes.web_train_size, eval_size=sizes.trainer_eval, eval_every=10**9,
                                   checkpoint_every=10**9, max_seconds=sft_seconds, out=str(work / "web_sft"),
                                   end_at=ctx.stage_end - sizes.web_reserve - (
                                       grpo_planned + sizes.web_grpo_overhead if grpo_planned else 0),
                                   threads=args.threads, seed=0, no_compile=not compiled))
    grpo_began = time.perf_counter()
    limit, skipped = grpo_limit(grpo_planned, left() - sizes.web_reserve - sizes.web_grpo_overhead,
                                sizes.web_grpo_minimum)
    grpo_card = None
    if not skipped:  # else GRPO is skipped, and so is the rlvr agent
        grpo_card = grpo.main(GRPOConfig(env_id=WEB_ENV, model=sft_result["final_model"], out=str(work / "web_grpo"),
                                         steps=sizes.max_steps, max_seconds=limit,
                                         end_at=ctx.stage_end - sizes.web_reserve,
                                         group_size=sizes.web_group, prompts_per_step=sizes.web_prompts,
                                         max_completion_len=sizes.web_completion, lr=1e-5,
                                         eval_windows=sizes.trainer_eval, eval_every=10**9, checkpoint_every=10**6,
                                         threads=args.threads, device=args.device, seed=0,
                                         env_kwargs=(f"size={grpo_size}",)))
    grpo_seconds = time.perf_counter() - grpo_began
    agents_began = time.perf_counter()
    table = work / "web_agent"
    web_agent.main(["--episodes", str(sizes.web_episodes), "--k", str(sizes.web_k), "--batch-episodes",
                    str(sizes.web_episodes), "--max-new-tokens", str(sizes.web_completion),
                    "--base-model", sft_result["final_model"], "--device", args.device, "--threads", str(args.threads),
                    *(["--rlvr-model", grpo_card["final_model"]] if grpo_card else []), "--out", str(table)])
    report = json.loads((table / "results.json").read_text())
    runtime = sft_result["train_runtime"] or sft_seconds
    return {"preset": sizes.web_preset, "parameters": sft_result["parameters"], "cost": cost.as_dict(),
            "build_seconds_estimate": round(build, 1),
            "sft": {"steps": sft_result["steps"], "planned_steps": sft_steps, "train_runtime": round(runtime, 1),
                    "train_transitions": sizes.web_train_size, "batch": sizes.web_batch,
                    "train_loss": sft_result["train_loss"], "compiled": compiled,
                    **ctx.sft_speed(sft_result, sizes.web_batch, cost.train_flops_per_token)},
            "grpo": {"steps": grpo_card["steps"], "seconds": round(grpo_seconds, 1), "group_size": sizes.web_group,
                     "prompts_per_step": sizes.web_prompts} if grpo_card else
                    {"skipped": skipped},
            "agents": {"episodes": sizes.web_episodes, "k": sizes.web_k, "seconds": round(time.perf_counter() -
                                                                                         agents_began, 1),
                       "summary": report["summary"], "paired": report["paired"], "skipped": report["skipped"]}}


# -- the run -----------------------------------------------------------------------------------
#: exit status of a check the deadline stopped inside a stage (its report holds what was measured)
DEADLINE_EXIT = 3

STAGES = {"ceilings": stage_ceilings, "ship": stage_ship, "speed": stage_speed, "rewards": stage_rewards, "text": stage_text,
          "pusht": stage_pusht, "web": stage_web}


def stage_plan(stages: list[str], sizes: Sizes) -> tuple[list[str], float]:
    """The stages to run and the default deadline: the first set's, plus each optional stage's own seconds;
    an optional stage alone also measures the ceilings (its MFU is against the device's own matmul rate)."""
    optional = [name for name in stages if name in SECOND_SET]
    if optional and "ceilings" not in stages:
        stages = ["ceilings", *stages]
    first_set = bool(set(stages) - {"ceilings", *SECOND_SET}) or not optional
    extra = dict(sizes.second_set_deadlines)
    return stages, (sizes.deadline if first_set else 0.0) + sum(extra[name] for name in optional)


#: the longest --deadline (seconds): a day, where the deadline's timer still works (inf would kill it)
MAX_DEADLINE = 86_400.0


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rlvr_envs.core.arguments import at_least, real_at_least
    from rlvr_envs.core.device import add_device_argument, setup_device

    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check",
                                     description=__doc__.split("\n\n")[0].replace("\n", " "))
    add_device_argument(parser)
    parser.add_argument("--tiny", action="store_true", help="the same code path at CPU-test size (about a minute)")
    first_set = [name for name in STAGES if name not in SECOND_SET]
    parser.add_argument("--stages", default=",".join(first_set),
                        help=f"comma-separated, of {','.join(STAGES)} (default: all but the web set)")
    parser.add_argument("--deadline", type=real_at_least(0.0, strictly=True, maximum=MAX_DEADLINE),
                        help="seconds for the whole check (default 480 for the first set and 240 for the web set, "
                             "added when both run; tiny 600 + 300)")
    parser.add_argument("--threads", type=at_least(1), default=2)
    parser.add_argument("--out", default=str(RESULTS), help="where gpu_check.json, gpu_check.md and the model go")
    parser.add_argument("--work", default="runs/gpu_check", help="models and data of the training stages")
    # the check runs each stage in a child process of itself (`run_stage_process`): these say which, and until when
    parser.add_argument("--child-stage", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child-end-at", type=float, default=0.0, help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.child_stage:
        sizes = TINY if args.tiny else Sizes()
        run = setup_device(args.device, threads=args.threads)
        ctx = Context(sizes, args, run, Path(args.work), Path(args.out))
        return run_as_child(ctx, args.child_stage, args.child_end_at)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f"--stages: unknown {sorted(unknown)}; choose from {','.join(STAGES)}")
    if not stages:
        parser.error(f"--stages: name at least one of {','.join(STAGES)}")
    sizes = TINY if args.tiny else Sizes()
    stages, default_deadline = stage_plan(stages, sizes)
    args.deadline = args.deadline or default_deadline
    deadline = Deadline(args.deadline)
    run = setup_device(args.device, threads=args.threads)
    out, work = Path(args.out), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report = Report(out, argv, args, sizes, run.device)
    report.data["precision"] = run.describe()
    report.data["deadline_seconds"] = args.deadline
    ctx = Context(sizes, args, run, work, out)
    plans = {name: (planned, minimum) for name, planned, minimum in sizes.plans}
    began = deadline.clock()

    children: list[subprocess.Popen] = []

    def expire() -> None:  # the deadline passed inside a stage: record what stopped, keep what is measured
        import signal

        for child in children:  # a stage's process group goes with the check
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
        cut = report.running or "between stages"
        print(f"[gpu_check] the {report.data['deadline_seconds']} s deadline passed during {cut}: stopping", flush=True)
        report.data["stopped_by_deadline"] = cut
        report.data["total_seconds"] = round(deadline.clock() - began, 1)
        report.stage(cut, {"stopped": "the deadline passed during this stage"})
        sys.stdout.flush()
        os._exit(DEADLINE_EXIT)

    def call(name: str, budget: float) -> dict[str, Any]:
        report.running = name
        result = run_stage_process(name, budget, argv, work, ctx.ceilings, deadline.remaining(), children.append)
        if name == "ceilings" and "matmul_flops" in result:  # every later stage is judged against them
            ctx.ceilings.update(result)
        return result

    deadline.arm(expire)
    run_stages(stages, plans, deadline, call, report.stage)
    report.running = None
    report.data["bring_back"] = bring_back(out)  # before the last write, so it counts the report's own files
    report.data["total_seconds"] = round(deadline.clock() - began, 1)
    report.stage("_total", {"seconds": report.data["total_seconds"]})
    print(markdown(report.data))
    return report.data


# -- Markdown -----------------------------------------------------------------------------------
def _f(value: Any, digits: int = 4) -> str:
    return "-" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def _sft_speed(sft_: dict[str, Any]) -> str:
    def rate(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    return (f"~{rate(sft_['tokens_per_second_estimate'])} tokens/s, MFU {_pct(sft_['mfu_estimate'])} over the "
            f"training seconds; first step {_f(sft_['first_step_seconds'], 2)} s, then "
            f"~{rate(sft_['tokens_per_second_after_first_step'])} tokens/s, MFU {_pct(sft_['mfu_after_first_step'])}")


def _interval(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair and not any(np.isnan(pair)) else "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def markdown(data: dict[str, Any]) -> str:
    from benchmarks import world_model_speed

    machine = data["machine"]
    lines = ["# GPU check", "", f"`{data['command']}` on {machine['device']} ({machine['platform']}, "
             f"{machine['cpu_count']} CPUs, torch {machine['torch']}), commit {data.get('git_commit') or '?'}, "
             f"{data['started']} to {data.get('ended', '?')}; load {data.get('load_before')} -> "
             f"{data.get('load_after')}; {data.get('precision', '')}; deadline {data.get('deadline_seconds')} s.", ""]
    stages = data["stages"]
    for name, result in stages.items():
        if name == "_total":
            continue
        budget = f", budget {result['budget_seconds']} s" if "budget_seconds" in result else ""
        lines += [f"## {name} ({result.get('stage_seconds', '?')} s{budget})", ""]
        if {"error", "skipped", "stopped"} & set(result):
            lines += [f"failed: `{result['error']}`" if "error" in result else
                      f"skipped: {result['skipped']}" if "skipped" in result else f"stopped: {result['stopped']}", ""]
            continue
        if name == "ceilings":
            lines += [f"bf16 matmul ({result['matmul_size']}^3, random data): **{result['matmul_flops'] / 1e12:.1f} "
                      f"TFLOP/s**; device copy: **{result['copy_bytes_per_second'] / 1e9:.0f} GB/s** (read + written). "
                      "Every MFU and memory-floor share below is against these two.", ""]
        elif name == "ship":
            lines += ["The shipped-size models retrained here, each brought back as one bf16 file; a model that saw "
                      "fewer training sequences than the shipped one is undertrained and not judged. Judge the "
                      "others with `rlvr-world adopt` on a CPU: it replaces a default only when the model wins.", "",
                      "| model | preset | trained | sequences (shipped) | GRPO steps | bundle | status |",
                      "|---|---|---|---:|---:|---|---|"]
            for kind in ("pusht", "text"):
                if kind not in result:
                    continue
                row = result[kind]
                first = row["mle"] if kind == "pusht" else row["sft"]
                lines.append(f"| {kind} | {row['preset']} ({row['parameters'] / 1e6:.1f}M) | {first['steps']} steps in "
                             f"{first['seconds']} s{', compiled' if first['compiled'] else ''} | {row['sequences']:,} "
                             f"({row['shipped_sequences']:,}) | {row['grpo']['steps']} | `{row['bundle']['file']}` "
                             f"({row['bundle']['mib']} MiB) | "
                             f"{'undertrained' if row['undertrained'] else '`' + row['judge_with'] + '`'} |")
            lines.append("")
        elif name == "speed":
            ceilings = stages.get("ceilings", {})
            body = world_model_speed.markdown({"ceilings": ceilings, "precision": data.get("precision", ""),
                                               **result}) if "matmul_flops" in ceilings else []
            lines += body[2:]
        elif name == "rewards":
            lines += [f"-(L1 + LPIPS) of {result['frames']} frames at {result['resolution'][0]}x"
                      f"{result['resolution'][1]} ({result['lpips_trunk']}): batched {result['batched_seconds']} s "
                      f"({result['frames_per_second_batched']} frames/s), per frame {result['per_frame_seconds']} s: "
                      f"**{result['speedup']}x** (goal >= {result['goal_speedup']}x); largest difference between "
                      f"the two {result['max_reward_difference']:.2e}.", ""]
        elif name == "text":
            sft_ = result["sft"]
            path = ("compiled" if sft_["compiled"] else "eager") + (
                f", transitions packed into rows of {sft_['row_tokens']} tokens ({_pct(sft_.get('padding_share'))} "
                f"padding), loss on prompt and answer" if sft_.get("row_tokens") else "")
            lines += [f"SFT of the {result['preset']} preset ({result['parameters'] / 1e6:.1f}M) on "
                      f"{result['train_transitions']} transitions, batch {sft_['batch']} ({path}): {sft_['steps']} steps "
                      f"(planned {sft_['planned_steps']}) "
                      f"in {sft_['seconds']} s (training {sft_['train_runtime']} s), {_sft_speed(sft_)} (estimates: "
                      f"mean example length {sft_['mean_example_tokens']} tokens x batch x steps / seconds); GRPO " + (
                          f"skipped ({result['grpo']['skipped']})" if "skipped" in result["grpo"] else
                          f"{result['grpo']['steps']} steps of {result['grpo']['prompts_per_step']} x "
                          f"{result['grpo']['group_size']} in {result['grpo']['seconds']} s") + ". Held-out greedy exact accuracy "
                      f"on {result['held_out_transitions']} transitions (95% Wilson intervals):", "",
                      "| model | exact | changed | changed 95% | unchanged | unchanged 95% |",
                      "|---|---:|---:|---|---:|---|"]
            for model, row in result["held_out"].items():
                lines.append(f"| {model} | {_f(row['accuracy'], 3)} | {_f(row['accuracy_changed'], 3)} "
                             f"(n={row['n_changed']}) | {_interval(row['wilson_changed'])} | "
                             f"{_f(row['accuracy_unchanged'], 3)} (n={row['n_unchanged']}) | "
                             f"{_interval(row['wilson_unchanged'])} |")
            lines.append("")
        elif name == "pusht":
            mle, grpo_, base = result["mle"], result["grpo"], result["baselines"]
            step = grpo_.get("median_step_seconds")
            lines += [f"World model preset {result['preset']} ({result['parameters'] / 1e6:.1f}M) on "
                      f"{result['data']['episodes']} generated episodes ({result['data']['seconds']} s): MLE "
                      f"{mle['steps']} steps (planned {mle['planned_steps']}) in {mle['seconds']} s (first step, compile included, "
                      f"{mle['first_step_seconds']} s; micro-batch {mle['micro_batch']}), "
                      f"{mle['tokens_per_second_after_first_step']:,} tokens/s after it, MFU {_pct(mle['mfu'])}; GRPO "
                      f"{grpo_['steps']} steps in {grpo_['seconds']} s, first step {_f(grpo_.get('first_step_seconds'), 3)} s, "
                      f"median step after it {_f(step, 3)} s. Held-out MAE "
                      f"({result['held_out_transitions']} transitions):", "",
                      "| predictor | MAE |", "|---|---:|",
                      f"| MLE (greedy / sampled) | {_f(grpo_['start']['greedy']['mae'], 5)} / "
                      f"{_f(grpo_['start']['sampled']['mae'], 5)} |",
                      f"| GRPO (greedy / sampled) | {_f(grpo_['final']['greedy']['mae'], 5)} / "
                      f"{_f(grpo_['final']['sampled']['mae'], 5)} |"]
            lines += [f"| {k} | {_f(v.get('mae'), 5)} |" for k, v in base.items()]
            agreement = result["planning_agreement"]
            lines += ["", f"Candidate ranking vs the true simulator ({agreement['episodes']} episodes x "
                      f"{agreement['candidates']} candidates):", "", "| model | " +
                      " | ".join(next(iter(agreement["summary"].values())).keys()) + " |",
                      "|---|" + "---:|" * len(next(iter(agreement["summary"].values())))]
            for model, metrics in agreement["summary"].items():
                lines.append(f"| {model} | " + " | ".join(_f(v.get("mean"), 3) for v in metrics.values()) + " |")
            lines.append("")
        elif name == "web":
            sft_, grpo_, agents = result["sft"], result["grpo"], result["agents"]
            lines += [f"MiniWeb SFT of the {result['preset']} preset ({result['parameters'] / 1e6:.1f}M) on "
                      f"{sft_['train_transitions']} fresh transitions, batch {sft_['batch']}: {sft_['steps']} steps "
                      f"(planned {sft_['planned_steps']}) in {sft_['train_runtime']} s, "
                      f"{_sft_speed(sft_)} (estimates); "
                      "GRPO " + (f"skipped ({grpo_['skipped']})" if "skipped" in grpo_ else
                                 f"{grpo_['steps']} steps of {grpo_['prompts_per_step']} x {grpo_['group_size']} in "
                                 f"{grpo_['seconds']} s") + f". Web agents on {agents['episodes']} goal episodes, "
                      f"k {agents['k']} ({agents['seconds']} s; 95% Wilson intervals):", "",
                      "| agent | success | 95% | unparsable predictions |", "|---|---:|---|---:|"]
            for agent, row in agents["summary"].items():
                lines.append(f"| {agent} | {row['success_rate']:.3f} | {_interval(row['ci95'])} | "
                             f"{row['unparsable']}/{row['predictions']} |")
            lines += [f"| {agent} | skipped: {why} | | |" for agent, why in agents["skipped"].items()]
            lines.append("")
    lines.append(f"Total {data.get('total_seconds', '?')} s of the {data.get('deadline_seconds')} s deadline.")
    back = data.get("bring_back")
    if back:
        lines.append(f"Brought back: {back['files']} files, {back['total_mib']} MiB in all, the largest "
                     f"{back['largest_mib']} MiB (limits {back['limits']['files']} files, {back['limits']['mib_each']} "
                     f"MiB each, {back['limits']['mib_total']} MiB in all: "
                     f"{'within' if back['within_limits'] else '**over**'}).")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # compile workers and simulator pools must not hold the exit past the deadline (seen: 11 s)
