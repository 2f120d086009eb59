"""A served id under load, against the same work in process, and its answers to bad requests.

Starts `rlvr-world serve ID` in its own process on 127.0.0.1, then in one run:
  1. load: `--clients` concurrent sessions of OpenEnv's own (async) client share `--steps`
     episodes (reset onto a transition, then one step with a response sent as token ids: a
     fixed mix of gold answers, half answers and random tokens); steps/s over the whole run,
     p50/p99 latency of the step and of the reset requests as each client saw them;
  2. in process: the same episodes (same transitions, same responses) through `gym.make` envs
     in a loop, the same statistics; the ratio served/in-process of the two rates;
  3. agreement: every served reward equals the in-process reward of the same episode, and none
     lies outside [min_reward, max_reward];
  4. faults: each case of `fault_cases` (malformed JSON, wrong types, huge bodies, unknown
     session ids, a client gone mid-episode, ...) against the same server, each followed by a
     whole gold episode: whether it was answered and the server still served.

Writes `benchmarks/results/serve_load.json` and `.md` (`render(result)` is the Markdown).

    python -m benchmarks.serve_load                       # MiniTextWorld, 2,000 steps from 8 clients
    python -m benchmarks.serve_load --env-id RLVRWorld/MiniWeb-v0 --steps 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks import sections as fmt

RESULTS = Path(__file__).parent / "results"


# -- fault cases ---------------------------------------------------------------------------------

def http(url: str, path: str, body: bytes | None = None, method: str = "POST") -> tuple[int, object]:
    request = urllib.request.Request(url + path, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def http_declared(url: str, path: str, head_of_body: bytes, length: int) -> tuple[int, object]:
    """A POST declaring a `length`-byte body of which only the head is sent: the server answers
    from the headers (a client that uploads it all may see the connection reset instead)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {length}\r\nConnection: close\r\n\r\n".encode() + head_of_body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body or b"null")


def ws_exchange(url: str, messages: list, close_abruptly: bool = False) -> list[dict]:
    """Raw WebSocket messages (text, or dicts sent as JSON) to /ws; the replies as dicts."""
    from websockets.sync.client import connect

    replies = []
    with connect(url.replace("http://", "ws://") + "/ws", max_size=None, open_timeout=60) as ws:
        for message in messages:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            replies.append(json.loads(ws.recv(timeout=120)))
        if close_abruptly:
            ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: a client gone mid-episode
    return replies


