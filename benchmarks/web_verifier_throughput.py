"""Throughput of the web-state verifier (item-change F1): responses scored per second.

GRPO scores every sampled answer, so the verifier must not be the bottleneck. Measures, on
1,000 responses (a fixed mix of one third gold answers, one third perturbed gold answers
- a line dropped, duplicated or altered, reasoning in front, lines shuffled - and one
third garbage - prose, stray item lines, truncated answers):

  1. the text verifier, `parse_changes` + `score_changes` (what a TRL/verl reward function
     calls), on MiniWeb transitions and on the two real WebArena pairs (about 70 changed
     items each, the size of WMA answers); the line cache starts empty in every timed run,
     so only repeats among the 1,000 responses hit it (as in a GRPO group);
  2. `task.verify` on token ids for MiniWeb (adds detokenization), when the embedded
     tokenizer is present;
  3. gold-target extraction (`extract_changes` on a (tree, next tree) pair), which is what
     loading WMA costs per record.

    python -m benchmarks.web_verifier_throughput

Writes `benchmarks/results/web_verifier_throughput.json` (and `.md`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import time
from pathlib import Path

from benchmarks import sections as fmt

RESULTS = Path(__file__).parent / "results"
SHARED_WMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wma"


def perturb(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    items = [i for i, line in enumerate(lines) if line.startswith("[")] or [0]
    kind = rng.randrange(5)
    k = rng.choice(items)
    if kind == 0:
        del lines[k]
    elif kind == 1:
        lines.insert(k, lines[k])
    elif kind == 2 and lines[k]:
        pos = rng.randrange(len(lines[k]))
        lines[k] = lines[k][:pos] + rng.choice("xyz]'0") + lines[k][pos + 1:]
    elif kind == 3:
        return "<think>The action changes part of the page; let me list the items.</think>\n" + text
    else:
        block = [lines[i] for i in items]
        rng.shuffle(block)
        for i, line in zip(items, block):
            lines[i] = line
    return "\n".join(lines)


def garbage(text: str, rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        words = ("the", "page", "button", "will", "show", "click", "New", "items")
        return " ".join(rng.choice(words) for _ in range(60))
    if kind == 1:
        return "\n".join(f"[{rng.randrange(9999)}] link 'x{rng.randrange(99)}'" for _ in range(20))
    return text[: max(1, len(text) * rng.randrange(10, 60) // 100)]


def make_texts(golds: list[str], n: int, seed: int) -> tuple[list[int], list[str]]:
    rng = random.Random(seed)
    indices, texts = [], []
    for k in range(n):
        index = rng.randrange(len(golds))
        gold = golds[index]
        texts.append((gold, perturb(gold, rng), garbage(gold, rng))[k % 3])
        indices.append(index)
    return indices, texts


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def real_pairs() -> list[tuple[str, str]]:
    path = SHARED_WMA / "text_only_acctree_format.json"
    if not path.exists():
        return []
    pairs = []
    for prompt, answer in json.loads(path.read_text(encoding="utf-8"))["examples"]:
        observation = prompt.split("CURRENT OBSERVATION:\n", 1)[1].split("\n CURRENT ACTION: ")[0]
        following = re.sub(r"^\s*Tab \d+ \(current\): .*? (?=\[\d+\] RootWebArea)", "",
                           answer.split("[Next State]:", 1)[1], count=1)
        pairs.append((observation, following))
    return pairs


def text_case(name: str, pairs: list[tuple[str, str]], n: int, repeats: int, seed: int) -> dict:
    from rlvr_envs.web.acctree import extract_changes
    from rlvr_envs.core.answer import AnswerError
    from rlvr_envs.web.changes import ChangeList, canonical_line, parse_changes, score_changes

    golds_cl = [ChangeList.from_changes(extract_changes(a, b)) for a, b in pairs]
    golds = [g.text() for g in golds_cl]
    indices, texts = make_texts(golds, n, seed)
    rewards: list[float] = []

    def run():
        canonical_line.cache_clear()  # each timed run starts cold; repeats within the 1,000 still hit
        rewards.clear()
        for index, text in zip(indices, texts):
            try:
                rewards.append(score_changes(parse_changes(text), golds_cl[index])["f1"])
            except AnswerError:
                rewards.append(0.0)

    def run_cold():  # worst case: no line ever seen before
        for index, text in zip(indices, texts):
            canonical_line.cache_clear()
            try:
                score_changes(parse_changes(text), golds_cl[index])
            except AnswerError:
                pass

    seconds = best_time(run, repeats)
    cold_seconds = best_time(run_cold, repeats)
    gold_rewards = rewards[0::3]
    assert all(r == 1.0 for r in gold_rewards), "a gold answer did not score 1"
    t_extract = best_time(lambda: [extract_changes(a, b) for a, b in pairs], repeats)
    return {
        "case": name, "transitions": len(pairs), "responses": n,
        "mean_gold_lines": sum(len(g.split("\n")) for g in golds) / len(golds),
        "responses_per_s": n / seconds, "us_per_response": 1e6 * seconds / n,
        "cold_cache_responses_per_s": n / cold_seconds,
        "mean_reward": {"gold": sum(gold_rewards) / len(gold_rewards),
                        "perturbed": sum(rewards[1::3]) / len(rewards[1::3]),
                        "garbage": sum(rewards[2::3]) / len(rewards[2::3])},
        "extraction_pairs_per_s": len(pairs) / t_extract,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=1000)
    parser.add_argument("--transitions", type=int, default=256, help="MiniWeb transitions to draw answers from")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "web_verifier_throughput"))
    args = parser.parse_args()

    from rlvr_envs.core.records import RunRecord, note
    from rlvr_envs.web.mini_web import MiniWebConfig, generate

    record = RunRecord("python -m benchmarks.web_verifier_throughput", args)

    rows = [generate(MiniWebConfig(), 1, i) for i in range(args.transitions)]
    cases = [text_case("MiniWeb (text verifier)", [(r["observation"], r["next_state_acctree"]) for r in rows],
                       args.responses, args.repeats, args.seed)]
    pairs = real_pairs()
    if pairs:
        cases.append(text_case("real WebArena pairs (text verifier)", pairs, args.responses, args.repeats, args.seed))

    token = {"case": "MiniWeb task.verify on token ids"}
    try:
        from rlvr_envs.core.factory import build_task

        task = build_task("rlvr_envs.web.task:MiniWebTask", size=args.transitions)
    except (FileNotFoundError, OSError) as exc:
        token["skipped"] = f"{type(exc).__name__}: {exc}"
    else:
        from rlvr_envs.web.changes import canonical_line

        golds = [task.target_text(i) for i in range(len(task))]
        indices, texts = make_texts(golds, args.responses, args.seed)
        ids = [task.tokenizer(t, add_special_tokens=False)["input_ids"][: task.max_response_len] for t in texts]
        def run():
            canonical_line.cache_clear()
            task.verify(indices, ids)

        seconds = best_time(run, args.repeats)
        token.update({"responses": len(ids), "responses_per_s": len(ids) / seconds,
                      "us_per_response": 1e6 * seconds / len(ids), "tokenizer": "embedded miniweb (1,024-token BPE)",
                      "mean_response_tokens": sum(map(len, ids)) / len(ids)})
    cases.append(token)

    run = record.finish()
    result = {
        "cases": cases,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
                   f"{platform.python_version()}, CPU only, single process (best of --repeats runs)",
        "run": run,
        "note": note(run),
        "command": "python -m benchmarks.web_verifier_throughput " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Web verifier throughput", "", f"Measured by `{result['command']}` on {result['machine']}; {result['note']}.", "",
             "| case | responses/s | cold-cache responses/s | µs/response | gold lines | extraction pairs/s "
             "| mean F1 gold / perturbed / garbage |",
             "|---|---|---|---|---|---|---|"]
    for case in cases:
        if "skipped" in case:
            lines.append(f"| {case['case']} | skipped: {case['skipped'][:80]} | | | | | |")
            continue
        reward = case.get("mean_reward")

        def cell(key, fmt):
            return format(case[key], fmt) if key in case else "-"
        lines.append(
            f"| {case['case']} | {cell('responses_per_s', ',.0f')} | {cell('cold_cache_responses_per_s', ',.0f')} "
            f"| {cell('us_per_response', '.1f')} | {cell('mean_gold_lines', '.1f')} | "
            f"{cell('extraction_pairs_per_s', ',.0f')} | "
            + (f"{reward['gold']:.2f} / {reward['perturbed']:.2f} / {reward['garbage']:.2f} |" if reward else "- |"))
    table = "\n".join(lines) + "\n"
    out.with_suffix(".md").write_text(table)
    print(table)

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    parts = []
    for case in d["cases"]:
        part = f"{case['case']}: {fmt.thousands(case['responses_per_s'])} responses/s"
        if "cold_cache_responses_per_s" in case:
            part += f", {fmt.thousands(case['cold_cache_responses_per_s'])}/s with a cold cache"
        if "mean_gold_lines" in case:
            part += f", answers of {case['mean_gold_lines']:.0f} gold lines on average"
        parts.append(part)
    return (f"**Web verifier** (`{d['command']}`, {fmt.shown(d['_file'])}; {fmt.machine(d)}): " + "; ".join(parts) + ".")


SECTIONS = (
    fmt.Section("Web verifier", ("web_verifier_throughput.json",), "python -m benchmarks.web_verifier_throughput",
                section),
)


if __name__ == "__main__":
    main()
