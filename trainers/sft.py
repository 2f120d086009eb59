"""Supervised fine-tuning of a language world model on a task's gold answers.

    python -m trainers.sft --env-id RLVRWorld/MiniTextWorld-v0 --from-scratch --preset small --balance \
        --steps 3000 --out runs/sft_mtw
    python -m trainers.sft --env-id RLVRWorld/MiniTextWorld-v0 --model Qwen/Qwen2.5-0.5B --lora-r 32 --out runs/sft_qwen

Each example is one transition as prompt + completion: the task's own prompt tokens
(`task.prompt_ids`) followed by the gold answer (`task.target_ids`) and EOS, with the loss
on the completion only, or with `--prompt-loss` on every token: a model trained from scratch
then also learns from the states in the prompt (JSON, names and ids to copy), about ten
times more supervised tokens per sequence at the same cost. We tokenise the two parts separately (the task's codec) rather
than letting TRL tokenise the joined text, so training sees exactly the token sequence the
model later conditions on and produces in GRPO and evaluation (a joint tokenisation can
merge tokens across the boundary).

`--from-scratch` builds a small LLaMA (`TEXT_PRESETS`) on the task's tokenizer (the shipped
BPE of MiniTextWorld / MiniWeb by default), so the whole language pipeline runs on a CPU, and
trains it on the loop every from-scratch world model shares (`trainers.token_rows`, as the video
MLE trainer): transitions packed into fixed-length rows with attention confined to each
transition, the rows on `--device`, fused AdamW on CUDA, warmup-cosine, bf16 autocast where
native, torch.compile on CUDA; the loss is on prompt and answer unless `--answer-only`.
Otherwise `--model` is any Hugging Face causal LM, fine-tuned by TRL's SFTTrainer (the task
then tokenises with the model's tokenizer unless `--env-kwargs tokenizer=...` says
otherwise; the loss on the answer unless `--prompt-loss`), optionally with LoRA (`--lora-r`). `--balance` draws changed and unchanged transitions equally often
(RLVR-World balanced them: "nothing changes" alone is right on most transitions).

Held-out exact accuracy (overall, changed, unchanged; `rlvr_envs.integrations.hf`) is
measured at the start (not for a model built from scratch), every `--eval-every` steps and
at the end, on the first `--eval-size` transitions of the test split. Checkpoints go to `out/checkpoint-N`
(`--resume` continues an unfinished run from the last one), the final model to `out/final` (LoRA merged),
logs to `out/log.jsonl`, the summary to `out/results.json`. A finished run (results.json) is final:
`--resume` on it is refused in one line; train further with `--model OUT/final --out NEW`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlvr_envs.core.files import check_model_source
from rlvr_envs.core.arguments import parse_env_kwargs
from trainers.common import (check_ranges, check_run_folder, lora_config, owns_run_folder, parse_dataclass_args,
                             run_command)

#: from-scratch LLaMA sizes for text world models (compare rlvr_envs.video.world_model.PRESETS)
TEXT_PRESETS: dict[str, dict[str, int]] = {
    "micro": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "tiny": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 384},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 768},
    "base": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "intermediate_size": 1536},
    #: ~57M on the 1,024-token BPE: a GPU preset (rlvr_envs.core.sizing; docs/scale_out.md)
    "medium": {"hidden_size": 640, "num_hidden_layers": 10, "num_attention_heads": 10, "intermediate_size": 2048},
}


@dataclass
class Args:
    env_id: str = "RLVRWorld/MiniTextWorld-v0"
    env_kwargs: tuple[str, ...] = ()
    model: str = ""  #: a save_pretrained directory or HF id to fine-tune (empty with --from-scratch)
    from_scratch: bool = False  #: train a fresh LLaMA of --preset on the task's tokenizer
    preset: str = "small"  #: one of TEXT_PRESETS (from scratch only)
    out: str = "runs/sft"
    steps: int = 2000  #: optimizer steps
    batch_size: int = 8
    lr: float = 5e-4
    warmup_steps: int = 50
    weight_decay: float = 0.0
    lora_r: int = 0  #: 0 = train every weight; >0 = peft LoRA of this rank
    lora_alpha: int = 16
    balance: bool = False  #: sample changed and unchanged transitions equally often
    #: train on the prompt tokens too (free extra signal: the states in the prompt teach JSON and copying); on by
    #: default for a model trained from scratch (as the shipped models were), off for a pretrained --model
    prompt_loss: bool = False
    answer_only: bool = False  #: from scratch: the loss on the answer only (no prompt loss)
    #: from scratch: tokens per packed row (0 = twice the longest example, rounded up to 64)
    row_tokens: int = 0
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N
    train_size: int = 0  #: training transitions (tasks with a `size` argument; 0 = the task's default)
    eval_size: int = 64  #: held-out (test split) transitions evaluated
    max_seconds: float = 0.0  #: also stop after this much training time (0 = no limit); still evaluated and saved
    #: also stop before this absolute time, setup included (seconds since the epoch, as `date +%s`; 0 = none):
    #: the run stops before a step that would pass it, and its learning rate anneals over the time given
    end_at: float = 0.0
    eval_every: int = 200
    checkpoint_every: int = 200
    max_new_tokens: int = 0  #: evaluation answer budget (0 = the task's max_response_len)
    seed: int = 0
    threads: int = 2
    no_compile: bool = False  #: skip torch.compile (on by default on CUDA)
    #: pretrained --model (TRL): pad every batch to the longest example, so batches have one shape and a compiled
    #: model compiles once (on wherever the model is compiled; padding carries no loss, so the loss is the same);
    #: from scratch every row has one length anyway
    fixed_length: bool = False
    fp32: bool = False  #: train in fp32 (default: bf16 autocast where the hardware has native bf16, see device_kwargs)
    logging: str = "none"  #: "none" or "tensorboard" (JSON lines are always written to out/log.jsonl)
    #: continue the unfinished run in --out from its last checkpoint; a finished run (results.json) is
    #: refused, never retrained or overwritten: start a new run from it with --model OUT/final
    resume: bool = False

    def validate(self) -> "Args":
        from rlvr_envs.registration import prediction_entry

        prediction_entry(self.env_id)
        if self.from_scratch == bool(self.model):
            raise ValueError("pass exactly one of --model (a causal LM to fine-tune) and --from-scratch")
        if self.prompt_loss and self.answer_only:
            raise ValueError("--prompt-loss and --answer-only contradict each other: pass at most one")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # an absent or malformed device fails before any work
        if self.preset not in TEXT_PRESETS:
            raise ValueError(f"preset must be one of {sorted(TEXT_PRESETS)}, got {self.preset!r}")
        check_ranges(self, at_least={name: 1 for name in (
            "steps", "batch_size", "eval_size", "eval_every", "checkpoint_every", "threads", "lora_alpha")} | {
            name: 0 for name in ("lora_r", "train_size", "max_new_tokens", "warmup_steps", "seed", "row_tokens")},
            positive=("lr",), non_negative=("weight_decay", "max_seconds", "end_at"))
        if self.logging not in ("none", "tensorboard"):
            raise ValueError(f"logging must be 'none' or 'tensorboard', got {self.logging!r}")
        if self.model:
            check_model_source(self.model, "model (--model)")
        self.kwargs()
        check_run_folder(self.out, self.resume, "--model", self)
        return self

    def kwargs(self) -> dict[str, Any]:
        return parse_env_kwargs(self.env_kwargs)

    def trains_prompt(self) -> bool:
        """Whether the prompt tokens carry loss: `--prompt-loss`, or from scratch unless `--answer-only`."""
        return self.prompt_loss or (self.from_scratch and not self.answer_only)


# -- helpers shared with trainers/grpo_language.py -------------------------------------------

def task_config_fields(env_id: str) -> set[str]:
    from rlvr_envs.registration import entry

    return {f.name for f in dataclasses.fields(entry(env_id).task_class().Config)}


def split_kwargs(env_id: str, env_kwargs: dict[str, Any], split: str, size: int = 0) -> dict[str, Any]:
    """`env_kwargs` for one split: `split` unless the user fixed it (training only), and
    `size` when the task has that argument and `size` > 0."""
    out = dict(env_kwargs)
    out["split"] = out.get("split", split) if split != "test" else "test"
    if size > 0 and "size" in task_config_fields(env_id):
        out["size"] = size
    return out


def model_tokenizer_kwargs(model: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The task tokenizes with the model's own tokenizer unless `env_kwargs` names one: a
    local model directory holding tokenizer files, or a hub id."""
    if not model or "tokenizer" in env_kwargs:
        return dict(env_kwargs)
    path = Path(model)
    if path.is_dir():
        if (path / "tokenizer.json").exists() or (path / "tokenizer_config.json").exists():
            return {**env_kwargs, "tokenizer": str(path)}
        return dict(env_kwargs)
    return {**env_kwargs, "tokenizer": model}


