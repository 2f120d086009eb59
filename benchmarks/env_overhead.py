"""What the env costs on top of the verifier it wraps.

Measures, in one run on one machine:
  1. the sequence-mode reward path (`reset(options={"index": i})` + `step(response)`, through
     `gym.make` with its default wrappers) against calling `task.verify` directly on the same
     responses (goal: at most 5% overhead), and the same path with a constant verifier;
  2. the natively batched vector env (`gym.make_vec`, one `verify` call per step) against a
     Python loop over the same number of single envs.

Responses are a fixed mix of gold answers, perturbed gold answers and random tokens, so the
verifier does its real work (parse, rebuild, compare). Writes
`benchmarks/results/env_overhead.json` and `.md`.

    python -m benchmarks.env_overhead               # MiniTextWorld, the embedded default
    python -m benchmarks.env_overhead --env-id RLVRWorld/TextGame-v0 --data-dir ../shared/data --split test_sample
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import rlvr_envs  # noqa: F401  (registers the RLVRWorld ids)
from rlvr_envs.core.records import RunRecord, note

RESULTS = Path(__file__).parent / "results"


def make_responses(task, n: int, seed: int) -> tuple[list[int], list[list[int]]]:
    rng = np.random.default_rng(seed)
    indices, responses = [], []
    for k in range(n):
        index = int(rng.integers(len(task)))
        gold = task.target_ids(index).tolist()
        kind = k % 3
        if kind == 0:
            response = gold
        elif kind == 1:  # one token changed: usually still parses, scores partially
            response = list(gold)
            response[int(rng.integers(len(gold)))] = int(rng.integers(task.vocab_size))
        else:
            response = rng.integers(1, task.vocab_size, size=len(gold)).tolist()
        indices.append(index)
        responses.append([t for t in response if t != task.eos_token_id][: task.max_response_len])
    return indices, responses


def best_of_interleaved(repeats: int, *fns) -> list[float]:
    """Minimum wall time of each function over `repeats` rounds, the functions alternating
    within a round so that load from other processes hits them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="RLVRWorld/MiniTextWorld-v0")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--split", default=None)
    parser.add_argument("--responses", type=int, default=600)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "env_overhead"))
    args = parser.parse_args()
    kwargs = {k: v for k, v in {"data_dir": args.data_dir, "split": args.split}.items() if v is not None}
    record = RunRecord("python -m benchmarks.env_overhead", args, threads=1)

    env = gym.make(args.env_id, **kwargs)
    task = env.unwrapped.task
    indices, responses = make_responses(task, args.responses, args.seed)
    actions = []
    for response in responses:
        action = np.full(task.max_response_len, task.eos_token_id, dtype=np.int64)
        action[: len(response)] = response
        actions.append(action)

    def bare_verifier():
        for index, response in zip(indices, responses):
            task.verify([index], [response])

    def env_path():
        for index, action in zip(indices, actions):
            env.reset(options={"index": index})
            env.step(action)

    # same rewards both ways (the benchmark compares equal work)
    direct = [task.verify([i], [r])[0].reward for i, r in zip(indices[:30], responses[:30])]
    via_env = []
    for index, action in zip(indices[:30], actions[:30]):
        env.reset(options={"index": index})
        via_env.append(env.step(action)[1])
    assert np.allclose(direct, via_env), "env and verifier disagree"

    fixed = task.verify([indices[0]], [responses[0]])

    def env_alone():
        """The env path with the verifier replaced by a constant: what the env itself costs."""
        task.verify = lambda _indices, _responses: fixed
        try:
            env_path()
        finally:
            del task.verify

    bare_verifier(), env_path(), env_alone()  # warm-up
    t_verify, t_env, t_alone = best_of_interleaved(args.repeats, bare_verifier, env_path, env_alone)

    batch = args.batch
    n_batches = len(actions) // batch
    vec = gym.make_vec(args.env_id, num_envs=batch, **kwargs)
    singles = [gym.make(args.env_id, **kwargs) for _ in range(batch)]

    def batched():
        for b in range(n_batches):
            vec.reset(options={"index": indices[b * batch:(b + 1) * batch]})
            vec.step(np.stack(actions[b * batch:(b + 1) * batch]))

    def looped():
        for b in range(n_batches):
            for j, single in enumerate(singles):
                single.reset(options={"index": indices[b * batch + j]})
                single.step(actions[b * batch + j])

    batched(), looped()
    t_batched, t_looped = best_of_interleaved(args.repeats, batched, looped)

    result = {
        "env_id": args.env_id,
        "responses": len(responses),
        "batch": batch,
        "mean_response_tokens": float(np.mean([len(r) for r in responses])),
        "verify_us_per_response": 1e6 * t_verify / len(responses),
        "env_us_per_response": 1e6 * t_env / len(responses),
        "env_overhead_pct": 100 * (t_env - t_verify) / t_verify,
        "env_alone_us_per_response": 1e6 * t_alone / len(responses),
        "batched_vector_responses_per_s": n_batches * batch / t_batched,
        "looped_single_envs_responses_per_s": n_batches * batch / t_looped,
        "batched_speedup": t_looped / t_batched,
        "run": record.finish(),
        "command": "python -m benchmarks.env_overhead " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out" and v is not None),
    }
    result["note"] = note(result["run"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    table = "\n".join([
        f"# Env overhead ({result['env_id']})", "",
        f"Measured by `{result['command']}`; {result['note']}.", "",
        "| path | µs per response | note |", "|---|---|---|",
        f"| `task.verify` direct | {result['verify_us_per_response']:.1f} | bare verifier |",
        f"| `gym.make` env, reset+step | {result['env_us_per_response']:.1f} | "
        f"overhead {result['env_overhead_pct']:+.1f}% (goal <= 5%) |",
        f"| the same env with a constant verifier | {result['env_alone_us_per_response']:.1f} | what the env itself costs |",
        f"| batched vector env (N={batch}) | {1e6 / result['batched_vector_responses_per_s']:.1f} | "
        f"{result['batched_speedup']:.2f}x the loop of single envs |",
        f"| loop of {batch} single envs | {1e6 / result['looped_single_envs_responses_per_s']:.1f} | |",
    ])
    out.with_suffix(".md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
