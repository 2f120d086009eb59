"""Any registered id as an OpenEnv environment server (`openenv-core`, the `[serve]` extra).

    rlvr-world serve RLVRWorld/MiniTextWorld-v0 --port 8000 --max-sessions 16

OpenEnv's own client drives it from any process (its WebSocket protocol is plain JSON, so
from any language too):

    from openenv.core import GenericEnvClient
    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0, options={"index": 3})
        result.observation["prompt"], result.observation["prompt_ids"]
        result = env.step({"text": answer})            # or {"tokens": [ids...]}
        result.reward, result.observation["info"]["metrics"]

What the server does:
- one env instance (`gym.make(id, **env_kwargs)`) per session; a session is one WebSocket
  connection (`/ws`, what `EnvClient` opens), capped by `max_sessions` (the next connection
  is refused with `CAPACITY_REACHED`); the HTTP `/reset` and `/step` routes are OpenEnv's
  stateless ones (a fresh env per request), so episodes run over the WebSocket;
- `reset(seed=, options={"index": i})` is the env's own reset, exactly (unknown keys refused);
- observations (`RLVRWorldObservation`) carry the prompt as text (`prompt`, where the task
  has text) and as token ids (`prompt_ids`) on reset, the response so far (`response_ids`), a plain
  env's own observation (`frame` for images, `fields` for a dict of texts) and the step's
  `info` (every reward component under `info["metrics"]`, `parsed`, `error`, `max_reward`,
  `min_reward`); OpenEnv's wire format leaves `Observation.metadata` out, so the info
  travels as the `info` field (and is also set as `metadata` for server-side code);
- actions (`RLVRWorldAction`): exactly one of `text` (tokenized by the task's tokenizer;
  `info["response_ids"]` says what was scored), `tokens` (token ids, scored as sent: no
  re-tokenization) or `value` (a plain env's own action, e.g. the learned simulator's chunk
  of targets); MiniWeb-Goal takes `text` (a WebArena action string);
- a request that is not valid JSON, not a known message, of the wrong types or over the size
  limit is answered with one line naming what was wrong (HTTP: a 4xx status; WebSocket: an
  error message), and the session and the server go on; a step that overruns
  `step_timeout` seconds is answered with an error, and its episode is void (reset to go on).
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from rlvr_envs.core.extras import needs_extra

with needs_extra("rlvr-world serve (an OpenEnv server)", extra="serve"):
    from openenv.core.env_server.http_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
    from pydantic import Field, StrictInt, ValidationError, model_validator

#: the largest request body (HTTP) or WebSocket message the server reads, by default (bytes)
DEFAULT_MAX_BODY = 8 * 1024 * 1024
#: arrays in `info` larger than this many elements are left out (named, with their shape)
MAX_INFO_ARRAY = 4096


class RequestError(Exception):
    """A request the server refuses, with one line saying why. Deliberately not a ValueError:
    pydantic passes it through unwrapped, so OpenEnv's error reply carries this line."""


def one_line(exc: BaseException) -> str:
    """A validation error or exception as one line: each problem's place and message."""
    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "__root__")
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{where}: {message}" if where else message)
        return "; ".join(parts)[:500]
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:500]


class RLVRWorldAction(Action):
    """One action: exactly one of `text`, `tokens` or `value` (see the module docstring)."""

    text: str | None = Field(default=None, description="the response as text (tokenized by the task's tokenizer), "
                                                        "or a MiniWeb-Goal action string")
    tokens: list[StrictInt] | None = Field(default=None, description="the response as token ids, scored as sent")
    value: Any = Field(default=None, description="a plain env's own action as JSON (the learned simulator: a chunk "
                                                 "of 5 (x, y) targets)")

    @model_validator(mode="wrap")
    @classmethod
    def _one_clear_line(cls, data: Any, handler):
        if isinstance(data, dict):
            unknown = sorted(set(data) - {"text", "tokens", "value", "metadata"})
            if unknown:
                raise RequestError(f"unknown action field(s) {unknown}; an action is one of text, tokens or value")
            given = [k for k in ("text", "tokens", "value") if data.get(k) is not None]
            if len(given) != 1:
                raise RequestError(f"an action is exactly one of text, tokens or value; got "
                                   f"{given or 'none of them'}")
        try:
            return handler(data)
        except ValidationError as exc:
            raise RequestError(f"malformed action: {one_line(exc)}") from None