def check_vocabulary(model: str, model_config: Any, task: Any) -> None:
    """Fail before training when the model cannot read the task's tokens: its embedding is
    smaller than the task tokenizer, or the tokenizer saved with the model is another one."""
    size, need = int(model_config.vocab_size), len(task.tokenizer)
    name = getattr(task.tokenizer, "name_or_path", "") or type(task.tokenizer).__name__
    hint = ("pass the model's tokenizer to the task (--env-kwargs tokenizer=<path>), or train a model on this "
            "tokenizer (python -m trainers.sft --from-scratch)")
    if size < need or max(task.eos_token_id, task.pad_token_id) >= size:
        raise ValueError(f"vocabulary mismatch: model {model!r} has {size} token embeddings but the task's tokenizer "
                         f"{name!r} has {need} tokens (eos {task.eos_token_id}, pad {task.pad_token_id}); {hint}")
    own = None
    path = Path(model)
    if path.is_dir() and ((path / "tokenizer.json").exists() or (path / "tokenizer_config.json").exists()):
        from transformers import AutoTokenizer

        own = AutoTokenizer.from_pretrained(str(path))
    if own is not None and own.get_vocab() != task.tokenizer.get_vocab():
        raise ValueError(f"vocabulary mismatch: model {model!r} was saved with a tokenizer of {len(own)} tokens that "
                         f"differs from the task's tokenizer {name!r} ({need} tokens); {hint}")
    if own is None and size != need and size > 2 * need:
        raise ValueError(f"vocabulary mismatch: model {model!r} has {size} token embeddings, far more than the "
                         f"task's tokenizer {name!r} ({need} tokens), and no tokenizer of its own to compare; {hint}")


