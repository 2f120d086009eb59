"""Single-step GRPO prompts from a PushT world model's own rollouts, the real simulator as referee.

    python -m trainers.rollout_prompts --model runs/wm_single_long2 --data data/pusht64_explore \
        --starts 256 --out runs/rollout_prompts.npz
    python -m trainers.grpo --env-id RLVRWorld/PushT-SingleStep-v0 --env-kwargs reward=pose \
        data_dir=data/pusht64_explore --model runs/wm_single_long2 --video-prompts runs/rollout_prompts.npz ...

A planner asks a learned simulator what several chunks of *its* actions do: CEM draws
targets around the agent, and from the second chunk on the model conditions on its own
predicted frames. Recorded windows show neither, so a model trained on them alone learns to
lean on the history's motion and drifts once the history is its own. This file holds
prompts that show both: from `starts` states of training episodes (3 real frames and their
recorded chunks), `horizon` chunks of targets like those CEM scores (`cem_like_targets`:
a path away from the agent plus per-target noise) are rolled out greedily by the model and
by the real simulator (exact state restore). Prompt d (d = 0 .. horizon-1) is the model's context after d of its own
predictions (the real frames, then its own) and chunk d; its truth is the real frame after
chunk d. GRPO on these prompts rewards predicting what really happens from where the model's
own rollout has got to: RLVR with the real simulator as verifier.

Writes one npz (no pickles): `prompts` int64 [N, P], `truth` uint8 [N, H, W, 3], `uids`
(episode/chunk/depth), `depth` int64 [N] (N = starts x horizon, start-major), per start the
`targets` [starts, horizon, 5, 2] and start `physics` [starts, 10] (the truth is their real
rollout), and `meta` (JSON: command, model, tokenizer, data, counts, time).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainers.common import command_line, parse_dataclass_args


@dataclass
class Args:
    model: str = ""  #: the world model whose rollouts the prompts hold (default: the shipped MLE single-step model)
    tokenizer: str = ""  #: frame tokenizer dir (default: the shipped one)
    data: str = "data/pusht64"  #: PushT episodes (`rlvr-world data pusht`); the training split is used
    starts: int = 256  #: start states; each gives `horizon` prompts
    horizon: int = 5  #: chunks rolled out per start (the planner's horizon)
    std: float = 60.0  #: px, CEM's init_std: the largest per-target noise (the path's end is N(0, 2 std) away)
    batch_size: int = 128  #: world-model generation batch
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N: where the world model rolls out
    out: str = "runs/rollout_prompts.npz"

    def validate(self) -> "Args":
        for name in ("starts", "horizon", "batch_size", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.std <= 0:
            raise ValueError(f"std must be > 0, got {self.std}")
        if not self.out.endswith(".npz"):
            raise ValueError(f"out must be an .npz file, got {self.out!r}")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # an absent or malformed device fails before any work
        return self


def context_prompts(layout, start_codes: np.ndarray, start_actions: np.ndarray, predicted: np.ndarray,
                    chunk_tokens: np.ndarray) -> np.ndarray:
    """[H, P] prompts of one rollout: prompt d holds the last `history` frames of (real start
    frames, then the first d predictions) with the action after each, chunk d's last."""
    frames = np.concatenate([start_codes, predicted])  # [history + H, F]
    actions = np.concatenate([start_actions, chunk_tokens])  # [history - 1 + H, A]: the action after each frame
    history = len(start_codes)
    return np.stack([layout.prompt(frames[d:d + history], actions[d:d + history]) for d in range(len(predicted))])


def load_rollout_prompts(path: str | Path) -> dict:
    """(prompts, truth, uids, meta) of a `trainers.rollout_prompts` file, read without pickles."""
    import zipfile

    from rlvr_envs.core.errors import DataError
    from rlvr_envs.core.files import loads_json

    remedy = "write it again with `python -m trainers.rollout_prompts`"
    try:
        with np.load(path, allow_pickle=False) as data:
            out = {key: data[key] for key in ("prompts", "truth", "uids", "meta")}
    except FileNotFoundError:
        raise FileNotFoundError(f"no rollout prompts file at {path}: {remedy}") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise DataError(f"{path}: not a trainers.rollout_prompts file, or one cut short ({first}); "
                        f"{remedy}") from None
    return {"prompts": out["prompts"], "truth": out["truth"], "uids": [str(u) for u in out["uids"]],
            "meta": loads_json(str(out["meta"]), f"{path}!meta", "the rollout prompts' meta", remedy)}