class RLVRWorldObservation(Observation):
    """What reset and step return (`done`, `reward` and the fields below)."""

    prompt: str | None = Field(default=None, description="the prompt as text, on reset (None for token-only tasks: "
                                                          "video)")
    prompt_ids: list[int] | None = Field(default=None, description="the prompt's token ids as the env holds them, on "
                                                                   "reset")
    response_ids: list[int] | None = Field(default=None, description="the response so far, as scored")
    frame: list | None = Field(default=None, description="a plain env's image observation, H x W x 3 uint8")
    fields: dict[str, Any] | None = Field(default=None, description="a plain env's dict observation (MiniWeb-Goal)")
    truncated: bool = Field(default=False, description="the episode ended by its step limit")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info: metrics (every reward "
                                                                    "component), parsed, error, max/min reward")


def jsonable(value: Any) -> Any:
    """`value` as JSON-ready Python (numpy scalars and arrays turned into numbers and lists);
    a large array is replaced by a line naming its shape, a non-finite float by None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.size > MAX_INFO_ARRAY:
            return f"<array {list(value.shape)} {value.dtype} left out>"
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return jsonable(dataclasses.asdict(value))
    return str(value)


def _options(options: Any) -> Any:
    """A plain env's reset options from JSON: lists become arrays ("frames" as uint8 images)."""
    if not isinstance(options, dict):
        return options
    out = {}
    for key, value in options.items():
        if isinstance(value, list):
            try:
                value = np.asarray(value, dtype=np.uint8 if key == "frames" else np.float64)
            except (TypeError, ValueError, OverflowError):
                raise RequestError(f"reset option {key!r} must be a rectangular array of numbers") from None
        out[key] = value
    return out


