"""World-model speed against the hardware, measured in one run: the device's ceilings, decoding
eager vs static (KV cache + CUDA graphs), and training eager vs compiled.

    python -m benchmarks.world_model_speed --device cuda        # paper preset, RT-1 single-step shapes
    python -m benchmarks.world_model_speed --device cpu --preset small --decode-batch 8 --train-batch 4
    python -m benchmarks.world_model_speed --device cpu --tiny  # the same code path in seconds
    python -m benchmarks.world_model_speed --device cuda --variants static_plain  # the defaults vs the old path

* ceilings: a large bf16 matmul's FLOP/s and a device-to-device copy's bytes/s (read + written),
  the two rates every other figure is a share of.
* decoding: `generate_responses` (temperature 1, top-k 100) of `batch` responses after a prompt
  of RT-1's single-step length, in GRPO groups (`group` rows share a prompt, which the static engine
  prefills once): each engine's prefill milliseconds, timed apart, and its decode tokens/s (the
  generation's time less the prefill's) as a share of the memory floor: one decode step must read
  the filled KV cache (bf16; on average the prompt and half the response) and the bf16 weights once,
  so floor seconds per step = those bytes / the copy rate measured in the same run. On a GPU the
  static engine's defaults (row "static": `rlvr_envs.video.static_decoder`, FlexAttention over the
  filled blocks, compiled, bf16 weight copies, sampling inside the graph) run beside
  `DECODE_VARIANTS`: the plain step the first H200 run measured, then one change at a time (compiled
  rows unless --no-compile); a variant that fails, or falls back to the plain step, is reported as
  failed, and the "static" row that falls back is timed as what ran, with the reason.
  Each row's first call (compile and graph captures included) is timed too: what a run pays once per
  decoder shape before the steady rate.
* training: `trainers.train_video_world_model.training_step` on random windows of the same
  length, eager and `torch.compile`d, tokens/s and MFU = tokens/s x training FLOPs per token
  (`rlvr_envs.core.sizing`) / the measured matmul rate; the first step's loss of both (same
  weights, same windows) shows compile changes no arithmetic beyond rounding.

Writes benchmarks/results/world_model_speed.{json,md} (or --out) with the run record.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import sections as fmt
from rlvr_envs.core.records import note

RESULTS = Path(__file__).parent / "results" / "world_model_speed"


@dataclass(frozen=True)
class SpeedSizes:
    preset: str = "paper"
    tokens_per_frame: int = 320  #: RT-1: 16x20 codes of a 256x320 frame
    history: int = 4
    decode_batch: int = 64
    group: int = 16  #: decoded rows per prompt (GRPO's group: the static engine prefills each prompt once)
    train_batch: int = 32  #: windows per step (one forward when it fits)
    train_steps: int = 12  #: timed steps per mode, after the first
    decode_repeats: int = 2  #: timed generations per engine, after a warm-up (the best counts)
    matmul: int = 8192
    copy_mib: int = 2048


TINY = SpeedSizes(preset="tiny", tokens_per_frame=16, history=2, decode_batch=2, group=2, train_batch=2, train_steps=2,
                  decode_repeats=1, matmul=256, copy_mib=16)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(device, run, repeats: int = 1, first: list[float] | None = None) -> float:
    """Best wall seconds of `repeats` calls of `run` (after one warm-up call, whose seconds are
    appended to `first` when given: a compile's or a graph capture's cost), synchronised."""
    began = time.perf_counter()
    run()
    _sync(device)
    if first is not None:
        first.append(time.perf_counter() - began)
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        began = time.perf_counter()
        run()
        _sync(device)
        best = min(best, time.perf_counter() - began)
    return best


def ceilings(device, sizes: SpeedSizes) -> dict[str, float]:
    """bf16 matmul FLOP/s (n x n x n, random data) and copy bytes/s (read + written) of `device`."""
    import torch

    n = sizes.matmul
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    matmul = _timed(device, lambda: torch.mm(a, b), repeats=5)
    source = torch.empty(sizes.copy_mib * 2**20, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    copy = _timed(device, lambda: target.copy_(source), repeats=5)
    return {"matmul_flops": 2 * n**3 / matmul, "copy_bytes_per_second": 2 * sizes.copy_mib * 2**20 / copy,
            "matmul_size": n, "copy_mib": sizes.copy_mib}


def _layout(sizes: SpeedSizes):
    from rlvr_envs.video.layout import SingleStepLayout, VideoVocabulary

    vocab = VideoVocabulary(frame_codes=4375, action_bins=256)
    return vocab, SingleStepLayout(vocab, sizes.tokens_per_frame, 13, sizes.history)


#: the static decoder's variants a GPU run times beside its defaults (row "static"), as
#: `decoder_settings` keywords: the path the H200 measured (sdpa, fp32 weights cast under autocast, not
#: compiled), then one change at a time, then the other compiled step attentions. `compiled` rows need
#: `compile_step` (each compile is tens of seconds); bf16 copies apply under bf16 autocast only.
DECODE_VARIANTS: dict[str, dict[str, Any]] = {
    "static_plain": {"attention": "sdpa", "compiled": False, "bf16_weights": False},
    "static_bf16_weights": {"attention": "sdpa", "compiled": False, "bf16_weights": True},
    "static_flex": {"attention": "flex", "compiled": False, "bf16_weights": True},
    "static_compiled_sdpa": {"attention": "sdpa", "compiled": True, "bf16_weights": True},
    "static_compiled_matmul": {"attention": "matmul", "compiled": True, "bf16_weights": True},
}


def decoding(device, precision, sizes: SpeedSizes, copy_rate: float, compile_step: bool = True,
             variants: bool | list[str] | None = None) -> dict[str, Any]:
    """Prefill milliseconds and decode tokens/s of the eager and static engines at `decode_batch` (GRPO
    groups of `group` rows sharing a prompt), decode as a share of the memory floor; `variants` (default:
    on a GPU, all of `DECODE_VARIANTS`; or a list of their names) the static variants too, and
    `compile_step` the compiled ones (tens of seconds to build)."""
    import torch

    from rlvr_envs.video.static_decoder import decoder_for, decoder_settings, settings_for
    from rlvr_envs.video.world_model import build_world_model, generate_responses

    vocab, layout = _layout(sizes)
    length = layout.prompt_len + layout.response_len
    model = build_world_model(vocab, length, sizes.preset).eval().to(device)
    rng = np.random.default_rng(0)
    distinct = np.stack([layout.prompt(rng.integers(0, vocab.frame_codes, (sizes.history, sizes.tokens_per_frame)),
                                       vocab.action_tokens(rng.integers(0, 256, (sizes.history, 13))))
                         for _ in range(-(-sizes.decode_batch // sizes.group))])
    prompts = np.repeat(distinct, sizes.group, axis=0)[:sizes.decode_batch]
    config = model.config
    head_dim = config.hidden_size // config.num_attention_heads
    # what a decode step must read: the filled KV cache (bf16; on average over the response, the prompt and
    # half the response) and the bf16 weights once (not the embedding: a step reads one row of it)
    filled = layout.prompt_len + (layout.response_len + 1) / 2
    cache_bytes = 2 * config.num_hidden_layers * sizes.decode_batch * config.num_key_value_heads * head_dim * \
        filled * 2
    weight_bytes = 2 * sum(p.numel() for p in model.parameters()) - 2 * model.model.embed_tokens.weight.numel()
    floor = (cache_bytes + weight_bytes) / copy_rate
    generated = sizes.decode_batch * layout.response_len
    steps = layout.response_len - 1  # the first response token is drawn from the prefill's logits
    out: dict[str, Any] = {"preset": sizes.preset, "parameters": sum(p.numel() for p in model.parameters()),
                           "batch": sizes.decode_batch, "group": sizes.group, "prompt_tokens": layout.prompt_len,
                           "generated_per_sample": layout.response_len,
                           "floor_bytes_per_step": cache_bytes + weight_bytes, "floor_seconds_per_step": floor,
                           "engines": {}}
    if variants is None:
        variants = device.type == "cuda"
    names = list(DECODE_VARIANTS) if variants is True else list(variants or [])
    # the "static" row is the defaults, compiled only where compiling is allowed
    rows = [("eager", "eager", {}), ("static", "static", {} if compile_step else {"compiled": False})] + [
        (name, "static", DECODE_VARIANTS[name]) for name in names
        if compile_step or not DECODE_VARIANTS[name]["compiled"]]
    tokens = torch.as_tensor(prompts).to(device)
    greedy = {}
    for row, engine, settings in rows:
        def run(temperature=1.0, top_k=100, engine=engine):
            with precision.autocast():
                return generate_responses(model, prompts, layout, temperature=temperature, top_k=top_k, seed=0,
                                          engine=engine)

        def prefill(engine=engine):
            with precision.autocast(), torch.no_grad():
                if engine == "eager":
                    model(input_ids=tokens, use_cache=True)
                else:
                    decoder_for(model, len(tokens), length).prefill(tokens)
        try:
            with decoder_settings(**settings):
                first: list[float] = []
                seconds = _timed(device, run, repeats=sizes.decode_repeats, first=first)  # compiles and captures
                prefill_seconds = _timed(device, prefill, repeats=sizes.decode_repeats)
                greedy[row] = run(temperature=0.0, top_k=None)
                with precision.autocast():
                    fallback = None if engine == "eager" else decoder_for(model, len(tokens), length).fallback
            if fallback and row != "static":  # the row timed the plain step, not its own
                raise RuntimeError(f"fell back to the plain step: {fallback}")
        except Exception as exc:  # a variant that fails is reported, the others still timed
            if row in ("eager", "static"):
                raise
            out["engines"][row] = {"error": f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:300]}
            continue
        decode_seconds = max(seconds - prefill_seconds, 1e-9)
        if engine == "static":  # what the decoder ran: its defaults, or the plain step it fell back to
            with decoder_settings(**settings):
                settings = settings_for(device.type == "cuda")
            if fallback:
                settings = {"attention": "sdpa", "compiled": False, "bf16_weights": False}
        out["engines"][row] = {"settings": settings, **({"fallback": fallback} if fallback else {}),
                               "seconds": seconds, "tokens_per_second": generated / seconds,
                               "prefill_ms": prefill_seconds * 1e3, "first_call_seconds": first[0],
                               "decode_tokens_per_second": sizes.decode_batch * steps / decode_seconds,
                               "seconds_per_step": decode_seconds / steps,
                               "share_of_memory_floor": floor / (decode_seconds / steps),
                               "greedy_tokens_equal_eager": float((greedy[row] == greedy["eager"]).mean())}
    static = out["engines"]["static"]
    out["greedy_tokens_equal"] = static["greedy_tokens_equal_eager"]  # bf16 rounding may differ
    out["speedup"] = out["engines"]["eager"]["seconds"] / static["seconds"]
    return out


def training(device, precision, sizes: SpeedSizes, matmul_flops: float, compile_too: bool) -> dict[str, Any]:
    """Steady tokens/s and MFU of the MLE trainer's step, eager and compiled, on random windows."""
    import torch

    from trainers.distributed import TrainRun

    vocab, layout = _layout(sizes)
    length = layout.prompt_len + layout.response_len + 1
    rng = np.random.default_rng(0)
    windows = torch.as_tensor(rng.integers(0, vocab.frame_codes, (4 * sizes.train_batch, length))).to(device)
    counts = np.full(len(windows), length - 1)
    run = TrainRun(None, precision)
    out: dict[str, Any] = {"preset": sizes.preset, "tokens_per_window": length, "batch": sizes.train_batch,
                           "modes": {}}
    for mode in ("eager", "compiled") if compile_too else ("eager",):
        try:
            out["modes"][mode], cost = _train_mode(device, run, vocab, sizes, windows, counts, length, mode, matmul_flops)
        except Exception as exc:  # compile broke on this stack: the eager figures still stand
            out["modes"][mode] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            compile_too = False
            continue
        out["parameters"], out["train_flops_per_token"] = cost.parameters, cost.train_flops_per_token
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if compile_too:
        modes = out["modes"]
        out["speedup"] = modes["compiled"]["tokens_per_second"] / modes["eager"]["tokens_per_second"]
        out["first_loss_difference"] = abs(modes["compiled"]["first_loss"] - modes["eager"]["first_loss"])
    return out


