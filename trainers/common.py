"""What every trainer script shares: its one dataclass of arguments as a command line."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from rlvr_envs.core.arguments import ENV_KWARGS_HELP


def adamw(parameters, device, **kwargs):
    """`torch.optim.AdamW`, fused into a few kernels on CUDA (its per-parameter loop is
    launch-bound at world-model sizes); the plain loop elsewhere."""
    import torch

    return torch.optim.AdamW(parameters, fused=torch.device(device).type == "cuda", **kwargs)


#: what to do when a checkpoint under --resume is damaged or foreign (named in the error)
RESUME_REMEDY = "delete that checkpoint folder and resume from an earlier one, or drop --resume to start afresh"

# -- the one contract of --out and --resume ----------------------------------------------------
#: files only a finished run leaves in --out (its card or summary, or the saved final model's config)
FINISHED_FILES = ("card.json", "results.json", "config.json")
#: what a started run leaves before it finishes (its log, its checkpoints)
PROGRESS_FILES = ("log.jsonl", "checkpoint", "checkpoint.old", "checkpoint-*")


def run_state(out: str | Path) -> tuple[str, str]:
    """("finished" | "unfinished" | "none", the file that says so) for the run in `out`."""
    out = Path(out)
    if not out.is_dir():
        return "none", ""
    for name in FINISHED_FILES:
        if (out / name).exists():
            return "finished", name
    for pattern in PROGRESS_FILES:
        found = sorted(out.glob(pattern))
        if found:
            return "unfinished", found[0].name
    return "none", ""


def owns_output() -> bool:
    """Whether this process writes --out: a single process, or rank 0 of a distributed run (the
    other ranks follow it and must not take, or be refused by, the folder's lock)."""
    return os.environ.get("RANK", "0") == "0"


def check_run_folder(out: str, resume: bool, continue_with: str = "", settings: Any = None) -> None:
    """Before any work: `out` can be written, and `--resume` agrees with what `out` holds.
    A finished run is never trained over or extended in place, so no rerun can lose its final
    model: it is refused, naming `continue_with` (the trainer's flag that starts a new run from
    a saved model, e.g. "--model"). A started run needs `--resume`, and `--resume` needs one, with
    the settings it started with (`settings`, the trainer's arguments: `check_resume_settings`)."""
    from rlvr_envs.core.arguments import output_dir
    from rlvr_envs.core.files import check_not_in_use

    try:
        output_dir(out)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"argument --out: {error}") from None
    if owns_output():  # a run writing there now: say so, not what its files look like mid-run
        check_not_in_use(out)
    state, evidence = run_state(out)
    if state == "finished":
        final = Path(out) / "final" if (Path(out) / "final").is_dir() else Path(out)
        onward = f"start a new run from its model ({continue_with} {final} --out NEW)" if continue_with else \
            "choose another --out"
        raise ValueError(f"--out {out} holds a finished run ({evidence}), which is never overwritten"
                         f"{' or extended in place' if resume else ''}; to train further, {onward}")
    if state == "unfinished" and not resume:
        raise ValueError(f"--out {out} already holds a run ({evidence}); pass --resume to continue it or choose "
                         f"another --out")
    if state == "none" and resume:
        raise ValueError(f"--resume: {out} holds no run to continue (no log.jsonl or checkpoint); drop --resume "
                         f"to start one there")
    if state == "unfinished" and settings is not None:
        check_resume_settings(settings)


#: settings a resumed run may change: how long, where and how fast it runs, never what it learns
RESUMABLE_SETTINGS = frozenset({"out", "resume", "steps", "max_seconds", "end_at", "threads", "device", "precision", "bf16",
                                "fp32", "no_compile", "micro_batch", "generation_batch", "logging", "eval_every",
                                "checkpoint_every", "use_vllm", "vllm_mode", "vllm_server_host", "vllm_server_port",
                                "vllm_gpu_memory_utilization"})
#: where a run records the settings it started with, for `--resume` to compare against
SETTINGS_FILE = "settings.json"


