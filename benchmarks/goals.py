"""The goals table: each numeric goal the issues set, read from the results files that measure it,
with its 95% interval; a goal is met only when all of its interval clears the target. The targets
live here (one home), and the sections that compare a result with one read it from here."""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import pusht_planning, pusht_success_judge, real2sim_compare
from benchmarks import sections as fmt

# Targets set by the issues (not measurements): the verdicts compare results with them.
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


def _planning_tables() -> list[tuple[str, dict]]:
    """(file, summary) of every committed PushT planning table with base, RLVR and true-sim rows; a
    table merged again into another (the same runs, to the second per episode) counts once."""
    out, seen = [], set()
    for path in sorted(fmt.RESULTS.glob("pusht_planning*/results.json")):
        relative = str(path.relative_to(fmt.RESULTS))
        summary = (fmt.load(relative) or {}).get("summary", {})
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
    for path in sorted(fmt.RESULTS.glob("real2sim/*/results.json")):
        relative = str(path.relative_to(fmt.RESULTS))
        d = fmt.load(relative)
        names = {p["policy"] for p in d["policies"]}
        tokens = d["command"].split()
        data = fmt.flag(d["command"], "--data")
        if (Path(d.get("model", "")).name == DEFAULT_MODEL.name and {"toward_centre", "circler"} <= names
                and set(defaults) <= {f"{a} {b}" for a, b in zip(tokens, tokens[1:])}
                and not {"--model", "--tokenizer", "--no-family"} & set(tokens)
                and (Path(data).name if data else None) == held_out
                and d.get("lead_from", "end") == parser.get_default("lead_from")):  # runs before it: "end"
            runs.append((relative, d))
    return sorted(runs, key=lambda run: run[1]["policies"][0]["starts"])


REAL2SIM_REPORTED_ON = "heldout_b"  #: the held-out set the goals row reports (docs/recipes.md: "set B")


REAL2SIM_CHOICE = "real2sim_default_choice.json"  #: the comparison that chose the default simulator


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
    file: str  #: relative to fmt.RESULTS
    quoted: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def cells(self) -> list[str]:
        return [self.goal, self.measured, self.baseline, self.target, self.verdict, fmt.shown(self.file)]


def _interval(low: float, high: float, digits: int = 2, percent: bool = False) -> str:
    """A 95% interval as the goals table writes it, e.g. [0.71, 0.97] or [35%, 162%] ('no interval'
    where it is undefined)."""
    if fmt.nan(low) or fmt.nan(high):
        return "(no interval)"
    if percent:
        return f"[{low:.0%}, {high:.0%}]"
    return f"[{low:.{digits}f}, {high:.{digits}f}]".replace("-0.00", "0.00")


def _verdict(low: float, high: float, target: float, at_least: bool = True) -> str:
    """'met' only when the whole interval clears the target; else '**not met**' and how far it reaches."""
    if fmt.nan(low) or fmt.nan(high):
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
GRPO_JUDGED = (("mae", "MAE"), ("agent_error", "agent"), ("block_error", "block"), ("angle_error", "angle"))


def _grpo_reward_runs() -> list[tuple[str, dict]]:
    """(file, results) of every committed benchmarks.grpo_pusht_rewards run, by name."""
    return [(str(path.relative_to(fmt.RESULTS)), fmt.load(str(path.relative_to(fmt.RESULTS))))
            for path in sorted(fmt.RESULTS.glob("grpo_pusht_rewards*.json"))]


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
        measured += f" (reward -MAE, {pixels[1]['grpo_steps']} steps, `{fmt.SHOWN}/{pixels[0]}`: agent {agent:+.1f} px)"
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
    data = fmt.load(file)
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
        f"best of the {len(recipes)} three-seed recipe and step groups in `{fmt.SHOWN}/text_world_models*.json` "
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
        baseline = (f"{pusht_planning.PLANNERS.get(name, name)}: {t['successes']}/{t['episodes']} "
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

    judge = fmt.load("pusht_success_judge.json")
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
           if not (fmt.nan(precision[0]) or fmt.nan(recall[0])) else "**not met** (no interval)")
    verdict = f"{met} at {s['env_bar']:g}; met at bars {pusht_success_judge.bars(holds)}" if holds and env not in holds else met
    pointer = f"/summary/success/{index}"
    quoted = [(f"precision {fmt.fraction(env['precision'])}", (f"{pointer}/precision",)),
              (f"recall {fmt.fraction(env['recall'])}", (f"{pointer}/recall",)),
              (f"({env['env_successes']} real successes in {s['frames']:,}", (f"{pointer}/env_successes",
                                                                              "/summary/frames")),
              (f"{s['position_error_px']['median']:.2f} px, {s['angle_error_deg']['median']:.2f} deg",
               ("/summary/position_error_px/median", "/summary/angle_error_deg/median"))]
    return GoalRow(
        f"PushT success judge: precision and recall of the env's own success (coverage > {s['env_bar']:g})",
        f"precision {fmt.fraction(env['precision'])} {_interval(*precision)}, recall {fmt.fraction(env['recall'])} "
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

    choice, chosen_data = fmt.load(REAL2SIM_CHOICE), None
    if choice:
        chosen = next((c for c in (choice.get("first"), choice.get("second"))
                       if c and Path(c.get("model", "")).name == DEFAULT_MODEL.name), None)
        run = fmt.load(f"{chosen['run'].removeprefix(fmt.SHOWN + '/')}/results.json") if chosen else None
        chosen_data = fmt.flag(run["command"], "--data") if run else None
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
    chose = (f"chosen on {name.get(chosen_set, chosen_set)} ({fmt.shown(REAL2SIM_CHOICE)})" if choice
             else f"chosen on {name.get(chosen_set, chosen_set)}")
    s = real2sim_compare.real2sim_summary(d)
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


def goal_rows() -> list[GoalRow]:
    """One row per numeric goal the issues set, read from the same files as the subsections."""
    rows = []
    rows += [row for row in (_grpo_goal(), _text_goal(), _planning_goal(), _judge_goal(), _real2sim_goal()) if row]
    # a row built as a plain list (goal, measured, target, verdict, file) has no baseline cell
    return [row if isinstance(row, GoalRow) else
            GoalRow(row[0], row[1], "", row[2], row[3], row[4].strip("`").removeprefix(fmt.SHOWN + "/")) for row in rows]


def goals_table(where: str = "the subsections below give every run") -> str:
    """The goals table; empty when none of its goals is measured."""
    rows = goal_rows()
    if not rows:
        return ""
    return (f"**Where the issues' numeric goals stand** (each row read from the file it names; in brackets the "
            f"95% interval, and a goal is met only when all of it clears the target; {where}):\n\n"
            + fmt.table(["goal", "measured [95% interval]", "strongest trivial baseline", "target", "verdict", "file"],
                     ["---"] * 6, [row.cells() for row in rows]))
