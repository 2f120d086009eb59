"""The learned PushT simulator (tiny untrained model over the shipped tokenizer: shapes,
determinism, batching, the sliding window, bad actions, mismatched models) and the real
chunk env it is compared with."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sim():
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.task import default_tokenizer_dir
    from rlvr_envs.video.world_model import build_world_model

    tokenizer = FrameTokenizer.load(default_tokenizer_dir())
    vocab = VideoVocabulary(tokenizer.config.codebook_size, 256)
    model = build_world_model(vocab, 3 * (64 + 10) + 1 + 64, "tiny", seed=0)
    env = LearnedPushTSim(model, tokenizer, max_steps=3, batch_size=4)
    yield env
    env.close()


@pytest.fixture(scope="module")
def start():
    from rlvr_envs.video import pusht

    env = pusht.make_env(64, 300, render=False)
    env.reset(seed=3)
    state = pusht.physics_state(env)
    env.close()
    return state


def test_reset_step_and_truncation(sim, start):
    frame, info = sim.reset(seed=0, options={"physics": start})
    assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8 and sim.observation_space.contains(frame)
    assert sim.context.codes.shape == (3, 64) and sim.context.action_tokens.shape == (2, 10)
    for step in range(1, 4):
        frame, reward, terminated, truncated, info = sim.step(np.full((5, 2), 256.0, dtype=np.float32))
        assert sim.observation_space.contains(frame) and 0.0 <= reward <= 1.0 and "coverage" in info
        if terminated or truncated:
            break
    assert terminated or (truncated and step == 3)  # ends cleanly at the limit (or at judged success)


def test_sliding_window_keeps_the_last_predictions(sim, start):
    sim.reset(seed=0, options={"physics": start})
    predicted = []
    for _ in range(3):
        sim.step(np.array([100.0, 200.0]))
        predicted.append(sim.context.codes[-1].copy())
    assert np.array_equal(sim.context.codes, np.stack(predicted))
    target_bin = sim.bins.encode(np.tile([100.0, 200.0], 5))
    assert np.array_equal(sim.context.action_tokens[-1], sim.vocab.action_tokens(target_bin))


def test_rollout_is_batched_deterministic_and_matches_single_rollouts(sim, start):
    sim.reset(seed=0, options={"physics": start})
    actions = np.random.default_rng(0).uniform(0, 512, size=(5, 2, 5, 2))
    frames, codes = sim.rollout(actions, return_codes=True)
    assert frames.shape == (5, 2, 64, 64, 3) and frames.dtype == np.uint8 and codes.shape == (5, 2, 64)
    again = sim.rollout(actions)
    assert np.array_equal(frames, again)
    single = sim.rollout(actions[2:3])
    assert np.array_equal(single[0], frames[2])
    last = sim.rollout(actions, frames="last")
    assert np.array_equal(last, frames[:, -1])
    held = sim.rollout(actions[:, :, 0, :])  # [N, H, 2]: each target held for its chunk
    assert held.shape == (5, 2, 64, 64, 3)


def test_rollout_from_one_start_per_sequence_matches_separate_rollouts(sim, start):
    first, _ = sim.reset(seed=0, options={"physics": start})
    context_a = sim.context.copy()
    sim.reset(seed=1)
    context_b = sim.context.copy()
    actions = np.random.default_rng(2).uniform(0, 512, size=(2, 2, 5, 2))
    both = sim.rollout(actions, start=[context_a, context_b])
    assert np.array_equal(both[0], sim.rollout(actions[:1], start=context_a)[0])
    assert np.array_equal(both[1], sim.rollout(actions[1:], start=context_b)[0])
    with pytest.raises(ValueError, match="one per sequence"):
        sim.rollout(actions, start=[context_a])


def test_rollout_matches_stepping(sim, start):
    sim.reset(seed=0, options={"physics": start})
    context = sim.context.copy()
    actions = np.random.default_rng(1).uniform(0, 512, size=(1, 2, 5, 2))
    rolled = sim.rollout(actions, start=context)[0]
    stepped = [sim.step(chunk)[0] for chunk in actions[0]]
    assert np.array_equal(rolled, np.stack(stepped))


def test_bad_actions_are_repaired_and_counted_or_rejected(sim, start):
    from rlvr_envs.simulators import LearnedPushTSim

    sim.reset(seed=0, options={"physics": start})
    bad = np.full((5, 2), 256.0)
    bad[1, 0] = np.nan
    bad[3, 1] = 900.0
    _, _, _, _, info = sim.step(bad)
    _, _, _, _, info = sim.step(np.array([10.0, 20.0]))
    assert info["actions"] == {"steps": 2, "held": 1, "nonfinite": 1, "clipped": 1}
    with pytest.raises(ValueError, match="shape"):
        sim.step(np.zeros(3))
    strict = LearnedPushTSim(sim.model, sim.tokenizer, invalid_actions="reject", reward="none")
    strict.reset(seed=0, options={"physics": start})
    with pytest.raises(ValueError, match="reject"):
        strict.step(np.full((5, 2), -1.0))
    with pytest.raises(ValueError, match="non-finite"):
        sim.rollout(np.full((1, 1, 5, 2), np.nan))


#: actions no PushT policy means: refused with TypeError at the door (rlvr_envs.core.actions), never cast
NOT_REAL_ACTIONS = {"bools": np.array([True, False]), "complex": np.array([1 + 2j, 3 + 0j]), "string": "256 256",
                    "strings": np.array(["256", "256"]), "None": None, "ragged": [[1.0, 2.0], [3.0]],
                    "masked": np.ma.masked_array([256.0, 256.0], mask=[0, 1]), "objects": np.array([{}, {}])}


@pytest.mark.parametrize("case", sorted(NOT_REAL_ACTIONS))
def test_actions_that_are_not_real_numbers_are_refused_and_the_state_kept(sim, start, case):
    sim.reset(seed=0, options={"physics": start})
    before = sim.context.codes.copy()
    with pytest.raises(TypeError, match="real numbers|masked"):
        sim.step(NOT_REAL_ACTIONS[case])
    with pytest.raises(TypeError):
        sim.rollout(np.array([[[NOT_REAL_ACTIONS["complex"]]]]))
    assert np.array_equal(sim.context.codes, before) and sim.counts.steps == 0


def test_real_chunk_env_refuses_the_same_actions(start):
    from rlvr_envs.simulators.real import PushTChunkEnv

    env = PushTChunkEnv()
    env.reset(options={"physics": start})
    for action in NOT_REAL_ACTIONS.values():
        with pytest.raises(TypeError):
            env.step(action)
    env.close()


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_learned_sim_copies_mid_episode_and_continues_exactly(sim, start, copier):
    import copy
    import pickle

    sim.reset(seed=0, options={"physics": start})
    sim.step(np.full((5, 2), 200.0))
    clone = pickle.loads(pickle.dumps(sim)) if copier == "pickle" else copy.deepcopy(sim)
    chunk = np.full((5, 2), 300.0)
    assert np.array_equal(clone.step(chunk)[0], sim.step(chunk)[0])
    assert np.array_equal(clone.context.codes, sim.context.codes)
    assert np.array_equal(clone.render_physics(start), sim.render_physics(start))  # rebuilt real env renders
    clone.close()


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_real_chunk_env_copies_mid_episode_and_continues_exactly(start, copier):
    import copy
    import pickle

    from rlvr_envs.simulators.real import PushTChunkEnv

    env = PushTChunkEnv()
    env.reset(options={"physics": start})
    env.step(np.full((5, 2), 200.0))
    clone = pickle.loads(pickle.dumps(env)) if copier == "pickle" else copy.deepcopy(env)
    chunk = np.full((5, 2), 300.0)
    frame, *_, info = env.step(chunk)
    clone_frame, *_, clone_info = clone.step(chunk)
    assert np.array_equal(frame, clone_frame) and np.array_equal(info["physics"], clone_info["physics"])
    env.close()
    clone.close()


def test_registered_learned_sim_pickles_after_reset_and_runs_async():
    """The shipped model under gymnasium's subprocess vector env (2 small envs) and copied whole."""
    import pickle

    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    env = gym.make("RLVRWorld/PushT-LearnedSim-v0", max_steps=2)
    env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(env))
    chunk = np.full((5, 2), 256.0, dtype=np.float32)
    assert np.array_equal(clone.step(chunk)[0], env.step(chunk)[0])
    # spawn, not fork: a process forked after torch started its thread pool fails in its first parallel op
    vec = gym.make_vec("RLVRWorld/PushT-LearnedSim-v0", num_envs=2, vectorization_mode="async", max_steps=2,
                       vector_kwargs={"context": "spawn"})
    try:
        obs, _ = vec.reset(seed=0)
        obs, rewards, terminated, truncated, info = vec.step(np.stack([chunk, chunk]))
        assert obs.shape == (2, 64, 64, 3) and rewards.shape == (2,) and ((rewards >= 0) & (rewards <= 1)).all()
    finally:
        vec.close()


