"""KV-cached vs uncached generation of a multi-step video response, in one run.

A multi-step PushT response is T frames of codes with the given action tokens forced after
each one; the sampler (`rlvr_envs.video.world_model.generate_responses`) keeps the KV cache
across frames and feeds each forced action in one forward. This measures it against
recomputing the whole sequence at every step, on the same model, prompts and seed (greedy
decoding, so both must produce identical tokens, which is checked).

    python -m benchmarks.experiments.video_generation [--preset small] [--batch 16] [--future 4]

Writes benchmarks/results/video_generation.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import goals
from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main(argv: list[str] | None = None) -> dict:
    from rlvr_envs.video.layout import MultiStepLayout, VideoVocabulary
    from rlvr_envs.video.world_model import PRESETS, build_world_model, generate_responses

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small", choices=sorted(PRESETS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--future", type=int, default=4, help="frames per response")
    parser.add_argument("--tokens-per-frame", type=int, default=64)
    parser.add_argument("--action-dims", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument, setup_device

    add_device_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = setup_device(args.device).device

    vocab = VideoVocabulary(frame_codes=1000, action_bins=256)
    layout = MultiStepLayout(vocab, args.tokens_per_frame, args.action_dims, history=1, future=args.future)
    model = build_world_model(vocab, layout.prompt_len + layout.response_len, args.preset).eval().to(device)
    rng = np.random.default_rng(0)
    prompts = np.concatenate([rng.integers(0, 1000, size=(args.batch, args.tokens_per_frame)),
                              vocab.action_tokens(rng.integers(0, 256, size=(args.batch, args.action_dims)))], axis=1)
    given = vocab.action_tokens(rng.integers(0, 256, size=(args.batch, args.future, args.action_dims)))

    def timed(use_cache: bool) -> tuple[float, np.ndarray]:
        best, out = float("inf"), None
        for _ in range(args.repeats):
            start = time.perf_counter()
            out = generate_responses(model, prompts, layout, given, temperature=0, use_cache=use_cache)
            best = min(best, time.perf_counter() - start)
        return best, out

    cached_s, cached = timed(True)
    uncached_s, uncached = timed(False)
    result = {
        "command": "python -m benchmarks.experiments.video_generation " + " ".join(argv or []),
        "machine": f"{platform.machine()}, {args.threads} threads, " + (
            "CPU only" if device.type == "cpu" else torch.cuda.get_device_name(device)),
        "model": f"LLaMA preset {args.preset}, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters",
        "batch": args.batch, "prompt_tokens": layout.prompt_len, "response_tokens": layout.response_len,
        "generated_tokens_per_response": int(layout.loss_mask().sum()),
        "cached_seconds": round(cached_s, 3), "uncached_seconds": round(uncached_s, 3),
        "speedup": round(uncached_s / cached_s, 2), "identical_tokens": bool(np.array_equal(cached, uncached)),
        "best_of": args.repeats,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "video_generation.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "video_generation.md").write_text(
        f"# KV-cached vs uncached multi-step generation\n\n`{result['command']}` on {result['machine']}; "
        f"{result['model']}; batch {args.batch}, {layout.response_len}-token responses "
        f"({args.future} frames of {args.tokens_per_frame} codes, {args.action_dims} forced action tokens each), "
        f"best of {args.repeats}.\n\n| | seconds |\n|---|---:|\n| KV cache | {cached_s:.2f} |\n"
        f"| no cache | {uncached_s:.2f} |\n| speed-up | {result['speedup']:.1f}x |\n\n"
        f"Greedy tokens identical: {result['identical_tokens']}.\n")
    print(json.dumps(result, indent=2))
    return result

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    forced = d["response_tokens"] - d["generated_tokens_per_response"]
    met = "met" if d["speedup"] >= goals.GOAL_KV_SPEEDUP else "**not met**"
    same = "identical" if d["identical_tokens"] else "**not identical**"
    return (f"**KV-cached generation** (`{d['command'].strip()}`, {fmt.shown(d['_file'])}; {d['machine']}): a "
            f"multi-step PushT response ({d['response_tokens']} tokens: {d['generated_tokens_per_response']} "
            f"generated frame codes and {forced} action tokens forced between frames) for {d['batch']} prompts "
            f"({d['model']}): {d['cached_seconds']:.1f} s with the KV cache vs {d['uncached_seconds']:.1f} s "
            f"recomputing the sequence at every step (best of {d['best_of']}), **{d['speedup']:.1f}x** (goal: at "
            f"least {goals.GOAL_KV_SPEEDUP:g}x, {met}), greedy tokens {same}.")


SECTIONS = (
    fmt.Section("KV-cached generation", ("video_generation.json",), "python -m benchmarks.experiments.video_generation",
                section),
)


if __name__ == "__main__":
    main()
