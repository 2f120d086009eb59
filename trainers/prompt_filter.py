"""Keep the training prompts the starting model sometimes solves: the ones GRPO can learn from.

    python -m trainers.prompt_filter --env-id RLVRWorld/MiniTextWorld-v0 --model runs/sft_mtw_cont/final \\
        --changed-only --samples 6 --temperature 0.7 --out runs/mtw_mixed_prompts.json
    python -m trainers.grpo --env-id RLVRWorld/MiniTextWorld-v0 --model runs/sft_mtw_cont/final \\
        --prompts runs/mtw_mixed_prompts.json ...

Under a binary reward a group whose samples are all right or all wrong has no reward spread,
so GRPO's advantages are zero and the group teaches nothing (TRL logs the share as
`frac_reward_zero_std`). Sampling `--samples` answers per training prompt with the model GRPO
starts from, at GRPO's temperature, and keeping the prompts solved by some but not all of
them (DAPO's dynamic sampling, done once before training) spends every GRPO step on groups
that carry signal. Only training prompts are read; held-out evaluation is untouched.

Writes OUT (JSON): the settings, every candidate's number of solved samples, and `indices`,
the kept prompts, which `trainers.grpo --prompts OUT` draws from. Progress is saved after
each batch and an interrupted run picks up where it stopped.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rlvr_envs.core.files import check_model_source, write_json_atomic
from rlvr_envs.core.arguments import parse_env_kwargs
from trainers.common import command_line, parse_dataclass_args


@dataclass
class Args:
    env_id: str = "RLVRWorld/MiniTextWorld-v0"
    env_kwargs: tuple[str, ...] = ()
    model: str = ""  #: the model GRPO will start from (a save_pretrained directory)
    out: str = "runs/prompt_filter.json"
    samples: int = 6  #: answers per prompt (GRPO's group size is the natural choice)
    temperature: float = 0.7  #: GRPO's sampling temperature
    top_k: int = 0
    changed_only: bool = False  #: candidates are the transitions that change the state
    unchanged_only: bool = False  #: candidates are the transitions that leave it as it was
    limit: int = 0  #: at most this many candidates, in index order (0 = all)
    max_completion_len: int = 256
    batch_size: int = 24
    seed: int = 0
    threads: int = 2

    def validate(self) -> "Args":
        if not self.model:
            raise ValueError("--model is required: the model GRPO will start from")
        if self.samples < 2:
            raise ValueError(f"samples must be >= 2 (a single sample cannot show a spread), got {self.samples}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0 (greedy answers never differ), got {self.temperature}")
        for name in ("batch_size", "threads", "max_completion_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.changed_only and self.unchanged_only:
            raise ValueError("--changed-only and --unchanged-only exclude each other (pass neither for all prompts)")
        if self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")
        check_model_source(self.model, "model (--model)")
        parse_env_kwargs(self.env_kwargs)
        return self


def training_task(env_id: str, model: str, env_kwargs: tuple[str, ...]) -> Any:
    """The training split of `env_id` tokenized for `model` (what `trainers.grpo_language` trains on)."""
    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import model_tokenizer_kwargs, split_kwargs

    kwargs = model_tokenizer_kwargs(model, parse_env_kwargs(env_kwargs))
    return task_from_env_id(env_id, **split_kwargs(env_id, kwargs, "train"))


def settings(args: Args, n_train: int) -> dict[str, Any]:
    """What the counts depend on; a saved file with other settings is not resumed."""
    keep = ("env_id", "env_kwargs", "model", "samples", "temperature", "top_k", "changed_only", "unchanged_only",
            "limit", "max_completion_len", "seed")
    return {**{k: v for k, v in asdict(args).items() if k in keep}, "env_kwargs": list(args.env_kwargs),
            "train_prompts": n_train}


def kept(solved_counts: dict[int, int], samples: int) -> list[int]:
    """Prompts solved by some but not all samples, in index order."""
    return sorted(i for i, k in solved_counts.items() if 0 < k < samples)


def main(args: Args) -> dict[str, Any]:
    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM

    from rlvr_envs.integrations.hf import solved_counts
    from rlvr_envs.integrations.trl import changed_indices, unchanged_indices
    from trainers.sft import check_vocabulary

    args.validate()
    torch.set_num_threads(args.threads)
    task = training_task(args.env_id, args.model, args.env_kwargs)
    if not hasattr(task, "prompt_text"):
        raise ValueError(f"{args.env_id} is not a text task; prompt filtering samples text answers")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    check_vocabulary(args.model, model.config, task)
    candidates = changed_indices(task) if args.changed_only else unchanged_indices(task) if args.unchanged_only \
        else list(range(len(task)))
    if args.limit:
        candidates = candidates[: args.limit]
    config = settings(args, len(task))

    out = Path(args.out)
    counts: dict[int, int] = {}
    if out.exists():
        saved = json.loads(out.read_text(encoding="utf-8"))
        if saved.get("settings") != config:
            raise SystemExit(f"{out} holds counts made with other settings; pass another --out or delete it")
        counts = {int(i): int(k) for i, k in saved["solved"].items()}
    todo = [i for i in candidates if i not in counts]
    per_batch = max(1, args.batch_size // args.samples)  # whole groups per batch
    bar = tqdm(total=len(candidates), initial=len(candidates) - len(todo), desc="prompts", unit="prompt")
    for start in range(0, len(todo), per_batch):
        chunk = todo[start:start + per_batch]
        found = solved_counts(model, task, chunk, args.samples, args.temperature, top_k=args.top_k,
                              max_new_tokens=args.max_completion_len, batch_size=len(chunk) * args.samples,
                              seed=args.seed * 1_000_003 + chunk[0])
        counts.update(zip(chunk, found))
        save(out, config, counts, args)
        bar.update(len(chunk))
        bar.set_postfix(kept=len(kept(counts, args.samples)))
    bar.close()
    report = save(out, config, counts, args)
    print(f"{len(report['indices'])} of {len(counts)} prompts solved by some but not all of {args.samples} "
          f"samples (none: {report['never_solved']}, all: {report['always_solved']}); wrote {out}")
    return report


def save(out: Path, config: dict[str, Any], counts: dict[int, int], args: Args) -> dict[str, Any]:
    """Write the file atomically (`write_json_atomic`), so a kill never leaves half of it."""
    samples = args.samples
    report = {"command": command_line("python -m trainers.prompt_filter", args), "settings": config,
              "candidates": len(counts),
              "never_solved": sum(k == 0 for k in counts.values()),
              "always_solved": sum(k == samples for k in counts.values()),
              "indices": kept(counts, samples), "solved": {str(i): k for i, k in sorted(counts.items())}}
    write_json_atomic(out, report, indent=1)
    return report


def load_prompt_file(path: str | Path, env_id: str) -> tuple[dict, list[int]]:
    """A `prompt_filter` file's settings and kept indices, checked before any work: readable, made for
    `env_id`, keeping at least one prompt (GRPO would otherwise have nothing to train on)."""
    from rlvr_envs.core.errors import DataError

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        config, indices = data["settings"], [int(i) for i in data["indices"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"--prompts {path}: not a trainers.prompt_filter file ({exc})") from None
    if config.get("env_id") != env_id:
        raise ValueError(f"--prompts {path} was made for {config.get('env_id')}; this run trains {env_id}")
    if not indices:
        raise DataError(f"--prompts {path} keeps no prompt: the model solved every candidate always or never "
                        "(filter more candidates, e.g. without --limit, or at a higher --temperature)")
    return config, indices


def read_prompt_indices(path: str | Path, env_id: str, n_train: int) -> list[int]:
    """The kept indices of a `prompt_filter` file, checked against the training task GRPO built:
    the same env id and number of training prompts (a file made for another split or size
    would silently pick other prompts)."""
    config, indices = load_prompt_file(path, env_id)
    if config.get("train_prompts") != n_train:
        raise ValueError(f"--prompts {path} was made for {config.get('env_id')} with {config.get('train_prompts')} "
                         f"training prompts; this run trains {env_id} with {n_train}")
    if min(indices) < 0 or max(indices) >= n_train:
        raise ValueError(f"--prompts {path} has indices outside 0..{n_train - 1}")
    return indices


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