def test_reset_from_frames_and_from_an_episode(sim, start):
    from rlvr_envs.video import pusht

    frame = sim.render_physics(start)
    obs, _ = sim.reset(options={"frames": frame[None]})  # agent read from the pixels
    assert np.array_equal(obs, frame) and np.array_equal(sim.context.codes[0], sim.context.codes[2])
    env = pusht.make_env(64, 20, render=True)
    env.reset(seed=0)
    record = pusht.run_policy(env, pusht.physics_state(env), pusht.ScriptedPushExpert(), 20)
    env.close()
    episode = pusht.PushTEpisode(0, "expert", 0.0, 0, record["frames"], record["actions"], record["physics"],
                                 record["coverage"], record["success"])
    obs, _ = sim.reset(options={"episode": episode, "start": 3})
    assert np.array_equal(obs, record["frames"][15])
    assert len(np.unique(sim.context.codes, axis=0)) >= 1


def test_a_model_for_another_vocabulary_or_layout_fails_naming_both(tmp_path):
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.task import default_tokenizer_dir, shipped_world_model_dir
    from rlvr_envs.video.world_model import build_world_model

    other = build_world_model(VideoVocabulary(512, 256), 300, "tiny")
    with pytest.raises(ValueError, match="vocabulary size 771.*pusht_frame_tokenizer"):
        LearnedPushTSim(other, default_tokenizer_dir())
    with pytest.raises(ValueError, match="pusht_multi_step_model.*layout.*multi.*pusht_frame_tokenizer"):
        LearnedPushTSim(shipped_world_model_dir("multi"))
    with pytest.raises(FileNotFoundError, match="no world model"):
        LearnedPushTSim(tmp_path)


