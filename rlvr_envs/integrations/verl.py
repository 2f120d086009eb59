"""verl adapter: `compute_score` for verl's rule-based reward managers, and the dataset rows.

Write the rows once, then point verl at this module's `compute_score`:

    from rlvr_envs.integrations.verl import write_parquet
    write_parquet("data/mtw_train.parquet", "RLVRWorld/MiniTextWorld-v0", split="train")
    write_parquet("data/mtw_test.parquet", "RLVRWorld/MiniTextWorld-v0", split="test")

    python -m verl.trainer.main_ppo data.train_files=data/mtw_train.parquet ... \\
        custom_reward_function.path=<site-packages>/rlvr_envs/integrations/verl.py \\
        custom_reward_function.name=compute_score

Row format (one per transition; verl's usual columns):

    {"data_source": "RLVRWorld/MiniTextWorld-v0",            # the env id: which task scores it
     "prompt": [{"role": "user", "content": <task.prompt_text(i)>}],
     "ability": "world_model",
     "reward_model": {"style": "rule",
                      "ground_truth": '{"index": i, "uid": "...", "env_kwargs": {"split": "train"}}'},
     "extra_info": {"index": i, "uid": "...", "split": "train", "env_kwargs": '{"split": "train"}'}}

`ground_truth` is a JSON locator, not the gold text: the verifier needs the transition
(its current state, for rebuilding the predicted next state), which the gold text alone
does not give. `extra_info` repeats it in verl's usual fields (older verl versions do not
pass `extra_info`; the locator in `ground_truth` is enough). `env_kwargs` are the
`gym.make` arguments the rows were built with, so `compute_score` rebuilds the same task
(cached, once per process). verl renders `prompt` with the tokenizer's chat template: a
base model without one (our small from-scratch models) needs one set, or a raw-prompt
dataset of verl's own.

`compute_score` returns a dict: `score` (the verified reward) plus `max_reward`, `parsed`,
`solved`, `failed` and every metric component as floats (verl logs the extra keys). It
never raises: a row it cannot score gets the task's `min_reward` (0 when the task itself
cannot be built) with `failed=1`, counted in `FAILURES` and logged.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr_envs.registration import task_from_env_id
from rlvr_envs.integrations.trl import solved

logger = logging.getLogger(__name__)

ABILITY = "world_model"
#: rows scored at the minimum because they could not be verified, per data source (this process)
FAILURES: Counter[str] = Counter()


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (str, bytes)):
        decoded = json.loads(value)
        if not isinstance(decoded, dict):
            raise ValueError(f"{what} is JSON but not an object: {value!r:.80}")
        return decoded
    raise TypeError(f"{what} must be a dict or a JSON object string, got {type(value).__name__}")


def locate(ground_truth: Any, extra_info: Any = None) -> tuple[int, str | None, dict[str, Any]]:
    """(transition index, uid or None, env kwargs) from a row's `ground_truth` / `extra_info`."""
    info = _as_dict(extra_info, "extra_info")
    try:
        locator = _as_dict(ground_truth, "ground_truth")
    except (ValueError, TypeError):
        locator = {}  # a plain-text ground truth: the locator must then be in extra_info
    merged = {**{k: v for k, v in info.items() if v is not None}, **locator}
    if "index" not in merged:
        raise KeyError("neither ground_truth nor extra_info holds the transition 'index' "
                       "(write rows with rlvr_envs.integrations.verl.rows)")
    return int(merged["index"]), merged.get("uid"), _as_dict(merged.get("env_kwargs"), "env_kwargs")


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> dict[str, float]:
    """verl's reward-function signature: the verified reward of `solution_str` (see module doc)."""
    task = None
    try:
        index, uid, env_kwargs = locate(ground_truth, extra_info)
        task = task_from_env_id(data_source, **env_kwargs)
        if not hasattr(task, "verify_text"):
            raise TypeError(f"{data_source} is a token task (modality {task.modality!r}); verl scores text")
        if not 0 <= index < len(task):
            raise IndexError(f"transition index {index} outside the task's {len(task)} transitions")
        if uid is not None and uid != task.transition(index).uid:
            raise ValueError(f"row uid {uid!r} is not transition {index} ({task.transition(index).uid!r}): "
                             f"the rows were written with other env arguments")
        result = task.verify_text([index], [str(solution_str)])[0]
        if not math.isfinite(float(result.reward)):
            raise ValueError(f"the verifier returned a non-finite reward {result.reward!r}")
    except Exception as exc:
        FAILURES[str(data_source)] += 1
        logger.warning("compute_score failed for %s (scored the minimum): %s: %s", data_source,
                       type(exc).__name__, exc)
        low = float(getattr(task, "min_reward", 0.0))
        out = {"score": low, "max_reward": float("nan"), "parsed": 0.0, "solved": 0.0, "failed": 1.0}
        out.update({k: 0.0 for k in getattr(task, "metric_keys", ())})
        return out
    out = {"score": float(result.reward), "max_reward": float(result.max_reward), "parsed": float(result.parsed),
           "solved": float(solved(result)), "failed": 0.0}
    out.update({k: float(v) for k, v in result.metrics.items() if isinstance(v, (int, float))})
    return out


def rows(env_id: str, split: str | None = None, indices: Sequence[int] | None = None,
         **env_kwargs: Any) -> list[dict[str, Any]]:
    """verl dataset rows for the transitions of `gym.make(env_id, split=split, **env_kwargs)`."""
    if split is not None:
        env_kwargs["split"] = split
    task = task_from_env_id(env_id, **env_kwargs)
    if not hasattr(task, "prompt_text"):
        raise TypeError(f"{env_id} is a token task (modality {task.modality!r}); verl rows need text prompts")
    kwargs_json = json.dumps(env_kwargs, sort_keys=True)
    out = []
    for i in (range(len(task)) if indices is None else indices):
        uid = task.transition(int(i)).uid
        locator = json.dumps({"index": int(i), "uid": uid, "env_kwargs": env_kwargs}, sort_keys=True)
        out.append({"data_source": env_id,
                    "prompt": [{"role": "user", "content": task.prompt_text(int(i))}],
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": locator},
                    "extra_info": {"index": int(i), "uid": uid, "split": str(env_kwargs.get("split", "")),
                                   "env_kwargs": kwargs_json}})
    return out


def write_parquet(path: str | Path, env_id: str, split: str | None = None, **env_kwargs: Any) -> Path:
    """Write `rows(env_id, split, **env_kwargs)` as a parquet file verl reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows(env_id, split, **env_kwargs)), path)
    return path
