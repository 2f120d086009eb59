"""Make a world model trained elsewhere a shipped default, only when it wins: `rlvr-world adopt`.

    rlvr-world adopt runs/gpu/pusht.safetensors --kind pusht --out runs/adopt_pusht
    rlvr-world adopt runs/gpu/text.safetensors --kind text --out runs/adopt_text --apply

The candidate is a model bundle (`rlvr_envs.core.bundle`: one bf16 `.safetensors` file carrying
config, card and tokenizer, what a GPU run brings back) or a model folder. It is stored as the
shipped model is (bf16 for PushT, float16 for text) and evaluated that way, beside the shipped
default, on the same held-out transitions and sampling seeds, paired over transitions (a
transition's seeds are averaged: it is the independent unit):

- PushT (`--kind pusht`, default `pusht_single_step_model`: PushT-SingleStep-v0, PushT-LearnedSim-v0,
  `rlvr-world demo`): sampled held-out MAE and the success judge's agent, block and angle errors
  (`trainers.demo`'s evaluation). It wins when the MAE is lower with p < 0.05 and no object error
  grew beyond noise (`better_beyond_noise`, the demo's rule). Then the Real2Sim recipe's Pearson
  (`rlvr-world policy-eval`, its seven policies, >= 40 starts) and the CEM planning share of the true
  simulator's success (`rlvr-world plan`) run for both models from the same starts, and each must be
  not worse: the 95% interval of the paired difference (candidate - shipped, starts or episodes
  drawn again) must reach zero or above. That says "not shown worse", not "as good": with tens of
  starts the interval is wide, and the report gives it.
- Text (`--kind text`, default `minitextworld_sft_model`: `rlvr-world demo --domain text`; `--target
  minitextworld_sft_longer_model` for the other): greedy exact accuracy on held-out MiniTextWorld
  transitions. It wins when exact accuracy is higher with p < 0.05 and neither the changed nor the
  unchanged transitions' accuracy fell beyond noise.

Real2Sim and planning take most of an hour each on a CPU; they cannot rescue a candidate that lost
on the held-out set, so they run only after a held-out win (`--all-checks` runs them anyway).
`--out` gets adopt.json and adopt.md (the verdict, every figure with its 95% interval, the command).
With `--apply` and a win, the shipped folder's files are replaced by the candidate's (stored as the
shipped ones were), its card records the adoption, and the commands that regenerate every
committed result naming the default are printed and written to adopt.md; without a win, `--apply`
changes nothing and says why. Files from a bundle are data: only known file names are written, no
code from them runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlvr_envs.core.paths import ASSETS

PROGRAM = "rlvr-world adopt"
KINDS = ("pusht", "text")
#: the shipped folders a candidate of each kind may replace; the first is the default target
TARGETS = {"pusht": ("video/pusht_single_step_model",),
           "text": ("text/minitextworld_sft_model", "text/minitextworld_sft_longer_model")}
PUSHT_ENV = "RLVRWorld/PushT-SingleStep-v0"
TEXT_ENV = "RLVRWorld/MiniTextWorld-v0"
#: held-out transitions when --transitions is 0: all of PushT's embedded held-out set; for text the
#: size of the committed text tables (benchmarks/results/text_world_models*.json)
DEFAULT_TRANSITIONS = {"pusht": 0, "text": 200}
#: the issue's floor for the Real2Sim Pearson a decision rests on
MIN_STARTS = 40
#: a candidate must keep the shipped model's size class: at most this many times its parameters
SIZE_CLASS = 2.0
#: CEM budget of the committed planning tables (benchmarks/results/pusht_planning*)
CEM = {"horizon": 5, "samples": 32, "top_k": 4, "iterations": 3, "rounds": 2}
#: bootstrap draws of the Real2Sim and planning intervals
RESAMPLES = 2000
#: the page every result regenerates into, run last
RESULTS_PAGES = "python -m benchmarks.readme_results"
#: committed results made by commands that load a default without naming its folder
#: (the folder's name in a result file also counts: `results_naming`)
IMPLICIT_USERS = {
    "pusht_single_step_model": (r"^rlvr-world demo(?!.*--domain text)", r"benchmarks\.grpo_pusht_rewards\b",
                                r"benchmarks\.grpo_pusht --layout single",
                                r"benchmarks\.repetition_table --layout single",
                                r"benchmarks\.best_of_n_scaling", r"benchmarks\.video_world_models",
                                r"benchmarks\.grpo_ablations", r"benchmarks\.rl_algorithms(?!.*--env-id)(?!.*--model)",
                                r"benchmarks\.learned_sim_fidelity .*--models (\S+,)?base\b",
                                r"^rlvr-world plan --planners \S*\bbase\b(?!.*--base-model)"),
    "minitextworld_sft_model": (r"^rlvr-world demo .*--domain text",
                                r"benchmarks\.rl_algorithms .*--env-id RLVRWorld/MiniTextWorld(?!.*--model)"),
    "minitextworld_sft_longer_model": (),
}


@dataclass
class Args:
    bundle: str = ""  #: the candidate: a model bundle (.safetensors) or a model folder
    kind: str = ""  #: "pusht" (single-step PushT world model) or "text" (MiniTextWorld SFT model)
    #: the shipped folder to compare against and replace ('' = the kind's default: pusht_single_step_model,
    #: minitextworld_sft_model; text also minitextworld_sft_longer_model)
    target: str = ""
    out: str = "runs/adopt"  #: report folder (adopt.json, adopt.md, the candidate as evaluated, its runs)
    apply: bool = False  #: on a win, replace the shipped files with the candidate and record it in the card
    transitions: int = 0  #: held-out transitions (0 = PushT: all 293 embedded ones, text: 200)
    seeds: int = 2  #: PushT sampling seeds per transition (averaged within a transition)
    starts: int = MIN_STARTS  #: Real2Sim start states (a decision needs >= 40)
    heldout_episodes: int = 48  #: embedded held-out episodes the Real2Sim starts come from (the recipe's)
    max_steps: int = 20  #: Real2Sim chunks per rollout (the recipe's)
    planning_episodes: int = 50  #: CEM planning episodes (goals), as in the committed planning tables
    cem_samples: int = CEM["samples"]  #: CEM samples per iteration (the committed tables' CPU budget)
    cem_iterations: int = CEM["iterations"]  #: CEM iterations
    all_checks: bool = False  #: run Real2Sim and planning even when the held-out comparison did not win
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N: where the models run

    def validate(self) -> "Args":
        if self.kind not in KINDS:
            raise ValueError(f"--kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.bundle:
            raise ValueError("give the candidate: a model bundle (.safetensors) or a model folder")
        if not Path(self.bundle).exists():
            raise FileNotFoundError(f"no candidate at {self.bundle} (a model bundle .safetensors or a model folder)")
        target_dir(self.kind, self.target)  # an unknown target fails here
        for name in ("seeds", "starts", "heldout_episodes", "max_steps", "planning_episodes", "cem_samples",
                     "cem_iterations", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.transitions < 0 or self.transitions == 1:
            raise ValueError(f"transitions must be 0 (the default set) or >= 2 (a paired test), got {self.transitions}")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise ValueError(f"out: {self.out} is a file; pass a folder to write into")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)
        return self


def target_dir(kind: str, target: str = "") -> Path:
    """The shipped folder a `kind` candidate is compared with and may replace."""
    allowed = {Path(t).name: ASSETS / t for t in TARGETS[kind]}
    name = target or Path(TARGETS[kind][0]).name
    if name not in allowed:
        raise ValueError(f"--target for --kind {kind} must be one of {', '.join(allowed)}, got {name!r}")
    return allowed[name]


# -- the candidate, stored as the shipped model is ------------------------------------------------

def stored_dtype(folder: Path) -> str:
    """The floating dtype of the weights in `folder` ('bfloat16', 'float16' or 'float32')."""
    from safetensors import safe_open

    names = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
    with safe_open(str(folder / "model.safetensors"), framework="pt") as handle:
        for key in handle.keys():
            dtype = handle.get_slice(key).get_dtype()
            if dtype in names:
                return names[dtype]
    return "float32"


def parameter_count(tensors: dict) -> int:
    return int(sum(t.numel() for t in tensors.values()))


def read_candidate(source: Path) -> tuple[dict[str, str], dict]:
    """(small files by name, tensors) of a bundle or a model folder; DataError when it is neither."""
    from safetensors.torch import load_file

    from rlvr_envs.core import bundle
    from rlvr_envs.core.errors import DataError
    from rlvr_envs.core.files import check_checkpoint_dir

    if source.is_dir():
        check_checkpoint_dir(source, "the candidate model")
        files = {name: (source / name).read_text() for name in bundle.CARRIED_FILES if (source / name).is_file()}
        if "config.json" not in files:
            raise DataError(f"{source}: no config.json; the candidate must be a model folder (save_pretrained) or "
                            "a model bundle")
        return files, {name: value for path in sorted(source.glob("*.safetensors"))
                       for name, value in load_file(str(path)).items()}
    if source.suffix != ".safetensors":
        raise DataError(f"{source}: not a model bundle (a .safetensors file written by rlvr_envs.core.bundle.pack) "
                        "nor a model folder")
    return bundle.read_files(source), load_file(str(source))


def prepare_candidate(source: Path, target: Path, kind: str, folder: Path) -> dict[str, Any]:
    """Write the candidate into `folder` as it would ship: its weights in the target's dtype, its
    config's `dtype` saying so; DataError when it cannot stand in for the target (another model type,
    vocabulary or special tokens: a model of the other kind). Returns what the report says of it."""
    import torch
    from safetensors.torch import load_file, save_file

    from rlvr_envs.core.errors import DataError
    from rlvr_envs.core.files import check_checkpoint_dir

    files, tensors = read_candidate(source)
    try:
        config = json.loads(files["config.json"])
    except json.JSONDecodeError as error:
        raise DataError(f"{source}: the candidate's config.json is not JSON ({error})") from None
    if not isinstance(config, dict):
        raise DataError(f"{source}: the candidate's config.json is not a JSON object")
    if not tensors:
        raise DataError(f"{source}: the candidate holds no weights")
    shipped = json.loads((target / "config.json").read_text())
    for key in ("model_type", "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id"):
        if config.get(key) != shipped.get(key):
            raise DataError(f"{source}: its {key} is {config.get(key)!r}, the shipped {target.name}'s "
                            f"{shipped.get(key)!r}: not a --kind {kind} model like it")
    if kind == "text" and "tokenizer.json" not in files:
        raise DataError(f"{source}: carries no tokenizer.json, which a --kind text model needs")
    dtype = stored_dtype(target)
    reference = load_file(str(target / "model.safetensors"))
    ratio = parameter_count(tensors) / max(1, parameter_count(reference))
    cast = getattr(torch, dtype)
    stored = {name: (value.to(cast) if value.is_floating_point() else value).contiguous()
              for name, value in tensors.items()}
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    config["dtype"] = dtype
    files["config.json"] = json.dumps(config, indent=2) + "\n"
    for name, text in files.items():
        (folder / name).write_text(text)
    save_file(stored, str(folder / "model.safetensors"), metadata={"format": "pt"})
    check_checkpoint_dir(folder, "the candidate as it would ship")
    return {"source": str(source), "sha256": sha256(source) if source.is_file() else None,
            "dtype": dtype, "parameters": parameter_count(tensors), "shipped_parameters": parameter_count(reference),
            "size_ratio": round(ratio, 3), "card": _card_summary(files.get("card.json"))}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _card_summary(text: str | None) -> dict[str, Any]:
    """What the candidate's card says it is (its own words; shown, never trusted for a decision)."""
    if not text:
        return {}
    try:
        card = json.loads(text)
    except json.JSONDecodeError:
        return {"unreadable": True}
    return {k: card[k] for k in ("what", "command", "machine", "steps", "parameters") if isinstance(card, dict)
            and k in card}


