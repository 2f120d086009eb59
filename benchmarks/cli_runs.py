"""Results sections of runs of the `rlvr-world` command itself, whose measuring code lives in the
library and trainers rather than in a benchmark script: the demo (`trainers.demo`, both domains)
and the generated PushT data (`rlvr-world data pusht`)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import language_world_models
from benchmarks import sections as fmt
from rlvr_envs.core.records import note


def section_demo(files: list[dict]) -> str:
    """The demo's own table and verdict (trainers.demo renders its report with them)."""
    from trainers.demo import table, verdict

    d = files[0]
    folder = Path(d["_file"]).parent
    text = (f"**`rlvr-world demo`** (`{d['command']}`, {fmt.shown(d['_file'])} with its `report.md` and "
            f"pictures, copied from `{d['args']['out']}`; {fmt.machine(d)}): {fmt.minutes_seconds(d['total_seconds'])} "
            f"wall, {d['grpo_seconds'] / 60:.1f} min of them GRPO ({d['grpo_steps']} of {d['grpo_steps_planned']} "
            f"steps on the {d['grpo_reward']!r} reward), {d['held_out_transitions']} held-out transitions x "
            f"{d['sampling_seeds']} sampling seeds. {verdict(d)}\n\n{table(d)}")
    load = d.get("run", {}).get("load", {})
    if load.get("busy"):
        text += (f"\n\nThe machine was shared while it ran (1-minute load {load['before']} before, {load['after']} "
                 "after), so its times are upper bounds; its numbers are not (a fixed step count).")
    if (fmt.RESULTS / folder / "frames.png").is_file():
        text += ("\n\nReal next frames (top) and greedy predictions of the MLE base and the RLVR model:\n\n"
                 f"![PushT: real vs predicted next frames, MLE base vs RLVR](../{fmt.SHOWN}/{folder}/frames.png)")
    return text


def section_pusht_data(files: list[dict]) -> str:
    d = files[0]
    summary = d["summary"]
    total = summary["all"]
    kinds = [k for k, v in summary.items() if k != "all" and isinstance(v, dict)]
    per_kind = ", ".join(f"{k} {fmt.rate(summary[k]['success_rate'])} of {summary[k]['episodes']}" for k in kinds)
    note = f" (note: {d['note']})" if d.get("note") else ""
    return (f"**PushT data** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}): {total['episodes']} episodes "
            f"in {summary['seconds']:.1f} s by the command's own clock{note}; success {fmt.rate(total['success_rate'])} "
            f"overall ({per_kind} episodes), mean final coverage {total['final_coverage']:.2f}.")


def section_demo_text(files: list[dict]) -> str:
    d = files[0]
    rows = []
    entries = {**d["models"], "nothing_changes (baseline)": d["baseline"]}
    for name, r in entries.items():
        test = (r.get("vs_sft") or {}).get("exact_changed")
        rows.append([name, f"{r['accuracy']:.3f}", f"{r['accuracy_changed']:.3f} ({r['n_changed']})",
                     f"{r['accuracy_unchanged']:.3f} ({r['n_unchanged']})", f"{r['reward']:.3f}",
                     language_world_models.paired_cell(test)])
    return (f"**`rlvr-world demo --domain text`** (`{d['command']}`, {fmt.shown(d['_file'])}, copied from "
            f"`{d['args']['out']}`; {fmt.machine(d)}): {fmt.minutes_seconds(d['total_seconds'])} wall, "
            f"{d['grpo_seconds'] / 60:.1f} min of them GRPO ({d['grpo_steps']} steps on {d['env_id']}; "
            f"{fmt.rate(d['frac_zero_spread_groups'])} of groups had no reward spread). Greedy answers to the same "
            f"{d['held_out_transitions']} held-out transitions; the last column is the paired difference from the "
            f"SFT model in exact accuracy on changed transitions.\n\n"
            + fmt.table(["model", "exact", "exact (changed)", "exact (unchanged)", "mean reward", "changed vs sft"],
                        ["---", "---:", "---:", "---:", "---:", "---"], rows))


SECTIONS = (
    fmt.Section("`rlvr-world demo`", ("demo_pusht/results.json",), "rlvr-world demo --out runs/demo", section_demo),
    fmt.Section("`rlvr-world demo --domain text`", ("demo_text/results.json",),
                "rlvr-world demo --domain text --out runs/demo_text", section_demo_text),
    fmt.Section("PushT data", ("pusht_data_200.json",), "rlvr-world data pusht --episodes 200 --resolution 96 --seed 0",
                section_pusht_data),
)
