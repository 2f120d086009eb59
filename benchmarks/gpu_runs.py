"""The committed runs of `benchmarks/gpu_check.py` as results: the section of every run, and
README's Scale out summary of what the GPU runs measured against their goals (gpu_check.py
measures and writes each run's JSON; this presents the runs side by side)."""

from __future__ import annotations

from benchmarks import goals
from benchmarks import sections as fmt


def decode_rate(engine: dict) -> float:
    """Decode tokens/s, prefill apart (runs before prefill was timed apart report one rate for both)."""
    return engine.get("decode_tokens_per_second", engine["tokens_per_second"])


def _gpu_run(d: dict) -> str:
    """One run of benchmarks/gpu_check.py: which stages finished and its figures against the
    ceilings it measured (the first run predates the ceilings and speed stages)."""
    stages = {k: v for k, v in d["stages"].items() if k != "_total"}
    done = [k for k, v in stages.items() if not {"error", "skipped", "stopped"} & set(v)]
    other = [f"{k} {next(w for w in ('error', 'skipped', 'stopped') if w in v)}" for k, v in stages.items()
             if k not in done]
    facts = []
    if "ceilings" in done:
        c = stages["ceilings"]
        facts.append(f"ceilings {c['matmul_flops'] / 1e12:.0f} bf16 TFLOP/s, {c['copy_bytes_per_second'] / 1e9:,.0f} GB/s")
    if "speed" in done:
        dec, train = stages["speed"]["decoding"], stages["speed"]["training"]
        static, eager = dec["engines"]["static"], dec["engines"]["eager"]
        facts.append(f"{dec['preset']} decoding at batch {dec['batch']}: static {decode_rate(static):,.0f} "
                     f"tokens/s ({static['share_of_memory_floor']:.0%} of the memory floor) vs eager "
                     f"{decode_rate(eager):,.0f}")
        facts.append(f"{train['preset']} MLE step: " + ", ".join(
            f"{mode} {row['mfu']:.1%} MFU" for mode, row in train["modes"].items() if "mfu" in row))
    if "ship" in done:
        facts.append("shipped-size models retrained: " + ", ".join(
            f"{kind} {row['preset']} {row['sequences']:,} sequences (the shipped model {row['shipped_sequences']:,}; "
            + ("undertrained" if row["undertrained"] else f"`{row['judge_with']}`") + ")"
            for kind, row in stages["ship"].items() if isinstance(row, dict) and "sequences" in row))
    if "generation" in done:
        gen = stages["generation"]
        facts.append(f"{gen['preset']} eager decoding at batch {gen['batch']}: "
                     f"{gen['modes']['bf16 autocast']['tokens_per_second']:,.0f} tokens/s (bf16)")
    if "pusht" in done:
        mle = stages["pusht"]["mle"]
        mfu = f", {mle['mfu']:.1%} MFU" if mle.get("mfu") else ""
        facts.append(f"PushT {stages['pusht']['preset']} MLE {mle['steps']:,} steps{mfu}: sampled MAE "
                     f"{mle['held_out']['model']['mae']:.5f} vs copy-last-frame "
                     f"{mle['held_out']['copy_last_frame_tokens']['mae']:.5f}")
    if "text" in done:
        text = stages["text"]
        sft_name = next(k for k in text["held_out"] if k.startswith("SFT"))
        facts.append(f"text {text['preset']} SFT {text['sft']['steps']:,} steps: "
                     f"{text['held_out'][sft_name]['accuracy']:.3f} exact (shipped CPU models "
                     + " and ".join(f"{v['accuracy']:.3f}" for k, v in text["held_out"].items() if k.startswith("shipped"))
                     + ")")
    total = d.get("total_seconds")
    limit = f" of the {d['deadline_seconds']:.0f} s deadline" if d.get("deadline_seconds") else ""
    return (f"* {fmt.shown(d['_file'])} ({d['started']}, {fmt.machine(d)}): finished {', '.join(done) or 'nothing'}"
            + (f"; {', '.join(other)}" if other else "") + (f"; {total} s{limit}" if total else "")
            + ". " + "; ".join(facts) + ".")