def main(args: Args) -> dict:
    import torch
    from tqdm.auto import tqdm

    from rlvr_envs.core.files import atomic_writer
    from rlvr_envs.simulators import LearnedPushTSim, PushTChunkEnv
    from rlvr_envs.video.pusht import PushTEpisodeDataset, cem_like_targets
    from rlvr_envs.video.sources import TEST_EVERY
    from rlvr_envs.video.task import skip_frames

    from rlvr_envs.core.device import setup_device

    args.validate()
    run = setup_device(args.device, threads=args.threads)
    began = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    sim = LearnedPushTSim(args.model or None, args.tokenizer or None, reward="none", batch_size=args.batch_size,
                          device=str(run.device))
    skip, history = sim.frame_skip, sim.history
    episodes = [e for e in PushTEpisodeDataset(args.data) if int(e.index) % TEST_EVERY != 0]
    usable = [e for e in episodes if len(skip_frames(np.asarray(e.frames), np.asarray(e.actions), skip)[0]) > history]
    if not usable:
        raise ValueError(f"no training episode in {args.data} has {history} chunk-spaced frames")
    real = PushTChunkEnv(resolution=sim.resolution[0], frame_skip=skip)
    contexts, physics, targets, uids = [], [], [], []
    for _ in range(args.starts):
        episode = usable[int(rng.integers(len(usable)))]
        frames, chunks = skip_frames(np.asarray(episode.frames), np.asarray(episode.actions), skip)
        t = int(rng.integers(history - 1, len(frames)))
        state = np.asarray(episode.physics)[t * skip]
        contexts.append(sim.context_from(frames[t - history + 1:t + 1], chunks[t - history + 1:t], state[0:2]))
        physics.append(state)
        targets.append(cem_like_targets(state[0:2], args.horizon, args.std, rng, skip))
        uids.append(f"pusht/{int(episode.index)}/{t}")
    targets = np.stack(targets)
    predicted = []
    for begin in tqdm(range(0, args.starts, args.batch_size), desc="model rollouts", unit="batch"):
        end = begin + args.batch_size
        _, codes = sim.rollout(targets[begin:end], start=contexts[begin:end], frames="last", return_codes=True)
        predicted.append(codes)
    predicted = np.concatenate(predicted)  # [S, H, F]
    truth = np.stack([real.rollout(sequence[None], start=state)[0]
                      for sequence, state in tqdm(zip(targets, physics), total=args.starts, desc="real rollouts")])
    real.close()
    tokens = sim.vocab.action_tokens(sim.bins.encode(targets.reshape(args.starts, args.horizon, -1)))
    prompts = np.concatenate([context_prompts(sim.layout, c.codes, c.action_tokens, p, k)
                              for c, p, k in zip(contexts, predicted, tokens)])
    depth = np.tile(np.arange(args.horizon), args.starts)
    meta = {"command": command_line("python -m trainers.rollout_prompts", args), "model": sim.model_name,
            "tokenizer": sim.tokenizer_name, "data": args.data, "starts": args.starts, "horizon": args.horizon,
            "prompts": int(len(prompts)), "seconds": round(time.perf_counter() - began, 1),
            "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, {run.describe()}",
            "time": time.strftime("%Y-%m-%d %H:%M")}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(out, "wb") as handle:
        np.savez_compressed(handle, prompts=prompts, truth=truth.reshape(-1, *truth.shape[2:]),
                            uids=np.asarray([f"{u}/{d}" for u in uids for d in range(args.horizon)]),
                            depth=depth, targets=targets, physics=np.stack(physics), meta=np.asarray(json.dumps(meta)))
    print(f"{len(prompts)} prompts from {args.starts} starts x {args.horizon} chunks -> {out} "
          f"({meta['seconds']:.0f} s)")
    return meta


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
