"""Policy evaluation in learned simulators (Real2Sim), judged automatically (PushT success is read
from frames by `rlvr_envs.video.pusht.judge`).

- `metrics`: SIMPLER's `pearson(sim=, real=)` and `mmrv(sim=, real=)`;
- `policies`: one adapter for callables, SIMPLER-style objects and SB3 models, and a PushT
  policy family of graded quality;
- `real2sim`: run policies in the learned and the real simulator from the same starts.
"""

from rlvr_envs.policy_eval.metrics import mmrv, pearson

__all__ = ["mmrv", "pearson"]