def section(files: list[dict]) -> str:
    """Issue 38: the H200 runs of the prepared GPU check, each against its own measured ceilings."""
    return ("**GPU check on one H200** (`python -m benchmarks.gpu_check --device cuda`; each run's exact command "
            "in its JSON; what each run was and measured against the goals: "
            f"{fmt.shown('gpu_check/README.md')}):\n\n"
            + "\n".join(_gpu_run(d) for d in sorted(files, key=lambda d: d["started"])))


def summary() -> str:
    """README's Scale out: what the committed GPU runs measured, each figure beside its goal."""
    runs = sorted(((str(f.relative_to(fmt.RESULTS)), fmt.load(str(f.relative_to(fmt.RESULTS))))
                   for f in fmt.RESULTS.glob("gpu_check/*/gpu_check.json")), key=lambda r: r[1]["started"])
    if not runs:
        return f"GPU runs: {fmt.NOT_MEASURED}; `python -m benchmarks.gpu_check --device cuda` measures them.\n"

    def done(d: dict, stage: str) -> dict | None:
        v = d["stages"].get(stage)
        return v if isinstance(v, dict) and not {"error", "skipped", "stopped"} & set(v) else None

    devices = sorted({fmt.machine(d).split(",")[0] if not isinstance(d.get("machine"), dict)
                      else d["machine"].get("device", "") for _, d in runs})
    facts = []
    speed = [done(d, "speed") for _, d in runs if done(d, "speed")]
    if speed:
        train, dec = speed[-1]["training"], speed[-1]["decoding"]
        mfu = train["modes"]["compiled"]["mfu"] if "compiled" in train["modes"] else train["modes"]["eager"]["mfu"]
        static = decode_rate(dec["engines"]["static"])
        facts.append(
            f"the {train['preset']} preset's MLE step ({train['parameters'] / 1e6:.0f}M, compiled) trained at "
            f"{mfu:.1%} of the measured bf16 matmul rate (goal >= {goals.GOAL_MLE_MFU:.0%}: "
            f"{'met' if mfu >= goals.GOAL_MLE_MFU else '**not met**'}); its static decoder (KV cache + CUDA graphs) "
            f"decoded **{static:,.0f} tokens/s** at batch {dec['batch']}, {dec['speedup']:.1f}x the eager loop "
            f"(goal >= {goals.GOAL_DECODE_TOKENS_PER_S:,} tokens/s: "
            f"{'met' if static >= goals.GOAL_DECODE_TOKENS_PER_S else '**not met**'})")
    pusht = [done(d, "pusht") for _, d in runs if done(d, "pusht")]
    if pusht:
        facts.append(f"PushT's {pusht[-1]['preset']} preset ({pusht[-1]['parameters'] / 1e6:.0f}M) trained at "
                     f"{pusht[-1]['mle']['mfu']:.1%}")
    text = [done(d, "text") for _, d in runs if done(d, "text")]
    if text:
        sft = [next(v for k, v in t["held_out"].items() if k.startswith("SFT"))["accuracy"] for t in text]
        shipped = [v["accuracy"] for t in text for k, v in t["held_out"].items() if k.startswith("shipped")]
        steps = [f"{t['sft']['steps']:,}" for t in text]

        def listed(items: list[str]) -> str:
            return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
        facts.append(f"the {text[0]['preset']} text preset's ({text[0]['parameters'] / 1e6:.0f}M) SFT through TRL "
                     f"scored {listed([f'{a:.3f}' for a in sft])} exact after {listed(steps)} steps, below the "
                     f"{min(shipped):.2f}-{max(shipped):.2f} of the shipped CPU-trained text models on the same "
                     "held-out transitions")
    return fmt.wrap(f"On one {' and '.join(devices)} ({len(runs)} runs of `python -m benchmarks.gpu_check --device cuda`, "
                 f"minutes each; [{fmt.SHOWN}/gpu_check/]({fmt.SHOWN}/gpu_check/README.md)): " + "; ".join(facts) + ".") + "\n"


SECTIONS = (
    fmt.Section("GPU check on one H200", ("gpu_check/*/gpu_check.json",), "python -m benchmarks.gpu_check --device cuda",
                section, pattern=True, shown="gpu_check/<run>/gpu_check.json"),
)