def _train_mode(device, run, vocab, sizes: SpeedSizes, windows, counts, length: int, mode: str,
                matmul_flops: float) -> tuple[dict[str, Any], Any]:
    """One mode's row: a fresh model, its first step (compile, when compiled) and the steady rate."""
    import torch

    from rlvr_envs.core.sizing import config_cost
    from rlvr_envs.video.world_model import build_world_model
    from trainers.train_video_world_model import auto_micro_batch, make_optimizer, training_step

    model = build_world_model(vocab, length, sizes.preset, seed=0).to(device).train()
    cost = config_cost(model.config, length)
    micro = auto_micro_batch(model, length, sizes.train_batch, device)
    optimizer = make_optimizer(model, 1e-4, device)
    step_model = torch.compile(model) if mode == "compiled" else model

    def step(i: int):
        pick = np.arange(i * sizes.train_batch, (i + 1) * sizes.train_batch) % len(windows)
        return training_step(step_model, optimizer, run, windows, windows, pick, counts, micro)

    began = time.perf_counter()
    first_loss = float(step(0))  # a sync; compile happens here
    first = time.perf_counter() - began
    _sync(device)
    began = time.perf_counter()
    for i in range(1, sizes.train_steps + 1):
        loss = step(i)
    _sync(device)
    tokens_per_second = sizes.train_steps * sizes.train_batch * length / (time.perf_counter() - began)
    return {"micro_batch": micro, "first_step_seconds": first, "first_loss": first_loss, "last_loss": float(loss),
            "tokens_per_second": tokens_per_second,
            "mfu": tokens_per_second * cost.train_flops_per_token / matmul_flops}, cost


