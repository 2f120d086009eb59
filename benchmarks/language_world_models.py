"""Language world models side by side on one task's held-out transitions (greedy, paired).

RLVR-World's Table 1/2 rows (base, SFT, RLVR) at this machine's scale: every model answers
the same held-out transitions of a text env (`RLVRWorld/MiniWeb-v0`, `RLVRWorld/MiniTextWorld-v0`,
...) greedily, through the task's own prompt and verifier (`rlvr_envs.integrations.hf`), and
the report gives, per model, the mean reward (MiniWeb: item F1), exact accuracy overall, on
changed and on unchanged transitions, and every metric component; each later model is
compared with the first on the same transitions (mean paired difference of the reward, and of
exact accuracy on the changed and on the unchanged transitions, each with a paired t-test).
Models named `NAME_seedK` (training seeds of one recipe) are also summarised as a group: mean
and spread over seeds. Text games also get the "nothing changes" answer as a baseline row
(`baselines.text.nothing_changes`): it is right on every unchanged transition, so only accuracy on
changed transitions shows whether a model learned the dynamics. With `--samples K` each model
also samples K answers per transition (`--temperature`), and the report adds pass@K and
per-sample accuracy: what a model reaches beyond its greedy answer (the headroom RL can
sharpen into greedy accuracy), and whether RL sharpened or also widened it.

    python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --transitions 256 \\
        --models sft=runs/sft_miniweb2/final rlvr=runs/grpo_miniweb/final \\
        --out benchmarks/results/web_world_models.json

Writes OUT (JSON: command, machine, config, per-model report with per-transition rewards,
and each model's training stages read from the trainers' `results.json` files, see
`training_summary`) and OUT with `.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from baselines.text import nothing_changes
from benchmarks import goals
from benchmarks import sections as fmt
from rlvr_envs.integrations.hf import compare_reports


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="RLVRWorld/MiniWeb-v0", help="a text env id")
    parser.add_argument("--models", nargs="+", required=True, metavar="NAME=DIR",
                        help="models to compare, the first is the reference (save_pretrained directories)")
    parser.add_argument("--transitions", type=int, default=256, help="held-out (test split) transitions")
    parser.add_argument("--max-new-tokens", type=int, default=0, help="answer budget (0 = the task's)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=0,
                        help="also sample this many answers per transition (0 = greedy only) and report pass@k "
                             "and per-sample accuracy")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of --samples")
    parser.add_argument("--env-kwargs", nargs="*", default=[], metavar="KEY=VALUE",
                        help="extra task arguments (e.g. difficulty=medium)")
    parser.add_argument("--out", required=True, help="JSON path (the markdown table goes beside it)")
    return parser


def parse_models(specs: list[str]) -> dict[str, Path]:
    models: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--models takes NAME=DIR pairs, got {spec!r}")
        if name in models:
            raise SystemExit(f"--models names {name!r} twice")
        if not (Path(path).expanduser() / "config.json").is_file():
            raise SystemExit(f"--models {spec}: no Hugging Face model there (config.json missing)")
        models[name] = Path(path).expanduser()
    return models


def training_summary(model_dir: Path) -> list[dict[str, Any]] | None:
    """How a model was trained, oldest stage first: each trainer's `results.json` beside a `final`
    directory (stage, steps, seconds, starting model), following each stage's `--model` back
    while it is a local run's `final` directory (SFT from scratch, more SFT, then GRPO)."""
    stages: list[dict[str, Any]] = []
    seen: set[Path] = set()
    directory: Path | None = model_dir
    while directory is not None and (directory.parent / "results.json").is_file() and directory not in seen:
        seen.add(directory)
        data = json.loads((directory.parent / "results.json").read_text(encoding="utf-8"))
        args = data.get("args", {})
        kind = str(args.get("algorithm", "grpo")).upper() if "group_size" in args else "SFT"
        stages.append({"stage": kind, "steps": data.get("steps"), "seconds": data.get("seconds"),
                       "model": args.get("model") or None, "run": str(directory.parent)})
        directory = Path(args["model"]).expanduser() if args.get("model") else None
    return stages[::-1] or None


