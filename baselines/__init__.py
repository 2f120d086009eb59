"""The baselines the results compare against, each in one home (a checkout folder, like trainers/).

- `baselines.video`: copying the last history frame (as tokens the world model could emit,
  and in pixels) and the tokenizer's ceiling (the gold codes decoded);
- `baselines.text`: the "nothing changes" answer, right on every unchanged transition;

Used by the demo (`trainers.demo`, `trainers.demo_text`), the trainers' held-out reports and
the benchmarks. Baselines that the library's own commands compare against stay in the
library, where those commands can reach them: the random and blind-CEM planners
(`rlvr_envs.planning.cem`, for `rlvr-world plan`) and the web policy alone
(`rlvr_envs.web.agent` with `world_model=None`).
"""
