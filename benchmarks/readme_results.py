"""The results pages, generated from the committed benchmark results: docs/results.md (every
measured result, with its command and file) and README's summaries (the goals table, and what the
GPU runs measured in its Scale out).

    python -m benchmarks.readme_results           # rewrite both between their markers
    python -m benchmarks.readme_results --check   # exit 1 with a unified diff when either is stale

Every number in the block is read from a JSON file under benchmarks/results/ (a few
descriptive ones from the shipped models' `card.json`) and formatted here; the sentences
that compare numbers ("beats", "not met") are decided from those numbers too. Each
subsection names its results file and the command that wrote it (the file's own `command`
field); a subsection whose file is absent says "not yet measured" and which command writes
it. Only the text between `<!-- results -->` and `<!-- /results -->` (docs/results.md) and
between `<!-- results-summary -->` and `<!-- /results-summary -->` and between `<!-- gpu-summary -->`
and `<!-- /gpu-summary -->` (README.md) is touched.
tests/test_readme_results.py fails when either page is stale.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
import textwrap
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from rlvr_envs.core.paths import ASSETS
from rlvr_envs.core.records import note

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"  #: read at call time, so tests can point it elsewhere
VIDEO_ASSETS = ASSETS / "video"  #: the shipped models' cards
README = ROOT / "README.md"
PAGE = ROOT / "docs" / "results.md"  #: every result; README carries the summary
SHOWN = "benchmarks/results"  #: how a results path is written in README, whatever RESULTS is
START, END = "<!-- results -->", "<!-- /results -->"
SUMMARY_START, SUMMARY_END = "<!-- results-summary -->", "<!-- /results-summary -->"
SCALE_START, SCALE_END = "<!-- gpu-summary -->", "<!-- /gpu-summary -->"  #: README's Scale out: what ran on a GPU
NOT_MEASURED = "not yet measured"
WIDTH = 95  #: prose is wrapped like the rest of README; tables, pictures and comments are not

# Targets set by the issues (not measurements): the verdicts below compare results with them.
GOAL_KV_SPEEDUP = 5.0  #: KV-cached generation at least this many times faster than uncached
GOAL_ENV_OVERHEAD_PCT = 5.0  #: env step overhead over the bare verifier, at most
GOAL_BATCHED_REWARD_SPEEDUP = 5.0  #: batched -(L1+LPIPS) vs per-frame calls, at least
GOAL_GRPO_MAE_CHANGE_PCT = -15.0  #: PushT GRPO's sampled MAE vs the MLE base, at most (percent)
GOAL_TEXT_CHANGED_GAIN = 0.10  #: MiniTextWorld GRPO's held-out exact accuracy on changed transitions over SFT
GOAL_PLANNING_SHARE = 0.8  #: the RLVR simulator's CEM success as a share of the true simulator's, at least
GOAL_JUDGE_PRECISION_RECALL = 0.95  #: the PushT frame judge's precision and recall of the env's success, each at least
GOAL_REAL2SIM_PEARSON = 0.8  #: Pearson of the default learned simulator's success rates with the real ones, at least
GOAL_MLE_MFU = 0.35  #: the paper preset's compiled MLE step on one GPU, share of the measured bf16 matmul rate
GOAL_DECODE_TOKENS_PER_S = 30_000  #: the paper preset's decoding at batch 64 on one GPU, tokens/s, at least
UNCHANGED_KEPT = 0.01  #: a text recipe keeps unchanged transitions when it loses at most this much on them


# -- formatting ------------------------------------------------------------------------------

def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _p(p: float | None) -> str:
    """A p-value: two decimals from 0.01 up, else one significant digit (3e-39)."""
    if _nan(p):
        return "n/a"
    if p >= 0.01:
        return f"{p:.2f}"
    return _sci(p)


def _sci(x: float) -> str:
    """1e-3 rather than 1e-03."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _change(percent: float) -> str:
    return f"{percent:+.1f}%".replace("+-", "-")


def _rate(fraction: float) -> str:
    """A fraction as a percentage: 34.5%, with 0% and 100% written plainly."""
    if fraction in (0.0, 1.0):
        return f"{fraction * 100:.0f}%"
    return f"{fraction * 100:.1f}%"


def _fraction(value: float | None) -> str:
    return "n/a" if _nan(value) else f"{value:.3f}"


def _k(per_second: float) -> str:
    return f"{per_second / 1000:.1f}k"


def _minutes_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _minutes_range(seconds: list[float]) -> str:
    low, high = round(min(seconds) / 60), round(max(seconds) / 60)
    return f"{low}" if low == high else f"{low}-{high}"


def _seconds_range(seconds: list[float]) -> str:
    low, high = min(seconds), max(seconds)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def _flag(command: str, name: str) -> str | None:
    """The value of `--name` in a recorded command line, if it is there."""
    found = re.search(rf"(?:^|\s){re.escape(name)}\s+(\S+)", command or "")
    return found.group(1) if found else None


def _shown(relative: str) -> str:
    return f"`{SHOWN}/{relative}`"


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _machine(data: dict) -> str:
    """A results file's machine, as one string: from its run record (`rlvr_envs.core.records`,
    the one format new runs write), else the older per-script fields (metrics_throughput: a dict)."""
    run = data.get("run")
    if isinstance(run, dict) and run.get("machine"):
        load = run.get("load") or {}
        busy = f" (shared: load {load.get('before')} -> {load.get('after')})" if load.get("busy") else ""
        return f"{run['machine']}{busy}"
    machine = data.get("machine", "")
    if isinstance(machine, dict):
        device = machine.get("device")
        parts = [machine.get("cpu"), f"{machine['cpu_count']} cores" if "cpu_count" in machine else None,
                 f"GPU {device}" if device and device != "CPU" else device]
        return ", ".join(str(p) for p in parts if p)
    return str(machine)


# -- loading ---------------------------------------------------------------------------------

def load(relative: str) -> dict | None:
    """A results file under RESULTS, or None when it is absent."""
    path = RESULTS / relative
    return json.loads(path.read_text()) if path.is_file() else None


def card(model: str) -> dict:
    """A shipped model's card.json ({} when absent)."""
    path = VIDEO_ASSETS / model / "card.json"
    return json.loads(path.read_text()) if path.is_file() else {}


# -- sections --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Section:
    """One subsection: its title, its results files (relative to RESULTS; a glob pattern
    when `pattern`), the command that writes them, and the renderer of its text."""

    title: str
    files: tuple[str, ...]
    command: str
    body: Callable[[list[dict]], str]
    pattern: bool = False
    optional: tuple[str, ...] = field(default=())  #: extra files the body uses when present
    shown: str | None = None  #: how `files` is written when absent (a pattern's placeholder)

    def paths(self) -> list[str]:
        """The results files this section reads that exist now."""
        if self.pattern:
            return sorted(str(p.relative_to(RESULTS)) for p in RESULTS.glob(self.files[0]))
        return [f for f in (*self.files, *self.optional) if (RESULTS / f).is_file()]

    def render(self) -> str:
        if self.pattern:
            found = self.paths()
            if not found:
                return self.missing(self.files)
            return self.body([load(f) | {"_file": f} for f in found])
        absent = [f for f in self.files if not (RESULTS / f).is_file()]
        if absent:
            return self.missing(absent)
        text = self.body([load(f) | {"_file": f} for f in self.files]
                         + [(load(f) or {}) | {"_file": f} for f in self.optional])
        gaps = [f for f in self.optional if not (RESULTS / f).is_file()]
        return text + "".join(f"\n\n{_shown(f)}: {NOT_MEASURED}." for f in gaps)

    def missing(self, absent) -> str:
        files = _shown(self.shown) if self.shown else ", ".join(_shown(f) for f in absent)
        return f"**{self.title}** ({files}): {NOT_MEASURED}; `{self.command}` writes it."


def _demo(files: list[dict]) -> str:
    """The demo's own table and verdict (trainers.demo renders its report with them)."""
    from trainers.demo import table, verdict

    d = files[0]
    folder = Path(d["_file"]).parent
    text = (f"**`rlvr-world demo`** (`{d['command']}`, {_shown(d['_file'])} with its `report.md` and "
            f"pictures, copied from `{d['args']['out']}`; {_machine(d)}): {_minutes_seconds(d['total_seconds'])} "
            f"wall, {d['grpo_seconds'] / 60:.1f} min of them GRPO ({d['grpo_steps']} of {d['grpo_steps_planned']} "
            f"steps on the {d['grpo_reward']!r} reward), {d['held_out_transitions']} held-out transitions x "
            f"{d['sampling_seeds']} sampling seeds. {verdict(d)}\n\n{table(d)}")
    load = d.get("run", {}).get("load", {})
    if load.get("busy"):
        text += (f"\n\nThe machine was shared while it ran (1-minute load {load['before']} before, {load['after']} "
                 "after), so its times are upper bounds; its numbers are not (a fixed step count).")
    if (RESULTS / folder / "frames.png").is_file():
        text += ("\n\nReal next frames (top) and greedy predictions of the MLE base and the RLVR model:\n\n"
                 f"![PushT: real vs predicted next frames, MLE base vs RLVR](../{SHOWN}/{folder}/frames.png)")
    return text


def _repetition_table(files: list[dict]) -> str:
    """Table 3 analogue, one table per layout, then the matched-token comparison in words."""
    parts = []
    for d in files:
        rows = []
        for name, e in d["rows"].items():
            change = "-" if "mae_vs_base" not in e else (
                "identical" if _nan(e["mae_vs_base"]["p"]) and e["mae_vs_base"]["mean"] == 0
                else f"{_change(e['mae_change_percent'])} (p = {_p(e['mae_vs_base']['p'])})")
            rows.append([name, f"{e['mae']['mean']:.5f} ± {e['mae']['std_over_seeds']:.5f}", change,
                         f"{e['ssim']['mean']:.4f}", f"{e['psnr']['mean']:.2f}", _rate(e["repetition"]["mean"]),
                         f"{e['draws_per_prediction']:.2f}",
                         (f"{e['training_tokens'] / 1e6:.2f}M" if e["training_tokens"] else "0")
                         + f" + {e['test_tokens'] / 1e3:.1f}k"])
        seconds = ", ".join(f"{name} {v:,.0f} s" for name, v in d["training_seconds"].items())
        parts.append(
            f"PushT {d['layout']}-step (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}): "
            f"{d['held_out_transitions']} held-out transitions x {d['sampling_seeds']} sampling seeds "
            f"(temperature 1, top-k 100; greedy rows: greedy first draw, repeats redrawn by sampling), mean ± std "
            f"over the seeds, MAE paired against mle_base decoded the same way; GRPO "
            f"{d['grpo_args']['steps']} steps of {d['grpo_args']['prompts_per_step']} prompts x "
            f"{d['grpo_args']['group_size']}, repetition penalty {d['penalty']} per repeated frame; training time "
            f"{seconds}.\n\n"
            + _table(["row", "MAE", "vs base", "SSIM", "PSNR", "repetition", "draws / prediction",
                      "generated tokens (training + test)"], ["---", "---:", "---:", "---:", "---:", "---:", "---:",
                                                              "---:"], rows) + _repetition_findings(d))
    return ("**Table 3 analogue: repetition rejection, RLVR, repetition penalty, continued MLE** "
            "(`python -m benchmarks.repetition_table`; repetition is RLVR-World's token-identity definition; the "
            "rows marked \"RLVR's tokens\" give rejection RLVR's whole token budget, training included, as extra "
            "draws per prediction, and count the tokens it actually generated).\n\n" + "\n\n".join(parts))


def _repetition_findings(d: dict) -> str:
    """What the table shows, read from its numbers: whether the penalty ever acted, and what
    rejection does where the base repeats."""
    rows, notes = d["rows"], []
    if rows["rlvr + repetition penalty"]["mae"]["per_seed"] == rows["rlvr"]["mae"]["per_seed"]:
        notes.append("The penalty run is identical to plain RLVR: GRPO's training samples (temperature 1) never "
                     "repeated, so the penalty never fired")
    greedy, rejected = rows["mle_base, greedy"], rows["mle_base, greedy + rejection"]
    if greedy["repetition"]["mean"] > 0:
        notes.append(f"Greedy decoding of the base repeats ({_rate(greedy['repetition']['mean'])}); rejection removes "
                     f"that ({_rate(rejected['repetition']['mean'])}) but MAE gets worse "
                     f"({_change(rejected['mae_change_percent'])}), because the redraws are samples, while RLVR "
                     f"lowers greedy MAE {_change(rows['rlvr, greedy']['mae_change_percent'])} and repetition to "
                     f"{_rate(rows['rlvr, greedy']['repetition']['mean'])}")
        matched = next(e for name, e in rows.items() if name.startswith("mle_base, greedy + rejection, RLVR"))
        same = f"{matched['mae']['mean']:.5f}" == f"{rejected['mae']['mean']:.5f}"
        notes.append(f"Given RLVR's whole token budget ({d['matched_draws']} draws per prediction), rejection "
                     f"stops after {matched['draws_per_prediction']:.2f} on average, "
                     + ("at the same MAE: extra tokens buy rejection nothing once the repeats are gone" if same else
                        f"at MAE {matched['mae']['mean']:.5f} (RLVR, greedy: {rows['rlvr, greedy']['mae']['mean']:.5f})"))
    elif rows["mle_base + rejection"]["draws_per_prediction"] == 1:
        notes.append("The base never repeats here, sampled or greedy, so rejection draws nothing extra and RLVR's "
                     "gain is all quality")
    return "\n\n" + ". ".join(notes) + "." if notes else ""


