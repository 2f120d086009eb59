"""Real2Sim: run policies in a learned simulator and in the real one from the same starts.

`evaluate(policies, learned, real, starts)` runs every policy from every start state in
both simulators (chunk envs with the same interface: `LearnedPushTSim`, `PushTChunkEnv`),
for `max_steps` chunks each, and judges success the same way in both: the frame judge
(`video.pusht.judge`) on the frames the simulator shows, success = judged coverage >
`success_coverage` (gym-pusht's 0.95 by default; 0.8 is the bar the judge reads reliably at
64x64) at any frame (`success="any"`) or at the final frame (`"final"`, the paper's human
judge looked at the final frame). The real simulator's own success (its physics' coverage
over the same bar) is reported beside the judged one. Then SIMPLER's `pearson` and `mmrv` of learned-sim vs real success rates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlvr_envs.policy_eval.metrics import mmrv, pearson, pearson_undefined_reason
from rlvr_envs.policy_eval.policies import Policy, as_policy
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


def run_policy(env, policy: Policy, start_physics: np.ndarray, max_steps: int, success: str = "any",
               record: bool = False, instruction: str = "push the T onto the goal",
               success_coverage: float = SUCCESS_COVERAGE) -> Rollout:
    """One rollout of `policy` in `env` from `start_physics`, judged from frames."""
    from rlvr_envs.video.pusht.judge import judge_frame

    if success not in SUCCESS_RULES:
        raise ValueError(f"success must be one of {SUCCESS_RULES}, got {success!r}")
    policy.reset(instruction)
    frame, info = env.reset(options={"physics": start_physics})
    frames = [frame]
    judged_any, env_any, steps, coverage = False, None, 0, 0.0
    for steps in range(1, max_steps + 1):
        frame, _, _, _, info = env.step(policy.act(frame))
        frames.append(frame)
        judged = judge_frame(frame, success_coverage)
        judged_any |= judged.success
        coverage = judged.coverage
        if "physics" in info:
            env_any = bool(env_any) or bool(info["coverage"] > success_coverage)
        if success == "any" and judged.success:
            break
    final = judge_frame(frames[-1], success_coverage).success
    return Rollout(policy.name, type(env).__name__, -1, judged_any if success == "any" else final,
                   env_any if success == "any" or env_any is None else bool(info["coverage"] > success_coverage),
                   steps,
                   coverage, dict(info.get("actions", {})), np.stack(frames) if record else None)


def evaluate(policies: Sequence[Any], learned, real, starts: Sequence[np.ndarray], max_steps: int = 20,
             success: str = "any", record: int = 0, progress: bool = False,
             success_coverage: float = SUCCESS_COVERAGE) -> dict[str, Any]:
    """Per-policy success in both simulators and SIMPLER's metrics (learned vs real).

    `record`: keep frames of the first `record` starts per policy (for GIFs)."""
    from tqdm.auto import tqdm

    adapted = [as_policy(p) for p in policies]
    rows, rollouts = [], []
    bar = tqdm(total=len(adapted) * len(starts) * 2, desc="real2sim", disable=not progress)
    began = time.perf_counter()
    for policy in adapted:
        per = {"learned": [], "real": [], "real_env": []}
        for s, start in enumerate(starts):
            for name, env in (("learned", learned), ("real", real)):
                r = run_policy(env, policy, start, max_steps, success, record=s < record,
                               success_coverage=success_coverage)
                r.start = s
                rollouts.append(r)
                per[name].append(r.judged_success)
                if name == "real":
                    per["real_env"].append(bool(r.env_success))
                bar.update(1)
        rows.append({"policy": policy.name, "learned_success": float(np.mean(per["learned"])),
                     "real_success": float(np.mean(per["real"])),
                     "real_env_success": float(np.mean(per["real_env"])), "starts": len(starts)})
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
        "seconds": time.perf_counter() - began,
    }
    return {"policies": rows, "summary": summary, "rollouts": rollouts}
