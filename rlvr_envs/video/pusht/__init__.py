"""PushT trajectories recorded from the real `gym_pusht/PushT-v0` simulator.

Why generate instead of download: PushT is simulable here, so data can cover what a
world model must see (successful pushes, near misses, aimless contact) in the real
physics and renderer, at any resolution, reproducibly from a seed.

The package, by seam:

- `physics`: the simulator, its exact 10-number state (`PHYSICS_FIELDS`), and
  `restore_physics_state`, which puts the simulator exactly into a recorded state;
- `policies`: the scripted policies (expert pusher at noise levels, random, replay of the
  expert's plan from a perturbed start, CEM-like targets) and the rollout loop `run_policy`;
- `episodes`: the generation config, the episode record, and `PushTGenerator`, which
  makes episode i a pure function of (config, i);
- `storage`: npz episode files, `config.json`, and `PushTEpisodeDataset`;
- `judge`: PushT success read from frames (block pose from pixels -> goal coverage), for
  learned simulators, which have no physics state (imported by name, not re-exported);
- `command`: `generate_dataset` (resumable, parallel, one run per folder) and the
  `rlvr-world data pusht` command.

Everything is re-exported here, so `from rlvr_envs.video import pusht; pusht.X` works.

Episodes end at success (coverage > 0.95, the env's own criterion) or after `max_steps`.
To make restores exact, the generator re-seats the recorded state into a fresh pymunk
space before every step (`reseat_each_step=True`, default; see `episodes`), so a restore
anywhere in a recorded episode reproduces every later state and frame bit for bit.

On-disk format (`FORMAT_NAME`, version `FORMAT_VERSION`)::

    OUT/config.json                   the PushTGenerationConfig, format name and version
    OUT/summary.json                  success rate and coverage, overall and per policy
    OUT/.rlvr-world.lock              the run writing OUT (pid, command, workers)
    OUT/episodes/episode_000000.npz   one np.savez_compressed file per episode:
        frames    uint8   [T+1, R, R, 3]  RGB, frame t shows physics[t]
        actions   float32 [T, 2]          absolute target (x, y) in pixels applied at t
        physics   float64 [T+1, 10]       PHYSICS_FIELDS
        states    float64 [T+1, 5]        agent_x, agent_y, block_x, block_y, block_angle mod 2pi
                                          (gym-pusht's `obs_type="state"` and DINO-WM's layout)
        coverage  float64 [T+1]           goal coverage of the T
        success   bool    []              coverage exceeded 0.95
        policy    str     []              expert | random | replay | cem
        noise     float64 []              expert target noise std (pixels); 0 otherwise
        seed      int64   []              the episode's reset seed
        index     int64   []              the episode's index

npz is lossless, so `load_episode(save_episode(e)) == e` bit for bit.
"""

from rlvr_envs.core.files import OutputInUse
from rlvr_envs.video.pusht.command import (
    EpisodeWriter,
    add_data_arguments,
    format_summary,
    generate_dataset,
    run_data_command,
)
from rlvr_envs.video.pusht.episodes import (
    EpisodePlan,
    PushTEpisode,
    PushTFormatError,
    PushTGenerationConfig,
    PushTGenerator,
    episode_plan,
    episode_seed_sequence,
    episode_stats,
    plan_mismatch,
    replay_episode,
    summarize,
)
from rlvr_envs.video.pusht.physics import (
    AGENT_RADIUS,
    ARENA_SIZE,
    ENV_ID,
    GOAL_POSE,
    PHYSICS_FIELDS,
    SUCCESS_COVERAGE,
    goal_coverage,
    gym_state,
    make_env,
    physics_state,
    render_frame,
    restore_physics_state,
)
from rlvr_envs.video.pusht.policies import (
    POLICIES,
    ArenaSweepPolicy,
    ArenaWaypointPolicy,
    CEMLikePolicy,
    HandoffPolicy,
    RandomBlockPolicy,
    ScriptedPushExpert,
    cem_like_targets,
    perturb_start,
    plan_expert_actions,
    run_policy,
)
from rlvr_envs.video.pusht.storage import (
    EPISODE_FILE,
    EPISODE_NAME,
    FORMAT_NAME,
    FORMAT_VERSION,
    PushTEpisodeDataset,
    load_episode,
    read_config,
    save_episode,
)

__all__ = [
    "AGENT_RADIUS", "ARENA_SIZE", "ENV_ID", "EPISODE_FILE", "EPISODE_NAME", "FORMAT_NAME", "FORMAT_VERSION",
    "GOAL_POSE", "PHYSICS_FIELDS", "POLICIES", "SUCCESS_COVERAGE", "ArenaSweepPolicy", "ArenaWaypointPolicy", "CEMLikePolicy", "EpisodePlan",
    "EpisodeWriter", "HandoffPolicy", "OutputInUse", "PushTEpisode", "PushTEpisodeDataset", "PushTFormatError",
    "PushTGenerationConfig", "PushTGenerator", "RandomBlockPolicy", "ScriptedPushExpert", "add_data_arguments",
    "cem_like_targets", "episode_plan", "episode_seed_sequence", "episode_stats", "format_summary", "generate_dataset",
    "goal_coverage", "gym_state", "load_episode", "make_env", "perturb_start", "physics_state", "plan_expert_actions",
    "plan_mismatch", "read_config", "render_frame", "replay_episode", "restore_physics_state", "run_data_command",
    "run_policy", "save_episode", "summarize",
]
