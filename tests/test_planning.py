"""CEM planning: the optimiser itself, objectives, the shared MPC loop with the true simulator,
random actions and a (tiny, untrained) learned simulator, seeding, and the summary statistics.
Tiny budgets only (8 samples, 2 iterations, horizon 2)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

TINY = dict(horizon=2, samples=8, top_k=2, iterations=2)


@pytest.fixture(scope="module")
def task():
    """Start and goal 10 simulator steps apart on the scripted expert's path (a reachable goal)."""
    from rlvr_envs.planning import PlanningTask
    from rlvr_envs.video import pusht

    env = pusht.make_env(64, 40, render=False)
    env.reset(seed=5)
    record = pusht.run_policy(env, pusht.physics_state(env), pusht.ScriptedPushExpert(), 40, record_frames=False)
    env.close()
    from rlvr_envs.simulators import dino_wm_success

    assert not dino_wm_success(record["physics"][5], record["physics"][35])[0]
    return PlanningTask(0, record["physics"][5], record["physics"][35], "expert seed 5")


@pytest.fixture(scope="module")
def real():
    from rlvr_envs.simulators import PushTChunkEnv

    env = PushTChunkEnv(max_steps=10)
    yield env
    env.close()


def test_defaults_are_dino_wm_and_cem_minimises_a_quadratic():
    from rlvr_envs.planning import CEMConfig, cem_optimize

    assert (CEMConfig().horizon, CEMConfig().samples, CEMConfig().top_k, CEMConfig().iterations) == (5, 300, 30, 30)
    target = np.random.default_rng(0).uniform(100, 400, size=(2, 5, 2))
    cost = lambda a: ((a - target) ** 2).reshape(len(a), -1).mean(axis=1)  # noqa: E731
    config = CEMConfig(horizon=2, samples=64, top_k=8, iterations=12, init_std=80.0)
    plan, trace = cem_optimize(cost, config, np.full(2, 256.0), np.random.default_rng(0))
    assert np.abs(plan - target).mean() < 0.4 * np.abs(256.0 - target).mean() and trace["best_cost"][-1] < trace["best_cost"][0]
    again, _ = cem_optimize(cost, config, np.full(2, 256.0), np.random.default_rng(0))
    assert np.array_equal(plan, again)
    with pytest.raises(ValueError):
        CEMConfig(samples=4, top_k=8).validate()


def test_embeddings():
    from rlvr_envs.planning import embedding
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.task import default_tokenizer_dir

    frames = np.random.default_rng(0).integers(0, 255, size=(3, 64, 64, 3), dtype=np.uint8)
    assert embedding("pixels")(frames).shape == (3, 64 * 64 * 3)
    latent = embedding("tokenizer", FrameTokenizer.load(default_tokenizer_dir()))(frames)
    assert latent.shape[0] == 3 and np.isfinite(latent).all()
    assert embedding(lambda f: torch.ones(len(f), 7))(frames).shape == (3, 7)
    with pytest.raises(ValueError, match="tokenizer="):
        embedding("tokenizer")


def test_blurred_pixels_keep_pricing_distance_after_plain_pixels_saturate(task, real):
    from rlvr_envs.planning import OBJECTIVES, embedding

    assert "blurred_pixels" in OBJECTIVES
    goal_physics = np.array(task.start, dtype=np.float64)
    goal_physics[0:2] = [150.0, 400.0]  # the agent far from the block
    goal = real.render_physics(goal_physics)
    costs = {}
    for kind in ("pixels", "blurred_pixels"):
        embed = embedding(kind)
        target = embed(goal[None])
        frames = []
        for gap in (0.0, 60.0, 120.0, 180.0):  # px the agent sits right of its goal
            moved = goal_physics.copy()
            moved[0] += gap
            frames.append(real.render_physics(moved))
        costs[kind] = ((embed(np.stack(frames)) - target) ** 2).mean(axis=1)
    plain, blurred = costs["pixels"], costs["blurred_pixels"]
    assert plain[0] == blurred[0] == 0.0
    assert plain[3] == pytest.approx(plain[1], rel=0.05)  # no overlap left: the plain cost no longer grows
    assert blurred[1] < blurred[2] < blurred[3]  # the blurred one does
    assert embedding("blurred_pixels")(goal[None]).shape == (1, 4 * 64 * 64 * 3)


