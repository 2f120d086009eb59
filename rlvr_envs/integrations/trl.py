"""TRL adapter: a reward function and a prompt dataset built from any env id.

    from trl import GRPOConfig, GRPOTrainer
    from rlvr_envs.integrations.trl import prompt_dataset, reward_function

    reward = reward_function("RLVRWorld/MiniTextWorld-v0", split="train")
    trainer = GRPOTrainer(model="runs/sft/final", reward_funcs=reward,
                          train_dataset=prompt_dataset("RLVRWorld/MiniTextWorld-v0", split="train"),
                          processing_class=reward.task.tokenizer, args=GRPOConfig(...))

The dataset's `prompt` column is `task.prompt_text(i)` (TRL needs string prompts; the
task's tokenizer turns it back into exactly `task.prompt_ids(i)`), and its `index` column
is the transition; TRL hands every dataset column to reward functions as a keyword
argument, repeated for each completion of a group, so the reward function finds each
completion's transition by `index` (and checks `uid` when the column is there, so a
dataset built with other env arguments is caught, not silently mis-scored).

`ServedRollouts` is the other way round: a TRL `rollout_func` whose episodes run on a served env
(`rlvr-world serve ID`, the `[serve]` extra), scored on the token ids the model sampled.

Text tasks are verified from the completion strings (`task.verify_text`); token tasks
(video) from `completion_ids`. Every metric component goes to TRL's logs through the
`log_metric` hook TRL 1.16 passes to reward functions (averaged per logging step, across
processes), next to TRL's own `rewards/<name>/mean`. A reward function never raises: a
batch whose verification fails is retried one completion at a time, and whatever still
fails scores the task's `min_reward`, counted (`failures`) and logged.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Sequence
from typing import Any

from rlvr_envs.core.types import RewardResult
from rlvr_envs.registration import task_from_env_id

logger = logging.getLogger(__name__)

#: tolerance of "the response reached the transition's maximum reward"
SOLVED_TOL = 1e-9


def solved(result: RewardResult) -> bool:
    """True when the response scored its transition's maximum (the exact prediction)."""
    return result.parsed and result.reward >= result.max_reward - SOLVED_TOL


def _short_name(env_id: str) -> str:
    return env_id.split(":", 1)[-1].split("/", 1)[-1]