def evaluate(model_dir: Path, task: Any, indices: list[int], max_new_tokens: int | None,
             batch_size: int, samples: int = 0, temperature: float = 1.0) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from rlvr_envs.integrations.hf import evaluate_accuracy, solved_counts

    from trainers.sft import check_vocabulary

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    try:
        check_vocabulary(str(model_dir), model.config, task)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    started = time.perf_counter()
    report = evaluate_accuracy(model, task, indices, max_new_tokens, batch_size, per_transition=True)
    if samples:
        counts = solved_counts(model, task, indices, samples, temperature, max_new_tokens=max_new_tokens,
                               batch_size=batch_size * samples)
        report["sampled"] = sampled_summary(counts, [task.transition(i).changed for i in indices], samples,
                                            temperature)
    report["seconds"] = time.perf_counter() - started
    report["parameters"] = sum(p.numel() for p in model.parameters())
    return report


def sampled_summary(counts: list[int], changed: list[Any], samples: int, temperature: float) -> dict[str, Any]:
    """pass@k (some of the k samples solve it) and per-sample accuracy, overall and on changed
    and unchanged transitions: whether a model can reach answers its greedy one misses (what
    RL can sharpen) and whether RL only sharpened or also widened what it reaches."""
    import numpy as np

    out: dict[str, Any] = {"samples": samples, "temperature": temperature, "solved_counts": counts}
    for suffix, keep in (("", lambda c: True), ("_changed", lambda c: c is True), ("_unchanged", lambda c: c is False)):
        picked = [k for k, c in zip(counts, changed) if keep(c)]
        out[f"pass_at_k{suffix}"] = float(np.mean([k > 0 for k in picked])) if picked else float("nan")
        out[f"sample_accuracy{suffix}"] = float(np.mean(picked) / samples) if picked else float("nan")
    return out


