"""`rlvr-world serve ID`: a registered id as an OpenEnv environment server (the `[serve]` extra).

    rlvr-world serve RLVRWorld/MiniTextWorld-v0 --port 8000
    rlvr-world serve RLVRWorld/PushT-LearnedSim-v0 --max-sessions 4 --step-timeout 30

Arguments are checked before anything is served (a bad one is one line, exit 2); the server
itself is `rlvr_envs.integrations.serve`.
"""

from __future__ import annotations

import argparse

from rlvr_envs.core.arguments import EnvKwargsAction, at_least, existing_dir, real_at_least


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env_id", help="a registered id (`rlvr-world list`): next-state prediction ids, learned "
                                       "simulators, MiniWeb-Goal")
    parser.add_argument("--env-kwargs", action=EnvKwargsAction)
    parser.add_argument("--data-dir", type=existing_dir, default=None, help="data root for ids with external data")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    parser.add_argument("--port", type=at_least(0), default=8000, help="port (0: a free one, printed)")
    parser.add_argument("--max-sessions", type=at_least(1), default=8,
                        help="concurrent sessions (one env each); the next one is refused")
    parser.add_argument("--step-timeout", type=real_at_least(0.0, strictly=True, maximum=86400.0), default=60.0,
                        help="seconds a step may take; a step past it is answered with an error and its episode "
                             "is void")
    parser.add_argument("--max-body-mb", type=real_at_least(0.0, strictly=True, maximum=1024.0), default=8.0,
                        help="largest HTTP request body or WebSocket message read (MiB)")
    parser.set_defaults(func=run, check=check)


def check(args: argparse.Namespace) -> None:
    """The id and the env kwargs, before any env is built (ValueError/TypeError: exit 2)."""
    from rlvr_envs.registration import ENVS, all_ids, check_env_kwargs

    name = args.env_id.split(":", 1)[-1]
    if name not in all_ids():
        raise ValueError(f"unknown id {args.env_id!r}; `rlvr-world list` shows the registered ids")
    if port_out_of_range(args.port):
        raise ValueError(f"--port must be in [0, 65535], got {args.port}")
    args.env_id = name
    kwargs = env_kwargs_of(args)
    if name in {e.id for e in ENVS}:
        check_env_kwargs(name, **{k: v for k, v in kwargs.items() if k not in ("mode", "render_mode")})


def env_kwargs_of(args: argparse.Namespace) -> dict:
    """The `gym.make` arguments: --env-kwargs, and --data-dir as `data_dir`."""
    return {**({} if args.data_dir is None else {"data_dir": args.data_dir}), **args.env_kwargs}


def port_out_of_range(port: int) -> bool:
    return not 0 <= port <= 65535


def run(args: argparse.Namespace) -> int:
    from rlvr_envs.integrations.serve import serve

    try:
        serve(args.env_id, env_kwargs_of(args), host=args.host, port=args.port, max_sessions=args.max_sessions,
              step_timeout=args.step_timeout, max_body=int(args.max_body_mb * 1024 * 1024))
    except OSError as exc:  # the port is taken, the address is not this machine's
        raise SystemExit(f"rlvr-world serve: error: cannot listen on {args.host}:{args.port} "
                         f"({exc.strerror or exc})") from None
    return 0
