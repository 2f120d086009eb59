"""The multi-step video task over the shipped PushT compressed tokenizer (context frame + few
codes per later frame), on the small embedded held-out set."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlvr_envs.core.env import NextStatePredictionEnv
from rlvr_envs.video.compressed_tokenizer import CompressedTokenizer, load_video_tokenizer
from rlvr_envs.video.frame_tokenizer import FrameTokenizer
from rlvr_envs.video.task import compressed_tokenizer_dir, default_tokenizer_dir


def build(**kwargs):
    from rlvr_envs.core.factory import build_task

    kwargs = {"layout": "multi", "tokenizer": str(compressed_tokenizer_dir()), "episodes": 2, "reward": "mae",
              "size": 6, **kwargs}
    return build_task("rlvr_envs.video.task:VideoPredictionTask", **kwargs)


@pytest.fixture(scope="module")
def task():
    return build()


def test_loader_returns_the_kind_its_config_names():
    assert isinstance(load_video_tokenizer(compressed_tokenizer_dir()), CompressedTokenizer)
    assert isinstance(load_video_tokenizer(default_tokenizer_dir(), layout="single"), FrameTokenizer)
    with pytest.raises(ValueError, match=r"compressed tokenizer .* only the multi-step layout \(layout='multi'\)"):
        load_video_tokenizer(compressed_tokenizer_dir(), layout="single")


def test_single_step_layout_over_a_compressed_tokenizer_fails_clearly():
    with pytest.raises(ValueError, match=r"compressed tokenizer .* only the multi-step layout"):
        build(layout="single")


def test_vocabulary_and_layout_follow_the_tokenizer(task):
    tok = task.tokenizer
    assert task.compressed and isinstance(tok, CompressedTokenizer)
    vocab, layout = task.vocab, task.layout
    assert (vocab.frame_codes, vocab.context_codes, vocab.action_bins) == (
        tok.future_codebook_size, tok.context_codebook_size, task.bins.num_bins)
    assert layout.context_len == tok.tokens_per_context == 64 and layout.tokens_per_frame == tok.tokens_per_future == 16
    assert layout.prompt_len == 64 + task.config.history_frames * (16 + task.bins.dim)
    assert task.max_prompt_len == layout.prompt_len and task.max_response_len == layout.response_len + 1
    assert "compressed" in task.describe()["tokenizer_kind"]


def test_prompt_holds_the_context_codes_and_codes_are_per_window(task):
    """The prompt starts with the first history frame's context codes; the history and future
    codes are those of the window's frames coded against that frame."""
    tok, k = task.tokenizer, task.config.history_frames
    for index in (0, len(task) - 1):
        transition = task.transition(index)
        frames = np.concatenate([transition.state, transition.next_state])
        context = tok.encode_context(frames[:1])[0]
        codes = tok.encode_future(frames[None], frames[:1])[0]
        prompt = task.prompt_ids(index)
        assert np.array_equal(prompt[:64], task.vocab.context_tokens(context))
        assert task.vocab.is_context_code(prompt[:64]).all() and not task.vocab.is_context_code(prompt[64:]).any()
        assert np.array_equal(transition.meta["context_codes"], context)
        assert np.array_equal(transition.target, codes[k:])
        assert np.array_equal(transition.meta["last_history_codes"], codes[k - 1])
        assert np.array_equal(task.target_ids(index)[task.layout.loss_mask()], codes[k:].reshape(-1))


def test_gold_scores_at_least_as_well_as_perturbed_and_random_codes(task):
    rng = np.random.default_rng(0)
    positions = np.flatnonzero(task.layout.loss_mask())
    indices = list(range(len(task)))
    gold = [task.target_ids(i) for i in indices]
    results = task.verify(indices, gold)
    for index, result in zip(indices, results):
        assert result.parsed and result.reward == pytest.approx(result.metrics["ceiling"], abs=1e-6)
        assert task.min_reward <= result.reward < task.max_reward(index)
        for share in (0.3, 1.0):
            noisy = gold[index].copy()
            chosen = rng.choice(positions, size=max(1, int(share * len(positions))), replace=False)
            noisy[chosen] = rng.integers(0, task.vocab.frame_codes, size=len(chosen))
            other = task.verify([index], [noisy])[0]
            assert other.parsed and other.reward <= result.reward + 1e-9
            assert other.metrics["ceiling"] == result.metrics["ceiling"]


def test_batched_verify_matches_one_at_a_time(task):
    indices = [0, 1, 2]
    responses = [task.target_ids(i) for i in indices]
    batched = task.verify(indices, responses)
    for index, response, result in zip(indices, responses, batched):
        alone = task.verify([index], [response])[0]
        assert alone.reward == pytest.approx(result.reward, abs=1e-6)


def test_wrong_kind_tokens_are_rejected_with_a_reason(task):
    gold = task.target_ids(0)
    frame_positions = np.flatnonzero(task.layout.loss_mask())
    context_in_frame = gold.copy()
    context_in_frame[frame_positions[3]] = task.vocab.context_offset + 5
    action_in_frame = gold.copy()
    action_in_frame[frame_positions[0]] = task.vocab.action_offset + 1
    wrong_action = gold.copy()
    wrong_action[~task.layout.loss_mask()] = task.vocab.action_offset
    cases = ((context_in_frame, "a context code"), (action_in_frame, "an action token"),
             (wrong_action, "given actions"), (gold[:-1], "tokens"))
    for response, reason in cases:
        result = task.verify([0], [response])[0]
        assert not result.parsed and result.reward == task.min_reward and reason in result.error
        assert result.metrics["ceiling"] == task.ceiling(0)


def test_repetition_flags_copied_frames(task):
    """A response repeating one frame's codes is flagged on every later frame."""
    gold = task.target_ids(0)
    mask = task.layout.loss_mask()
    copied = task.layout.response(np.tile(task.transition(0).meta["last_history_codes"], (task.config.future, 1)),
                                  task.given_action_tokens(0))
    assert task.verify([0], [copied])[0].metrics["repetition"] == 1.0
    assert np.array_equal(copied[~mask], gold[~mask])


def test_token_mode_and_render(task):
    env = NextStatePredictionEnv(task, mode="token", render_mode="rgb_array")
    env.reset(options={"index": 1})
    gold = task.target_ids(1)
    for token in gold[task.layout.loss_mask()]:
        obs, reward, terminated, _, info = env.step(int(token))
    assert terminated and info["parsed"] and np.array_equal(obs["response"][: len(gold)], gold)
    assert reward == pytest.approx(task.ceiling(1), abs=1e-6)
    frame = env.render()
    h, w = task.resolution
    assert frame.shape == (2 * h, task.config.future * w, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame[h:], np.concatenate(list(task.transition(1).next_state), axis=1))
    decoded, error = task.decode(1, gold)
    expected = task.tokenizer.decode(task.transition(1).meta["context_codes"][None], task.transition(1).target[None])[0]
    assert error is None and torch.equal(decoded, expected)


def test_no_world_model_ships_for_it_yet(task):
    from rlvr_envs.video.task import shipped_world_model

    with pytest.raises(ValueError, match="no world model ships for the compressed tokenizer"):
        shipped_world_model(task)


def test_a_world_model_for_the_plain_vocabulary_is_refused(task):
    from rlvr_envs.video.task import check_world_model_dir, shipped_world_model_dir

    with pytest.raises(ValueError, match="1000 context codes"):
        check_world_model_dir(shipped_world_model_dir("multi"), task)
