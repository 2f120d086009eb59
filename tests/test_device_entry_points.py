"""Every entry point that runs a model takes `--device` (one policy: rlvr_envs.core.device), and
the models, tokenizers and reward networks of the video ids and learned simulators land on it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

#: trainers whose arguments are a dataclass (`parse_args(argv)`)
TRAINERS = ("trainers.train_video_world_model", "trainers.train_frame_tokenizer", "trainers.train_compressed_tokenizer",
            "trainers.grpo", "trainers.rollout_prompts", "trainers.demo")
#: arguments a trainer needs beyond --device to parse (the world-model trainer checks its tokenizer folder up front)
NEEDS = {"trainers.train_video_world_model": ["--tokenizer", str(Path(__file__).parents[1] / "rlvr_envs" / "assets" / "video"
                                                                 / "pusht_frame_tokenizer")]}
#: `rlvr-world` commands that run a model and parse their own options (`rlvr-world demo` hands its options to
#: `python -m trainers.demo`, which TRAINERS covers)
COMMANDS = {"plan": ["--out", "x"], "policy-eval": ["--out", "x"]}
#: benchmarks that run a model (argparse inside `main(argv)`)
BENCHMARKS = ("experiments.video_generation", "experiments.video_world_models", "planning_agreement",
              "experiments.learned_sim_fidelity", "experiments.grpo_pusht", "experiments.best_of_n_scaling",
              "experiments.repetition_table", "rl_algorithms", "experiments.grpo_ablations",
              "experiments.compressed_tokenizer", "metrics_throughput", "gpu_check", "web_agent")


@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("module", TRAINERS)
def test_trainers_take_device_and_refuse_an_absent_one(module, no_cuda, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default --out folders (runs/demo, ...) are new here, whatever the checkout holds
    trainer = importlib.import_module(module)
    assert trainer.parse_args(["--device", "cpu", *NEEDS.get(module, [])]).device == "cpu"
    config = trainer.GRPOConfig if module == "trainers.grpo" else trainer.Args  # GRPO's config sits beside it
    assert config().device == "auto"
    with pytest.raises(SystemExit) as stop:  # on the command line: a one-line usage error
        trainer.parse_args(["--device", "cuda:1"])
    assert stop.value.code == 2
    args = config(device="cuda:1")  # called from code: the config's check refuses it before any work
    with pytest.raises(ValueError, match="no CUDA device is visible"):
        args.resolved() if module == "trainers.demo" else args.validate()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_commands_take_device_and_refuse_a_bad_one_in_one_line(command, no_cuda, capsys):
    from rlvr_envs.cli import build_parser

    argv = [command, "--device", "cpu", *COMMANDS[command]]
    assert build_parser(argv).parse_args(argv).device == "cpu"
    argv = [command, "--device", "cuda", *COMMANDS[command]]
    with pytest.raises(SystemExit) as stop:
        build_parser(argv).parse_args(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--device" in error and "no CUDA device is visible" in error and "Traceback" not in error


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmarks_that_run_models_take_device(name, capsys):
    benchmark = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as stop:
        benchmark.main(["--help"])
    assert stop.value.code == 0
    assert "--device" in capsys.readouterr().out


def _devices(module) -> set[str]:
    return {str(t.device) for t in [*module.parameters(), *module.buffers()]}


def test_video_env_puts_tokenizer_lpips_and_world_model_on_its_device():
    import gymnasium as gym
    import numpy as np

    import rlvr_envs  # noqa: F401
    from rlvr_envs.video.task import shipped_world_model
    from rlvr_envs.video.world_model import generate_responses

    env = gym.make("RLVRWorld/PushT-SingleStep-v0", device="cpu", reward="l1_lpips", lpips_random_backbone_seed=0)
    task = env.unwrapped.task
    assert str(task.device) == "cpu"
    assert _devices(task.tokenizer) == {"cpu"} and str(task.lpips.device) == "cpu"
    model = shipped_world_model(task)
    assert _devices(model) == {"cpu"}
    prompts = np.stack([task.prompt_ids(0)] * 2)
    responses = generate_responses(model, prompts, task.layout, temperature=1.0, top_k=10, seed=3)
    again = generate_responses(model, prompts, task.layout, temperature=1.0, top_k=10, seed=3)
    assert np.array_equal(responses, again)  # the on-device generator is seeded
    results = task.verify([0, 0], list(responses))  # decoding and LPIPS on the task's device, numbers back
    assert all(r.parsed and np.isfinite(r.reward) and "lpips" in r.metrics for r in results)
    with pytest.raises(ValueError, match="not a device"):
        gym.make("RLVRWorld/PushT-SingleStep-v0", device="gpu", reward="mae")


def test_learned_simulator_puts_model_and_tokenizer_on_its_device():
    from rlvr_envs.simulators import LearnedPushTSim

    sim = LearnedPushTSim(reward="none", device="cpu")
    assert _devices(sim.model) == {"cpu"} and _devices(sim.tokenizer) == {"cpu"}


def test_decode_keeps_the_device_only_when_asked():
    import numpy as np
    import torch

    from rlvr_envs.video.task import _load_tokenizer, default_tokenizer_dir

    tokenizer = _load_tokenizer(str(default_tokenizer_dir()), "cpu")
    codes = np.zeros((2, tokenizer.config.tokens_per_frame), dtype=np.int64)
    assert torch.equal(tokenizer.decode(codes), tokenizer.decode(codes, keep_device=True))


def test_gpu_check_tiny_runs_every_stage_on_cpu_and_writes_json_and_markdown(tmp_path):
    """`benchmarks/gpu_check.py --device cpu --tiny`: the H200 script's code path, at test size."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": str(repo)}
    command = [sys.executable, "-m", "benchmarks.gpu_check", "--device", "cpu", "--tiny", "--threads", "1",
               "--stages", "ceilings,ship,speed,rewards,text,pusht,web", "--out", str(tmp_path / "out"),
               "--work", str(tmp_path / "work")]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    stages = report["stages"]
    assert not [name for name, result in stages.items() if "error" in result or "skipped" in result], stages
    assert list(stages) == ["ceilings", "ship", "speed", "rewards", "text", "pusht", "web", "_total"]
    assert report["deadline_seconds"] == 600 + 300 + 300  # each optional stage brings its own seconds
    assert stages["ceilings"]["matmul_flops"] > 0 and stages["ceilings"]["copy_bytes_per_second"] > 0
    decoding = stages["speed"]["decoding"]
    assert {"eager", "static"} <= set(decoding["engines"]) and decoding["greedy_tokens_equal"] == 1.0
    assert 0 < decoding["engines"]["static"]["share_of_memory_floor"]
    assert stages["speed"]["training"]["modes"]["eager"]["mfu"] > 0
    assert stages["rewards"]["max_reward_difference"] < 1e-5  # batched and per-frame rewards agree
    held_out = stages["text"]["held_out"]
    assert len(held_out) == 4 and all(len(row["wilson_changed"]) == 2 for row in held_out.values())
    assert stages["text"]["sft"]["compiled"] is False  # no compile on a CPU
    assert stages["text"]["sft"]["first_step_seconds"] > 0 and stages["text"]["sft"]["mfu_after_first_step"] > 0
    pusht = stages["pusht"]
    assert {"copy_last_frame_tokens", "tokenizer_ceiling"} <= set(pusht["baselines"])
    assert "true_sim" in pusht["planning_agreement"]["summary"] and pusht["grpo"]["steps"] >= 1
    assert pusht["grpo"]["median_step_seconds"] > 0 and pusht["grpo"]["first_step_seconds"] > 0
    assert pusht["mle"]["mfu"] > 0
    assert pusht["grpo"]["timed_steps"] >= 5  # the median step is over >= 5 steps after the first
    for kind in ("pusht", "text"):  # the shipped-size models: trained by end time, undertrained at tiny size
        row = stages["ship"][kind]
        assert row["undertrained"] and row["sequences"] < row["shipped_sequences"]
        assert row["bundle"]["file"] == f"ship_{kind}_model.safetensors"
    assert stages["ship"]["pusht"]["grpo"]["timed_steps"] >= 5
    assert all(stage["stage_seconds"] <= stage["budget_seconds"] + 5 for stage in  # + the kill's grace
               (stages[name] for name in ("ceilings", "ship", "speed", "rewards", "text", "pusht", "web")))
    web = stages["web"]  # SFT, GRPO from it, then the four agents on the same episodes
    assert web["grpo"]["steps"] >= 1 and web["sft"]["mfu_estimate"] > 0
    assert list(web["agents"]["summary"]) == ["policy", "base", "rlvr", "oracle"] and not web["agents"]["skipped"]
    assert all(len(row["ci95"]) == 2 and row["episodes"] == 2 for row in web["agents"]["summary"].values())
    assert "| oracle |" in (tmp_path / "out" / "gpu_check.md").read_text()
    # what the device run brings back: the report and one bundle per model, within the limits; each loads
    files = sorted(p.name for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert files == ["gpu_check.json", "gpu_check.md", "ship_pusht_model.safetensors", "ship_text_model.safetensors"]
    assert report["bring_back"]["within_limits"] and report["bring_back"]["files"] == 4
    from transformers import AutoModelForCausalLM

    from rlvr_envs.core import bundle
    from rlvr_envs.video.world_model import load_world_model

    pusht_model = bundle.unpack(tmp_path / "out" / "ship_pusht_model.safetensors", tmp_path / "pusht_model")
    assert load_world_model(str(pusht_model)).card["ship"]["undertrained"]
    text_model = bundle.unpack(tmp_path / "out" / "ship_text_model.safetensors", tmp_path / "text_model")
    assert AutoModelForCausalLM.from_pretrained(text_model).config.num_hidden_layers >= 1
    assert (text_model / "tokenizer.json").is_file()
    assert "# GPU check" in (tmp_path / "out" / "gpu_check.md").read_text()
    from benchmarks import gpu_runs  # a run committed under benchmarks/results/gpu_check/ renders on the results page

    line = gpu_runs._gpu_run({**report, "_file": "gpu_check/tiny/gpu_check.json"})
    assert "finished ceilings, ship, speed" in line and "shipped-size models retrained" in line, line


def test_gpu_check_sets_grpo_seconds_aside_before_the_first_trainer():
    """Two H200 runs left GRPO 1 s and 0 s after a long first trainer: its seconds, loading and
    evaluation are now kept out of the first trainer's, and GRPO is skipped only when both cannot fit."""
    from benchmarks.gpu_check import grpo_limit, split_training

    assert split_training(200.0, 0.75, 20.0, 25.0) == (125.0, 50.0)  # the share, overhead kept out
    assert split_training(100.0, 0.9, 20.0, 10.0) == (70.0, 20.0)  # a small share is raised to the minimum
    assert split_training(60.0, 0.75, 20.0, 25.0) == (60.0, 0.0)  # 15 s left for SFT: no GRPO, SFT gets all
    assert grpo_limit(50.0, 80.0, 20.0) == (50.0, None)  # what was set aside
    assert grpo_limit(50.0, 30.0, 20.0) == (30.0, None)  # the first trainer overran: fewer seconds
    assert grpo_limit(50.0, 12.0, 20.0) == (0.0, "12 s left for it, 20 s needed")
    assert grpo_limit(0.0, 80.0, 0.0)[0] == 0.0  # nothing was set aside: skipped, whatever is left


def test_gpu_check_deadline_shrinks_or_skips_a_stage_that_would_overrun():
    """The deadline logic on a fake clock: budgets shrink so later stages keep their minimums, a
    stage that no longer fits is skipped with the reason, a failed stage does not stop the rest."""
    from benchmarks.gpu_check import Deadline, run_stages

    now = [0.0]
    deadline = Deadline(100.0, clock=lambda: now[0])
    plans = {"a": (40.0, 10.0), "b": (50.0, 30.0), "c": (30.0, 20.0), "d": (10.0, 5.0)}
    spent = {"a": 45.0, "b": 31.0, "c": 0.0, "d": 1.0}  # a overruns its 40 s budget by 5 s, b by 1 s
    budgets, recorded = {}, {}

    def call(name, budget):
        budgets[name] = budget
        now[0] += spent[name]
        if name == "d":
            raise RuntimeError("boom")
        return {"ran": True}

    run_stages(list(plans), plans, deadline, call, lambda name, result: recorded.__setitem__(name, result))
    assert budgets["a"] == 40.0  # planned; 100 - (30 + 20 + 5) = 45 would allow it
    assert budgets["b"] == 30.0  # 55 left - (20 + 5) kept for c and d: shrunk from 50 to 30
    # c: 24 left - 5 kept for d = 19 < its minimum 20
    assert "c" not in budgets and "skipped" in recorded["c"] and "20 s needed" in recorded["c"]["skipped"]
    assert recorded["d"]["error"] == "RuntimeError: boom" and recorded["d"]["budget_seconds"] == 10.0
    assert recorded["a"]["stage_seconds"] == 45.0 and recorded["b"]["budget_seconds"] == 30.0
    assert Deadline(10.0, clock=lambda: 0.0).budget(5.0, 1.0, 0.0) == 5.0


def test_language_grpo_names_the_way_to_pick_a_gpu(monkeypatch):
    """TRL places the model itself, so `cuda:N` is refused with the way that works."""
    import torch

    from trainers.grpo import main
    from trainers.grpo_config import GRPOConfig as Args

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES=1 and --device cuda"):
        main(Args(env_id="RLVRWorld/MiniTextWorld-v0", model="some/model", device="cuda:1"))


def test_gpu_check_web_set_brings_its_own_deadline_and_the_ceilings():
    from benchmarks.gpu_check import Sizes, stage_plan

    sizes = Sizes()
    assert stage_plan(["ceilings", "text"], sizes) == (["ceilings", "text"], 480.0)
    assert stage_plan(["web"], sizes) == (["ceilings", "web"], 240.0)  # MFU needs the measured matmul rate
    assert stage_plan(["ceilings", "pusht", "web"], sizes) == (["ceilings", "pusht", "web"], 180.0 + 240.0)
    assert stage_plan(["ceilings", "ship", "pusht"], sizes) == (["ceilings", "ship", "pusht"], 480.0 + 180.0)
    assert stage_plan(["ceilings"], sizes) == (["ceilings"], 480.0)


def test_gpu_check_puts_ship_first_after_the_ceilings_and_its_default_fits_the_deadline():
    """`ship` is what a GPU window must bring back: the default set starts with it, the larger PushT model is
    optional, and the default set's planned seconds fit the 480 s deadline."""
    from benchmarks.gpu_check import SECOND_SET, STAGES, Sizes

    sizes = Sizes()
    default = [name for name in STAGES if name not in SECOND_SET]
    assert default[:2] == ["ceilings", "ship"] and "pusht" in SECOND_SET
    plans = {name: planned for name, planned, _ in sizes.plans}
    assert sum(plans[name] for name in default) <= sizes.deadline


def test_gpu_check_deadline_fires_its_hard_stop():
    """The hard stop: `Deadline.arm` calls back once the deadline has passed (the check then records
    the running stage as stopped and exits with DEADLINE_EXIT)."""
    import threading

    from benchmarks.gpu_check import Deadline

    fired = threading.Event()
    deadline = Deadline(0.01)
    deadline.arm(fired.set)
    assert fired.wait(timeout=30) and deadline.remaining() <= 0


def test_a_gpu_check_stage_killed_at_its_end_time_leaves_a_valid_result(tmp_path):
    """A stage runs in its own process group and is killed at its end time (+ a short grace): the check gets
    back a result saying so, with the parts the stage had finished, and no process of it is left."""
    import os

    from benchmarks.gpu_check import run_stage_process

    (tmp_path / "work").mkdir()
    argv = ["--device", "cpu", "--tiny", "--threads", "1", "--out", str(tmp_path / "out"), "--work",
            str(tmp_path / "work")]
    seen = []
    # the tiny ship stage trains two models (tens of seconds on a CPU): 2 s cannot hold it
    result = run_stage_process("ship", 2.0, argv, tmp_path / "work", {}, hard_limit=600.0, started=seen.append)
    assert "stopped" in result and "killed at its end time" in result["stopped"], result
    assert "error" not in result
    with pytest.raises(ProcessLookupError):
        os.killpg(seen[0].pid, 0)  # the whole group is gone


def test_gpu_check_sizes_an_evaluation_from_one_timed_batch():
    from benchmarks.gpu_check import evaluation_size

    assert evaluation_size(2.0, 128, 512, models=4, seconds=100.0) == 512  # 12 batches fit: all 4 wanted
    assert evaluation_size(2.0, 128, 512, models=4, seconds=20.0) == 256  # 2 batches each
    assert evaluation_size(2.0, 128, 512, models=4, seconds=1.0) == 128  # never fewer than one batch
    assert evaluation_size(0.1, 128, 100, models=1, seconds=60.0) == 100  # never more than wanted


@pytest.mark.slow
def test_the_ship_stage_s_pusht_mle_learns_on_a_cpu(tmp_path):
    """Through the ship stage's own MLE arguments (preset, tokenizer, learning rate, warmup; a CPU batch):
    150 steps bring the loss far below an untrained model's ln(vocabulary) (a GPU run once shipped a model at
    ln(1024), untrained; this one reaches ~0.5 ln V), and the held-out frames it predicts all parse."""
    import json
    import math
    from dataclasses import replace

    from benchmarks.gpu_check import TINY, ship_mle_args
    from rlvr_envs.video.task import embedded_heldout_dir
    from trainers import train_video_world_model as mle

    sizes = replace(TINY, ship_pusht_batch=8, trainer_eval=4)
    args = ship_mle_args(sizes, embedded_heldout_dir(12, 64), tmp_path / "mle", device="cpu", threads=1,
                         end_at=0.0, compiled=False)
    args.steps = 150
    card = mle.main(args)
    losses = [r["loss"] for r in map(json.loads, (tmp_path / "mle" / "log.jsonl").read_text().splitlines())
              if "loss" in r]
    vocabulary = json.loads((tmp_path / "mle" / "config.json").read_text())["vocab_size"]
    assert card["steps"] == 150 and losses[-1] < 0.6 * math.log(vocabulary), (losses, vocabulary)
    assert card["held_out"]["model"]["parsed"] == 1.0
