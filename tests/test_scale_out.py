"""Scale-out on accelerate: a 2-process run (2 gloo CPU processes) equals a
1-process run at the same global batch, for the video MLE trainer and the video GRPO loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: 2-process and 1-process fp32 weights after a few AdamW steps differ only by the order of float sums in
#: DDP's all-reduce, which Adam's normalisation amplifies on near-zero gradients: we require the largest
#: difference to stay below 2% of the largest change the last optimizer step made (measured: 0.5%)
RELATIVE_TOLERANCE = 0.02


def launch(module: str, argv: list[str], processes: int) -> None:
    """`accelerate launch --multi_gpu --num_processes N` (gloo on a CPU; `--cpu` would run one), or plain python."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": str(REPO)}
    if processes == 1:
        command = [sys.executable, "-m", module, *argv]
    else:
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                   str(processes), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                   "--main_process_port", "0", "-m", module, *argv]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def max_weight_difference(a: Path, b: Path) -> float:
    from safetensors.torch import load_file

    left, right = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert left.keys() == right.keys()
    return max(float((left[k].float() - right[k].float()).abs().max()) for k in left)


def test_video_mle_two_processes_equal_one_at_the_same_global_batch(tmp_path):
    import json
    import shutil

    from tests.samples import generated_deformable_dir, untrained_tokenizer_dir

    common = ["--dataset", "rope", "--data", generated_deformable_dir("rope"), "--tokenizer",
              untrained_tokenizer_dir(64, 64), "--layout", "single", "--preset", "tiny", "--steps", "3",
              "--batch-size", "4", "--lr", "1e-2", "--warmup", "1", "--eval-windows", "2", "--eval-every", "1000",
              "--checkpoint-every", "2", "--threads", "1", "--device", "cpu", "--precision", "fp32"]
    runs = {n: tmp_path / f"p{n}" for n in (1, 2)}
    for n, out in runs.items():
        launch("trainers.train_video_world_model", [*common, "--out", str(out)], n)
    # the fp32 checkpoints after 2 steps hold the same weights, well inside one step's change
    one_step = max_weight_difference(runs[1] / "checkpoint", runs[1])  # step 2 -> step 3
    assert one_step > 1e-3
    assert max_weight_difference(runs[1] / "checkpoint", runs[2] / "checkpoint") < RELATIVE_TOLERANCE * one_step
    card = json.loads((runs[2] / "card.json").read_text(), parse_constant=lambda name: pytest.fail(f"card has {name}"))
    assert card["processes"] == 2 and card["steps"] == 3
    assert json.loads((runs[1] / "card.json").read_text())["processes"] == 1
    # --resume at another world size: the 2-process checkpoint finished by 1 process equals the 1-process run
    resumed = tmp_path / "resumed"
    shutil.copytree(runs[2] / "checkpoint", resumed / "checkpoint")
    launch("trainers.train_video_world_model", [*common, "--out", str(resumed), "--resume"], 1)
    assert max_weight_difference(runs[1], resumed) < RELATIVE_TOLERANCE * one_step + 1e-2  # bf16 on disk


def test_video_grpo_two_processes_equal_one_at_the_same_global_batch(tmp_path):
    """Each process samples its share of the step's prompts (call c seeded alike wherever it runs,
    `--generation-batch 1`) and scores it; DDP averages the gradients weighted by kept sequences."""
    import json

    import torch
    from safetensors.torch import load_file

    from rlvr_envs.core.factory import build_task
    from rlvr_envs.video.task import embedded_heldout_dir
    from rlvr_envs.video.world_model import build_world_model

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout="single", reward="mae")
    start = tmp_path / "start"
    build_world_model(task.vocab, task.max_prompt_len + task.max_response_len, preset="tiny").save_pretrained(start)
    data = embedded_heldout_dir(task.config.episodes, task.tokenizer.config.resolution[0])
    common = ["--env-id", "RLVRWorld/PushT-SingleStep-v0", "--env-kwargs", "reward=mae", f"data_dir={data}", "size=24",
              "--model", str(start), "--steps", "2", "--prompts-per-step", "2", "--group-size", "3",
              "--generation-batch", "1", "--lr", "1e-2", "--eval-windows", "2", "--eval-every", "100",
              "--threads", "1", "--device", "cpu", "--precision", "fp32"]
    runs = {n: tmp_path / f"p{n}" for n in (1, 2)}
    for n, out in runs.items():
        launch("trainers.grpo", [*common, "--out", str(out)], n)
    cards = {n: json.loads((out / "card.json").read_text()) for n, out in runs.items()}
    assert cards[1]["processes"] == 1 and cards[2]["processes"] == 2
    logs = {n: [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()] for n, out in runs.items()}
    for one, two in zip(logs[1], logs[2]):  # the same samples and rewards on both
        assert one["reward"] == pytest.approx(two["reward"], abs=1e-6) and one["zero_spread"] == two["zero_spread"]
    initial = load_file(str(start / "model.safetensors"))
    one, two = load_file(str(runs[1] / "model.safetensors")), load_file(str(runs[2] / "model.safetensors"))
    moved = max(float((one[k].float() - initial[k].float()).abs().max()) for k in one)
    assert moved > 1e-3  # it trained
    # saved in bf16. Almost every weight is equal up to one bf16 rounding step; Adam turns float-noise-sized
    # gradients (|g| ~ eps) into visible steps, so a handful of weights (measured: 6 of 0.5M) differ more,
    # still by under 5% of the largest change training made
    beyond, total, largest = 0, 0, 0.0
    for key in one:
        a, b = one[key].float(), two[key].float()
        beyond += int(((a - b).abs() > a.abs() * 2.0 ** -7 + 1e-6).sum())
        total += a.numel()
        largest = max(largest, float((a - b).abs().max()))
    assert beyond / total < 1e-4 and largest < 0.05 * moved, (beyond, total, largest, moved)
    assert torch.isfinite(torch.tensor(cards[2]["final"]["sampled"]["mae"]))