def fault_cases(url: str, gold_text: str, min_reward: float = 0.0, max_reward: float = 1.0,
                over_limit: int = 9 * 1024 * 1024) -> list[dict]:
    """Every fault case against the server at `url` (serving an id whose transition 0 has the
    answer `gold_text`): the case, how it was answered, and whether a whole gold episode then
    still scored `max_reward` (the server alive and serving). `over_limit`: a size past the
    server's body limit (8 MiB by default)."""
    reset = {"type": "reset", "data": {"seed": 0, "options": {"index": 0}}}
    gold = {"type": "step", "data": {"text": gold_text}}
    cases: list[dict] = []

    def reply_reward(reply: dict) -> float | None:
        return reply.get("data", {}).get("reward") if reply.get("type") == "observation" else None

    def ws_case(name: str, messages: list, close_abruptly: bool = False, want_error: bool = True) -> None:
        rewards = []
        try:
            replies = ws_exchange(url, messages, close_abruptly)
            rewards = [r for r in map(reply_reward, replies) if r is not None]
            last = replies[-1]
            answered = last["type"] == "error" if want_error else last["type"] == "observation"
            data = last["data"]
            how = f"WS error {data['code']}: {data['message']}" if last["type"] == "error" else "WS observation"
        except Exception as exc:  # a connection closed by the server is an answer too (a message over the limit)
            answered = "1009" in str(exc) or "too big" in str(exc).lower()
            how = f"WS closed by the server: {str(exc).splitlines()[0]}"
        cases.append({"case": name, "answered": bool(answered), "how": how[:160], "rewards": rewards})

    def http_case(name: str, path: str, body: bytes, declared: int | None = None) -> None:
        status, reply = http(url, path, body) if declared is None else http_declared(url, path, body, declared)
        detail = reply.get("detail") if isinstance(reply, dict) else reply
        cases.append({"case": name, "answered": 400 <= status < 500 and isinstance(detail, str),
                      "how": f"HTTP {status}: {detail}"[:160], "rewards": []})

    def mcp_case(name: str, method: str) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"session_id": "no-such-session"}})
        status, reply = http(url, "/mcp", body.encode())
        message = str((reply or {}).get("error", {}).get("message")) if isinstance(reply, dict) else str(reply)
        cases.append({"case": name, "answered": status == 200 and "Unknown session_id" in message,
                      "how": f"HTTP {status}, JSON-RPC error: {message}"[:160], "rewards": []})

    ws_case("WS: malformed JSON", [reset, "{not json"])
    ws_case("WS: unknown message type", [reset, {"type": "jump"}])
    ws_case("WS: token ids as strings", [reset, {"type": "step", "data": {"tokens": ["a"]}}])
    ws_case("WS: floats for token ids", [reset, {"type": "step", "data": {"tokens": [1.5, 2]}}])
    ws_case("WS: an unknown action field", [reset, {"type": "step", "data": {"code": "import os"}}])
    ws_case("WS: an empty action", [reset, {"type": "step", "data": {}}])
    ws_case("WS: text and tokens at once", [reset, {"type": "step", "data": {"text": "a", "tokens": [1]}}])
    ws_case("WS: a negative seed", [{"type": "reset", "data": {"seed": -3}}])
    ws_case("WS: an unknown reset option", [{"type": "reset", "data": {"options": {"idx": 0}}}])
    ws_case("WS: a transition that does not exist", [{"type": "reset", "data": {"options": {"index": 10**9}}}])
    ws_case("WS: step before reset", [gold])
    ws_case("WS: step after the episode ended", [reset, gold, gold])
    ws_case("WS: a message over the size limit",
            [reset, json.dumps({"type": "step", "data": {"text": "x" * over_limit}})])
    ws_case("WS: client disconnects mid-episode", [reset], close_abruptly=True, want_error=False)
    http_case("HTTP: malformed JSON", "/step", b"{not json")
    http_case("HTTP: wrong types", "/step", json.dumps({"action": {"tokens": "abc"}}).encode())
    http_case("HTTP: no action", "/step", b"{}")
    http_case("HTTP: a body over the size limit", "/step", b"x" * 65536, declared=over_limit)
    http_case("HTTP: a Content-Length of a terabyte", "/step", b"{}", declared=10**12)
    http_case("HTTP: a step without a session (stateless route)", "/step",
              json.dumps({"action": {"text": "x"}}).encode())
    mcp_case("unknown session id (close)", "openenv/session/close")
    mcp_case("unknown session id (call)", "tools/list")
    for case in cases:  # after every kind of fault the server still serves a whole episode
        replies = ws_exchange(url, [reset, gold])
        reward = reply_reward(replies[-1])
        case["server_alive"] = reward == max_reward
        case["rewards"].append(reward)
        case["rewards_in_range"] = all(r is not None and min_reward <= r <= max_reward for r in case["rewards"])
    return cases


# -- load ----------------------------------------------------------------------------------------

