"""How fast the text-game verifiers score a response, and how much faster than at an earlier commit.

GRPO scores every sampled answer, so the verifier must not be the bottleneck. For each text-game
id (MiniTextWorld, embedded; ByteSized32's real sample in ../shared/data when present), binary
and task reward, `task.verify` scores a fixed mix of responses one at a time: a third gold
answers, a third gold answers with one token changed (usually broken JSON: the repair path), a
third random tokens. The time per response is the best of `--repeats` passes.

With `--baseline REV` the same measurement also runs on the project as it was at commit REV
(exported by `git archive` into a temporary folder), the two trees alternating in fresh
processes for `--rounds` rounds so that load from other processes hits both alike. Both
trees must give the same reward to every response, else the run stops: a faster verifier
that scores differently is a different verifier.

    python -m benchmarks.text_verifier_throughput --baseline 40e7884

Writes `benchmarks/results/text_verifier_throughput.json` (and `.md`).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
KINDS = ("gold", "one token changed", "random tokens")


def make_responses(task, n: int, seed: int) -> tuple[list[int], list[list[int]]]:
    """`n` (index, response) pairs: gold answers, gold answers with one token changed (usually
    still parses, scores partially) and random tokens, in turn (kind = position % 3)."""
    rng = np.random.default_rng(seed)
    indices, responses = [], []
    for k in range(n):
        index = int(rng.integers(len(task)))
        gold = task.target_ids(index).tolist()
        kind = k % 3
        if kind == 0:
            response = gold
        elif kind == 1:
            response = list(gold)
            response[int(rng.integers(len(gold)))] = int(rng.integers(task.vocab_size))
        else:
            response = rng.integers(1, task.vocab_size, size=len(gold)).tolist()
        indices.append(index)
        responses.append([t for t in response if t != task.eos_token_id][: task.max_response_len])
    return indices, responses


def cases(data_dir: Path | None) -> list[tuple[str, dict]]:
    ids = [("RLVRWorld/MiniTextWorld-v0", {}), ("RLVRWorld/MiniTextWorld-TaskReward-v0", {})]
    if data_dir is not None:
        kwargs = {"data_dir": str(data_dir), "split": "test_sample"}
        ids += [("RLVRWorld/TextGame-v0", kwargs), ("RLVRWorld/TextGame-TaskReward-v0", kwargs)]
    return ids


def measure(data_dir: Path | None, responses: int, repeats: int, seed: int) -> dict:
    """Best time per response of each case and kind, and a digest of every reward (run in
    whichever tree's `rlvr_envs` is first on the path)."""
    import gymnasium as gym

    import rlvr_envs  # noqa: F401  (registers the ids)

    out = {}
    for env_id, kwargs in cases(data_dir):
        task = gym.make(env_id, **kwargs).unwrapped.task
        indices, texts = make_responses(task, responses, seed)
        pairs = list(zip(indices, texts))
        rewards = [task.verify([i], [r])[0].reward for i, r in pairs]  # also the warm-up
        by_kind = {}
        for k, kind in enumerate(KINDS):
            subset = pairs[k::3]
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                for index, response in subset:
                    task.verify([index], [response])
                best = min(best, time.perf_counter() - start)
            by_kind[kind] = 1e6 * best / len(subset)
        counts = [len(pairs[k::3]) for k in range(len(KINDS))]
        out[env_id] = {
            "us_per_response": sum(by_kind[kind] * c for kind, c in zip(KINDS, counts)) / len(pairs),
            "us_by_kind": by_kind,
            "transitions": len(task),
            "mean_reward": float(np.mean(rewards)),
            "rewards_digest": hashlib.sha256(json.dumps([round(r, 12) for r in rewards]).encode()).hexdigest()[:16],
        }
    return out


def run_tree(tree: Path, args: argparse.Namespace, data_dir: Path | None) -> dict:
    """`measure` in a fresh process whose `rlvr_envs` is the one in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--responses", str(args.responses),
               "--repeats", str(args.repeats), "--seed", str(args.seed)]
    if data_dir is not None:
        command += ["--data-dir", str(data_dir)]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the measurement in {tree} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def export(rev: str, into: Path) -> str:
    """The project at `rev` in folder `into`; returns the full commit."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, capture_output=True,
                            text=True)
    if commit.returncode != 0:
        raise SystemExit(f"--baseline {rev!r} is not a commit of this checkout")
    archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return commit.stdout.strip()


