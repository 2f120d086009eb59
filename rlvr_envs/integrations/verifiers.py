"""verifiers adapter: any text or web id as a `verifiers` environment (the `[verifiers]` extra).

    from rlvr_envs.integrations.verifiers import load_environment
    env = load_environment("RLVRWorld/MiniTextWorld-v0", split="train", size=256)

verifiers (0.4, `import verifiers.v1 as vf`) composes an environment from a taskset (the rows),
a task type (its `@vf.reward` / `@vf.metric` scoring) and agents (the policy's seat). Here:
- every transition of the id is one task whose prompt is `task.prompt_text(i)` (the text
  the env's prompt ids are the tokenization of);
- scoring is our verifier (`verify_text` on the model's final reply): the task's reward is
  the weight-1 reward `rlvr_world` (so the trace's total reward is exactly the env's reward),
  and every component of it (`metrics`), `parsed` and `max_reward` are metrics;
- next-state ids are single-turn (one reply, scored); `RLVRWorld/MiniWeb-Goal-v0` is
  multi-turn: each reply is one WebArena action, the env's next page is the next user turn,
  and the episode's reward is the env's (1 when the goal holds on the true site state).

verifiers' own CLI and trainers (prime-rl) find tasksets as installed packages by id; this
distribution installs the package `rlvr_world` for that, so the id is `rlvr-world`:

    vf-eval rlvr-world --env.taskset.env-id RLVRWorld/MiniTextWorld-v0 ...

`load_environment` is the same thing from Python. The agent runs in a local subprocess by default
(the tasks need no container); pass `agent=vf.AgentConfig(...)` to choose its model, client,
harness or runtime.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from rlvr_envs.core.extras import needs_extra

with needs_extra("rlvr_envs.integrations.verifiers (a verifiers environment)", extra="verifiers"):
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig
    from verifiers.v1.runtimes import SubprocessConfig

#: the taskset id verifiers' loader imports (the `rlvr_world` package re-exports this module's classes)
TASKSET_ID = "rlvr-world"
GOAL_ENV_ID = "RLVRWorld/MiniWeb-Goal-v0"
#: the weight-1 reward's name on a trace
REWARD_NAME = "rlvr_world"


class RLVRWorldData(vf.TaskData):
    """One task: a transition of a next-state id (`index`, its `uid`), or a MiniWeb-Goal episode."""

    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    index: int
    uid: str | None = None
    answer: str | None = None  #: the gold answer (next-state ids), for reference and evaluation


class RLVRWorldTask(vf.Task[RLVRWorldData]):
    """Scoring: our verifier on the final reply (next-state ids), or the env's own episode reward
    recorded by `RLVRWorldEnv.run` (MiniWeb-Goal)."""

    def _result(self, trace) -> dict[str, Any]:
        cached = trace.info.get(REWARD_NAME)
        if cached is not None:
            return cached
        data = self.data
        if data.env_id == GOAL_ENV_ID:  # the run did not finish the episode (an error before any step)
            result = {"reward": 0.0, "metrics": {}, "parsed": False, "max_reward": 1.0}
        else:
            from rlvr_envs.registration import task_from_env_id

            task = task_from_env_id(data.env_id, **data.env_kwargs)
            verified = task.verify_text([data.index], [reply_text(trace)])[0]
            result = {"reward": float(verified.reward), "parsed": bool(verified.parsed),
                      "max_reward": float(verified.max_reward), "error": verified.error,
                      "metrics": {k: float(v) for k, v in verified.metrics.items()
                                  if isinstance(v, (int, float)) and math.isfinite(float(v))}}
        trace.info[REWARD_NAME] = result
        return result

    async def validate(self, runtime=None) -> bool | None:
        """verifiers' gold check (`vf-validate`): the gold answer scores the transition's maximum."""
        data = self.data
        if data.env_id == GOAL_ENV_ID or data.answer is None:
            return None
        from rlvr_envs.registration import task_from_env_id

        task = task_from_env_id(data.env_id, **data.env_kwargs)
        result = task.verify_text([data.index], [data.answer])[0]
        return bool(result.parsed and result.reward >= result.max_reward)

    @vf.reward(weight=1.0)
    async def rlvr_world(self, trace) -> float:
        """The env's reward, exactly."""
        return self._result(trace)["reward"]

    @vf.metric
    async def components(self, trace) -> dict[str, float]:
        """Every reward component, `parsed` and `max_reward`."""
        result = self._result(trace)
        return {**result["metrics"], "parsed": float(result["parsed"]), "max_reward": result["max_reward"]}


def reply_text(trace) -> str:
    """The model's final reply as it was sent (not stripped: the verifier sees what the env would)."""
    if trace.root_reply is not None:
        return trace.root_reply
    messages = trace.assistant_messages
    return (messages[-1].content or "") if messages else ""


class RLVRWorldTasksetConfig(vf.TasksetConfig):
    env_id: str = "RLVRWorld/MiniTextWorld-v0"
    """A registered text or web id, or RLVRWorld/MiniWeb-Goal-v0."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Its `gym.make` arguments (split, size, data_dir, reward, ...)."""
    indices: list[int] | None = None
    """Which transitions (episodes for MiniWeb-Goal), in order; None: all."""


