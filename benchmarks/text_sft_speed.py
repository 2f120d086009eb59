"""Text SFT from scratch: the token-row loop against TRL's SFTTrainer on the same transitions, and memorisation.

`trainers.sft --from-scratch` trains on the loop every from-scratch world model shares
(`trainers.token_rows`: transitions packed into fixed-length rows, attention confined to each
transition). This benchmark trains the same preset on the same MiniTextWorld transitions with the
loss on prompt and answer, in the same process on the same device and precision, once through
that loop and once through TRL's SFTTrainer as `trainers.sft` configures it for a pretrained model
(each batch padded to its longest example), and reports each one's training tokens per second
after its first step (the transitions' own tokens: padding is not counted) and the ratio. Then it
runs the GPU check's memorisation (`benchmarks.gpu_check.memorise`: the text stage's SFT arguments
on 8 transitions for 100 steps, greedy exact answers on those 8).

    python -m benchmarks.text_sft_speed --device cpu --threads 2

Writes `benchmarks/results/text_sft_speed.json` (and `.md`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
ENV_ID = "RLVRWorld/MiniTextWorld-v0"


def sft_args(out: Path, args: argparse.Namespace, **overrides: Any):
    from trainers.sft import Args

    return Args(**{**dict(env_id=ENV_ID, from_scratch=True, preset=args.preset, prompt_loss=True, steps=args.steps,
                          batch_size=args.batch_size, lr=1e-3, warmup_steps=5, train_size=args.transitions,
                          eval_size=1, eval_every=10**9, checkpoint_every=10**9, max_new_tokens=1,
                          threads=args.threads, device=args.device, seed=0, out=str(out)), **overrides})


def token_rows_rate(out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`trainers.sft --from-scratch` as users run it (its end-of-run evaluation kept to one short answer)."""
    from trainers import sft

    result = sft.main(sft_args(out, args))
    return {"steps": result["steps"], "seconds": round(result["train_runtime"], 2),
            "first_step_seconds": round(result["first_step_seconds"], 3),
            "tokens_per_second_after_first_step": round(result["tokens_per_second_after_first_step"]),
            "transitions_per_step": round(result["transitions_per_step"], 2), "rows_per_step": result["rows_per_step"],
            "row_tokens": result["row_tokens"], "padding_share": round(result["padding_share"], 4),
            "train_loss": result["train_loss"]}