def last_checkpoint(out: str | Path, resume: bool) -> str | None:
    """The checkpoint `--resume` continues from, said aloud (None: start fresh, also when a resumed
    run stopped before its first checkpoint). Whether `out` may be trained into at all was
    settled by `check_run_folder` in `validate()`."""
    from transformers.trainer_utils import get_last_checkpoint

    from trainers.common import resume_line

    if not resume:
        return None
    last = get_last_checkpoint(str(out)) if Path(out).is_dir() else None
    if int(os.environ.get("RANK", "0")) == 0:
        print(resume_line(out, last, int(Path(last).name.rpartition("-")[2]) if last else 0), flush=True)
    return last


def trim_log_for_resume(out: str | Path, resume_from: str | None) -> None:
    """Each step once in `out/log.jsonl`: drop what a killed run logged after its checkpoint
    (run again now) and the evaluation at the checkpoint's step (repeated at the resumed start)."""
    from rlvr_envs.core.files import keep_log_until, read_json
    from trainers.common import RESUME_REMEDY

    if int(os.environ.get("RANK", "0")) != 0:  # the main process alone writes the log
        return
    step = 0
    if resume_from:
        state = read_json(Path(resume_from) / "trainer_state.json", "the checkpoint's trainer state", RESUME_REMEDY)
        step = int(state.get("global_step", 0)) if isinstance(state, dict) else 0
    keep_log_until(Path(out) / "log.jsonl", step, redone=lambda record: any(k.startswith("eval/") for k in record))


