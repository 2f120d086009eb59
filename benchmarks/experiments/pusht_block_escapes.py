"""How often each PushT data policy pushes the block out of the arena, with and without re-seating.

gym-pusht's agent is a kinematic body, which its walls do not stop: pushing the block against a
wall can squeeze it through, out of the frame (`rlvr_envs.video.pusht.physics.block_in_arena`).
The data generator re-seats the exact state in a fresh physics space before every step
(`reseat_each_step`, so a recorded state plus an action always gives the same next state); the
fresh space also drops the contact history the solver builds up against a wall, which may
change how often that happens. This measures it on the generator's own episodes, per policy:
the share of episodes that end with the block out and the share of recorded steps that show it
out (frames with no block a world model trains on, before `rlvr-world data pusht` ended
episodes there; `--keep-escaped-blocks` still records them).

    python -m benchmarks.experiments.pusht_block_escapes --episodes 20 --out benchmarks/results/pusht_block_escapes.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from rlvr_envs.core.arguments import at_least
from rlvr_envs.core.files import write_json_atomic
from rlvr_envs.core.records import recorded_command


def measure(policy: str, episodes: int, reseat: bool, max_steps: int, seed: int) -> dict:
    """Escape counts over `episodes` generator episodes of `policy` alone."""
    from rlvr_envs.video.pusht import PushTGenerationConfig
    from rlvr_envs.video.pusht.episodes import PushTGenerator
    from rlvr_envs.video.pusht.physics import block_in_arena

    config = PushTGenerationConfig(episodes=episodes, resolution=16, seed=seed, max_steps=max_steps,
                                   policy_weights={policy: 1.0}, reseat_each_step=reseat,
                                   end_when_block_leaves=False)  # what happens after an escape is what it counts
    generator = PushTGenerator(config)
    ended_out = steps = steps_out = 0
    try:
        for index in range(episodes):
            inside = [block_in_arena(row) for row in generator.episode(index).physics]
            ended_out += not inside[-1]
            steps += len(inside)
            steps_out += inside.count(False)
    finally:
        generator.close()
    return {"policy": policy, "reseat_each_step": reseat, "episodes": episodes,
            "episodes_ending_out": ended_out, "steps": steps, "steps_out": steps_out,
            "share_of_steps_out": steps_out / steps}


def main(argv: list[str] | None = None) -> int:
    from rlvr_envs.video.pusht.policies import POLICIES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", default="expert,random,replay,cem,handoff,sweep",
                        help=f"comma-separated, among {', '.join(POLICIES)}")
    parser.add_argument("--episodes", type=at_least(1), default=20, help="episodes per policy and setting")
    parser.add_argument("--max-steps", type=at_least(1), default=300, help="steps per episode (gym-pusht's 300)")
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    policies = [name.strip() for name in args.policies.split(",") if name.strip()]
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown or not policies:
        parser.error(f"--policies: unknown {unknown}; choose among {', '.join(POLICIES)}")
    began = time.perf_counter()
    rows = []
    for policy in policies:
        for reseat in (True, False):
            row = measure(policy, args.episodes, reseat, args.max_steps, args.seed)
            rows.append(row)
            print(f"{policy:8s} reseat={str(reseat):5s}  episodes ending out {row['episodes_ending_out']:3d}/"
                  f"{row['episodes']}  steps out {row['share_of_steps_out']:.1%}", flush=True)
    result = {"command": recorded_command("python -m benchmarks.experiments.pusht_block_escapes", args),
              "time": time.strftime("%Y-%m-%d %H:%M"), "rows": rows, "seconds": time.perf_counter() - began}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