def test_pose_embedding_reads_the_real_state_and_prices_a_lost_object_above_any_placement(task, real):
    from rlvr_envs.planning import embedding
    from rlvr_envs.planning.cem import POSE_ANGLE_SCALE, POSE_MISSING
    from rlvr_envs.simulators.real import gym_state

    start, _ = real.reset(options={"physics": task.start})
    goal = real.render_physics(task.goal)
    features = embedding("pose")(np.stack([start, goal]))
    for row, physics in zip(features, (task.start, task.goal)):
        state = gym_state(physics)
        assert np.abs(row[:4] - state[:4]).max() < 6.0  # px, from 64x64 frames
        angle = np.arctan2(row[5], row[4])
        assert abs((angle - state[4] + np.pi) % (2 * np.pi) - np.pi) < 0.1
        assert np.hypot(row[4], row[5]) == pytest.approx(POSE_ANGLE_SCALE)
    # a frame without the block (white where it was) costs more than the farthest placement
    no_block = start.copy()
    block_pixels = (np.ptp(start.astype(int), axis=2) < 50) & (start.sum(axis=2) < 600) & (start.sum(axis=2) > 300)
    no_block[block_pixels] = 255
    lost = embedding("pose")(no_block[None])[0]
    assert (lost[2:] == POSE_MISSING).all() and np.allclose(lost[:2], features[0, :2])
    farthest = features[1].copy()
    farthest[2:4] = np.where(farthest[2:4] < 256, 512.0, 0.0)
    farthest[4:6] = -farthest[4:6]
    assert ((lost - features[1]) ** 2).mean() > ((farthest - features[1]) ** 2).mean()


def test_true_simulator_cem_and_random_share_the_loop_and_are_seeded(task, real):
    from rlvr_envs.planning import CEMConfig, CEMPlanner, MPCConfig, RandomPlanner, run_episode
    from rlvr_envs.simulators import PushTChunkEnv

    config = CEMConfig(**TINY)
    true_sim = PushTChunkEnv()
    planner = CEMPlanner(true_sim, config, "pixels", name="true_sim_cem")
    mpc = MPCConfig(rounds=2)
    first = run_episode(real, planner, task, mpc, seed=1, record=True)
    second = run_episode(real, planner, task, mpc, seed=1)
    assert first.as_dict() | {"seconds": 0} == second.as_dict() | {"seconds": 0}
    assert 1 <= first.chunks <= 4 and first.frames.shape[1:] == (64, 64, 3)
    assert first.predicted.shape == (2, 64, 64, 3)  # the first plan as the simulator saw it
    randomly = run_episode(real, RandomPlanner(config), task, mpc, seed=1)
    assert randomly.planner == "random" and 1 <= randomly.chunks <= 4
    true_sim.close()


def test_cem_on_a_learned_simulator_never_sees_the_state(task, real):
    from rlvr_envs.planning import CEMConfig, CEMPlanner, MPCConfig, Observation, run_episode
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.task import default_tokenizer_dir
    from rlvr_envs.video.world_model import build_world_model

    tokenizer = FrameTokenizer.load(default_tokenizer_dir())
    model = build_world_model(VideoVocabulary(tokenizer.config.codebook_size, 256), 300, "tiny")
    sim = LearnedPushTSim(model, tokenizer, reward="none", batch_size=8)
    seen = []

    class Spy(CEMPlanner):
        def plan(self, observation: Observation, rng):
            seen.append(observation.physics)
            return super().plan(observation, rng)

    result = run_episode(real, Spy(sim, CEMConfig(**TINY), "tokenizer", name="learned"), task,
                         MPCConfig(rounds=1), seed=0)
    assert seen == [None] and result.chunks == 2 and result.planner == "learned"


