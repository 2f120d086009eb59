"""Held-out reconstruction of the compressed (multi-step) tokenizer vs the per-frame tokenizer.

On the held-out PushT episodes of a generated folder (episode index % 10 == 0, the split of
both tokenizer trainers), clips of 5 frames at a frame stride of 5 simulator steps (the
PushT tasks' default `frame_skip`): frame 0 is the context frame, frames 1-4 lie 5, 10, 15
and 20 steps later. For every frame this measures PSNR, SSIM, MAE, MSE of

* the compressed tokenizer: the context frame from its context codes, every clip frame
  (frame 0 too, the `[f1 a1]` of the multi-step prompt) from its few frame codes decoded
  with the context frame's features;
* the per-frame tokenizer (the shipped `pusht_frame_tokenizer`) on the same frames;
* copying the real context frame (the pixel baseline of a frame that is not encoded at all);

and counts the tokens of one 5-frame clip under each tokenizer.

    python -m benchmarks.experiments.compressed_tokenizer --tokenizer rlvr_envs/assets/video/pusht_compressed_tokenizer

Writes benchmarks/results/compressed_tokenizer.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

from benchmarks import sections as fmt
from rlvr_envs.video.compressed_tokenizer import CLIP_METRICS as KEYS
from rlvr_envs.video.compressed_tokenizer import PSNR_CAP, evaluate_clips, heldout_clips

RESULTS = Path(__file__).resolve().parents[1] / "results"


def markdown(result: dict) -> str:
    ev = result["eval"]
    tok = ev["tokens_per_clip"]
    lines = [f"# Compressed (multi-step) tokenizer: held-out reconstruction ({ev['clips']} clips of "
             f"{ev['frames_per_clip']} frames, frame stride {result['frame_skip']})", "",
             f"`{result['command']}` on {result['machine']}.", "",
             f"Tokenizer: `{result['tokenizer']}`; per-frame tokenizer: `{result['frame_tokenizer']}`. Held-out episodes "
             f"of `{result['data']}` (index % {result['test_every']} == 0). Frame 0 of each clip is the context frame; "
             "'future frames' are frames 1-4 (5-20 simulator steps later). PSNR in dB, pixels in [0, 1].", "",
             "| tokenizer / frames | tokens per 5-frame clip | PSNR | SSIM | MAE | MSE |", "|---|---:|---:|---:|---:|---:|"]

    def row(name, tokens, m):
        return f"| {name} | {tokens} | {m['psnr']:.2f} | {m['ssim']:.4f} | {m['mae']:.5f} | {m['mse']:.6f} |"

    comp = ev["compressed"]
    lines.append(row("compressed, future frames 1-4", f"{tok['compressed']} ({tok['tokens_per_context']} + "
                     f"{ev['frames_per_clip']} x {tok['tokens_per_future']})", comp["future_frames"]))
    lines.append(row("compressed, frame 0 from its coarse codes", "", comp["frame0_coarse"]))
    lines.append(row("compressed, context frame from its context codes", "", comp["context_frame_fine"]))
    if "per_frame" in ev:
        lines.append(row("per-frame tokenizer, future frames 1-4",
                         f"{tok['per_frame']} ({ev['frames_per_clip']} x {tok['per_frame'] // ev['frames_per_clip']})",
                         ev["per_frame"]["future_frames"]))
    lines.append(row("copy the real context frame (no tokens), frames 1-4", "-", ev["copy_context_pixels"]["future_frames"]))
    lines += ["", "By offset from the context frame (PSNR / MAE):", "",
              "| offset (steps) | compressed | per-frame | copy context |", "|---:|---|---|---|"]
    for i, m in enumerate(comp["by_offset"]):
        pf = ev["per_frame"]["by_offset"][i] if "per_frame" in ev else None
        cp = ev["copy_context_pixels"]["by_offset"][i]
        lines.append(f"| {i * result['frame_skip']} | {m['psnr']:.2f} / {m['mae']:.5f} | "
                     + (f"{pf['psnr']:.2f} / {pf['mae']:.5f}" if pf else "-")
                     + f" | {cp['psnr']:.2f} / {cp['mae']:.5f} |")
    lines += ["", f"Codes used: {comp['future_codes_used']} frame codes, {comp['context_codes_used']} context codes.",
              "Copying the context frame scores exactly at offset 0 (PSNR capped at "
              f"{PSNR_CAP:.0f} dB).", ""]
    card = result.get("card") or {}
    if card:
        lines += [f"The tokenizer's card: {card.get('steps')} steps, {card.get('train_seconds')} s of training "
                  f"(`{card.get('command')}`); context branch {card.get('context_branch')}.", ""]
    future, copy = comp["future_frames"], ev["copy_context_pixels"]["future_frames"]
    verdict = []
    if "per_frame" in ev:
        per_frame = ev["per_frame"]["future_frames"]
        verdict.append(f"On frames 1-4 the compressed tokenizer is {per_frame['psnr'] - future['psnr']:.2f} dB PSNR "
                       f"below the per-frame tokenizer with {tok['compressed']} instead of {tok['per_frame']} tokens "
                       f"per clip ({tok['per_frame'] / tok['compressed']:.1f}x fewer).")
    better = [k.upper() for k in KEYS if (future[k] > copy[k]) == (k in ("psnr", "ssim"))]
    worse = [k.upper() for k in KEYS if k.upper() not in better]
    verdict.append("Against copying the real context frame (no tokens at all) it is better in "
                   f"{', '.join(better) or 'nothing'} and worse in {', '.join(worse) or 'nothing'}.")
    return "\n".join(lines + [" ".join(verdict), ""])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="rlvr_envs/assets/video/pusht_compressed_tokenizer")
    parser.add_argument("--frame-tokenizer", default="rlvr_envs/assets/video/pusht_frame_tokenizer")
    parser.add_argument("--data", default="data/pusht64")
    parser.add_argument("--test-every", type=int, default=10)
    parser.add_argument("--frame-skip", type=int, default=5)
    parser.add_argument("--clip-stride", type=int, default=10)
    parser.add_argument("--max-clips", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--out", default=str(RESULTS / "compressed_tokenizer"), help="results path without suffix")
    parser.add_argument("--render", action="store_true", help="only rewrite the .md from the saved .json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.render:
        text = markdown(json.loads(out.with_suffix(".json").read_text()))
        out.with_suffix(".md").write_text(text)
        print(text)
        return {}
    torch.set_num_threads(args.threads)
    from rlvr_envs.core.device import setup_device
    from rlvr_envs.video.compressed_tokenizer import CompressedTokenizer
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from trainers.train_frame_tokenizer import load_episode_frames

    started = time.perf_counter()
    device = setup_device(args.device).device
    model = CompressedTokenizer.load(args.tokenizer, device=device)
    frame_tokenizer = FrameTokenizer.load(args.frame_tokenizer, device=device)
    _, test = load_episode_frames(args.data, args.test_every)
    clips = heldout_clips(test, args.frame_skip, 5, args.clip_stride, args.max_clips)
    command = " ".join(["python -m benchmarks.experiments.compressed_tokenizer", *(sys.argv[1:] if argv is None else argv)])
    result = {"command": command,
              "machine": f"{platform.machine()}, {args.threads} thread(s), CPU only",
              "tokenizer": args.tokenizer, "frame_tokenizer": args.frame_tokenizer, "data": args.data,
              "test_every": args.test_every, "frame_skip": args.frame_skip,
              "card": CompressedTokenizer.card(args.tokenizer),
              "eval": evaluate_clips(model, clips, frame_tokenizer)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    out.with_suffix(".md").write_text(text)
    print(text)
    return result

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    e = d["eval"]
    compressed, per_frame, copy = (e["compressed"]["future_frames"], e["per_frame"]["future_frames"],
                                   e["copy_context_pixels"]["future_frames"])
    tokens = e["tokens_per_clip"]
    return (f"**Compressed multi-step tokenizer** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}): on "
            f"{e['clips']} held-out clips of {e['frames_per_clip']} frames (frame skip {d['frame_skip']}), the later "
            f"frames decode at PSNR {compressed['psnr']:.2f} / MAE {compressed['mae']:.5f} from "
            f"{tokens['compressed']} tokens per clip, against {per_frame['psnr']:.2f} / {per_frame['mae']:.5f} for "
            f"the per-frame tokenizer's {tokens['per_frame']} and {copy['psnr']:.2f} / {copy['mae']:.5f} for "
            f"copying the real context frame (no tokens).")


SECTIONS = (
    fmt.Section("Compressed multi-step tokenizer", ("compressed_tokenizer.json",),
                "python -m benchmarks.experiments.compressed_tokenizer", section),
)


if __name__ == "__main__":
    main()