def start_server(env_id: str, env_kwargs: dict, max_sessions: int) -> tuple[subprocess.Popen, str]:
    """`rlvr-world serve` in its own process; returns it and its URL once it listens."""
    argv = [sys.executable, "-m", "rlvr_envs.cli", "serve", env_id, "--port", "0", "--max-sessions",
            str(max_sessions)]
    if env_kwargs:
        argv += ["--env-kwargs", json.dumps(env_kwargs)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    if " on http://" not in line:
        server.kill()
        raise SystemExit(f"benchmarks.serve_load: the server did not start: {line.strip() or 'no output'}")
    return server, line.split(" on ")[1].split(" ")[0]


def workload(task, steps: int, seed: int) -> list[tuple[int, list[int]]]:
    """`steps` episodes: (transition, response ids), gold / half / random tokens in turn."""
    rng = np.random.default_rng(seed)
    episodes = []
    for k in range(steps):
        index = int(rng.integers(len(task)))
        gold = task.target_ids(index).tolist()
        response = [gold, gold[: len(gold) // 2], rng.integers(0, task.vocab_size, len(gold)).tolist()][k % 3]
        episodes.append((index, response))
    return episodes


def served_run(url: str, episodes: list, clients: int) -> dict:
    from openenv.core import GenericEnvClient

    rewards: list[float | None] = [None] * len(episodes)
    step_ms, reset_ms = [], []

    async def client(k: int) -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=300.0) as env:
            for e in range(k, len(episodes), clients):
                index, response = episodes[e]
                start = time.perf_counter()
                await env.reset(seed=e, options={"index": index})
                middle = time.perf_counter()
                result = await env.step({"tokens": response})
                end = time.perf_counter()
                reset_ms.append(1e3 * (middle - start))
                step_ms.append(1e3 * (end - middle))
                rewards[e] = result.reward

    async def everyone() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        return time.perf_counter() - start

    seconds = asyncio.run(everyone())
    return {"seconds": seconds, "rewards": rewards, **latencies(step_ms, reset_ms, len(episodes), seconds)}


def in_process_run(env, episodes: list) -> dict:
    rewards, step_ms, reset_ms = [], [], []
    began = time.perf_counter()
    for e, (index, response) in enumerate(episodes):
        start = time.perf_counter()
        env.reset(seed=e, options={"index": index})
        middle = time.perf_counter()
        _, reward, *_ = env.step(np.asarray(response, dtype=np.int64))
        end = time.perf_counter()
        reset_ms.append(1e3 * (middle - start))
        step_ms.append(1e3 * (end - middle))
        rewards.append(float(reward))
    seconds = time.perf_counter() - began
    return {"seconds": seconds, "rewards": rewards, **latencies(step_ms, reset_ms, len(episodes), seconds)}


def latencies(step_ms: list, reset_ms: list, episodes: int, seconds: float) -> dict:
    return {"steps_per_s": episodes / seconds,
            "step_ms_p50": float(np.percentile(step_ms, 50)), "step_ms_p99": float(np.percentile(step_ms, 99)),
            "reset_ms_p50": float(np.percentile(reset_ms, 50)), "reset_ms_p99": float(np.percentile(reset_ms, 99))}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="RLVRWorld/MiniTextWorld-v0", help="a text or web id")
    parser.add_argument("--env-kwargs", default="{}", help="gym.make arguments as a JSON object")
    parser.add_argument("--steps", type=int, default=2000, help="episodes (one step each) in each run")
    parser.add_argument("--clients", type=int, default=8, help="concurrent sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "serve_load"))
    args = parser.parse_args(argv)
    if args.steps < 1 or args.clients < 1:
        parser.error("--steps and --clients must be >= 1")
    env_kwargs = json.loads(args.env_kwargs)

    import gymnasium as gym

    import rlvr_envs  # noqa: F401
    from rlvr_envs.core.records import RunRecord, note

    given = list(sys.argv[1:] if argv is None else argv)
    if "--out" in given:  # where the files go is not part of what was measured
        at = given.index("--out")
        del given[at:at + 2]
    command = " ".join(["python -m benchmarks.serve_load", *(shlex.quote(a) for a in given)])
    record = RunRecord("python -m benchmarks.serve_load", args, threads=1)
    env = gym.make(args.env_id, **env_kwargs)
    task = env.unwrapped.task
    episodes = workload(task, args.steps, args.seed)
    server, url = start_server(args.env_id, env_kwargs, args.clients)
    try:
        served_run(url, episodes[: min(len(episodes), 4 * args.clients)], args.clients)  # warm-up
        in_process_run(env, episodes[:50])
        served = served_run(url, episodes, args.clients)
        single = served_run(url, episodes[: max(1, len(episodes) // 4)], 1)
        local = in_process_run(env, episodes)
        faults = fault_cases(url, task.target_text(0), task.min_reward, task.max_reward(0))
    finally:
        server.terminate()
        server.wait(timeout=30)
    maxima = [task.max_reward(index) for index, _ in episodes]
    agree = sum(a == b for a, b in zip(served["rewards"], local["rewards"]))
    in_range = sum(r is not None and task.min_reward <= r <= m for r, m in zip(served["rewards"], maxima))
    result = {
        "env_id": args.env_id, "env_kwargs": env_kwargs, "steps": args.steps, "clients": args.clients,
        "command": command,
        "served": {k: v for k, v in served.items() if k != "rewards"},
        "served_one_client": {k: v for k, v in single.items() if k != "rewards"},
        "one_client_steps": len(single["rewards"]),
        "in_process": {k: v for k, v in local.items() if k != "rewards"},
        "ratio_served_to_in_process": served["steps_per_s"] / local["steps_per_s"],
        "rewards_equal": agree, "rewards_in_range": in_range,
        "mean_reward": float(np.mean(local["rewards"])),
        "faults": faults,
        "faults_answered": sum(c["answered"] for c in faults),
        "faults_server_alive": sum(c["server_alive"] for c in faults),
        "faults_rewards_in_range": sum(c["rewards_in_range"] for c in faults),
        "run": record.finish(),
    }
    result["note"] = note(result["run"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(render(result) + "\n")
    print(render(result))
    return result


def render(result: dict, fault_table: bool = True) -> str:
    """The benchmark's Markdown section (docs/serving.md includes it as is; docs/results.md without the
    fault table, which it links)."""
    served, local, single = result["served"], result["in_process"], result["served_one_client"]
    n, faults = result["steps"], result["faults"]
    lines = [
        f"### Serving {result['env_id']} (OpenEnv) under load", "",
        f"Measured by `{result['command']}`; {result['note']} (the CPU share is the clients' process). The server "
        f"is `rlvr-world serve` in its own process; {result['clients']} sessions of OpenEnv's own client share {n:,} "
        f"episodes (reset onto a transition, one step with the response as token ids: gold, half and random answers "
        f"in turn), then one session runs the first {result['one_client_steps']:,} of them alone (the round trip "
        f"without queueing); in process is the same {n:,} episodes through `gym.make` in a loop. Clients and server "
        f"share the machine's cores. A step's latency is its request's round trip as the client saw it.", "",
        "| path | steps/s | step p50 (ms) | step p99 (ms) | reset p50 (ms) | reset p99 (ms) |",
        "|---|---|---|---|---|---|",
        f"| served, {result['clients']} clients | {served['steps_per_s']:.0f} | {served['step_ms_p50']:.2f} | "
        f"{served['step_ms_p99']:.2f} | {served['reset_ms_p50']:.2f} | {served['reset_ms_p99']:.2f} |",
        f"| served, 1 client | {single['steps_per_s']:.0f} | {single['step_ms_p50']:.2f} | "
        f"{single['step_ms_p99']:.2f} | {single['reset_ms_p50']:.2f} | {single['reset_ms_p99']:.2f} |",
        f"| in process, 1 loop | {local['steps_per_s']:.0f} | {local['step_ms_p50']:.2f} | {local['step_ms_p99']:.2f} | "
        f"{local['reset_ms_p50']:.2f} | {local['reset_ms_p99']:.2f} |", "",
        f"Served ({result['clients']} clients)/in-process rate: **{result['ratio_served_to_in_process']:.3f}**. "
        f"Served rewards equal to the "
        f"in-process ones: {result['rewards_equal']:,} of {n:,}; inside [min, max]: {result['rewards_in_range']:,} "
        f"of {n:,}.", "",
        f"Faults: {len(faults)} cases tried, {result['faults_answered']} answered, the server alive after "
        f"{result['faults_server_alive']} (a whole gold episode scored the maximum after each), rewards inside "
        f"their range in {result['faults_rewards_in_range']}.", "",
    ]
    if not fault_table:
        return "\n".join(lines[:-1] + ["", "Each case and its answer: [docs/serving.md](serving.md)."])
    lines += ["| case | answered | how | server alive |", "|---|---|---|---|"]
    for case in faults:
        how = case["how"].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {case['case']} | {'yes' if case['answered'] else '**no**'} | {how} | "
                     f"{'yes' if case['server_alive'] else '**no**'} |")
    return "\n".join(lines)


def section(files: list[dict]) -> str:
    """docs/results.md's section: `render` without its page heading and fault table."""
    heading, _, body = render(files[0], fault_table=False).partition("\n\n")
    return f"**{heading.removeprefix('### ')}** ({fmt.shown(files[0]['_file'])})\n\n{body}"


SECTIONS = (
    fmt.Section("Serving an id under load", ("serve_load.json",), "python -m benchmarks.serve_load", section),
)


if __name__ == "__main__":
    main()