def test_blind_cem_searches_around_the_agent_without_looking_at_the_goal(task, real):
    from rlvr_envs.planning import BlindCEMPlanner, CEMConfig, MPCConfig, Observation, run_episode

    planner = BlindCEMPlanner(CEMConfig(**TINY))
    frame = real.render_physics(task.start)
    agent = np.asarray(task.start[0:2])
    plans = [planner.plan(Observation(frame[None], None, goal, agent), np.random.default_rng(3))
             for goal in (frame, np.zeros_like(frame))]
    assert plans[0].shape == (2, 5, 2) and np.array_equal(plans[0], plans[1])  # the goal plays no part
    assert np.abs(plans[0] - agent).max() < 4 * CEMConfig(**TINY).init_std  # a search around the agent
    result = run_episode(real, planner, task, MPCConfig(rounds=1), seed=0)
    assert result.planner == "cem_blind" and result.chunks == 2


def test_planning_tasks_and_summary():
    from rlvr_envs.planning import EpisodeResult, planning_tasks, success_summary, wilson_interval

    class Episode:
        def __init__(self, n, index):
            self.physics, self.index = np.arange(n * 10, dtype=float).reshape(n, 10), index

    tasks = planning_tasks([Episode(10, 0), Episode(40, 1)], 5, offset=25, seed=0)  # never at the goal
    assert len(tasks) == 5 and all(t.goal[0] - t.start[0] == 250 for t in tasks)
    assert [t.source for t in tasks] == [t.source for t in planning_tasks([Episode(10, 0), Episode(40, 1)], 5, 25, 0)]
    low, high = wilson_interval(8, 10)
    assert 0.44 < low < 0.5 and 0.94 < high < 0.98
    results = [EpisodeResult(i, "x", i < 3, 2, 1.0, 0.1, 1.0, 0.5) for i in range(4)]
    summary = success_summary(results)
    assert summary["success_rate"] == 0.75 and summary["successes"] == 3


def test_planning_tasks_attach_the_recorded_history_before_the_start():
    from rlvr_envs.planning import planning_tasks

    class Episode:
        def __init__(self, n, index):
            self.physics, self.index = np.arange(n * 10, dtype=float).reshape(n, 10), index
            self.frames = np.arange(n, dtype=np.uint8)[:, None, None, None] * np.ones((1, 4, 4, 3), np.uint8)
            self.actions = np.arange((n - 1) * 2, dtype=float).reshape(n - 1, 2)

    episodes = [Episode(60, 0), Episode(40, 1)]
    plain, with_history = planning_tasks(episodes, 12, seed=1), planning_tasks(episodes, 12, seed=1, history=2)
    assert [t.source for t in plain] == [t.source for t in with_history]  # the same pairs are drawn
    assert all(t.history_frames is None and t.history_actions is None for t in plain)
    lengths = set()
    for task in with_history:
        step = int(task.start[0]) // 10 % (60 if task.source.startswith("episode 0") else 40)
        episode = episodes[int(task.source.split()[1])]
        expected = [s for s in (step - 10, step - 5) if s >= 0]
        lengths.add(len(expected))
        if not expected:
            assert task.history_frames is None and task.history_actions is None
            continue
        assert [int(f[0, 0, 0]) for f in task.history_frames] == expected  # a frame every chunk, oldest first
        assert np.array_equal(task.history_actions, np.stack([episode.actions[s:s + 5] for s in expected]))
    assert 2 in lengths
    with pytest.raises(ValueError, match="history"):
        planning_tasks(episodes, 1, history=-1)


