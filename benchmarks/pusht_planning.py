"""PushT CEM planning success: learned simulators (base, RLVR) vs random and the true simulator.

Same arguments as `rlvr-world plan` (see `rlvr_envs.planning.command`); results go to
benchmarks/results/pusht_planning/ by default. A CPU-sized budget, every planner the same:

    python -m benchmarks.pusht_planning --planners base,rlvr,random,true_sim \
        --rlvr-model runs/grpo_pusht/final --episodes 50 --horizon 5 --samples 32 --top-k 4 \
        --iterations 3 --rounds 2 --threads 2

DINO-WM's budget (horizon 5, 300 samples, top 30, 30 iterations) is the default when the
budget flags are left out (a GPU's worth of rollouts).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "pusht_planning"


def main(argv=None) -> int:
    from rlvr_envs.planning.command import add_arguments

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--out" not in argv:
        argv += ["--out", str(RESULTS)]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
