"""PushT generation on the real gym-pusht simulator: determinism, exact restore, storage."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from rlvr_envs.core.errors import DataError
from rlvr_envs.video import pusht
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec
from rlvr_envs.video.pusht import PushTGenerationConfig

RESOLUTION = 64
STEPS = 10


@pytest.fixture(scope="module")
def generator():
    config = PushTGenerationConfig(episodes=3, resolution=RESOLUTION, seed=0, max_steps=STEPS)
    gen = pusht.PushTGenerator(config)
    yield gen
    gen.close()


@pytest.fixture(scope="module")
def episodes(generator):
    return [generator.episode(i) for i in range(2)]


def _assert_same(a: pusht.PushTEpisode, b: pusht.PushTEpisode):
    for name in ("frames", "actions", "physics", "coverage"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.success, a.policy, a.noise, a.seed) == (b.success, b.policy, b.noise, b.seed)


def test_episode_shapes_and_meaning(episodes):
    for episode in episodes:
        steps = len(episode)
        assert 1 <= steps <= STEPS
        assert episode.frames.shape == (steps + 1, RESOLUTION, RESOLUTION, 3) and episode.frames.dtype == np.uint8
        assert episode.actions.shape == (steps, 2) and episode.actions.dtype == np.float32
        assert episode.physics.shape == (steps + 1, len(pusht.PHYSICS_FIELDS))
        assert ((episode.actions >= 0) & (episode.actions <= 512)).all()
        assert episode.success == bool(episode.coverage[-1] > pusht.SUCCESS_COVERAGE)
        states = episode.states
        assert states.shape == (steps + 1, 5) and ((states[:, 4] >= 0) & (states[:, 4] < 2 * np.pi)).all()
        # The frames show the scene: consecutive frames differ once the agent moves.
        assert any((episode.frames[t] != episode.frames[t + 1]).any() for t in range(steps))


def test_generation_is_a_pure_function_of_seed_and_index(generator, episodes):
    _assert_same(generator.episode(1), episodes[1])
    other = pusht.PushTGenerator(PushTGenerationConfig(episodes=3, resolution=RESOLUTION, seed=1, max_steps=STEPS))
    try:
        assert not np.array_equal(other.episode(1).physics[0], episodes[1].physics[0])
    finally:
        other.close()


def test_restore_reproduces_the_rest_of_an_episode_bit_exactly(episodes):
    episode = episodes[0]
    env = pusht.make_env(RESOLUTION, STEPS)
    env.reset(seed=12345)  # a different history than the one that produced the episode
    try:
        for start in (0, len(episode) // 2):
            pusht.restore_physics_state(env, episode.physics[start])
            np.testing.assert_array_equal(pusht.physics_state(env), episode.physics[start])
            record = pusht.run_policy(env, episode.physics[start], None, STEPS, actions=list(episode.actions[start:]))
            np.testing.assert_array_equal(record["physics"], episode.physics[start:])
            np.testing.assert_array_equal(record["frames"][1:], episode.frames[start + 1:])
    finally:
        env.close()
    _assert_same(pusht.replay_episode(episode), episode)


def test_restore_sets_bodies_in_the_documented_order():
    # angle then position: setting the angle last would rotate the T about its centre of
    # gravity (0, 45 in the body frame) and move its origin.
    env = pusht.make_env(RESOLUTION, STEPS, render=False)
    env.reset(seed=0)
    target = np.array([100.0, 120.0, 3.0, -4.0, 300.0, 310.0, 1.2, 0.5, -0.25, 0.1])
    pusht.restore_physics_state(env, target)
    np.testing.assert_allclose(pusht.physics_state(env), target, atol=1e-9)
    block = env.unwrapped.block
    np.testing.assert_allclose(np.array(block.local_to_world((0, 0))), target[4:6], atol=1e-9)
    with pytest.raises(ValueError, match="finite"):
        pusht.restore_physics_state(env, np.full(10, np.nan))
    env.close()


def test_coverage_matches_gym_pusht(episodes):
    env = pusht.make_env(RESOLUTION, STEPS, render=False)
    env.reset(seed=0)
    for physics in (episodes[0].physics[-1], np.array([0, 0, 0, 0, 256, 256, np.pi / 4, 0, 0, 0.0])):
        pusht.restore_physics_state(env, physics)
        assert pusht.goal_coverage(physics) == pytest.approx(env.unwrapped._get_coverage(), abs=1e-9)
    assert pusht.goal_coverage(np.array([0, 0, 0, 0, 256, 256, np.pi / 4, 0, 0, 0.0])) == pytest.approx(1.0)
    env.close()


def test_scripted_expert_solves_an_easy_start():
    # Block 20 px and 0.2 rad from the goal, agent away from it: the expert must finish.
    env = pusht.make_env(RESOLUTION, 300, render=False)
    env.reset(seed=0)
    start = np.array([100.0, 100.0, 0, 0, 256.0 + 20.0, 256.0 - 10.0, np.pi / 4 + 0.2, 0, 0, 0])
    record = pusht.run_policy(env, start, pusht.ScriptedPushExpert(), 150, record_frames=False)
    env.close()
    assert record["success"] and record["coverage"][-1] > 0.95


def test_cem_like_targets_walk_a_path_away_from_the_agent_inside_the_arena():
    agent = np.array([250.0, 260.0])
    draws = np.stack([pusht.cem_like_targets(agent, 5, 60.0, np.random.default_rng(i)) for i in range(200)])
    assert draws.shape == (200, 5, 5, 2)
    assert draws.min() >= 0.0 and draws.max() <= pusht.ARENA_SIZE
    # the first target stays near the agent, the last is spread like the path's end, N(0, 2 std)
    first, last = draws[:, 0, 0] - agent, draws[:, -1, -1] - agent
    assert np.abs(first.mean(axis=0)).max() < 15 and first.std() < 60
    assert 90 < last.std() < 150
    np.testing.assert_array_equal(pusht.cem_like_targets(agent, 5, 60.0, np.random.default_rng(3)), draws[3])


def test_cem_like_policy_redraws_from_the_agent_every_horizon():
    policy = pusht.CEMLikePolicy(np.random.default_rng(0), horizon=2, frame_skip=5)
    physics = np.array([100.0, 400.0, 0, 0, 256.0, 256.0, 0.0, 0, 0, 0])
    first = [policy(physics) for _ in range(10)]
    expected = pusht.cem_like_targets(physics[0:2], 2, 60.0, np.random.default_rng(0)).reshape(-1, 2)
    np.testing.assert_allclose(np.stack(first), expected.astype(np.float32))
    moved = physics.copy()
    moved[0:2] = [400.0, 100.0]
    second = np.stack([policy(moved) for _ in range(10)])
    assert np.linalg.norm(second[0] - moved[0:2]) < np.linalg.norm(second[0] - physics[0:2])
    assert all(a.dtype == np.float32 and a.shape == (2,) for a in first)
    with pytest.raises(ValueError, match="std"):
        pusht.CEMLikePolicy(np.random.default_rng(0), std=0.0)


def test_cem_episodes_are_recorded_and_leave_the_default_mix_unchanged(tmp_path):
    config = PushTGenerationConfig(episodes=2, resolution=16, seed=0, max_steps=12, policy_weights={"cem": 1.0})
    generator = pusht.PushTGenerator(config)
    episode = generator.episode(0)
    generator.close()
    assert episode.policy == "cem" and len(episode) == 12
    assert np.linalg.norm(np.diff(episode.physics[:, 0:2], axis=0), axis=1).sum() > 20  # the agent moves
    # a policy of weight 0 takes no part in the draw: the default mix picks what it always did
    default = PushTGenerationConfig()
    widened = PushTGenerationConfig(policy_weights={**default.policy_weights, "cem": 0.0})
    for index in range(20):
        a, b = pusht.episode_plan(default, index), pusht.episode_plan(widened, index)
        assert (a.policy, a.noise, a.seed) == (b.policy, b.noise, b.seed)


AT_GOAL = np.array([100.0, 400.0, 0, 0, 256.0, 256.0, np.pi / 4, 0, 0, 0])  # coverage 1.0
FAR_FROM_GOAL = np.array([100.0, 400.0, 0, 0, 380.0, 130.0, 0.0, 0, 0, 0])  # coverage 0.0


def test_handoff_policy_leaves_the_task_near_the_goal_and_hands_back_after_its_off_steps():
    assert pusht.goal_coverage(FAR_FROM_GOAL) == 0.0
    policy = pusht.HandoffPolicy(np.random.default_rng(0), box=100.0, levels=(0.5, 0.5), off_steps=(6, 6))
    expert_action = pusht.ScriptedPushExpert()(FAR_FROM_GOAL)
    np.testing.assert_array_equal(policy(FAR_FROM_GOAL), expert_action)  # below the level: the expert
    off = np.stack([policy(AT_GOAL) for _ in range(6)])  # the block reached the level: six steps off the task
    cog = AT_GOAL[4:6] + pusht.policies._rotation(AT_GOAL[6]) @ pusht.policies._T_COG
    still = np.all(off == AT_GOAL[0:2], axis=1)
    around = np.all(np.abs(off - cog) <= 100.0, axis=1)
    assert np.all(still | around) and not np.any(np.all(off == pusht.ScriptedPushExpert()(AT_GOAL), axis=1))
    np.testing.assert_array_equal(policy(FAR_FROM_GOAL), expert_action)  # then a fresh expert takes over


def test_handoff_policy_stands_still_and_pushes_around_the_block_over_many_hand_offs():
    policy = pusht.HandoffPolicy(np.random.default_rng(1), box=100.0)
    actions = np.stack([policy(AT_GOAL) for _ in range(400)])
    still = np.all(actions == AT_GOAL[0:2], axis=1)
    assert 0.2 < still.mean() < 0.9  # both kinds of off-task step occur
    with pytest.raises(ValueError, match="levels"):
        pusht.HandoffPolicy(np.random.default_rng(0), box=100.0, levels=(0.9, 0.2))


def test_sweep_handoff_gives_targets_anywhere_in_the_arena_a_new_one_every_step_or_stands_still():
    policy = pusht.HandoffPolicy(np.random.default_rng(2), box=100.0, levels=(0.5, 0.5), off_steps=(40, 40),
                                 off="sweep")
    off = np.stack([policy(AT_GOAL) for _ in range(40)])
    still = np.all(off == AT_GOAL[0:2], axis=1)
    swept = off[~still]
    assert 0 < still.sum() < 40 and np.all((swept >= 0) & (swept <= pusht.ARENA_SIZE))
    cog = AT_GOAL[4:6] + pusht.policies._rotation(AT_GOAL[6]) @ pusht.policies._T_COG
    assert np.any(np.abs(swept - cog).max(axis=1) > 100.0)  # beyond the box the block pushes keep to
    assert len(np.unique(swept, axis=0)) == len(swept)  # never held
    config = PushTGenerationConfig(episodes=1, resolution=16, seed=3, max_steps=30, policy_weights={"sweep": 1.0})
    generator = pusht.PushTGenerator(config)
    assert generator.episode(0).policy == "sweep"
    generator.close()


def test_waypoint_handoff_drives_to_targets_anywhere_in_the_arena_each_held_for_a_while():
    policy = pusht.HandoffPolicy(np.random.default_rng(4), box=100.0, levels=(0.5, 0.5), off_steps=(60, 60),
                                 still=0.0, off="waypoint")
    off = np.stack([policy(AT_GOAL) for _ in range(60)])
    changes = np.flatnonzero(np.any(off[1:] != off[:-1], axis=1)) + 1
    runs = np.diff(np.concatenate([[0], changes, [len(off)]]))
    assert len(runs) >= 2 and np.all(runs[:-1] >= 5) and np.all(runs <= 30)  # held 5-30 steps (the last cut short)
    assert np.all((off >= 0) & (off <= pusht.ARENA_SIZE))
    with pytest.raises(ValueError, match="off must be"):
        pusht.HandoffPolicy(np.random.default_rng(0), box=100.0, off="elsewhere")
    with pytest.raises(ValueError, match="hold"):
        pusht.ArenaWaypointPolicy(np.random.default_rng(0), hold=(0, 3))
    config = PushTGenerationConfig(episodes=1, resolution=16, seed=3, max_steps=30, policy_weights={"waypoint": 1.0})
    generator = pusht.PushTGenerator(config)
    assert generator.episode(0).policy == "waypoint"
    generator.close()


def test_handoff_episodes_are_recorded_and_pure_functions_of_seed_and_index():
    config = PushTGenerationConfig(episodes=2, resolution=16, seed=3, max_steps=40, policy_weights={"handoff": 1.0})
    generator = pusht.PushTGenerator(config)
    first, again = generator.episode(1), generator.episode(1)
    generator.close()
    assert first.policy == "handoff" and (len(first) == 40 or first.success)
    _assert_same(first, again)


def test_save_and_load_are_bit_exact_and_dataset_reads_back(tmp_path, episodes):
    config = PushTGenerationConfig(episodes=2, resolution=RESOLUTION, seed=0, max_steps=STEPS)
    summary = pusht.generate_dataset(config, tmp_path, progress=False)
    assert summary["all"]["episodes"] == 2 and summary["generated_now"] == 2
    data = pusht.PushTEpisodeDataset(tmp_path)
    assert len(data) == 2 and data.config == config
    for stored, fresh in zip(data, episodes):
        _assert_same(stored, fresh)
        with np.load(data.paths[stored.index]) as raw:
            np.testing.assert_array_equal(raw["states"], fresh.states)
    assert json.loads((tmp_path / "summary.json").read_text())["all"]["episodes"] == 2
    assert data.frame_action_counts() == [(len(e) + 1, len(e)) for e in episodes]
    windows = FrameWindowDataset(data, WindowSpec.single_step(history=2))
    assert len(windows) == sum(len(e) - 1 for e in episodes)
    np.testing.assert_array_equal(windows[0].future[0], episodes[0].frames[2])

    again = pusht.generate_dataset(config, tmp_path, progress=False)  # resumable: nothing left to do
    assert again["generated_now"] == 0
    with pytest.raises(ValueError, match="another config"):
        pusht.generate_dataset(PushTGenerationConfig(episodes=2, resolution=RESOLUTION, seed=5, max_steps=STEPS),
                               tmp_path, progress=False)


def test_corrupt_episode_file_names_the_file(tmp_path, episodes):
    path = pusht.save_episode(tmp_path / "episode_000000.npz", episodes[0])
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="episode_000000.npz"):
        pusht.load_episode(path)
    broken = pusht.PushTEpisode(**{**episodes[0].__dict__, "actions": episodes[0].actions[:-1]})
    with pytest.raises(ValueError, match=r"malformed in \['actions'\]"):
        broken.validate()


def test_config_validation():
    with pytest.raises(ValueError, match="max_steps"):
        PushTGenerationConfig(max_steps=301).validate()
    with pytest.raises(ValueError, match="policy_weights"):
        PushTGenerationConfig(policy_weights={"teleport": 1.0}).validate()
    with pytest.raises(ValueError, match="resolution"):
        PushTGenerationConfig(resolution=8).validate()


def test_cli_functions(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    pusht.add_data_arguments(parser)
    args = parser.parse_args(["--episodes", "1", "--out", str(tmp_path), "--resolution", "32", "--max-steps", "3",
                              "--workers", "1", "--no-progress"])
    assert pusht.run_data_command(args) == 0
    printed = capsys.readouterr().out
    assert "success" in printed and "final cov" in printed and "1 episodes generated" in printed
    assert len(pusht.PushTEpisodeDataset(tmp_path)) == 1


def test_cli_policy_weights_pick_the_policies(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    pusht.add_data_arguments(parser)
    args = parser.parse_args(["--episodes", "2", "--out", str(tmp_path), "--resolution", "16", "--max-steps", "3",
                              "--workers", "1", "--no-progress", "--policy-weights", "random=1"])
    assert pusht.run_data_command(args) == 0
    assert {str(e.policy) for e in pusht.PushTEpisodeDataset(tmp_path)} == {"random"}
    for bad in ("random", "random=x"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--out", str(tmp_path), "--policy-weights", bad])
    args = parser.parse_args(["--out", str(tmp_path / "other"), "--policy-weights", "teleport=1"])
    assert pusht.run_data_command(args) == 2 and "policy_weights" in capsys.readouterr().err


def _small_dataset(tmp_path, episodes=2):
    config = PushTGenerationConfig(episodes=episodes, resolution=16, seed=0, max_steps=4)
    pusht.generate_dataset(config, tmp_path, progress=False)
    return config


def test_truncated_config_json_names_the_file_and_line(tmp_path):
    config = _small_dataset(tmp_path)
    path = tmp_path / "config.json"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # written through a temporary file
    path.write_text(path.read_text()[:60])
    for attempt in (lambda: pusht.PushTEpisodeDataset(tmp_path), lambda: pusht.generate_dataset(config, tmp_path)):
        with pytest.raises(DataError, match=r"config.json:\d+: the PushT config is not valid JSON \(column \d+"
                                            r".*delete it to start over"):
            attempt()
    path.write_text(json.dumps({"format": pusht.FORMAT_NAME, "version": pusht.FORMAT_VERSION,
                                "config": {"episodes": 2, "teleport": True}}))
    with pytest.raises(DataError, match=r"config.json: field 'config' is not a PushT generation config"):
        pusht.PushTEpisodeDataset(tmp_path)


def test_resume_redoes_corrupt_and_foreign_episode_files(tmp_path):
    config = _small_dataset(tmp_path, episodes=3)
    first = pusht.load_episode(tmp_path / "episodes" / "episode_000000.npz")
    truncated = tmp_path / "episodes" / "episode_000001.npz"
    truncated.write_bytes(truncated.read_bytes()[:300])
    # a whole file from a run with another seed, left behind after its config.json was deleted
    other = tmp_path / "other"
    pusht.generate_dataset(PushTGenerationConfig(episodes=3, resolution=16, seed=7, max_steps=4), other,
                           progress=False)
    (tmp_path / "episodes" / "episode_000002.npz").write_bytes((other / "episodes" / "episode_000002.npz").read_bytes())
    summary = pusht.generate_dataset(config, tmp_path, progress=False)
    reasons = {item["episode"]: item["reason"] for item in summary["redone"]}
    assert summary["generated_now"] == 2 and sorted(reasons) == [1, 2]
    assert "episode_000001.npz" in reasons[1] and "policy/noise/seed" in reasons[2]
    data = pusht.PushTEpisodeDataset(tmp_path)
    _assert_same(data[0], first)
    assert [pusht.plan_mismatch(e, config) for e in data] == [None, None, None]


def test_bad_episode_files_raise_data_errors_naming_the_file(tmp_path):
    _small_dataset(tmp_path)
    episodes = tmp_path / "episodes"
    path = episodes / "episode_000001.npz"
    arrays = dict(np.load(path))
    np.savez_compressed(path, **{**arrays, "index": np.array([1, 2])})
    with pytest.raises(DataError, match=r"episode_000001.npz: array 'index' has shape \(2,\), expected a scalar"):
        pusht.load_episode(path)
    np.savez_compressed(path, **{**arrays, "index": np.int64(5)})
    with pytest.raises(DataError, match=r"episode_000001.npz: holds episode 5, but its name says episode 1"):
        pusht.load_episode(path)
    path.write_bytes(b"PK\x03\x04 broken")
    data = pusht.PushTEpisodeDataset(tmp_path)
    with pytest.raises(DataError, match=r"episode_000001.npz: not a readable PushT episode npz"):
        FrameWindowDataset(data, WindowSpec.single_step(history=2))  # reads the episode lengths
    (episodes / "episode_\u00b2.npz").write_bytes((episodes / "episode_000000.npz").read_bytes())
    with pytest.raises(DataError, match="episode_\u00b2.npz: not an episode file name"):
        pusht.PushTEpisodeDataset(tmp_path)


def test_rerun_refuses_in_one_line_what_it_cannot_replace_and_redoes_the_rest(tmp_path, capsys):
    """A foreign file under an episode name outside the config, or a folder where an episode goes, ends
    the rerun with exit 1 and one line naming the path, before any work; once removed, the rerun
    writes the missing episode."""
    from rlvr_envs.cli import main

    _small_dataset(tmp_path)
    episodes = tmp_path / "episodes"
    argv = ["data", "pusht", "--episodes", "2", "--resolution", "16", "--max-steps", "4", "--seed", "0",
            "--workers", "1", "--no-progress", "--out", str(tmp_path)]
    foreign, folder = episodes / "episode_999999.npz", episodes / "episode_000001.npz"
    folder.unlink()
    for path, make, remove in ((foreign, lambda p: p.write_bytes(b"not a zip file"), Path.unlink),
                               (folder, Path.mkdir, Path.rmdir)):
        make(path)
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"rlvr-world: error: {path}: ") and "\n" not in err, err
        remove(path)
    assert main(argv) == 0
    assert "1 episodes generated" in capsys.readouterr().out
    assert len(pusht.PushTEpisodeDataset(tmp_path)) == 2


def test_block_escape_benchmark_counts_each_policy_with_and_without_reseating(tmp_path):
    from benchmarks.experiments.pusht_block_escapes import main

    out = tmp_path / "escapes.json"
    assert main(["--policies", "random", "--episodes", "2", "--max-steps", "5", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(row["policy"], row["reseat_each_step"]) for row in rows] == [("random", True), ("random", False)]
    for row in rows:
        assert row["steps"] == 2 * 6 and 0 <= row["steps_out"] <= row["steps"]  # 5 steps after the start state
        assert row["share_of_steps_out"] == row["steps_out"] / row["steps"]
    with pytest.raises(SystemExit):
        main(["--policies", "bogus"])


def test_an_episode_ends_at_the_step_that_pushes_the_block_out_of_the_arena(tmp_path, capsys):
    """Random episode 6 of seed 0 squeezes the block through a wall at step 23 (gym-pusht's agent
    is kinematic); by default the episode ends there, so exactly one recorded frame lacks the block."""
    from rlvr_envs.video.pusht.physics import block_in_arena

    def random_episode(**options):
        config = PushTGenerationConfig(episodes=7, resolution=16, seed=0, max_steps=40,
                                       policy_weights={"random": 1.0}, **options)
        generator = pusht.PushTGenerator(config)
        try:
            return generator.episode(6)
        finally:
            generator.close()

    ended, ran_on = random_episode(), random_episode(end_when_block_leaves=False)
    inside = [block_in_arena(row) for row in ended.physics]
    assert len(ended) == 23 and inside == [True] * 23 + [False] and not ended.success
    assert len(ran_on) == 40 and not block_in_arena(ran_on.physics[-1])
    np.testing.assert_array_equal(ended.physics, ran_on.physics[:24])  # the same steps up to the escape

    # a folder written before the option ran its episodes on: it reads and resumes as it was made
    old = PushTGenerationConfig(episodes=1, resolution=16, seed=0, max_steps=4, end_when_block_leaves=False)
    pusht.generate_dataset(old, tmp_path, progress=False)
    meta = json.loads((tmp_path / "config.json").read_text())
    del meta["config"]["end_when_block_leaves"]
    (tmp_path / "config.json").write_text(json.dumps(meta))
    assert pusht.PushTEpisodeDataset(tmp_path).config == old
    assert pusht.generate_dataset(old, tmp_path, progress=False)["generated_now"] == 0
    parser = argparse.ArgumentParser()
    pusht.add_data_arguments(parser)
    argv = ["--episodes", "1", "--out", str(tmp_path), "--resolution", "16", "--max-steps", "4", "--seed", "0",
            "--workers", "1", "--no-progress"]
    with pytest.raises(DataError, match="add --keep-escaped-blocks to finish it as it was made"):
        pusht.run_data_command(parser.parse_args(argv))
    assert pusht.run_data_command(parser.parse_args([*argv, "--keep-escaped-blocks"])) == 0


def test_each_test_worker_generates_data_in_a_root_of_its_own():
    """Two pytest-xdist workers generating the same embedded held-out set at once would refuse each
    other's lock; each must have its own root, not the one it inherits from the controller."""
    import os

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        pytest.skip("one test process: no worker to share a data root with (README's command runs two)")
    assert os.environ["RLVR_WORLD_DATA"].endswith(f"-{worker}")
