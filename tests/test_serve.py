"""`rlvr-world serve`: real OpenEnv servers on 127.0.0.1 driven by OpenEnv's own client.

Servers run in a thread of the test process (`ServerThread`, a real socket and uvicorn) except
the CLI test, which starts `rlvr-world serve` as its own process. No wall-clock asserts: start-up
waits on a readiness poll with a generous limit.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

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


def test_video_id_gold_beats_garbage_through_openenv_client():
    """A video id (token-only, no text): the gold frame codes score at least as well as random codes."""
    pytest.importorskip("torch")
    env_id = "RLVRWorld/PushT-SingleStep-v0"
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


def http(url: str, path: str, body: bytes | None = None, method: str = "POST", headers: dict | None = None):
    request = urllib.request.Request(url + path, data=body, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def http_raw(url: str, path: str, head_of_body: bytes, length: int) -> tuple[int, dict]:
    """A POST declaring a `length`-byte body, of which only the head is sent: the server answers
    from the headers (a client that uploads it all anyway may see the connection reset instead)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {length}\r\n\r\n".encode() + head_of_body)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < int(
                reply.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0]):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def ws_exchange(url: str, messages: list, close_abruptly: bool = False) -> list:
    """Raw WebSocket messages (text or dicts) to /ws; the replies as dicts."""
    from websockets.sync.client import connect

    replies = []
    with connect(url.replace("http://", "ws://") + "/ws", max_size=None, open_timeout=60) as ws:
        for message in messages:
            ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
            replies.append(json.loads(ws.recv(timeout=120)))
        if close_abruptly:
            ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: a client gone mid-episode
    return replies


def fault_cases(url: str, task) -> list[dict]:
    """Every fault case against a running server: (case, how it was answered, whether the server
    then still served a full gold episode). The load benchmark tabulates the same list."""
    reset = {"type": "reset", "data": {"seed": 0, "options": {"index": 0}}}
    gold = {"type": "step", "data": {"text": task.target_text(0)}}
    big = 9 * 1024 * 1024  # over the default 8 MiB limit
    cases = []

    def ws_case(name, messages, close_abruptly=False, want_error=True):
        try:
            replies = ws_exchange(url, messages, close_abruptly)
            last = replies[-1]
            answered = last["type"] == "error" if want_error else last["type"] == "observation"
            how = f"WS {last['data'].get('code', 'observation')}: {str(last['data'].get('message', ''))[:90]}"
        except Exception as exc:  # a closed connection is an answer too (e.g. a message over the limit)
            answered, how = "1009" in str(exc) or "too big" in str(exc).lower(), f"WS closed: {str(exc)[:90]}"
        cases.append({"case": name, "answered": answered, "how": how})

    def http_case(name, path, body, length=None, want=(400, 413, 422)):
        status, reply = http(url, path, body) if length is None else http_raw(url, path, body, length)
        detail = reply.get("detail") if isinstance(reply, dict) else reply
        cases.append({"case": name, "answered": status in want and isinstance(detail, str),
                      "how": f"HTTP {status}: {str(detail)[:90]}"})

    ws_case("WS: malformed JSON", [reset, "{not json"])
    ws_case("WS: unknown message type", [reset, {"type": "jump"}])
    ws_case("WS: action of the wrong type (tokens as strings)", [reset, {"type": "step", "data": {"tokens": ["a"]}}])
    ws_case("WS: action with floats for token ids", [reset, {"type": "step", "data": {"tokens": [1.5, 2]}}])
    ws_case("WS: action with an unknown field", [reset, {"type": "step", "data": {"code": "rm -rf /"}}])
    ws_case("WS: empty action", [reset, {"type": "step", "data": {}}])
    ws_case("WS: reset with a negative seed", [{"type": "reset", "data": {"seed": -3}}])
    ws_case("WS: reset with an unknown option", [{"type": "reset", "data": {"options": {"idx": 0}}}])
    ws_case("WS: reset onto a transition that does not exist", [{"type": "reset", "data": {"options": {"index": 10**9}}}])
    ws_case("WS: step before reset", [gold])
    ws_case("WS: step after the episode ended", [reset, gold, gold])
    ws_case("WS: message over the size limit", [reset, json.dumps({"type": "step", "data": {"text": "x" * big}})])
    ws_case("WS: client disconnects mid-episode", [reset], close_abruptly=True, want_error=False)
    http_case("HTTP: malformed JSON", "/step", b"{not json")
    http_case("HTTP: wrong types", "/step", json.dumps({"action": {"tokens": "abc"}}).encode())
    http_case("HTTP: missing action", "/step", b"{}")
    http_case("HTTP: body over the size limit", "/step", b"x" * 65536, length=big)
    http_case("HTTP: Content-Length of a terabyte", "/step", b"{}", length=10**12)
    http_case("HTTP: stateless step (no session)", "/step", json.dumps({"action": {"text": "x"}}).encode())
    status, reply = http(url, "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close",
                                                  "params": {"session_id": "no-such-session"}}).encode())
    cases.append({"case": "unknown session id (MCP session close)",
                  "answered": status == 200 and "Unknown session_id" in json.dumps(reply),
                  "how": f"HTTP {status} JSON-RPC error: {str((reply or {}).get('error', {}).get('message'))[:90]}"})
    status, reply = http(url, "/mcp", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                                  "params": {"session_id": "no-such-session"}}).encode())
    cases.append({"case": "unknown session id (MCP call)",
                  "answered": status == 200 and "Unknown session_id" in json.dumps(reply),
                  "how": f"HTTP {status} JSON-RPC error: {str((reply or {}).get('error', {}).get('message'))[:90]}"})
    for case in cases:  # after each kind of fault the server still serves a whole episode
        replies = ws_exchange(url, [reset, gold])
        case["server_alive"] = replies[-1]["type"] == "observation" and replies[-1]["data"]["reward"] == 1.0
    return cases