def seed_groups(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Models named PREFIX_seedK with at least 2 seeds: mean and sample standard deviation over
    the seeds of exact accuracy (overall, changed, unchanged), the reward and, where present,
    the difference from the first model on changed transitions."""
    import re

    import numpy as np

    members: dict[str, list[str]] = {}
    for name in reports:
        match = re.fullmatch(r"(.+)_seed\d+", name)
        if match:
            members.setdefault(match.group(1), []).append(name)
    groups: dict[str, dict[str, Any]] = {}
    for prefix, names in members.items():
        if len(names) < 2:
            continue
        group: dict[str, Any] = {"members": names}
        for key in ("accuracy", "accuracy_changed", "accuracy_unchanged", "reward"):
            values = [float(reports[n][key]) for n in names]
            group[key] = {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1)), "values": values}
        deltas = [reports[n]["versus_first"]["exact_changed"]["mean_difference"] for n in names
                  if "exact_changed" in reports[n].get("versus_first", {})]
        if len(deltas) == len(names):
            group["changed_vs_first"] = {"mean": float(np.mean(deltas)), "std": float(np.std(deltas, ddof=1)),
                                         "values": deltas}
        groups[prefix] = group
    return groups


def _cell(test: dict[str, float] | None) -> str:
    if not test:
        return ""
    return f"{test['mean_difference']:+.3f} ± {test['standard_error']:.3f} (p = {test['p_value']:.2g})"


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Language world models on {report['config']['env_id']}", "",
             f"`{report['command']}`", "", f"{report['machine']}, {report['date']}; greedy answers to "
             f"{report['config']['transitions']} held-out transitions, paired.", "",
             "| model | mean reward | exact | exact (changed) | exact (unchanged) | parsed | reward vs first | "
             "exact (changed) vs first | exact (unchanged) vs first |",
             "|---|---:|---:|---:|---:|---:|---|---|---|"]
    rows = {**report["models"], **{f"{k} (baseline)": v for k, v in report.get("baselines", {}).items()}}
    for name, r in rows.items():
        tests = r.get("versus_first") or {}
        lines.append(f"| {name} | {r['reward']:.3f} | {r['accuracy']:.3f} | {r['accuracy_changed']:.3f} "
                     f"({r['n_changed']}) | {r['accuracy_unchanged']:.3f} ({r['n_unchanged']}) | {r['parsed']:.3f} "
                     f"| {_cell(tests.get('reward'))} | {_cell(tests.get('exact_changed'))} "
                     f"| {_cell(tests.get('exact_unchanged'))} |")
    sampled = {name: r["sampled"] for name, r in report["models"].items() if r.get("sampled")}
    if sampled:
        first = next(iter(sampled.values()))
        lines += ["", f"Sampled answers ({first['samples']} per transition, temperature {first['temperature']:g}): "
                      "pass@k is the share solved by at least one sample, per-sample accuracy the share of samples "
                      "that solve it.", "",
                  "| model | pass@k | pass@k (changed) | pass@k (unchanged) | per-sample (changed) | "
                  "per-sample (unchanged) |", "|---|---:|---:|---:|---:|---:|"]
        for name, r in sampled.items():
            lines.append(f"| {name} | {r['pass_at_k']:.3f} | {r['pass_at_k_changed']:.3f} | "
                         f"{r['pass_at_k_unchanged']:.3f} | {r['sample_accuracy_changed']:.3f} | "
                         f"{r['sample_accuracy_unchanged']:.3f} |")
    groups = report.get("seed_groups") or {}
    if groups:
        lines += ["", "Over training seeds (mean ± sample standard deviation):", "",
                  "| recipe | seeds | exact | exact (changed) | exact (unchanged) | changed vs first |",
                  "|---|---:|---:|---:|---:|---:|"]
        for prefix, g in groups.items():
            def ms(key: str) -> str:
                return f"{g[key]['mean']:.3f} ± {g[key]['std']:.3f}" if key in g else ""
            lines.append(f"| {prefix} | {len(g['members'])} | {ms('accuracy')} | {ms('accuracy_changed')} | "
                         f"{ms('accuracy_unchanged')} | {ms('changed_vs_first')} |")
    stages = [(name, r["training"]) for name, r in report["models"].items() if r.get("training")]
    if stages:
        lines += ["", "Training stages (oldest first; steps, minutes):", ""]
        for name, chain in stages:
            steps = " -> ".join(f"{s['stage']} {s['steps']} steps, {(s['seconds'] or 0) / 60:.0f} min" for s in chain)
            lines.append(f"- {name}: {steps}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import per_transition_report
    from rlvr_envs.core.arguments import parse_env_kwargs
    from trainers.sft import model_tokenizer_kwargs, split_kwargs

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    models = parse_models(args.models)
    if args.transitions < 2 or args.batch_size < 1 or args.threads < 1 or args.max_new_tokens < 0:
        raise SystemExit("--transitions must be >= 2; --batch-size and --threads positive; --max-new-tokens >= 0")
    if args.samples < 0 or (args.samples and args.temperature <= 0):
        raise SystemExit("--samples must be >= 0 and --temperature > 0 when sampling")
    torch.set_num_threads(args.threads)
    # the first model's own tokenizer when its directory carries one (as the trainers save it)
    kwargs = model_tokenizer_kwargs(str(next(iter(models.values()))), parse_env_kwargs(args.env_kwargs))
    task = task_from_env_id(args.env_id, **split_kwargs(args.env_id, kwargs, "test", args.transitions))
    if not hasattr(task, "prompt_text"):
        raise SystemExit(f"{args.env_id} is not a text task")
    indices = list(range(min(args.transitions, len(task))))
    reports: dict[str, dict[str, Any]] = {}
    for name, path in tqdm(models.items(), desc="models"):
        reports[name] = evaluate(path, task, indices, args.max_new_tokens or None, args.batch_size, args.samples,
                                 args.temperature)
        reports[name]["model"] = str(path)
        reports[name]["training"] = training_summary(path)
    changed = [task.transition(i).changed for i in indices]
    baselines: dict[str, dict[str, Any]] = {}
    if hasattr(task, "unchanged_answer"):
        results = nothing_changes(task, indices)
        baselines["nothing_changes"] = per_transition_report(task, indices, results)
    reference = next(iter(reports.values()))
    for name, other in [*list(reports.items())[1:], *baselines.items()]:
        other["versus_first"] = compare_reports(reference, other, changed)
    report = {"command": "python -m benchmarks.language_world_models " + " ".join(shlex.quote(a) for a in argv),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU, torch threads {args.threads}",
              "date": time.strftime("%Y-%m-%d %H:%M"),
              "config": {**vars(args), "transitions": len(indices),
                         "reward": getattr(task, "reward_description", "")},
              "changed": changed, "models": reports, "baselines": baselines,
              "seed_groups": seed_groups(reports)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def paired_cell(test: dict | None) -> str:
    return "" if not test else (f"{test['mean_difference']:+.3f} ± {test['standard_error']:.3f} "
                                f"(p {fmt.p_value(test['p_value'])})")


def section(files: list[dict], heading: str = "Language world models") -> str:
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
                     f"{r['accuracy_unchanged']:.3f} ({r['n_unchanged']})", paired_cell(versus.get("reward")),
                     paired_cell(versus.get("exact_changed"))])
    text = (f"**{heading} on {c['env_id']}** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['machine']}, "
            f"{d['date']}): greedy answers to the same {c['transitions']} held-out transitions; reward: "
            f"{c['reward'] or 'the task reward'}; the last two columns are each row's paired difference from "
            f"{first} in reward and in exact accuracy on changed transitions (mean ± standard error, paired "
            f"t-test).\n\n"
            + fmt.table(["model", "training", "mean reward", "exact", "exact (changed)", "exact (unchanged)",
                         f"reward vs {first}", f"changed vs {first}"],
                        ["---", "---", "---:", "---:", "---:", "---:", "---", "---"], rows))
    groups = d.get("seed_groups") or {}
    if groups:
        def ms(g: dict, key: str) -> str:
            return f"{g[key]['mean']:.3f} ± {g[key]['std']:.3f}" if key in g else ""
        text += ("\n\nOver training seeds (mean ± sample standard deviation):\n\n"
                 + fmt.table(["recipe", "seeds", "exact", "exact (changed)", "exact (unchanged)",
                              f"changed vs {first}"], ["---", "---:", "---:", "---:", "---:", "---:"],
                             [[name, str(len(g["members"])), ms(g, "accuracy"), ms(g, "accuracy_changed"),
                            ms(g, "accuracy_unchanged"), ms(g, "changed_vs_first")] for name, g in groups.items()]))
    sampled = {name: r["sampled"] for name, r in d["models"].items() if r.get("sampled")}
    if sampled:
        s = next(iter(sampled.values()))
        text += (f"\n\nSampled answers, {s['samples']} per transition at temperature {s['temperature']:g}: pass@k is "
                 "the share of transitions some sample solves, per-sample accuracy the share of samples that solve "
                 "theirs; greedy is the greedy answer's accuracy (changed transitions).\n\n"
                 + fmt.table(["model", "greedy (changed)", "per-sample (changed)", f"pass@{s['samples']} (changed)",
                              "per-sample (unchanged)", f"pass@{s['samples']} (unchanged)"],
                             ["---", "---:", "---:", "---:", "---:", "---:"],
                             [[name, f"{d['models'][name]['accuracy_changed']:.3f}", f"{r['sample_accuracy_changed']:.3f}",
                            f"{r['pass_at_k_changed']:.3f}", f"{r['sample_accuracy_unchanged']:.3f}",
                            f"{r['pass_at_k_unchanged']:.3f}"] for name, r in sampled.items()]))
    return text


def _text_game_section(title: str, stem: str, arguments: str, heading: str, finding: str = "") -> fmt.Section:
    """A MiniTextWorld (task reward) language-world-model results section: one file, one command."""
    return fmt.Section(title, (f"{stem}.json",),
                       "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniTextWorld-TaskReward-v0 "
                   f"{arguments} --out benchmarks/results/{stem}.json",
                       partial(section, heading=heading), finding=finding)


def _text_recipes() -> list[tuple[str, str, dict, float]]:
    """(file, recipe, seed group, the first model's accuracy on unchanged transitions) for every
    committed MiniTextWorld recipe (and step) run with at least 3 seeds; a group evaluated again in a
    later file (the same rewards to the last digit) counts once."""
    out, seen = [], set()
    for path in sorted(fmt.RESULTS.glob("text_world_models*.json")):
        data = fmt.load(path.name) or {}
        first = next(iter(data.get("models", {}).values()), None)
        for recipe, group in data.get("seed_groups", {}).items():
            key = tuple(group["reward"]["values"])
            if first and len(group["members"]) >= 3 and key not in seen:
                seen.add(key)
                out.append((path.name, recipe, group, first["accuracy_unchanged"]))
    return out


def goal() -> goals.GoalRow | None:
    recipes = _text_recipes()
    if not recipes:
        return None
    kept = [r for r in recipes if r[2]["accuracy_unchanged"]["mean"] >= r[3] - goals.UNCHANGED_KEPT]
    best = max(kept or recipes, key=lambda r: r[2]["changed_vs_first"]["mean"])
    file, recipe, group, unchanged = best
    data = fmt.load(file)
    first = next(iter(data["models"]))
    gain = group["changed_vs_first"]
    low, high = goals._seed_interval(gain["values"])
    verdict = goals._verdict(low, high, goals.GOAL_TEXT_CHANGED_GAIN) if kept else "**not met** (none keeps unchanged ones)"
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
    return goals.GoalRow(
        "MiniTextWorld GRPO vs SFT: held-out exact accuracy on changed transitions, unchanged ones kept",
        f"best of the {len(recipes)} three-seed recipe and step groups in `{fmt.SHOWN}/text_world_models*.json` "
        f"({len(kept)} keep unchanged ones): {recipe} {gain['mean']:+.3f} {goals._interval(low, high)} (t over "
        f"{len(gain['values'])} seeds), unchanged {unchanged:.3f} -> {group['accuracy_unchanged']['mean']:.3f}",
        baseline, f">= +{goals.GOAL_TEXT_CHANGED_GAIN:.2f} (aim)", verdict, file, quoted)


SECTIONS = (
    fmt.Section("Language world models on MiniWeb", ("web_world_models.json",),
                "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --models sft=DIR rlvr=DIR "
                "--out benchmarks/results/web_world_models.json", section,
                finding="On the first MiniWeb (procedural pages) neither model predicted changed pages; GRPO's "
                        "reward gain was within noise."),
    fmt.Section("Text-game world models on MiniTextWorld", ("text_world_models.json",),
                "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniTextWorld-v0 --models sft=DIR "
                "rlvr_seed0=DIR ... --out benchmarks/results/text_world_models.json", section,
                finding="GRPO from the first SFT model lowered exact accuracy on changed transitions in every "
                        "recipe tried."),
    _text_game_section("Text-game world models after longer SFT", "text_world_models_longer_sft",
                       "--models sft_longer=DIR sft=DIR rlvr_seed0=DIR ...", "Language world models after longer SFT",
                       finding="Longer SFT raised accuracy on changed transitions far more than any GRPO run; GRPO from "
                               "it stayed within seed noise."),
    _text_game_section("Text-game GRPO on filtered prompts", "text_world_models_filtered_grpo",
                       "--models sft_longer=DIR rlvr_filtered_lr2e-5_step50_seed0=DIR ...", "GRPO on filtered prompts",
                       finding="GRPO on changed prompts the model sometimes solves gained a little on changed "
                               "transitions and lost on unchanged ones."),
    _text_game_section("Text-game GRPO on filtered changed and unchanged prompts", "text_world_models_mixed_grpo",
                       "--models sft_longer=DIR rlvr_mixed_step50_seed0=DIR ...",
                       "GRPO on filtered changed and unchanged prompts",
                       finding="Adding filtered unchanged prompts kept the unchanged transitions and gave up the gain on "
                               "changed ones."),
    _text_game_section("Text-game GRPO, filtered changed prompts then both kinds", "text_world_models_two_stage_grpo",
                       "--models sft_longer=DIR rlvr_filtered_step100_seed0=DIR ... "
                       "rlvr_then_mixed_step30_seed0=DIR ...",
                       "GRPO on filtered changed prompts, then on both kinds",
                       finding="Filtered-then-mixed GRPO traded the changed-transition gain back for unchanged accuracy "
                               "as it trained."),
    _text_game_section("Text-game world models, sampled", "text_world_models_sampled",
                       "--samples 6 --temperature 0.7 --models sft_longer=DIR ...", "Greedy and sampled answers",
                       finding="Sampled answers solve many changed transitions greedy decoding misses (pass@6 well above "
                               "greedy): the reward has signal to learn from."),
    _text_game_section("Text-game world models that ship", "text_world_models_shipped",
                       "--models sft_longer_shipped=DIR sft_shipped=DIR",
                       "The two shipped MiniTextWorld models"),
    _text_game_section("Text-game shipped longer-SFT model, sampled", "text_world_models_shipped_sampled",
                       "--samples 6 --temperature 0.7 --models sft_longer_shipped=DIR",
                       "Greedy and sampled answers of the shipped longer-SFT model",
                       finding="The shipped longer-SFT model's samples solve many changed transitions its greedy answer "
                               "misses."),
    _text_game_section("Text-game GRPO from the shipped longer-SFT model", "text_world_models_shipped_grpo160",
                       "--models sft_longer_shipped=DIR rlvr_task_step80_seed0=DIR ...",
                       "GRPO (task reward) from the shipped longer-SFT model"),
    _text_game_section("Text-game GRPO with 16 samples per prompt", "text_world_models_shipped_grpo_g16",
                       "--models sft_longer_shipped=DIR rlvr_g16_t1_step50_seed0=DIR ...",
                       "GRPO (task reward, 16 samples per prompt at temperature 1) from the shipped "
                       "longer-SFT model",
                       finding="16 samples per prompt at temperature 1 stayed within noise of the SFT model on changed "
                               "transitions."),
    fmt.Section("Language world models on the one-site MiniWeb", ("web_world_models_site.json",),
                "python -m benchmarks.language_world_models --env-id RLVRWorld/MiniWeb-v0 --models sft=DIR rlvr=DIR "
                "--out benchmarks/results/web_world_models_site.json", section),
)


if __name__ == "__main__":
    raise SystemExit(main())