def _grpo_rows(d: dict) -> list[list[str]]:
    rows = []
    grpo_seconds = [s for name, s in d["training_seconds"].items() if name.startswith("grpo")]
    for name, model in d["models"].items():
        sampled, greedy = model["sampled"], model["greedy"]
        if name == "mle_base":
            label, versus = "MLE base (shipped)", ""
        else:
            versus = f"{_change(sampled['mae_change_percent'])} (p = {_p(sampled['vs_base']['mae']['p'])})"
            if name == "mle_continued":
                spent, matched = d["training_seconds"][name], d["matched_seconds"]
                label = (f"MLE continued, {spent:,.0f} s ({'more' if spent >= matched else 'less'} than GRPO's "
                         f"{matched:,.0f} s{' mean' if len(grpo_seconds) > 1 else ''})")
            else:
                label = "GRPO seed " + name.removeprefix("grpo_seed")
        rows.append([label, f"{sampled['mae']:.5f}", versus, f"{sampled['ssim']:.4f}", f"{sampled['psnr']:.2f}",
                     f"{greedy['mae']:.5f}"])
    names = {"copy_last_frame_tokens": "copy the last frame, in token space",
             "tokenizer_ceiling": "tokenizer ceiling (gold codes)"}
    for name, metrics in d["baselines"].items():
        rows.append([names.get(name, name), f"{metrics['mae']:.5f}", "", f"{metrics['ssim']:.4f}",
                     f"{metrics['psnr']:.2f}", ""])
    return rows


def _grpo_setup(d: dict) -> str:
    args = d["grpo_args"]
    seconds = [s for name, s in d["training_seconds"].items() if name.startswith("grpo")]
    threads = {_flag(c, "--threads") for name, c in d.get("stage_commands", {}).items() if name.startswith("grpo")}
    count = threads.pop() if len(threads) == 1 else None
    where = f" on {count} thread{'' if count == '1' else 's'} each" if count else ""
    return (f"-MAE of the decoded frame; {args['prompts_per_step']} prompts x {args['group_size']} samples, "
            f"KL {_sci(args['beta'])}, lr {_sci(args['lr'])}, {args['steps']} steps, "
            f"{_minutes_range(seconds)} minutes per seed{where}")


def _grpo_single(files: list[dict]) -> str:
    d = files[0]
    models = d["models"]
    grpo = [m for name, m in models.items() if name.startswith("grpo")]
    base, continued = models["mle_base"], models.get("mle_continued")
    copy = d["baselines"]["copy_last_frame_tokens"]["mae"]
    improves = all(m["sampled"]["mae_change_percent"] < 0 and m["sampled"]["vs_base"]["mae"]["p"] < 0.05
                   for m in grpo)
    title = "GRPO on -MAE lowers the PushT world model's pixel error" if improves else "RLVR on the PushT world model"
    text = (f"**{title}** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}): GRPO on the verified reward "
            f"({_grpo_setup(d)}) from the shipped MLE single-step model, evaluated on "
            f"{d['held_out_transitions']} held-out transitions x {d['sampling_seeds']} sampling seeds, the same for "
            f"every model (sampled and greedy; paired t-tests against the base"
            + ("" if "vs_copy_last" in grpo[0]["sampled"] else ", each sampling seed counted as a sample, and no "
               "object errors: this run predates both; the reward comparison below judges -MAE by the objects")
            + "):\n\n")
    text += _table(["model", "sampled MAE", "vs MLE base", "SSIM", "PSNR", "greedy MAE"],
                   ["---", "---:", "---:", "---:", "---:", "---:"], _grpo_rows(d)) + "\n\n"
    grpo_beats = all(m["sampled"]["mae"] < copy for m in grpo)
    base_beats = base["sampled"]["mae"] < copy
    if grpo_beats and not base_beats:
        text += ("After GRPO the model's samples beat copying the last frame's tokens, which the MLE model's "
                 "samples do not.")
    elif grpo_beats:
        text += "Both the MLE model's and GRPO's samples beat copying the last frame's tokens."
    else:
        text += "GRPO's samples do not yet beat copying the last frame's tokens."
    if continued:
        change, p = continued["sampled"]["mae_change_percent"], continued["sampled"]["vs_base"]["mae"]["p"]
        if p >= 0.05:
            text += f" The same time spent on more MLE barely moves it ({_change(change)}, p = {_p(p)})."
        else:
            text += f" The same time spent on more MLE moves it by {_change(change)} (p = {_p(p)})."
    return text


def _grpo_rewards(files: list[dict]) -> str:
    """benchmarks.grpo_pusht_rewards renders its own tables; this adds each run's command, file and
    picture (the reward comparison first, then the variants: other weights or steps)."""
    from benchmarks.grpo_pusht_rewards import render

    parts = []
    for d in files:
        body = render(d).split("\n", 4)[4]  # its heading and command line are said here
        rewards = " and ".join(f"`{' '.join(r['env_kwargs'])}`" for r in d["rewards"].values())
        parts.append(f"**GRPO on {rewards}, {d['grpo_steps']} steps** (`{d['command']}`, {_shown(d['_file'])}; "
                     f"{_machine(d)}): {body.strip()}\n\n"
                     f"![MAE against the agent's error per model](../{SHOWN}/{Path(d['_file']).with_suffix('.png')})")
    return "\n\n".join(parts)


def _text_sft_speed(files: list[dict]) -> str:
    """benchmarks.text_sft_speed renders its own tables; this adds the file."""
    from benchmarks.text_sft_speed import markdown

    d = files[0]
    body = markdown(d).split("\n", 2)[2].strip()  # its heading is said here
    return f"**Text SFT from scratch: the token-row loop vs TRL's SFTTrainer** ({_shown(d['_file'])}): {body}"


def _joined(values: list[str]) -> str:
    return " / ".join(values)


def _mae(metrics: dict) -> str:
    return f"{metrics['mae']:.5f}"


def _grpo_multi(files: list[dict]) -> str:
    d = files[0]
    models = d["models"]
    seeds = [name for name in models if name.startswith("grpo")]
    base, continued = models["mle_base"], models.get("mle_continued")
    grpo_seconds = [d["training_seconds"][name] for name in seeds]
    future = card("pusht_multi_step_model").get("args", {}).get("future")
    count = "one GRPO seed so far" if len(seeds) == 1 else f"{len(seeds)} GRPO seeds (values per seed: " + \
        ", ".join(s.removeprefix("grpo_seed") for s in seeds) + ")"
    sampled = [models[s]["sampled"] for s in seeds]
    greedy = [models[s]["greedy"] for s in seeds]
    text = (f"Multi-step, {count} (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}; {d['grpo_args']['steps']} "
            f"GRPO steps, "
            f"{_joined([format(s, ',.0f') for s in grpo_seconds])} s): on {d['held_out_transitions']} held-out windows"
            f"{f' of {future} frames' if future else ''} x {d['sampling_seeds']} sampling seeds, paired, sampled MAE "
            f"{base['sampled']['mae']:.5f} -> {_joined([_mae(m) for m in sampled])} ("
            + _joined([f"{_change(m['mae_change_percent'])}, p = {_p(m['vs_base']['mae']['p'])}" for m in sampled]))
    if continued:
        text += (f"; continued MLE for {d['training_seconds']['mle_continued']:,.0f} s: "
                 f"{_change(continued['sampled']['mae_change_percent'])}, "
                 f"p = {_p(continued['sampled']['vs_base']['mae']['p'])}")
    text += (f"), greedy MAE {base['greedy']['mae']:.5f} -> {_joined([_mae(m) for m in greedy])}. "
             f"Greedy repetition (a predicted frame token-identical to the previous one) went "
             f"{_rate(base['greedy']['repetition'])} -> {_joined([_rate(m['repetition']) for m in greedy])} with GRPO")
    if continued:
        text += f", and to {_rate(continued['greedy']['repetition'])} with continued MLE"
        if all(m["repetition"] >= continued["greedy"]["repetition"] for m in greedy):
            text += (": on this reward and budget GRPO does not yet cut repetition the way the paper's does "
                     "(continued MLE cuts it more)")
        else:
            text += ": GRPO cuts repetition more than continued MLE"
    return text + "."