def test_real_chunk_env_steps_exactly_like_its_rollout(start):
    from rlvr_envs.simulators import PushTChunkEnv

    env = PushTChunkEnv(max_steps=2)
    actions = np.random.default_rng(2).uniform(100, 400, size=(1, 2, 5, 2))
    frames, physics = env.rollout(actions, start=start, return_physics=True)
    env.reset(options={"physics": start})
    for chunk in actions[0]:
        frame, reward, terminated, truncated, info = env.step(chunk)
    assert np.array_equal(info["physics"], physics[0])
    assert truncated and not terminated and frame.shape == (64, 64, 3)
    assert (frame != frames[0, -1]).any(axis=-1).mean() < 0.01  # same state (only contact dots may differ)
    env.close()


def test_registered_learned_sim_runs_the_shipped_model():
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    env = gym.make("RLVRWorld/PushT-LearnedSim-v0", max_steps=2)
    obs, info = env.reset(seed=0)
    assert obs.shape == (64, 64, 3) and obs.dtype == np.uint8
    obs, reward, terminated, truncated, info = env.step(np.full((5, 2), 256.0))
    assert obs.shape == (64, 64, 3) and np.isfinite(reward)
    env.close()


def test_registered_rlvr_learned_sim_uses_the_shipped_grpo_model():
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    env = gym.make("RLVRWorld/PushT-LearnedSim-RLVR-v0", max_steps=1)
    assert "rlvr" in str(env.spec.kwargs["model"])
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.full((5, 2), 256.0))
    assert obs.shape == (64, 64, 3)
    env.close()


