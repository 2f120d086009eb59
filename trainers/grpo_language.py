"""GRPO for language world models: TRL's `GRPOTrainer` driven by an env id (`trainers.grpo` dispatches here).

    python -m trainers.grpo --env-id RLVRWorld/MiniTextWorld-v0 --model runs/sft_mtw/final --out runs/grpo_mtw
    accelerate launch --multi_gpu --num_processes 2 -m trainers.grpo --env-id ... --model ...   # 2 processes

What goes where:
- prompts: `prompt_dataset(env_id, split="train")`, string prompts (TRL's requirement) that
  the task tokenizer turns back into the task's prompt ids; the `index` column locates
  each completion's transition for the reward function. `--balance` draws changed and
  unchanged transitions equally often (`balanced_indices`, as in `trainers.sft`);
  `--changed-only` trains on changed transitions alone (`changed_indices`); `--prompts
  FILE...` on the union of the prompts `trainers.prompt_filter` files kept (e.g. one file
  for changed transitions and one for unchanged ones).
- reward: `reward_function(...)`, the env's verifier on the completion text; every metric
  component is logged, and a verification failure scores the task's minimum (counted in
  `reward_failures`), never stops the run.
- processing_class: the task's tokenizer. The task tokenizes with the model's own
  tokenizer when the model directory has one (as `trainers/sft.py` saves it) unless
  `--env-kwargs tokenizer=...` names another; a model that cannot read the task's tokens
  fails before training.
- the model is loaded by TRL from `--model` (a saved directory or hub id), which TRL
  needs anyway for the frozen reference model when beta > 0. LoRA (`--lora-r`) via peft;
  the reference is then the base with the adapter disabled.
- batch: `prompts_per_step` prompts x `group_size` samples per step in total, split over
  the processes (`per_device_train_batch_size = prompts_per_step * group_size / processes`).
  `updates_per_step` is GRPO's mu (TRL's `num_iterations`): each batch of samples is
  used for that many optimizer steps, so TRL counts `steps * updates_per_step` optimizer
  steps; `eval_every` and `checkpoint_every` count sampled batches like `steps`.
- logging: TRL's metrics (reward, KL, clip ratios, and `frac_reward_zero_std`, the
  fraction of groups whose samples all scored the same, which carry no learning signal)
  plus ours go to `out/log.jsonl`; held-out greedy exact accuracy (overall, changed,
  unchanged; `rlvr_envs.integrations.hf`) at the start, every `eval_every` steps and at
  the end; `--max-seconds` ends training early (still evaluated and saved). Checkpoints in
  `out/checkpoint-N` (`--resume` continues an unfinished run), the final model in `out/final` (LoRA
  merged), the summary in `out/results.json`; a finished run is final (`--resume` on it is refused:
  start a new run with `--model OUT/final`), as in every trainer (`trainers.common.check_run_folder`).
- scale: `--use-vllm` has TRL generate with vLLM (`--vllm-mode colocate`, or `server` next to
  `trl vllm-serve`); `configs/accelerate/deepspeed_zero2.yaml` shards optimizer state over the
  GPUs (docs/scale_out.md has the commands).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from pathlib import Path
from typing import Any

from trainers.common import owns_run_folder
from trainers.grpo_config import GRPOConfig


def build(args: GRPOConfig) -> dict[str, Any]:
    """Everything checked and built before training (tasks, dataset, reward, GRPO config);
    every impossible config fails here with its reason."""
    from transformers import AutoConfig
    from trl import GRPOConfig, RLOOConfig

    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.trl import RewardFunction, balanced_indices, changed_indices, prompt_dataset
    from trainers.prompt_filter import read_prompt_indices, training_task
    from trainers.sft import (check_vocabulary, device_kwargs, last_checkpoint, model_tokenizer_kwargs,
                              report_to, split_kwargs)

    args.validate()  # refuses a missing --model too
    world = int(os.environ.get("WORLD_SIZE", "1"))
    batch = args.prompts_per_step * args.group_size
    if batch % world:
        raise ValueError(f"prompts_per_step * group_size = {batch} samples per step cannot be split evenly over "
                         f"{world} processes")
    resume_from = last_checkpoint(args.out, args.resume)

    env_kwargs = model_tokenizer_kwargs(args.model, args.kwargs())
    train_task = training_task(args.env_id, args.model, args.env_kwargs)
    if not hasattr(train_task, "prompt_text"):
        raise ValueError(f"{args.env_id} is a {train_task.modality} task; trainers.grpo_language trains text world "
                         f"models (video ids go to trainers.grpo_video)")
    eval_task = task_from_env_id(args.env_id, **split_kwargs(args.env_id, env_kwargs, "test", args.eval_windows))
    check_vocabulary(args.model, AutoConfig.from_pretrained(args.model), train_task)
    longest_gold = max(len(train_task.target_ids(i)) for i in range(len(train_task)))
    if args.max_completion_len <= longest_gold:
        print(f"warning: max_completion_len={args.max_completion_len} leaves no room for the longest gold answer "
              f"({longest_gold} tokens + EOS); those transitions cannot be answered in full")

    mu = args.updates_per_step
    # Dr. GRPO is both its token aggregation and unscaled advantages (as in trainers.grpo_video);
    # TRL's loss_type alone would keep dividing by the group's std
    Config, extra = (RLOOConfig, {}) if args.algorithm == "rloo" else (
        GRPOConfig, {"loss_type": args.loss_type, "scale_rewards": "none" if args.loss_type == "dr_grpo" else "group"})
    config = Config(
        output_dir=args.out, max_steps=args.steps * mu, per_device_train_batch_size=batch // world,
        gradient_accumulation_steps=1, num_generations=args.group_size, num_iterations=mu,
        learning_rate=args.lr, lr_scheduler_type="constant", beta=args.beta, epsilon=args.clip,
        temperature=args.temperature, top_k=args.top_k,
        max_completion_length=args.max_completion_len, logging_steps=1, save_strategy="steps",
        save_steps=args.checkpoint_every * mu, save_total_limit=2, report_to=report_to(args.logging),
        seed=args.seed, data_seed=args.seed, log_completions=False, dataloader_num_workers=0,
        **extra, **vllm_kwargs(args), **device_kwargs(args.precision == "fp32", args.device))
    indices = balanced_indices(train_task, args.seed) if args.balance else \
        changed_indices(train_task) if args.changed_only else \
        sorted({i for path in args.prompts for i in read_prompt_indices(path, args.env_id, len(train_task))}) \
        if args.prompts else None
    return {"train_task": train_task, "eval_task": eval_task, "env_kwargs": env_kwargs, "config": config,
            "dataset": prompt_dataset(args.env_id, task=train_task, indices=indices),
            "reward": RewardFunction(args.env_id, task=train_task), "resume_from": resume_from, "world": world}


def vllm_kwargs(args: GRPOConfig) -> dict[str, Any]:
    """GRPOConfig's generation options: vLLM's (`--use-vllm`), colocated in each training process or a
    `trl vllm-serve` server; without vLLM, the static KV cache when `--generation-cache static`."""
    if not args.use_vllm:
        return {"cache_implementation": "static"} if args.generation_cache == "static" else {}
    out: dict[str, Any] = {"use_vllm": True, "vllm_mode": args.vllm_mode}
    if args.vllm_mode == "server":
        out.update(vllm_server_host=args.vllm_server_host, vllm_server_port=args.vllm_server_port)
    else:
        out["vllm_gpu_memory_utilization"] = args.vllm_gpu_memory_utilization
    return out


@owns_run_folder("--model")
def train(args: GRPOConfig) -> dict[str, Any]:
    import torch
    from trl import GRPOTrainer, RLOOTrainer

    from rlvr_envs.integrations.hf import HeldOutEval, JsonlLog, TimeLimit, held_out_indices
    from trainers.common import lora_config
    from trainers.sft import finish_run, trim_log_for_resume

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    parts = build(args)
    out, mu = Path(args.out), args.updates_per_step
    train_task, eval_task, reward = parts["train_task"], parts["eval_task"], parts["reward"]
    evaluator = HeldOutEval(eval_task, held_out_indices(eval_task, args.eval_windows), args.eval_every * mu,
                            log_path=out / "log.jsonl", max_new_tokens=args.max_completion_len)
    print(f"GRPO on {args.env_id}: {len(train_task)} training prompts, {len(evaluator.indices)} held-out, "
          f"{args.prompts_per_step} prompts x {args.group_size} samples per step over {parts['world']} process(es), "
          f"model {args.model}")
    time_limit = TimeLimit(args.max_seconds, args.end_at)
    Trainer = RLOOTrainer if args.algorithm == "rloo" else GRPOTrainer
    trainer = Trainer(model=args.model, reward_funcs=reward, args=parts["config"],
                          train_dataset=parts["dataset"], processing_class=train_task.tokenizer,
                          callbacks=[evaluator, JsonlLog(out / "log.jsonl"), time_limit],
                          peft_config=lora_config(args.lora_r, args.lora_alpha) if args.lora_r > 0 else None)
    trim_log_for_resume(out, parts["resume_from"])
    trainer.train(resume_from_checkpoint=parts["resume_from"])

    logs = [entry for entry in trainer.state.log_history if "frac_reward_zero_std" in entry]
    zero = [entry["frac_reward_zero_std"] for entry in logs]
    results: dict[str, Any] = {
        "args": dataclasses.asdict(args), "env_kwargs": {k: str(v) for k, v in parts["env_kwargs"].items()},
        "steps": int(trainer.state.global_step) // mu, "optimizer_steps": int(trainer.state.global_step),
        "resumed_from": parts["resume_from"], "stopped_by_time_limit_at": time_limit.stopped_at,
        "eval": evaluator.history, "train_reward": [entry.get("reward") for entry in logs],
        "frac_zero_spread_groups": float(sum(zero) / len(zero)) if zero else math.nan,
        "reward_failures": reward.failures, "reward_errors": list(reward.errors),
        "processes": int(trainer.accelerator.num_processes),
        "seconds": time.perf_counter() - started}
    if trainer.is_world_process_zero():
        finish_run(trainer.model, train_task, out, results, evaluator.history, steps_per_step=mu)
        print(f"zero-spread groups {100 * results['frac_zero_spread_groups']:.1f}%, reward failures "
              f"{reward.failures}; final model: {results['final_model']}")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return results