# -- paired tests and the decision -----------------------------------------------------------------

def with_interval(test: dict[str, float]) -> dict[str, float]:
    """A paired test (`PairedDifference.as_dict`) with the 95% t interval of its mean difference."""
    from scipy import stats

    n, stderr = test["n"], test["stderr"]
    half = float(stats.t.ppf(0.975, n - 1) * stderr) if n > 1 and math.isfinite(stderr) else float("nan")
    return {**test, "low": test["mean"] - half, "high": test["mean"] + half}


#: per kind: (the held-out metric, whether lower is better, the guards no win may worsen, guards read higher-better)
RULES = {"pusht": ("mae", True, ("agent_error", "block_error", "angle_error"), ()),
         "text": ("exact", False, ("exact_changed", "exact_unchanged"), ("exact_changed", "exact_unchanged"))}


def decide(kind: str, held_out: dict[str, dict], checks: dict[str, dict] | None = None,
           starts: int = MIN_STARTS, size_ratio: float = 1.0) -> dict[str, Any]:
    """The adoption decision from paired tests of candidate - shipped (`held_out`: metric name -> test
    with mean and p) and, for PushT, the Real2Sim and planning checks ({"not_worse": bool | None, ...}).
    Adopted only when the held-out metric is better with p < 0.05, no guard is worse beyond noise,
    every check ran and is not worse, Real2Sim had >= 40 starts, and the size class is kept."""
    from rlvr_envs.video.evaluation import SIGNIFICANT_P, better_beyond_noise

    metric, lower, guards, higher = RULES[kind]
    judged = better_beyond_noise(held_out, metric, guards, lower_is_better=lower, higher_is_better=higher)
    test = held_out[metric]
    reasons = []
    if not judged["metric_better"]:
        way = "lower" if lower else "higher"
        moved = ("the same on every transition" if test["mean"] == 0 and not test.get("stderr") else
                 f"difference {test['mean']:+.4g}, p={test['p']:.2g}")
        reasons.append(f"held-out {metric} is not {way} beyond noise ({moved}; a win needs it {way} with "
                       f"p < {SIGNIFICANT_P})")
    if judged["worse"]:
        reasons.append("worse beyond noise: " + ", ".join(
            f"{key} {_shown(key, held_out[key]['mean'])} (p={held_out[key]['p']:.2g})" for key in judged["worse"]))
    if kind == "pusht" and judged["better"]:  # checks that could not change a held-out loss are not reasons
        for name, check in (checks or {}).items():
            if check.get("not_worse") is None:
                reasons.append(f"{name} decided nothing ({check.get('why') or 'not run'})")
            elif not check["not_worse"]:
                reasons.append(f"{name} is worse: {check['difference_text']}")
        if starts < MIN_STARTS:
            reasons.append(f"Real2Sim had {starts} starts, below the {MIN_STARTS} a decision rests on")
    if size_ratio > SIZE_CLASS:
        reasons.append(f"the candidate has {size_ratio:.1f}x the shipped model's parameters, over its size class "
                       f"({SIZE_CLASS:g}x): CPU users run the shipped size")
    return {"adopted": not reasons, "held_out_better": judged["better"], "reasons": reasons}


