"""The prepared GPU check: one script, at most 9 minutes on one H200, sized by the FLOP arithmetic.

    python -m benchmarks.gpu_check --device cuda                        # writes benchmarks/results/gpu_check/
    python -m benchmarks.gpu_check --device cpu --tiny --out /tmp/gc    # the same code path in about a minute

Stages, each with its own time budget; the JSON and Markdown are rewritten after every stage,
so a later crash or a killed run loses nothing already measured:

1. generation: KV-cached world-model sampling (iVideoGPT-size "paper" preset on RT-1's
   single-step layout: 4 x (320 frame + 13 action) tokens of prompt, 321 generated), tokens/s
   in fp32, fp32 with TF32 matmuls (CUDA) and bf16 autocast.
2. rewards: -(L1 + LPIPS) of 256x320 frames, one batched call vs one call per frame (goal >= 5x).
3. text: MiniTextWorld SFT of the ~57M "medium" text preset for a few minutes, then GRPO with
   groups of 16; held-out exact accuracy on changed and unchanged transitions with 95% Wilson
   intervals, next to the shipped CPU models on the same transitions (paired tests).
4. pusht: PushT single-step with a larger world model ("medium", ~35M): MLE on freshly generated
   episodes, then GRPO; held-out MAE against copy-last-frame and the tokenizer ceiling, and the
   candidate-ranking agreement with the true simulator (`benchmarks.planning_agreement`).

Training budgets are turned into steps by `rlvr_envs.core.sizing` (FLOPs per token at 30% of
the H200's bf16 peak) and capped by wall time. The LPIPS trunk is the seeded random one unless
its real weights are on the machine (the device machine has no network); the output says which.
The exact device command, its carry list and wheels are in docs/scale_out.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "gpu_check"
TEXT_ENV = "RLVRWorld/MiniTextWorld-v0"
PUSHT_ENV = "RLVRWorld/PushT-SingleStep-v0"
SHIPPED_TEXT = ("minitextworld_sft_model", "minitextworld_sft_longer_model")


@dataclass(frozen=True)
class Sizes:
    """Everything the two scales differ in (the code path is the same). The full budgets add up to
    about 8 minutes on one H200 (estimated: generation ~40 s, rewards ~10 s, text ~240 s with its four
    held-out evaluations, PushT ~200 s with data generation and the true simulator's rollouts)."""

    gen_preset: str = "paper"
    gen_tokens_per_frame: int = 320  #: RT-1: 16x20 codes of a 256x320 frame
    gen_history: int = 4
    gen_batch: int = 64
    gen_repeats: int = 1  #: timed runs per mode, after one warm-up
    reward_frames: int = 256
    reward_resolution: tuple[int, int] = (256, 320)
    text_preset: str = "medium"
    text_batch: int = 32
    text_sft_seconds: float = 110.0
    text_grpo_seconds: float = 45.0
    text_group: int = 16
    text_prompts: int = 8
    text_completion: int = 256
    text_eval: int = 192
    text_train_size: int = 0  #: 0 = the task's default
    pusht_preset: str = "medium"
    pusht_episodes: int = 300
    pusht_batch: int = 64
    pusht_mle_seconds: float = 80.0
    pusht_grpo_seconds: float = 40.0
    pusht_group: int = 16
    pusht_prompts: int = 8
    pusht_eval: int = 96
    agreement_episodes: int = 8
    agreement_candidates: int = 64
    utilisation: float = 0.3  #: planning figure: fraction of the bf16 peak a training step reaches
    max_steps: int = 10**6  #: a cap on the arithmetic's steps (the tiny run's budget is steps, not FLOPs)


TINY = Sizes(gen_preset="tiny", gen_tokens_per_frame=16, gen_history=2, gen_batch=2, gen_repeats=1, reward_frames=4,
             reward_resolution=(64, 64), text_preset="micro", text_batch=2, text_sft_seconds=3.0,
             text_grpo_seconds=2.0, text_group=2, text_prompts=2, text_completion=8, text_eval=4, text_train_size=16,
             pusht_preset="tiny", pusht_episodes=12, pusht_batch=2, pusht_mle_seconds=3.0, pusht_grpo_seconds=2.0,
             pusht_group=2, pusht_prompts=2, pusht_eval=2, agreement_episodes=1, agreement_candidates=4, max_steps=4)


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

    def stage(self, name: str, result: dict[str, Any]) -> None:
        self.data["stages"][name] = result
        self.data["load_after"] = _load()
        self.data["ended"] = time.strftime("%Y-%m-%d %H:%M:%S")
        (self.out / "gpu_check.json").write_text(json.dumps(self.data, indent=2, default=_plain) + "\n")
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


def steps_for(seconds: float, cost, tokens_per_step: int, sizes: Sizes, at_least: int = 2) -> int:
    """Optimizer steps that `seconds` of training allow by the FLOP arithmetic (wall time caps them too)."""
    planned = int(seconds / max(cost.train_seconds(tokens_per_step, utilisation=sizes.utilisation), 1e-9))
    return max(at_least, min(sizes.max_steps, planned))


# -- 1. generation -------------------------------------------------------------------------
def stage_generation(sizes: Sizes, device) -> dict[str, Any]:
    import torch

    from rlvr_envs.core.device import Capabilities, device_capabilities, precision_policy
    from rlvr_envs.core.sizing import preset_cost
    from rlvr_envs.video.layout import SingleStepLayout, VideoVocabulary
    from rlvr_envs.video.world_model import PRESETS, build_world_model, generate_responses

    vocab = VideoVocabulary(frame_codes=4375, action_bins=256)
    layout = SingleStepLayout(vocab, sizes.gen_tokens_per_frame, 13, sizes.gen_history)
    length = layout.prompt_len + layout.response_len
    model = build_world_model(vocab, length, sizes.gen_preset).eval().to(device)
    rng = np.random.default_rng(0)
    prompts = np.stack([layout.prompt(rng.integers(0, 4375, (sizes.gen_history, sizes.gen_tokens_per_frame)),
                                      vocab.action_tokens(rng.integers(0, 256, (sizes.gen_history, 13))))
                        for _ in range(sizes.gen_batch)])
    generated = sizes.gen_batch * layout.response_len
    modes = {"fp32": (None, False)}
    if device.type == "cuda":
        modes["fp32 + TF32 matmuls"] = (None, True)
    modes["bf16 autocast"] = (torch.bfloat16, device.type == "cuda")
    native = device_capabilities(device).native_bf16
    out: dict[str, Any] = {"preset": sizes.gen_preset, "parameters": sum(p.numel() for p in model.parameters()),
                           "batch": sizes.gen_batch, "prompt_tokens": layout.prompt_len,
                           "generated_tokens_per_sample": layout.response_len, "native_bf16": native,
                           "policy": precision_policy(device, Capabilities(device.type, native)).describe(),
                           "cost": preset_cost(PRESETS[sizes.gen_preset], vocab.size, length).as_dict(), "modes": {}}
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, (dtype, allow_tf32) in modes.items():
            torch.backends.cuda.matmul.allow_tf32 = allow_tf32
            best = float("inf")
            for repeat in range(sizes.gen_repeats + 1):  # the first is a warm-up
                _sync(device)
                began = time.perf_counter()
                with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                    generate_responses(model, prompts, layout, temperature=1.0, top_k=100, seed=repeat)
                _sync(device)
                if repeat:
                    best = min(best, time.perf_counter() - began)
            out["modes"][name] = {"seconds": round(best, 4), "tokens_per_second": round(generated / best, 1)}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    out["bf16_speedup_over_fp32"] = round(out["modes"]["fp32"]["seconds"] / out["modes"]["bf16 autocast"]["seconds"], 2)
    return out


# -- 2. rewards ------------------------------------------------------------------------------
def stage_rewards(sizes: Sizes, device) -> dict[str, Any]:
    import torch

    from rlvr_envs.video import metrics

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


def stage_text(sizes: Sizes, args, device, work: Path) -> dict[str, Any]:
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    from rlvr_envs.core.sizing import preset_cost
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import compare_reports, evaluate_accuracy
    from trainers import grpo, sft
    from trainers.grpo_config import GRPOConfig

    assets = Path(__file__).resolve().parents[1] / "rlvr_envs" / "assets" / "text"
    for name in ("text_sft", "text_grpo"):
        shutil.rmtree(work / name, ignore_errors=True)
    probe = task_from_env_id(TEXT_ENV, split="train")
    tokens = probe.max_prompt_len + probe.max_response_len
    cost = preset_cost(sft.TEXT_PRESETS[sizes.text_preset], len(probe.tokenizer), tokens)
    sft_steps = steps_for(sizes.text_sft_seconds, cost, sizes.text_batch * tokens, sizes)
    began = time.perf_counter()
    sft_result = sft.main(sft.Args(env_id=TEXT_ENV, from_scratch=True, preset=sizes.text_preset, balance=True,
                                   prompt_loss=True, steps=sft_steps, batch_size=sizes.text_batch, lr=1e-3,
                                   train_size=sizes.text_train_size, eval_size=sizes.text_eval,
                                   eval_every=10**9, checkpoint_every=10**9, max_seconds=sizes.text_sft_seconds,
                                   out=str(work / "text_sft"), threads=args.threads, seed=0))
    sft_seconds = time.perf_counter() - began
    began = time.perf_counter()
    grpo_card = grpo.main(GRPOConfig(env_id=TEXT_ENV, model=sft_result["final_model"], out=str(work / "text_grpo"),
                                     steps=sizes.max_steps, max_seconds=sizes.text_grpo_seconds,
                                     group_size=sizes.text_group,
                                     prompts_per_step=sizes.text_prompts, max_completion_len=sizes.text_completion,
                                     balance=True, lr=1e-5, eval_windows=sizes.text_eval, eval_every=10**9,
                                     checkpoint_every=10**6, threads=args.threads, device=args.device, seed=0,
                                     **({"env_kwargs": (f"size={sizes.text_train_size}",)}
                                        if sizes.text_train_size else {})))
    grpo_seconds = time.perf_counter() - began

    held_out = task_from_env_id(TEXT_ENV, split="test")
    indices = list(range(min(sizes.text_eval, len(held_out))))
    changed = [held_out.transition(i).changed for i in indices]
    models = {f"shipped {name} (CPU)": assets / name for name in SHIPPED_TEXT}
    models |= {f"SFT {sizes.text_preset} (this run)": Path(sft_result["final_model"]),
               "GRPO (this run)": Path(grpo_card["final_model"])}
    reports, rows = {}, {}
    for name, directory in models.items():
        model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32).to(device).eval()
        reports[name] = evaluate_accuracy(model, held_out, indices, sizes.text_completion,
                                          batch_size=64 if device.type == "cuda" else 8, per_transition=True)
        rows[name] = _text_row(reports[name])
        del model
    reference = reports[f"shipped {SHIPPED_TEXT[0]} (CPU)"]
    paired = {name: compare_reports(reference, report, changed) for name, report in reports.items()
              if report is not reference}
    return {"preset": sizes.text_preset, "parameters": sft_result["parameters"], "cost": cost.as_dict(),
            "sft": {"planned_steps": sft_steps, "steps": sft_result["steps"], "seconds": round(sft_seconds, 1),
                    "train_loss": sft_result["train_loss"]},
            "grpo": {"steps": grpo_card["steps"], "seconds": round(grpo_seconds, 1), "group_size": sizes.text_group,
                     "prompts_per_step": sizes.text_prompts},
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


def stage_pusht(sizes: Sizes, args, device, work: Path, out: Path) -> dict[str, Any]:
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

    began = time.perf_counter()
    data = pusht_data(sizes, work)
    data_seconds = time.perf_counter() - began
    mle_out, grpo_out = work / "pusht_mle", work / "pusht_grpo"
    for folder in (mle_out, grpo_out):
        shutil.rmtree(folder, ignore_errors=True)
    mle_args = mle.Args(data=data, tokenizer=str(default_tokenizer_dir()), layout="single", out=str(mle_out),
                        preset=sizes.pusht_preset, batch_size=sizes.pusht_batch, lr=5e-4, warmup=50,
                        eval_windows=sizes.pusht_eval, checkpoint_every=10**9, threads=args.threads,
                        device=args.device, max_seconds=sizes.pusht_mle_seconds, seed=0).validate()
    probe = mle.build_task(mle_args, "test")
    tokens = probe.layout.prompt_len + probe.layout.response_len + 1
    cost = preset_cost(PRESETS[sizes.pusht_preset], probe.vocab.size, tokens)
    mle_args.steps = steps_for(sizes.pusht_mle_seconds, cost, sizes.pusht_batch * tokens, sizes, at_least=4)
    mle_args.eval_every = mle_args.steps
    mle_card = mle.main(mle_args)
    grpo_args = GRPOConfig(env_id=PUSHT_ENV, env_kwargs=("reward=mae", f"data_dir={data}"), model=str(mle_out),
                           out=str(grpo_out), steps=sizes.max_steps, max_seconds=sizes.pusht_grpo_seconds,
                           prompts_per_step=sizes.pusht_prompts, group_size=sizes.pusht_group, lr=5e-5,
                           eval_windows=sizes.pusht_eval, eval_every=10**6, checkpoint_every=10**6,
                           threads=args.threads, device=args.device, seed=0)
    grpo_card = grpo.main(grpo_args)
    held_out = build_held_out(grpo_args, device)
    baselines = {k: summarize(v) for k, v in score_baselines(held_out, held_out_indices(len(held_out),
                                                                                         sizes.pusht_eval)).items()}
    agreement_path = out / "planning_agreement"
    planning_agreement.main(["--models", f"mle={mle_out}", f"grpo={grpo_out}", "--episodes",
                             str(sizes.agreement_episodes), "--candidates", str(sizes.agreement_candidates),
                             "--top-k", str(max(1, sizes.agreement_candidates // 8)), "--device", args.device,
                             "--threads", str(args.threads), "--out", str(agreement_path)])
    agreement = json.loads(agreement_path.with_suffix(".json").read_text())
    return {"preset": sizes.pusht_preset, "parameters": mle_card["parameters"], "cost": cost.as_dict(),
            "data": {"episodes": sizes.pusht_episodes, "seconds": round(data_seconds, 1)},
            "mle": {"steps": mle_card["steps"], "planned_steps": mle_args.steps,
                    "seconds": mle_card["train_seconds_this_run"], "tokens_per_second": mle_card["tokens_per_second"],
                    "held_out": mle_card["held_out"]},
            "grpo": {"steps": grpo_card["steps"], "seconds": grpo_card["train_seconds_this_run"],
                     "start": grpo_card["start"], "final": grpo_card["final"]},
            "baselines": baselines, "held_out_transitions": grpo_card["held_out_transitions"],
            "planning_agreement": {"episodes": agreement["episodes"], "candidates": agreement["candidates"],
                                   "summary": agreement["summary"]}}


# -- the transfer ------------------------------------------------------------------------------
#: parts of wheels the check never imports (pygame's docs, examples and tests are 5.8 MB of its 14)
SLIM = ("pygame/docs/", "pygame/examples/", "pygame/tests/")


def slim_wheels(folder: Path) -> int:
    """Rewrite the wheels in `folder` without `SLIM`'s folders (and their RECORD lines), so the
    device machine's 64 MiB working-tree limit holds the project and its missing packages.
    Returns the bytes saved."""
    import zipfile

    saved = 0
    for wheel in sorted(Path(folder).glob("*.whl")):
        with zipfile.ZipFile(wheel) as source:
            items = source.infolist()
            if not any(i.filename.startswith(SLIM) for i in items):
                continue
            slim = wheel.with_suffix(".slim")
            with zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as target:
                for item in items:
                    if item.filename.startswith(SLIM):
                        continue
                    data = source.read(item)
                    if item.filename.endswith(".dist-info/RECORD"):
                        lines = data.decode("utf-8").splitlines(keepends=True)
                        data = "".join(line for line in lines if not line.startswith(SLIM)).encode("utf-8")
                    target.writestr(item, data)
        before = wheel.stat().st_size
        slim.replace(wheel)
        saved += before - wheel.stat().st_size
    return saved


# -- the run -----------------------------------------------------------------------------------
STAGES = {"generation": lambda s, a, d, w, o: stage_generation(s, d),
          "rewards": lambda s, a, d, w, o: stage_rewards(s, d),
          "text": lambda s, a, d, w, o: stage_text(s, a, d, w),
          "pusht": lambda s, a, d, w, o: stage_pusht(s, a, d, w, o)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rlvr_envs.core.device import add_device_argument, setup_device

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_device_argument(parser)
    parser.add_argument("--tiny", action="store_true", help="the same code path at CPU-test size (about a minute)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {','.join(STAGES)}")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS), help="where gpu_check.json and gpu_check.md go")
    parser.add_argument("--work", default="runs/gpu_check", help="models and data of the training stages")
    parser.add_argument("--slim-wheels", metavar="DIR", help="only rewrite DIR's wheels for the device transfer "
                        "(docs/scale_out.md), then exit")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.slim_wheels:
        if not Path(args.slim_wheels).is_dir():
            parser.error(f"--slim-wheels {args.slim_wheels}: no such folder (download the wheels first)")
        print(f"saved {slim_wheels(Path(args.slim_wheels)) / 2**20:.1f} MiB")
        return {}
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f"--stages: unknown {sorted(unknown)}; choose from {','.join(STAGES)}")
    run = setup_device(args.device, threads=args.threads)
    sizes = TINY if args.tiny else Sizes()
    out, work = Path(args.out), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report = Report(out, argv, args, sizes, run.device)
    report.data["precision"] = run.describe()
    began = time.perf_counter()
    for name in stages:
        started = time.perf_counter()
        print(f"[gpu_check] stage {name} ({started - began:.0f} s in)", flush=True)
        try:
            result = STAGES[name](sizes, args, run.device, work, out)
        except Exception as exc:  # a failed stage is recorded; the later ones still run
            result = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"[gpu_check] stage {name} failed: {result['error']}", flush=True)
        result["stage_seconds"] = round(time.perf_counter() - started, 1)
        report.stage(name, result)
    report.data["total_seconds"] = round(time.perf_counter() - began, 1)
    report.stage("_total", {"seconds": report.data["total_seconds"]})
    print(markdown(report.data))
    return report.data