def best_of(runs: list[dict]) -> dict:
    """Per case and kind, the fastest of the rounds (the one least disturbed by other load)."""
    merged = copy.deepcopy(runs[0])
    for env_id, case in merged.items():
        for kind in KINDS:
            case["us_by_kind"][kind] = min(run[env_id]["us_by_kind"][kind] for run in runs)
        case["us_per_response"] = min(run[env_id]["us_per_response"] for run in runs)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="data root holding bytesized32/test_sample.jsonl (default: ../shared/data when present)")
    parser.add_argument("--baseline", default=None, help="a commit to compare with (default: none)")
    parser.add_argument("--responses", type=int, default=600, help="responses per id (default: 600)")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per process (default: 5)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating processes per tree (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="response mix seed (default: 0)")
    parser.add_argument("--out", default=str(RESULTS / "text_verifier_throughput"),
                        help="output path without suffix (default: benchmarks/results/text_verifier_throughput)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("responses", "repeats", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.data_dir is None and (SHARED_DATA / "bytesized32" / "test_sample.jsonl").is_file():
        data_dir = SHARED_DATA
    else:
        data_dir = Path(args.data_dir).resolve() if args.data_dir else None
    if args.worker:
        print(json.dumps(measure(data_dir, args.responses, args.repeats, args.seed)))
        return

    from rlvr_envs.core.records import RunRecord, note, recorded_command

    record = RunRecord("python -m benchmarks.text_verifier_throughput", args)
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"this commit": ROOT}
        baseline_commit = None
        if args.baseline:
            baseline_commit = export(args.baseline, Path(scratch))
            trees["baseline"] = Path(scratch)
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(run_tree(tree, args, data_dir))
                print(f"round {round_ + 1}/{args.rounds}: {name} measured", file=sys.stderr, flush=True)
    results = {name: best_of(name_runs) for name, name_runs in runs.items()}
    if baseline_commit:
        differ = [env_id for env_id in results["this commit"]
                  if results["this commit"][env_id]["rewards_digest"] != results["baseline"][env_id]["rewards_digest"]]
        if differ:
            raise SystemExit(f"the rewards differ from {args.baseline} on {differ}: not the same verifier")
    shown = argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in ("out", "worker")})
    report = {"results": results, "baseline_commit": baseline_commit,
              "bytesized32_sample": str(data_dir) if data_dir else None, "run": record.finish(),
              "command": recorded_command("python -m benchmarks.text_verifier_throughput", shown)}
    report["note"] = note(report["run"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(table(report) + "\n")
    print(table(report))


def table(report: dict) -> str:
    current, baseline = report["results"]["this commit"], report["results"].get("baseline")
    columns = ["id", "transitions", "all", *KINDS]
    if baseline:
        columns += [f"all at {report['baseline_commit'][:7]}", "speed-up"]
    lines = ["# Text-game verifier throughput", "",
             f"Measured by `{report['command']}`; {report['note']}.", "",
             "µs per response of `task.verify` (best of the rounds). The mix: a third each of gold answers, "
             "gold answers with one token changed, random tokens."
             + (f" Rewards are identical to commit {report['baseline_commit'][:12]}'s on every response."
                if baseline else ""), "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for env_id, case in current.items():
        cells = [env_id, str(case["transitions"]), f"{case['us_per_response']:.1f}",
                 *(f"{case['us_by_kind'][kind]:.1f}" for kind in KINDS)]
        if baseline:
            old = baseline[env_id]["us_per_response"]
            cells += [f"{old:.1f}", f"{old / case['us_per_response']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
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
    text = (f"**Text-game verifier** (`{d['command']}`, {fmt.shown(d['_file'])}; {fmt.machine(d)}): µs per response of "
            f"`task.verify`, best of the rounds"
            + (f", the two commits alternating in fresh processes; rewards identical to {d['baseline_commit'][:7]}'s on "
               f"every response" if baseline else "") + ".\n\n")
    return text + fmt.table(head, ["---"] * len(head), rows)


SECTIONS = (
    fmt.Section("Text-game verifier", ("text_verifier_throughput.json",),
                "python -m benchmarks.text_verifier_throughput --baseline 40e7884", section),
)


if __name__ == "__main__":
    main()