def device_kwargs(fp32: bool, device: str = "auto") -> dict[str, bool]:
    """TrainingArguments for `rlvr_envs.core.device`'s policy: bf16 autocast (fp32 weights) where
    the device computes bf16 natively, fp32 otherwise or with `fp32`. On a CPU: `use_cpu`
    (transformers refuses bf16 on a CPU it was not told to use) and no gradient checkpointing
    (TRL turns it on to save GPU memory; on a CPU it only costs time)."""
    from transformers import TrainingArguments

    from rlvr_envs.core.device import device_capabilities, precision_policy, resolve_device

    resolved = resolve_device(device)
    bf16 = precision_policy(resolved, device_capabilities(resolved), "fp32" if fp32 else "auto").bf16
    if resolved.type == "cuda":
        return {"bf16": bf16}
    # transformers 5 renamed gradient checkpointing to activation checkpointing
    name = "activation_checkpointing" if "activation_checkpointing" in TrainingArguments.__dataclass_fields__ \
        else "gradient_checkpointing"
    return {"bf16": bf16, "use_cpu": True, name: False}


def report_to(logging: str) -> str | list[str]:
    if logging == "tensorboard":
        try:
            import tensorboard  # noqa: F401
        except ImportError as exc:
            raise ImportError("--logging tensorboard needs the tensorboard package (pip install tensorboard)") from exc
        return ["tensorboard"]
    return "none"


def save_final(model: Any, tokenizer: Any, folder: str | Path) -> Path:
    """The trained model as a plain `save_pretrained` directory (LoRA adapters merged) with its tokenizer."""
    folder = Path(folder)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


# -- the model --------------------------------------------------------------------------------