def _video_world_models(files: list[dict]) -> str:
    d = files[0]
    single, multi = d["single"], d["multi"]
    s, m = single["table"], multi["table"]
    cards = [card("pusht_single_step_model"), card("pusht_multi_step_model")]
    trained = [c["train_seconds_this_run"] for c in cards if "train_seconds_this_run" in c]
    steps = {single["model"]["steps"], multi["model"]["steps"]}
    parameters = {single["model"]["parameters"], multi["model"]["parameters"]}
    skip = {c.get("args", {}).get("frame_skip") for c in cards} - {None}
    future = cards[1].get("args", {}).get("future")
    size = f"{parameters.pop() / 1e6:.2f}M-parameter " if len(parameters) == 1 else ""
    how = f"MLE, {steps.pop():,} steps each" if len(steps) == 1 else "MLE"
    if trained:
        machines = {c.get("machine") for c in cards} - {None}
        how += f", {_minutes_range(trained)} minutes each on {machines.pop() if len(machines) == 1 else 'CPU'}"
    text = (f"**PushT video world models** (`{d['command'].strip()}`, {_shown(d['_file'])}; {d['machine']}): the "
            f"shipped {size}LLaMA models ({how}; model cards beside the weights) on the embedded held-out set "
            f"({single['windows']} single-step and {multi['windows']} multi-step windows"
            f"{f', frame skip {skip.pop()}' if len(skip) == 1 else ''}), MAE of decoded frames (pixels in [0, 1]) "
            f"and repetition:\n\n")
    names = [("copy_last_frame_pixels", "copy the last frame, in pixels"),
             ("tokenizer_ceiling", "tokenizer ceiling (gold codes, decoded)"),
             ("copy_last_frame_tokens", "copy the last frame, in token space"),
             ("model_greedy", "MLE model, greedy"), ("model_sampled", "MLE model, sampled")]
    rows = [[label, f"{s[key]['mae']:.5f}", f"{m[key]['mae']:.5f}",
             _rate(m[key]["repetition"]) if "repetition" in m[key] else "n/a"] for key, label in names]
    frames = f" ({future} frames)" if future else ""
    text += _table(["prediction", "single-step MAE", f"multi-step MAE{frames}", "multi-step repetition"],
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
        text += f" and repeats frames under greedy decoding ({_rate(m['model_greedy']['repetition'])})"
    text += "."
    pixels, ceiling = s["copy_last_frame_pixels"]["mae"], s["tokenizer_ceiling"]["mae"]
    tokenizer = d["tokenizer"]
    if pixels < ceiling:
        text += (f" Even at this frame skip, copying the last frame *in pixels* beats the tokenizer's own "
                 f"ceiling (MAE {pixels:.5f} vs {ceiling:.5f}): this tokenizer (held-out PSNR "
                 f"{tokenizer['reconstruction']['psnr']:.1f}, SSIM {tokenizer['reconstruction']['ssim']:.3f}) caps "
                 f"what any model behind it can reach on PushT.")
    flicker = tokenizer["flicker"]
    text += (f" The tokenizer flickers: {flicker['definition']} share {_rate(flicker['token_agreement'])} of their "
             f"tokens. These are the MLE baselines RLVR post-training starts from.")
    return text


def _compressed_tokenizer(files: list[dict]) -> str:
    d = files[0]
    e = d["eval"]
    compressed, per_frame, copy = (e["compressed"]["future_frames"], e["per_frame"]["future_frames"],
                                   e["copy_context_pixels"]["future_frames"])
    tokens = e["tokens_per_clip"]
    return (f"**Compressed multi-step tokenizer** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}): on "
            f"{e['clips']} held-out clips of {e['frames_per_clip']} frames (frame skip {d['frame_skip']}), the later "
            f"frames decode at PSNR {compressed['psnr']:.2f} / MAE {compressed['mae']:.5f} from "
            f"{tokens['compressed']} tokens per clip, against {per_frame['psnr']:.2f} / {per_frame['mae']:.5f} for "
            f"the per-frame tokenizer's {tokens['per_frame']} and {copy['psnr']:.2f} / {copy['mae']:.5f} for "
            f"copying the real context frame (no tokens).")


def _video_generation(files: list[dict]) -> str:
    d = files[0]
    forced = d["response_tokens"] - d["generated_tokens_per_response"]
    met = "met" if d["speedup"] >= GOAL_KV_SPEEDUP else "**not met**"
    same = "identical" if d["identical_tokens"] else "**not identical**"
    return (f"**KV-cached generation** (`{d['command'].strip()}`, {_shown(d['_file'])}; {d['machine']}): a "
            f"multi-step PushT response ({d['response_tokens']} tokens: {d['generated_tokens_per_response']} "
            f"generated frame codes and {forced} action tokens forced between frames) for {d['batch']} prompts "
            f"({d['model']}): {d['cached_seconds']:.1f} s with the KV cache vs {d['uncached_seconds']:.1f} s "
            f"recomputing the sequence at every step (best of {d['best_of']}), **{d['speedup']:.1f}x** (goal: at "
            f"least {GOAL_KV_SPEEDUP:g}x, {met}), greedy tokens {same}.")


def _env_overhead(files: list[dict]) -> str:
    runs = [f for f in files if "env_id" in f]
    first = runs[0]
    repeats = _flag(first["command"], "--repeats")
    text = (f"**Env overhead** ({', '.join(_shown(f['_file']) for f in runs)}; {_machine(first)}): "
            f"{first['responses']} responses (gold / one token changed / random)"
            f"{f', best of {repeats} interleaved rounds' if repeats else ''}.\n\n")
    floor = all("api_floor_us_per_response" in r for r in runs)
    rows = [[f"{r['env_id'].split('/')[-1]}", f"{r['verify_us_per_response']:.1f}", f"{r['env_us_per_response']:.1f}",
             _change(r["env_overhead_pct"]), f"{r['env_alone_us_per_response']:.1f}",
             *([f"{r['api_floor_us_per_response']:.1f}"] if floor else []), f"{r['batched_speedup']:.2f}x"]
            for r in runs]
    batches = {r["batch"] for r in runs}
    loop = f"a loop of {batches.pop()} envs" if len(batches) == 1 else "a loop of envs"
    head = ["env", "`task.verify` µs/response", "`gym.make` reset+step µs/response", "overhead",
            "env alone (constant verifier) µs", *(["gymnasium floor µs"] if floor else []),
            f"batched vector env vs {loop}"]
    text += _table(head, ["---"] * len(head), rows) + "\n\n"
    text += "Commands: " + "; ".join(f"`{r['command']}`" for r in runs) + ".\n\n"
    worst = max(r["env_overhead_pct"] for r in runs)
    alone = [r["env_alone_us_per_response"] for r in runs]
    if worst <= GOAL_ENV_OVERHEAD_PCT:
        text += f"The goal of at most {GOAL_ENV_OVERHEAD_PCT:g}% overhead is met."
    else:
        text += (f"The goal of at most {GOAL_ENV_OVERHEAD_PCT:g}% is **not met** "
                 f"({' and '.join(_change(r['env_overhead_pct']) for r in runs)}): the episode machine costs "
                 f"{_seconds_range(alone)} µs per reset+step even with a constant verifier (validated actions, "
                 f"fresh observation arrays, which gymnasium requires on every call, the info).")
        if floor:
            share = [r["floor_overhead_pct"] for r in runs]
            text += (f" A do-nothing env with the same spaces through `gym.make` (the \"gymnasium floor\": fresh "
                     f"observations, the default wrappers, no work) already costs "
                     f"{_seconds_range([r['api_floor_us_per_response'] for r in runs])} µs, "
                     f"{' and '.join(f'{x:.0f}%' for x in share)} of the verifier: the goal leaves the env's own work "
                     f"(checking the action, writing the response, the info) no room on this machine. The env path "
                     f"costs more than the verifier plus the env alone, although `task.verify` takes as long inside "
                     f"the env as bare: the env's code runs slower between real verifications than in a tight loop.")
    if all(r["batched_speedup"] < 1 for r in runs):
        text += (f" The batched vector env does not beat a loop for text tasks "
                 f"({' and '.join(format(r['batched_speedup'], '.2f') + 'x' for r in runs)}), whose verification is "
                 "per-response Python either way, and its same-step autoreset builds one more observation per step (the "
                 "next episode's), which costs most with long prompts (ByteSized32's); it exists for the video rewards, "
                 "where one batched decode and metric call serve the batch.")
    return text


def _text_verifier(files: list[dict]) -> str:
    d = files[0]
    current, baseline = d["results"]["this commit"], d["results"].get("baseline")
    kinds = list(next(iter(current.values()))["us_by_kind"])
    head = ["id", "all", *kinds] + ([f"all at {d['baseline_commit'][:7]}", "speed-up"] if baseline else [])
    rows = []
    for env_id, case in current.items():
        row = [env_id.split("/")[-1], f"{case['us_per_response']:.1f}", *(f"{case['us_by_kind'][k]:.1f}" for k in kinds)]
        if baseline:
            old = baseline[env_id]["us_per_response"]
            row += [f"{old:.1f}", f"{old / case['us_per_response']:.2f}x"]
        rows.append(row)
    text = (f"**Text-game verifier** (`{d['command']}`, {_shown(d['_file'])}; {_machine(d)}): µs per response of "
            f"`task.verify`, best of the rounds"
            + (f", the two commits alternating in fresh processes; rewards identical to {d['baseline_commit'][:7]}'s on "
               f"every response" if baseline else "") + ".\n\n")
    return text + _table(head, ["---"] * len(head), rows)


NETS = {"vgg": "VGG", "alex": "Alex"}


def _metrics_throughput(files: list[dict]) -> str:
    runs = [f for f in files if "results" in f]
    backbones = {r["lpips_backbone"] for r in runs}
    sources = "; ".join(f"`{r['command']}` with LPIPS net `{r['lpips_net']}` -> {_shown(r['_file'])}" for r in runs)
    text = (f"**Reward throughput** ({sources}; {_machine(runs[0])}), -(L1+LPIPS), LPIPS backbone "
            f"`{', '.join(sorted(backbones))}`:\n\n")
    rows = [[NETS.get(r["lpips_net"], r["lpips_net"]), row["resolution"], f"{row['batched_over_per_frame']:.2f}x",
             f"{row['group_batched_over_per_frame']:.2f}x"] for r in runs for row in r["results"]]
    text += _table(["net", "resolution", "batched / per-frame", "GRPO group of 16 on one target / per-frame"],
                   ["---", "---", "---:", "---:"], rows) + "\n\n"
    best = max(row["batched_over_per_frame"] for r in runs for row in r["results"])
    devices = {str(r.get("machine", {}).get("device", "")).lower() for r in runs}
    if best >= GOAL_BATCHED_REWARD_SPEEDUP:
        text += f"The goal of batched at least {GOAL_BATCHED_REWARD_SPEEDUP:g}x per-frame is met (best {best:.2f}x)."
    else:
        text += (f"The goal of batched at least {GOAL_BATCHED_REWARD_SPEEDUP:g}x per-frame is **not met on this "
                 f"CPU** (best {best:.2f}x): the convolutional trunk is compute-bound even at one frame per call, "
                 f"so batching only removes per-call overhead.")
    if not any("cuda" in d or "gpu" in d for d in devices):
        text += " A GPU run (`--device cuda`) is still to be measured."
    return text


def _web_verifier(files: list[dict]) -> str:
    d = files[0]
    parts = []
    for case in d["cases"]:
        part = f"{case['case']}: {_k(case['responses_per_s'])} responses/s"
        if "cold_cache_responses_per_s" in case:
            part += f", {_k(case['cold_cache_responses_per_s'])}/s with a cold cache"
        if "mean_gold_lines" in case:
            part += f", answers of {case['mean_gold_lines']:.0f} gold lines on average"
        parts.append(part)
    return (f"**Web verifier** (`{d['command']}`, {_shown(d['_file'])}; {_machine(d)}): " + "; ".join(parts) + ".")


def _hostile_inputs(files: list[dict]) -> str:
    d = files[0]
    cases = d["cases"]
    text_cases = [c for c in cases if c["kind"] == "text"]
    actions = [c for c in cases if c["kind"] == "action"]
    trees = [c for c in cases if c["kind"] == "tree"]
    verifiers = sorted({c["target"] for c in text_cases})
    envs = sorted({c["target"] for c in actions})
    worst = d["worst_per_response"]
    report = Path(d["_file"]).with_suffix(".md").as_posix()
    listed = f"; every case is listed in {_shown(report)}" if (RESULTS / report).is_file() else ""
    text = (f"**Hostile inputs** (`{d['command']}`, {_shown(d['_file'])}; {_machine(d)}): "
            f"{len({c['case'] for c in text_cases})} hostile texts through {len(verifiers)} text verifiers "
            f"({', '.join(verifiers)}) and {len({c['case'] for c in actions})} hostile actions through "
            f"{len(envs)} envs (long whitespace runs, unclosed fences, huge digit strings, deeply nested and "
            f"over-long JSON, `json_repair`'s quadratic input, huge id arrays, ids past int64, negative and uint64 "
            f"ids{listed}). "
            f"Worst case {worst['seconds'] * 1000:.0f} ms per response ({worst['case']}, {worst['target']}).")
    outside = [c for c in text_cases if not c["min"] <= c["reward"] <= c["max"]]
    lowest = [c for c in text_cases if c["reward"] <= c["min"]]
    reasons = [c for c in lowest if c.get("error")]
    parsed = [c for c in lowest if not c.get("error") and c.get("parsed")]
    if outside:
        text += f" **{len(outside)} of {len(text_cases)} text rewards fall outside [min, max].**"
    else:
        text += f" Every text reward is within [min, max]"
        if len(reasons) == len(lowest):
            text += ", with a reason whenever it is the minimum."
        else:
            text += (f"; {len(reasons)} of the {len(lowest)} minimum rewards come with a reason"
                     + (f", the other {len(parsed)} are answers that parsed and matched nothing."
                        if len(reasons) + len(parsed) == len(lowest) else "."))
    wrong = [c for c in actions if c.get("outcome") != c.get("expected")]
    if wrong:
        text += f" **{len(wrong)} of {len(actions)} actions did not get their expected outcome.**"
    else:
        text += (" Every action got its expected outcome (scored, the out-of-vocabulary id named, or refused at "
                 "the door: TypeError when not integer token ids, ValueError when not 1-D).")
    normal = d["normal_throughput"]
    text += (" Normal answers: " + ", ".join(f"{name} {_k(v['responses_per_s'])}" for name, v in normal.items())
             + " responses/s on token ids.")
    if trees:
        largest = max(c["items"][0] for c in trees)
        big = [c["seconds"] for c in trees if c["items"][0] == largest]
        text += (f" Extracting gold from trees of {largest:,} items takes {_seconds_range(big)} s including "
                 f"parsing ({len(big)} shapes of tree).")
    return text


def _pusht_data(files: list[dict]) -> str:
    d = files[0]
    summary = d["summary"]
    total = summary["all"]
    kinds = [k for k, v in summary.items() if k != "all" and isinstance(v, dict)]
    per_kind = ", ".join(f"{k} {_rate(summary[k]['success_rate'])} of {summary[k]['episodes']}" for k in kinds)
    note = f" (note: {d['note']})" if d.get("note") else ""
    return (f"**PushT data** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}): {total['episodes']} episodes "
            f"in {summary['seconds']:.1f} s by the command's own clock{note}; success {_rate(total['success_rate'])} "
            f"overall ({per_kind} episodes), mean final coverage {total['final_coverage']:.2f}.")


PLANNERS = {"base": "CEM, MLE base world model", "rlvr": "CEM, RLVR world model", "random": "random actions",
            "true_sim": "CEM, true simulator", "blind": "CEM, random costs (no model)"}


OBJECTIVES = {"pixels": "squared pixel distance of the predicted final frame to the goal image",
              "tokenizer": "distance of the frame tokenizer's latents of the predicted final frame and the goal image",
              "pose": "distance of the agent and block poses the frame judge reads in the predicted final frame and "
                      "the goal image"}


def _commands(d: dict, module: str) -> str:
    """A results file's command in backticks; runs joined by `module --merge` name each run's command."""
    if isinstance(d["command"], list):
        into = f" --out {d['merged_into']}" if d.get("merged_into") else ""
        return (", ".join(f"`{c}`" for c in d["command"]) + f", joined by `python -m {module} "
                f"--merge {' '.join(d.get('runs', []))}{into}`")
    return f"`{d['command']}`"


def _planning(files: list[dict], heading: str = "PushT CEM planning") -> str:
    d = files[0]
    cem, mpc = d.get("cem", {}), d.get("mpc", {})
    budget = (f"horizon {cem['horizon']}, {cem['samples']} samples, top {cem['top_k']}, {cem['iterations']} "
              f"iterations" if isinstance(cem, dict) and "horizon" in cem else str(cem))
    if mpc.get("rounds"):
        budget += f", {mpc['rounds']} plans per episode"
    command = _commands(d, "benchmarks.pusht_planning")
    from rlvr_envs.planning.command import run_objective

    objective = OBJECTIVES.get(run_objective(d), run_objective(d))
    text = (f"**{heading}** ({command}; {_shown(d['_file'])}; {d.get('machine', '')}): {budget}; CEM objective: "
            f"{objective}; success: {d.get('success', 'see the results file')}.\n\n")
    rows = []
    for name, s in d["summary"].items():
        low, high = s["ci95"]
        rows.append([PLANNERS.get(name, name), str(s["episodes"]), str(s["successes"]), f"{s['success_rate']:.2f}",
                     f"[{low:.2f}, {high:.2f}]", f"{s['seconds_per_episode']:.1f}"])
    table = _table(["planner", "episodes", "successes", "success rate", "95% CI (Wilson)", "s/episode"],
                   ["---", "---:", "---:", "---:", "---", "---:"], rows)
    summary = d["summary"]
    if {"base", "rlvr", "true_sim"} <= set(summary):
        base, rlvr, true = (summary[k]["success_rate"] for k in ("base", "rlvr", "true_sim"))
        share = f"{rlvr / true:.0%}" if true else "n/a"
        met = rlvr >= base and true > 0 and rlvr >= GOAL_PLANNING_SHARE * true
        table += (f"\n\nThe issue's goal (the RLVR model at least matches the base and reaches 80% of the "
                  f"true simulator's success) is {'met' if met else '**not met**'}: RLVR {rlvr:.2f} vs base "
                  f"{base:.2f}, {share} of the true simulator's {true:.2f}.")
    return text + table


def _number(x: Any, digits: int = 3) -> str:
    return "n/a" if _nan(x) else f"{x:.{digits}f}"


#: how a Real2Sim run started the learned simulator (runs without `start_from` predate the option: 'frame')
_LEARNED_START = {"history": "the recorded frames and actions that led to each start",
                  "frame": "each start frame repeated, the agent standing still"}
#: where `--lead` counts back from in a held-out episode (runs from before `--lead-from`: its end)
_LEAD_FROM = {"end": "its end",
              "success": "the step its block first covered the goal past the success bar (`--lead-from success`)"}


def _real2sim_summary(d: dict) -> dict:
    """A Real2Sim run's summary with its intervals over starts (runs from before them: from their rollouts)."""
    from rlvr_envs.policy_eval.real2sim import start_intervals

    s = d["summary"]
    return s if "pearson_interval" in s else {**start_intervals(d.get("rollouts", [])), **s}


def _real2sim(files: list[dict]) -> str:
    from rlvr_envs.policy_eval.real2sim import metric_text, probe_sentences

    parts = []
    for d in files:
        s = _real2sim_summary(d)
        rows = [[p["policy"], f"{p['learned_success']:.2f}", f"{p['real_success']:.2f}", f"{p['real_env_success']:.2f}",
                 str(p["starts"])] for p in d["policies"]]
        model = Path(d["model"]).name if d.get("model") else Path(d["_file"]).parent.name
        text = (f"**Real2Sim on PushT, {Path(d['_file']).parent.name} world model** ({model}; `{d['command']}`, "
                f"{_shown(d['_file'])}): {d.get('judge', '')}. The learned sim starts from "
                f"{_LEARNED_START[d.get('start_from', 'frame')]} (the real sim: from the physics state); each start "
                f"is `--lead` steps before a held-out episode's {_LEAD_FROM[d.get('lead_from', 'end')]}.\n\n")
        text += _table(["policy", "success in the learned sim", "in the real sim (judged)", "in the real env",
                        "starts"], ["---", "---:", "---:", "---:", "---:"], rows) + "\n\n"
        text += (f"Learned sim vs real (judged): Pearson {metric_text(s, 'pearson')}, MMRV {metric_text(s, 'mmrv')} "
                 f"(in brackets the 95% range when the starts are drawn again); vs the "
                 f"real env's own success: Pearson {_number(s['pearson_vs_env_success'])}, MMRV "
                 f"{_number(s['mmrv_vs_env_success'])}; the judge agrees with the env on "
                 f"{_rate(s['judge_vs_env_agreement']) if not _nan(s['judge_vs_env_agreement']) else 'n/a'} of real "
                 f"rollouts.")
        sim = [p["learned_success"] for p in d["policies"]]
        real = [p["real_success"] for p in d["policies"]]
        worst = min(d["policies"], key=lambda p: p["real_success"])
        text += (f" Its success rates span {min(sim):.2f}-{max(sim):.2f} across the policies (real: "
                 f"{min(real):.2f}-{max(real):.2f}); the weakest policy ({worst['policy']}) succeeds in "
                 f"{_rate(worst['learned_success'])} of its learned-sim rollouts and {_rate(worst['real_success'])} of "
                 f"its real ones.")
        text += "".join(f" {sentence}" for sentence in probe_sentences(s))  # runs before a probe have none of it
        parts.append(text)
    return "\n\n".join(parts)


def _judge_holds(summary: dict) -> list[dict]:
    """The coverage bars at which the judge's success has both precision and recall at the goal."""
    return [b for b in summary["success"] if not _nan(b["precision"]) and not _nan(b["recall"])
            and min(b["precision"], b["recall"]) >= GOAL_JUDGE_PRECISION_RECALL]


def _bars(bars: list[dict]) -> str:
    return ", ".join(f"{b['bar']:g}" for b in bars) or "no bar"


def _success_judge(files: list[dict]) -> str:
    d = files[0]
    s = d["summary"]
    resolution = d.get("resolution")
    env = next(b for b in s["success"] if b["bar"] == s["env_bar"])
    holds = _judge_holds(s)
    summarized = f", summary by `{d['summarized_by'].strip()}`" if d.get("summarized_by") else ""
    reliable = "reliable" if env in holds else "**not** reliable"
    text = (f"**PushT success judge** (`{d['command'].strip()}`{summarized}, {_shown(d['_file'])}; {d['machine']}, "
            f"{d['time']}): on {s['frames']:,} held-out real frames"
            f"{f' at {resolution}x{resolution}' if resolution else ''}, the frame judge finds the block in "
            f"{s['found']:,}; its pose error is {s['position_error_px']['median']:.2f} px median (90th percentile "
            f"{s['position_error_px']['p90']:.2f} px) and {s['angle_error_deg']['median']:.2f} deg "
            f"({s['angle_error_deg']['p90']:.2f} deg), its coverage error {s['coverage_mae']:.4f} on average and "
            f"{s['near_bar_coverage_mae']:.4f} on the {s['near_bar_frames']} frames within {s['near_bar']:g} of "
            f"gym-pusht's success bar ({s['env_bar']:g}); {s['seconds_per_frame'] * 1000:.0f} ms per frame. At the "
            f"env's own bar the judge's success is {reliable}: precision {_fraction(env['precision'])}, recall "
            f"{_fraction(env['recall'])} (it finds {env['both']} of the env's {env['env_successes']} successes and "
            f"claims {env['judge_successes'] - env['both']} the env does not). Precision and recall are both at "
            f"least {GOAL_JUDGE_PRECISION_RECALL:.0%} at bars {_bars(holds)} (env: true coverage above the bar; "
            f"judge: judged coverage above it):\n\n")
    rows = [[f"{b['bar']:g}", str(b["env_successes"]), str(b["judge_successes"]), str(b["both"]),
             _fraction(b["precision"]), _fraction(b["recall"])] for b in s["success"]]
    return text + _table(["coverage bar", "env successes", "judge successes", "both", "judge precision",
                          "judge recall"], ["---:"] * 6, rows)


def _fidelity(files: list[dict], heading: str = "Does the learned simulator follow its actions?") -> str:
    d = files[0]
    rows = [[name, kind, f"{r['agent_error_px_median']:.1f}", f"{r['block_error_px_median']:.1f} / "
             f"{r['block_error_px_mean']:.1f}", f"{r['found']:.2f}", f"{r['real_agent_motion_px_median']:.1f}"]
            for name, by_kind in d["results"].items() for kind, r in by_kind.items()]
    copy = d["results"]["copy (no motion)"]
    notes = []
    for name, by_kind in d["results"].items():
        if name == "copy (no motion)":
            continue
        beats = [kind for kind, r in by_kind.items() if r["agent_error_px_median"] < copy[kind]["agent_error_px_median"]]
        found = [r["found"] for r in by_kind.values()]
        notes.append(f"the {name.removeprefix('learned sim ').strip('()')} model places the agent better than "
                     f"predicting no motion for {', '.join(beats) + ' chunks' if beats else 'no kind of chunk'}, "
                     f"and both the agent and the block can be read from {_rate(min(found))}-{_rate(max(found))} "
                     f"of its frames")
    verdict = (" Read against the no-motion row: " + "; ".join(notes) + ".") if notes else ""
    rollout = next((kind for kind in copy if kind.startswith("cem-like x")), None)
    chunks = "one chunk" if rollout is None else (
        f"one chunk, and (\"{rollout}\") {rollout.removeprefix('cem-like x')} chunks of CEM-like targets (a path away "
        f"from the agent plus per-target noise) compared after the last,")
    return (f"**{heading}** (`{d['command']}`, {_shown(d['_file'])}; "
            f"{d['machine']}, {d['time']}): {chunks} from {d['starts']} held-out states, the learned simulator "
            f"against the real one after the same chunks (median errors in arena pixels of 512, over the frames where "
            f"the position could be read by the judge's readers; \"copy\" predicts no motion).{verdict}\n\n"
            + _table(["simulator", "chunk", "agent error", "block error (median / mean)", "positions read",
                      "real agent motion"], ["---", "---", "---:", "---:", "---:", "---:"], rows))


def _count(n: int, noun: str) -> str:
    """"1 chunk", "5 chunks"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _planning_agreement(files: list[dict]) -> str:
    """`benchmarks.planning_agreement` files, one after the other."""
    return "\n\n".join(_one_planning_agreement(d) for d in files if "summary" in d)


def _one_planning_agreement(d: dict) -> str:
    """How each learned simulator ranks CEM's candidates against the true simulator, with the
    paired differences (chance overlap of the top k: k / candidates)."""
    metrics = ("spearman_true_cost", "spearman_goal_distance", "elite_overlap")
    rows = [[name, *(f"{s[m]['mean']:.3f} ({s[m]['median']:.2f})" for m in metrics),
             f"{s['pick_distance']['mean']:.1f} ({s['pick_distance']['median']:.1f})"]
            for name, s in d["summary"].items()]
    pairs = [[pair, *(f"{v['mean']:+.3f} ± {v['se']:.3f} (p {_p(v['p'])})" for v in by_metric.values())]
             for pair, by_metric in d["paired"].items()]
    ref = d["reference"]
    return (f"**Candidate ranking: learned vs true simulator, {d['objective']} objective, "
            f"{_count(d['horizon'], 'chunk')}** (`{d['command']}`, {_shown(d['_file'])}; "
            f"{d['machine']}, {d['time']}): from the start of each of the {d['episodes']} planning episodes, CEM's "
            f"first draw of {d['candidates']} candidates ({_count(d['horizon'], 'chunk')}, std {d['init_std']:g} px "
            f"around the agent) scored by each simulator with the {d['objective']} objective and rolled out in the "
            f"real one. "
            f"Means over episodes (medians in brackets) of the rank correlation of a simulator's costs with the true "
            f"simulator's and with the real final state's goal distance (position error plus the angle error in px, "
            f"DINO-WM's tolerances weighing the same), the share of its top {d['top_k']} (CEM's elites) among the "
            f"true simulator's (chance: {d['top_k'] / d['candidates']:.3f}), and the real goal distance of the "
            f"candidate it ranks first (best candidate {ref['oracle_pick_distance']['mean']:.1f} px, an average one "
            f"{ref['mean_candidate_distance']['mean']:.1f}).\n\n"
            + _table(["simulator", "rank corr. with true-sim cost", "rank corr. with goal distance",
                      f"top-{d['top_k']} overlap", "goal distance of its pick (px)"],
                     ["---", "---:", "---:", "---:", "---:"], rows)
            + "\n\nPaired differences over the same episodes and candidates (mean ± standard error, paired "
              "t-test):\n\n"
            + _table(["pair", "rank corr. with true-sim cost", "rank corr. with goal distance",
                      f"top-{d['top_k']} overlap", "goal distance of its pick (px)"],
                     ["---", "---", "---", "---", "---"], pairs))


def _rl_algorithms(files: list[dict]) -> str:
    d = files[0]
    rows = []
    for name, method in d["methods"].items():
        runs = list(method["seeds"].values())
        seconds = f"{sum(r['train_seconds'] for r in runs) / len(runs):.0f}"
        if name == "sb3_ppo":
            rows.append([f"SB3 PPO (token-mode MLP policy; -mean reward on its own {d['config']['sb3_eval']} "
                         f"transitions, an invalid answer scoring the minimum -1)",
                         str(len(runs)), f"{sum(r['start_mae'] for r in runs) / len(runs):.5f}",
                         f"{method['final_mae_mean']:.5f}", seconds])
        else:
            rows.append([name, str(len(runs)), f"{sum(r['start_sampled_mae'] for r in runs) / len(runs):.5f}",
                         f"{method['final_sampled_mae_mean']:.5f} ± {method['final_sampled_mae_spread']:.5f}", seconds])
    for n, mae in d.get("best_of_n_sampled_mae", {}).items():
        rows.append([f"best of {n} samples of the start model (oracle selection, no training)", "", "", f"{mae:.5f}",
                     "0"])
    c = d["config"]
    return (f"**RL algorithms on one budget** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}): "
            f"{d['env_id']}, reward -MAE, {c['steps']} steps of {c['prompts_per_step']} prompts x {c['group_size']} "
            f"samples, lr {c['lr']:g}, KL {c['beta']:g}, from the shipped MLE model; held-out sampled MAE on "
            f"{c['eval_windows']} transitions (lower is better), mean ± sd over seeds.\n\n"
            + _table(["method", "seeds", "start", "final", "train s / run"], ["---", "---:", "---:", "---:", "---:"],
                     rows))


def _paired_cell(test: dict | None) -> str:
    return "" if not test else (f"{test['mean_difference']:+.3f} ± {test['standard_error']:.3f} "
                                f"(p {_p(test['p_value'])})")


def _language_world_models(files: list[dict], heading: str = "Language world models") -> str:
    d = files[0]
    c = d["config"]
    first = next(iter(d["models"]))
    rows = []
    entries = [*d["models"].items(), *((f"{k} (baseline)", v) for k, v in (d.get("baselines") or {}).items())]
    for name, r in entries:
        versus = r.get("versus_first") or {}
        if "mean_difference" in versus:  # files written before the changed / unchanged tests
            versus = {"reward": versus}
        trained = " then ".join(f"{t['stage']} {t['steps']} steps ({t['seconds'] / 60:.0f} min)"
                                for t in r.get("training") or [] if t.get("steps") is not None
                                and t.get("seconds") is not None)
        rows.append([name, trained, f"{r['reward']:.3f}", f"{r['accuracy']:.3f}",
                     f"{r['accuracy_changed']:.3f} ({r['n_changed']})",
                     f"{r['accuracy_unchanged']:.3f} ({r['n_unchanged']})", _paired_cell(versus.get("reward")),
                     _paired_cell(versus.get("exact_changed"))])
    text = (f"**{heading} on {c['env_id']}** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}, "
            f"{d['date']}): greedy answers to the same {c['transitions']} held-out transitions; reward: "
            f"{c['reward'] or 'the task reward'}; the last two columns are each row's paired difference from "
            f"{first} in reward and in exact accuracy on changed transitions (mean ± standard error, paired "
            f"t-test).\n\n"
            + _table(["model", "training", "mean reward", "exact", "exact (changed)", "exact (unchanged)",
                      f"reward vs {first}", f"changed vs {first}"],
                     ["---", "---", "---:", "---:", "---:", "---:", "---", "---"], rows))
    groups = d.get("seed_groups") or {}
    if groups:
        def ms(g: dict, key: str) -> str:
            return f"{g[key]['mean']:.3f} ± {g[key]['std']:.3f}" if key in g else ""
        text += ("\n\nOver training seeds (mean ± sample standard deviation):\n\n"
                 + _table(["recipe", "seeds", "exact", "exact (changed)", "exact (unchanged)",
                           f"changed vs {first}"], ["---", "---:", "---:", "---:", "---:", "---:"],
                          [[name, str(len(g["members"])), ms(g, "accuracy"), ms(g, "accuracy_changed"),
                            ms(g, "accuracy_unchanged"), ms(g, "changed_vs_first")] for name, g in groups.items()]))
    sampled = {name: r["sampled"] for name, r in d["models"].items() if r.get("sampled")}
    if sampled:
        s = next(iter(sampled.values()))
        text += (f"\n\nSampled answers, {s['samples']} per transition at temperature {s['temperature']:g}: pass@k is "
                 "the share of transitions some sample solves, per-sample accuracy the share of samples that solve "
                 "theirs; greedy is the greedy answer's accuracy (changed transitions).\n\n"
                 + _table(["model", "greedy (changed)", "per-sample (changed)", f"pass@{s['samples']} (changed)",
                           "per-sample (unchanged)", f"pass@{s['samples']} (unchanged)"],
                          ["---", "---:", "---:", "---:", "---:", "---:"],
                          [[name, f"{d['models'][name]['accuracy_changed']:.3f}", f"{r['sample_accuracy_changed']:.3f}",
                            f"{r['pass_at_k_changed']:.3f}", f"{r['sample_accuracy_unchanged']:.3f}",
                            f"{r['pass_at_k_unchanged']:.3f}"] for name, r in sampled.items()]))
    return text


def _demo_text(files: list[dict]) -> str:
    d = files[0]
    rows = []
    entries = {**d["models"], "nothing_changes (baseline)": d["baseline"]}
    for name, r in entries.items():
        test = (r.get("vs_sft") or {}).get("exact_changed")
        rows.append([name, f"{r['accuracy']:.3f}", f"{r['accuracy_changed']:.3f} ({r['n_changed']})",
                     f"{r['accuracy_unchanged']:.3f} ({r['n_unchanged']})", f"{r['reward']:.3f}",
                     _paired_cell(test)])
    return (f"**`rlvr-world demo --domain text`** (`{d['command']}`, {_shown(d['_file'])}, copied from "
            f"`{d['args']['out']}`; {_machine(d)}): {_minutes_seconds(d['total_seconds'])} wall, "
            f"{d['grpo_seconds'] / 60:.1f} min of them GRPO ({d['grpo_steps']} steps on {d['env_id']}; "
            f"{_rate(d['frac_zero_spread_groups'])} of groups had no reward spread). Greedy answers to the same "
            f"{d['held_out_transitions']} held-out transitions; the last column is the paired difference from the "
            f"SFT model in exact accuracy on changed transitions.\n\n"
            + _table(["model", "exact", "exact (changed)", "exact (unchanged)", "mean reward", "changed vs sft"],
                     ["---", "---:", "---:", "---:", "---:", "---"], rows))


def _best_of_n(files: list[dict]) -> str:
    d = files[0]
    names = list(d["models"])
    points = list(d["models"][names[0]]["curve"])
    rows = [[n, *(f"{d['models'][m]['curve'][n]['mae']:.5f} ± {d['models'][m]['curve'][n]['mae_stderr']:.5f}"
                  for m in names)] for n in points]
    return (f"**Best-of-N test-time scaling** (`{d['command']}`, {_shown(d['_file'])} and `.png`; {d['machine']}, "
            f"{d['date']}): {d['transitions']} held-out single-step transitions, {d['max_n']} samples per transition "
            f"and model; per transition the sample with the best verified reward among the first N is kept "
            f"(**oracle selection**: it reads the true frame, so it bounds what reranking could buy). Held-out MAE "
            f"(mean ± standard error):\n\n"
            + _table(["N", *names], ["---:", *(["---:"] * len(names))], rows)
            + ("\n\n" + " ".join(d["matches"]) if d.get("matches") else ""))


def _grpo_ablations(files: list[dict]) -> str:
    d = files[0]
    c = d["config"]
    runs = d["runs"]
    groups = [[f"{32 // r['group_size']} x {r['group_size']}", f"{r['final']['mae']:.5f}",
               _change(r["change_percent"]["mae"]), f"{r['final']['ssim']:.4f}", f"{r['train_seconds']:.0f}"]
              for r in sorted(runs.values(), key=lambda r: r["group_size"]) if r["reward"] == "mae"]
    metrics = ("mae", "mse", "psnr", "ssim")
    matrix = [[f"reward {r['reward']}", *(_change(r["change_percent"][m]) for m in metrics)]
              for r in runs.values() if r["group_size"] == 8]
    return (f"**GRPO ablations** (`{d['command']}`, {_shown(d['_file'])} and `.png`; {d['machine']}, {d['date']}): "
            f"RLVRWorld/PushT-SingleStep-v0 from the shipped MLE model, {c['steps']} steps of 32 samples, lr "
            f"{c['lr']:g}, KL {c['beta']:g}, seed {c['seed']}, one run per cell; held-out sampled metrics on "
            f"{c['eval_windows']} transitions. Group size at a fixed 32 samples per step (reward -MAE):\n\n"
            + _table(["prompts x group", "final MAE", "MAE change", "final SSIM", "train s"],
                     ["---", "---:", "---:", "---:", "---:"], groups)
            + "\n\nWhat optimising one metric does to the others (change from the start model; MAE and MSE: "
              "lower is better, PSNR and SSIM: higher is better):\n\n"
            + _table(["trained on", "MAE", "MSE", "PSNR", "SSIM"], ["---", "---:", "---:", "---:", "---:"], matrix))


WEB_AGENTS = {"policy": "noisy scripted policy alone", "base": "+ SFT (MLE) world model",
              "rlvr": "+ GRPO (RLVR) world model", "oracle": "+ the true simulator (oracle)"}


def _web_agent(files: list[dict]) -> str:
    d = files[0]
    c = d["config"]
    rows = []
    for name, s in d["summary"].items():
        low, high = s["ci95"]
        rows.append([WEB_AGENTS.get(name, name), str(s["episodes"]), str(s["successes"]), f"{s['success_rate']:.2f}",
                     f"[{low:.2f}, {high:.2f}]", f"{s['unparsable']} / {s['predictions']}",
                     f"{s['seconds_per_episode']:.2f}"])
    skipped = "".join(f" Agent {name} not run: {why}." for name, why in d.get("skipped", {}).items())
    machine = "; ".join(d["machine"]) if isinstance(d["machine"], list) else d["machine"]
    return (f"**Web agents on MiniWeb goals** ({_commands(d, 'benchmarks.web_agent')}, {_shown(d['_file'])}; "
            f"{machine}, {d['date']}): "
            f"the same {c['episodes']} seeded goal episodes of `RLVRWorld/MiniWeb-Goal-v0` for every agent; the policy "
            f"proposes {c['k']} candidates (noise {c['noise']}), the world model predicts each one's page changes and "
            f"the rule-based value picks one.{skipped}\n\n"
            + _table(["agent", "episodes", "successes", "success rate", "95% CI (Wilson)",
                      "unparsable predictions", "s/episode"], ["---", "---:", "---:", "---:", "---", "---:", "---:"],
                     rows) + _web_agent_verdict(d))


def _miniweb_predictability(files: list[dict]) -> str:
    """Issue 34's audit: per action kind, the share of gold lines every re-run reproduces (the
    site's rules decide them), beside the same audit of the MiniWeb before one site per seed."""
    d = files[0]
    before = next((f for f in files[1:] if f["_file"].endswith("_before.json")), None)
    rows = []
    for kind, k in d["kinds"].items():
        was = before["kinds"].get(kind, {}).get("determined") if before else None
        rows.append([kind, str(k["transitions"]), f"{k['gold_lines']:,}", f"{k['determined']:.3f}",
                     "-" if was is None else f"{was:.3f}", f"{k['in_prompt']:.3f}",
                     "" if "search_by_rule" not in k else f"{k['search_by_rule']:.3f}"])
    return (f"**MiniWeb predictability** (`{d['command']}`, {_shown(d['_file'])}; {d['machine']}, {d['date']}): "
            f"{d['transitions']} held-out transitions of `RLVRWorld/MiniWeb-v0`, each step re-run {d['reruns']} times "
            "with other random generators; *determined* is the share of gold lines every re-run reproduces, "
            "*in the prompt* the share whose item name the prompt holds (the rest are the seed's fixed site).\n\n"
            + _table(["action kind", "transitions", "gold lines", "determined", "before one site", "in the prompt",
                      "search by its rule"], ["---", "---:", "---:", "---:", "---:", "---:", "---:"], rows)
            + f"\n\nThe goal (>= {d['goal']:.0%} determined on the deterministic kinds) is "
            f"**{'met' if d['goal_met'] else 'not met'}**.")


def _learned_sim_step(files: list[dict]) -> str:
    """Issue 33's bound: one learned-simulator step under a second on 2 cores."""
    d = files[0]
    rows = [[f"`{env_id}`", str(r["steps"]), f"{r['median_s']:.3f}", f"{r['max_s']:.3f}",
             "yes" if r["under_1s"] else "**no**"] for env_id, r in d["ids"].items()]
    return (f"**One learned-simulator step** (`{d['command']}`, {_shown(d['_file'])}; {d['note']}): the world model "
            f"writes a frame (KV-cached), the tokenizer decodes it, the frame judge scores it; {d['threads']} torch "
            "threads, batch 1.\n\n"
            + _table(["id", "steps", "median s", "max s", "< 1 s"], ["---", "---:", "---:", "---:", "---"], rows))


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
        facts.append(f"{dec['preset']} decoding at batch {dec['batch']}: static {static['tokens_per_second']:,.0f} "
                     f"tokens/s ({static['share_of_memory_floor']:.0%} of the memory floor) vs eager "
                     f"{eager['tokens_per_second']:,.0f}")
        facts.append(f"{train['preset']} MLE step: " + ", ".join(
            f"{mode} {row['mfu']:.1%} MFU" for mode, row in train["modes"].items() if "mfu" in row))
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
    return (f"* {_shown(d['_file'])} ({d['started']}, {_machine(d)}): finished {', '.join(done) or 'nothing'}"
            + (f"; {', '.join(other)}" if other else "") + (f"; {total} s{limit}" if total else "")
            + ". " + "; ".join(facts) + ".")


def _world_model_speed(files: list[dict]) -> str:
    """Issue 38's ratios on one machine: decoding eager vs static, training eager vs compiled."""
    d = files[0]
    dec, train = d["decoding"], d["training"]
    engines, modes = dec["engines"], train["modes"]
    rows = [[f"decode, {engine}", f"{row['tokens_per_second']:,.0f}",
             f"{row['share_of_memory_floor']:.1%} of the memory floor"] for engine, row in engines.items()]
    rows += [[f"train, {mode}", f"{row['tokens_per_second']:,.0f}", f"{row['mfu']:.1%} MFU"]
             for mode, row in modes.items() if "mfu" in row]
    compiled = f"; compiled / eager training {train['speedup']:.2f}x" if "speedup" in train else ""
    return (f"**World-model speed** (`{d['run']['command']}`, {_shown(d['_file'])}; {note(d['run'])}): preset "
            f"{dec['preset']}, decoding {dec['batch']} sequences after a {dec['prompt_tokens']}-token prompt, training "
            f"{train['batch']} windows of {train['tokens_per_window']} tokens; static / eager decoding "
            f"{dec['speedup']:.2f}x{compiled} (the H200 figures: the GPU check below).\n\n"
            + _table(["path", "tokens/s", "against the ceiling measured in the run"], ["---", "---:", "---"], rows))


def _gpu_check(files: list[dict]) -> str:
    """Issue 38: the H200 runs of the prepared GPU check, each against its own measured ceilings."""
    return ("**GPU check on one H200** (`python -m benchmarks.gpu_check --device cuda`; each run's exact command "
            "in its JSON; what each run was and measured against the goals: "
            f"{_shown('gpu_check/README.md')}):\n\n"
            + "\n".join(_gpu_run(d) for d in sorted(files, key=lambda d: d["started"])))


def _cli_inputs(files: list[dict]) -> str:
    """Issue 33's table of bad command-line values: each refused in one line, none accepted."""
    d = files[0]
    n = d["counts"]
    return (f"**Bad command-line values** (`{d['command']}`, {_shown(d['_file'])}; {d['note']}): {n['cases']} bad "
            f"values given to `rlvr-world` commands and trainers: {n['refused']} refused with exit 2 before any work "
            f"(argparse's usage block, then one error line), {n.get('extra_output', 'uncounted')} with other lines on "
            f"stderr, {n['tracebacks']} tracebacks, {n['accepted']} accepted. Each case and its one-line message: "
            f"`{Path(d['_file']).with_suffix('.md').as_posix()}`.")


def _web_agent_verdict(d: dict) -> str:
    """Issue 12's goal, decided from the numbers: the RLVR world model's agent beats the base's,
    and the oracle's bounds both; with the paired (McNemar) comparison on the same episodes."""
    rate = {name: s["success_rate"] for name, s in d["summary"].items()}
    if not {"base", "rlvr", "oracle"} <= set(rate):
        return ""
    met = rate["rlvr"] > rate["base"] and rate["oracle"] >= max(rate["base"], rate["rlvr"])
    text = (f"\n\nThe goal (the RLVR world model's agent beats the base's, and the oracle bounds both) is "
            f"**{'met' if met else 'not met'}**: RLVR {rate['rlvr']:.2f} vs base {rate['base']:.2f}, oracle "
            f"{rate['oracle']:.2f}")
    pair = d.get("paired", {}).get("base vs rlvr")
    if pair:
        text += (f"; on the same {pair['episodes']} episodes only the RLVR agent succeeded in {pair['rlvr_only']} and "
                 f"only the base agent in {pair['base_only']} (McNemar p {_p(pair['p_mcnemar'])})")
    if "policy" in rate:
        below = [name for name in ("base", "rlvr") if rate[name] < rate["policy"]]
        if below:
            text += (f". With {' and '.join(below)} world model{'s' if len(below) > 1 else ''} the agent does worse "
                     f"than the policy alone ({rate['policy']:.2f}): wrong predictions mislead the value")
    return text + "."


def _text_game_section(title: str, stem: str, arguments: str, heading: str) -> Section:
    """A MiniTextWorld (task reward) language-world-model results section: one file, one command."""
    return Section(title, (f"{stem}.json",),
                   "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniTextWorld-TaskReward-v0 "
                   f"{arguments} --out benchmarks/results/{stem}.json",
                   partial(_language_world_models, heading=heading))


def _planning_section(title: str, stem: str, runs: str, heading: str | None = None) -> Section:
    """A PushT planning table joined by `benchmarks.pusht_planning --merge RUNS --out` its folder."""
    return Section(title, (f"{stem}/results.json",),
                   f"python -m benchmarks.pusht_planning --merge {runs} --out benchmarks/results/{stem}",
                   partial(_planning, heading=heading or title))


def _fidelity_section(title: str, stem: str, heading: str,
                      arguments: str = "--horizon 5 --models NAME=DIR ...") -> Section:
    """A `benchmarks.learned_sim_fidelity --out benchmarks/results/STEM` table."""
    return Section(title, (f"{stem}.json",),
                   f"python -m benchmarks.learned_sim_fidelity {arguments} --out benchmarks/results/{stem}",
                   partial(_fidelity, heading=heading))


SECTIONS: tuple[Section, ...] = (
    Section("`rlvr-world demo`", ("demo_pusht/results.json",), "rlvr-world demo --out runs/demo", _demo),
    Section("`rlvr-world demo --domain text`", ("demo_text/results.json",),
            "rlvr-world demo --domain text --out runs/demo_text", _demo_text),
    Section("GRPO reward: pixels and objects", ("grpo_pusht_rewards*.json",),
            "python -m benchmarks.grpo_pusht_rewards --rewards pose mae --seeds 0 1 2", _grpo_rewards, pattern=True,
            shown="grpo_pusht_rewards*.json"),
    Section("RLVR on the PushT world model", ("grpo_pusht_single.json",),
            "python -m benchmarks.grpo_pusht --layout single ...", _grpo_single),
    Section("GRPO on PushT multi-step", ("grpo_pusht_multi.json",),
            "python -m benchmarks.grpo_pusht --layout multi ...", _grpo_multi),
    Section("Table 3 analogue", ("repetition_table_single.json", "repetition_table_multi.json"),
            "python -m benchmarks.repetition_table --layout single|multi", _repetition_table),
    Section("PushT video world models", ("video_world_models.json",), "python -m benchmarks.video_world_models",
            _video_world_models),
    Section("Compressed multi-step tokenizer", ("compressed_tokenizer.json",),
            "python -m benchmarks.compressed_tokenizer", _compressed_tokenizer),
    Section("KV-cached generation", ("video_generation.json",), "python -m benchmarks.video_generation",
            _video_generation),
    Section("Env overhead", ("env_overhead.json",), "python -m benchmarks.env_overhead", _env_overhead,
            optional=("env_overhead_textgame.json",)),
    Section("Text-game verifier", ("text_verifier_throughput.json",),
            "python -m benchmarks.text_verifier_throughput --baseline 40e7884", _text_verifier),
    Section("Reward throughput", ("metrics_throughput.json",), "python -m benchmarks.metrics_throughput [--net alex]",
            _metrics_throughput, optional=("metrics_throughput_alex.json",)),
    Section("Web verifier", ("web_verifier_throughput.json",), "python -m benchmarks.web_verifier_throughput",
            _web_verifier),
    Section("Hostile inputs", ("hostile_inputs.json",), "python -m benchmarks.hostile_inputs", _hostile_inputs),
    Section("PushT data", ("pusht_data_200.json",), "rlvr-world data pusht --episodes 200 --resolution 96 --seed 0",
            _pusht_data),
    Section("RL algorithms on one budget", ("rl_algorithms.json",), "python -m benchmarks.rl_algorithms --data DIR",
            _rl_algorithms),
    Section("Best-of-N test-time scaling", ("best_of_n_scaling.json",),
            "python -m benchmarks.best_of_n_scaling --out benchmarks/results/best_of_n_scaling.json", _best_of_n),
    Section("GRPO ablations", ("grpo_ablations.json",),
            "python -m benchmarks.grpo_ablations --out benchmarks/results/grpo_ablations.json", _grpo_ablations),
    Section("PushT CEM planning", ("pusht_planning/results.json",), "python -m benchmarks.pusht_planning ...",
            _planning),
    Section("Does the learned simulator follow its actions?", ("learned_sim_fidelity.json",),
            "python -m benchmarks.learned_sim_fidelity", _fidelity),
    _fidelity_section("Longer MLE and the pose reward: action following", "learned_sim_fidelity_pose_reward",
                      "Action following after longer MLE and GRPO on the pose reward", "--models NAME=DIR ..."),
    _planning_section("PushT CEM planning with the longer-trained models", "pusht_planning_longer",
                      "runs/plan/long2 runs/plan/long2_rlvr_beta04 benchmarks/results/pusht_planning:true_sim,random",
                      "PushT CEM planning with the longer-trained world models"),
    _fidelity_section("Action following over several chunks", "learned_sim_fidelity_rollouts",
                      "Action following over several chunks, and GRPO on the model's own rollouts"),
    _planning_section("PushT CEM planning after GRPO on the model's own rollouts", "pusht_planning_rollout_grpo",
                      "runs/plan/long2 runs/plan/long2_rollout_round2 "
                      "benchmarks/results/pusht_planning_longer:true_sim,random"),
    _planning_section("PushT CEM planning after a third round of GRPO on the model's own rollouts",
                      "pusht_planning_rollout_grpo_round3",
                      "runs/plan/long2 runs/plan/long2_rollout_round3 "
                      "benchmarks/results/pusht_planning_longer:true_sim,random"),
    _fidelity_section("Action following of the retrained models", "learned_sim_fidelity_retrained",
                      "Action following of the shipped MLE12k and rollout-GRPO models, and of rollout GRPO with "
                      "the agent's error weighted 3x"),
    _planning_section("PushT CEM planning after rollout GRPO, retrained", "pusht_planning_rollout_grpo_retrained",
                      "runs/plan/long2 runs/plan/long2_rollout_round2 "
                      "benchmarks/results/pusht_planning_longer:true_sim,random",
                      "PushT CEM planning after two rounds of GRPO on the model's own rollouts, base and RLVR "
                      "retrained"),
    _planning_section("PushT CEM planning after rollout GRPO with the agent's error weighted 3x",
                      "pusht_planning_rollout_grpo_agent3",
                      "runs/plan/long2 runs/plan/long2_rollout_agent3_round2 "
                      "benchmarks/results/pusht_planning_longer:true_sim,random",
                      "PushT CEM planning after two rounds of rollout GRPO with the agent's error weighted 3x "
                      "(base and RLVR retrained)"),
    _fidelity_section("Action following after MLE on CEM-like episodes", "learned_sim_fidelity_cem_data",
                      "Action following after 4000 more MLE steps on data with CEM-like episodes, and after "
                      "rollout GRPO from there"),
    _planning_section("PushT CEM planning after MLE on CEM-like episodes", "pusht_planning_cem_data",
                      "runs/plan/cem_base runs/plan/cem_rollout_r2 "
                      "benchmarks/results/pusht_planning_longer:true_sim,random",
                      "PushT CEM planning after 4000 more MLE steps on data with CEM-like episodes, and two rounds "
                      "of rollout GRPO from there"),
    _planning_section("PushT CEM planning with the blurred-pixels objective", "pusht_planning_blurred_pixels",
                      "runs/plan/blur_base runs/plan/blur_rlvr runs/plan/blur_baselines",
                      "PushT CEM planning with the blurred-pixels objective (the shipped MLE12k and rollout-RLVR "
                      "models)"),
    _planning_section("PushT CEM planning against the blind-CEM floor", "pusht_planning_blind_floor",
                      "benchmarks/results/pusht_planning_rollout_grpo_retrained:base,rlvr,true_sim,random "
                      "runs/plan/blind",
                      "PushT CEM planning against CEM with random costs (the models of the retrained table)"),
    _planning_section("PushT CEM planning with the pose objective", "pusht_planning_pose_objective",
                      "runs/plan/pose_long2 runs/plan/pose_long2_rlvr_beta04 runs/plan/pose_true_sim "
                      "runs/plan/pose_random"),
    Section("Candidate ranking: learned vs true simulator", ("planning_agreement.json",),
            "python -m benchmarks.planning_agreement --models NAME=DIR ... --out benchmarks/results/planning_agreement",
            _planning_agreement, optional=("planning_agreement_pose_h1.json", "planning_agreement_pose.json")),
    Section("Language world models on MiniWeb", ("web_world_models.json",),
            "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --models sft=DIR rlvr=DIR "
            "--out benchmarks/results/web_world_models.json", _language_world_models),
    Section("Text-game world models on MiniTextWorld", ("text_world_models.json",),
            "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniTextWorld-v0 --models sft=DIR "
            "rlvr_seed0=DIR ... --out benchmarks/results/text_world_models.json", _language_world_models),
    _text_game_section("Text-game world models after longer SFT", "text_world_models_longer_sft",
                       "--models sft_longer=DIR sft=DIR rlvr_seed0=DIR ...", "Language world models after longer SFT"),
    _text_game_section("Text-game GRPO on filtered prompts", "text_world_models_filtered_grpo",
                       "--models sft_longer=DIR rlvr_filtered_lr2e-5_step50_seed0=DIR ...", "GRPO on filtered prompts"),
    _text_game_section("Text-game GRPO on filtered changed and unchanged prompts", "text_world_models_mixed_grpo",
                       "--models sft_longer=DIR rlvr_mixed_step50_seed0=DIR ...",
                       "GRPO on filtered changed and unchanged prompts"),
    _text_game_section("Text-game GRPO, filtered changed prompts then both kinds", "text_world_models_two_stage_grpo",
                       "--models sft_longer=DIR rlvr_filtered_step100_seed0=DIR ... "
                       "rlvr_then_mixed_step30_seed0=DIR ...",
                       "GRPO on filtered changed prompts, then on both kinds"),
    _text_game_section("Text-game world models, sampled", "text_world_models_sampled",
                       "--samples 6 --temperature 0.7 --models sft_longer=DIR ...", "Greedy and sampled answers"),
    _text_game_section("Text-game world models that ship", "text_world_models_shipped",
                       "--models sft_longer_shipped=DIR sft_shipped=DIR",
                       "The two shipped MiniTextWorld models"),
    _text_game_section("Text-game shipped longer-SFT model, sampled", "text_world_models_shipped_sampled",
                       "--samples 6 --temperature 0.7 --models sft_longer_shipped=DIR",
                       "Greedy and sampled answers of the shipped longer-SFT model"),
    _text_game_section("Text-game GRPO from the shipped longer-SFT model", "text_world_models_shipped_grpo160",
                       "--models sft_longer_shipped=DIR rlvr_task_step80_seed0=DIR ...",
                       "GRPO (task reward) from the shipped longer-SFT model"),
    _text_game_section("Text-game GRPO with 16 samples per prompt", "text_world_models_shipped_grpo_g16",
                       "--models sft_longer_shipped=DIR rlvr_g16_t1_step50_seed0=DIR ...",
                       "GRPO (task reward, 16 samples per prompt at temperature 1) from the shipped "
                       "longer-SFT model"),
    Section("Text SFT speed", ("text_sft_speed.json",), "python -m benchmarks.text_sft_speed --device cpu",
            _text_sft_speed),
    Section("World-model speed", ("world_model_speed.json",), "python -m benchmarks.world_model_speed",
            _world_model_speed),
    Section("GPU check on one H200", ("gpu_check/*/gpu_check.json",), "python -m benchmarks.gpu_check --device cuda",
            _gpu_check, pattern=True, shown="gpu_check/<run>/gpu_check.json"),
    Section("Learned-simulator step", ("learned_sim_step.json",), "python -m benchmarks.learned_sim_step",
            _learned_sim_step),
    Section("Bad command-line values", ("cli_inputs.json",), "python -m benchmarks.cli_inputs", _cli_inputs),
    Section("Web agents on MiniWeb goals", ("web_agent/results.json",),
            "python -m benchmarks.web_agent --base-model DIR --rlvr-model DIR", _web_agent),
    Section("MiniWeb as one site: predictability audit", ("miniweb_predictability.json",),
            "python -m benchmarks.miniweb_predictability --transitions 2000 --out "
            "benchmarks/results/miniweb_predictability", _miniweb_predictability,
            optional=("miniweb_predictability_before.json",)),
    Section("Language world models on the one-site MiniWeb", ("web_world_models_site.json",),
            "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --models sft=DIR rlvr=DIR "
            "--out benchmarks/results/web_world_models_site.json", _language_world_models),
    Section("Web agents on the one-site MiniWeb", ("web_agent_site/results.json",),
            "python -m benchmarks.web_agent --merge DIR ... --out benchmarks/results/web_agent_site", _web_agent),
    Section("PushT success judge", ("pusht_success_judge.json",), "python -m benchmarks.pusht_success_judge",
            _success_judge),
    Section("Real2Sim on PushT", ("real2sim/*/results.json",),
            "rlvr-world policy-eval --out benchmarks/results/real2sim/<model>", _real2sim, pattern=True,
            shown="real2sim/<model>/results.json"),
)


def _preamble() -> str:
    machines = []
    for section in SECTIONS:
        for f in section.paths():
            data = load(f)
            if data:
                machines.append(_machine(data).lower())
    gpu = any("cuda" in m or ("gpu" in m and "no gpu" not in m) for m in machines)
    arches = sorted({m.split(",")[0].strip() for m in machines if m.startswith(("x86", "aarch", "arm"))})
    where = f"{' and '.join(arches)} " if arches else ""
    line = (f"Every run below was on {where}CPUs (no GPU was available to these runs)" if machines and not gpu
            else "Runs below were on the machines each subsection names")
    return ("<!-- generated by `python -m benchmarks.readme_results` from benchmarks/results/: edit that script "
            "and rerun it, not this block -->\n" + line + "; each subsection quotes its run's machine string, the "
            "command that wrote its results and the results file.")


def _text_recipes() -> list[tuple[str, str, dict, float]]:
    """(file, recipe, seed group, the first model's accuracy on unchanged transitions) for every
    committed MiniTextWorld recipe (and step) run with at least 3 seeds; a group evaluated again in a
    later file (the same rewards to the last digit) counts once."""
    out, seen = [], set()
    for path in sorted(RESULTS.glob("text_world_models*.json")):
        data = load(path.name) or {}
        first = next(iter(data.get("models", {}).values()), None)
        for recipe, group in data.get("seed_groups", {}).items():
            key = tuple(group["reward"]["values"])
            if first and len(group["members"]) >= 3 and key not in seen:
                seen.add(key)
                out.append((path.name, recipe, group, first["accuracy_unchanged"]))
    return out


def _planning_tables() -> list[tuple[str, dict]]:
    """(file, summary) of every committed PushT planning table with base, RLVR and true-sim rows; a
    table merged again into another (the same runs, to the second per episode) counts once."""
    out, seen = [], set()
    for path in sorted(RESULTS.glob("pusht_planning*/results.json")):
        relative = str(path.relative_to(RESULTS))
        summary = (load(relative) or {}).get("summary", {})
        if not {"base", "rlvr", "true_sim"} <= set(summary):
            continue
        key = json.dumps([summary[k] for k in ("base", "rlvr", "true_sim")], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((relative, summary))
    return out


def _default_real2sim_runs(held_out: str | None = None) -> list[tuple[str, dict]]:
    """(file, results) of the committed runs of docs/recipes.md's policy-eval command as a user runs
    it (the default simulator and settings, the recipe's two policies), fewest starts first.
    `held_out`: None for the embedded held-out set (no `--data`), else the name of the folder given
    as `--data` (`heldout_b`: held-out set B)."""
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    # every option that changes what is measured, at its default (the start count may differ)
    defaults = [f"--{name.replace('_', '-')} {parser.get_default(name)}" for name in
                ("lead", "start_from", "judge_frames", "max_steps", "noise", "success", "success_coverage",
                 "temperature", "seed")]
    runs = []
    for path in sorted(RESULTS.glob("real2sim/*/results.json")):
        relative = str(path.relative_to(RESULTS))
        d = load(relative)
        names = {p["policy"] for p in d["policies"]}
        tokens = d["command"].split()
        data = _flag(d["command"], "--data")
        if (Path(d.get("model", "")).name == DEFAULT_MODEL.name and {"toward_centre", "circler"} <= names
                and set(defaults) <= {f"{a} {b}" for a, b in zip(tokens, tokens[1:])}
                and not {"--model", "--tokenizer", "--no-family"} & set(tokens)
                and (Path(data).name if data else None) == held_out
                and d.get("lead_from", "end") == parser.get_default("lead_from")):  # runs before it: "end"
            runs.append((relative, d))
    return sorted(runs, key=lambda run: run[1]["policies"][0]["starts"])


REAL2SIM_REPORTED_ON = "heldout_b"  #: the held-out set the goals row reports (docs/recipes.md: "set B")
REAL2SIM_CHOICE = "real2sim_default_choice.json"  #: the comparison that chose the default simulator


# -- the goals table: each figure with its 95% interval, met only when the whole interval clears the target

@dataclass
class GoalRow:
    """One row of the goals table. `quoted`: (a piece of the row's text, the JSON pointers in the
    row's file of the numbers in that piece, in order), so a test can read each figure again from
    the file the row names; the intervals are computed from figures it quotes."""

    goal: str
    measured: str
    baseline: str
    target: str
    verdict: str
    file: str  #: relative to RESULTS
    quoted: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def cells(self) -> list[str]:
        return [self.goal, self.measured, self.baseline, self.target, self.verdict, _shown(self.file)]


def _interval(low: float, high: float, digits: int = 2, percent: bool = False) -> str:
    """A 95% interval as the goals table writes it, e.g. [0.71, 0.97] or [35%, 162%] ('no interval'
    where it is undefined)."""
    if _nan(low) or _nan(high):
        return "(no interval)"
    if percent:
        return f"[{low:.0%}, {high:.0%}]"
    return f"[{low:.{digits}f}, {high:.{digits}f}]".replace("-0.00", "0.00")


def _verdict(low: float, high: float, target: float, at_least: bool = True) -> str:
    """'met' only when the whole interval clears the target; else '**not met**' and how far it reaches."""
    if _nan(low) or _nan(high):
        return "**not met** (no interval)"
    if (low >= target) if at_least else (high <= target):
        return "met"
    return "**not met**"


def _ratio_interval(a: int, n1: int, b: int, n2: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of the ratio of two success rates a/n1 over b/n2 (Katz's log method); nan
    when either has no success."""
    if not (a and b):
        return (float("nan"), float("nan"))
    ratio = (a / n1) / (b / n2)
    half = z * math.sqrt(1 / a - 1 / n1 + 1 / b - 1 / n2)
    return (ratio * math.exp(-half), ratio * math.exp(half))


def _seed_interval(values: list[float]) -> tuple[float, float]:
    """95% t-interval of the mean of per-seed values (nan with fewer than two)."""
    from scipy import stats

    n = len(values)
    if n < 2:
        return (float("nan"), float("nan"))
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return (mean - half, mean + half)


#: (metric, how the row names it) of the PushT GRPO goal: the pixels and every object the judge reads
GRPO_JUDGED = (("mae", "MAE"), ("agent_error", "agent"), ("block_error", "block"), ("angle_error", "angle"))


def _grpo_reward_runs() -> list[tuple[str, dict]]:
    """(file, results) of every committed benchmarks.grpo_pusht_rewards run, by name."""
    return [(str(path.relative_to(RESULTS)), load(str(path.relative_to(RESULTS))))
            for path in sorted(RESULTS.glob("grpo_pusht_rewards*.json"))]


def _grpo_goal() -> GoalRow | None:
    """PushT GRPO as the demo runs it (its reward, weights and steps): the MAE and the agent, block and
    angle errors all lower than the MLE base in every seed (each seed's 95% interval below 0), beside
    copy-last-frame and beside what -MAE does to the agent."""
    from benchmarks.grpo_pusht_rewards import change_text
    from trainers.demo import DEFAULT_STEPS, OBJECT_COLUMNS, reward_kwargs

    runs = _grpo_reward_runs()
    demo = [(f, d) for f, d in runs if d.get("grpo_steps") == DEFAULT_STEPS["pusht"]
            and d.get("rewards", {}).get("pose", {}).get("env_kwargs") == list(reward_kwargs("pose"))]
    if not demo:
        return None
    file, d = demo[0]
    reward, pointer = d["rewards"]["pose"], "/rewards/pose/change_from_base"
    parts, quoted = [], []
    for key, name in GRPO_JUDGED:
        text = f"{name} {change_text(reward['change_from_base'][key])}"
        parts.append(text)
        quoted.append((text, tuple(f"{pointer}/{key}/{end}" for end in ("mean", "low", "high"))))
    measured = (f"reward pose, {d['grpo_steps']} steps (the demo's), {reward['seeds']} seeds: {'; '.join(parts)}; "
                f"all four lower beyond noise in {reward['seeds_all_lower_than_base']} of {reward['seeds']} seeds")
    quoted.append((f"in {reward['seeds_all_lower_than_base']} of {reward['seeds']} seeds",
                   ("/rewards/pose/seeds_all_lower_than_base", "/rewards/pose/seeds")))
    pixels = next(((f, r) for f, r in runs if "mae" in r.get("rewards", {})), None)
    if pixels:
        agent = pixels[1]["rewards"]["mae"]["change_from_base"]["agent_error"]["mean"]
        measured += f" (reward -MAE, {pixels[1]['grpo_steps']} steps, `{SHOWN}/{pixels[0]}`: agent {agent:+.1f} px)"
    copy = d["baselines"]["copy_last_frame_tokens"]
    units = {key: (unit, scale) for key, _, unit, scale in OBJECT_COLUMNS}
    shown = [f"MAE {copy['mae']:.5f}", *(f"{name} {copy[key] * units[key][1]:.1f} {units[key][0]}"
                                         for key, name in GRPO_JUDGED[1:])]
    baseline = (f"copy-last-frame: {', '.join(shown)}; beaten in {reward['seeds_beating_copy_last']} of "
                f"{reward['seeds']} seeds")
    quoted.append((f"beaten in {reward['seeds_beating_copy_last']} of {reward['seeds']} seeds",
                   ("/rewards/pose/seeds_beating_copy_last", "/rewards/pose/seeds")))
    worst = max(reward["change_from_base"][key]["high"] for key, _ in GRPO_JUDGED)
    return GoalRow("PushT GRPO vs the MLE base: held-out sampled MAE and the judge's agent, block and angle errors",
                   measured, baseline, "<= 0 each", "met" if worst < 0 else "**not met**", file, quoted)


def _text_goal() -> GoalRow | None:
    recipes = _text_recipes()
    if not recipes:
        return None
    kept = [r for r in recipes if r[2]["accuracy_unchanged"]["mean"] >= r[3] - UNCHANGED_KEPT]
    best = max(kept or recipes, key=lambda r: r[2]["changed_vs_first"]["mean"])
    file, recipe, group, unchanged = best
    data = load(file)
    first = next(iter(data["models"]))
    gain = group["changed_vs_first"]
    low, high = _seed_interval(gain["values"])
    verdict = _verdict(low, high, GOAL_TEXT_CHANGED_GAIN) if kept else "**not met** (none keeps unchanged ones)"
    baseline, quoted = "", []
    nothing = data.get("baselines", {}).get("nothing_changes")
    if nothing:
        sft = data["models"][first]["accuracy_changed"]
        baseline = (f"\"nothing changes\": {nothing['accuracy_changed']:.3f} changed, "
                    f"{nothing['accuracy_unchanged']:.3f} unchanged (SFT {sft:.3f}, {unchanged:.3f})")
        quoted.append((baseline, ("/baselines/nothing_changes/accuracy_changed",
                                  "/baselines/nothing_changes/accuracy_unchanged", f"/models/{first}/accuracy_changed",
                                  f"/models/{first}/accuracy_unchanged")))
    quoted += [(f"{recipe} {gain['mean']:+.3f}", (f"/seed_groups/{recipe}/changed_vs_first/mean",)),
               (f"unchanged {unchanged:.3f} -> {group['accuracy_unchanged']['mean']:.3f}",
                (f"/models/{first}/accuracy_unchanged", f"/seed_groups/{recipe}/accuracy_unchanged/mean"))]
    return GoalRow(
        "MiniTextWorld GRPO vs SFT: held-out exact accuracy on changed transitions, unchanged ones kept",
        f"best of the {len(recipes)} three-seed recipe and step groups in `{SHOWN}/text_world_models*.json` "
        f"({len(kept)} keep unchanged ones): {recipe} {gain['mean']:+.3f} {_interval(low, high)} (t over "
        f"{len(gain['values'])} seeds), unchanged {unchanged:.3f} -> {group['accuracy_unchanged']['mean']:.3f}",
        baseline, f">= +{GOAL_TEXT_CHANGED_GAIN:.2f} (aim)", verdict, file, quoted)


def _planning_goal() -> GoalRow | None:
    tables = _planning_tables()
    if not tables:
        return None

    def share(summary: dict) -> float:
        true = summary["true_sim"]["success_rate"]
        return summary["rlvr"]["success_rate"] / true if true else 0.0
    file, best = max(tables, key=lambda t: share(t[1]))
    matches = sum(s["rlvr"]["success_rate"] >= s["base"]["success_rate"] for _, s in tables)
    rlvr, true, base = best["rlvr"], best["true_sim"], best["base"]
    low, high = _ratio_interval(rlvr["successes"], rlvr["episodes"], true["successes"], true["episodes"])
    verdict = _verdict(low, high, GOAL_PLANNING_SHARE)
    if verdict == "met" and rlvr["success_rate"] < base["success_rate"]:
        verdict = "**not met** (RLVR < base)"
    quoted = [(f"RLVR {rlvr['successes']} vs true simulator {true['successes']} of {rlvr['episodes']}",
               ("/summary/rlvr/successes", "/summary/true_sim/successes", "/summary/rlvr/episodes"))]
    trivial = [k for k in ("blind", "random") if k in best]
    baseline = ""
    if trivial:
        name = max(trivial, key=lambda k: best[k]["success_rate"])
        t = best[name]
        baseline = (f"{PLANNERS.get(name, name)}: {t['successes']}/{t['episodes']} "
                    f"(MLE base {base['successes']}/{base['episodes']})")
        quoted.append((baseline.split(": ", 1)[1], (f"/summary/{name}/successes", f"/summary/{name}/episodes",
                                                    "/summary/base/successes", "/summary/base/episodes")))
    return GoalRow(
        "PushT CEM planning: RLVR simulator's success as a share of the true simulator's",
        f"best of {len(tables)} tables: RLVR {rlvr['successes']} vs true simulator {true['successes']} of "
        f"{rlvr['episodes']} = {share(best):.0%} {_interval(low, high, percent=True)}; RLVR >= base in {matches} "
        f"of {len(tables)}",
        baseline, f">= {GOAL_PLANNING_SHARE:.0%}, and RLVR >= base", verdict, file, quoted)


def _judge_goal() -> GoalRow | None:
    from rlvr_envs.core.util import wilson_interval

    judge = load("pusht_success_judge.json")
    if not judge:
        return None
    s = judge["summary"]
    index, env = next((i, b) for i, b in enumerate(s["success"]) if b["bar"] == s["env_bar"])

    def lows(b: dict) -> tuple[float, float]:
        return wilson_interval(b["both"], b["judge_successes"])[0], wilson_interval(b["both"], b["env_successes"])[0]
    precision = wilson_interval(env["both"], env["judge_successes"])
    recall = wilson_interval(env["both"], env["env_successes"])
    holds = [b for b in s["success"] if min(lows(b)) >= GOAL_JUDGE_PRECISION_RECALL]
    met = (_verdict(min(precision[0], recall[0]), 1.0, GOAL_JUDGE_PRECISION_RECALL)
           if not (_nan(precision[0]) or _nan(recall[0])) else "**not met** (no interval)")
    verdict = f"{met} at {s['env_bar']:g}; met at bars {_bars(holds)}" if holds and env not in holds else met
    pointer = f"/summary/success/{index}"
    quoted = [(f"precision {_fraction(env['precision'])}", (f"{pointer}/precision",)),
              (f"recall {_fraction(env['recall'])}", (f"{pointer}/recall",)),
              (f"({env['env_successes']} real successes in {s['frames']:,}", (f"{pointer}/env_successes",
                                                                              "/summary/frames")),
              (f"{s['position_error_px']['median']:.2f} px, {s['angle_error_deg']['median']:.2f} deg",
               ("/summary/position_error_px/median", "/summary/angle_error_deg/median"))]
    return GoalRow(
        f"PushT success judge: precision and recall of the env's own success (coverage > {s['env_bar']:g})",
        f"precision {_fraction(env['precision'])} {_interval(*precision)}, recall {_fraction(env['recall'])} "
        f"{_interval(*recall)} ({env['env_successes']} real successes in {s['frames']:,} held-out frames); pose error "
        f"{s['position_error_px']['median']:.2f} px, {s['angle_error_deg']['median']:.2f} deg median",
        "", f">= {GOAL_JUDGE_PRECISION_RECALL:g} each", verdict, "pusht_success_judge.json", quoted)


def _policy_rates(d: dict) -> list[tuple[str, list[int]]]:
    """Learned vs real success per policy, a policy at several noise levels in one entry (with the
    indices of its policies in the results file)."""
    from itertools import groupby

    def family(p: tuple[int, dict]) -> str:
        return re.sub(r"_noise\d+$", "", p[1]["policy"])
    parts = []
    for name, indexed in groupby(enumerate(d["policies"]), key=family):
        indexed = list(indexed)
        group = [p for _, p in indexed]
        learned = "/".join(f"{p['learned_success']:.0%}" for p in group)
        real = "/".join(f"{p['real_success']:.0%}" for p in group)
        noise = [re.search(r"_noise(\d+)$", p["policy"]) for p in group]
        levels = f" (noise {'/'.join(m.group(1) for m in noise)})" if len(group) > 1 and all(noise) else ""
        parts.append((f"{name}{levels} {learned} vs {real}", [i for i, _ in indexed]))
    return parts


def _policy_names(d: dict) -> str:
    """The policies behind a Pearson, a policy at several noise levels named once."""
    names = [p["policy"] for p in d["policies"]]
    noisy = [n for n in names if re.search(r"_noise\d+$", n)]
    families = {re.sub(r"_noise\d+$", "", n) for n in noisy}
    shown = [f"{f} at {len([n for n in noisy if n.startswith(f + '_noise')])} noise levels" for f in sorted(families)]
    return ", ".join(shown + [n for n in names if n not in noisy])


def _real2sim_goal() -> GoalRow | None:
    """Real2Sim of the default simulator, reported on a held-out set other than the one that chose
    it (REAL2SIM_CHOICE names the runs compared); without such a run, on the choosing set, saying so."""
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL

    choice, chosen_data = load(REAL2SIM_CHOICE), None
    if choice:
        chosen = next((c for c in (choice.get("first"), choice.get("second"))
                       if c and Path(c.get("model", "")).name == DEFAULT_MODEL.name), None)
        run = load(f"{chosen['run'].removeprefix(SHOWN + '/')}/results.json") if chosen else None
        chosen_data = _flag(run["command"], "--data") if run else None
    chosen_set = Path(chosen_data).name if chosen_data else None
    other = REAL2SIM_REPORTED_ON if chosen_set != REAL2SIM_REPORTED_ON else None
    reported, choosing = _default_real2sim_runs(other), _default_real2sim_runs(chosen_set)
    if not (reported or choosing):
        return None
    name = {None: "the embedded held-out set", "heldout_b": "held-out set B"}
    file, d = (reported or choosing)[-1]
    where = (f"{name.get(other, other)} (`--data {other}`)" if reported and other else
             name[None] if reported else f"{name.get(chosen_set, chosen_set)}, the set that chose it (no other "
                                         "held-out set measured yet)")
    chose = (f"chosen on {name.get(chosen_set, chosen_set)} ({_shown(REAL2SIM_CHOICE)})" if choice
             else f"chosen on {name.get(chosen_set, chosen_set)}")
    s = _real2sim_summary(d)
    low, high = (s.get("pearson_interval") or [float("nan")] * 2)
    starts = d["policies"][0]["starts"]
    quoted = [(f"{starts} starts: Pearson {s['pearson']:.3f}", ("/policies/0/starts", "/summary/pearson")),
              (f"over {len(d['policies'])} policies", ("/policies",))]  # a list: its length
    if "pearson_interval" in d["summary"]:
        quoted.append((_interval(low, high), ("/summary/pearson_interval/0", "/summary/pearson_interval/1")))
    rates = _policy_rates(d)
    for text, indices in rates:
        quoted.append((text.split(" ", 1)[1] if "(noise" not in text else text.split(") ", 1)[1],
                       tuple(f"/policies/{i}/{k}" for k in ("learned_success", "real_success") for i in indices)))
    return GoalRow(
        "Real2Sim on PushT (the recipe's policy-eval command, default learned simulator): Pearson of learned vs "
        "real success rates over the policies",
        f"{where}, {starts} starts: Pearson {s['pearson']:.3f} {_interval(low, high)} over {len(d['policies'])} "
        f"policies ({_policy_names(d)}); learned vs real success: {', '.join(t for t, _ in rates)}; simulator "
        f"{chose}",
        "", f">= {GOAL_REAL2SIM_PEARSON:g}", _verdict(low, high, GOAL_REAL2SIM_PEARSON), file, quoted)


def _goal_rows() -> list[GoalRow]:
    """One row per numeric goal the issues set, read from the same files as the subsections."""
    rows = []
    rows += [row for row in (_grpo_goal(), _text_goal(), _planning_goal(), _judge_goal(), _real2sim_goal()) if row]
    # a row built as a plain list (goal, measured, target, verdict, file) has no baseline cell
    return [row if isinstance(row, GoalRow) else
            GoalRow(row[0], row[1], "", row[2], row[3], row[4].strip("`").removeprefix(SHOWN + "/")) for row in rows]


def _goals(where: str = "the subsections below give every run") -> str:
    """The goals table; empty when none of its goals is measured."""
    rows = _goal_rows()
    if not rows:
        return ""
    return (f"**Where the issues' numeric goals stand** (each row read from the file it names; in brackets the "
            f"95% interval, and a goal is met only when all of it clears the target; {where}):\n\n"
            + _table(["goal", "measured [95% interval]", "strongest trivial baseline", "target", "verdict", "file"],
                     ["---"] * 6, [row.cells() for row in rows]))


_BLOCK_START = re.compile(r"^([-+*>]|\d+[.)]|#+)(\s|$)")  # a line that would start a list, quote or heading


def _wrap(text: str) -> str:
    """Prose lines wrapped at WIDTH; no wrapped line may start a markdown list, quote or heading."""
    out = []
    for line in text.split("\n"):
        if len(line) <= WIDTH or line.startswith(("|", "!", "<!--")):
            out.append(line)
            continue
        lines = textwrap.wrap(line, WIDTH, break_long_words=False, break_on_hyphens=False)
        for i in range(1, len(lines)):
            while _BLOCK_START.match(lines[i]):
                word, _, rest = lines[i].partition(" ")
                lines[i - 1] += " " + word
                lines[i] = rest
        out += [line for line in lines if line]
    return "\n".join(out)


def render() -> str:
    """The whole Results block of docs/results.md (the text between the markers, after the opening marker's newline)."""
    parts = [_preamble(), _goals(), *(section.render() for section in SECTIONS)]
    return "\n\n".join(_wrap(part) for part in parts if part) + "\n"


def render_summary() -> str:
    """README's results summary: the goals table, pointing at docs/results.md for every run."""
    goals = _goals("[docs/results.md](docs/results.md) gives every run, with its command and file")
    return _wrap(goals or f"Results: {NOT_MEASURED}; see [docs/results.md](docs/results.md).") + "\n"


def render_gpu_summary() -> str:
    """README's Scale out: what the committed GPU runs measured, each figure beside its goal."""
    runs = sorted(((str(f.relative_to(RESULTS)), load(str(f.relative_to(RESULTS))))
                   for f in RESULTS.glob("gpu_check/*/gpu_check.json")), key=lambda r: r[1]["started"])
    if not runs:
        return f"GPU runs: {NOT_MEASURED}; `python -m benchmarks.gpu_check --device cuda` measures them.\n"

    def done(d: dict, stage: str) -> dict | None:
        v = d["stages"].get(stage)
        return v if isinstance(v, dict) and not {"error", "skipped", "stopped"} & set(v) else None

    devices = sorted({_machine(d).split(",")[0] if not isinstance(d.get("machine"), dict)
                      else d["machine"].get("device", "") for _, d in runs})
    facts = []
    speed = [done(d, "speed") for _, d in runs if done(d, "speed")]
    if speed:
        train, dec = speed[-1]["training"], speed[-1]["decoding"]
        mfu = train["modes"]["compiled"]["mfu"] if "compiled" in train["modes"] else train["modes"]["eager"]["mfu"]
        static = dec["engines"]["static"]["tokens_per_second"]
        facts.append(
            f"the {train['preset']} preset's MLE step ({train['parameters'] / 1e6:.0f}M, compiled) trained at "
            f"{mfu:.1%} of the measured bf16 matmul rate (goal >= {GOAL_MLE_MFU:.0%}: "
            f"{'met' if mfu >= GOAL_MLE_MFU else '**not met**'}); its static decoder (KV cache + CUDA graphs) "
            f"decoded **{static:,.0f} tokens/s** at batch {dec['batch']}, {dec['speedup']:.1f}x the eager loop "
            f"(goal >= {GOAL_DECODE_TOKENS_PER_S:,} tokens/s: "
            f"{'met' if static >= GOAL_DECODE_TOKENS_PER_S else '**not met**'})")
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
    return _wrap(f"On one {' and '.join(devices)} ({len(runs)} runs of `python -m benchmarks.gpu_check --device cuda`, "
                 f"minutes each; [{SHOWN}/gpu_check/]({SHOWN}/gpu_check/README.md)): " + "; ".join(facts) + ".") + "\n"


def _split(readme: str, start_marker: str = START, end_marker: str = END) -> tuple[str, str, str]:
    """(before and including the opening marker's line, the block, from the closing marker on)."""
    start = readme.index(start_marker) + len(start_marker)
    if readme[start:start + 1] == "\n":
        start += 1
    end = readme.find(end_marker, start)
    if end < 0:  # no closing marker yet: the block runs to the next section or the end
        heading = re.search(r"^## ", readme[start:], flags=re.MULTILINE)
        end = start + heading.start() if heading else len(readme)
        return readme[:start], readme[start:end], end_marker + "\n" + readme[end:]
    return readme[:start], readme[start:end], readme[end:]


def updated(text: str, start_marker: str = START, end_marker: str = END, body: Callable[[], str] = render) -> str:
    before, _, after = _split(text, start_marker, end_marker)
    return before + body() + after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 with a diff when a page is out of date")
    parser.add_argument("--page", default=str(PAGE), help="the results page (every result)")
    parser.add_argument("--readme", default=str(README), help="the README holding the summary")
    args = parser.parse_args(argv)
    stale = 0
    pages = ((Path(args.page), (((START, END), render),)),
             (Path(args.readme), (((SUMMARY_START, SUMMARY_END), render_summary),
                                  ((SCALE_START, SCALE_END), render_gpu_summary))))
    for path, blocks in pages:
        if not path.is_file():
            print(f"{path}: missing (it holds the {blocks[0][0][0]} block)", file=sys.stderr)
            return 1
        current = wanted = path.read_text()
        for markers, body in blocks:
            if markers[0] not in wanted:
                print(f"{path}: no {markers[0]} marker (the block goes after it)", file=sys.stderr)
                return 1
            wanted = updated(wanted, *markers, body)
        if args.check:
            if wanted != current:
                stale = 1
                sys.stdout.writelines(difflib.unified_diff(current.splitlines(keepends=True),
                                                           wanted.splitlines(keepends=True),
                                                           f"{path.name} (committed)", f"{path.name} (rendered)"))
            continue
        if wanted != current:
            path.write_text(wanted)
            print(f"rewrote the results block of {path}")
        else:
            print(f"{path} is up to date")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
