"""`rlvr-world serve`: real OpenEnv servers on 127.0.0.1 driven by OpenEnv's own client.

Servers run in a thread of the test process (`ServerThread`, a real socket and uvicorn) except
the CLI test, which starts `rlvr-world serve` as its own process. No wall-clock asserts: start-up
waits on a readiness poll with a generous limit.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.samples import registry_test_kwargs

pytest.importorskip("openenv.core", reason="the [serve] extra (openenv-core) is not installed")

#: every id whose data needs nothing external (generated data in the real formats for TextGame/WebState)
TEXT_WEB_IDS = ("RLVRWorld/MiniTextWorld-v0", "RLVRWorld/MiniTextWorld-TaskReward-v0", "RLVRWorld/MiniWeb-v0",
                "RLVRWorld/TextGame-v0", "RLVRWorld/TextGame-TaskReward-v0", "RLVRWorld/WebState-v0")
SMALL = {"RLVRWorld/MiniTextWorld-v0": {"size": 16}, "RLVRWorld/MiniTextWorld-TaskReward-v0": {"size": 16},
         "RLVRWorld/MiniWeb-v0": {"size": 16}, "RLVRWorld/MiniWeb-Goal-v0": {}}


def kwargs_of(env_id: str) -> dict:
    return SMALL[env_id] if env_id in SMALL else registry_test_kwargs(env_id)


def jsonable(value):
    from rlvr_envs.integrations.serve import jsonable as convert

    return convert(value)


def client(url: str):
    from openenv.core import GenericEnvClient

    return GenericEnvClient(base_url=url, message_timeout_s=120.0).sync()


def served(env_id: str, **options):
    from rlvr_envs.integrations.serve import ServerThread, build_app

    return ServerThread(build_app(env_id, kwargs_of(env_id), **options))


def in_process(env_id: str):
    import gymnasium as gym

    import rlvr_envs  # noqa: F401

    return gym.make(env_id, **kwargs_of(env_id))


@pytest.mark.parametrize("env_id", TEXT_WEB_IDS)
def test_gold_scores_max_and_garbage_min_through_openenv_client(env_id):
    env = in_process(env_id)
    task = env.unwrapped.task
    with served(env_id) as url, client(url) as remote:
        for index in (0, len(task) - 1):
            first = remote.reset(seed=0, options={"index": index})
            assert first.observation["prompt"] == task.prompt_text(index)
            assert first.observation["prompt_ids"] == task.prompt_ids(index).tolist()
            gold = remote.step({"text": task.target_text(index)})
            assert gold.done and gold.reward == task.max_reward(index)
            env.reset(options={"index": index})
            assert gold.observation["info"]["metrics"] == jsonable(env.step(task.target_ids(index))[4]["metrics"])
            remote.reset(seed=0, options={"index": index})
            ids = remote.step({"tokens": task.target_ids(index).tolist()})  # token-exact: the ids sent
            assert ids.reward == task.max_reward(index) and ids.observation["info"]["response_ids"] == \
                task.target_ids(index).tolist()
            for junk in ({"text": "no answer here"}, {"tokens": []}, {"tokens": [task.vocab_size + 5]}):
                remote.reset(seed=0, options={"index": index})
                bad = remote.step(junk)
                assert bad.reward == task.min_reward and bad.observation["info"]["parsed"] is False
                assert bad.observation["info"]["error"]


@pytest.mark.parametrize("env_id", ["RLVRWorld/PushT-SingleStep-v0", "RLVRWorld/PushT-MultiStep-v0"])
def test_video_id_gold_beats_garbage_through_openenv_client(env_id):
    """A video id (token-only, no text): the gold frame codes score at least as well as random codes,
    and exactly what the env in process gives them."""
    pytest.importorskip("torch")
    env = in_process(env_id)
    task = env.unwrapped.task
    rng = np.random.default_rng(0)
    with served(env_id) as url, client(url) as remote:
        first = remote.reset(seed=0, options={"index": 1})
        assert first.observation["prompt"] is None and first.observation["prompt_ids"] == task.prompt_ids(1).tolist()
        gold = remote.step({"tokens": task.target_ids(1).tolist()})
        remote.reset(seed=0, options={"index": 1})
        garbage = remote.step({"tokens": rng.integers(0, task.vocab_size, len(task.target_ids(1))).tolist()})
        assert gold.reward >= garbage.reward
        env.reset(options={"index": 1})
        assert gold.reward == pytest.approx(env.step(task.target_ids(1))[1])
        remote.reset(seed=0, options={"index": 1})
        with pytest.raises(RuntimeError, match="has no text form"):
            remote.step({"text": "frame"})


def test_reset_seed_is_honoured_exactly():
    env_id = "RLVRWorld/MiniTextWorld-v0"
    env = in_process(env_id)
    with served(env_id) as url, client(url) as remote:
        for seed in (0, 1, 7):
            _, info = env.reset(seed=seed)
            assert remote.reset(seed=seed).observation["info"]["index"] == info["index"]


def test_sixteen_concurrent_sessions_equal_sixteen_in_process_envs():
    from openenv.core import GenericEnvClient

    env_id = "RLVRWorld/MiniTextWorld-TaskReward-v0"
    env = in_process(env_id)
    task = env.unwrapped.task
    # answers of every kind: gold, a half answer, garbage, for 16 transitions
    answers = []
    for k in range(16):
        gold = task.target_text(k % len(task))
        answers.append([gold, gold[: len(gold) // 2], "nothing"][k % 3])
    expected = []
    for k, answer in enumerate(answers):
        env.reset(seed=k, options={"index": k % len(task)})
        ids = task.tokenizer(answer, add_special_tokens=False)["input_ids"]
        _, reward, _, _, info = env.step(np.asarray(ids, dtype=np.int64))
        expected.append((reward, info["metrics"]))

    async def session(url, k):
        async with GenericEnvClient(base_url=url, message_timeout_s=120.0) as remote:
            await remote.reset(seed=k, options={"index": k % len(task)})
            await asyncio.sleep(0.05)  # all 16 sessions open at once
            result = await remote.step({"text": answers[k]})
            return result.reward, result.observation["info"]["metrics"]

    async def all_sessions(url):
        return await asyncio.gather(*(session(url, k) for k in range(16)))

    with served(env_id, max_sessions=16) as url:
        got = asyncio.run(all_sessions(url))
    for (reward, metrics), (want, want_metrics) in zip(got, expected):
        assert reward == want
        assert metrics == jsonable(want_metrics)


def test_fault_cases_are_each_answered_and_the_server_keeps_serving():
    env_id = "RLVRWorld/MiniTextWorld-v0"
    task = in_process(env_id).unwrapped.task
    from benchmarks.serve_load import fault_cases, http

    with served(env_id, max_sessions=4) as url:
        cases = fault_cases(url, task.target_text(0), task.min_reward, task.max_reward(0))
        status, health = http(url, "/health", method="GET")
    assert status == 200 and health["status"] == "healthy"
    failed = [c for c in cases if not (c["answered"] and c["server_alive"] and c["rewards_in_range"])]
    assert not failed, failed
    assert len(cases) == 22


def test_session_cap_refuses_the_next_session_cleanly():
    import json

    env_id = "RLVRWorld/MiniTextWorld-v0"
    with served(env_id, max_sessions=2) as url:
        first, second = client(url), client(url)
        first.reset(seed=0)
        second.reset(seed=1)
        # the server answers a connection past the cap at once, before any message (OpenEnv's client then
        # raises on its reset: the error, or the closed connection if the close came first)
        from websockets.sync.client import connect

        with connect(url.replace("http://", "ws://") + "/ws", open_timeout=60) as third:
            refusal = json.loads(third.recv(timeout=60))
        assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED", refusal
        first.close()
        for _ in range(200):  # the slot frees once the server has seen the close
            try:
                with client(url) as again:
                    assert again.reset(seed=3).done is False
                break
            except RuntimeError:
                time.sleep(0.05)
        else:
            raise AssertionError("a closed session's slot never freed")
        second.close()


def test_step_timeout_answers_with_an_error_and_the_session_goes_on():
    from rlvr_envs.integrations.serve import RLVRWorldEnvironment, ServerThread, build_app

    class Slow(RLVRWorldEnvironment):
        def step(self, action, timeout_s=None, **kwargs):
            if action.text == "slow":
                time.sleep(3.0)
            return super().step(action)

    env_id = "RLVRWorld/MiniTextWorld-v0"
    task = in_process(env_id).unwrapped.task
    with ServerThread(build_app(env_id, kwargs_of(env_id), step_timeout=0.5, factory=Slow)) as url:
        with client(url) as remote:
            remote.reset(seed=0, options={"index": 0})
            with pytest.raises(RuntimeError, match="timed out after 0.5 s"):
                remote.step({"text": "slow"})
            with pytest.raises(RuntimeError, match="overran the step timeout"):
                remote.step({"text": task.target_text(0)})
            remote.reset(seed=0, options={"index": 0})
            assert remote.step({"text": task.target_text(0)}).reward == 1.0


def test_miniweb_goal_is_served_as_a_multi_step_text_env():
    env_id = "RLVRWorld/MiniWeb-Goal-v0"
    local = in_process(env_id)
    with served(env_id) as url, client(url) as remote:
        result = remote.reset(seed=0, options={"index": 2})
        obs, _ = local.reset(seed=0, options={"index": 2})
        assert result.observation["fields"] == obs
        while not result.done:
            action = local.unwrapped.expert_action()
            obs, reward, terminated, truncated, _ = local.step(action)
            result = remote.step({"text": action})
            assert result.observation["fields"] == obs and result.reward == reward
        assert result.reward == 1.0


@pytest.mark.slow
def test_readme_serve_and_client_in_separate_processes(tmp_path):
    """README's lines: `rlvr-world serve ID` in its own process, then its client command (OpenEnv's
    client, a third process) drives it."""
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```bash\n(.*?)```", readme, re.S) if "rlvr-world serve" in b)
    assert 'pip install ".[serve]"' in block
    serve_line = next(line for line in block.splitlines() if line.startswith("rlvr-world serve"))
    env_id = serve_line.split()[2]
    client_command = block[block.index("python -c"):]
    server = subprocess.Popen([sys.executable, "-m", "rlvr_envs.cli", "serve", env_id, "--port", "0",
                               "--env-kwargs", "size=16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # printed once it listens
        assert line.startswith(f"serving {env_id} on http://127.0.0.1:"), (line, server.stderr.read()[-2000:])
        port = line.split(" on http://127.0.0.1:")[1].split(" ")[0]
        client = client_command.replace("8000", port).replace("python -c", f"{shlex.quote(sys.executable)} -c", 1)
        out = subprocess.run(["bash", "-c", client], capture_output=True, text=True, timeout=600)  # this venv's python
        assert out.returncode == 0, out.stderr[-2000:]
        info = out.stdout.strip()
        assert "'metrics':" in info and "'max_reward': 1.0" in info and "'index': 3" in info
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_without_its_extra_is_one_line(monkeypatch, capsys):
    from rlvr_envs.cli import main

    for name in [m for m in sys.modules if m == "openenv" or m.startswith("openenv.")] + ["openenv"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if openenv-core were not installed
    monkeypatch.delitem(sys.modules, "rlvr_envs.integrations.serve", raising=False)
    assert main(["serve", "RLVRWorld/MiniTextWorld-v0", "--port", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'rlvr-world[serve]'" in err[0], err


@pytest.mark.parametrize("argv, message", [
    (["serve", "RLVRWorld/Nope-v0"], "unknown id"),
    (["serve", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs", "sise=3"], "did you mean size="),
    (["serve", "RLVRWorld/MiniTextWorld-v0", "--port", "70000"], "--port must be in"),
    (["serve", "RLVRWorld/MiniTextWorld-v0", "--step-timeout", "0"], "must be > 0"),
])
def test_cli_bad_arguments_are_one_line(argv, message, capsys):
    from rlvr_envs.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)


@pytest.mark.slow
def test_load_benchmark_at_a_tiny_budget(tmp_path):
    """benchmarks.serve_load end to end (its own server process, 2 clients, 24 episodes): every
    served reward equals the in-process one, every fault answered; its Markdown renders."""
    from benchmarks.serve_load import main, render

    result = main(["--steps", "24", "--clients", "2", "--env-kwargs", '{"size": 16}', "--out", str(tmp_path / "load")])
    assert result["rewards_equal"] == 24 and result["rewards_in_range"] == 24
    assert result["faults_answered"] == result["faults_server_alive"] == len(result["faults"]) == 22
    assert result["served"]["steps_per_s"] > 0 and result["in_process"]["steps_per_s"] > 0
    text = render(result)
    assert "in-process rate" in text and (tmp_path / "load.json").is_file()


def test_serving_page_shows_the_committed_benchmark():
    """docs/serving.md holds `render` of the committed result, whose faults were all answered."""
    import json
    from pathlib import Path

    from benchmarks.serve_load import render

    root = Path(__file__).resolve().parents[1]
    result = json.loads((root / "benchmarks" / "results" / "serve_load.json").read_text(encoding="utf-8"))
    assert render(result) in (root / "docs" / "serving.md").read_text(encoding="utf-8")
    assert result["faults_answered"] == result["faults_server_alive"] == len(result["faults"])
    assert result["rewards_equal"] == result["rewards_in_range"] == result["steps"]
