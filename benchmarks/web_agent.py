"""Web agents on MiniWeb goal tasks: policy alone vs policy + world model (base, RLVR) vs policy + oracle.

RLVR-World's downstream web result (WebArena success 12.06% -> 14.29% when the agent's world
model is RLVR-trained) at the scale of this machine: every agent meets the same seeded goal
episodes of `RLVRWorld/MiniWeb-Goal-v0`; the policy is the scripted expert with noise
(`rlvr_envs.web.agent.ScriptedProposer`); the planning agents propose k candidates, predict
each one's page changes with their world model and take the best by the rule-based value
(`rule_value`). Agents:

* `policy`: the proposer's first candidate, no world model;
* `base`: + a MiniWeb world model trained by SFT (`--base-model DIR`);
* `rlvr`: + the same after GRPO (`--rlvr-model DIR`);
* `oracle`: + the true simulator (an upper bound for any world model with this value).

An agent whose model is not given is skipped with a note.

    python -m benchmarks.web_agent --episodes 100 --noise 0.5 --k 4 \\
        --base-model runs/sft_miniweb/final --rlvr-model runs/grpo_miniweb/final

Writes OUT/results.json (config, command, machine, per-episode rows, per-agent success with
its Wilson 95% interval, seconds per episode, unparsable candidate predictions) and
OUT/success.png (default OUT: benchmarks/results/web_agent/), rewritten after each agent.

Episodes run `--batch-episodes` at a time in lockstep (`rlvr_envs.web.agent.run_episodes`): each
step, a language world model decodes the candidates of every running episode in one batch, on
`--device` (a GPU takes all 100 episodes at once).

Agents can run as separate processes (one thread each) and be joined afterwards:

    python -m benchmarks.web_agent --agents policy,base,oracle --base-model DIR --out runs/web_agent/base ...
    python -m benchmarks.web_agent --agents rlvr --rlvr-model DIR --out runs/web_agent/rlvr ...
    python -m benchmarks.web_agent --merge runs/web_agent/base runs/web_agent/rlvr [--out DIR]

`--merge` refuses runs whose episodes, seeds, noise, k or step limit differ, or that repeat an agent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import sections as fmt

RESULTS = Path(__file__).resolve().parent / "results" / "web_agent"
AGENTS = ("policy", "base", "rlvr", "oracle")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100, help="goal episodes (indices 0..N-1) per agent")
    parser.add_argument("--seed", type=int, default=0, help="goal env seed (episodes are a pure function of it)")
    parser.add_argument("--agent-seed", type=int, default=0, help="seed of the proposer's noise")
    parser.add_argument("--noise", type=float, default=0.5, help="probability a proposal draw is a random action")
    parser.add_argument("--k", type=int, default=4, help="candidates per step for the planning agents")
    parser.add_argument("--max-steps", type=int, default=6, help="actions per episode before truncation")
    parser.add_argument("--kinds", default=None, help="comma-separated goal kinds (default: all)")
    parser.add_argument("--agents", default=",".join(AGENTS), help=f"comma-separated subset of {','.join(AGENTS)}")
    parser.add_argument("--base-model", default=None, help="SFT (MLE) MiniWeb world model directory")
    parser.add_argument("--rlvr-model", default=None, help="GRPO (RLVR) MiniWeb world model directory")
    parser.add_argument("--tokenizer", default=None, help="world models' tokenizer (default: the model dir's own, "
                                                          "else the embedded MiniWeb one)")
    parser.add_argument("--max-new-tokens", type=int, default=512, help="response budget of the language models")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the language models")
    parser.add_argument("--batch-episodes", type=int, default=20,
                        help="episodes run in lockstep: a world model decodes all their candidates of a step at once")
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)
    parser.add_argument("--out", default=str(RESULTS), help="output folder")
    return parser


def validate(args: argparse.Namespace) -> list[str]:
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    unknown = [a for a in agents if a not in AGENTS]
    if not agents or unknown:
        raise SystemExit(f"--agents must be a subset of {','.join(AGENTS)}, got {args.agents!r}")
    if min(args.episodes, args.k, args.max_new_tokens, args.threads, args.batch_episodes) < 1:
        raise SystemExit("--episodes, --k, --max-new-tokens, --threads and --batch-episodes must be positive")
    if not 0.0 <= args.noise <= 1.0:
        raise SystemExit(f"--noise must be in [0, 1], got {args.noise}")
    for flag in ("base_model", "rlvr_model"):
        path = getattr(args, flag)
        if path is not None and not (Path(path).expanduser() / "config.json").is_file():
            raise SystemExit(f"--{flag.replace('_', '-')} {path}: no Hugging Face model there (config.json missing)")
    return agents


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from rlvr_envs.core.util import wilson_interval

    n, wins = len(rows), sum(r["success"] for r in rows)
    predictions, unparsable = sum(r["predictions"] for r in rows), sum(r["unparsable"] for r in rows)
    low, high = wilson_interval(wins, n)
    return {"episodes": n, "successes": wins, "success_rate": wins / n if n else float("nan"), "ci95": [low, high],
            "mean_steps": sum(r["steps"] for r in rows) / n if n else float("nan"),
            "invalid_actions": sum(r["invalid_actions"] for r in rows),
            "seconds_per_episode": sum(r["seconds"] for r in rows) / n if n else float("nan"),
            "predictions": predictions, "unparsable": unparsable,
            "unparsable_rate": unparsable / predictions if predictions else 0.0}


def paired_outcomes(rows: list[dict[str, Any]], agents: list[str]) -> dict[str, dict[str, Any]]:
    """For each pair of agents (in `agents` order), on the episodes both ran: how often only the
    first succeeded, only the second, and McNemar's exact p (a two-sided binomial test on
    those discordant episodes; every agent meets the same episodes, so the comparison is paired)."""
    from scipy.stats import binomtest

    outcome = {(r["agent"], r["index"]): bool(r["success"]) for r in rows}
    pairs: dict[str, dict[str, Any]] = {}
    for i, a in enumerate(agents):
        for b in agents[i + 1:]:
            both = sorted({j for name, j in outcome if name == a} & {j for name, j in outcome if name == b})
            only_a = sum(outcome[a, j] and not outcome[b, j] for j in both)
            only_b = sum(outcome[b, j] and not outcome[a, j] for j in both)
            p = binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
            pairs[f"{a} vs {b}"] = {"episodes": len(both), f"{a}_only": only_a, f"{b}_only": only_b,
                                    "p_mcnemar": float(p)}
    return pairs


def plot(summary: dict[str, dict[str, Any]], title: str, path: Path) -> None:
    from benchmarks.charts import success_bars

    success_bars(summary, title, path, {"policy": "grey", "base": "tab:orange", "rlvr": "tab:blue",
                                        "oracle": "tab:green"})


def world_model_for(name: str, args: argparse.Namespace, device: Any = None):
    """The language world model an agent shares across its episodes (None for policy and oracle)."""
    if name not in ("base", "rlvr"):
        return None
    from rlvr_envs.web.agent import LanguageWorldModel

    model = args.base_model if name == "base" else args.rlvr_model
    return LanguageWorldModel(model, args.tokenizer, max_new_tokens=args.max_new_tokens, device=device,
                              batch_size=args.batch_episodes * args.k)


def make_agent(name: str, env: Any, args: argparse.Namespace, world_model: Any = None):
    """Agent `name` bound to `env` (its proposer reads that env's true page); base and rlvr use `world_model`."""
    from rlvr_envs.web.agent import ModelPredictiveAgent, OracleWorldModel, ScriptedProposer

    proposer = ScriptedProposer(env, args.noise)
    if name == "policy":
        return ModelPredictiveAgent(proposer, None, k=1)
    if name == "oracle":
        return ModelPredictiveAgent(proposer, OracleWorldModel(env), k=args.k)
    return ModelPredictiveAgent(proposer, world_model, k=args.k)


def write_report(out: Path, argv: list[str], args: argparse.Namespace, env: Any, agents: list[str],
                 skipped: dict[str, str], summary: dict[str, dict[str, Any]], rows: list[dict[str, Any]],
                 device: Any = None) -> None:
    """OUT/results.json (and success.png) for the agents finished so far."""
    report = {
        "command": "python -m benchmarks.web_agent " + " ".join(shlex.quote(a) for a in argv),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   + (f"{device.type.upper()}, " if device is not None else "CPU, ") + f"torch threads {args.threads}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "config": {**vars(args), "agents": agents, "kinds": list(env.config.goal_kinds()),
                   "value": "rlvr_envs.web.agent.rule_value", "proposer": "ScriptedProposer (noisy scripted expert)",
                   "policy_candidates": 1},
        "skipped": skipped, "finished": list(summary), "summary": summary,
        "paired": paired_outcomes(rows, list(summary)), "rows": rows}
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if summary:
        plot(summary, f"MiniWeb goals: {args.episodes} episodes, noise {args.noise}, k {args.k}", out / "success.png")


