"""Hostile inputs: the verifiers' worst case next to their normal throughput.

An RL policy (or a broken sampler) can send anything: megabytes of whitespace, item lines
with 100,000-digit ids, JSON nested a million brackets deep, token ids beyond int64. A
reward that stalls on such a response stalls the whole training step, so every case here
must come back in about a second with a reward inside [min, max] and, when it is the
minimum, a reason. The catalogue below is shared with `tests/test_hostile_inputs.py`
(which asserts the bounds in CI); this script times it and puts the worst case next to
the responses/s of ordinary answers:

  1. every text case through `task.verify_text` of the text-game task (MiniTextWorld)
     and the web task (MiniWeb);
  2. every action case through `gym.make("RLVRWorld/MiniWeb-v0")` and
     `gym.make("RLVRWorld/MiniTextWorld-v0")` (sequence mode; token mode for the
     out-of-range ids);
  3. the tree cases through `acctree.parse_tree` + `extract_changes` (what building a web
     dataset runs);
  4. normal throughput: `task.verify` on token ids of 1,000 ordinary answers (one third
     gold, one third perturbed gold, one third garbage) for MiniWeb and MiniTextWorld.

    python -m benchmarks.experiments.hostile_inputs

Writes `benchmarks/results/hostile_inputs.json` (and `.md`).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: the bound the tests assert per response (each case is built to take about a second or less)
BOUND_S = 2.0


# -- the catalogue ------------------------------------------------------------------------------

def text_cases() -> dict[str, Callable[[], str]]:
    """Hostile response texts (builders, so a caller only pays for what it runs)."""
    from rlvr_envs.core.answer import MAX_RESPONSE_CHARS

    def distinct_items(n: int) -> str:
        return "New items:\n" + "\n".join(f"[{i}] link 'item {i}' focused: True" for i in range(n))

    def text_game_answer(modified: str = "", removed: str = "", score: str = "0") -> str:
        """A text-game answer (complete, so it parses) with the given JSON inside."""
        return (f'{{"modified": [{modified}], "removed": [{removed}], '
                f'"score": {{"score": {score}, "gameOver": false, "gameWon": false}}}}')

    return {
        "4 KB line of spaces": lambda: " " * 4096,
        "100 KB line of spaces after a title": lambda: "New items:\n" + " " * 100_000 + "x",
        "title with 100 KB of spaces inside": lambda: "New" + " " * 100_000 + "items: [1] link 'x'",
        "100 KB of '#' before a title": lambda: "#" * 100_000 + " New items:",
        "spaces then 'new' then spaces": lambda: " " * 50_000 + "new" + " " * 50_000 + "x",
        "unclosed fence + 200 KB letters": lambda: "```" + "a" * 200_000,
        "100k fences": lambda: "```\n" * 100_000,
        "100 KB spaces inside an item name": lambda: "New items:\n[1] link 'a" + " " * 100_000 + "b",
        "100 KB spaces in an attribute value": lambda: "New items:\n[1] link 'a' k: v" + " " * 100_000 + "x",
        "100 KB of quotes in an item": lambda: "New items:\n[1] link '" + "' " * 50_000,
        "100,000-digit item id": lambda: "New items:\n[" + "9" * 100_000 + "] link 'x'",
        "30,000 look-alike items": lambda: "New items:\n" + "[1] link 'x'\n" * 30_000,
        "10,000 distinct items": lambda: distinct_items(10_000),
        "items up to the size limit": lambda: distinct_items(60_000)[:MAX_RESPONSE_CHARS],
        "'[' * 400,000": lambda: "[" * 400_000,
        "'[' * 10**6 (over the size limit)": lambda: "[" * 10**6,
        "'{\"a\":' * 10**5": lambda: '{"a":' * 10**5,
        "balanced nesting 50,000 deep": lambda: '{"a":' * 50_000 + "1" + "}" * 50_000,
        "valid JSON of 420 KB": lambda: json.dumps({"modified": [{"uuid": i, "name": "x", "type": "t",
                                                                  "properties": {"a": i}, "contains": []}
                                                                 for i in range(5_000)], "removed": [],
                                                    "score": {"score": 0, "gameOver": False, "gameWon": False}}),
        "JSON that json_repair is quadratic on": lambda: "{" + "a: b, " * 8_000 + "}",
        "unterminated string of 400 KB": lambda: '{"a": "' + "x" * 400_000 + "}",
        "100,000-digit JSON number": lambda: '{"modified": [], "removed": [], "score": {"score": ' + "1" * 100_000 + "}}",
        "100 KB of NUL bytes": lambda: "\x00" * 100_000,
        "1,000-character object key": lambda: text_game_answer(
            '{"uuid": 1, "name": "x", "type": "t", "properties": {}, "contains": [], "' + "junk" * 250 + '": 1}'),
        "uuids in other digits": lambda: text_game_answer(removed='"٥", "５", "²", "--5"'),
        "400-digit integers": lambda: text_game_answer(removed="9" * 400, score="9" * 400),
        "two answers 10 KB apart": lambda: text_game_answer() + " and again:" * 1_000 + text_game_answer(),
        "an answer and 100,000 stray '}'": lambda: text_game_answer() + "}" * 100_000,
        "over the size limit": lambda: "New items:\n" + "[1] link 'x'\n" * (MAX_RESPONSE_CHARS // 13 + 1),
    }


def action_cases(vocab_size: int) -> dict[str, tuple[Callable[[], Any], str, int | None]]:
    """Sequence-mode actions, what must happen and the token the error must name: "ok"
    (scored), "oov" (reward 0, info["error"] names the first id outside the vocabulary),
    "TypeError" (refused: not integer token ids) or "ValueError" (refused: not 1-D)."""
    rng = np.random.default_rng(0)
    i64_min = int(np.iinfo(np.int64).min)
    return {
        "10**6 in-vocabulary int64 ids": (lambda: rng.integers(0, vocab_size, 10**6, dtype=np.int64), "ok", None),
        "10**6 ids as a Python list": (lambda: rng.integers(0, vocab_size, 10**6).tolist(), "ok", None),
        "10**6 in-vocabulary uint64 ids": (lambda: rng.integers(0, vocab_size, 10**6).astype(np.uint64), "ok", None),
        "id 2**63 (uint64)": (lambda: np.array([5, 2**63], dtype=np.uint64), "oov", 2**63),
        "10**6 ids 2**64 - 1 (uint64)": (lambda: np.full(10**6, 2**64 - 1, dtype=np.uint64), "oov", 2**64 - 1),
        "id 2**63 + 5 (Python int)": (lambda: [5, 2**63 + 5], "oov", 2**63 + 5),
        "id 10**30 in 10**6 Python ints": (lambda: [10**30] + [1] * (10**6 - 1), "oov", 10**30),
        "negative id": (lambda: [3, -1, 4], "oov", -1),
        "10**6 int64 minimum": (lambda: np.full(10**6, i64_min, dtype=np.int64), "oov", i64_min),
        "id = vocabulary size": (lambda: [vocab_size], "oov", vocab_size),
        "10**6 floats": (lambda: np.full(10**6, 1.5), "TypeError", None),
        "bools": (lambda: [True, False], "TypeError", None),
        "strings": (lambda: ["New items:", "None"], "TypeError", None),
        "complex numbers": (lambda: np.array([1 + 2j, 3 + 0j]), "TypeError", None),
        "None": (lambda: None, "TypeError", None),
        "ragged list": (lambda: [[1, 2], [3]], "TypeError", None),
        "masked array": (lambda: np.ma.masked_array([1, 2, 3], mask=[0, 0, 1]), "TypeError", None),
        "2-D array": (lambda: np.ones((4, 8), dtype=np.int64), "ValueError", None),
        "3-D array": (lambda: np.ones((2, 2, 2), dtype=np.int64), "ValueError", None),
    }


def tree_cases(n: int = 100_000) -> dict[str, Callable[[], tuple[str, str]]]:
    """(tree, next tree) pairs of about `n` items for dataset building: parse both and
    extract the changes."""
    groups = max(n // 50, 1)
    return {
        f"{n:,} identical items": lambda: ("\n".join(["[1] link 'x'"] * n),) * 2,
        f"{n:,} identical items, half deleted": lambda: ("\n".join(["[1] link 'x'"] * n),
                                                         "\n".join(["[1] link 'x'"] * (n // 2))),
        f"{n:,} look-alikes under new ids": lambda: ("\n".join(f"[{i}] button 'Add to Cart'" for i in range(n)),
                                                     "\n".join(f"[{n + i}] button 'Add to Cart'" for i in range(n))),
        f"{n:,} items sharing one id": lambda: ("\n".join(f"[7] link 'x{i}'" for i in range(n)),
                                                "\n".join(f"[7] link 'y{i}'" for i in range(n))),
        f"{groups:,} groups of 50 look-alikes": lambda: (
            "\n".join(f"[{i}] link 'x{i % groups}'" for i in range(n)),
            "\n".join(f"[{n + i}] link 'x{i % groups}'" for i in range(n))),
        f"a {n // 1000} KB line in each tree": lambda: ("[1] RootWebArea 'a" + " " * n + "b'",
                                                       "[1] RootWebArea '" + "' " * (n // 2)),
    }


# -- running it ---------------------------------------------------------------------------------

def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run_text_case(task, text: str) -> dict:
    from rlvr_envs.web.changes import clear_caches

    clear_caches()  # cold: the worst case, no line seen before
    [result], seconds = timed(lambda: task.verify_text([0], [text]))
    return {"seconds": seconds, "reward": result.reward, "min": task.min_reward, "max": result.max_reward,
            "parsed": result.parsed, "error": result.error}


def run_action_case(env, action, expected: str) -> dict:
    env.reset(options={"index": 0})
    try:
        (_, reward, terminated, _, info), seconds = timed(lambda: env.step(action))
    except (TypeError, ValueError) as exc:  # refused at the door (rlvr_envs.core.actions)
        return {"seconds": 0.0, "outcome": type(exc).__name__, "expected": expected, "error": str(exc)}
    outcome = "oov" if info.get("error") and "outside the vocabulary" in info["error"] else "ok"
    return {"seconds": seconds, "outcome": outcome, "expected": expected, "reward": reward,
            "terminated": terminated, "error": info.get("error")}


def run_tree_case(build: Callable[[], tuple[str, str]]) -> dict:
    from rlvr_envs.web.acctree import extract_changes, parse_tree

    before, after = build()
    (trees, parse_s) = timed(lambda: (parse_tree(before), parse_tree(after)))
    changes, extract_s = timed(lambda: extract_changes(*trees))
    return {"seconds": parse_s + extract_s, "parse_seconds": parse_s, "extract_seconds": extract_s,
            "items": [len(trees[0].items), len(trees[1].items)],
            "sections": {s: len(v) for s, v in changes.sections().items()}}


def perturb(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    kind = rng.randrange(3)
    if kind == 0:
        del lines[k]
    elif kind == 1:
        lines.insert(k, lines[k])
    elif lines[k]:
        pos = rng.randrange(len(lines[k]))
        lines[k] = lines[k][:pos] + rng.choice("xyz]'0") + lines[k][pos + 1:]
    return "\n".join(lines)


def normal_throughput(task, n: int, repeats: int, seed: int) -> dict:
    """responses/s of `task.verify` on token ids: gold, perturbed gold and garbage."""
    from rlvr_envs.web.changes import clear_caches

    rng = random.Random(seed)
    indices, texts = [], []
    for k in range(n):
        index = rng.randrange(len(task))
        gold = task.target_text(index)
        garbage = " ".join(rng.choice(("the", "page", "state", "New", "items", "{", "}")) for _ in range(40))
        texts.append((gold, perturb(gold, rng), garbage)[k % 3])
        indices.append(index)
    ids = [task.tokenizer(t, add_special_tokens=False)["input_ids"][: task.max_response_len] for t in texts]

    def run():
        clear_caches()
        return task.verify(indices, ids)

    run()
    best = min(timed(run)[1] for _ in range(repeats))
    return {"responses": n, "responses_per_s": n / best, "us_per_response": 1e6 * best / n,
            "mean_response_tokens": sum(map(len, ids)) / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "hostile_inputs"))
    args = parser.parse_args()

    import gymnasium as gym

    import rlvr_envs  # noqa: F401  (registers the ids)

    from rlvr_envs.core.records import RunRecord, note

    record = RunRecord("python -m benchmarks.experiments.hostile_inputs", args, threads=1)
    envs = {name: gym.make(f"RLVRWorld/{name}-v0", size=64) for name in ("MiniTextWorld", "MiniWeb")}
    tasks = {name: env.unwrapped.task for name, env in envs.items()}
    rows: list[dict] = []
    for case, build in text_cases().items():
        text = build()
        for name, task in tasks.items():
            rows.append({"kind": "text", "case": case, "target": f"{name} verify_text", "chars": len(text),
                         **run_text_case(task, text)})
    for name, env in envs.items():
        for case, (build, expected, _) in action_cases(tasks[name].vocab_size).items():
            rows.append({"kind": "action", "case": case, "target": f"gym.make {name}-v0 (sequence)",
                         **run_action_case(env, build(), expected)})
    for case, build in tree_cases().items():
        rows.append({"kind": "tree", "case": case, "target": "parse_tree + extract_changes", **run_tree_case(build)})
    normal = {name: normal_throughput(task, args.responses, args.repeats, args.seed) for name, task in tasks.items()}

    per_response = [r for r in rows if r["kind"] != "tree"]
    worst = max(per_response, key=lambda r: r["seconds"])
    worst_tree = max((r for r in rows if r["kind"] == "tree"), key=lambda r: r["seconds"])
    result = {
        "worst_per_response": {k: worst[k] for k in ("case", "target", "seconds")},
        "worst_dataset_build": {k: worst_tree[k] for k in ("case", "seconds")},
        "normal_throughput": normal,
        "cases": rows,
        "run": record.finish(),
        "command": "python -m benchmarks.experiments.hostile_inputs " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
    }
    result["note"] = note(result["run"]) + "; single process, hostile cases timed once, cold"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str) + "\n")

    refused = [r for r in rows if r["kind"] == "action" and r["outcome"] in ("TypeError", "ValueError")]
    wrong = [r for r in rows if r["kind"] == "action" and r["outcome"] != r["expected"]]
    outside = [r for r in rows if r["kind"] == "text" and not r["min"] <= r["reward"] <= r["max"]]
    lines = ["# Hostile inputs", "", f"Measured by `{result['command']}`; {result['note']}.", "",
             f"**{len(wrong)} actions with an outcome other than the documented one; {len(refused)} refused at the "
             f"door by type** (TypeError: not integer token ids; ValueError: not 1-D); {len(outside)} hostile "
             f"responses scored outside [min, max].", "",
             f"**Worst case per response: {worst['seconds'] * 1e3:,.0f} ms** ({worst['case']}, {worst['target']}); "
             f"worst dataset-build case: {worst_tree['seconds']:.2f} s ({worst_tree['case']}).", "",
             "| normal answers (`task.verify` on token ids) | responses/s | µs/response | mean tokens |",
             "|---|---:|---:|---:|"]
    for name, row in normal.items():
        lines.append(f"| {name} (1/3 gold, 1/3 perturbed, 1/3 garbage) | {row['responses_per_s']:,.0f} | "
                     f"{row['us_per_response']:.1f} | {row['mean_response_tokens']:.0f} |")
    lines += ["", "| kind | case | target | ms | reward / outcome | reason |", "|---|---|---|---:|---|---|"]
    for r in rows:
        if r["kind"] == "text":
            outcome = f"{r['reward']:.2f} in [{r['min']:.0f}, {r['max']:.1f}]"
        elif r["kind"] == "action":
            outcome = f"{r['outcome']} (expected {r['expected']})" + (f", reward {r['reward']:.2f}" if "reward" in r else "")
        else:
            outcome = f"{r['items'][0]:,} / {r['items'][1]:,} items: " + ", ".join(
                f"{k} {v:,}" for k, v in r["sections"].items())
        reason = (r.get("error") or "").replace("|", "/")
        reason = reason if len(reason) <= 70 else reason[:67] + "..."
        lines.append(f"| {r['kind']} | {r['case']} | {r['target']} | {r['seconds'] * 1e3:,.1f} | {outcome} | {reason} |")
    table = "\n".join(lines) + "\n"
    out.with_suffix(".md").write_text(table)
    print(table)

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    d = files[0]
    cases = d["cases"]
    text_cases = [c for c in cases if c["kind"] == "text"]
    actions = [c for c in cases if c["kind"] == "action"]
    trees = [c for c in cases if c["kind"] == "tree"]
    verifiers = sorted({c["target"] for c in text_cases})
    envs = sorted({c["target"] for c in actions})
    worst = d["worst_per_response"]
    report = Path(d["_file"]).with_suffix(".md").as_posix()
    listed = f"; every case is listed in {fmt.shown(report)}" if (fmt.RESULTS / report).is_file() else ""
    text = (f"**Hostile inputs** (`{d['command']}`, {fmt.shown(d['_file'])}; {fmt.machine(d)}): "
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
    text += (" Normal answers: " + ", ".join(f"{name} {fmt.thousands(v['responses_per_s'])}" for name, v in normal.items())
             + " responses/s on token ids.")
    if trees:
        largest = max(c["items"][0] for c in trees)
        big = [c["seconds"] for c in trees if c["items"][0] == largest]
        text += (f" Extracting gold from trees of {largest:,} items takes {fmt.seconds_range(big)} s including "
                 f"parsing ({len(big)} shapes of tree).")
    return text


SECTIONS = (
    fmt.Section("Hostile inputs", ("hostile_inputs.json",), "python -m benchmarks.experiments.hostile_inputs", section),
)


if __name__ == "__main__":
    main()
