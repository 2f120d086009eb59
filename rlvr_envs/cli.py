"""The `rlvr-world` command: the demo, the registry, one episode, data, planning, Real2Sim policy evaluation,
serving an id to other processes and adopting a model trained elsewhere.

The library never imports `trainers/` (it sits above the CLI). `rlvr-world demo` and `rlvr-world adopt`
run the checkout's own programs (`python -m trainers.demo`, `trainers.adopt`) as child processes: it works from a
clone (`pip install -e .`) and says so in one line where only the wheel is installed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

from rlvr_envs.core.arguments import EnvKwargsAction, at_least, existing_dir

#: `rlvr-world data NAME ...` -> (module exposing add_data_arguments / run_data_command, help)
DATA_COMMANDS = {
    "bytesized32": ("rlvr_envs.text_game.bytesized32", "download ByteSized32-State-Prediction and its rules"),
    "wma": ("rlvr_envs.web.wma", "download the WMA web world-model records"),
    "pusht": ("rlvr_envs.video.pusht", "generate PushT trajectories with the gym-pusht simulator"),
    "rt1": ("rlvr_envs.video.rt1", "convert RT-1 RLDS shards to per-episode npz"),
    "lpips": ("rlvr_envs.video.metrics.perceptual", "fetch the LPIPS trunk weights (VGG/AlexNet) into torchvision's "
                                                    "cache"),
}

#: `rlvr-world NAME ...` -> (program of the checkout run as `python -m PROGRAM ...`, help)
CHECKOUT_COMMANDS = {
    "demo": ("trainers.demo", "the whole pipeline on the embedded PushT default: MLE base -> GRPO -> evaluation "
                              "(--domain text: MiniTextWorld SFT model -> GRPO); runs from a checkout"),
    "adopt": ("trainers.adopt", "make a model trained elsewhere (a bundle) a shipped default, only when it wins on "
                                "the same held-out sets (paired tests); runs from a checkout"),
}

#: `rlvr-world NAME ...` -> (module exposing add_arguments, whose parser default func runs it; help)
APPLICATION_COMMANDS = {
    "plan": ("rlvr_envs.planning.command", "CEM planning on PushT with learned simulators and baselines"),
    "policy-eval": ("rlvr_envs.policy_eval.command", "Real2Sim: policies in the learned vs the real PushT"),
    "serve": ("rlvr_envs.integrations.serve_command", "serve a registered id as an OpenEnv environment server "
                                                      "([serve] extra)"),
}


def checkout_root() -> Path:
    """The folder holding this `rlvr_envs` package: a clone's root when installed with `pip install -e .`."""
    return Path(__file__).resolve().parents[1]