class RLVRWorldEnvironment(Environment):
    """One session's env: `gym.make(env_id, **env_kwargs)` behind OpenEnv's `Environment`."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None, step_timeout: float | None = None):
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.step_timeout = step_timeout
        self.env = self._make()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlvr-world-session")
        self._state = State(episode_id=None, step_count=0)
        self._void: str | None = "no episode yet: send reset first"
        self._index: int | None = None

    def _make(self):
        import gymnasium as gym

        import rlvr_envs  # noqa: F401  (registers the ids)

        return gym.make(self.env_id, **self.env_kwargs)

    @property
    def task(self):
        return getattr(self.env.unwrapped, "task", None)

    # -- OpenEnv's interface ---------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, options: Any = None,
              **unknown: Any) -> RLVRWorldObservation:
        if unknown:
            raise RequestError(f"unknown reset field(s) {sorted(unknown)}; reset takes seed, episode_id and options")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise RequestError(f"seed must be an integer >= 0 or null, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise RequestError(f"options must be an object such as {{\"index\": 3}}, got {type(options).__name__}")
        if episode_id is not None and not isinstance(episode_id, str):
            raise RequestError(f"episode_id must be a string, got {type(episode_id).__name__}")
        if self.env is None:  # the previous step overran the timeout: a fresh env
            self.env = self._make()
        if self.task is None:
            options = _options(options)
        try:
            obs, info = self.env.reset(seed=seed, options=options)
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise RequestError(f"reset refused: {one_line(exc)}") from None
        self._void = None
        self._index = info.get("index")
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation(obs, info, reward=None, done=False, truncated=False, first=True)

    def step(self, action: RLVRWorldAction, timeout_s: float | None = None, **_: Any) -> RLVRWorldObservation:
        if self._void is not None:
            raise RequestError(f"{self._void} (HTTP /step is stateless, a fresh env per request: episodes run "
                               f"over the WebSocket session, /ws, that OpenEnv's client opens)"
                               if self._void.startswith("no episode") else self._void)
        gym_action = self._gym_action(action)
        try:
            obs, reward, terminated, truncated, info = self.env.step(gym_action)
        except (TypeError, ValueError, IndexError) as exc:
            raise RequestError(f"action refused: {one_line(exc)}") from None
        except RuntimeError as exc:  # a finished episode
            raise RequestError(one_line(exc)) from None
        self._state.step_count += 1
        done = bool(terminated or truncated)
        if done:
            self._void = "the episode is over: send reset to start another"
        return self._observation(obs, info, reward=float(reward), done=done, truncated=bool(truncated))

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any):
        return await self._run(functools.partial(self.reset, seed=seed, episode_id=episode_id, **kwargs), None)

    async def step_async(self, action: RLVRWorldAction, timeout_s: float | None = None, **kwargs: Any):
        return await self._run(functools.partial(self.step, action), self.step_timeout)

    async def _run(self, call, timeout: float | None):
        """Run `call` on this session's own thread (the event loop serves other sessions meanwhile);
        past `timeout` seconds answer with an error and void the episode: the overrunning call
        keeps its thread and env, and the session gets fresh ones on its next reset."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, call)
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            self._executor.shutdown(wait=False)
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlvr-world-session")
            self.env = None
            self._void = (f"the previous step overran the step timeout ({timeout:g} s) and its episode is void: "
                          f"send reset to start another")
            raise RequestError(f"step timed out after {timeout:g} s (--step-timeout); the episode is void, send "
                               f"reset to start another") from None

    @property
    def state(self) -> State:
        return State(episode_id=self._state.episode_id, step_count=self._state.step_count, env_id=self.env_id,
                     index=self._index)

    def get_metadata(self) -> EnvironmentMetadata:
        from rlvr_envs.registration import ENVS, SIMULATORS

        described = {e.id: e.description for e in ENVS} | {k: v.description for k, v in SIMULATORS.items()}
        return EnvironmentMetadata(name=self.env_id, description=described.get(self.env_id, self.env_id),
                                   version="0")

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()
        self._executor.shutdown(wait=False)

    # -- conversions -----------------------------------------------------------------------
    def _gym_action(self, action: RLVRWorldAction) -> Any:
        task = self.task
        if task is None:  # a plain env: its own action (MiniWeb-Goal: text; the learned simulator: value)
            if action.tokens is not None:
                raise RequestError(f"{self.env_id} takes no token ids; send its own action as 'value' (or 'text')")
            if action.text is not None:
                return action.text
            try:
                return np.asarray(action.value, dtype=np.float32)
            except (TypeError, ValueError, OverflowError):
                raise RequestError(f"{self.env_id}'s action must be a rectangular array of numbers") from None
        if action.value is not None:
            raise RequestError(f"{self.env_id} takes a response as 'text' or 'tokens', not 'value'")
        if action.tokens is not None:
            return np.asarray(action.tokens, dtype=np.int64) if action.tokens else np.zeros(0, dtype=np.int64)
        tokenizer = getattr(task, "tokenizer", None)
        if tokenizer is None or not hasattr(task, "prompt_text"):
            raise RequestError(f"{self.env_id} has no text form (its responses are token ids): send 'tokens'")
        ids = tokenizer(action.text, add_special_tokens=False)["input_ids"]
        return np.asarray(ids, dtype=np.int64) if ids else np.zeros(0, dtype=np.int64)

    def _observation(self, obs: Any, info: dict[str, Any], reward: float | None, done: bool,
                     truncated: bool, first: bool = False) -> RLVRWorldObservation:
        task = self.task
        info = jsonable(info)
        fields: dict[str, Any] = {}
        if task is not None:
            r = int(obs["response_len"][0])
            fields["response_ids"] = obs["response"][:r].tolist()
            if first:  # the prompt comes with the reset; steps carry the response and the reward
                fields["prompt_ids"] = obs["prompt"][:int(obs["prompt_len"][0])].tolist()
                if hasattr(task, "prompt_text") and self._index is not None:
                    fields["prompt"] = task.prompt_text(self._index)
            info["min_reward"] = float(task.min_reward)
            if "max_reward" not in info and self._index is not None:
                info["max_reward"] = float(task.max_reward(self._index))
            if done:
                info["response_ids"] = fields["response_ids"]
        elif isinstance(obs, np.ndarray):
            fields["frame"] = obs.tolist()
        elif isinstance(obs, dict):
            fields["fields"] = jsonable(obs)
        else:
            fields["fields"] = {"observation": jsonable(obs)}
        return RLVRWorldObservation(done=done, reward=reward, truncated=truncated, info=info, metadata=info, **fields)