def _shown(key: str, difference: float) -> str:
    """A difference in its report unit: the judge's object errors in px or degrees, others as they are."""
    from trainers.demo import OBJECT_COLUMNS

    unit = next(((scale, name) for column, _, name, scale in OBJECT_COLUMNS if column == key), None)
    return f"{difference * unit[0]:+.1f} {unit[1]}" if unit else f"{difference:+.4g}"


# -- held-out evaluation ----------------------------------------------------------------------------

def held_out_pusht(args: Args, shipped: Path, candidate: Path, device: str) -> dict[str, Any]:
    """Sampled held-out metrics of both models (the demo's evaluation), paired over transitions."""
    from baselines.video import score_baselines
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.video.evaluation import held_out_indices, score_sampled, summarize
    from rlvr_envs.video.task import shipped_world_model
    from trainers.demo import paired

    task = task_from_env_id(PUSHT_ENV, reward="pose", device=device)  # pose: the judge's object errors too
    indices = held_out_indices(len(task), args.transitions or len(task))
    scores = {}
    for name, folder in (("shipped", shipped), ("candidate", candidate)):
        print(f"  {name}: {len(indices)} held-out transitions x {args.seeds} sampling seeds", flush=True)
        scores[name] = score_sampled(shipped_world_model(task, str(folder)), task, indices, args.seeds)
    tests = {key: with_interval(test) for key, test in paired(scores["shipped"], scores["candidate"]).items()}
    copy_last = score_baselines(task, indices)["copy_last_frame_tokens"]  # the strongest trivial baseline
    return {"env_id": PUSHT_ENV, "transitions": len(indices), "seeds": args.seeds,
            "shipped": summarize(scores["shipped"]), "candidate": summarize(scores["candidate"]), "tests": tests,
            "copy_last_frame": summarize(copy_last),
            "candidate_vs_copy_last": {key: with_interval(test)
                                       for key, test in paired(copy_last, scores["candidate"]).items()}}


