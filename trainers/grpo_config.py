"""The arguments of `trainers.grpo`, one dataclass for every modality (as TRL's `GRPOConfig`
sits beside `GRPOTrainer`): the dispatcher and both training loops import it from here."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from rlvr_envs.core.arguments import parse_env_kwargs
from trainers.common import check_ranges, check_run_folder

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo")
ALGORITHMS = ("grpo", "rloo")


@dataclass
class GRPOConfig:
    env_id: str = "RLVRWorld/PushT-SingleStep-v0"
    env_kwargs: tuple[str, ...] = ()
    model: str = ""  #: a save_pretrained directory or HF id; video default: the shipped MLE model of the layout
    out: str = "runs/grpo"
    steps: int = 300
    max_seconds: float = 0.0  #: also stop after this much training time (0 = no limit); the result is still evaluated and saved
    #: also stop before this absolute time, setup included (seconds since the epoch, as `date +%s`; 0 = none):
    #: no step starts that would pass it
    end_at: float = 0.0
    prompts_per_step: int = 4
    group_size: int = 8  #: samples per prompt (the paper: 16 video, 5 language)
    beta: float = 1e-3  #: KL coefficient against the frozen starting model (0 = no reference model)
    clip: float = 0.2  #: PPO-style ratio clip epsilon
    algorithm: str = "grpo"  #: "grpo" or "rloo" (leave-one-out baseline, sequence-level ratio, KL in the reward: TRL's RLOO)
    loss_type: str = "grpo"  #: one of LOSS_TYPES (how GRPO's token losses are aggregated; RLOO has one loss)
    updates_per_step: int = 1  #: gradient steps on each batch of samples (GRPO's mu)
    temperature: float = 1.0
    top_k: int = 0  #: 0 = no top-k filtering while sampling
    lr: float = 5e-5
    lora_r: int = 0  #: 0 = train every weight; >0 = peft LoRA of this rank
    lora_alpha: int = 16
    max_completion_len: int = 256  #: language only: longest generated answer
    balance: bool = False  #: language only: draw changed and unchanged training transitions equally often
    changed_only: bool = False  #: language only: train on transitions that change the state (held-out evaluation keeps both)
    prompts: tuple[str, ...] = ()  #: language only: the union of what `trainers.prompt_filter` files kept
    train_episodes: int = 40  #: video only: PushT training episodes generated on first use (seed 20000)
    #: video only: train on a `trainers.rollout_prompts` file (the model's own rollouts), not recorded windows
    video_prompts: str = ""
    eval_every: int = 50
    eval_windows: int = 64  #: held-out transitions evaluated (greedy and sampled)
    checkpoint_every: int = 25
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N (under accelerate launch: auto or cuda)
    precision: str = "auto"  #: auto (bf16 autocast where the device computes bf16 natively), bf16 or fp32
    #: video only: prompts per generate call (0 = this process's whole share); fix it to draw the same samples
    #: at any number of processes (call c of a step is seeded alike wherever it runs)
    generation_batch: int = 0
    #: language only, without vLLM: "static" preallocates the KV cache so the decode step has one shape (on CUDA
    #: transformers compiles it); "dynamic" grows it per token (the default, TRL's)
    generation_cache: str = "dynamic"
    use_vllm: bool = False  #: language only: TRL generates with vLLM (pip install vllm; a GPU)
    vllm_mode: str = "colocate"  #: language only: "colocate" (vLLM inside each training process) or "server"
    vllm_server_host: str = "0.0.0.0"  #: language only, vllm_mode=server: where `trl vllm-serve` listens
    vllm_server_port: int = 8000
    vllm_gpu_memory_utilization: float = 0.3  #: language only, colocate: GPU memory share vLLM may take
    logging: str = "none"  #: "none" or "tensorboard" (JSON lines are always written to out/log.jsonl)
    #: continue the unfinished run in --out from its last checkpoint; a finished run (card.json or
    #: results.json) is refused, never retrained or overwritten: start a new run from its model with --model
    resume: bool = False

    def validate(self) -> "GRPOConfig":
        from rlvr_envs.registration import prediction_entry

        modality = prediction_entry(self.env_id).modality
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.algorithm == "rloo" and self.loss_type != "grpo":
            raise ValueError("loss_type applies to GRPO only; RLOO has a single sequence-level loss")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (GRPO compares samples of one prompt), got {self.group_size}")
        check_ranges(self, at_least={name: 1 for name in (
            "steps", "prompts_per_step", "updates_per_step", "eval_every", "checkpoint_every", "eval_windows",
            "train_episodes", "max_completion_len", "threads", "lora_alpha")} | {
            "top_k": 0, "lora_r": 0, "seed": 0, "generation_batch": 0},
            positive=("lr", "clip", "temperature", "vllm_gpu_memory_utilization"), non_negative=("beta", "max_seconds", "end_at"))
        if self.vllm_gpu_memory_utilization > 1:
            raise ValueError(f"vllm_gpu_memory_utilization is a share of the GPU's memory, at most 1, got "
                             f"{self.vllm_gpu_memory_utilization}")
        if self.logging not in ("none", "tensorboard"):
            raise ValueError(f"logging must be 'none' or 'tensorboard', got {self.logging!r}")
        from rlvr_envs.core.device import PRECISIONS, resolve_device

        if self.precision not in PRECISIONS:
            raise ValueError(f"--precision {self.precision!r}: one of {', '.join(PRECISIONS)}")
        resolve_device(self.device)  # an absent or malformed device fails before any work
        if self.generation_cache not in ("dynamic", "static"):
            raise ValueError(f"--generation-cache must be 'dynamic' or 'static', got {self.generation_cache!r}")
        if self.vllm_mode not in ("colocate", "server"):
            raise ValueError(f"--vllm-mode must be 'colocate' or 'server', got {self.vllm_mode!r}")
        if self.use_vllm and importlib.util.find_spec("vllm") is None:
            raise ValueError("--use-vllm needs the vllm package (pip install vllm) and a CUDA GPU")
        if self.logging == "tensorboard" and importlib.util.find_spec("tensorboard") is None:
            raise ValueError("logging='tensorboard' needs the tensorboard package: pip install tensorboard")
        if sum(map(bool, (self.balance, self.changed_only, self.prompts))) > 1:
            raise ValueError("--balance, --changed-only and --prompts exclude each other (each picks the training "
                             "prompts)")
        self.check_modality(modality)
        if self.prompts and modality != "video":
            from trainers.prompt_filter import load_prompt_file

            for path in self.prompts:
                load_prompt_file(path, self.env_id)
        if self.model:
            from rlvr_envs.core.files import check_model_source

            check_model_source(self.model, "model (--model)")
        from rlvr_envs.registration import check_env_kwargs

        check_env_kwargs(self.env_id, **self.kwargs())  # malformed or bad key=value pairs fail here, before any work
        check_run_folder(self.out, self.resume, "--model", self)
        return self

    def check_modality(self, modality: str) -> None:
        """Flags of the other modality's trainer, and language GRPO without a model to start from."""
        if modality == "video":
            if self.use_vllm:
                raise ValueError("--use-vllm is for language tasks (TRL's GRPOTrainer); video GRPO generates with "
                                 "its own KV-cached sampler, which forces the given action tokens")
            if self.balance or self.changed_only or self.prompts:
                raise ValueError("--balance, --changed-only and --prompts are for language tasks (changed vs "
                                 "unchanged transitions, filtered prompts); video windows have no such split")
            return
        if not self.model:
            raise ValueError("language GRPO starts from a trained model: pass --model (a save_pretrained directory "
                             "or hub id, e.g. the out/final of `python -m trainers.sft --from-scratch ...`)")
        if self.video_prompts:
            raise ValueError("--video-prompts is for video tasks (trainers.rollout_prompts files)")
        if self.generation_batch:
            raise ValueError("--generation-batch is for video tasks (language generation is TRL's)")
        if self.device.startswith("cuda:"):
            raise ValueError(f"--device {self.device}: language GRPO runs on TRL, which places the model itself; "
                             f"pick the GPU with CUDA_VISIBLE_DEVICES={self.device.partition(':')[2]} and --device cuda")

    def kwargs(self) -> dict[str, Any]:
        """`env_kwargs` as a dict: `reward=mae size=40` -> {"reward": "mae", "size": 40}."""
        return parse_env_kwargs(self.env_kwargs)
