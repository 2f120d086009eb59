"""rlvr_envs.integrations.verifiers: a verifiers (0.4, `verifiers.v1`) environment per text/web id
whose scoring is our verifier, exactly; MiniWeb-Goal as a multi-turn episode."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import pytest

from tests.samples import registry_test_kwargs

pytest.importorskip("verifiers.v1", reason="the [verifiers] extra is not installed")

TEXT_WEB_IDS = ("RLVRWorld/MiniTextWorld-v0", "RLVRWorld/MiniTextWorld-TaskReward-v0", "RLVRWorld/MiniWeb-v0",
                "RLVRWorld/TextGame-v0", "RLVRWorld/TextGame-TaskReward-v0", "RLVRWorld/WebState-v0")
SMALL = {"RLVRWorld/MiniTextWorld-v0": {"size": 12}, "RLVRWorld/MiniTextWorld-TaskReward-v0": {"size": 12},
         "RLVRWorld/MiniWeb-v0": {"size": 12}}


def kwargs_of(env_id: str) -> dict:
    return SMALL[env_id] if env_id in SMALL else registry_test_kwargs(env_id)


def scored(task, reply: str):
    """The trace verifiers' scoring leaves for `reply` (what a rollout's final reply gets)."""
    import verifiers.v1 as vf
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask

    trace = Trace(task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=vf.AgentConfig()),
                  root_reply=reply)
    asyncio.run(task.score(trace))
    return trace


def answers(gold: str) -> dict[str, str]:
    lines = gold.splitlines()
    return {"gold": gold, "garbage": "I think the state stays as it is.", "half": gold[: len(gold) // 2],
            "lines dropped": "\n".join(lines[: max(1, len(lines) - 2)]), "empty": ""}


@pytest.mark.parametrize("env_id", TEXT_WEB_IDS)
def test_verifiers_scores_equal_the_env_rewards(env_id):
    import gymnasium as gym

    import rlvr_envs  # noqa: F401
    from rlvr_envs.integrations.verifiers import REWARD_NAME, load_environment

    kwargs = kwargs_of(env_id)
    vf_env = load_environment(env_id, **kwargs)
    env = gym.make(env_id, **kwargs)
    task = env.unwrapped.task
    tasks = list(vf_env.taskset)
    assert len(tasks) == len(task)
    seen = set()
    for vf_task in tasks[:4]:
        index = vf_task.data.index
        assert vf_task.data.prompt == task.prompt_text(index) and vf_task.data.uid == task.transition(index).uid
        for kind, reply in answers(task.target_text(index)).items():
            env.reset(seed=0, options={"index": index})
            ids = task.tokenizer(reply, add_special_tokens=False)["input_ids"]
            _, reward, _, _, info = env.step(np.asarray(ids, dtype=np.int64))
            trace = scored(vf_task, reply)
            assert trace.reward == reward, (kind, trace.reward, reward)  # exactly, weight 1
            assert trace.rewards[REWARD_NAME].weight == 1.0
            for key, value in info["metrics"].items():
                if np.isfinite(value):
                    assert trace.metrics[key] == value
            assert trace.metrics["parsed"] == float(info["parsed"])
            seen.add(reward)
    assert task.max_reward(0) in seen and task.min_reward in seen


class ScriptedAgent:
    """A stand-in for a verifiers agent seat (its `interaction` surface), replying with a script."""

    def __init__(self, replies):
        self.replies = replies
        self.turns: list[str] = []

    @contextlib.asynccontextmanager
    async def interaction(self, task):
        import verifiers.v1 as vf
        from verifiers.v1.trace import AgentInfo, Trace, TraceTask

        agent = self
        trace = Trace(task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=vf.AgentConfig()))

        class Interaction:
            def __init__(self):
                self.trace = trace

            async def turn(self, message=None):
                agent.turns.append(message)
                reply = agent.replies(message)

                class Segment:
                    terminated = reply is None
                    last_reply = reply
                return Segment()

        yield Interaction()
        await task.score(trace)
        agent.trace = trace


def test_miniweb_goal_is_a_multi_turn_episode_scored_by_the_env():
    import gymnasium as gym

    import rlvr_envs  # noqa: F401
    from rlvr_envs.integrations.verifiers import load_environment, play_goal_episode

    vf_env = load_environment("RLVRWorld/MiniWeb-Goal-v0", indices=[0, 3])
    tasks = list(vf_env.taskset)
    assert [t.data.index for t in tasks] == [0, 3]
    for vf_task in tasks:
        expert = gym.make("RLVRWorld/MiniWeb-Goal-v0")
        expert.reset(options={"index": vf_task.data.index})

        def follow(message, env=expert):  # the scripted expert acting on its own copy of the episode
            action = env.unwrapped.expert_action()
            env.step(action)
            return action

        agent = ScriptedAgent(follow)
        asyncio.run(play_goal_episode(vf_task, agent))
        assert agent.trace.reward == 1.0 and len(agent.turns) >= 1 and agent.turns[0].startswith("Goal: ")
        idle = ScriptedAgent(lambda message: "scroll [down]")
        asyncio.run(play_goal_episode(vf_task, idle))
        assert idle.trace.reward == 0.0 and idle.trace.metrics["steps"] == gym.make(
            "RLVRWorld/MiniWeb-Goal-v0").unwrapped.config.max_steps


@pytest.mark.parametrize("env_id, message", [
    ("RLVRWorld/Nope-v0", "unknown id"),
    ("RLVRWorld/PushT-SingleStep-v0", "token ids"),
])
def test_load_environment_refuses_ids_it_cannot_serve(env_id, message):
    from rlvr_envs.integrations.verifiers import load_environment

    with pytest.raises(ValueError, match=message):
        load_environment(env_id)


def test_verifiers_loader_finds_the_taskset_by_its_package_id():
    """verifiers' own loader (what its CLI and trainers use) resolves the id `rlvr-world`."""
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    from rlvr_envs.integrations.verifiers import TASKSET_ID, RLVRWorldEnv, RLVRWorldTaskset

    assert taskset_class(TASKSET_ID) is RLVRWorldTaskset
    assert environment_class(TASKSET_ID) is RLVRWorldEnv
