"""Real2Sim: run policies in a learned simulator and in the real one from the same starts.

`evaluate(policies, learned, real, starts)` runs every policy from every start (a physics
state, or `start_options`: the state and the recorded history that led to it) in both
simulators (chunk envs with the same interface: `LearnedPushTSim`, `PushTChunkEnv`), for
`max_steps` chunks each, and judges success the same way in both: the frame judge
(`video.pusht.judge`) on the frames the simulator shows, success = judged coverage >
`success_coverage` (gym-pusht's 0.95 by default; 0.8 is the bar the judge reads reliably at
64x64) at any frame (`success="any"`) or at the final frame (`"final"`, the paper's human
judge looked at the final frame). The real simulator's own success (its physics' coverage
over the same bar) is reported beside the judged one. Then SIMPLER's `pearson` and `mmrv` of
learned-sim vs real success rates, each with a 95% interval when the starts are drawn again
(`start_intervals`): with seven policies and ten starts the Pearson moves a lot with the starts.

The learned simulator shows frames decoded from a tokenizer's codes, whose blur alone moves the
judge's reading (near the goal the shipped tokenizer's round trip raises judged coverage by
about 0.06). `view` (frame -> the frame the judge reads) judges every frame that did not come
from the model (the real simulator's, and the start frame) through the same round trip
(`LearnedPushTSim.reconstruct`): like for like, at the price of a real column that agrees less
with the real env's own success.

Two probes say why a ranking fails. `standing_still`: with the agent standing still nothing
touches the block, so its judged coverage must not change; a simulator that moves the block
anyway (or whose frames the judge reads as nearer the goal) credits every policy with successes
it did not earn. `agent_following`: how far the agent moves when sent a given distance; a
simulator whose agent lags cannot show the pushes that knock the block off the goal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlvr_envs.policy_eval.metrics import RANK_METRICS, mmrv, pearson, pearson_undefined_reason, start_interval
from rlvr_envs.policy_eval.policies import Policy, _error_line, as_policy
from rlvr_envs.video.pusht.physics import SUCCESS_COVERAGE

SUCCESS_RULES = ("any", "final")


@dataclass
class Rollout:
    policy: str
    simulator: str
    start: int
    judged_success: bool
    env_success: bool | None  #: the real env's own success (None in the learned simulator)
    steps: int
    final_coverage: float
    action_counts: dict[str, int]
    frames: np.ndarray | None = field(default=None, repr=False)
    error: str | None = None  #: why the policy failed this rollout (it then counts as no success)


#: what `evaluate` does when a policy raises or returns something that is not an action
ON_POLICY_ERROR = ("record", "skip", "stop")


class PolicyError(Exception):
    """A policy raised, or returned something that is not an action; the message names the policy,
    the start and the error in one line."""


def start_options(start: Any) -> dict[str, Any]:
    """A start as reset options: a physics state, or a dict with "physics" and optionally a recorded
    "frames"/"actions" history (the learned simulator takes the history, the real one the physics)."""
    options = dict(start) if isinstance(start, dict) else {"physics": start}
    if options.get("physics") is None:
        raise ValueError("a start needs its physics state (the real simulator starts from it)")
    return options


def seen(frame: np.ndarray, view: Callable | None) -> np.ndarray:
    """The frame the judge reads: `view(frame)`, or the frame itself."""
    return frame if view is None else view(frame)


def run_policy(env, policy: Policy, start: Any, max_steps: int, success: str = "any",
               record: bool = False, instruction: str = "push the T onto the goal",
               success_coverage: float = SUCCESS_COVERAGE, view: Callable | None = None) -> Rollout:
    """One rollout of `policy` in `env` from `start` (see `start_options`), judged from frames
    (through `view` when given: frame -> the frame the judge reads). With `success="any"` it stops
    at the judged success, or in the real simulator once both the judge and its physics have seen one."""
    from rlvr_envs.video.pusht.judge import judge_frame

    if success not in SUCCESS_RULES:
        raise ValueError(f"success must be one of {SUCCESS_RULES}, got {success!r}")
    try:
        policy.reset(instruction)
    except Exception as exc:
        raise PolicyError(f"policy {policy.name}: reset raised {_error_line(exc)}") from None
    frame, info = env.reset(options=start_options(start))
    frames = [frame]
    judged = judge_frame(seen(frame, view), success_coverage) if max_steps < 1 else None  # else: each step's
    judged_any, env_any, steps, coverage = False, None, 0, 0.0
    for steps in range(1, max_steps + 1):
        try:
            action = policy.act(frame)
        except Exception as exc:
            raise PolicyError(f"policy {policy.name} raised {_error_line(exc)} at chunk {steps}") from None
        try:
            frame, _, _, _, info = env.step(action)
        except (TypeError, ValueError) as exc:  # the env's checks of the action: not an action
            raise PolicyError(f"policy {policy.name} returned {type(action).__name__}, not an action, at chunk "
                              f"{steps} ({_error_line(exc)})") from None
        frames.append(frame)
        judged = judge_frame(seen(frame, view), success_coverage)
        judged_any |= judged.success
        coverage = judged.coverage
        if "physics" in info:
            env_any = bool(env_any) or bool(info["coverage"] > success_coverage)
        if success == "any" and judged_any and env_any is not False:  # the real env: until its own success too
            break
    final = judged.success  # the last frame's, judged in the loop
    return Rollout(policy.name, type(env).__name__, -1, judged_any if success == "any" else final,
                   env_any if success == "any" or env_any is None else bool(info["coverage"] > success_coverage),
                   steps,
                   coverage, dict(info.get("actions", {})), np.stack(frames) if record else None)


def standing_still(learned, real, starts: Sequence[Any], steps: int = 3,
                   success_coverage: float = SUCCESS_COVERAGE, view: Callable | None = None) -> dict[str, Any]:
    """Judged coverage after `steps` chunks of the agent standing still, in both simulators, from each start
    (`view` as in `evaluate`: the start frames and the real simulator's frames are read through it).

    Returns the mean change of judged coverage in each, `false_successes`: the starts whose
    learned rollout is judged a success at some frame while the real one is not, and (for a
    learned simulator with `reconstruct`, judged without a view) `reconstruction_coverage_change`:
    the part of the learned change already read from its tokenizer's reconstruction of the start
    frame, before anything is predicted."""
    from rlvr_envs.video.pusht.judge import judge_frame

    change = {"learned": [], "real": []}
    success = {"learned": [], "real": []}
    reread = []  # judged coverage of each start frame through the learned simulator's tokenizer, minus as shown
    for start in map(start_options, starts):
        still = np.tile(np.asarray(start["physics"][0:2], dtype=np.float32), (5, 1))  # every target at the agent
        for name, env in (("learned", learned), ("real", real)):
            frame, _ = env.reset(options=start)
            first = judge_frame(seen(frame, view), success_coverage).coverage
            if name == "learned" and view is None and hasattr(env, "reconstruct"):
                reread.append(judge_frame(env.reconstruct(frame), success_coverage).coverage - first)
            stepped = view if name == "real" else None
            judged = [judge_frame(seen(env.step(still)[0], stepped), success_coverage) for _ in range(steps)]
            change[name].append(judged[-1].coverage - first)
            success[name].append(any(j.success for j in judged))
    return {"steps": steps, "starts": len(starts),
            "learned_coverage_change": float(np.mean(change["learned"])),
            "real_coverage_change": float(np.mean(change["real"])),
            "false_successes": int(sum(a and not b for a, b in zip(success["learned"], success["real"]))),
            "reconstruction_coverage_change": float(np.mean(reread)) if reread else None}


def agent_following(learned, real, starts: Sequence[Any], distances: Sequence[float] = (30.0, 60.0, 120.0)
                    ) -> dict[str, Any]:
    """How far the agent moves in one chunk when sent `distances` pixels toward the arena's centre
    (where the goal is), in both simulators, read from their frames (`judge.agent_position`).

    A simulator whose agent lags the actions cannot show the pushes a policy makes: its block stays
    where the real agent would have knocked it. Returns the mean distance moved per target distance
    in each, over the starts where both frames show the agent."""
    from rlvr_envs.video.pusht.judge import agent_position
    from rlvr_envs.video.pusht.physics import ARENA_SIZE

    moved = {"learned": [[] for _ in distances], "real": [[] for _ in distances]}
    for start in map(start_options, starts):
        agent = np.asarray(start["physics"][0:2], dtype=np.float64)
        toward = np.full(2, ARENA_SIZE / 2) - agent
        toward = toward / np.linalg.norm(toward) if np.linalg.norm(toward) > 1.0 else np.array([1.0, 0.0])
        for k, distance in enumerate(distances):
            target = np.clip(agent + distance * toward, 0.0, ARENA_SIZE).astype(np.float32)
            seen_moves = {}
            for name, env in (("learned", learned), ("real", real)):
                before = agent_position(env.reset(options=start)[0])
                after = agent_position(env.step(np.tile(target, (5, 1)))[0])
                if before is not None and after is not None:
                    seen_moves[name] = float(np.linalg.norm(after - before))
            if len(seen_moves) == 2:
                for name, value in seen_moves.items():
                    moved[name][k].append(value)
    mean = {name: [float(np.mean(v)) if v else float("nan") for v in values] for name, values in moved.items()}
    return {"distances": [float(d) for d in distances], "learned_moved": mean["learned"], "real_moved": mean["real"],
            "starts": len(moved["real"][0]) if distances else 0}


def probe_sentences(summary: dict[str, Any]) -> list[str]:
    """What the `standing_still` and `agent_following` probes in an `evaluate` summary found, one
    sentence each (none for a probe the summary lacks: runs from before it existed)."""
    sentences = []
    still = summary.get("standing_still")
    if still:
        reread = still.get("reconstruction_coverage_change")
        sentences.append(
            f"Agent standing still for {still['steps']} chunks: judged coverage "
            f"{still['learned_coverage_change']:+.3f} in the learned simulator"
            + ("" if reread is None else f" ({reread:+.3f} already in its tokenizer's reconstruction of the start frame)")
            + f", {still['real_coverage_change']:+.3f} in the real one; judged a success in the learned one only from "
            f"{still['false_successes']} of {still['starts']} starts.")
    follow = summary.get("agent_following")
    if follow:
        sentences.append(
            f"Agent sent {'/'.join(f'{d:g}' for d in follow['distances'])} px toward the centre: moved "
            f"{'/'.join(f'{m:.0f}' for m in follow['learned_moved'])} px in the learned simulator, "
            f"{'/'.join(f'{m:.0f}' for m in follow['real_moved'])} px in the real one ({follow['starts']} starts).")
    return sentences


def success_matrices(rollouts: Sequence[Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(policies, learned, real): judged successes as [policies, starts] arrays, from `Rollout`s or
    their dicts (as in a results.json); the learned simulator's are the ones without the real
    env's own success."""
    get = (lambda r, k: r[k]) if rollouts and isinstance(rollouts[0], dict) else getattr
    policies = list(dict.fromkeys(get(r, "policy") for r in rollouts))
    starts = 1 + max((get(r, "start") for r in rollouts), default=-1)
    success = {"learned": np.zeros((len(policies), starts)), "real": np.zeros((len(policies), starts))}
    for r in rollouts:
        side = "learned" if get(r, "env_success") is None else "real"
        success[side][policies.index(get(r, "policy")), get(r, "start")] = get(r, "judged_success")
    return policies, success["learned"], success["real"]


def start_intervals(rollouts: Sequence[Any]) -> dict[str, list[float]]:
    """95% intervals of the Pearson and the MMRV when the starts are drawn again (`start_interval`)."""
    policies, learned, real = success_matrices(rollouts)
    if len(policies) < 2:
        return {}
    return {f"{name}_interval": list(start_interval(metric, sim=learned, real=real))
            for name, metric in RANK_METRICS.items()}


def metric_text(summary: dict[str, Any], name: str) -> str:
    """A summary's 'pearson' or 'mmrv' with its interval over starts, e.g. '0.840 (0.41 to 0.97)'."""
    value, interval = summary.get(name), summary.get(f"{name}_interval") or ()
    text = "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"
    if len(interval) == 2 and None not in interval and np.isfinite(interval).all():
        text += f" ({interval[0]:.2f} to {interval[1]:.2f})"
    return text


def evaluate(policies: Sequence[Any], learned, real, starts: Sequence[Any], max_steps: int = 20,
             success: str = "any", record: int = 0, progress: bool = False,
             success_coverage: float = SUCCESS_COVERAGE, view: Callable | None = None,
             on_policy_error: str = "record", done: Sequence[Rollout] = (),
             on_rollout: Callable[[Rollout], None] | None = None,
             warn: Callable[[str], None] = print) -> dict[str, Any]:
    """Per-policy success in both simulators and SIMPLER's metrics (learned vs real).

    `record`: keep frames of the first `record` starts per policy (for GIFs). `view`: frame ->
    the frame the judge reads, for the real simulator's frames (see the module docstring).
    `done`: rollouts an interrupted run finished, kept instead of run again; `on_rollout` gets
    each new one as it finishes (to save it). A policy that raises or returns junk (`PolicyError`)
    is one line to `warn`, then per `on_policy_error`: "record" it as a failed rollout (no success,
    its `error` said) and go on, "skip" the policy (left out of the ranking), or "stop" (raise)."""
    from tqdm.auto import tqdm

    if on_policy_error not in ON_POLICY_ERROR:
        raise ValueError(f"on_policy_error must be one of {ON_POLICY_ERROR}, got {on_policy_error!r}")
    adapted = [as_policy(p) for p in policies]
    finished = {(r.policy, r.simulator, r.start): r for r in done}
    rows, rollouts = [], []
    bar = tqdm(total=len(adapted) * len(starts) * 2, desc="real2sim", disable=not progress)
    began = time.perf_counter()
    for policy in adapted:
        per = {"learned": [], "real": [], "real_env": []}
        mine, skipped = [], False
        for s, start in enumerate(starts):
            for name, env in (("learned", learned), ("real", real)):
                r = finished.get((policy.name, type(env).__name__, s))
                if r is None:
                    try:
                        r = run_policy(env, policy, start, max_steps, success, record=s < record,
                                       success_coverage=success_coverage, view=view if name == "real" else None)
                    except PolicyError as exc:
                        message = f"{exc} from start {s} in the {name} simulator"
                        if on_policy_error == "stop":
                            bar.close()
                            raise PolicyError(message) from None
                        warn(f"{message}; " + ("its other rollouts are left out" if on_policy_error == "skip" else
                                               "counted as a failed rollout"))
                        if on_policy_error == "skip":
                            skipped = True
                            break
                        r = Rollout(policy.name, type(env).__name__, s, False, None if name == "learned" else False,
                                    0, float("nan"), {}, error=message)
                    r.start = s
                    if on_rollout is not None:
                        on_rollout(r)
                mine.append(r)
                per[name].append(r.judged_success)
                if name == "real":
                    per["real_env"].append(bool(r.env_success))
                bar.update(1)
            if skipped:
                break
        if skipped:
            continue
        rollouts.extend(mine)
        rows.append({"policy": policy.name, "learned_success": float(np.mean(per["learned"])),
                     "real_success": float(np.mean(per["real"])),
                     "real_env_success": float(np.mean(per["real_env"])), "starts": len(starts),
                     "failed_rollouts": sum(r.error is not None for r in mine)})
    bar.close()
    sim = [row["learned_success"] for row in rows]
    real_rates = [row["real_success"] for row in rows]
    env_rates = [row["real_env_success"] for row in rows]
    summary = {
        "pearson": pearson(sim=sim, real=real_rates) if len(rows) > 1 else float("nan"),
        "pearson_undefined": pearson_undefined_reason(sim=sim, real=real_rates),
        "mmrv": mmrv(sim=sim, real=real_rates) if len(rows) > 1 else float("nan"),
        "pearson_vs_env_success": pearson(sim=sim, real=env_rates) if len(rows) > 1 else float("nan"),
        "mmrv_vs_env_success": mmrv(sim=sim, real=env_rates) if len(rows) > 1 else float("nan"),
        "judge_vs_env_agreement": float(np.mean([r.judged_success == bool(r.env_success)
                                                 for r in rollouts if r.simulator != type(learned).__name__]
                                                or [np.nan])),
        "standing_still": standing_still(learned, real, starts, success_coverage=success_coverage, view=view),
        **start_intervals(rollouts),
        "agent_following": agent_following(learned, real, starts),
        "seconds": time.perf_counter() - began,
    }
    return {"policies": rows, "summary": summary, "rollouts": rollouts}
