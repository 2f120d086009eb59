"""`check_llm_env`: gymnasium's `check_env` plus the promises an LLM env makes.

Use it on your own tasks the way you would use `gymnasium.utils.env_checker.check_env`:

    from rlvr_envs.core.checker import check_llm_env
    check_llm_env(gym.make("RLVRWorld/MiniTextWorld-v0"))

It raises `AssertionError` naming the broken promise, else returns a small report.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlvr_envs.core.env import NextStatePredictionEnv
from rlvr_envs.core.task import Task, TextTask

#: answers no text task may accept (never raise, score the minimum)
MALFORMED_TEXTS = ("", "not an answer at all", "{", '{"modified": [', "```json\n{]\n```", "}}}{{{")


def _score(env: NextStatePredictionEnv, index: int, response: list[int]) -> tuple[float, dict[str, Any]]:
    env.reset(options={"index": index})
    action = np.asarray(response, dtype=object if any(abs(int(t)) >= 2**63 for t in response) else np.int64)
    _, reward, terminated, truncated, info = env.step(action)
    assert terminated and not truncated, "a sequence-mode step must end the episode"
    return float(reward), info


def _score_token_mode(task: Task, index: int, response: list[int]) -> float:
    """Write `response` one token per step; positions the env fills itself (forced tokens,
    e.g. given actions between video frames) are skipped, as an agent would."""
    env = NextStatePredictionEnv(task, mode="token")
    obs, _ = env.reset(options={"index": index})
    for _ in range(task.max_response_len + 1):
        written = int(obs["response_len"][0])
        token = response[written] if written < len(response) else task.eos_token_id
        obs, reward, terminated, truncated, _ = env.step(token)
        assert not truncated
        if terminated:
            return float(reward)
    raise AssertionError("token mode must end at EOS or the length limit")


def check_llm_env(env: gym.Env, indices: list[int] | None = None, seed: int = 0,
                  skip_gym_check: bool = False) -> dict[str, Any]:
    """Check the env contract on a few transitions (default: the first three)."""
    base = env.unwrapped
    assert isinstance(base, NextStatePredictionEnv), f"expected a NextStatePredictionEnv, got {type(base).__name__}"
    task = base.task
    if not skip_gym_check:
        from gymnasium.utils.env_checker import check_env

        check_env(NextStatePredictionEnv(task, mode="sequence"), skip_render_check=True)
        check_env(NextStatePredictionEnv(task, mode="token"), skip_render_check=True)
    seq = NextStatePredictionEnv(task, mode="sequence")
    rng = np.random.default_rng(seed)
    indices = list(range(min(3, len(task)))) if indices is None else indices
    report: dict[str, Any] = {"checked": indices, "gold": []}

    for index in indices:
        gold = task.target_ids(index).tolist()
        top = task.max_reward(index)
        assert len(gold) < task.max_response_len, f"[{index}] the gold answer does not fit max_response_len"
        if isinstance(task, TextTask):
            text = task.target_text(index)
            decoded = task.response_text(gold)
            assert decoded == text, f"[{index}] gold answer does not survive the tokenizer round trip"

        reward, info = _score(seq, index, gold + [task.eos_token_id])
        assert info["parsed"], f"[{index}] gold response not parsed: {info['error']}"
        if task.gold_reaches_max:
            assert np.isclose(reward, top), f"[{index}] gold response scored {reward}, the maximum is {top}"
        else:
            assert task.min_reward <= reward <= top, f"[{index}] gold response scored {reward} outside [min, max]"
        assert info["max_reward"] == top, f"[{index}] the result carries max_reward {info['max_reward']}, not {top}"
        if isinstance(task, TextTask):
            by_text = task.verify_text([index], [task.target_text(index)])[0]
            assert by_text.reward == reward, f"[{index}] verify_text and verify disagree on the gold answer"
        again, info_again = _score(seq, index, gold + [task.eos_token_id])
        assert again == reward and _same_metrics(info["metrics"], info_again["metrics"]), \
            f"[{index}] reward is not deterministic"
        assert np.isclose(_score_token_mode(task, index, gold), reward), \
            f"[{index}] token mode and sequence mode disagree on the gold response"
        report["gold"].append(reward)

        half = gold[: len(gold) // 2]
        truncated_reward, _ = _score(seq, index, half)
        assert task.min_reward <= truncated_reward < max(reward, top) or truncated_reward == task.min_reward, \
            f"[{index}] a truncated gold answer scored {truncated_reward} (gold {reward}, max {top})"
        if not task.gold_reaches_max:
            _check_gold_beats_perturbed(seq, task, index, gold, reward, rng)

        random_tokens = rng.integers(0, task.vocab_size, size=task.max_response_len).tolist()
        overlong = rng.integers(0, task.vocab_size, size=2 * task.max_response_len).tolist()
        gold_info = info
        for name, response in (("empty", []), ("random-token", random_tokens), ("overlong", overlong)):
            value, info = _score(seq, index, response)
            _check_infos_stack(gold_info, info, f"[{index}] the {name} response's info")
            if name == "empty" or task.random_responses_score_minimum:
                assert value == task.min_reward, f"[{index}] {name} response scored {value}, not {task.min_reward}"
                assert info["error"], f"[{index}] {name} response has no error string"
            assert task.min_reward <= value <= top
        random_no_eos = [t for t in random_tokens if t != task.eos_token_id][:64]
        assert np.isclose(_score_token_mode(task, index, random_no_eos), _score(seq, index, random_no_eos)[0]), \
            f"[{index}] token mode and sequence mode disagree on a random response"

        for bad in (task.vocab_size, -1, 2**64 + 1):
            value, info = _score(seq, index, [int(bad)])
            assert value == task.min_reward and info["error"], f"[{index}] token id {bad} scored {value}"
            _check_infos_stack(gold_info, info, f"[{index}] the info of token id {bad}")
        for not_tokens in (np.array([0.5]), np.array(["a"])):
            seq.reset(options={"index": index})
            try:
                seq.step(not_tokens)
            except TypeError:
                pass
            else:
                raise AssertionError(f"[{index}] a {not_tokens.dtype} action was accepted as token ids")

        if isinstance(task, TextTask):
            for text in MALFORMED_TEXTS:
                ids = task.tokenizer(text, add_special_tokens=False)["input_ids"]
                value, info = _score(seq, index, ids)
                assert value == task.min_reward and not info["parsed"] and info["error"], \
                    f"[{index}] malformed answer {text!r} scored {value} (error={info['error']!r})"
                _check_infos_stack(gold_info, info, f"[{index}] the info of malformed answer {text!r}")
    return report


def _check_gold_beats_perturbed(seq: NextStatePredictionEnv, task: Task, index: int, gold: list[int],
                                gold_reward: float, rng: np.random.Generator) -> None:
    """The video invariant: gold codes score at least as well as perturbed and random ones."""
    for share in (0.25, 1.0):
        noisy = list(gold)
        positions = rng.choice(len(gold), size=max(1, int(share * len(gold))), replace=False)
        for p in positions:
            noisy[p] = int(rng.integers(0, task.vocab_size))
        value, _ = _score(seq, index, noisy)
        assert value <= gold_reward + 1e-9, f"[{index}] a response with {share:.0%} tokens replaced scored " \
                                            f"{value} above the gold codes' {gold_reward}"


#: number types as gymnasium's vector envs tell them apart (bool first: it is an int to Python)
_NUMBER_KINDS = (("a bool", (bool, np.bool_)), ("an int", (int, np.integer)), ("a float", (float, np.floating)))


def _stack_type(value: Any) -> str:
    """What gymnasium's vector envs fix from the first env that reports an info value: a dict
    is walked key by key, a number fixes the dtype, an array its shape and dtype, anything
    else (a string, a list, None) goes into an object array."""
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, np.ndarray):
        return f"an array {value.shape} of {value.dtype}"
    for name, kinds in _NUMBER_KINDS:
        if isinstance(value, kinds):
            return name
    return "an object"


def _check_infos_stack(first: dict[str, Any], other: dict[str, Any], what: str, path: str = "info") -> None:
    """`other` stacks after `first` in one vector env: every key both have has one type (keys
    only one has are masked, which gymnasium allows)."""
    for key in first.keys() & other.keys():
        a, b = _stack_type(first[key]), _stack_type(other[key])
        assert a == b, f"{what}: {path}[{key!r}] is {b} where a parsed answer's is {a} (vector envs cannot stack them)"
        if a == "a dict":
            _check_infos_stack(first[key], other[key], what, f"{path}[{key!r}]")


def _same_metrics(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        (np.isnan(a[k]) and np.isnan(b[k])) or a[k] == b[k] for k in a)