def held_out_text(args: Args, shipped: Path, candidate: Path, device: str) -> dict[str, Any]:
    """Greedy exact accuracy of both models on the same held-out transitions (each model prompted
    through its own tokenizer), paired over transitions: all, changed and unchanged ones."""
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.video.evaluation import paired_difference
    from trainers.demo_text import evaluate

    size = args.transitions or DEFAULT_TRANSITIONS["text"]
    reports, changed = {}, None
    for name, folder in (("shipped", shipped), ("candidate", candidate)):
        task = task_from_env_id(TEXT_ENV, split="test", size=size, tokenizer=str(folder))
        indices = list(range(len(task)))
        flags = [task.transition(i).changed for i in indices]
        if changed is not None and flags != changed:
            raise RuntimeError("the held-out transitions differ between the two models' tasks")
        changed = flags
        print(f"  {name}: greedy answers to {len(indices)} held-out transitions", flush=True)
        reports[name] = evaluate(folder, task, indices, device)
    tests = {}
    subsets = {"exact": [True] * len(changed), "exact_changed": [c is True for c in changed],
               "exact_unchanged": [c is False for c in changed]}
    for key, keep in subsets.items():
        pick = [i for i, k in enumerate(keep) if k]
        if len(pick) >= 2:
            tests[key] = with_interval(paired_difference(
                np.array([reports["shipped"]["solved"][i] for i in pick], dtype=float),
                np.array([reports["candidate"]["solved"][i] for i in pick], dtype=float)).as_dict())
    tests["reward"] = with_interval(paired_difference(np.asarray(reports["shipped"]["rewards"]),
                                                      np.asarray(reports["candidate"]["rewards"])).as_dict())
    summary = {name: {k: v for k, v in r.items() if k not in ("rewards", "solved")} for name, r in reports.items()}
    return {"env_id": TEXT_ENV, "split": "test", "transitions": len(changed), **summary, "tests": tests}


# -- Real2Sim and planning, both models from the same starts ---------------------------------------

