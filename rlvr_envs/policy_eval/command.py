"""`rlvr-world policy-eval`: Real2Sim on PushT, learned simulator vs the real one.

    rlvr-world policy-eval --starts 10 --max-steps 20 --out runs/real2sim
    rlvr-world policy-eval --model runs/grpo_pusht/final --out runs/real2sim_rlvr

Policies: the image-based family (`pusht_policy_family`: pixel expert at `--noise` levels
and random) and your own, `--policy MODULE:NAME` (repeatable; a callable image -> chunk of
5 targets, or a SIMPLER-style object with reset(instruction) and step(image); reported under
NAME); `--no-family` leaves the family out (Pearson and MMRV need two policies or more).
Starts: states of held-out episodes `--lead` simulator steps before their end (so good
policies can finish within `--max-steps` chunks; `--lead-from success`: before the step their
block first covers the goal past `--success-coverage`, so a start asks a policy to push); the
real simulator starts from the physics state, the learned one from the recorded frames and
actions that led to it (`--start-from history`: the context it was trained on, and the
velocities the physics state holds) or from the start frame alone (`frame`: the agent standing
still, a context the real state contradicts when its agent or block was moving). Writes
OUT/results.json (per-policy success in both simulators, Pearson and MMRV, and two probes: how
far the learned simulator moves a block nothing touches, and how far its agent follows a
target) and OUT/gifs/<policy>.gif (real rollout beside the learned simulator's) for the first
start.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from rlvr_envs.core.arguments import at_least, existing_dir, number_list, open_fraction, output_dir, real_at_least
from rlvr_envs.core.files import OutputLock, atomic_writer, json_line, remove_stale_temporaries, strict_json
from rlvr_envs.core.paths import ASSETS
from rlvr_envs.policy_eval.real2sim import ON_POLICY_ERROR

#: the learned simulator used without --model: the sweep model after more MLE on `waypoint` data, the
#: steadiest ranking of the recipe's policies measured (Pearson 0.79 at 40 starts against the sweep
#: model's 0.64 from the same starts: benchmarks/results/real2sim/recipe_defaults_waypoint_40starts and
#: recipe_in_arena_starts_40starts; 0.93 on a second held-out set: ..._40starts_heldout_b; 0.84 at 80
#: starts: recipe_defaults_waypoint_80starts); the MLE model of PushT-LearnedSim-v0 ranks the policy
#: family backwards, Pearson -0.47 in real2sim/base)
DEFAULT_MODEL = ASSETS / "video" / "pusht_single_step_waypoint_model"
START_FROM = ("history", "frame")
LEAD_FROM = ("end", "success")
JUDGE_FRAMES = ("rendered", "reconstructed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=existing_dir, default=None,
                        help="world model dir (None: the shipped waypoint-data model, the steadiest Real2Sim "
                             "ranking measured: docs/recipes.md)")
    parser.add_argument("--tokenizer", type=existing_dir, default=None,
                        help="frame tokenizer dir (None: the shipped one)")
    parser.add_argument("--data", type=existing_dir, default=None,
                        help="held-out PushT episodes dir (None: the embedded set)")
    parser.add_argument("--heldout-episodes", type=at_least(1), default=12, help="size of the embedded held-out set")
    parser.add_argument("--starts", type=at_least(1), default=10, help="start states per policy")
    parser.add_argument("--lead", type=at_least(0), default=60,
                        help="start this many simulator steps before --lead-from")
    parser.add_argument("--lead-from", default="end", choices=LEAD_FROM,
                        help="'end': an episode's last step (a successful episode's block is then near or "
                             "past the bar: the ranking measured best); 'success': the step its block first "
                             "covers the goal past --success-coverage (its end if it never does), so a start "
                             "asks a policy to push: docs/recipes.md")
    parser.add_argument("--start-from", default="history", choices=START_FROM,
                        help="the learned simulator's context at a start: 'history', the real frames and actions "
                             "before it (the real simulator starts from the physics state they left, velocities "
                             "included); 'frame', the start frame repeated with the agent standing still")
    parser.add_argument("--judge-frames", default="rendered", choices=JUDGE_FRAMES,
                        help="what the judge reads of the real simulator and the start: 'rendered', its frames as "
                             "rendered (the judge then agrees with the real env's own success); 'reconstructed', "
                             "its frames through the learned simulator's tokenizer (encode, decode), so both "
                             "simulators are judged at the same image quality")
    parser.add_argument("--max-steps", type=at_least(1), default=20, help="chunks (of 5 simulator steps) per rollout")
    parser.add_argument("--noise", type=number_list(0.0), default="0,10,25,50", help="pixel-expert noise levels (px)")
    parser.add_argument("--policy", action="append", default=[], metavar="MODULE:NAME",
                        help="your policy (repeatable): a callable image -> action or a SIMPLER-style object")
    parser.add_argument("--family", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the built-in PushT policy family (pixel expert at --noise levels, random)")
    parser.add_argument("--success", default="any", choices=("any", "final"),
                        help="success at any step of a rollout or at its final frame")
    parser.add_argument("--success-coverage", type=open_fraction, default=0.8,
                        help="success = goal coverage above this, in both simulators (gym-pusht's own bar is 0.95, "
                             "which the frame judge cannot read reliably at 64x64; its precision and recall of "
                             "success by bar: benchmarks/results/pusht_success_judge.md)")
    parser.add_argument("--temperature", type=real_at_least(0.0), default=0.0,
                        help="world-model sampling temperature (0: greedy)")
    parser.add_argument("--seed", type=at_least(0), default=0, help="seed of the starts and the policies")
    parser.add_argument("--threads", type=at_least(1), default=None, help="torch threads (None: torch's default)")
    parser.add_argument("--on-policy-error", default="record", choices=ON_POLICY_ERROR,
                        help="a policy that raises or returns no action: 'record' the rollout as failed (said in "
                             "one line, kept in results.json) and go on, 'skip' the policy, or 'stop' (the finished "
                             "rollouts stay in OUT/rollouts.jsonl; rerun to resume)")
    parser.add_argument("--out", type=output_dir, required=True,
                        help="output folder (results.json, gifs/, rollouts.jsonl: each finished rollout, which a "
                             "rerun of the same command resumes from)")
    from rlvr_envs.core.device import add_device_argument

    add_device_argument(parser)  # last: recorded commands keep their order
    parser.set_defaults(func=run, check=check)


def check(args: argparse.Namespace) -> None:
    """What argparse types cannot see, before any model loads: the --policy specs, and that some policy runs."""
    from rlvr_envs.policy_eval.policies import load_policy

    for spec in args.policy:
        load_policy(spec)  # a bad spec raises ValueError naming it
    if not args.policy and not args.family:
        raise ValueError("no policy to run: give --policy MODULE:NAME or keep --family")


def real2sim_starts(episodes, count: int, lead: int, seed: int = 0, history: int = 1,
                    frame_skip: int = 5, success_coverage: float | None = None) -> list[dict[str, np.ndarray]]:
    """`count` starts, `lead` steps before the end of (successful first) held-out episodes, or with
    `success_coverage`, `lead` steps before the step an episode's block first covers the goal past
    that bar (its end if it never does): a start from the end of a successful episode has its block
    at or past the bar already, where success measures whether a policy leaves it there.

    Each start is reset options both simulators read: "physics" (the state at the start, for
    the real one) and, with `history` > 1, "frames" and "actions": the `history` recorded frames
    `frame_skip` steps apart that end at the start and the action chunks between them (the
    learned one's context; it takes them over the physics). Episodes whose block has left the
    arena by then are passed over (`block_in_arena`): no policy can act on a block out of
    the frame, and a learned simulator cannot see one."""
    from rlvr_envs.core.errors import DataError
    from rlvr_envs.video.pusht.physics import block_in_arena

    rng = np.random.default_rng(seed)
    back = (history - 1) * frame_skip

    def anchor(episode) -> int:
        """The step `lead` counts back from (the episode records the env's coverage at every step)."""
        passed = np.flatnonzero(np.asarray(episode.coverage) > success_coverage) if success_coverage is not None else []
        return int(passed[0]) if len(passed) else len(episode.physics) - 1

    anchors = [anchor(episode) for episode in episodes]

    def start_step(i: int, extra: int) -> int:
        return max(back, anchors[i] - lead - extra)

    usable = [i for i, episode in enumerate(episodes)
              if block_in_arena(np.asarray(episode.physics)[start_step(i, 0)])]
    if not usable:
        anchor_name = "its end" if success_coverage is None else "its block first passes the bar"
        raise DataError(f"none of the {len(episodes)} held-out episodes has its block inside the arena "
                        f"{lead} steps before {anchor_name}")
    ordered = sorted(usable, key=lambda i: (not episodes[i].success, i))
    starts = []
    for k in range(count):
        i = ordered[k % len(ordered)]
        episode = episodes[i]
        physics = np.asarray(episode.physics)
        t = start_step(i, int(rng.integers(0, 10)) * (k >= len(ordered)))
        if not block_in_arena(physics[t]):  # an earlier step of a repeated episode may have it out
            t = start_step(i, 0)
        start = {"physics": physics[t].copy()}
        if history > 1:
            start["frames"] = np.asarray(episode.frames)[t - back:t + 1:frame_skip].copy()
            start["actions"] = np.asarray(episode.actions)[t - back:t].reshape(history - 1, frame_skip, 2).copy()
        starts.append(start)
    return starts


def run(args: argparse.Namespace) -> int:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.core.records import recorded_command
    from rlvr_envs.policy_eval.policies import load_policy, pusht_policy_family
    from rlvr_envs.policy_eval.real2sim import PolicyError, evaluate
    from rlvr_envs.simulators import LearnedPushTSim, PushTChunkEnv
    from rlvr_envs.video.gif import save_gif
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import embedded_heldout_dir

    from rlvr_envs.core.device import setup_device

    try:
        mine = [load_policy(spec) for spec in args.policy]
    except ValueError as exc:
        raise SystemExit(f"rlvr-world policy-eval: error: {exc}") from None
    noise = args.noise if isinstance(args.noise, tuple) else number_list(0.0)(args.noise)  # a caller may pass text
    family = pusht_policy_family(list(noise), seed=args.seed) if args.family else []
    policies = family + mine
    if not policies:
        raise SystemExit("rlvr-world policy-eval: error: no policy to run: give --policy MODULE:NAME or keep --family")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = str(setup_device(args.device).device)  # the learned simulator's model and tokenizer run there
    data = args.data or embedded_heldout_dir(args.heldout_episodes, 64)
    episodes = list(PushTEpisodeDataset(data))
    learned = LearnedPushTSim(args.model or str(DEFAULT_MODEL), args.tokenizer, temperature=args.temperature,
                              reward="none", device=device)
    starts = real2sim_starts(episodes, args.starts, args.lead, args.seed,
                             history=learned.history if args.start_from == "history" else 1,
                             frame_skip=learned.frame_skip,
                             success_coverage=args.success_coverage if args.lead_from == "success" else None)
    real = PushTChunkEnv(resolution=learned.resolution[0])
    view = learned.reconstruct if args.judge_frames == "reconstructed" else None
    out = Path(args.out)
    with OutputLock(out, recorded_command("rlvr-world policy-eval", args)):
        remove_stale_temporaries(out)
        log = RolloutLog(out / ROLLOUTS, args)
        pairs: dict[str, list] = {}

        def keep(rollout) -> None:  # saved as it finishes; the first start's pair as a GIF (real | learned)
            log.append(rollout)
            if rollout.frames is not None:
                pairs.setdefault(rollout.policy, []).append(rollout.frames)
                if len(pairs[rollout.policy]) == 2:
                    save_gif(out / "gifs" / f"{rollout.policy}.gif", pairs[rollout.policy][::-1])

        try:
            result = evaluate(policies, learned, real, starts, args.max_steps, args.success, record=1, progress=True,
                              success_coverage=args.success_coverage, view=view, on_policy_error=args.on_policy_error,
                              done=log.done, on_rollout=keep, warn=lambda line: tqdm.write(line, file=sys.stderr))
        except PolicyError as exc:
            print(f"rlvr-world policy-eval: error: {exc}; the {len(log.done) + log.added} finished rollouts are "
                  f"kept in {log.path}: fix the policy and rerun the same command to resume", file=sys.stderr)
            return 1
        finally:
            log.close()
        write_results(out, args, learned, data, view, result)
    report_table(result, starts)
    return 0


#: each finished rollout of a run, one JSON line, after a first line with the run's settings
ROLLOUTS = "rollouts.jsonl"
#: arguments that do not change a rollout (a rerun with other values resumes the same run)
NOT_RESULTS = ("out", "threads", "device", "on_policy_error", "func", "command", "check")


class RolloutLog:
    """`OUT/rollouts.jsonl`: the rollouts finished so far (`done`, read back when the file holds the
    same run's settings), each new one appended and flushed as it finishes, so an interrupted or
    failed run loses none. A file of other settings is refused in one line, never mixed in."""

    def __init__(self, path: Path, args: argparse.Namespace):
        from rlvr_envs.core.errors import DataError
        from rlvr_envs.core.files import loads_json
        from rlvr_envs.policy_eval.real2sim import Rollout

        self.path, self.added, self.done = path, 0, []
        settings = strict_json({k: v for k, v in sorted(vars(args).items()) if k not in NOT_RESULTS})
        settings = json.loads(json.dumps(settings, default=str))
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        if lines:
            first = loads_json(lines[0], f"{path}:1", "the rollout log's settings")
            before = first.get("settings") if isinstance(first, dict) else None
            if before != settings:
                changed = sorted(k for k in set(before or {}) | set(settings)
                                 if (before or {}).get(k) != settings.get(k))
                raise DataError(f"{path} holds the rollouts of a run with other settings ("
                                f"{', '.join('--' + k.replace('_', '-') for k in changed) or 'unreadable'}); rerun "
                                f"with those, or choose another --out")
            for number, line in enumerate(lines[1:], start=2):
                try:
                    rollout = Rollout(**json.loads(line))
                except (ValueError, TypeError):  # the last line of a killed run, half written
                    lines = lines[:number - 1]
                    break
                if rollout.error is None:  # a failed one is run again: its policy may be fixed by now
                    self.done.append(rollout)
        with atomic_writer(path, "w") as handle:  # rewritten whole: a half line of a killed run dropped
            handle.write("".join(line + "\n" for line in lines) if lines else
                         json.dumps({"settings": settings}) + "\n")
        self._handle = None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()

    def append(self, rollout) -> None:
        if self._handle is None:
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(json_line({k: v for k, v in vars(rollout).items() if k != "frames"}))
        self._handle.flush()
        self.added += 1


def write_results(out: Path, args: argparse.Namespace, learned, data, view, result: dict) -> None:
    """OUT/results.json: the run's settings, per-policy rows, summary and every rollout."""
    from rlvr_envs.core.records import recorded_command

    report = {"command": recorded_command("rlvr-world policy-eval", args),
              "model": learned.model_name, "time": time.strftime("%Y-%m-%d %H:%M"), "data": str(data),
              "start_from": args.start_from, "lead_from": args.lead_from, "judge_frames": args.judge_frames,
              "judge": f"frame judge (rlvr_envs.video.pusht.judge) in both simulators, success = judged "
                       f"coverage > {args.success_coverage}"
                       + (", real frames read through the learned simulator's tokenizer" if view else "")
                       + "; real_env_success is the real env's own coverage over the same bar",
              "policies": result["policies"], "summary": result["summary"],
              "rollouts": [{k: v for k, v in vars(r).items() if k != "frames"} for r in result["rollouts"]]}
    with atomic_writer(out / "results.json", "w") as handle:
        handle.write(json.dumps(strict_json(report), indent=2, default=float) + "\n")  # NaN: null


def report_table(result: dict, starts: list) -> None:
    """The per-policy table, the metrics and the probes' sentences, printed."""
    from rlvr_envs.policy_eval.real2sim import metric_text, probe_sentences

    print(f"{'policy':<20} {'learned':>8} {'real':>8} {'real env':>9}")
    for row in result["policies"]:
        print(f"{row['policy']:<20} {row['learned_success']:>8.2f} {row['real_success']:>8.2f} "
              f"{row['real_env_success']:>9.2f}")
    s = result["summary"]
    print(f"Pearson {metric_text(s, 'pearson')}  MMRV {metric_text(s, 'mmrv')}  (learned sim vs real, "
          f"{len(starts)} starts; in brackets the 95% range when the starts are drawn again)")
    for sentence in probe_sentences(s):
        print(sentence)
    if s.get("pearson_undefined"):
        print(f"Pearson is undefined: {s['pearson_undefined']}")