def check_env_id(env_id: str) -> str:
    """A registered id (any: next-state prediction ids, learned simulators, MiniWeb-Goal)."""
    from rlvr_envs.registration import all_ids

    name = env_id.split(":", 1)[-1]
    if name not in all_ids():
        raise ValueError(f"unknown id {env_id!r}; `rlvr-world list` shows the registered ids")
    return name


def build_app(env_id: str, env_kwargs: dict[str, Any] | None = None, max_sessions: int = 8,
              step_timeout: float | None = 60.0, max_body: int = DEFAULT_MAX_BODY, factory=None):
    """The FastAPI app serving `env_id` (OpenEnv's app, with one-line 4xx errors and a body
    limit). `factory` replaces the env class (tests use it for a deliberately slow env)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    make = functools.partial(factory or RLVRWorldEnvironment, env_id=env_id, env_kwargs=env_kwargs,
                             step_timeout=step_timeout)
    app = create_fastapi_app(make, RLVRWorldAction, RLVRWorldObservation, max_concurrent_envs=max_sessions)

    @app.exception_handler(RequestError)
    async def _refused(request: Request, exc: RequestError):
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        problems = []
        for error in exc.errors():
            if error.get("type") == "json_invalid":
                reason = (error.get("ctx") or {}).get("error", "")
                problems.append(f"the body is not valid JSON{f' ({reason})' if reason else ''}")
                continue
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
            problems.append(f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid")))
        return JSONResponse(status_code=422, content={"detail": "; ".join(problems)[:500] or "invalid request"})

    app.add_middleware(BodyLimit, limit=max_body)
    return app


class BodyLimit:
    """ASGI middleware: an HTTP request whose declared body exceeds `limit` bytes gets 413 at once."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, int(limit)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            length = dict(scope.get("headers") or ()).get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.limit):
                body = (b'{"detail":"request body over the server\'s limit of %d bytes (--max-body-mb)"}'
                        % self.limit)
                await send({"type": "http.response.start", "status": 413,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve(env_id: str, env_kwargs: dict[str, Any] | None = None, host: str = "127.0.0.1", port: int = 8000,
          max_sessions: int = 8, step_timeout: float | None = 60.0, max_body: int = DEFAULT_MAX_BODY,
          log_level: str = "warning") -> None:
    """Serve `env_id` until interrupted; prints `serving ID on http://HOST:PORT` once it listens
    (port 0: a free port, named in that line)."""
    import socket

    import uvicorn

    probe = RLVRWorldEnvironment(env_id, env_kwargs)  # a bad argument or missing data fails here, in one line
    probe.close()
    app = build_app(env_id, env_kwargs, max_sessions, step_timeout, max_body)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, ws_max_size=max_body, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            print(f"serving {env_id} on http://{shown}:{bound} (OpenEnv; {max_sessions} sessions at most; "
                  f"Ctrl-C stops)", flush=True)
        await task

    asyncio.run(main())
    sys.stdout.flush()


class ServerThread:
    """A server on 127.0.0.1 in a background thread of this process, for tests, benchmarks and
    notebooks: `with ServerThread(app) as url: ...` (a free port; ready when entered)."""

    def __init__(self, app, host: str = "127.0.0.1", max_body: int = DEFAULT_MAX_BODY, ready_timeout: float = 120.0):
        self.app, self.host, self.max_body, self.ready_timeout = app, host, max_body, ready_timeout

    def __enter__(self) -> str:
        import socket
        import threading
        import time

        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((self.host, 0))
        self.sock.listen(128)
        port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="error", ws_max_size=self.max_body,
                                                    timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        waited = time.monotonic()
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() - waited > self.ready_timeout:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return f"http://{self.host}:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