class RLVRWorldTaskset(vf.Taskset[RLVRWorldTask, RLVRWorldTasksetConfig]):
    """The transitions of `env_id` as verifiers tasks (one per transition, in order)."""

    def load(self) -> Iterator[RLVRWorldTask]:
        config = self.config
        if config.env_id == GOAL_ENV_ID:
            from rlvr_envs.web.goals import MiniWebGoalConfig

            size = MiniWebGoalConfig(**config.env_kwargs).size
            for i in (range(size) if config.indices is None else config.indices):
                yield RLVRWorldTask(RLVRWorldData(env_id=config.env_id, env_kwargs=config.env_kwargs, index=int(i),
                                                  name=f"{config.env_id}#{i}"), config.task)
            return
        from rlvr_envs.registration import task_from_env_id

        task = task_from_env_id(config.env_id, **config.env_kwargs)
        for i in (range(len(task)) if config.indices is None else config.indices):
            transition = task.transition(int(i))
            yield RLVRWorldTask(RLVRWorldData(env_id=config.env_id, env_kwargs=config.env_kwargs, index=int(i),
                                              uid=transition.uid, id=transition.uid, name=transition.uid,
                                              prompt=task.prompt_text(int(i)), answer=task.target_text(int(i))),
                                config.task)


class RLVRWorldHarness(NullHarness):
    """The default program of the agent seat: a plain chat (no tools, no code execution)."""


class RLVRWorldHarnessConfig(NullHarnessConfig):
    pass


class RLVRWorldEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig()


class RLVRWorldEnv(vf.Env[RLVRWorldEnvConfig]):
    """One agent seat. Next-state tasks: the agent answers the prompt once. MiniWeb-Goal: the env
    plays the user, each reply is a WebArena action on the live env (`step`), the next page is
    the next turn, until the goal holds, the step limit, or the agent stops."""

    async def run(self, task, agents) -> None:
        if task.data.env_id != GOAL_ENV_ID:
            await agents.agent.run(task)
            return
        await play_goal_episode(task, agents.agent)


def goal_turn(observation: dict[str, str], error: str | None = None) -> str:
    """A MiniWeb-Goal observation as the user turn the agent reads."""
    lines = [f"Goal: {observation['goal']}", f"URL: {observation['url']}", "Page:", observation["page"],
             "Actions you can take (reply with exactly one):", observation["actions"]]
    if error:
        lines.insert(0, f"Your last action was rejected: {error}")
    return "\n".join(lines)


async def play_goal_episode(task, agent) -> None:
    """One MiniWeb-Goal episode with `agent` through verifiers' turn-by-turn interaction."""
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    data = task.data
    env = gym.make(data.env_id, **data.env_kwargs)
    observation, _ = env.reset(options={"index": data.index})
    total, steps, done, error = 0.0, 0, False, None
    async with agent.interaction(task) as interaction:
        segment = await interaction.turn(goal_turn(observation))
        while not segment.terminated and not done:
            action = (segment.last_reply or "").strip()
            if not action:
                interaction.trace.stop("empty_action")
                break
            observation, reward, terminated, truncated, info = env.step(action)
            total, steps, done, error = total + float(reward), steps + 1, terminated or truncated, info.get("error")
            if not done:
                segment = await interaction.turn(goal_turn(observation, error))
        interaction.trace.info[REWARD_NAME] = {"reward": total, "metrics": {"steps": float(steps)},
                                               "parsed": True, "max_reward": 1.0}


def load_environment(env_id: str, indices: list[int] | None = None, agent: Any = None, **env_kwargs: Any):
    """`env_id` (a text or web id, or MiniWeb-Goal-v0) as a verifiers environment (`RLVRWorldEnv`);
    `env_kwargs` are its `gym.make` arguments, checked here (a bad one is a one-line ValueError)."""
    from rlvr_envs.registration import ENVS, check_env_kwargs, entry

    name = env_id.split(":", 1)[-1]
    if name != GOAL_ENV_ID:
        known = {e.id for e in ENVS}
        if name not in known:
            raise ValueError(f"unknown id {env_id!r}; verifiers environments exist for the text and web ids and "
                             f"{GOAL_ENV_ID}")
        modality = entry(name).task_class().modality
        if modality not in ("text", "web"):
            raise ValueError(f"{name} is a {modality} id: its responses are token ids, which a chat model's reply "
                             f"is not; verifiers environments exist for the text and web ids and {GOAL_ENV_ID}")
        check_env_kwargs(name, **env_kwargs)
    json.dumps(env_kwargs)  # traces carry them: JSON only
    config = RLVRWorldEnvConfig(
        taskset=RLVRWorldTasksetConfig(id=TASKSET_ID, env_id=name, env_kwargs=env_kwargs, indices=indices),
        agent=agent if agent is not None else vf.AgentConfig(runtime=SubprocessConfig()))
    return RLVRWorldEnv(config)
