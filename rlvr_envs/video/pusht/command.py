"""`rlvr-world data pusht`: generate (or finish generating) a PushT folder.

One run at a time per folder: the run holds `OUT/.rlvr-world.lock` (pid, command, start
time, worker pids) and a second run into the same folder is refused while the first or
any of its workers is alive; a lock left by a killed run is taken over. Workers end with
the run that started them, however it ends (see `rlvr_envs.core.workers`), so killing
the command never leaves processes writing into OUT.

Resuming checks what is already there: every existing episode file is read in full (zip
CRCs) and compared with what the config fixes for that index (policy, noise, reset seed,
frame size, step limit); a file that fails is deleted and generated again, and counted in
the summary's `redone` list. What it cannot replace is refused in one line naming the path
(exit 1), before any episode is generated: a folder where an episode file goes, or an
`episode_*.npz` that is no episode of this config (the env would read it with the rest).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlvr_envs.core.arguments import at_least, output_dir
from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import OutputLock, remove_stale_temporaries, write_json_atomic
from rlvr_envs.core.workers import ORPHANED_EXIT, orphaned, run_parallel
from rlvr_envs.video._files import episode_number
from rlvr_envs.video.pusht.episodes import (
    POLICIES,
    PushTFormatError,
    PushTGenerationConfig,
    PushTGenerator,
    episode_stats,
    plan_mismatch,
    summarize,
)
from rlvr_envs.video.pusht.storage import (
    CONFIG_FILE,
    EPISODE_FILE,
    EPISODE_NAME,
    SUMMARY_FILE,
    episode_metadata,
    load_episode,
    read_metadata,
    same_format_config,
    save_episode,
    write_metadata,
)


class EpisodeWriter:
    """Generates episodes by index and saves them; one per worker process (or the parent)."""

    def __init__(self, config_json: dict[str, Any], episodes_dir: str):
        self.generator = PushTGenerator(PushTGenerationConfig.from_json(config_json))
        self.episodes_dir = Path(episodes_dir)

    def run(self, index: int) -> dict[str, Any]:
        episode = self.generator.episode(index)
        if orphaned():  # the run was killed while this episode was simulated: write nothing
            os._exit(ORPHANED_EXIT)
        save_episode(self.episodes_dir / EPISODE_FILE.format(index=index), episode)
        return episode_stats(episode)

    def close(self) -> None:
        self.generator.close()


def _refuse_what_cannot_be_replaced(config: PushTGenerationConfig, out: Path) -> None:
    """Refuse (`PushTFormatError`, naming the path) what this run could neither read nor write over:
    a folder or other non-file where one of its files goes, and an `episode_*.npz` entry that is no
    episode of `config` (a name the readers refuse, or a number outside 0..episodes-1), which the env
    would read with the rest. They are not this run's to delete."""
    episodes_dir = out / "episodes"
    for path in (out / CONFIG_FILE, out / SUMMARY_FILE, episodes_dir):
        wanted_folder = path == episodes_dir
        if path.exists() and path.is_dir() != wanted_folder:
            raise PushTFormatError(f"{path}: expected a {'folder' if wanted_folder else 'file'} here, found a "
                                   f"{'file' if wanted_folder else 'folder'}; remove it, or choose an empty --out")
    if not episodes_dir.is_dir():
        return
    for path in sorted(episodes_dir.glob("episode_*.npz")):
        number = episode_number(path.name, EPISODE_NAME)
        if number is None or number >= config.episodes:
            raise PushTFormatError(f"{path}: not one of this folder's episodes (episode_000000.npz .. "
                                   f"{EPISODE_FILE.format(index=config.episodes - 1)}), and the env would read "
                                   f"it with them; remove it, or choose an empty --out")
        if not path.is_file():
            raise PushTFormatError(f"{path}: a folder (or other non-file) where episode {number} goes; remove it, "
                                   f"and this command writes the episode")


def _check_existing(config: PushTGenerationConfig, episodes_dir: Path) -> tuple[dict[int, dict], list[dict]]:
    """Stats of the episode files that are whole and match `config`; the others are deleted and listed
    (whatever cannot be deleted was refused before, by `_refuse_what_cannot_be_replaced`)."""
    kept: dict[int, dict[str, Any]] = {}
    redone: list[dict[str, Any]] = []
    for index in range(config.episodes):
        path = episodes_dir / EPISODE_FILE.format(index=index)
        if not path.is_file():
            continue
        try:
            episode = load_episode(path)
            problem = plan_mismatch(episode, config)
        except DataError as error:
            problem = str(error)
        if problem is None:
            kept[index] = episode_stats(episode)
        else:
            redone.append({"episode": index, "file": str(path), "reason": problem})
            path.unlink()
    return kept, redone