def owns_run_folder(continue_with: str = "") -> Callable[[Callable], Callable]:
    """Decorate a trainer's entry `fn(args)`: it runs holding `args.out`'s lock (`OutputLock`, the
    lock `data pusht` takes), so a second writer is refused in one line instead of interleaving
    logs; under the lock the folder is checked again (`check_run_folder`: the first run may have
    finished meanwhile), and `--resume` refuses settings that would change the run
    (`check_resume_settings`). Ranks other than 0 of a distributed run only call `fn`."""
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(args: Any, *rest: Any, **kwargs: Any) -> Any:
            from rlvr_envs.core.files import _HELD, OutputLock, write_json_atomic

            out = Path(args.out)
            if not owns_output() or out.resolve() in _HELD:
                return fn(args, *rest, **kwargs)
            with OutputLock(out, command_line(program_name(fn.__module__), args)):
                check_run_folder(args.out, args.resume, continue_with, args)
                if not args.resume:
                    write_json_atomic(out / SETTINGS_FILE, settings_record(args))
                return fn(args, *rest, **kwargs)
        return run
    return decorate


def settings_record(args: Any) -> dict[str, Any]:
    """A trainer's arguments as the JSON `SETTINGS_FILE` holds (tuples as lists, paths as text)."""
    from rlvr_envs.core.files import strict_json

    return strict_json(json.loads(json.dumps(dataclasses.asdict(args), default=str)))


def check_resume_settings(args: Any) -> None:
    """A fresh run records its settings in `OUT/settings.json` (`owns_run_folder`); a resumed one must
    match them but for `RESUMABLE_SETTINGS`, else `ValueError` naming each changed setting (the
    restored optimizer and data order would keep the old ones while the card claimed the new).
    A run started before the file existed is not checked."""
    from rlvr_envs.core.files import read_json

    path = Path(args.out) / SETTINGS_FILE
    if not path.is_file():
        return
    before, now = read_json(path, "the run's settings", "delete it to resume without the check"), \
        settings_record(args)
    changed = [name for name, value in now.items()
               if name not in RESUMABLE_SETTINGS and isinstance(before, dict) and name in before
               and before[name] != value]
    if changed:
        flag = lambda name: f"--{name.replace('_', '-')}"  # noqa: E731
        said = ", ".join(f"{flag(n)} {before[n]!r} (now {now[n]!r})" for n in changed)
        raise ValueError(f"--resume: {args.out} was started with {said}; resume with the settings it started "
                         f"with, or start a new run in another --out")


def resume_flags(out: str | Path) -> list[str]:
    """`["--resume"]` when `out` holds an unfinished run, else none: what a script that reruns a
    trainer until its run is finished passes (a finished run it skips: `run_state`)."""
    return ["--resume"] if run_state(out)[0] == "unfinished" else []


def resume_line(out: str | Path, checkpoint: str | Path | None, step: int) -> str:
    """What a resumed run says before it trains: where it continues, or that no checkpoint was reached."""
    if checkpoint is None:
        return f"resuming {out}: the run saved no checkpoint before it stopped; starting again at step 0"
    return f"resuming {checkpoint} at step {step}"


def check_ranges(config: Any, at_least: dict[str, int] | None = None, positive: tuple[str, ...] = (),
                 non_negative: tuple[str, ...] = ()) -> None:
    """Refuse, naming the field, a count below its minimum (`at_least`) or a real that is not finite,
    not > 0 (`positive`) or not >= 0 (`non_negative`): NaN passes every `<` test, so it is named here."""
    import math

    for name, minimum in (at_least or {}).items():
        if getattr(config, name) < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {getattr(config, name)}")
    for names, strictly in ((positive, True), (non_negative, False)):
        for name in names:
            value = getattr(config, name)
            if not math.isfinite(value) or value < 0 or (strictly and value == 0):
                raise ValueError(f"{name} must be a finite number {'>' if strictly else '>='} 0, got {value}")