@pytest.mark.parametrize("env_id, asset", [("RLVRWorld/PushT-LearnedSim-MLE12k-v0", "pusht_single_step_mle12k_model"),
                                           ("RLVRWorld/PushT-LearnedSim-RolloutRLVR-v0",
                                            "pusht_single_step_rollout_rlvr_model")])
def test_registered_planning_table_models_load_and_step(env_id, asset):
    """The planning tables' base and RLVR models ship: each id loads its own checkpoint, whose
    card says where it came from, and steps like the shipped base."""
    import json
    from pathlib import Path

    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    env = gym.make(env_id, max_steps=1)
    model = Path(env.spec.kwargs["model"])
    assert model.name == asset and "shipped_as" in json.loads((model / "card.json").read_text())
    obs, _ = env.reset(seed=0)
    obs, reward, *_ = env.step(np.full((5, 2), 256.0))
    assert obs.shape == (64, 64, 3) and obs.dtype == np.uint8 and np.isfinite(reward)
    env.close()


def test_slide_window_drops_the_oldest_frame_and_action_batched_or_not():
    from rlvr_envs.simulators.learned import slide_window

    codes, actions = np.arange(6).reshape(3, 2), np.array([[10], [11]])  # history 3: 3 frames, 2 actions between
    new_codes, new_tokens = np.array([6, 7]), np.array([12])
    slid_codes, slid_actions = slide_window(codes, actions, new_codes, new_tokens)
    assert slid_codes.tolist() == [[2, 3], [4, 5], [6, 7]] and slid_actions.tolist() == [[11], [12]]
    batched_codes, batched_actions = slide_window(codes[None].repeat(2, 0), actions[None].repeat(2, 0),
                                                  new_codes[None].repeat(2, 0), new_tokens[None].repeat(2, 0))
    assert (batched_codes == slid_codes).all() and (batched_actions == slid_actions).all()
    one = slide_window(codes[:1], np.zeros((0, 1), dtype=int), new_codes, new_tokens)  # history 1: no actions
    assert one[0].tolist() == [[6, 7]] and one[1].shape == (0, 1)


@pytest.mark.parametrize("change, says", [({0: 1e300}, "agent .* is outside the arena"),
                                          ({4: 700.0}, "block .* centre outside the walls"),
                                          ({7: 1e300}, "speeds and the angle must be within"),
                                          ({5: float("nan")}, "finite numbers"),
                                          ({"shape": 3}, "finite numbers")])
def test_a_physics_start_outside_the_arena_or_not_finite_is_refused_and_the_state_kept(sim, start, change, says):
    from rlvr_envs.simulators import PushTChunkEnv

    sim.reset(seed=0, options={"physics": start})
    before = sim.context.codes.copy()
    physics = np.array(start[:3] if "shape" in change else start, dtype=np.float64)
    for index, value in change.items():
        if index != "shape":
            physics[index] = value
    with pytest.raises(ValueError, match=says):
        sim.reset(options={"physics": physics})
    assert np.array_equal(sim.context.codes, before)
    real = PushTChunkEnv()
    if "block" not in says:  # the real simulator takes an escaped block (a real state), nothing else here
        with pytest.raises(ValueError, match=says):
            real.reset(options={"physics": physics})
    real.close()