def generate_dataset(
    config: PushTGenerationConfig, out_dir: str | os.PathLike, workers: int = 1, progress: bool = True
) -> dict[str, Any]:
    """Generate (or finish generating) `config.episodes` episodes under `out_dir`; return the summary.

    Resumable: whole episodes already on disk that match the config are kept, others are
    redone; a directory made with a different config is refused rather than mixed, and so
    is a directory another live run is writing (`OutputInUse`).
    """
    from tqdm import tqdm

    config.validate()
    out = Path(out_dir)
    episodes_dir = out / "episodes"
    with OutputLock(out, f"rlvr-world data pusht --episodes {config.episodes} --seed {config.seed}") as lock:
        remove_stale_temporaries(out)
        remove_stale_temporaries(episodes_dir)
        fresh = not (out / CONFIG_FILE).is_file()
        if not fresh:
            existing = same_format_config(read_metadata(out))
            if existing != episode_metadata(config):
                ran_on = existing == episode_metadata(replace(config, end_when_block_leaves=False))
                hint = ("; it was made before episodes ended when the block left the arena: add "
                        "--keep-escaped-blocks to finish it as it was made, or" if ran_on else ";")
                raise PushTFormatError(f"{out} holds PushT data made with another config ({existing.get('config')})"
                                       f"{hint} choose an empty --out directory")
        _refuse_what_cannot_be_replaced(config, out)
        if fresh:
            write_metadata(out, config)
        episodes_dir.mkdir(parents=True, exist_ok=True)
        rows, redone = _check_existing(config, episodes_dir)
        todo = [i for i in range(config.episodes) if i not in rows]

        bar = tqdm(total=config.episodes, initial=len(rows), desc="PushT episodes", unit="ep", disable=not progress)

        def record(index: int, stats: dict[str, Any]) -> None:
            rows[index] = stats
            bar.update(1)

        started = time.perf_counter()
        try:
            if workers <= 1 or len(todo) <= 1:
                writer = EpisodeWriter(config.to_json(), str(episodes_dir))
                try:
                    for index in todo:
                        record(index, writer.run(index))
                finally:
                    writer.close()
            else:
                run_parallel(EpisodeWriter, (config.to_json(), str(episodes_dir)), todo, min(workers, len(todo)),
                             on_result=record, on_started=lambda pids: lock.update(workers=pids))
        finally:
            bar.close()
        seconds = time.perf_counter() - started
        summary = summarize([rows[i] for i in range(config.episodes)])
        summary["generated_now"] = len(todo)
        summary["redone"] = redone
        summary["seconds"] = round(seconds, 1)
        write_json_atomic(out / SUMMARY_FILE, summary)
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """The closing table of `rlvr-world data pusht`."""
    lines = [f"{'policy':<8} {'episodes':>8} {'success':>8} {'final cov':>10} {'max cov':>8} {'steps':>7}"]
    for name in ("all", *POLICIES):
        if name in summary:
            row = summary[name]
            lines.append(f"{name:<8} {row['episodes']:>8d} {row['success_rate']:>8.1%} {row['final_coverage']:>10.3f} "
                         f"{row['max_coverage']:>8.3f} {row['steps']:>7d}")
    return "\n".join(lines)


def _policy_weights(text: str) -> dict[str, float]:
    """`expert=0.6,random=0.2` -> {"expert": 0.6, "random": 0.2} (checked by the config)."""
    weights = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:  # no "=" leaves value empty, which float() refuses too
            raise argparse.ArgumentTypeError(f"expected NAME=WEIGHT, got {item!r}") from None
        if not (math.isfinite(weights[name.strip()]) and weights[name.strip()] >= 0):
            raise argparse.ArgumentTypeError(f"a weight must be a finite number >= 0, got {item!r}")
    if weights and sum(weights.values()) <= 0:
        raise argparse.ArgumentTypeError(f"the weights must not all be 0, got {text!r}")
    return weights


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `rlvr-world data pusht`."""
    defaults = PushTGenerationConfig()
    parser.add_argument("--episodes", type=at_least(1), default=defaults.episodes, help="number of episodes")
    parser.add_argument("--out", type=output_dir, required=True, help="output directory (resumable)")
    parser.add_argument("--resolution", type=at_least(8), default=defaults.resolution, help="frame size in pixels")
    parser.add_argument("--seed", type=at_least(0), default=defaults.seed, help="seed of the first episode")
    parser.add_argument("--max-steps", type=at_least(1), default=defaults.max_steps,
                        help="simulator steps per episode at most")
    parser.add_argument("--policy-weights", type=_policy_weights, default=defaults.policy_weights,
                        help=f"share of episodes per policy, NAME=WEIGHT,... among {', '.join(POLICIES)} "
                             "(see rlvr_envs.video.pusht.policies)")
    parser.add_argument("--keep-escaped-blocks", action="store_true",
                        help="run episodes on after the agent pushes the block out of the arena (by default an "
                             "episode ends there: no later frame would show the block)")
    parser.add_argument("--workers", type=at_least(1), default=min(2, os.cpu_count() or 1), help="processes")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run_data_command(args: argparse.Namespace) -> int:
    """Generate PushT data and print a success/coverage table.

    Returns 2 for invalid settings; data problems (a broken or foreign folder, a folder in
    use) raise `DataError`, which the CLI prints as one line with exit status 1.
    """
    config = PushTGenerationConfig(episodes=args.episodes, resolution=args.resolution, seed=args.seed,
                                   max_steps=args.max_steps, policy_weights=args.policy_weights,
                                   end_when_block_leaves=not args.keep_escaped_blocks)
    try:
        config.validate()
    except ValueError as error:
        print(f"rlvr-world data pusht: error: {error}", file=sys.stderr)
        return 2
    summary = generate_dataset(config, args.out, workers=args.workers, progress=not args.no_progress)
    print(format_summary(summary))
    for item in summary["redone"]:
        print(f"redone episode {item['episode']}: {item['reason']}")
    print(f"{summary['generated_now']} episodes generated in {summary['seconds']} s; data in {args.out}")
    return 0
