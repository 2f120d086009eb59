"""The preset table of docs/scale_out.md: which model preset fits which GPU memory, from the arithmetic.

    python -m benchmarks.scale_table            # print it
    python -m benchmarks.scale_table --update   # rewrite the table in docs/scale_out.md
    python -m benchmarks.scale_table --check    # fail if docs/scale_out.md holds another table (a test runs this)

Every number comes from `rlvr_envs.core.sizing` over the presets themselves (video:
`rlvr_envs.video.world_model.PRESETS`, text: `trainers.sft.TEXT_PRESETS`) and the token
layouts of the tasks they serve; nothing is measured here, so the table says what it assumes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "scale_out.md"
START, END = "<!-- preset-table:start (benchmarks/scale_table.py --update) -->", "<!-- preset-table:end -->"
#: GPU memory sizes of common cards, GiB (the H200 check machine shows 139)
GPUS = {"24 GiB (RTX 4090, A10)": 24, "40 GiB (A100-40G)": 40, "80 GiB (A100/H100-80G)": 80, "139 GiB (H200)": 139}


def workloads() -> list[tuple[str, str, dict[str, int], int, int]]:
    """(workload, preset, preset dict, vocabulary, tokens per sample) rows."""
    from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary
    from rlvr_envs.video.world_model import PRESETS
    from trainers.sft import TEXT_PRESETS

    pusht = SingleStepLayout(VideoVocabulary(1000, 256), 64, 10, 3)  # the shipped 64x64 tokenizer, history 3
    rt1_single = SingleStepLayout(VideoVocabulary(4375, 256), 320, 13, 4)  # RLVR-World: 1,333 + 321 tokens
    rt1_multi = MultiStepLayout(VideoVocabulary(4375, 256, context_codes=4375), 80, 13, 1, 7, context_len=1280)
    rows = []
    for name in ("pusht", "small", "medium"):
        rows.append(("PushT single-step 64x64", name, PRESETS[name], pusht.vocab.size,
                     pusht.prompt_len + pusht.response_len))
    for name in ("medium", "large", "paper"):
        rows.append(("RT-1 single-step 256x320", name, PRESETS[name], rt1_single.vocab.size,
                     rt1_single.prompt_len + rt1_single.response_len))
    rows.append(("RT-1 multi-step 256x320", "paper", PRESETS["paper"], rt1_multi.vocab.size,
                 rt1_multi.prompt_len + rt1_multi.response_len))
    for name in ("small", "base", "medium"):
        rows.append(("MiniTextWorld text (1,024 tokens)", name, TEXT_PRESETS[name], 1024, 1024))
    return rows


def table() -> str:
    from rlvr_envs.core.sizing import GIB, preset_cost

    head = ["workload", "preset", "parameters", "tokens / sample", "train GFLOP / token",
            "activations / sample", "weights + grads + AdamW", *[f"samples / step, {g}" for g in GPUS]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for workload, name, preset, vocab, tokens in workloads():
        cost = preset_cost(preset, vocab, tokens)
        fits = [str(cost.max_batch(gib * GIB)) for gib in GPUS.values()]
        lines.append(f"| {workload} | {name} | {cost.parameters / 1e6:.1f}M | {tokens:,} | "
                     f"{cost.train_flops_per_token / 1e9:.2f} | {cost.activation_bytes_per_sample / 2**20:,.0f} MiB | "
                     f"{cost.state_bytes / GIB:.2f} GiB | " + " | ".join(fits) + " |")
    lines += ["", "Samples per optimizer step on one GPU without activation checkpointing, keeping 10% of its memory "
              "free: (memory x 0.9 - 16 bytes per parameter) / activations per sample (bf16 activations, fused "
              "attention, fp32 logits for the loss; `rlvr_envs.core.sizing`). Under DDP each GPU holds a full copy, "
              "so N GPUs take N times the samples per step; a larger global batch than fits takes gradient "
              "accumulation or activation checkpointing. Estimates, not measurements."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help=f"rewrite the table in {DOC}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 if {DOC} holds another table")
    args = parser.parse_args(argv)
    text = table()
    if not (args.update or args.check):
        print(text)
        return 0
    doc = DOC.read_text(encoding="utf-8")
    if START not in doc or END not in doc:
        print(f"{DOC}: no '{START}' ... '{END}' block to update", file=sys.stderr)
        return 1
    before, rest = doc.split(START, 1)
    current, after = rest.split(END, 1)
    if args.check:
        if current.strip() != text.strip():
            print(f"{DOC}: the preset table is stale; run python -m benchmarks.scale_table --update", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(f"{before}{START}\n{text}\n{END}{after}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