CONFIGS = {"ddp_8gpu.yaml": ("MULTI_GPU", 1, 8), "ddp_multinode.yaml": ("MULTI_GPU", 2, 16),
           "fsdp_8gpu.yaml": ("FSDP", 1, 8), "deepspeed_zero2.yaml": ("DEEPSPEED", 1, 8),
           "deepspeed_zero3.yaml": ("DEEPSPEED", 1, 8)}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shipped_accelerate_configs_parse_with_accelerates_own_loader(name):
    """Each config loads with `accelerate launch`'s own reader (unknown top-level keys fail there) and
    each FSDP/DeepSpeed key is an option `accelerate launch` knows (deepspeed itself is not installed)."""
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import launch_command_parser

    path = REPO / "configs" / "accelerate" / name
    config = ClusterConfig.from_yaml_file(str(path))
    kind, machines, processes = CONFIGS[name]
    assert str(getattr(config.distributed_type, "value", config.distributed_type)) == kind
    assert (config.num_machines, config.num_processes) == (machines, processes)
    options = {o for action in launch_command_parser()._actions for o in action.option_strings}
    nested = {**(config.fsdp_config or {}), **(config.deepspeed_config or {})}
    assert all(f"--{key}" in options for key in nested), sorted(k for k in nested if f"--{k}" not in options)
    if kind == "FSDP":
        import transformers

        assert hasattr(transformers.models.llama.modeling_llama, nested["fsdp_transformer_layer_cls_to_wrap"])
    if kind == "DEEPSPEED":
        assert nested["zero_stage"] in (2, 3)
    assert sorted(p.name for p in (REPO / "configs" / "accelerate").glob("*.yaml")) == sorted(CONFIGS)


def test_our_loops_refuse_engines_they_do_not_run_on(monkeypatch):
    """FSDP/DeepSpeed launches of the video loops fail at start, naming the DDP configs."""
    import accelerate

    from trainers import distributed

    class Sharded:
        distributed_type = "FSDP"
        device = "cpu"

        def __init__(self, **kwargs):
            pass

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(accelerate, "Accelerator", Sharded)
    with pytest.raises(ValueError, match="runs under DDP only"):
        distributed.start_run("cpu", "fp32")


def test_frame_tokenizer_two_processes_equal_one(tmp_path):
    """The tokenizer trainers run under the same DDP helper (reconstruct wrapped as the forward)."""
    from tests.samples import generated_deformable_dir

    common = ["--dataset", "rope", "--data", generated_deformable_dir("rope"), "--steps", "3", "--batch-size", "4",
              "--eval-frames", "8", "--threads", "1", "--device", "cpu"]
    runs = {n: tmp_path / f"p{n}" for n in (1, 2)}
    for n, out in runs.items():
        launch("trainers.train_frame_tokenizer", [*common, "--out", str(out)], n)
    from safetensors.torch import load_file

    one, two = (load_file(str(runs[n] / "model.safetensors")) for n in (1, 2))
    largest = max(float((one[k] - two[k]).abs().max()) for k in one)
    assert largest < 1e-4, largest  # fp32 weights after 3 AdamW steps (measured: 2e-6)


def test_use_vllm_options_are_grpo_config_fields_and_need_vllm(monkeypatch):
    import dataclasses
    import importlib.util

    from trl import GRPOConfig, RLOOConfig

    from trainers.grpo_config import GRPOConfig as Args
    from trainers.grpo_language import vllm_kwargs

    assert vllm_kwargs(Args()) == {}
    for mode in ("colocate", "server"):
        kwargs = vllm_kwargs(Args(use_vllm=True, vllm_mode=mode))
        assert kwargs["use_vllm"] is True and kwargs["vllm_mode"] == mode
        for config in (GRPOConfig, RLOOConfig):
            assert set(kwargs) <= {f.name for f in dataclasses.fields(config)}
    assert "vllm_server_port" in vllm_kwargs(Args(use_vllm=True, vllm_mode="server"))
    static = vllm_kwargs(Args(generation_cache="static"))  # TRL's own field: transformers' static KV cache
    assert static == {"cache_implementation": "static"} and {"cache_implementation"} <= {
        f.name for f in dataclasses.fields(GRPOConfig)}
    with pytest.raises(ValueError, match="'dynamic' or 'static'"):
        Args(generation_cache="paged").validate()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else object())
    with pytest.raises(ValueError, match="needs the vllm package"):
        Args(use_vllm=True).validate()
    with pytest.raises(ValueError, match="'colocate' or 'server'"):
        Args(vllm_mode="remote").validate()