def run_checkout_command(name: str, argv: list[str]) -> int:
    """Run a checkout program (`python -m trainers.demo ...`) in a child process, the user's
    working directory kept; a wheel install (no trainers/ beside the package) gets one line."""
    program, _ = CHECKOUT_COMMANDS[name]
    root = checkout_root()
    if not (root / (program.replace(".", "/") + ".py")).is_file():
        print(f"rlvr-world: error: `rlvr-world {name}` runs {program} from a checkout of the project, and this "
              f"install has none; run it from a clone: git clone <repo> && cd <clone> && pip install -e \".[dev]\" "
              "(README's install for the trainers)",
              file=sys.stderr)
        return 1
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    child = subprocess.Popen([sys.executable, "-m", program, *argv], env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the child too: it ends with its own one line (exit 130)
        return child.wait()


def cmd_list(args: argparse.Namespace) -> int:
    from rlvr_envs.core.extras import MissingExtraError
    from rlvr_envs.registration import ENVS, SIMULATORS, availability, markdown_table

    if args.update_readme:
        update_readme(args.update_readme, markdown_table())
        return 0
    if args.markdown:
        print(markdown_table())
        return 0
    rows = [("id", "modality", "reward", "available here")]
    described = [(e.id, e) for e in ENVS] + list(SIMULATORS.items())
    for env_id, described_by in described:
        ok, hint = availability(env_id, data_dir=args.data_dir)
        try:
            modality, reward = described_by.modality, described_by.reward
        except MissingExtraError:  # the task class is not importable: its domain's extra is missing
            modality, reward = described_by.task.split(".")[1], "-"
        rows.append((env_id, modality, reward, "yes" if ok else f"no: {hint}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])
    return 0


RESPONSES = ("gold", "half", "empty")


def episode_id(text: str) -> str:
    """argparse type of `episode`'s id: a registered next-state prediction id."""
    from rlvr_envs.registration import ENVS, SIMULATORS

    if text in {e.id for e in ENVS}:
        return text
    if text in SIMULATORS:
        raise argparse.ArgumentTypeError(
            f"{text} is a {SIMULATORS[text].modality} env, not a next-state prediction env: `episode` scores one "
            f"response to one transition; step {text} with gym.make in Python, or run `rlvr-world plan` / "
            f"`rlvr-world policy-eval`")
    raise argparse.ArgumentTypeError(f"unknown id {text!r}; `rlvr-world list` shows the registered ids")


def check_episode(args: argparse.Namespace) -> None:
    """Build the env from the arguments (unknown or bad env kwargs fail here) and check --index."""
    import gymnasium as gym

    kwargs = {**({} if args.data_dir is None else {"data_dir": args.data_dir}), **args.env_kwargs}
    if kwargs.get("mode", "sequence") != "sequence":
        raise ValueError(f"episode plays one whole response (mode='sequence'), got mode={kwargs['mode']!r}; token "
                         "mode steps one token at a time: gym.make(id, mode='token') in your own loop")
    env = gym.make(args.env_id, render_mode="ansi", **kwargs)
    size = len(env.unwrapped.task)
    if not 0 <= args.index < size:
        raise ValueError(f"--index must be in [0, {size}) for {args.env_id}, got {args.index}")
    args.env = env


def cmd_episode(args: argparse.Namespace) -> int:
    """Play one episode with a chosen response and print it as the env renders it."""
    import numpy as np

    env = args.env
    task = env.unwrapped.task
    env.reset(seed=0, options={"index": args.index})
    gold = task.target_ids(args.index)
    response = {"gold": gold, "half": gold[: len(gold) // 2], "empty": np.zeros(0, dtype=np.int64)}[args.response]
    _, reward, *_ = env.step(response)
    print(env.render())
    print(f"reward {reward:.3f} of max {task.max_reward(args.index):.3f} ({args.response} response)")
    return 0


def update_readme(path: str, table: str) -> None:
    """Replace the generated env table between README's env-table markers."""
    start, end = "<!-- env-table", "<!-- /env-table -->"
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    head, found, rest = text.partition(start)
    marker_line, _, rest = rest.partition("\n")
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise SystemExit(f"{path}: no '{start} ... {end}' block to update")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{head}{start}{marker_line}\n{table}\n{end}{tail}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the data module named in `argv` is imported (some are heavy)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="rlvr-world", description=__doc__)
    parser.set_defaults(func=lambda _args: parser.print_help() or 0)
    sub = parser.add_subparsers(dest="command", metavar="{demo,adopt,list,episode,data,plan,policy-eval,serve}")

    defaults = argparse.ArgumentDefaultsHelpFormatter
    listing = sub.add_parser("list", help="the registered env ids and whether their data is here",
                             description="The registered env ids and whether their data is here.",
                             formatter_class=defaults)
    listing.add_argument("--markdown", action="store_true", help="print README's env table")
    listing.add_argument("--update-readme", metavar="PATH", help="rewrite the env table in this README")
    listing.add_argument("--data-dir", type=existing_dir, default=None,
                         help="data root to check (None: $RLVR_WORLD_DATA or ~/.cache/rlvr_world)")
    listing.set_defaults(func=cmd_list)

    episode = sub.add_parser("episode", help="play one episode (gold, half or empty response) and render it",
                             description="Play one episode of a next-state prediction env with a chosen response "
                                         "and print it as the env renders it.", formatter_class=defaults)
    episode.add_argument("env_id", nargs="?", default="RLVRWorld/MiniTextWorld-v0", type=episode_id,
                         help="a registered next-state prediction id (`rlvr-world list`)")
    episode.add_argument("--index", type=at_least(0), default=0, help="which transition")
    episode.add_argument("--response", choices=RESPONSES, default="gold", help="what the 'model' answers")
    episode.add_argument("--data-dir", type=existing_dir, default=None, help="data root for ids with external data")
    episode.add_argument("--env-kwargs", action=EnvKwargsAction)
    episode.set_defaults(func=cmd_episode, check=check_episode)

    data = sub.add_parser("data", help="download or generate a dataset", description="Download or generate a dataset.")
    data.set_defaults(func=lambda _args: data.print_help() or 0)
    datasets = data.add_subparsers(dest="dataset", metavar="{" + ",".join(DATA_COMMANDS) + "}")
    for name, (module, help_text) in DATA_COMMANDS.items():
        sub_parser = datasets.add_parser(name, help=help_text, description=help_text,
                                         formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        if argv[:2] == ["data", name]:
            mod = importlib.import_module(module)
            mod.add_data_arguments(sub_parser)
            sub_parser.set_defaults(func=mod.run_data_command)

    for name, (_, help_text) in CHECKOUT_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)  # listed here; main() runs the program itself

    # applications: their (heavy) modules are imported only when the command is named
    for name, (module, help_text) in APPLICATION_COMMANDS.items():
        app = sub.add_parser(name, help=help_text, description=help_text,
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        if argv[:1] == [name]:
            importlib.import_module(module).add_arguments(app)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; a bad argument ends in one line on stderr with exit 2 (argparse's rule), data
    problems the user can fix in one line with exit 1."""
    import rlvr_envs  # noqa: F401  (registers the ids for `episode`)
    from rlvr_envs.core.errors import DataError, DownloadError
    from rlvr_envs.core.extras import MissingExtraError, missing_extra

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in CHECKOUT_COMMANDS:
        return run_checkout_command(argv[0], argv[1:])
    args = None
    try:
        parser = build_parser(argv)  # a command's own arguments may need its extra (plan's --device: torch)
        args = parser.parse_args(argv)
        check = getattr(args, "check", None)
        if check is not None:  # the command's own checks of its arguments, before any work: exit 2 like argparse's
            try:
                check(args)
            except (DataError, DownloadError, FileNotFoundError):
                raise  # missing or broken data: exit 1 below
            except (ValueError, TypeError) as exc:
                parser.error(f"{args.command}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return int(args.func(args) or 0)
    except (DataError, DownloadError, FileNotFoundError, MissingExtraError) as exc:
        print(f"rlvr-world: error: {exc}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:  # a command run without its extra (e.g. plan without [video])
        error = missing_extra(exc, f"rlvr-world {args.command if args is not None else argv[0]}")
        if error is None:
            raise
        print(f"rlvr-world: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rlvr-world: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