def _run_command(module: str, argv: list[str]) -> None:
    """Run a library command (`rlvr-world policy-eval`, `plan`) in-process through its own parser."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog=f"rlvr-world {argv[0]}")
    command = importlib.import_module(module)
    command.add_arguments(parser)
    parsed = parser.parse_args(argv[1:])
    if getattr(parsed, "check", None):
        parsed.check(parsed)
    if parsed.func(parsed):
        raise RuntimeError(f"rlvr-world {' '.join(argv)} failed")


def real2sim(args: Args, shipped: Path, candidate: Path, work: Path) -> dict[str, Any]:
    """The Real2Sim recipe (its seven policies, starts counted back from the episodes' ends) for both
    models, and the paired bootstrap of the Pearson and MMRV differences over the same starts."""
    from baselines.policies import RECIPE_POLICIES
    from rlvr_envs.policy_eval.metrics import RANK_METRICS, start_difference
    from rlvr_envs.policy_eval.real2sim import success_matrices

    runs, commands = {}, {}
    for name, folder in (("shipped", shipped), ("candidate", candidate)):
        argv = ["policy-eval", "--model", str(folder), "--heldout-episodes", str(args.heldout_episodes),
                "--starts", str(args.starts), "--max-steps", str(args.max_steps),
                *[flag for spec in RECIPE_POLICIES for flag in ("--policy", spec)],
                "--threads", str(args.threads), "--device", args.device, "--out", str(work / name)]
        commands[name] = "rlvr-world " + " ".join(argv)
        print(f"  Real2Sim, {name}: {commands[name]}", flush=True)
        _run_command("rlvr_envs.policy_eval.command", argv)
        runs[name] = json.loads((work / name / "results.json").read_text())
    (p1, s1, r1), (p2, s2, r2) = (success_matrices(runs[n]["rollouts"]) for n in ("shipped", "candidate"))
    if p1 != p2 or not np.array_equal(r1, r2):
        raise RuntimeError("the two Real2Sim runs did not start from the same states")
    differences = {name: start_difference(metric, first=(s1, r1), second=(s2, r2), resamples=RESAMPLES)
                   for name, metric in RANK_METRICS.items()}
    pearson = differences["pearson"]
    defined = math.isfinite(pearson["high"])
    not_worse = bool(pearson["high"] >= 0) if defined else None
    summary = {n: {k: runs[n]["summary"].get(k) for k in ("pearson", "pearson_interval", "mmrv", "mmrv_interval")}
               for n in runs}
    return {"starts": args.starts, "policies": p1, "commands": commands, **summary, "difference": differences,
            "not_worse": not_worse,
            "why": None if defined else "the Pearson is undefined in every draw of the starts (no spread in the "
                                        "success rates): more starts",
            "difference_text": f"Pearson {pearson['difference']:+.3f} (95% over starts {pearson['low']:+.2f} to "
                               f"{pearson['high']:+.2f})",
            "rule": "not worse when the 95% interval of the paired Pearson difference (candidate - shipped, starts "
                    "drawn again with replacement, the same draw for both) reaches 0 or above"}


def planning(args: Args, shipped: Path, candidate: Path, work: Path) -> dict[str, Any]:
    """CEM with each model and with the true simulator on the same goals; each model's success as a
    share of the true simulator's, and the paired bootstrap of the difference over episodes."""
    argv = ["plan", "--planners", "base,rlvr,true_sim", "--base-model", str(shipped), "--rlvr-model", str(candidate),
            "--episodes", str(args.planning_episodes), "--horizon", str(CEM["horizon"]),
            "--samples", str(args.cem_samples), "--top-k", str(min(CEM["top_k"], args.cem_samples)),
            "--iterations", str(args.cem_iterations), "--rounds", str(CEM["rounds"]), "--gifs", "0",
            "--threads", str(args.threads), "--device", args.device, "--out", str(work)]
    command = "rlvr-world " + " ".join(argv)
    print(f"  planning: {command}", flush=True)
    _run_command("rlvr_envs.planning.command", argv)
    report = json.loads((work / "results.json").read_text())
    success = {}
    for planner, name in (("cem_base", "shipped"), ("cem_rlvr", "candidate"), ("cem_true_sim", "true_sim")):
        rows = sorted((r for r in report["episodes"] if r["planner"] == planner), key=lambda r: r["index"])
        success[name] = np.array([float(r["success"]) for r in rows])
    true = int(success["true_sim"].sum())
    shares = {name: (float(success[name].sum() / true) if true else float("nan")) for name in ("shipped", "candidate")}
    gain = success["candidate"] - success["shipped"]  # per episode: the same goal for both
    draws = np.random.default_rng(0).integers(0, len(gain), size=(RESAMPLES, len(gain)))
    low, high = np.quantile(gain[draws].mean(axis=1), [0.025, 0.975]).tolist()
    difference = float(gain.mean())
    scale = len(gain) / true if true else float("nan")  # success rate -> share of the true simulator's successes
    text = (f"success rate {difference:+.2f} (95% over episodes {low:+.2f} to {high:+.2f})"
            + (f", share {difference * scale:+.2f} ({low * scale:+.2f} to {high * scale:+.2f})" if true else
               "; the true simulator succeeded on no episode, so no share is defined"))
    return {"command": command, "episodes": len(gain), "cem": {**CEM, "samples": args.cem_samples,
                                                               "iterations": args.cem_iterations},
            "successes": {n: int(v.sum()) for n, v in success.items()}, "share": shares,
            "difference": {"success_rate": difference, "low": low, "high": high, "share": difference * scale,
                           "share_low": low * scale, "share_high": high * scale},
            "not_worse": bool(high >= 0), "difference_text": text,
            "rule": "not worse when the 95% interval of the paired difference in CEM success (candidate - shipped, "
                    "the same goals, episodes drawn again with replacement) reaches 0 or above; the share of the true "
                    "simulator's successes moves with it, both planners sharing that denominator"}


# -- applying a win, and what it makes stale --------------------------------------------------------

def results_naming(target: Path, root: Path | None = None) -> list[dict[str, Any]]:
    """Every committed result (benchmarks/results/**.json) that names `target`'s folder or was made
    by a command that loads it without naming it (`IMPLICIT_USERS`), with the commands it records."""
    root = root or Path(__file__).resolve().parents[1]
    patterns = [re.compile(p) for p in IMPLICIT_USERS.get(target.name, ())]
    found = []
    for path in sorted((root / "benchmarks" / "results").rglob("*.json")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = json.loads(text)
        except ValueError:
            continue
        recorded = data.get("command") if isinstance(data, dict) else None
        commands = [c for c in (recorded if isinstance(recorded, list) else [recorded]) if isinstance(c, str)]
        if target.name in text or any(p.search(c) for p in patterns for c in commands):
            found.append({"file": str(path.relative_to(root)), "commands": [_naming(c, data, target, root)
                                                                           for c in commands]})
    return found


def _naming(command: str, data: Any, target: Path, root: Path) -> str:
    """A recorded policy-eval command that ran the target as its default then (`model` says so) but
    would run another default now, with the target named."""
    model = str(data.get("model", "")) if isinstance(data, dict) else ""
    if command.startswith("rlvr-world policy-eval") and "--model" not in command and Path(model).name == target.name:
        relative = target.relative_to(root) if target.is_relative_to(root) else target
        return command.replace("rlvr-world policy-eval", f"rlvr-world policy-eval --model {relative}", 1)
    return command


def install(candidate: Path, target: Path, record: dict[str, Any]) -> list[str]:
    """Replace the shipped model's files in `target` with the candidate's (same dtype, prepared by
    `prepare_candidate`); card.json gets the adoption `record`, and keeps the replaced card's summary."""
    import os

    old_card = json.loads((target / "card.json").read_text()) if (target / "card.json").is_file() else {}
    card = json.loads((candidate / "card.json").read_text()) if (candidate / "card.json").is_file() else {}
    card["adoption"] = {**record, "replaced": {k: old_card[k] for k in ("what", "command") if k in old_card}}
    written = []
    for path in sorted(candidate.iterdir()):
        if path.name == "card.json":
            continue
        partial = target / (path.name + ".partial")
        shutil.copyfile(path, partial)
        os.replace(partial, target / path.name)
        written.append(path.name)
    if "README.md" not in written and (target / "README.md").is_file():  # the replaced model's card text stays: say so
        readme = (target / "README.md").read_text()
        partial = target / "README.md.partial"
        partial.write_text(readme.rstrip() + f"\n\n**Replaced** on {record.get('time', '?')} by an adopted model "
                           "(`rlvr-world adopt`); the text above describes the model it replaced. What ships now, "
                           "and the adoption's figures: card.json (`adoption`).\n")
        os.replace(partial, target / "README.md")
        written.append("README.md")
    partial = target / "card.json.partial"
    partial.write_text(json.dumps(card, indent=2) + "\n")
    os.replace(partial, target / "card.json")
    return [*written, "card.json"]


# -- the report ----------------------------------------------------------------------------------

def _row(label: str, shipped: float, candidate: float, test: dict[str, float], scale: float, digits: int) -> str:
    """One table row: both values, the paired difference, its 95% interval, p and n."""
    f = f".{digits}f"
    return (f"| {label} | {shipped * scale:{f}} | {candidate * scale:{f}} | {test['mean'] * scale:+{f}} | "
            f"[{test['low'] * scale:+{f}}, {test['high'] * scale:+{f}}] | {test['p']:.2g} | {test['n']} |")


def _metric(summary: dict[str, Any], name: str) -> str:
    """A Real2Sim metric with its interval over starts, 'undefined' when it is."""
    value, interval = summary.get(name), summary.get(f"{name}_interval") or ()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "undefined"
    return f"{value:.3f}" + (f" ({interval[0]:.2f} to {interval[1]:.2f})" if len(interval) == 2 and None not in interval
                             else "")


def _outcome(check: dict[str, Any]) -> str:
    return {True: "not worse", False: "**worse**", None: f"no decision ({check.get('why')})"}[check["not_worse"]]


def report_markdown(result: dict[str, Any]) -> str:
    """adopt.md: the verdict and why, every figure with its interval, the rule, the command."""
    from trainers.demo import OBJECT_COLUMNS

    held, decision = result["held_out"], result["decision"]
    verdict = "**adopted**" if decision["adopted"] else "**not adopted**"
    lines = [f"# {PROGRAM}: {result['candidate']['source']} vs the shipped {result['target']}", "",
             f"`{result['command']}` on {result['machine']}, {result['seconds'] / 60:.1f} min.", "",
             f"Verdict: {verdict}" + ("." if decision["adopted"] else ": " + "; ".join(decision["reasons"]) + "."), "",
             "| metric | shipped | candidate | candidate - shipped | 95% interval | p | transitions |",
             "|---|---:|---:|---:|---|---:|---:|"]
    if result["kind"] == "pusht":
        head = (f"Held-out {held['env_id']}: {held['transitions']} transitions x {held['seeds']} sampling seeds "
                "(T=1, top-k 100, seeds averaged within a transition), the same for both models; paired over "
                "transitions, 95% t interval.")
        objects = {key: (f"{name} ({unit})", scale) for key, name, unit, scale in OBJECT_COLUMNS}
        for key in ("mae", "mse", "psnr", "ssim", *objects):
            if key in held["tests"]:
                label, scale = objects.get(key, (key.upper() if key != "ssim" else "SSIM", 1.0))
                lines.append(_row(label, held["shipped"][key], held["candidate"][key], held["tests"][key], scale,
                                  1 if key in objects else 5))
        if "candidate_vs_copy_last" in held:
            lines += ["", "Against copying the last frame (the strongest trivial baseline; candidate - copy-last, 95% "
                      "interval): " + "; ".join(
                          f"{objects.get(key, ('MAE', 1.0))[0]} {test['mean'] * objects.get(key, (0, 1.0))[1]:+.5g} "
                          f"[{test['low'] * objects.get(key, (0, 1.0))[1]:+.5g}, "
                          f"{test['high'] * objects.get(key, (0, 1.0))[1]:+.5g}]"
                          for key, test in held["candidate_vs_copy_last"].items() if key in ("mae", *objects)) + "."]
    else:
        head = (f"Held-out {held['env_id']} (test split): {held['transitions']} transitions "
                f"({held['shipped']['n_changed']} change the state), greedy answers; paired over transitions, 95% t "
                "interval.")
        fields = {"exact": "accuracy", "exact_changed": "accuracy_changed", "exact_unchanged": "accuracy_unchanged",
                  "reward": "reward"}
        for key, name in fields.items():
            if key in held["tests"]:
                lines.append(_row(key, held["shipped"][name], held["candidate"][name], held["tests"][key], 1.0, 3))
    lines[6:6] = [head, ""]
    for name, check in result["checks"].items():
        lines.append("")
        if "difference" not in check:
            lines.append(f"{'Real2Sim' if name == 'real2sim' else 'CEM planning'}: not run ({check['why']}).")
        elif name == "real2sim":
            lines.append(f"Real2Sim recipe, {check['starts']} starts, policies {', '.join(check['policies'])}: Pearson "
                         f"shipped {_metric(check['shipped'], 'pearson')}, candidate "
                         f"{_metric(check['candidate'], 'pearson')}; candidate - shipped {check['difference_text']}; "
                         f"MMRV (lower is better) {_metric(check['shipped'], 'mmrv')} vs "
                         f"{_metric(check['candidate'], 'mmrv')}. Rule: {check['rule']}: {_outcome(check)}.")
        else:
            won = check["successes"]
            lines.append(f"CEM planning, {check['episodes']} episodes: successes shipped {won['shipped']}, "
                         f"candidate {won['candidate']}, true simulator {won['true_sim']};"
                         f" share of the true simulator's {check['share']['shipped']:.2f} vs "
                         f"{check['share']['candidate']:.2f}; candidate - shipped {check['difference_text']}. Rule: "
                         f"{check['rule']}: {_outcome(check)}.")
    candidate = result["candidate"]
    lines += ["", f"Rule: {result['rule']}.", "",
              f"Candidate: {candidate['parameters']:,} parameters ({candidate['size_ratio']:g}x the shipped model's), "
              f"evaluated as it would ship ({candidate['dtype']}); its card says: "
              f"{json.dumps(candidate['card'])[:400]}", "", f"Applied: {result['applied']}."]
    if result.get("regenerate"):
        lines += ["", "Committed results that name the default, and the commands that regenerate them (then "
                  f"`{RESULTS_PAGES}`):", ""]
        lines += [f"- `{row['file']}`: " + ("; ".join(f"`{c}`" + (" (on a GPU)" if "--device cuda" in c else "")
                                                    for c in row["commands"]) or "(no recorded command)")
                  for row in result["regenerate"]]
    return "\n".join(lines) + "\n"


RULE_TEXT = {
    "pusht": "adopted only when the held-out sampled MAE is lower with p < 0.05 (paired over transitions), no object "
             "error (agent, block, angle) is higher with p < 0.05, the Real2Sim Pearson (>= 40 starts) and the CEM "
             "planning share are not worse (their paired 95% intervals reach 0 or above: not shown worse, which is "
             "weaker than shown as good), and the candidate keeps the shipped size class",
    "text": "adopted only when held-out exact accuracy is higher with p < 0.05 (paired over transitions), neither the "
            "changed nor the unchanged transitions' exact accuracy is lower with p < 0.05, and the candidate keeps "
            "the shipped size class",
}


def main(args: Args) -> dict[str, Any]:
    from rlvr_envs.core.device import setup_device
    from rlvr_envs.core.files import OutputLock, strict_json, write_json_atomic
    from rlvr_envs.core.records import RunRecord
    from trainers.common import command_line

    args.validate()
    device = str(setup_device(args.device, threads=args.threads).device)
    out, target = Path(args.out), target_dir(args.kind, args.target)
    command = command_line(PROGRAM, args).replace(f"{PROGRAM} --bundle {args.bundle}", f"{PROGRAM} {args.bundle}")
    started = time.perf_counter()
    with OutputLock(out, command):
        record = RunRecord(PROGRAM, threads=args.threads)
        for stale in ("candidate", "real2sim", "planning", "adopt.json", "adopt.md"):  # this command's own outputs
            path = out / stale
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        print(f"[1/3] the candidate {args.bundle}, stored as {target.name} is", flush=True)
        candidate = prepare_candidate(Path(args.bundle), target, args.kind, out / "candidate")
        print(f"[2/3] held-out comparison against the shipped {target.name}", flush=True)
        held = (held_out_pusht if args.kind == "pusht" else held_out_text)(args, target, out / "candidate", device)
        first = decide(args.kind, held["tests"], starts=MIN_STARTS, size_ratio=candidate["size_ratio"])
        checks: dict[str, dict] = {}
        if args.kind == "pusht":
            if first["held_out_better"] or args.all_checks:
                print("[3/3] Real2Sim and CEM planning with both models", flush=True)
                checks["real2sim"] = real2sim(args, target, out / "candidate", out / "real2sim")
                checks["planning"] = planning(args, target, out / "candidate", out / "planning")
            else:
                why = ("the held-out comparison did not win, so they could not change the verdict (--all-checks runs "
                       "them)")
                checks = {"real2sim": {"not_worse": None, "why": why}, "planning": {"not_worse": None, "why": why}}
                print(f"[3/3] Real2Sim and planning skipped: {why}", flush=True)
        decision = decide(args.kind, held["tests"], checks, starts=args.starts, size_ratio=candidate["size_ratio"])
        result = {"kind": args.kind, "target": target.name, "candidate": candidate, "held_out": held,
                  "checks": checks, "decision": decision, "rule": RULE_TEXT[args.kind], "command": command,
                  "args": asdict(args), "applied": "no (--apply not given)", "regenerate": []}
        if decision["adopted"]:
            result["regenerate"] = results_naming(target)
        if args.apply and decision["adopted"]:
            written = install(out / "candidate", target, {
                "time": time.strftime("%Y-%m-%d %H:%M"), "command": command,
                "bundle": candidate["source"], "sha256": candidate["sha256"],
                "held_out": held["tests"], "checks": {k: {x: v.get(x) for x in ("not_worse", "difference_text")}
                                                       for k, v in checks.items()}})
            result["applied"] = f"yes: {target} now holds the candidate ({', '.join(written)})"
        elif args.apply:
            result["applied"] = f"no: not adopted, so --apply changed nothing in {target}"
        result.update(run=record.finish(), seconds=round(time.perf_counter() - started, 1))
        run = result["run"]
        result["machine"] = f"{run['machine']}, {'CPU' if device == 'cpu' else device}"
        (out / "adopt.md").write_text(report_markdown(result), encoding="utf-8")
        write_json_atomic(out / "adopt.json", strict_json(result))
    print(report_markdown(result))
    return result


def parse_args(argv: list[str] | None = None) -> Args:
    import argparse

    from trainers.common import add_dataclass_arguments, dataclass_from_namespace, validated

    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("bundle", help="the candidate: a model bundle (.safetensors) or a model folder")
    add_dataclass_arguments(parser, Args, skip=("bundle",))
    return validated(parser, dataclass_from_namespace(Args, parser.parse_args(argv)))


if __name__ == "__main__":
    from trainers.common import run_command

    run_command(main, parse_args, PROGRAM)
