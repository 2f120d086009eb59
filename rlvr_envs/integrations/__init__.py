"""Thin adapters from the suite's tasks to RL training libraries.

- `rlvr_envs.integrations.trl`: a TRL reward function and prompt dataset from any env id
  (the task behind an id: `rlvr_envs.registration.task_from_env_id`).
- `rlvr_envs.integrations.verl`: verl's `compute_score` and its dataset rows.
- `rlvr_envs.integrations.hf`: greedy generation and held-out accuracy (overall, changed,
  unchanged) of any Hugging Face causal LM on a text task; the trainers' evaluation.

SB3 needs no adapter: it runs on `gym.make(id, mode="token")` directly (`trainers/sb3_ppo.py`).
Not a domain: these modules may import every domain, and nothing in the package imports them.
"""