def test_a_learned_simulator_plans_from_the_recorded_history(task, real):
    from rlvr_envs.planning import CEMConfig, CEMPlanner, MPCConfig, Observation, PlanningTask, run_episode
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.task import default_tokenizer_dir
    from rlvr_envs.video.world_model import build_world_model

    tokenizer = FrameTokenizer.load(default_tokenizer_dir())
    model = build_world_model(VideoVocabulary(tokenizer.config.codebook_size, 256), 300, "tiny")
    sim = LearnedPushTSim(model, tokenizer, reward="none", batch_size=8)
    history_frames = np.stack([real.render_physics(task.start)] * 2)
    history_frames[0, :4] = 0  # marks the oldest frame
    history_actions = np.full((2, 5, 2), 100.0)
    with_history = PlanningTask(0, task.start, task.goal, task.source, history_frames, history_actions)
    seen = []

    class Spy(CEMPlanner):
        def plan(self, observation: Observation, rng):
            actions = None if observation.actions is None else observation.actions.copy()
            seen.append((observation.frames.copy(), actions))
            return super().plan(observation, rng)

    planner = Spy(sim, CEMConfig(**TINY), "pixels", name="learned")
    result = run_episode(real, planner, with_history, MPCConfig(rounds=2, execute=1), seed=0)
    (first_frames, first_actions), (second_frames, second_actions) = seen
    assert first_frames.shape[0] == 3 and np.array_equal(first_frames[:2], history_frames)
    assert np.array_equal(first_actions, history_actions)
    # after one executed chunk the newest recorded frame and chunk are the oldest the model still sees
    assert np.array_equal(second_frames[0], history_frames[1]) and np.array_equal(second_actions[0], history_actions[1])
    assert not np.array_equal(second_actions[1], history_actions[1])  # then the chunk played in the real env
    assert result.chunks == 2 and len(seen) == 2
    run_episode(real, planner, task, MPCConfig(rounds=1), seed=0)  # no history: the start frame alone
    assert seen[-1][0].shape[0] == 1 and seen[-1][1] is None


def test_plan_command_writes_results_and_gifs(tmp_path, capsys):
    import json

    from rlvr_envs.cli import main

    out = tmp_path / "plan"
    code = main(["plan", "--planners", "random,true_sim", "--episodes", "1", "--horizon", "2", "--samples", "4",
                 "--top-k", "2", "--iterations", "1", "--rounds", "1", "--heldout-episodes", "2", "--gifs", "1",
                 "--out", str(out)])
    assert code == 0 and "95% CI" in capsys.readouterr().out
    report = json.loads((out / "results.json").read_text())
    assert set(report["summary"]) == {"random", "true_sim"} and len(report["episodes"]) == 2
    assert report["command"].startswith("rlvr-world plan --planners random,true_sim --heldout-episodes 2")
    assert "--command" not in report["command"] and "--resume" not in report["command"]
    assert (out / "gifs" / "true_sim_000.gif").is_file()
    # the true simulator has no tokenizer of its own: the "tokenizer" objective borrows the shipped one
    assert main(["plan", "--planners", "true_sim", "--episodes", "1", "--horizon", "1", "--samples", "4", "--top-k",
                 "2", "--iterations", "1", "--rounds", "1", "--heldout-episodes", "2", "--gifs", "0", "--objective",
                 "tokenizer", "--out", str(tmp_path / "tokenizer")]) == 0


def test_plan_command_resume_keeps_finished_episodes(tmp_path):
    import json

    import pytest

    from rlvr_envs.cli import main

    out = tmp_path / "plan"
    budget = ["--horizon", "1", "--samples", "4", "--top-k", "2", "--iterations", "1", "--rounds", "1",
              "--heldout-episodes", "2", "--gifs", "0", "--out", str(out)]
    assert main(["plan", "--planners", "random", "--episodes", "2", *budget]) == 0
    first = json.loads((out / "results.json").read_text())["episodes"]
    first[0]["seconds"] = 12345.0  # a marker: a resumed run must keep this row, not recompute it
    report = json.loads((out / "results.json").read_text())
    report["episodes"] = first
    (out / "results.json").write_text(json.dumps(report))
    assert main(["plan", "--planners", "random", "--episodes", "3", "--resume", *budget]) == 0
    resumed = json.loads((out / "results.json").read_text())
    assert [r["index"] for r in resumed["episodes"]] == [0, 1, 2]
    assert resumed["episodes"][0]["seconds"] == 12345.0 and resumed["episodes"][:2] == first
    assert resumed["summary"]["random"]["episodes"] == 3 and "--resume" in resumed["command"]
    with pytest.raises(SystemExit, match="another budget"):
        main(["plan", "--planners", "random", "--episodes", "3", "--resume", *budget[:-2], "--samples", "8",
              "--out", str(out)])
    with pytest.raises(SystemExit, match="objective 'pixels', not 'pose'"):
        main(["plan", "--planners", "random", "--episodes", "3", "--resume", "--objective", "pose", *budget])
    with pytest.raises(SystemExit, match="--history 0, not 2"):
        main(["plan", "--planners", "random", "--episodes", "3", "--resume", "--history", "2", *budget])
    assert main(["plan", "--planners", "random", "--episodes", "1", "--history", "2", *budget[:-1],
                 str(tmp_path / "history")]) == 0
    assert json.loads((tmp_path / "history" / "results.json").read_text())["history"] == 2
    from benchmarks.pusht_planning import merge

    with pytest.raises(SystemExit, match="history frames"):
        merge([str(out), str(tmp_path / "history")], tmp_path / "merged")