# -- Markdown -----------------------------------------------------------------------------------
def _f(value: Any, digits: int = 4) -> str:
    return "-" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def _interval(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair and not any(np.isnan(pair)) else "-"


def markdown(data: dict[str, Any]) -> str:
    machine = data["machine"]
    lines = ["# GPU check", "", f"`{data['command']}` on {machine['device']} ({machine['platform']}, "
             f"{machine['cpu_count']} CPUs, torch {machine['torch']}), commit {data.get('git_commit') or '?'}, "
             f"{data['started']} to {data.get('ended', '?')}; load {data.get('load_before')} -> "
             f"{data.get('load_after')}; {data.get('precision', '')}.", ""]
    stages = data["stages"]
    for name, result in stages.items():
        if name == "_total":
            continue
        lines += [f"## {name} ({result.get('stage_seconds', '?')} s)", ""]
        if "error" in result:
            lines += [f"failed: `{result['error']}`", ""]
            continue
        if name == "generation":
            lines += [f"Preset {result['preset']} ({result['parameters'] / 1e6:.1f}M), batch {result['batch']}, "
                      f"prompt {result['prompt_tokens']} tokens, {result['generated_tokens_per_sample']} generated "
                      f"per sample, KV cache; policy: {result['policy']}.", "",
                      "| mode | seconds | tokens/s |", "|---|---:|---:|"]
            lines += [f"| {mode} | {v['seconds']} | {v['tokens_per_second']} |" for mode, v in result["modes"].items()]
            lines += ["", f"bf16 / fp32 speed-up: {result['bf16_speedup_over_fp32']}x", ""]
        elif name == "rewards":
            lines += [f"-(L1 + LPIPS) of {result['frames']} frames at {result['resolution'][0]}x"
                      f"{result['resolution'][1]} ({result['lpips_trunk']}): batched {result['batched_seconds']} s "
                      f"({result['frames_per_second_batched']} frames/s), per frame {result['per_frame_seconds']} s: "
                      f"**{result['speedup']}x** (goal >= {result['goal_speedup']}x); largest difference between "
                      f"the two {result['max_reward_difference']:.2e}.", ""]
        elif name == "text":
            lines += [f"SFT of the {result['preset']} preset ({result['parameters'] / 1e6:.1f}M): "
                      f"{result['sft']['steps']} steps (planned {result['sft']['planned_steps']}) in "
                      f"{result['sft']['seconds']} s; GRPO {result['grpo']['steps']} steps of "
                      f"{result['grpo']['prompts_per_step']} x {result['grpo']['group_size']} in "
                      f"{result['grpo']['seconds']} s. Held-out greedy exact accuracy on "
                      f"{result['held_out_transitions']} transitions (95% Wilson intervals):", "",
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
            lines += [f"World model preset {result['preset']} ({result['parameters'] / 1e6:.1f}M) on "
                      f"{result['data']['episodes']} generated episodes: MLE {mle['steps']} steps in "
                      f"{mle['seconds']} s ({mle['tokens_per_second']} tokens/s), GRPO {grpo_['steps']} steps in {grpo_['seconds']} s. "
                      f"Held-out MAE ({result['held_out_transitions']} transitions):", "",
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
    lines.append(f"Total {data.get('total_seconds', '?')} s.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