def test_fault_cases_are_each_answered_and_the_server_keeps_serving():
    env_id = "RLVRWorld/MiniTextWorld-v0"
    task = in_process(env_id).unwrapped.task
    with served(env_id, max_sessions=4) as url:
        cases = fault_cases(url, task)
        status, health = http(url, "/health", method="GET")
    assert status == 200 and health["status"] == "healthy"
    failed = [c for c in cases if not (c["answered"] and c["server_alive"])]
    assert not failed, failed
    assert len(cases) == 21


def test_session_cap_refuses_the_next_session_cleanly():
    from openenv.core import GenericEnvClient

    env_id = "RLVRWorld/MiniTextWorld-v0"
    with served(env_id, max_sessions=2) as url:
        first, second = client(url), client(url)
        first.reset(seed=0)
        second.reset(seed=1)
        third = GenericEnvClient(base_url=url).sync()
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            third.reset(seed=2)
        third.close()
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


def test_cli_serves_an_id_to_a_client_in_another_process(tmp_path):
    """`rlvr-world serve ID --port 0` in its own process; OpenEnv's client here drives it."""
    env_id = "RLVRWorld/MiniTextWorld-v0"
    task = in_process(env_id).unwrapped.task
    server = subprocess.Popen([sys.executable, "-m", "rlvr_envs.cli", "serve", env_id, "--port", "0",
                               "--env-kwargs", "size=16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # printed once it listens
        assert line.startswith(f"serving {env_id} on http://127.0.0.1:"), (line, server.stderr.read()[-2000:])
        url = line.split(" on ")[1].split(" ")[0]
        with client(url) as remote:
            remote.reset(seed=0, options={"index": 5})
            assert remote.step({"text": task.target_text(5)}).reward == 1.0
    finally:
        server.terminate()
        server.wait(timeout=30)


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