def field_help(cls: type) -> dict[str, str]:
    """Each field's `#:` comment in the dataclass source (on its line or the lines above), its help text."""
    import inspect
    import re

    helps: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*:[^=]*=.*?(?:#:\s*(.*))?$", stripped)
        if match and match.group(1) not in helps:
            helps[match.group(1)] = " ".join([*pending, match.group(2) or ""]).strip()
        pending = []
    return helps


#: help for fields that many trainers share, when their dataclass gives none
COMMON_HELP = {"out": "output folder", "seed": "random seed", "threads": "torch threads", "steps": "training steps",
               "lr": "learning rate", "batch_size": "examples per optimizer step", "env_id": "a registered env id",
               "resume": "continue the unfinished run in --out from its last checkpoint (a finished run is refused)",
               "model": "a save_pretrained directory",
               "preset": "model size preset", "eval_every": "evaluate every this many steps",
               "checkpoint_every": "save a checkpoint every this many steps", "env_kwargs": ENV_KWARGS_HELP}


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One `--flag-name` per field of `cls` (but `skip`: fields the caller adds itself, e.g. as
    positionals), with its `#:` comment as help (defaults shown by the parser's formatter); bools
    are switches and tuples take one or more values."""
    defaults, helps = cls(), field_help(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag, default = f"--{f.name.replace('_', '-')}", getattr(defaults, f.name)
        help_text = helps.get(f.name) or COMMON_HELP.get(f.name) or f.name.replace("_", " ")
        help_text = help_text.replace("%", "%%")  # argparse formats help strings
        if isinstance(default, bool):
            parser.add_argument(flag, action="store_true", help=help_text)
        elif isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", default=default, help=help_text)
        elif f.name == "device":  # checked while parsing: a bad or absent device is a one-line usage error
            from rlvr_envs.core.device import checked_device

            parser.add_argument(flag, type=checked_device, default=default, help=help_text)
        else:
            parser.add_argument(flag, type=type(default), default=default, help=help_text)


def dataclass_from_namespace(cls: type, namespace: argparse.Namespace) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in vars(namespace).items() if k in names})


def validated(parser: argparse.ArgumentParser, args: Any) -> Any:
    """`args.validate()` (when the dataclass has one) before any work; a bad value ends as
    argparse's one-line `error:` with exit code 2, a broken data file or model folder
    (`DataError`) as one line with exit code 1, never a traceback."""
    from rlvr_envs.core.arguments import output_dir
    from rlvr_envs.core.errors import DataError

    out = getattr(args, "out", None)
    if isinstance(out, str) and out:
        try:
            output_dir(out)
        except argparse.ArgumentTypeError as error:
            parser.error(f"argument --out: {error}")
    if hasattr(args, "validate"):
        try:
            args.validate()
        except DataError as error:  # a broken data file or model folder: one line, exit 1 (README's rule)
            print(f"{parser.prog}: error: {str(error).splitlines()[0]}", file=sys.stderr)
            sys.exit(1)
        except (ValueError, TypeError, FileNotFoundError) as error:
            parser.error(str(error).splitlines()[0] if str(error) else type(error).__name__)
    return args


def parse_dataclass_args(cls: type, description: str, argv: list[str] | None = None, prog: str | None = None) -> Any:
    """`cls(**parsed)` from the command line (see `add_dataclass_arguments`), validated (`validated`);
    `prog`: the command's public name when it is not `python -m trainers.X`."""
    parser = argparse.ArgumentParser(prog=prog or program_name(cls.__module__), description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_dataclass_arguments(parser, cls)
    return validated(parser, dataclass_from_namespace(cls, parser.parse_args(argv)))


def program_name(module: str) -> str:
    """`python -m trainers.X` as the user typed it (the module run as `__main__`, else `module`)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return f"python -m {spec.name if spec is not None and spec.name.startswith('trainers.') else module}"


def run_command(main: Callable[[Any], Any], parse_args: Callable[[], Any], program: str | None = None) -> None:
    """`main(parse_args())` as a command: what only the work finds (another run taking --out first, a
    broken data file) ends as one line and exit 1, Ctrl-C as one line and exit 130, never a traceback.
    `program`: the command's public name when it is not `python -m trainers.X`."""
    from rlvr_envs.core.errors import DataError

    args = parse_args()
    program = program or program_name(main.__module__)
    try:
        main(args)
    except DataError as error:
        print(f"{program}: error: {str(error).splitlines()[0]}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        again = "rerun the same command with --resume to continue" if hasattr(args, "resume") else "rerun it"
        print(f"{program}: interrupted; {again}", file=sys.stderr)
        sys.exit(130)


def command_line(program: str, args: Any) -> str:
    """The command that reproduces `args` (its non-default fields as flags), whoever called
    the trainer: a card must not record the caller's own command line."""
    defaults, parts = type(args)(), [program]
    for f in dataclasses.fields(args):
        value = getattr(args, f.name)
        if value == getattr(defaults, f.name):
            continue
        flag = f"--{f.name.replace('_', '-')}"
        if isinstance(value, bool):
            parts.append(flag)
        elif isinstance(value, tuple):
            parts.append(" ".join([flag, *map(str, value)]))
        else:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def reward_figure(log: Path, path: Path, ylabel: str = "reward (-MAE)") -> None:
    """The training reward curve of a GRPO run's log.jsonl (per step and a 10-step mean) as a PNG."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if "reward" in r]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([r["step"] for r in rows], [r["reward"] for r in rows], alpha=0.4, label="per step")
    if len(rows) >= 10:
        smooth = np.convolve([r["reward"] for r in rows], np.ones(10) / 10, mode="valid")
        ax.plot([r["step"] for r in rows][9:], smooth, label="10-step mean")
    ax.set(xlabel="GRPO step", ylabel=ylabel, title="GRPO training reward")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reward_trend(log: Path, window: int = 10) -> str:
    """The training reward GRPO maximised, its mean over the first and the last `window` steps of a
    log.jsonl, as a sentence: a report says what happened to the reward it trained on."""
    import numpy as np

    rewards = [row["reward"] for row in map(json.loads, log.read_text(encoding="utf-8").splitlines())
               if "reward" in row]
    if not rewards:
        return "GRPO logged no training reward."
    n = min(window, len(rewards))
    return (f"Training reward (on the training prompts, the mean of the first / last {n} steps): "
            f"{np.mean(rewards[:n]):.4f} -> {np.mean(rewards[-n:]):.4f}.")


def lora_config(r: int, alpha: int):
    """The one LoRA setup of every trainer: rank `r` on every linear layer but the output head
    (for LLaMA: q, k, v, o, gate, up, down projections), no dropout."""
    from peft import LoraConfig

    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")


# -- the demos' time-bounded GRPO phase ---------------------------------------------------------

def grpo_run(record: Any, args: Any, steps: int) -> tuple[dict, str | None]:
    """A demo's GRPO phase: its run record finished, and (when the time limit cut it short of
    the `args.grpo_steps` asked for; 0 asks only for the minutes) the sentence saying so, printed as well."""
    from rlvr_envs.core.records import shortfall_note

    run = record.finish()
    shortfall = shortfall_note("GRPO", args.grpo_steps, steps, run) if args.grpo_steps else None
    if shortfall:
        print(shortfall, flush=True)
    return run, shortfall


def step_line(steps: int, seconds: float) -> str:
    """What a demo's GRPO did in its minutes, measured where it ran (the steps that fit depend on the machine)."""
    return f"{steps} GRPO steps in {seconds / 60:.1f} min, {seconds / max(steps, 1):.1f} s a step on this machine"


def machine_line(run: dict, grpo: dict) -> str:
    """The machine as a demo report states it: the threads asked for and the CPU share GRPO really got."""
    return f"{run['machine']}; GRPO got {grpo['cpu_share']:.0%} of its {grpo['threads']} thread(s)"
