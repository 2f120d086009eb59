"""Video world-model pieces: FSQ, the frame tokenizer's checkpoints, the token layouts, the
KV-cached sampler with forced action tokens, and the PushT video task on the env contract.

Runs on a few short PushT episodes recorded here from the real simulator and a small,
randomly initialised frame tokenizer (the task's contract does not depend on its quality).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rlvr_envs.core.env import NextStatePredictionEnv
from rlvr_envs.core.errors import DataError
from rlvr_envs.video.frame_tokenizer import FSQ, FrameTokenizer, FrameTokenizerConfig
from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary

TINY = FrameTokenizerConfig(resolution=(32, 32), downsample=8, levels=(8, 5, 5, 5), channels=(8, 16, 16))


@pytest.fixture(scope="module")
def pusht_dir(tmp_path_factory):
    from rlvr_envs.video import pusht

    out = tmp_path_factory.mktemp("pusht")
    config = pusht.PushTGenerationConfig(episodes=3, resolution=32, seed=5, max_steps=60)
    pusht.generate_dataset(config, out, workers=1, progress=False)
    return str(out)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    torch.manual_seed(0)
    return str(FrameTokenizer(TINY).save(tmp_path_factory.mktemp("tok")))


def make_task(pusht_dir, tokenizer_dir, **kwargs):
    from rlvr_envs.core.factory import build_task

    kwargs = {"reward": "mae", "data_dir": pusht_dir, "tokenizer": tokenizer_dir, "frame_skip": 3, **kwargs}
    return build_task("rlvr_envs.video.task:VideoPredictionTask", **kwargs)


# -- FSQ and the tokenizer ------------------------------------------------------------------------

def test_fsq_codes_round_trip_and_cover_the_codebook():
    fsq = FSQ((7, 5, 5, 5, 5))
    assert fsq.codebook_size == 4375
    z = torch.randn(8, 5, 6, 6) * 4
    indices = fsq.indices(z)
    assert torch.equal(fsq.codes(indices), fsq(z)) and 0 <= indices.min() and indices.max() < 4375
    every = fsq.codes(torch.arange(4375).view(1, 1, -1))[0, :, 0].T  # [4375, 5]
    assert every.abs().max() <= 1 and len(torch.unique(every, dim=0)) == 4375  # every id is its own code


def test_tokenizer_checkpoint_round_trips_and_refuses_a_mismatch(tmp_path):
    torch.manual_seed(1)
    model = FrameTokenizer(TINY)
    frames = np.random.default_rng(0).integers(0, 255, size=(3, 32, 32, 3), dtype=np.uint8)
    model.save(tmp_path / "a", card={"steps": 0})
    loaded = FrameTokenizer.load(tmp_path / "a")
    assert np.array_equal(model.encode(frames), loaded.encode(frames))
    assert FrameTokenizer.card(tmp_path / "a") == {"steps": 0}
    assert loaded.decode(loaded.encode(frames)).shape == (3, 32, 32, 3)
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    config["channels"] = [8, 16, 32]
    (tmp_path / "a" / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match="does not match"):
        FrameTokenizer.load(tmp_path / "a")
    with pytest.raises(ValueError, match="expected frames"):
        loaded.encode(frames[:, :16])
    with pytest.raises(ValueError, match="code ids"):
        loaded.decode(np.full((1, 16), 10_000))


# -- layouts and the sampler ----------------------------------------------------------------------

def test_multi_step_layout_forces_actions_and_masks_them():
    vocab = VideoVocabulary(frame_codes=10, action_bins=4)
    layout = MultiStepLayout(vocab, tokens_per_frame=2, action_dims=1, history=1, future=3)
    given = vocab.action_tokens(np.array([[1], [2], [3]]))
    assert layout.forced_tokens([5], given) == () and layout.forced_tokens([5, 6], given) == (11,)
    assert layout.forced_tokens([5, 6, 11, 7, 8], given) == (12,)
    assert layout.loss_mask().tolist() == [True, True, False] * 3
    codes, error = layout.frames(np.array([1, 2, 11, 3, 4, 12, 5, 6, 13]))
    assert error is None and codes.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert "frame code" in layout.frames(np.array([1, 12, 11, 3, 4, 12, 5, 6, 13]))[1]
    assert "tokens" in layout.frames(np.array([1, 2]))[1]
    single = SingleStepLayout(vocab, tokens_per_frame=2, action_dims=1, history=2)
    assert single.prompt(np.array([[1, 2], [3, 4]]), given[:2]).tolist() == [1, 2, 11, 3, 4, 12, vocab.bos]


def test_sampler_forces_given_actions_and_the_cache_changes_nothing():
    from rlvr_envs.video.world_model import build_world_model, generate_responses

    vocab = VideoVocabulary(frame_codes=20, action_bins=8)
    layout = MultiStepLayout(vocab, tokens_per_frame=3, action_dims=2, history=1, future=3)
    model = build_world_model(vocab, 64, "tiny").eval()
    prompts = np.array([[1, 2, 3, 21, 22], [4, 5, 6, 23, 24]])
    given = vocab.action_tokens(np.random.default_rng(0).integers(0, 8, size=(2, 3, 2)))
    cached = generate_responses(model, prompts, layout, given, temperature=0)
    uncached = generate_responses(model, prompts, layout, given, temperature=0, use_cache=False)
    assert np.array_equal(cached, uncached)
    mask = layout.loss_mask()
    assert np.array_equal(cached[:, ~mask].reshape(2, 3, 2), given)
    assert vocab.is_frame_code(cached[:, mask]).all()
    sampled = generate_responses(model, prompts, layout, given, temperature=1.0, top_k=5, seed=3)
    assert np.array_equal(sampled, generate_responses(model, prompts, layout, given, temperature=1.0, top_k=5, seed=3))


# -- the task on the env contract -----------------------------------------------------------------

@pytest.mark.parametrize("layout", ["single", "multi"])
def test_video_task_passes_the_env_checker(pusht_dir, tokenizer_dir, layout):
    from rlvr_envs.core.checker import check_llm_env

    task = make_task(pusht_dir, tokenizer_dir, layout=layout, future=2)
    report = check_llm_env(NextStatePredictionEnv(task))
    assert report["gold"]


@pytest.fixture(scope="module")
def pusht64_dir(tmp_path_factory):
    from rlvr_envs.video import pusht

    out = tmp_path_factory.mktemp("pusht64")
    pusht.generate_dataset(pusht.PushTGenerationConfig(episodes=2, resolution=64, seed=7, max_steps=80), out,
                           workers=1, progress=False)
    return str(out)


@pytest.mark.parametrize("layout", ["single", "multi"])
def test_gold_codes_score_at_least_as_well_as_perturbed_codes(pusht64_dir, layout):
    """The video invariant, with the shipped (trained) tokenizer: a random one carries no
    such guarantee, since its decoder need not map the true codes closest to the frame."""
    from rlvr_envs.core.factory import build_task

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout=layout, data_dir=pusht64_dir,
                      reward="mae", future=2)
    rng = np.random.default_rng(0)
    mask = task.layout.loss_mask()
    for index in range(min(6, len(task))):
        gold = task.target_ids(index)
        result = task.verify([index], [gold])[0]
        assert result.parsed and result.reward == result.metrics["ceiling"] <= task.max_reward(index)
        for share in (0.3, 1.0):
            noisy = gold.copy()
            frame_positions = np.flatnonzero(mask)
            chosen = rng.choice(frame_positions, size=max(1, int(share * len(frame_positions))), replace=False)
            noisy[chosen] = rng.integers(0, task.vocab.frame_codes, size=len(chosen))
            assert task.verify([index], [noisy])[0].reward <= result.reward + 1e-9


def test_pose_reward_pays_for_objects_in_place_and_never_for_leaving_one_out(pusht64_dir):
    """reward='pose' is the shortcut-proof PushT reward: a frame without the agent (what
    -MAE prefers when the model is unsure where the agent went) scores below the gold
    codes, and below a frame with the agent left where it was."""
    from rlvr_envs.core.factory import build_task
    from rlvr_envs.video.pusht.judge import unmix

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", data_dir=pusht64_dir, reward="pose")
    checked = 0
    for index in range(len(task)):
        transition = task.transition(index)
        gold = task.verify([index], [task.target_ids(index)])[0]
        copy = task.verify([index], [task.layout.response(transition.meta["last_history_codes"][None])])[0]
        if copy.metrics["agent_error"] < 0.02:
            continue  # the agent barely moved: leaving it in place is nearly right
        truth = np.array(transition.next_state[-1])
        truth[unmix(truth)["agent"] > 0.1] = 255  # the agent painted out
        erased = task.verify([index], [task.layout.response(task.tokenizer.encode(truth[None]))])[0]
        assert erased.metrics["agent_error"] == 1.0
        assert erased.reward < copy.reward < gold.reward <= task.max_reward(index)
        assert task.min_reward <= erased.reward and gold.metrics["agent_error"] < 0.02
        checked += 1
    assert checked >= 3


def test_pose_weights_scale_each_error_term(pusht64_dir):
    """pose_weights=(3, 1, 1) charges the agent's error three times: on an answer that leaves
    the agent where it was, the reward drops by twice that error, and the minimum follows."""
    from rlvr_envs.core.factory import build_task

    plain = build_task("rlvr_envs.video.task:VideoPredictionTask", data_dir=pusht64_dir, reward="pose")
    agent_heavy = build_task("rlvr_envs.video.task:VideoPredictionTask", data_dir=pusht64_dir, reward="pose",
                             pose_weights=[3, 1, 1])
    assert agent_heavy.min_reward == -6.0 and plain.min_reward == -4.0
    moved = 0
    for index in range(len(plain)):
        copy = plain.layout.response(plain.transition(index).meta["last_history_codes"][None])
        a, b = plain.verify([index], [copy])[0], agent_heavy.verify([index], [copy])[0]
        assert b.metrics["agent_error"] == pytest.approx(a.metrics["agent_error"])
        assert b.reward == pytest.approx(a.reward - 2 * a.metrics["agent_error"], abs=1e-6)
        moved += a.metrics["agent_error"] > 0.02
    assert moved >= 3


@pytest.mark.parametrize("weights", [(1, 1), (1, -1, 1), (0, 0, 0), (1, float("nan"), 1), ("a", 1, 1), "1,x,1", "1,1"])
def test_pose_weights_are_checked(weights):
    from rlvr_envs.video.task import VideoTaskConfig

    with pytest.raises(ValueError, match="pose_weights"):
        VideoTaskConfig(reward="pose", pose_weights=weights).validate()


def test_pose_weights_may_come_as_a_command_line_list():
    from rlvr_envs.video.task import VideoTaskConfig

    assert VideoTaskConfig(reward="pose", pose_weights="0.03,0.03,0.03").pose_weights == (0.03, 0.03, 0.03)
    assert VideoTaskConfig(reward="pose", pose_weights=[3, 1, 1]).pose_weights == (3, 1, 1)


def test_pose_reward_is_refused_where_no_reader_exists(tmp_path):
    from rlvr_envs.video.task import VideoTaskConfig

    with pytest.raises(ValueError, match="reward='pose'"):
        VideoTaskConfig(dataset="rope", data_dir=str(tmp_path), tokenizer=str(tmp_path), reward="pose").validate()


def test_multi_step_token_mode_inserts_the_given_actions(pusht_dir, tokenizer_dir):
    task = make_task(pusht_dir, tokenizer_dir, layout="multi", future=2)
    env = NextStatePredictionEnv(task, mode="token")
    env.reset(options={"index": 1})
    gold = task.target_ids(1)
    frame_tokens = gold[task.layout.loss_mask()]
    for step, token in enumerate(frame_tokens):
        obs, reward, terminated, _, info = env.step(int(token))
        assert terminated == (step == len(frame_tokens) - 1)
    assert np.array_equal(obs["response"][: len(gold)], gold)
    sequence = NextStatePredictionEnv(task)
    sequence.reset(options={"index": 1})
    assert reward == sequence.step(gold)[1] and info["parsed"]


def test_malformed_video_responses_score_the_minimum_with_a_reason(pusht_dir, tokenizer_dir):
    task = make_task(pusht_dir, tokenizer_dir, layout="multi", future=2)
    gold = task.target_ids(0)
    wrong_action = gold.copy()
    wrong_action[~task.layout.loss_mask()] = task.vocab.action_offset
    action_in_frame = gold.copy()
    action_in_frame[0] = task.vocab.action_offset + 1
    for response, reason in ((gold[:-1], "tokens"), (wrong_action, "given actions"), (action_in_frame, "frame code")):
        result = task.verify([0], [response])[0]
        assert result.reward == task.min_reward and not result.parsed and reason in result.error


def test_l1_lpips_reward_needs_real_weights_or_an_explicit_random_trunk(pusht_dir, tokenizer_dir):
    from rlvr_envs.video.metrics import LPIPSWeightsUnavailable, trunk_checkpoint_path

    if trunk_checkpoint_path("vgg").exists():
        pytest.skip("the real VGG trunk is cached on this machine")
    with pytest.raises(LPIPSWeightsUnavailable, match="reward='mae'"):
        make_task(pusht_dir, tokenizer_dir, reward="l1_lpips")
    task = make_task(pusht_dir, tokenizer_dir, reward="l1_lpips", lpips_random_backbone_seed=0)
    result = task.verify([0], [task.target_ids(0)])[0]
    assert result.parsed and -3.0 <= result.reward <= 0.0 and "lpips" in result.metrics


def test_rgb_render_shows_prediction_above_truth(pusht_dir, tokenizer_dir):
    task = make_task(pusht_dir, tokenizer_dir, layout="multi", future=2)
    env = NextStatePredictionEnv(task, render_mode="rgb_array")
    env.reset(options={"index": 0})
    env.step(task.target_ids(0))
    frame = env.render()
    assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame[32:], np.concatenate(list(task.transition(0).next_state), axis=1))


def test_docs_pusht_example_runs_as_written(capsys):
    """The PushT block of docs/environments.md: the shipped model's response to a held-out prompt, scored."""
    from tests.samples import REPO

    readme = (REPO / "docs" / "environments.md").read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:]]
    block = next(b for b in blocks if "PushT-MultiStep-v0" in b)
    exec(compile(block, "docs/environments.md", "exec"), {})
    reward, ceiling = (float(v) for v in capsys.readouterr().out.split())
    assert -1.0 <= reward <= 0.0 and -1.0 <= ceiling <= 0.0