def trl_rate(out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """TRL's SFTTrainer on the same transitions, model and loss (`trainers.sft.sft_config`, the pretrained
    path's configuration with prompt loss): steps per second after the first step x the mean transition's
    tokens x the batch."""
    import torch
    from trl import SFTTrainer

    from rlvr_envs.integrations.hf import TimeLimit
    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import build_text_model, sft_config, sft_dataset

    config_args = sft_args(out, args, from_scratch=False, model="unused")
    torch.set_num_threads(args.threads)
    task = task_from_env_id(ENV_ID, split="train", size=args.transitions)
    dataset = sft_dataset(task, list(range(len(task))))
    timer = TimeLimit(0)
    trainer = SFTTrainer(model=build_text_model(task.tokenizer, args.preset, seed=0), args=sft_config(config_args),
                         train_dataset=dataset, processing_class=task.tokenizer, callbacks=[timer])
    began = time.perf_counter()
    output = trainer.train()
    mean_tokens = float(np.mean([len(x) for x in dataset["input_ids"]]))
    rate = timer.steady_rate()
    return {"steps": int(trainer.state.global_step), "seconds": round(time.perf_counter() - began, 2),
            "first_step_seconds": round(timer.first_step_seconds, 3),
            "tokens_per_second_after_first_step": round(rate * args.batch_size * mean_tokens) if rate else None,
            "transitions_per_step": args.batch_size, "mean_transition_tokens": round(mean_tokens, 1),
            "train_loss": float(output.training_loss)}


def markdown(report: dict[str, Any]) -> str:
    from rlvr_envs.core.records import note

    new, trl, memo, a = report["token_rows"], report["trl"], report["memorisation"], report["arguments"]
    return "\n".join([
        "# Text SFT from scratch: the token-row loop vs TRL's SFTTrainer", "",
        f"`{report['run']['command']}`; {note(report['run'])}; {report['precision']}.", "",
        f"The {a['preset']} preset ({report['parameters'] / 1e6:.2f}M) on {a['transitions']} MiniTextWorld "
        f"transitions, loss on prompt and answer, {a['steps']} steps of ~{a['batch_size']} transitions each, same "
        "process, device and precision. Tokens per second count the transitions' own tokens after the first step "
        "(padding not counted).", "",
        "| trainer | batches | tokens/s after the first step | first step (s) | steps in (s) |",
        "|---|---|---:|---:|---:|",
        f"| token-row loop (`trainers.sft --from-scratch`) | {new['rows_per_step']} rows of {new['row_tokens']} "
        f"tokens (~{new['transitions_per_step']} transitions, {new['padding_share']:.1%} padding in all rows) | "
        f"{new['tokens_per_second_after_first_step']:,} | {new['first_step_seconds']} | {new['seconds']} |",
        f"| TRL SFTTrainer (padded to each batch's longest) | {trl['transitions_per_step']} transitions | "
        f"{trl['tokens_per_second_after_first_step']:,} | {trl['first_step_seconds']} | {trl['seconds']} |", "",
        f"Ratio (token-row loop / TRL): **{report['ratio']:.2f}x**.", "",
        f"Memorisation (`benchmarks.gpu_check.memorise`, the GPU check's text SFT arguments: {memo['preset']} preset, "
        f"lr {memo['lr']:g}, warmup {memo['warmup_steps']}, prompt loss {memo['prompt_loss']}): "
        f"**{memo['exact']}/{memo['transitions']} exact** (greedy) after {memo['steps']} steps "
        f"({memo['train_seconds']} s of training).", ""])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rlvr_envs.core.arguments import at_least
    from rlvr_envs.core.device import add_device_argument, setup_device
    from rlvr_envs.core.records import RunRecord

    parser = argparse.ArgumentParser(prog="python -m benchmarks.text_sft_speed",
                                     description=__doc__.split("\n\n")[0])
    add_device_argument(parser)
    parser.add_argument("--preset", default="small", help="trainers.sft.TEXT_PRESETS (small: the shipped size)")
    parser.add_argument("--transitions", type=at_least(8), default=64, help="MiniTextWorld training transitions")
    parser.add_argument("--steps", type=at_least(3), default=30, help="optimizer steps of each trainer")
    parser.add_argument("--batch-size", type=at_least(1), default=8, help="transitions per step")
    parser.add_argument("--memorise-steps", type=at_least(1), default=100)
    parser.add_argument("--threads", type=at_least(1), default=2)
    parser.add_argument("--out", default=str(RESULTS / "text_sft_speed"), help="writes OUT.json and OUT.md")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    precision = setup_device(args.device, threads=args.threads)
    record = RunRecord("python -m benchmarks.text_sft_speed", args, threads=args.threads)
    work = Path(tempfile.mkdtemp(prefix="text_sft_speed_"))
    try:
        from benchmarks.gpu_check import memorise

        trl = trl_rate(work / "trl", args)
        new = token_rows_rate(work / "token_rows", args)
        memorised = memorise(work / "memorise", device=args.device, threads=args.threads, steps=args.memorise_steps)
        parameters = json.loads((work / "token_rows" / "results.json").read_text())["parameters"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"run": record.finish(), "precision": precision.describe(), "parameters": parameters,
              "arguments": {k: v for k, v in vars(args).items() if k != "out"},
              "token_rows": new, "trl": trl,
              "ratio": new["tokens_per_second_after_first_step"] / trl["tokens_per_second_after_first_step"],
              "memorisation": memorised}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()


# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

from benchmarks import sections as fmt  # noqa: E402  (kept with the section it serves)


def section(files: list[dict]) -> str:
    """benchmarks.text_sft_speed renders its own tables; this adds the file."""
    d = files[0]
    body = markdown(d).split("\n", 2)[2].strip()  # its heading is said here
    return f"**Text SFT from scratch: the token-row loop vs TRL's SFTTrainer** ({fmt.shown(d['_file'])}): {body}"


SECTIONS = (
    fmt.Section("Text SFT speed", ("text_sft_speed.json",), "python -m benchmarks.text_sft_speed --device cpu",
                section),
)
