"""The shipped PushT video world models against their baselines, on the embedded held-out set.

For each layout (single-step: 3 frames -> 1; multi-step: 1 frame + 4 given actions -> 4),
at the default frame skip, on the deterministic held-out PushT episodes every user gets
(`RLVRWorld/PushT-*` with no data_dir), this measures:

* tokenizer reconstruction of the held-out frames (PSNR, SSIM, MAE, MSE);
* copy the last frame, in pixels (the real last history frame as the prediction);
* copy the last frame, in token space (its codes, decoded);
* the tokenizer ceiling (the gold codes, decoded);
* the MLE world model: greedy decoding, and samples at temperature 1, top-k 100 (the
  paper's evaluation setting), with the repetition rate (a predicted frame token-identical
  to the previous frame, or to the last history frame single-step);
* tokenizer flicker: token agreement of consecutive frames that barely differ in pixels.

    python -m benchmarks.experiments.video_world_models [--episodes 12] [--samples 2]

Writes benchmarks/results/video_world_models.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parents[1] / "results"
KEYS = ("mae", "mse", "psnr", "ssim")
#: PSNR of an exact copy is infinite; such a window counts as this many dB (the task caps its psnr reward alike)
PSNR_CAP = 100.0


def _mean(results, key: str) -> float:
    return float(np.mean([r.metrics[key] for r in results]))


def evaluate_layout(layout: str, episodes: int, samples: int, seed: int, device: str = "cpu") -> dict:
    from baselines.video import copy_last_frame_pixels, copy_last_frame_responses
    from rlvr_envs.video.task import VideoPredictionTask, VideoTaskConfig, shipped_world_model
    from rlvr_envs.video.world_model import generate_responses

    task = VideoPredictionTask(VideoTaskConfig(layout=layout, episodes=episodes, reward="mae", device=device))
    model = shipped_world_model(task)
    indices = list(range(len(task)))
    rows: dict[str, list] = {"tokenizer_ceiling": [], "copy_last_frame_tokens": [], "model_greedy": [],
                             "model_sampled": []}
    pixel_copy = []
    started = time.perf_counter()
    for start in range(0, len(indices), 16):
        chunk = indices[start:start + 16]
        prompts = np.stack([task.prompt_ids(i) for i in chunk])
        given = None if layout == "single" else np.stack([task.given_action_tokens(i) for i in chunk])
        rows["tokenizer_ceiling"] += task.verify(chunk, [task.target_ids(i) for i in chunk])
        rows["copy_last_frame_tokens"] += task.verify(chunk, copy_last_frame_responses(task, chunk))
        greedy = generate_responses(model, prompts, task.layout, given, temperature=0)
        rows["model_greedy"] += task.verify(chunk, list(greedy))
        for sample in range(samples):
            responses = generate_responses(model, prompts, task.layout, given, temperature=1.0, top_k=100,
                                           seed=seed + 1000 * sample + start)
            rows["model_sampled"] += task.verify(chunk, list(responses))
        pixel_copy += copy_last_frame_pixels(task, chunk, psnr_cap=PSNR_CAP)  # an exact copy: PSNR inf
    table = {name: {key: _mean(results, key) for key in (*KEYS, "repetition")} for name, results in rows.items()}
    table["copy_last_frame_pixels"] = {key: float(np.mean([m[key] for m in pixel_copy])) for key in KEYS}
    return {"windows": len(task), "samples_per_window": samples, "seconds": round(time.perf_counter() - started, 1),
            "model": {k: model.card.get(k) for k in ("command", "steps", "parameters", "train_windows", "note")},
            "table": table}


def tokenizer_report(episodes: int) -> dict:
    """Reconstruction of every held-out frame, and flicker on near-identical consecutive frames."""
    from rlvr_envs.video import metrics
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import _load_tokenizer, default_tokenizer_dir, embedded_heldout_dir

    tokenizer = _load_tokenizer(str(default_tokenizer_dir()))
    frames = [e.frames for e in PushTEpisodeDataset(embedded_heldout_dir(episodes, tokenizer.config.resolution[0]))]
    codes = [tokenizer.encode(f) for f in frames]
    decoded = torch.cat([tokenizer.decode(c) for c in codes])
    truth = torch.as_tensor(np.concatenate(frames)).float() / 255.0
    recon = {key: float(getattr(metrics, key)(decoded, truth).mean()) for key in KEYS}
    agreements = []
    for f, c in zip(frames, codes):
        pixel = np.abs(f[1:].astype(np.float32) - f[:-1].astype(np.float32)).mean(axis=(1, 2, 3)) / 255.0
        near = (pixel > 0) & (pixel < 0.002)
        agreements += list((c[1:] == c[:-1]).mean(axis=1)[near])
    return {"frames": int(len(truth)), "reconstruction": recon,
            "flicker": {"pairs": len(agreements), "token_agreement": float(np.mean(agreements)) if agreements else None,
                        "definition": "consecutive frames (10 fps) with 0 < pixel MAE < 0.002"}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=12, help="size of the embedded held-out set")
    parser.add_argument("--samples", type=int, default=2, help="model samples per window")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    from rlvr_envs.core.device import add_device_argument, setup_device

    add_device_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = str(setup_device(args.device).device)
    result = {"command": "python -m benchmarks.experiments.video_world_models " + " ".join(argv or []),
              "machine": f"{platform.machine()}, {args.threads} threads, " + (
                  "CPU only" if device == "cpu" else torch.cuda.get_device_name(device)),
              "tokenizer": tokenizer_report(args.episodes),
              "single": evaluate_layout("single", args.episodes, args.samples, args.seed, device),
              "multi": evaluate_layout("multi", args.episodes, args.samples, args.seed, device)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "video_world_models.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# PushT video world models vs baselines (embedded held-out set, {args.episodes} episodes)", "",
             f"`{result['command']}` on {result['machine']}. Raw units: pixels in [0, 1], PSNR in dB "
             f"(a window whose PSNR is infinite, an exact copy of unchanged frames, counts as {PSNR_CAP:.0f} dB).", "",
             "Tokenizer reconstruction of all {frames} held-out frames: ".format(**result["tokenizer"])
             + ", ".join(f"{k.upper()} {v:.4f}" for k, v in result["tokenizer"]["reconstruction"].items()) + ".",
             f"Flicker: {result['tokenizer']['flicker']['pairs']} consecutive frame pairs with 0 < pixel MAE < 0.002 "
             f"share {100 * (result['tokenizer']['flicker']['token_agreement'] or 0):.1f}% of their tokens.", ""]
    for layout in ("single", "multi"):
        block = result[layout]
        lines += [f"## {layout}-step ({block['windows']} windows, {block['samples_per_window']} samples each)", "",
                  "| prediction | MAE | MSE | PSNR | SSIM | repetition |", "|---|---:|---:|---:|---:|---:|"]
        for name, row in block["table"].items():
            rep = f"{100 * row['repetition']:.1f}%" if "repetition" in row else "n/a"
            lines.append(f"| {name} | {row['mae']:.5f} | {row['mse']:.6f} | {row['psnr']:.2f} | {row['ssim']:.4f} | {rep} |")
        lines.append("")
    (RESULTS / "video_world_models.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return result

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    single, multi = d["single"], d["multi"]
    s, m = single["table"], multi["table"]
    cards = [fmt.card("pusht_single_step_model"), fmt.card("pusht_multi_step_model")]
    trained = [c["train_seconds_this_run"] for c in cards if "train_seconds_this_run" in c]
    steps = {single["model"]["steps"], multi["model"]["steps"]}
    parameters = {single["model"]["parameters"], multi["model"]["parameters"]}
    skip = {c.get("args", {}).get("frame_skip") for c in cards} - {None}
    future = cards[1].get("args", {}).get("future")
    size = f"{parameters.pop() / 1e6:.2f}M-parameter " if len(parameters) == 1 else ""
    how = f"MLE, {steps.pop():,} steps each" if len(steps) == 1 else "MLE"
    if trained:
        machines = {c.get("machine") for c in cards} - {None}
        how += f", {fmt.minutes_range(trained)} minutes each on {machines.pop() if len(machines) == 1 else 'CPU'}"
    text = (f"**PushT video world models** (`{d['command'].strip()}`, {fmt.shown(d['_file'])}; {d['machine']}): the "
            f"shipped {size}LLaMA models ({how}; model cards beside the weights) on the embedded held-out set "
            f"({single['windows']} single-step and {multi['windows']} multi-step windows"
            f"{f', frame skip {skip.pop()}' if len(skip) == 1 else ''}), MAE of decoded frames (pixels in [0, 1]) "
            f"and repetition:\n\n")
    names = [("copy_last_frame_pixels", "copy the last frame, in pixels"),
             ("tokenizer_ceiling", "tokenizer ceiling (gold codes, decoded)"),
             ("copy_last_frame_tokens", "copy the last frame, in token space"),
             ("model_greedy", "MLE model, greedy"), ("model_sampled", "MLE model, sampled")]
    rows = [[label, f"{s[key]['mae']:.5f}", f"{m[key]['mae']:.5f}",
             fmt.rate(m[key]["repetition"]) if "repetition" in m[key] else "n/a"] for key, label in names]
    frames = f" ({future} frames)" if future else ""
    text += fmt.table(["prediction", "single-step MAE", f"multi-step MAE{frames}", "multi-step repetition"],
                      ["---", "---:", "---:", "---:"], rows) + "\n\n"

    def versus(table: dict, name: str) -> str:
        model, copy = table[name], table["copy_last_frame_tokens"]
        return (f"MAE {model['mae']:.5f} vs {copy['mae']:.5f}, PSNR {model['psnr']:.2f} vs "
                f"{copy['psnr']:.2f} dB")

    def verdict(table: dict, which: str) -> str:
        copy = table["copy_last_frame_tokens"]["mae"]
        greedy, sampled = table["model_greedy"]["mae"], table["model_sampled"]["mae"]
        if greedy < copy and sampled < copy:
            return f"the {which} model beats copying the last frame in token space with both decodings"
        if greedy < copy:
            margin = (copy - greedy) / copy * 100
            return (f"the {which} model beats copying the last frame in token space only with greedy decoding, "
                    f"and by {margin:.1f}% ({versus(table, 'model_greedy')})")
        return f"the {which} model does not beat it ({versus(table, 'model_greedy')})"

    text += f"Read honestly: {verdict(s, 'single-step')}; {verdict(m, 'multi-step')}"
    if m["model_greedy"]["repetition"] > 0:
        text += f" and repeats frames under greedy decoding ({fmt.rate(m['model_greedy']['repetition'])})"
    text += "."
    pixels, ceiling = s["copy_last_frame_pixels"]["mae"], s["tokenizer_ceiling"]["mae"]
    tokenizer = d["tokenizer"]
    if pixels < ceiling:
        text += (f" Even at this frame skip, copying the last frame *in pixels* beats the tokenizer's own "
                 f"ceiling (MAE {pixels:.5f} vs {ceiling:.5f}): this tokenizer (held-out PSNR "
                 f"{tokenizer['reconstruction']['psnr']:.1f}, SSIM {tokenizer['reconstruction']['ssim']:.3f}) caps "
                 f"what any model behind it can reach on PushT.")
    flicker = tokenizer["flicker"]
    text += (f" The tokenizer flickers: {flicker['definition']} share {fmt.rate(flicker['token_agreement'])} of their "
             f"tokens. These are the MLE baselines RLVR post-training starts from.")
    return text


SECTIONS = (
    fmt.Section("PushT video world models", ("video_world_models.json",), "python -m benchmarks.experiments.video_world_models",
                section),
)


if __name__ == "__main__":
    main()