#: what must agree for runs to be joined: the same episodes met by the same proposer
SAME_EPISODES = ("episodes", "seed", "agent_seed", "noise", "k", "max_steps", "kinds")


def merge(directories: list[str], out: Path = RESULTS) -> dict[str, Any]:
    """One report from several runs of this script over the same episodes (see SAME_EPISODES)."""
    reports = []
    for directory in directories:
        path = Path(directory) / "results.json"
        if not path.is_file():
            raise SystemExit(f"{directory}: no results.json (not a finished run of benchmarks.web_agent)")
        reports.append(json.loads(path.read_text(encoding="utf-8")))
    first = reports[0]
    for directory, report in zip(directories[1:], reports[1:]):
        for key in SAME_EPISODES:
            if report["config"].get(key) != first["config"].get(key):
                raise SystemExit(f"{directory} has another {key} ({report['config'].get(key)!r}) than "
                                 f"{directories[0]} ({first['config'].get(key)!r})")
    names = [name for report in reports for name in report["summary"]]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SystemExit(f"agents {repeated} appear in more than one run")
    machines = sorted({r["machine"] for r in reports})
    merged = {**first, "command": [r["command"] for r in reports], "runs": [str(d) for d in directories],
              "machine": machines[0] if len(machines) == 1 else machines, "date": max(r["date"] for r in reports),
              "summary": {k: v for a in AGENTS for r in reports for k, v in r["summary"].items() if k == a},
              "skipped": {}, "finished": names, "rows": [row for r in reports for row in r["rows"]]}
    merged["paired"] = paired_outcomes(merged["rows"], [a for a in AGENTS if a in names])
    merged["config"] = {**first["config"], "agents": names,
                        "base_model": next((r["config"]["base_model"] for r in reports if r["config"].get("base_model")
                                            and "base" in r["summary"]), None),
                        "rlvr_model": next((r["config"]["rlvr_model"] for r in reports if r["config"].get("rlvr_model")
                                            and "rlvr" in r["summary"]), None)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    c = merged["config"]
    plot(merged["summary"], f"MiniWeb goals: {c['episodes']} episodes, noise {c['noise']}, k {c['k']}",
         out / "success.png")
    return merged


def main(argv: list[str] | None = None) -> int:
    from tqdm.auto import tqdm

    from rlvr_envs.web.agent import run_episodes
    from rlvr_envs.web.goals import MiniWebGoalEnv

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--merge"]:
        directories, out = argv[1:], RESULTS
        if "--out" in directories:  # --merge DIR DIR ... --out OUT
            at = directories.index("--out")
            if at + 2 != len(directories):
                raise SystemExit("--merge DIR DIR ... --out OUT: --out comes last, with one folder")
            directories, out = directories[:at], Path(directories[at + 1])
        if len(directories) < 2:
            raise SystemExit("--merge needs at least two run directories")
        merged = merge(directories, out)
        print(json.dumps({k: v["success_rate"] for k, v in merged["summary"].items()}, indent=2))
        return 0
    args = build_parser().parse_args(argv)
    agents = validate(args)
    kinds = tuple(k.strip() for k in args.kinds.split(",")) if args.kinds else None
    try:
        env = MiniWebGoalEnv(seed=args.seed, max_steps=args.max_steps, kinds=kinds)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skipped = {}
    for name, flag in (("base", "base_model"), ("rlvr", "rlvr_model")):
        if name in agents and getattr(args, flag) is None:
            skipped[name] = f"--{flag.replace('_', '-')} not given"
            print(f"note: agent {name!r} skipped ({skipped[name]})")
    agents = [a for a in agents if a not in skipped]
    rows: list[dict[str, Any]] = []
    summary: dict[str, dict[str, Any]] = {}
    device = None
    if any(name in ("base", "rlvr") for name in agents):
        from rlvr_envs.core.device import setup_device

        device = setup_device(args.device, threads=args.threads).device
    envs = [env] + [MiniWebGoalEnv(seed=args.seed, max_steps=args.max_steps, kinds=kinds)
                    for _ in range(min(args.batch_episodes, args.episodes) - 1)]
    for name in agents:
        world_model = world_model_for(name, args, device)
        mine = []
        with tqdm(total=args.episodes, desc=f"agent {name}") as progress:
            for first in range(0, args.episodes, len(envs)):
                # every agent meets the same episodes with the same proposer seeds (paired comparison)
                indices = list(range(first, min(args.episodes, first + len(envs))))
                batch = envs[:len(indices)]
                mine += [{"agent": name, **row} for row in run_episodes(
                    batch, [make_agent(name, e, args, world_model) for e in batch], indices,
                    [args.agent_seed * 1_000_003 + index for index in indices])]
                progress.update(len(indices))
        rows += mine
        summary[name] = summarize(mine)
        write_report(out, argv, args, env, agents, skipped, summary, rows, device)  # a kill keeps finished agents
    if not summary:
        write_report(out, argv, args, env, agents, skipped, summary, rows, device)
    print(f"{'agent':<8} {'success':>8} {'95% CI':>15} {'s/episode':>10} {'unparsable':>11}")
    for name, s in summary.items():
        interval = f"[{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]"
        print(f"{name:<8} {s['success_rate']:>8.3f} {interval:>15} {s['seconds_per_episode']:>10.3f} "
              f"{s['unparsable']:>5}/{s['predictions']:<5}")
    print(f"wrote {out / 'results.json'}" + (f" and {out / 'success.png'}" if summary else ""))
    return 0

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

WEB_AGENTS = {"policy": "noisy scripted policy alone", "base": "+ SFT (MLE) world model",
              "rlvr": "+ GRPO (RLVR) world model", "oracle": "+ the true simulator (oracle)"}


def section(files: list[dict]) -> str:
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
    return (f"**Web agents on MiniWeb goals** ({fmt.commands(d, 'benchmarks.web_agent')}, {fmt.shown(d['_file'])}; "
            f"{machine}, {d['date']}): "
            f"the same {c['episodes']} seeded goal episodes of `RLVRWorld/MiniWeb-Goal-v0` for every agent; the policy "
            f"proposes {c['k']} candidates (noise {c['noise']}), the world model predicts each one's page changes and "
            f"the rule-based value picks one.{skipped}\n\n"
            + fmt.table(["agent", "episodes", "successes", "success rate", "95% CI (Wilson)",
                         "unparsable predictions", "s/episode"], ["---", "---:", "---:", "---:", "---", "---:", "---:"],
                        rows) + _web_agent_verdict(d))


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
                 f"only the base agent in {pair['base_only']} (McNemar p {fmt.p_value(pair['p_mcnemar'])})")
    if "policy" in rate:
        below = [name for name in ("base", "rlvr") if rate[name] < rate["policy"]]
        if below:
            text += (f". With {' and '.join(below)} world model{'s' if len(below) > 1 else ''} the agent does worse "
                     f"than the policy alone ({rate['policy']:.2f}): wrong predictions mislead the value")
    return text + "."


SECTIONS = (
    fmt.Section("Web agents on MiniWeb goals", ("web_agent/results.json",),
                "python -m benchmarks.web_agent --base-model DIR --rlvr-model DIR", section,
                finding="The agent with the RLVR world model beat the base's, but both did worse than the policy "
                        "alone."),
    fmt.Section("Web agents on the one-site MiniWeb", ("web_agent_site/results.json",),
                "python -m benchmarks.web_agent --merge DIR ... --out benchmarks/results/web_agent_site", section),
)


if __name__ == "__main__":
    raise SystemExit(main())