def build_text_model(tokenizer: Any, preset: str = "small", max_len: int = 2048, seed: int = 0):
    """A freshly initialised LLaMA whose vocabulary is `tokenizer`'s."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    if preset not in TEXT_PRESETS:
        raise ValueError(f"preset must be one of {sorted(TEXT_PRESETS)}, got {preset!r}")
    torch.manual_seed(seed)
    eos = int(tokenizer.eos_token_id)
    pad = int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else eos
    bos = int(tokenizer.bos_token_id) if tokenizer.bos_token_id is not None else eos
    config = LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=max_len, bos_token_id=bos,
                         eos_token_id=eos, pad_token_id=pad, tie_word_embeddings=False, **TEXT_PRESETS[preset])
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos, pad_token_id=pad)
    return model


def sft_dataset(task: Any, indices: list[int]):
    """Pre-tokenised prompt + completion rows: `input_ids` = prompt, gold answer, EOS;
    `completion_mask` = 1 on the answer and EOS (TRL builds the labels from it)."""
    from datasets import Dataset

    input_ids, masks = [], []
    for i in indices:
        prompt, target = task.prompt_ids(i).tolist(), task.target_ids(i).tolist() + [task.eos_token_id]
        input_ids.append(prompt + target)
        masks.append([0] * len(prompt) + [1] * len(target))
    return Dataset.from_dict({"input_ids": input_ids, "completion_mask": masks})


def compiles(args: Args) -> bool:
    from rlvr_envs.core.device import resolve_device

    return resolve_device(args.device).type == "cuda" and not args.no_compile


def sft_config(args: Args, longest: int | None = None):
    """TRL's SFTConfig for `args`: cosine schedule, checkpoints every `checkpoint_every` steps,
    the loss on the answer only unless `prompt_loss`, torch.compile on CUDA; with `longest` (the
    longest example's tokens) and a compiled model or `fixed_length`, every batch is padded to it
    (TRL's batches vary in length, and each new shape recompiles: 2 steps in 88 s on an H200)."""
    from trl import SFTConfig

    fixed = longest if longest and (compiles(args) or args.fixed_length) else None
    return SFTConfig(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr, lr_scheduler_type="cosine", warmup_steps=args.warmup_steps,
        weight_decay=args.weight_decay, logging_steps=max(1, min(25, args.steps // 20)),
        save_strategy="steps", save_steps=args.checkpoint_every, save_total_limit=2, report_to=report_to(args.logging),
        seed=args.seed, data_seed=args.seed, completion_only_loss=not args.prompt_loss, max_length=None, packing=False,
        torch_compile=compiles(args), pad_to_multiple_of=fixed,
        dataset_num_proc=None, dataloader_num_workers=0, **device_kwargs(args.fp32, args.device))


@owns_run_folder("--model")
def main(args: Args) -> dict[str, Any]:
    import torch
    from trl import SFTTrainer

    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import HeldOutEval, JsonlLog, TimeLimit, held_out_indices
    from rlvr_envs.integrations.trl import balanced_indices

    args.validate()
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda:"):
        torch.cuda.set_device(args.device)  # TRL trains on the current CUDA device
    started = time.perf_counter()
    resume_from = last_checkpoint(args.out, args.resume)
    out = Path(args.out)

    env_kwargs = model_tokenizer_kwargs(args.model, args.kwargs())
    train_task = task_from_env_id(args.env_id, **split_kwargs(args.env_id, env_kwargs, "train", args.train_size))
    eval_task = task_from_env_id(args.env_id, **split_kwargs(args.env_id, env_kwargs, "test", args.eval_size))
    if not hasattr(train_task, "prompt_text"):
        raise ValueError(f"{args.env_id} is a {train_task.modality} task; SFT here trains language world models "
                         f"(video: python -m trainers.train_video_world_model)")
    indices = balanced_indices(train_task, args.seed) if args.balance else list(range(len(train_task)))
    n_changed = sum(train_task.transition(i).changed is True for i in indices)
    print(f"SFT on {args.env_id}: {len(train_task)} training transitions ({len(indices)} examples, "
          f"{n_changed} changed{' after balancing' if args.balance else ''}), "
          f"{len(eval_task)} held-out, tokenizer of {len(train_task.tokenizer)} tokens")

    needed = max(train_task.max_prompt_len, eval_task.max_prompt_len) + \
        max(train_task.max_response_len, eval_task.max_response_len) + 1
    if args.from_scratch:
        return train_from_scratch(args, train_task, eval_task, indices, needed, resume_from, started)
    from transformers import AutoConfig, AutoModelForCausalLM

    check_vocabulary(args.model, AutoConfig.from_pretrained(args.model), train_task)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    n_params = sum(p.numel() for p in model.parameters())

    config = sft_config(args, longest=needed)
    evaluator = HeldOutEval(eval_task, held_out_indices(eval_task, args.eval_size), args.eval_every,
                            log_path=out / "log.jsonl", max_new_tokens=args.max_new_tokens or None)
    time_limit = TimeLimit(args.max_seconds, args.end_at)
    trainer = SFTTrainer(model=model, args=config, train_dataset=sft_dataset(train_task, indices),
                         processing_class=train_task.tokenizer,
                         callbacks=[evaluator, JsonlLog(out / "log.jsonl"), time_limit],
                         peft_config=lora_config(args.lora_r, args.lora_alpha) if args.lora_r > 0 else None)
    trim_log_for_resume(out, resume_from)
    output = trainer.train(resume_from_checkpoint=resume_from)

    results: dict[str, Any] = {"args": dataclasses.asdict(args), "parameters": n_params,
                               "train_loss": float(output.training_loss), "steps": int(trainer.state.global_step),
                               "resumed_from": resume_from, "eval": evaluator.history,
                               "train_runtime": float(output.metrics.get("train_runtime", 0.0)),
                               # the first step apart: a compiled model compiles in it
                               "first_step_seconds": time_limit.first_step_seconds,
                               "steps_per_second_after_first_step": time_limit.steady_rate(),
                               "mean_example_tokens": float(np.mean([len(x) for x in trainer.train_dataset["input_ids"]])),
                               "trainer": "trl", "seconds": time.perf_counter() - started}
    if trainer.is_world_process_zero():
        finish_run(trainer.model, train_task, out, results, evaluator.history)
        print(f"final model: {results['final_model']} ({n_params / 1e6:.2f}M parameters)")
    return results


def sft_rows(task: Any, indices: list[int], prompt_loss: bool, row_tokens: int = 0):
    """The transitions `indices` (repeats allowed: `--balance` draws some twice) as packed token rows
    (`trainers.token_rows.pack_examples`): prompt, gold answer and EOS, each transition its own
    segment; labels on every token with `prompt_loss`, else on the answer and EOS only."""
    from trainers.token_rows import IGNORE, auto_row_length, pack_examples

    cache: dict[int, tuple[list[int], list[int]]] = {}
    for i in set(indices):
        prompt, answer = task.prompt_ids(i).tolist(), task.target_ids(i).tolist() + [task.eos_token_id]
        cache[i] = (prompt + answer, (prompt if prompt_loss else [IGNORE] * len(prompt)) + answer)
    sequences, labels = [cache[i][0] for i in indices], [cache[i][1] for i in indices]
    length = row_tokens or auto_row_length([len(x) for x in sequences])
    return pack_examples(sequences, labels, length, task.pad_token_id)


def rows_per_step(rows: Any, transitions: int, world: int = 1) -> int:
    """Packed rows per optimizer step holding about `transitions` transitions (a multiple of `world`)."""
    per_row = rows.examples / len(rows.input_ids)
    wanted = max(1, round(transitions / per_row))
    return -(-wanted // world) * world


def train_from_scratch(args: Args, train_task: Any, eval_task: Any, indices: list[int], needed: int,
                       resume_from: str | None, started: float) -> dict[str, Any]:
    """`--from-scratch`: a fresh LLaMA trained on packed token rows through the loop every from-scratch
    world model uses (`trainers.token_rows.train_loop`, as the video MLE trainer): rows resident on the
    device, fused AdamW on CUDA, warmup-cosine, bf16 autocast where native, torch.compile on CUDA."""
    import shutil

    import torch
    from transformers import LlamaForCausalLM

    from rlvr_envs.core.device import maybe_compile
    from rlvr_envs.core.files import json_line, load_torch_file
    from rlvr_envs.integrations.hf import HeldOutEval, held_out_indices
    from trainers.common import RESUME_REMEDY
    from trainers.distributed import machine_line, start_run
    from rlvr_envs.core.run_clock import RunClock, warmup_cosine
    from trainers.token_rows import auto_micro_batch, make_optimizer, train_loop

    run = start_run(args.device, "fp32" if args.fp32 else "auto", args.threads)
    say = print if run.is_main else (lambda *a, **k: None)
    out = Path(args.out)
    rows = sft_rows(train_task, indices, args.trains_prompt(), args.row_tokens)
    batch_rows = rows_per_step(rows, args.batch_size, run.world)
    step, state = 0, None
    if resume_from:
        model = LlamaForCausalLM.from_pretrained(resume_from)
        state = load_torch_file(Path(resume_from) / "state.pt", "the training state", RESUME_REMEDY)
        step = int(state["step"])
    else:
        model = build_text_model(train_task.tokenizer, args.preset, max_len=max(2048, needed, rows.length),
                                 seed=args.seed)
    model.config._attn_implementation = "sdpa"  # packed rows pass a block-diagonal mask (SDPA reads it)
    model.to(run.device)
    raw_model = model
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = make_optimizer(model, args.lr, run.device, weight_decay=args.weight_decay, betas=(0.9, 0.999))
    clock = RunClock(args.max_seconds, args.end_at)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(
        args.warmup_steps, args.steps, lambda: run.from_main(clock.fraction())))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
    per_rank = batch_rows // run.world
    micro = auto_micro_batch(model, rows.length, per_rank, run.device)
    compiled = run.device.type == "cuda" and not args.no_compile
    say(f"{len(rows.input_ids)} rows of {rows.length} tokens hold {rows.examples} transitions "
        f"({rows.padding_share():.1%} padding, {'loss on prompt and answer' if args.trains_prompt() else 'loss on the answer only'}); "
        f"{batch_rows} rows (~{batch_rows * rows.examples / len(rows.input_ids):.1f} transitions) per step in "
        f"forwards of {micro}; {n_params / 1e6:.2f}M parameters on {run.describe()}"
        f"{'; torch.compile' if compiled else ''}", flush=True)
    model, optimizer = run.prepare(maybe_compile(model, compiled), optimizer)
    log_path = out / "log.jsonl"
    trim_log_for_resume(out, resume_from)
    # a freshly initialised model scores 0 and generates to the full budget: skip that evaluation
    # (a resumed run starts from a trained checkpoint and is evaluated)
    evaluator = HeldOutEval(eval_task, held_out_indices(eval_task, args.eval_size), args.eval_every,
                            log_path=log_path, max_new_tokens=args.max_new_tokens or None)
    if run.is_main and resume_from:
        evaluator.run(raw_model, step)
    log_every = max(1, min(25, args.steps // 20))
    began = time.perf_counter()

    def on_step(step: int, loss: Any) -> None:  # the main process: log, checkpoint, evaluate
        from rlvr_envs.integrations.hf import append_jsonl

        if step % log_every == 0:
            append_jsonl(log_path, {"step": step, "loss": loss.item(), "learning_rate": schedule.get_last_lr()[0],
                                    "seconds": time.perf_counter() - began})
        if step % args.checkpoint_every == 0:
            folder = out / f"checkpoint-{step}"
            raw_model.save_pretrained(str(folder))
            torch.save({"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(), "step": step},
                       folder / "state.pt")
            (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}), encoding="utf-8")
            kept = sorted(out.glob("checkpoint-*"), key=lambda f: int(f.name.rpartition("-")[2]))
            for old in kept[:-2]:  # the last two, as TRL keeps them
                shutil.rmtree(old, ignore_errors=True)
        if step % args.eval_every == 0:
            evaluator.run(raw_model, step)

    done = train_loop(model, optimizer, schedule, run, rows, rows.to(run.device), steps=args.steps, step=step,
                      batch_rows=batch_rows, micro=micro, seed=args.seed, clock=clock,
                      compiled=compiled, raw_model=raw_model, on_step=on_step, say=say, desc="SFT")
    mean_row_tokens = float(rows.real_tokens().mean())
    steady = done.steady_rate(round(batch_rows * mean_row_tokens))
    results: dict[str, Any] = {
        "args": dataclasses.asdict(args), "parameters": n_params, "trainer": "token_rows",
        "train_loss": done.mean_loss, "steps": done.step, "resumed_from": resume_from, "eval": evaluator.history,
        "train_runtime": done.seconds, "first_step_seconds": done.first_step_seconds,
        "steps_per_second_after_first_step":
            (done.steps_run - 1) / (done.seconds - done.first_step_seconds)
            if done.steps_run > 1 and done.seconds > done.first_step_seconds else None,
        "mean_example_tokens": float(rows.real_tokens().sum() / rows.examples),
        "prompt_loss": args.trains_prompt(), "compiled": done.compiled, "row_tokens": rows.length,
        "rows": len(rows.input_ids), "transitions": rows.examples, "rows_per_step": batch_rows, "micro_batch": micro,
        "transitions_per_step": batch_rows * rows.examples / len(rows.input_ids),
        "padding_share": rows.padding_share(), "tokens_per_second": done.rate(real=True),
        "tokens_per_second_after_first_step": steady or None, "stopped_by_time": done.stopped_by_time,
        "clock": clock.record(), "final_learning_rate": schedule.get_last_lr()[0], "machine": machine_line(run), "seconds": time.perf_counter() - started}
    if run.is_main:
        if not evaluator.history or evaluator.history[-1]["step"] != done.step:
            evaluator.run(raw_model, done.step)
        finish_run(raw_model, train_task, out, results, evaluator.history)
        print(f"final model: {results['final_model']} ({n_params / 1e6:.2f}M parameters)")
    run.end()
    return results


def finish_run(model, task, out: Path, results: dict[str, Any], history: list[dict], steps_per_step: int = 1) -> None:
    """Main process only: save the final model (LoRA merged) in `out/final`, write
    `out/results.json` and print the held-out accuracy history (steps divided by
    `steps_per_step`, GRPO's optimizer steps per sampled batch)."""
    from rlvr_envs.integrations.hf import format_report

    results["final_model"] = str(save_final(model, task.tokenizer, out / "final"))
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    print(f"{'step':>6}  held-out exact accuracy")
    for record in history:
        report = {k.removeprefix("eval/"): v for k, v in record.items()}
        print(f"{record['step'] // steps_per_step:>6}  {format_report(report)}")


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    run_command(main, parse_args)