def test_separate_planner_runs_merge_into_one_report(tmp_path):
    import json

    import pytest

    from benchmarks.pusht_planning import merge
    from rlvr_envs.cli import main

    budget = ["--episodes", "2", "--horizon", "1", "--samples", "4", "--top-k", "2", "--iterations", "1",
              "--rounds", "1", "--heldout-episodes", "2", "--gifs", "1"]
    for planner in ("random", "true_sim"):
        assert main(["plan", "--planners", planner, *budget, "--out", str(tmp_path / planner)]) == 0
    merged = merge([str(tmp_path / "random"), str(tmp_path / "true_sim")], tmp_path / "merged")
    assert set(merged["summary"]) == {"random", "true_sim"} and len(merged["episodes"]) == 4
    assert json.loads((tmp_path / "merged" / "results.json").read_text())["summary"] == merged["summary"]
    assert (tmp_path / "merged" / "success.png").stat().st_size > 0
    assert (tmp_path / "merged" / "gifs" / "true_sim_000.gif").is_file()
    with pytest.raises(SystemExit, match="more than one run"):
        merge([str(tmp_path / "random"), str(tmp_path / "random")], tmp_path / "again")
    # planners picked from an earlier merged report, written where --out says
    from benchmarks.pusht_planning import main as merge_main

    assert main(["plan", "--planners", "random", *budget, "--out", str(tmp_path / "random2")]) == 0
    assert merge_main(["--merge", f"{tmp_path / 'merged'}:true_sim", str(tmp_path / "random2"),
                       "--out", str(tmp_path / "picked")]) == 0
    picked = json.loads((tmp_path / "picked" / "results.json").read_text())
    assert set(picked["summary"]) == {"true_sim", "random"} and len(picked["episodes"]) == 4
    assert picked["summary"]["true_sim"] == merged["summary"]["true_sim"]
    assert [c.split("--planners ")[1].split()[0] for c in picked["command"]] == ["true_sim", "random"]
    assert sorted(p.name for p in (tmp_path / "picked" / "gifs").iterdir()) == ["random_000.gif", "true_sim_000.gif"]
    with pytest.raises(SystemExit, match="no planner"):
        merge([f"{tmp_path / 'merged'}:base", str(tmp_path / "random2")], tmp_path / "again")
    budget[budget.index("--samples") + 1] = "8"
    assert main(["plan", "--planners", "true_sim", *budget, "--out", str(tmp_path / "other")]) == 0
    with pytest.raises(SystemExit, match="another cem"):
        merge([str(tmp_path / "random"), str(tmp_path / "other")], tmp_path / "again")
    assert main(["plan", "--planners", "true_sim", *budget[:budget.index("--samples") + 1], "4",
                 *budget[budget.index("--samples") + 2:], "--objective", "pose", "--out", str(tmp_path / "pose")]) == 0
    assert json.loads((tmp_path / "pose" / "results.json").read_text())["objective"] == "pose"
    with pytest.raises(SystemExit, match="objective 'pose'"):
        merge([str(tmp_path / "random"), str(tmp_path / "pose")], tmp_path / "again")