def measure(device, precision, sizes: SpeedSizes, compile_too: bool,
            variants: bool | list[str] | None = None) -> dict[str, Any]:
    limits = ceilings(device, sizes)
    return {"ceilings": limits, "sizes": asdict(sizes), "precision": precision.describe(),
            "decoding": decoding(device, precision, sizes, limits["copy_bytes_per_second"], compile_too, variants),
            "training": training(device, precision, sizes, limits["matmul_flops"], compile_too)}


def markdown(result: dict[str, Any]) -> list[str]:
    limits, dec, train = result["ceilings"], result["decoding"], result["training"]
    lines = [f"Ceilings measured in the same run: bf16 matmul ({limits['matmul_size']}^3) "
             f"**{limits['matmul_flops'] / 1e12:.1f} TFLOP/s**, device copy **{limits['copy_bytes_per_second'] / 1e9:.0f} "
             f"GB/s** (read + written); {result['precision']}.", "",
             f"Decoding, preset {dec['preset']} ({dec['parameters'] / 1e6:.1f}M), batch {dec['batch']} "
             f"({dec['batch'] // dec.get('group', 1)} prompts x {dec.get('group', 1)}), prompt {dec['prompt_tokens']} "
             f"tokens, {dec['generated_per_sample']} generated per sample; prefill timed apart; decode memory floor "
             f"(filled KV cache + bf16 weights, read once a step) {dec['floor_bytes_per_step'] / 1e9:.2f} GB per "
             f"step = "
             f"{dec['floor_seconds_per_step'] * 1e3:.2f} ms:", "",
             "| engine | prefill ms | decode tokens/s | ms per decode step | share of memory floor | "
             "end to end tokens/s | first call s | greedy = eager |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for engine, row in dec["engines"].items():
        if "error" in row:
            lines.append(f"| {engine} | failed: `{row['error']}` | | | | | | |")
            continue
        name = f"{engine} (fell back to the plain step: `{row['fallback']}`)" if row.get("fallback") else engine
        lines.append(f"| {name} | {row.get('prefill_ms', float('nan')):.1f} | "
                     f"{row.get('decode_tokens_per_second', float('nan')):,.0f} | "
                     f"{row['seconds_per_step'] * 1e3:.2f} | "
                     f"{row['share_of_memory_floor']:.1%} | {row['tokens_per_second']:,.0f} | "
                     f"{row.get('first_call_seconds', float('nan')):.1f} | "
                     f"{row.get('greedy_tokens_equal_eager', float('nan')):.1%} |")
    static = (f"static / eager: **{dec['speedup']:.2f}x** end to end; greedy tokens equal in "
              f"{dec['greedy_tokens_equal']:.1%} of positions. ")
    defaults = dec["engines"].get("static", {}).get("settings")
    if defaults:
        static += "The static row is the decoder's defaults: " + ", ".join(
            f"{k}={v}" for k, v in defaults.items()) + "."
    lines += ["", static, "",
              f"Training (`training_step`), preset {train['preset']} ({train['parameters'] / 1e6:.1f}M), "
              f"{train['batch']} windows of {train['tokens_per_window']} tokens a step, "
              f"{train['train_flops_per_token'] / 1e9:.2f} GFLOP per token:", "",
              "| mode | micro-batch | first step (s) | tokens/s | MFU |", "|---|---:|---:|---:|---:|"]
    for mode, row in train["modes"].items():
        if "error" in row:
            lines.append(f"| {mode} | failed: `{row['error']}` | | | |")
            continue
        lines.append(f"| {mode} | {row['micro_batch']} | {row['first_step_seconds']:.1f} | "
                     f"{row['tokens_per_second']:,.0f} | {row['mfu']:.1%} |")
    if "speedup" in train:
        lines += ["", f"compiled / eager: **{train['speedup']:.2f}x**; first-step loss difference "
                  f"{train['first_loss_difference']:.2e}."]
    return lines + [""]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rlvr_envs.core.device import add_device_argument, setup_device
    from rlvr_envs.core.records import RunRecord
    from rlvr_envs.video.world_model import PRESETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_device_argument(parser)
    parser.add_argument("--tiny", action="store_true", help="the same code path at test size")
    parser.add_argument("--no-compile", action="store_true",
                        help="no torch.compile: eager training only, and no compiled decode step (slow on CPUs)")
    parser.add_argument("--preset", help="world-model preset (default paper; a CPU wants small)")
    parser.add_argument("--decode-batch", type=int, help="sequences decoded at once (default 64)")
    parser.add_argument("--train-batch", type=int, help="windows per training step (default 32)")
    parser.add_argument("--variants", nargs="*", choices=list(DECODE_VARIANTS),
                        help="the static decoder's variants timed beside its defaults (default: all on a GPU, "
                             "none on a CPU; give none to time the defaults only)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS), help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    precision = setup_device(args.device, threads=args.threads)
    record = RunRecord("python -m benchmarks.world_model_speed", args, threads=args.threads)
    sizes = TINY if args.tiny else SpeedSizes()
    chosen = {"preset": args.preset, "decode_batch": args.decode_batch, "train_batch": args.train_batch}
    sizes = replace(sizes, **{k: v for k, v in chosen.items() if v is not None})
    if sizes.preset not in PRESETS or min(sizes.decode_batch, sizes.train_batch) < 1:
        parser.error(f"--preset must be one of {', '.join(PRESETS)} and the batches >= 1")
    result = measure(precision.device, precision, sizes, not args.no_compile, args.variants)
    result["run"] = record.finish()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    text = "\n".join(["# World-model speed", ""] + markdown(result))
    out.with_suffix(".md").write_text(text)
    print(text)
    return result

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    """Issue 38's ratios on one machine: decoding eager vs static, training eager vs compiled."""
    d = files[0]
    dec, train = d["decoding"], d["training"]
    engines, modes = dec["engines"], train["modes"]
    rows = [[f"decode, {engine}", f"{row['tokens_per_second']:,.0f}",
             f"{row['share_of_memory_floor']:.1%} of the memory floor"] for engine, row in engines.items()]
    rows += [[f"train, {mode}", f"{row['tokens_per_second']:,.0f}", f"{row['mfu']:.1%} MFU"]
             for mode, row in modes.items() if "mfu" in row]
    compiled = f"; compiled / eager training {train['speedup']:.2f}x" if "speedup" in train else ""
    return (f"**World-model speed** (`{d['run']['command']}`, {fmt.shown(d['_file'])}; {note(d['run'])}): preset "
            f"{dec['preset']}, decoding {dec['batch']} sequences after a {dec['prompt_tokens']}-token prompt, training "
            f"{train['batch']} windows of {train['tokens_per_window']} tokens; static / eager decoding "
            f"{dec['speedup']:.2f}x{compiled} (the H200 figures: the GPU check below).\n\n"
            + fmt.table(["path", "tokens/s", "against the ceiling measured in the run"], ["---", "---:", "---"], rows))


SECTIONS = (
    fmt.Section("World-model speed", ("world_model_speed.json",), "python -m benchmarks.world_model_speed",
                section),
)


if __name__ == "__main__":
    main()