def _completion_text(completion: Any) -> str:
    """A completion as text: TRL passes strings, or message lists for conversational data."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


class RewardFunction:
    """A TRL reward function over one task: `(prompts, completions, completion_ids, **columns) -> rewards`.

    Arguments:
        env_id: a registered id (`RLVRWorld/...`).
        task: an already-built task (default: built from `env_id` and `env_kwargs`).
        index_column: the dataset column holding each prompt's transition index.
        use_ids: verify text tasks from `completion_ids` instead of the completion strings.
        **env_kwargs: the `gym.make` arguments of the task (must match the dataset's).

    State kept for the trainer (one process's view): `calls`, `samples`, `failures`
    (completions scored `min_reward` because verification raised), `errors` (the last 20
    failure messages) and `last` (the previous call's metric means, the record
    `log_metric` receives).
    """

    def __init__(self, env_id: str, task: Any = None, index_column: str = "index", use_ids: bool = False,
                 **env_kwargs: Any):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.task = task if task is not None else task_from_env_id(env_id, **env_kwargs)
        self.index_column = index_column
        self.use_ids = bool(use_ids) or not hasattr(self.task, "verify_text")
        #: TRL names the reward after this (`rewards/<name>/mean`); metrics go under `<name>/...`
        self.__name__ = _short_name(env_id)
        self.calls = 0
        self.samples = 0
        self.failures = 0
        self.errors: deque[str] = deque(maxlen=20)
        self.last: dict[str, float] = {}

    # -- verification ----------------------------------------------------------------------
    def _indices(self, columns: dict[str, Any], n: int) -> list[int]:
        if self.index_column not in columns:
            raise KeyError(f"no {self.index_column!r} column reached the reward function (columns: "
                           f"{sorted(k for k in columns if k not in ('trainer_state', 'log_metric', 'log_extra'))}); "
                           f"build the dataset with rlvr_envs.integrations.trl.prompt_dataset")
        indices = [int(i) for i in columns[self.index_column]]
        if len(indices) != n:
            raise ValueError(f"{len(indices)} indices for {n} completions")
        return indices

    def _check_row(self, index: int, uid: Any) -> None:
        if not 0 <= index < len(self.task):
            raise IndexError(f"transition index {index} outside the task's {len(self.task)} transitions")
        if uid is not None and uid != self.task.transition(index).uid:
            raise ValueError(f"dataset row uid {uid!r} is not transition {index} of this task "
                             f"({self.task.transition(index).uid!r}): the dataset and the reward function "
                             f"were built with different env arguments")

    def _verify(self, indices: list[int], completions: Sequence[Any] | None,
                completion_ids: Sequence[Sequence[int]] | None) -> list[RewardResult]:
        if self.use_ids:
            if completion_ids is None:
                raise ValueError(f"{self.__name__} verifies token ids, but no completion_ids were passed")
            results = self.task.verify(indices, [list(ids) for ids in completion_ids])
        else:
            results = self.task.verify_text(indices, [_completion_text(c) for c in completions])
        for result in results:
            if not math.isfinite(float(result.reward)):
                raise ValueError(f"the verifier returned a non-finite reward {result.reward!r}")
        return results

    def _fail(self, exc: BaseException, what: str) -> None:
        message = f"{what}: {type(exc).__name__}: {exc}"
        self.errors.append(message)
        logger.warning("%s reward function failed on %s (scored min_reward %s)", self.__name__, message,
                       self.task.min_reward)

    def score(self, columns: dict[str, Any], completions: Sequence[Any] | None,
              completion_ids: Sequence[Sequence[int]] | None) -> list[RewardResult | None]:
        """One result per completion; None where verification raised (counted in `failures`)."""
        n = len(completions) if completions is not None else len(completion_ids or ())
        results: list[RewardResult | None] = [None] * n
        try:
            indices = self._indices(columns, n)
        except Exception as exc:
            self._fail(exc, f"a batch of {n}")
            self.failures += n
            return results
        uids = columns.get("uid")
        rows = []
        for k, index in enumerate(indices):
            try:
                self._check_row(index, uids[k] if uids is not None and len(uids) == n else None)
                rows.append(k)
            except Exception as exc:
                self._fail(exc, f"row {k}")
                self.failures += 1

        def pick(values, ks):
            return None if values is None else [values[k] for k in ks]

        try:
            verified = self._verify([indices[k] for k in rows], pick(completions, rows), pick(completion_ids, rows))
            for k, result in zip(rows, verified, strict=True):
                results[k] = result
            return results
        except Exception as exc:
            self._fail(exc, f"a batch of {len(rows)} (retrying one by one)")
        for k in rows:
            try:
                results[k] = self._verify([indices[k]], pick(completions, [k]), pick(completion_ids, [k]))[0]
            except Exception as exc:
                self._fail(exc, f"transition {indices[k]}")
                self.failures += 1
        return results

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 completion_ids: Sequence[Sequence[int]] | None = None, **kwargs: Any) -> list[float]:
        results = self.score(kwargs, completions, completion_ids)
        self.calls += 1
        self.samples += len(results)
        rewards = [float(r.reward) if r is not None else float(self.task.min_reward) for r in results]
        self.last = self._record(results, rewards, kwargs)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for name, value in self.last.items():
                log_metric(f"{self.__name__}/{name}", value)
        return rewards

    # -- logging ---------------------------------------------------------------------------
    def _record(self, results: list[RewardResult | None], rewards: list[float], columns: dict[str, Any]) -> dict:
        n = max(len(results), 1)
        ok = [r for r in results if r is not None]
        record = {"failure_rate": (len(results) - len(ok)) / n,
                  "parsed": sum(r.parsed for r in ok) / n,
                  "solved": sum(solved(r) for r in ok) / n}
        changed = columns.get("changed")
        if changed is not None and len(changed) == len(results):
            for label, flag in (("changed", True), ("unchanged", False)):
                picked = [r for r, c in zip(results, changed) if c is not None and bool(c) == flag]
                if picked:
                    record[f"solved_{label}"] = sum(r is not None and solved(r) for r in picked) / len(picked)
        sums: dict[str, float] = {}
        for r in ok:
            for key, value in r.metrics.items():
                if isinstance(value, (int, float)) and math.isfinite(float(value)):
                    sums[key] = sums.get(key, 0.0) + float(value)
        record.update({f"metrics/{key}": total / len(ok) for key, total in sums.items()})
        return record


def reward_function(env_id: str, **env_kwargs: Any) -> RewardFunction:
    """A TRL reward function verifying completions of `env_id` (see `RewardFunction`)."""
    return RewardFunction(env_id, **env_kwargs)


def prompt_dataset(env_id: str, split: str | None = None, indices: Sequence[int] | None = None, task: Any = None,
                   **env_kwargs: Any):
    """A `datasets.Dataset` of the task's prompts: columns `prompt` (`task.prompt_text(i)`;
    token tasks get `prompt_ids` instead, since they have no text), `index`, `uid` and
    `changed` (None where the dataset cannot tell).

    `split` is passed to the task like any env argument (None: the task's default);
    `indices` picks and orders rows (repeats allowed, e.g. from `balanced_indices`).
    """
    from rlvr_envs.core.extras import needs_extra

    with needs_extra("prompt_dataset (a Hugging Face Dataset)", extra="train"):
        from datasets import Dataset

    if task is None:
        if split is not None:
            env_kwargs["split"] = split
        task = task_from_env_id(env_id, **env_kwargs)
    rows = list(range(len(task))) if indices is None else [int(i) for i in indices]
    columns: dict[str, list] = {}
    if hasattr(task, "prompt_text"):
        columns["prompt"] = [task.prompt_text(i) for i in rows]
    else:
        columns["prompt_ids"] = [task.prompt_ids(i).tolist() for i in rows]
    columns["index"] = rows
    columns["uid"] = [task.transition(i).uid for i in rows]
    columns["changed"] = [task.transition(i).changed for i in rows]
    return Dataset.from_dict(columns)


def changed_indices(task: Any) -> list[int]:
    """The transitions that change the state (`changed` is True), in order; an error if none do."""
    out = [i for i in range(len(task)) if task.transition(i).changed is True]
    if not out:
        raise ValueError("no transition of this task changes the state")
    return out


def unchanged_indices(task: Any) -> list[int]:
    """The transitions that leave the state as it was (`changed` is False), in order; an error if none do."""
    out = [i for i in range(len(task)) if task.transition(i).changed is False]
    if not out:
        raise ValueError("every transition of this task changes the state")
    return out


def balanced_indices(task: Any, seed: int = 0) -> list[int]:
    """Transition indices with as many changed as unchanged ones (RLVR-World balanced them):
    the smaller side is drawn again at random (seeded) until it matches the larger, then
    the list is shuffled. Transitions whose `changed` is None are kept once each."""
    import random

    changed = [i for i in range(len(task)) if task.transition(i).changed is True]
    unchanged = [i for i in range(len(task)) if task.transition(i).changed is False]
    unknown = [i for i in range(len(task)) if task.transition(i).changed is None]
    rng = random.Random(seed)
    small, large = sorted((changed, unchanged), key=len)
    if small:
        small = small + [rng.choice(small) for _ in range(len(large) - len(small))]
    out = small + large + unknown
    rng.shuffle(out)
    return out


class ServedRollouts:
    """A TRL `rollout_func` whose episodes run on a served env (`rlvr-world serve ID`), and the
    reward function that reads their rewards (`.reward`).

        rollouts = ServedRollouts("http://127.0.0.1:8000", dataset)   # dataset: prompt_dataset(ID, ...)
        trainer = GRPOTrainer(model=..., reward_funcs=rollouts.reward, rollout_func=rollouts, ...)

    For each prompt TRL hands over (its group's copies included), the trainer's model samples one
    completion from the prompt's token ids; then, in a session of the server (OpenEnv's client,
    `sessions` at once), the env resets onto the prompt's transition (`index` from the dataset),
    its prompt ids are checked against the trainer's (a server whose tokenizer differs is refused
    in one line, never scored), and the completion's token ids are the step's action: the reward
    is computed on exactly the ids the model sampled. Returns TRL's `prompt_ids`,
    `completion_ids` (up to and including EOS), `logprobs` (of the sampled tokens), plus
    `env_reward` and `env_metrics` for the reward function. `history` keeps each call's mean
    reward; `failures` counts episodes the server refused (scored `min_reward`).
    """

    def __init__(self, base_url: str, dataset: Any, sessions: int = 8, min_reward: float = 0.0,
                 message_timeout_s: float = 300.0):
        self.base_url = base_url
        self.index_of = {}
        for prompt, index in zip(dataset["prompt"], dataset["index"]):
            self.index_of.setdefault(prompt, int(index))
        self.sessions = max(1, int(sessions))
        self.min_reward = float(min_reward)
        self.message_timeout_s = message_timeout_s
        self.history: list[float] = []
        self.failures = 0
        self.errors: deque[str] = deque(maxlen=20)

    def _generate(self, prompt_ids: list[list[int]], trainer: Any) -> tuple[list[list[int]], list[list[float]]]:
        import torch

        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        eos = tokenizer.eos_token_id
        config = trainer.args
        sampling = {"do_sample": True, "temperature": float(config.temperature),
                    **({"top_k": int(config.top_k)} if getattr(config, "top_k", None) else {}),
                    **({"top_p": float(config.top_p)} if getattr(config, "top_p", None) not in (None, 1.0) else {})}
        completions, logprobs = [], []
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for ids in prompt_ids:
                    inputs = torch.tensor([ids], device=model.device)
                    out = model.generate(inputs, attention_mask=torch.ones_like(inputs),
                                         max_new_tokens=int(config.max_completion_length), output_scores=True,
                                         return_dict_in_generate=True,
                                         pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                                         else eos, **sampling)
                    sampled = out.sequences[0, len(ids):].tolist()
                    scores = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
                    end = sampled.index(eos) + 1 if eos in sampled else len(sampled)
                    completions.append(sampled[:end])
                    logprobs.append([float(x) for x in scores[:end].tolist()])
        finally:
            model.train(was_training)
        return completions, logprobs

    async def _episodes(self, episodes: list[tuple[int, list[int], list[int]]]) -> list[tuple[float, dict]]:
        import asyncio

        from openenv.core import GenericEnvClient

        results: list[tuple[float, dict] | None] = [None] * len(episodes)

        async def session(k: int) -> None:
            async with GenericEnvClient(base_url=self.base_url, message_timeout_s=self.message_timeout_s) as env:
                for e in range(k, len(episodes), self.sessions):
                    index, prompt_ids, completion = episodes[e]
                    try:
                        first = await env.reset(options={"index": index})
                        if first.observation.get("prompt_ids") != prompt_ids:
                            raise ValueError(f"the served env's prompt ids for transition {index} differ from the "
                                             f"trainer's tokenization of its prompt: serve the id with the model's "
                                             f"tokenizer (--env-kwargs tokenizer=<model dir>)")
                        result = await env.step({"tokens": completion})
                        results[e] = (float(result.reward), dict(result.observation.get("info", {})))
                    except (RuntimeError, ValueError) as exc:
                        if isinstance(exc, ValueError):
                            raise
                        self.failures += 1
                        self.errors.append(str(exc))
                        results[e] = (self.min_reward, {"error": str(exc)})

        await asyncio.gather(*(session(k) for k in range(min(self.sessions, len(episodes)))))
        return results

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        import asyncio

        texts = [_completion_text(p) if not isinstance(p, str) else p for p in prompts]
        missing = [t[:60] for t in texts if t not in self.index_of]
        if missing:
            raise KeyError(f"{len(missing)} prompt(s) are not in the dataset ServedRollouts was built with "
                           f"(first: {missing[0]!r})")
        tokenizer = trainer.processing_class
        prompt_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        completions, logprobs = self._generate(prompt_ids, trainer)
        scored = asyncio.run(self._episodes([(self.index_of[t], ids, c)
                                             for t, ids, c in zip(texts, prompt_ids, completions)]))
        rewards = [reward for reward, _ in scored]
        self.history.append(sum(rewards) / max(len(rewards), 1))
        return {"prompt_ids": prompt_ids, "completion_ids": completions, "logprobs": logprobs,
                "env_reward": rewards, "env_metrics": [info.get("metrics", {}) for _, info in scored]}

    def reward(self, prompts=None, completions=None, env_reward=None, **_: Any) -> list[float]:
        """The reward function to pass with it: the served env's reward of each completion."""
        if env_reward is None:
            raise KeyError("no env_reward column reached the reward function: pass rollout_func=ServedRollouts(...)")
        return [float(r) for r in env_reward]
