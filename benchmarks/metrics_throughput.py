"""Throughput of the video reward -(L1 + LPIPS): batched calls vs one call per frame.

Why: verification sits inside the RL loop (16 samples per GRPO group, every step), so the
reward must be computed for many frames at once. This measures, in one run and on the
same frames, frames per second of `rlvr_envs.video.metrics.frame_reward` called

- per frame: one call per (prediction, target) pair, as a naive per-env verifier would;
- batched: one call for all N pairs (distinct targets);
- group-batched: one call for N predictions of one shared target (a GRPO group; the
  LPIPS trunk then runs on N + 1 frames instead of 2N),

at 64x64, 96x96 (PushT) and 256x320 (RT-1). Rounds alternate the three modes so that
load from other processes hits all of them alike; the reported ratio is the median over
rounds of (batched fps / per-frame fps). Frame content does not change the cost of these
metrics, so frames are seeded uniform noise.

Run: `python -m benchmarks.metrics_throughput [--net alex]` (1-3 minutes on 2 CPU cores).
Writes `benchmarks/results/metrics_throughput.json` and `.md` (`..._alex.*` for AlexNet). LPIPS uses the real ImageNet trunk
when its weights are cached, else (or with `--random-backbone`) a seeded random trunk of
identical cost; the output records which.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import goals
from benchmarks import sections as fmt
from rlvr_envs.video.metrics import LPIPSWeightsUnavailable, frame_reward, load_lpips

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_SIZES = {"64x64": 16, "96x96": 16, "256x320": 8}  # resolution -> frames per call (N)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(model, height: int, width: int, frames: int, rounds: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    pred = torch.from_numpy(rng.random((frames, 1, height, width, 3), dtype=np.float32))
    target = torch.from_numpy(rng.random((frames, 1, height, width, 3), dtype=np.float32))
    shared = target[:1]

    def per_frame():
        for i in range(frames):
            frame_reward(pred[i : i + 1], target[i : i + 1], model)

    def batched():
        frame_reward(pred, target, model)

    def group():
        frame_reward(pred, shared, model)

    # The batched result must equal the per-frame results (same numbers, just faster).
    one_by_one = torch.cat([frame_reward(pred[i : i + 1], target[i : i + 1], model).reward for i in range(frames)])
    max_difference = float((frame_reward(pred, target, model).reward - one_by_one).abs().max())
    group(), batched()  # warm-up: oneDNN builds its kernels per input shape

    seconds = {"per_frame": [], "batched": [], "group_batched": []}
    for _ in range(rounds):
        seconds["per_frame"].append(timed(per_frame))
        seconds["batched"].append(timed(batched))
        seconds["group_batched"].append(timed(group))
    fps = {mode: [frames / s for s in values] for mode, values in seconds.items()}
    return {
        "resolution": f"{height}x{width}",
        "frames_per_call": frames,
        "rounds": rounds,
        "frames_per_second": {mode: round(statistics.median(values), 3) for mode, values in fps.items()},
        "batched_over_per_frame": round(statistics.median(
            b / p for b, p in zip(fps["batched"], fps["per_frame"])), 2),
        "group_batched_over_per_frame": round(statistics.median(
            g / p for g, p in zip(fps["group_batched"], fps["per_frame"])), 2),
        "seconds": {mode: [round(s, 3) for s in values] for mode, values in seconds.items()},
        "max_abs_difference_batched_vs_per_frame": max_difference,
    }


def markdown(result: dict) -> str:
    from rlvr_envs.core.records import note

    lines = [
        "# Reward throughput: -(L1 + LPIPS), batched vs per frame",
        "",
        f"Command: `{result['command']}`  ",
        f"Machine: {result['machine']['device']} ({result['machine']['cpu']}, {result['machine']['cpu_count']} cores, "
        f"torch threads {result['machine']['torch_threads']}), torch {result['machine']['torch']}  ",
        f"LPIPS: net `{result['lpips_net']}`, backbone `{result['lpips_backbone']}`  ",
        (f"Run: {note(result['run'])}; rounds alternate the modes" if "run" in result else
         f"Load average before/after: {result['load_average']['before']} / {result['load_average']['after']} "
         "(shared machine; rounds alternate the modes)"),
        "",
        "| resolution | frames/call | per-frame fps | batched fps | batched / per-frame | group fps | "
        "group / per-frame |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["results"]:
        fps = row["frames_per_second"]
        lines.append(
            f"| {row['resolution']} | {row['frames_per_call']} | {fps['per_frame']:.2f} | {fps['batched']:.2f} | "
            f"{row['batched_over_per_frame']:.2f}x | {fps['group_batched']:.2f} | "
            f"{row['group_batched_over_per_frame']:.2f}x |"
        )
    met = [row["resolution"] for row in result["results"] if row["batched_over_per_frame"] >= 5]
    missed = [row["resolution"] for row in result["results"] if row["batched_over_per_frame"] < 5]
    lines += [
        "",
        f"Goal batched >= 5x per frame: met at {', '.join(met) or 'no resolution'}; "
        f"not met at {', '.join(missed) or 'no resolution'} on this machine.",
        "",
        "\"group\": N predictions scored against one shared target (a GRPO group), so the LPIPS trunk runs on N + 1 "
        "frames instead of 2N. Ratios are medians over rounds of per-round ratios. On a CPU the convolutional trunk is "
        "compute-bound even at one frame per pass, so batching can only remove per-call overhead; a GPU run "
        "(`--device cuda`) is needed to check the goal where per-call overhead dominates.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--net", default="vgg", choices=("vgg", "alex"))
    from rlvr_envs.core.device import add_device_argument, setup_device

    add_device_argument(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--random-backbone", action="store_true", help="force the seeded random trunk")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None,
                        help="default: benchmarks/results/metrics_throughput.json (vgg) or ..._alex.json")
    args = parser.parse_args(argv)
    args.device = str(setup_device(args.device).device)

    model = None
    if not args.random_backbone:
        try:
            model = load_lpips(args.net, args.device, allow_download=False)
        except LPIPSWeightsUnavailable as error:
            print(f"pretrained trunk unavailable, using a seeded random trunk of the same cost: {error}",
                  file=sys.stderr)
    if model is None:
        model = load_lpips(args.net, args.device, random_backbone_seed=args.seed)

    from rlvr_envs.core.records import RunRecord

    record = RunRecord("python -m benchmarks.metrics_throughput", args, threads=torch.get_num_threads())
    results = []
    for resolution, frames in DEFAULT_SIZES.items():
        height, width = (int(v) for v in resolution.split("x"))
        row = measure(model, height, width, frames, args.rounds, args.seed)
        results.append(row)
        print(f"{resolution}: per-frame {row['frames_per_second']['per_frame']:.2f} fps, batched "
              f"{row['frames_per_second']['batched']:.2f} fps ({row['batched_over_per_frame']}x), group "
              f"{row['frames_per_second']['group_batched']:.2f} fps ({row['group_batched_over_per_frame']}x)")
    device = torch.device(args.device)
    result = {
        "command": "python -m benchmarks.metrics_throughput" + ("" if argv is None else " " + " ".join(argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "lpips_net": model.net,
        "lpips_backbone": model.backbone,
        "run": (run := record.finish()),
        "load_average": {"before": run["load"]["before"], "after": run["load"]["after"]},
        "results": results,
    }
    out = Path(args.out or RESULTS / ("metrics_throughput.json" if args.net == "vgg" else
                                      f"metrics_throughput_{args.net}.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

NETS = {"vgg": "VGG", "alex": "Alex"}


def section(files: list[dict]) -> str:
    runs = [f for f in files if "results" in f]
    backbones = {r["lpips_backbone"] for r in runs}
    sources = "; ".join(f"`{r['command']}` with LPIPS net `{r['lpips_net']}` -> {fmt.shown(r['_file'])}" for r in runs)
    text = (f"**Reward throughput** ({sources}; {fmt.machine(runs[0])}), -(L1+LPIPS), LPIPS backbone "
            f"`{', '.join(sorted(backbones))}`:\n\n")
    rows = [[NETS.get(r["lpips_net"], r["lpips_net"]), row["resolution"], f"{row['batched_over_per_frame']:.2f}x",
             f"{row['group_batched_over_per_frame']:.2f}x"] for r in runs for row in r["results"]]
    text += fmt.table(["net", "resolution", "batched / per-frame", "GRPO group of 16 on one target / per-frame"],
                      ["---", "---", "---:", "---:"], rows) + "\n\n"
    best = max(row["batched_over_per_frame"] for r in runs for row in r["results"])
    devices = {str(r.get("machine", {}).get("device", "")).lower() for r in runs}
    if best >= goals.GOAL_BATCHED_REWARD_SPEEDUP:
        text += f"The goal of batched at least {goals.GOAL_BATCHED_REWARD_SPEEDUP:g}x per-frame is met (best {best:.2f}x)."
    else:
        text += (f"The goal of batched at least {goals.GOAL_BATCHED_REWARD_SPEEDUP:g}x per-frame is **not met on this "
                 f"CPU** (best {best:.2f}x): the convolutional trunk is compute-bound even at one frame per call, "
                 f"so batching only removes per-call overhead.")
    if not any("cuda" in d or "gpu" in d for d in devices):
        text += " A GPU run (`--device cuda`) is still to be measured."
    return text


SECTIONS = (
    fmt.Section("Reward throughput", ("metrics_throughput.json",), "python -m benchmarks.metrics_throughput [--net alex]",
                section, optional=("metrics_throughput_alex.json",)),
)


if __name__ == "__main__":
    sys.exit(main())
