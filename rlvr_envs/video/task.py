"""Video next-frame prediction tasks: PushT single-step and multi-step (`RLVRWorld/PushT-*`).

A transition is a window of an episode: k history frames with their actions (the prompt,
in the frame tokenizer's codes and the action bins' tokens) and the future frame(s) to
predict. The agent writes frame codes; in the multi-step layout the env inserts each
step's given action tokens after every generated frame. The reward is computed on the
*decoded* frames against the real ones, RLVR-World's -(L1 + LPIPS) by default.

Frames are taken every `frame_skip` simulator steps and the skipped steps' actions are
concatenated into one action chunk (DINO-WM predicts PushT 5 steps ahead the same way):
at 10 fps consecutive frames barely differ, and copying the last frame would beat any
model in pixels.

The video invariant (a tokenizer cannot reconstruct frames exactly): the gold codes do not
reach `max_reward`; they score at least as well as perturbed or random responses, and
`info["metrics"]["ceiling"]` reports what they score. Prompts, gold responses and truth
frames are encoded once when the task is built, never per reset.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr_envs.core.task import Task
from rlvr_envs.core.types import RewardResult, Transition
from rlvr_envs.core.util import as_tuple
from rlvr_envs.video.action_bins import ActionBins
from rlvr_envs.video.frame_tokenizer import FrameTokenizer
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec, frames_and_actions
from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary

#: reward name -> (what it is, minimum, maximum); every one is computed on decoded frames
REWARDS: dict[str, tuple[str, float, float]] = {
    "l1_lpips": ("-(L1 + LPIPS) of decoded frames, clipped at -3", -3.0, 0.0),
    "mae": ("-MAE of decoded frames (pixels in [0, 1])", -1.0, 0.0),
    "mse": ("-MSE of decoded frames (pixels in [0, 1])", -1.0, 0.0),
    "psnr": ("PSNR of decoded frames in dB, clipped to [0, 100]", 0.0, 100.0),
    "ssim": ("SSIM of decoded frames", -1.0, 1.0),
}
LAYOUTS = ("single", "multi")
SPLITS = ("all", "train", "test")
#: an episode whose index is a multiple of this is held out (split="test")
TEST_EVERY = 10
#: PushT actions are absolute agent targets in pixels of the 512x512 arena
PUSHT_ACTION_RANGE = (0.0, 512.0)
EMBEDDED_DIR = Path(__file__).resolve().parents[1] / "assets" / "video"


def skip_frames(frames: np.ndarray, actions: np.ndarray, skip: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """An episode seen every `skip` frames from frame `offset`, the skipped actions as one chunk.

    Frames f_0..f_F and actions a_0..a_{F-1} become frames f_o, f_{o+s}, ... and actions
    [a_o..a_{o+s-1}], ... (each chunk s * A values). The `skip` offsets of one episode are
    different sequences of the same motion (training uses them all).
    """
    if skip < 1 or not 0 <= offset < skip:
        raise ValueError(f"need frame_skip >= 1 and 0 <= offset < frame_skip, got {skip}, {offset}")
    frames, actions = frames[offset:], np.asarray(actions)[offset:]
    chunks = min(len(actions) // skip, (len(frames) - 1) // skip)
    return frames[: chunks * skip + 1: skip], actions[: chunks * skip].reshape(chunks, -1)


@dataclass(frozen=True)
class VideoTaskConfig:
    """Arguments of the PushT video ids (pass them to `gym.make`)."""

    layout: str = "single"  #: "single" (k history frames -> 1 frame) or "multi" (-> `future` frames)
    data_dir: str | None = None  #: folder of PushT episodes (`rlvr-world data pusht`); default: the embedded held-out set
    split: str = "all"  #: episodes of data_dir to use: "all", "train" or "test" (index % 10 == 0 is test)
    episodes: int = 12  #: size of the embedded held-out set (generated once with the real simulator, then cached)
    tokenizer: str | None = None  #: frame tokenizer checkpoint dir; default: the shipped PushT tokenizer
    reward: str = "l1_lpips"  #: one of REWARDS
    lpips_net: str = "vgg"  #: LPIPS trunk for reward="l1_lpips" ("vgg" as in the reference code, or "alex")
    lpips_random_backbone_seed: int | None = None  #: explicit opt-in to a random LPIPS trunk (tests, offline)
    repetition_penalty: float = 0.0  #: subtracted per repeated frame (a copy of the previous frame's codes)
    frame_skip: int = 5  #: simulator steps between frames (actions chunked)
    frame_offsets: tuple[int, ...] = (0,)  #: phases of the frame skip to take windows from (training: all)
    history: int | None = None  #: history frames (default 3 single-step, 1 multi-step)
    future: int = 4  #: predicted frames of the multi-step layout
    window_stride: int = 2  #: distance between window starts (in kept frames)
    size: int | None = None  #: keep the first N windows

    def __post_init__(self):
        object.__setattr__(self, "frame_offsets", as_tuple(self.frame_offsets))

    def validate(self) -> None:
        if not self.frame_offsets or any(not 0 <= o < self.frame_skip for o in self.frame_offsets):
            raise ValueError(f"frame_offsets must lie in [0, frame_skip={self.frame_skip}), got {self.frame_offsets}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        for name in ("episodes", "frame_skip", "future", "window_stride"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.history is not None and self.history < 1:
            raise ValueError(f"history must be >= 1, got {self.history}")
        if self.size is not None and self.size < 1:
            raise ValueError(f"size must be positive, got {self.size}")
        if self.repetition_penalty < 0:
            raise ValueError("repetition_penalty must be >= 0")

    @property
    def history_frames(self) -> int:
        return self.history or (3 if self.layout == "single" else 1)

    @property
    def future_frames(self) -> int:
        return 1 if self.layout == "single" else self.future


def default_tokenizer_dir() -> Path:
    return EMBEDDED_DIR / "pusht_frame_tokenizer"


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str) -> FrameTokenizer:
    return FrameTokenizer.load(path)


def pusht_action_bins(frame_skip: int) -> ActionBins:
    """256 uniform bins over the arena for each of the chunk's 2 * frame_skip values."""
    low, high = PUSHT_ACTION_RANGE
    return ActionBins(np.full(2 * frame_skip, low), np.full(2 * frame_skip, high))


def _lpips_or_explain(config: VideoTaskConfig):
    from rlvr_envs.video import metrics

    try:
        return metrics.load_lpips(config.lpips_net, random_backbone_seed=config.lpips_random_backbone_seed,
                                  allow_download=False)
    except metrics.LPIPSWeightsUnavailable as exc:
        raise metrics.LPIPSWeightsUnavailable(
            f"reward='l1_lpips' needs the real LPIPS trunk ({config.lpips_net}): {exc}. Put the torchvision "
            f"weights at {metrics.trunk_checkpoint_path(config.lpips_net)}, or use reward='mae' (the paper's "
            f"MAE-only setting), or opt into a random trunk with lpips_random_backbone_seed=0 (tests only)"
        ) from None


class VideoPredictionTask(Task):
    """
    ## Description
    Next-frame prediction on PushT, RLVR-World's video domain at CPU scale: from k history
    frames and actions (frame tokenizer codes + action-bin tokens), predict the next frame
    (single-step) or the next T frames with the given actions (multi-step).

    ## Reward
    See `REWARDS`: -(L1 + LPIPS) by default (needs the real LPIPS weights; `reward="mae"`
    needs none). A response of the wrong length, or with a non-frame token where a frame
    code belongs, or (multi-step, sequence mode) with action tokens that are not the given
    ones, scores the minimum with `info["error"]`. `info["metrics"]` carries every metric,
    the repetition flag and `ceiling` (the gold codes' own reward).

    ## Arguments
    ```python
    import gymnasium as gym, rlvr_envs
    env = gym.make("RLVRWorld/PushT-MultiStep-v0", reward="mae")
    ```
    See `VideoTaskConfig`.
    """

    modality = "video"
    random_responses_score_minimum = False
    gold_reaches_max = False
    Config = VideoTaskConfig

    @classmethod
    def describe_reward(cls, reward: str = "l1_lpips", **kwargs: Any) -> str:
        return REWARDS[reward][0]

    def __init__(self, config: VideoTaskConfig):
        config.validate()
        self.config = config
        self.reward_name = config.reward
        self.reward_description, self.min_reward, self._max = REWARDS[config.reward]
        self.lpips = _lpips_or_explain(config) if config.reward == "l1_lpips" else None
        self.tokenizer = _load_tokenizer(str(config.tokenizer or default_tokenizer_dir()))
        self.bins = pusht_action_bins(config.frame_skip)
        self.vocab = VideoVocabulary(self.tokenizer.config.codebook_size, self.bins.num_bins)
        frame_len, action_dims = self.tokenizer.config.tokens_per_frame, self.bins.dim
        if config.layout == "single":
            self.layout = SingleStepLayout(self.vocab, frame_len, action_dims, config.history_frames)
        else:
            self.layout = MultiStepLayout(self.vocab, frame_len, action_dims, config.history_frames,
                                          config.future_frames)
        self.vocab_size, self.eos_token_id, self.pad_token_id = self.vocab.size, self.vocab.eos, self.vocab.pad
        self.max_prompt_len = self.layout.prompt_len
        self.max_response_len = self.layout.response_len + 1  # room for an EOS after the frames
        self._build(self._episode_source())

    # -- data ----------------------------------------------------------------------------
    def _episode_source(self):
        from rlvr_envs.video.pusht import PushTEpisodeDataset

        folder = self.config.data_dir or embedded_heldout_dir(self.config.episodes,
                                                             self.tokenizer.config.resolution[0])
        return PushTEpisodeDataset(folder)

    def _build(self, source) -> None:
        """Encode every kept frame once; windows then index into the per-episode codes."""
        config, layout = self.config, self.layout
        spec = WindowSpec(history=config.history_frames, future=config.future_frames, stride=config.window_stride,
                          action_after_last_frame=isinstance(layout, MultiStepLayout))
        episodes, names, codes = [], [], []
        for position, episode in enumerate(source):
            if not self._in_split(episode):
                continue
            frames, actions = frames_and_actions(episode)
            all_codes = self.tokenizer.encode(frames)  # once per episode, shared by every offset
            for offset in config.frame_offsets:
                kept = skip_frames(frames, actions, config.frame_skip, offset)
                episodes.append(kept)
                codes.append(all_codes[offset::config.frame_skip][: len(kept[0])])
                names.append(f"{getattr(episode, 'index', position)}" + (f"+{offset}" if offset else ""))
        if not episodes:
            raise ValueError(f"no episodes of split {config.split!r} in {len(source)} episodes")
        windows = FrameWindowDataset(list(episodes), spec, lengths=[(len(f), len(a)) for f, a in episodes])
        if len(windows) == 0:
            raise ValueError(f"no {config.layout}-step windows in {len(episodes)} episodes at frame_skip "
                             f"{config.frame_skip}: episodes are too short")
        action_tokens = [self.vocab.action_tokens(self.bins.encode(actions)) for _, actions in episodes]
        limit = len(windows) if config.size is None else min(config.size, len(windows))
        k, t = config.history_frames, config.future_frames
        self._transitions, self._prompts, self._targets, self._given, self._truth = [], [], [], [], []
        for item in range(limit):
            window = windows[item]
            e, s = window.episode, window.start
            history_codes, future_codes = codes[e][s:s + k], codes[e][s + k:s + k + t]
            acts = action_tokens[e][s:s + spec.actions]
            given = acts[k:k + t] if isinstance(layout, MultiStepLayout) else None
            self._prompts.append(layout.prompt(history_codes, acts[:k]))
            self._targets.append(layout.response(future_codes, given))
            self._given.append(given)
            self._truth.append(window.future)
            self._transitions.append(Transition(
                uid=f"pusht/{names[e]}/{s}", state=window.history, action=window.actions, next_state=window.future,
                target=future_codes, split="test", changed=None,
                meta={"last_history_codes": history_codes[-1]}))
        self._ceiling: dict[int, float] = {}

    def _in_split(self, episode) -> bool:
        if self.config.split == "all":
            return True
        return (int(episode.index) % TEST_EVERY == 0) == (self.config.split == "test")

    # -- the Task protocol -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._transitions)

    def transition(self, index: int) -> Transition:
        return self._transitions[index]

    def prompt_ids(self, index: int) -> np.ndarray:
        return self._prompts[index]

    def target_ids(self, index: int) -> np.ndarray:
        return self._targets[index]

    def max_reward(self, index: int) -> float:
        return self._max

    def given_action_tokens(self, index: int) -> np.ndarray | None:
        """Multi-step: the action tokens [T, A] the env inserts after each generated frame."""
        return self._given[index]

    def forced_tokens(self, index: int, response_ids: Sequence[int]) -> Sequence[int]:
        return self.layout.forced_tokens(list(response_ids), self._given[index])

    def is_complete(self, index: int, response_ids: Sequence[int]) -> bool:
        return self.layout.is_complete(list(response_ids))

    def _codes(self, index: int, response_ids: Sequence[int]) -> tuple[np.ndarray | None, str | None]:
        response = np.asarray(response_ids, dtype=np.int64).reshape(-1)
        codes, error = self.layout.frames(response)
        if error is None and isinstance(self.layout, MultiStepLayout):
            written = response[~self.layout.loss_mask()]
            if not np.array_equal(written, np.asarray(self._given[index]).reshape(-1)):
                return None, "the response's action tokens are not the given actions"
        return codes, error

    def decode(self, index: int, response_ids: Sequence[int]) -> tuple[Any, str | None]:
        codes, error = self._codes(index, response_ids)
        if error is not None:
            return None, error
        return self.tokenizer.decode(codes), None

    def verify(self, indices: Sequence[int], responses: Sequence[Sequence[int]]) -> list[RewardResult]:
        if len(indices) != len(responses):
            raise ValueError(f"verify got {len(indices)} indices but {len(responses)} responses")
        parsed = [self._codes(int(i), r) for i, r in zip(indices, responses)]
        valid = [n for n, (codes, _) in enumerate(parsed) if codes is not None]
        scored = self._score([int(indices[n]) for n in valid], [parsed[n][0] for n in valid]) if valid else []
        results = [RewardResult.failure(self.min_reward, error or "", self._max) for _, error in parsed]
        for n, result in zip(valid, scored):
            results[n] = result
        for index, result in zip(indices, results):
            result.metrics["ceiling"] = self.ceiling(int(index))
        return results

    def ceiling(self, index: int) -> float:
        """The reward of the gold codes themselves (what a perfect world model earns here)."""
        if index not in self._ceiling:
            self._ceiling[index] = self._score([index], [self.transition(index).target], with_ceiling=False)[0].reward
        return self._ceiling[index]

    def _score(self, indices: list[int], codes: list[np.ndarray], with_ceiling: bool = True) -> list[RewardResult]:
        """One batched decode and one batched metric call for the whole batch."""
        from rlvr_envs.video import metrics
        from rlvr_envs.video.metrics.repetition import multi_step_repetition, single_step_repetition

        t = self.config.future_frames
        all_codes = np.stack(codes)  # [B, T, F]
        decoded = self.tokenizer.decode(all_codes.reshape(-1, all_codes.shape[-1]))
        pred = decoded.reshape(len(indices), t, *decoded.shape[1:])
        truth = torch.as_tensor(np.stack([self._truth[i] for i in indices])).float() / 255.0
        values = metrics.video_prediction_metrics(pred, truth, self.lpips).values
        if t == 1:
            last = np.stack([self.transition(i).meta["last_history_codes"] for i in indices])
            repeated = single_step_repetition(torch.as_tensor(all_codes[:, 0]), torch.as_tensor(last)).float()
        else:
            repeated = multi_step_repetition(torch.as_tensor(all_codes)).float().mean(dim=1)
        rewards = {"mae": -values["mae"], "mse": -values["mse"], "psnr": values["psnr"].clamp(0, 100),
                   "ssim": values["ssim"]}
        if self.lpips is not None:
            rewards["l1_lpips"] = (-(values["mae"] + values["lpips"])).clamp(min=-3.0)
        reward = rewards[self.reward_name] - self.config.repetition_penalty * repeated * t
        reward = reward.clamp(self.min_reward, self._max)
        out = []
        for row, index in enumerate(indices):
            metrics_row = {name: float(value[row]) for name, value in values.items()}
            metrics_row["repetition"] = float(repeated[row])
            out.append(RewardResult(reward=float(reward[row]), max_reward=self._max, metrics=metrics_row,
                                    prediction=all_codes[row]))
        return out

    def render_text(self, index: int, response_ids: Sequence[int] | None = None) -> str:
        n = 0 if response_ids is None else len(response_ids)
        return (f"{self.transition(index).uid}: {self.config.layout}-step PushT, {self.layout.prompt_len} prompt tokens, "
                f"{n}/{self.layout.response_len} response tokens written")

    def render_frames(self, index: int, response_ids: Sequence[int]) -> np.ndarray:
        """uint8 [2H, T*W, 3]: the predicted frames (top row) above the real ones (bottom row)."""
        truth = self._truth[index]
        decoded, error = self.decode(index, response_ids)
        if error is not None:
            pred = np.zeros_like(truth)
        else:
            pred = (decoded.numpy() * 255).round().astype(np.uint8)
        rows = [np.concatenate(list(frames), axis=1) for frames in (pred, truth)]
        return np.concatenate(rows, axis=0)

    @staticmethod
    def availability(data_dir: str | None = None) -> tuple[bool, str]:
        if not (default_tokenizer_dir() / "config.json").exists():
            return False, "the shipped PushT frame tokenizer is missing; pass tokenizer= a trained checkpoint"
        return True, "embedded"


def shipped_world_model_dir(layout: str) -> Path:
    return EMBEDDED_DIR / f"pusht_{layout}_step_model"


def shipped_world_model(task: "VideoPredictionTask", directory: str | None = None):
    """The shipped MLE world model for `task`'s layout (or the one at `directory`), checked
    against the task's vocabulary; its model card is `model.card`."""
    import json

    from rlvr_envs.video.world_model import load_world_model

    directory = Path(directory or shipped_world_model_dir(task.config.layout))
    model = load_world_model(str(directory), task.vocab)
    card = directory / "card.json"
    model.card = json.loads(card.read_text(encoding="utf-8")) if card.is_file() else {}
    return model


def embedded_heldout_dir(episodes: int, resolution: int, seed: int = 10_000) -> str:
    """The deterministic held-out PushT set: `episodes` episodes recorded from the real
    simulator with a seed no training set uses, generated on first use and cached under
    the data root (`$RLVR_WORLD_DATA`, default ~/.cache/rlvr_world)."""
    from rlvr_envs.core.paths import data_root
    from rlvr_envs.video import pusht

    folder = data_root() / f"pusht-heldout-r{resolution}-s{seed}-n{episodes}"
    if not (folder / "summary.json").is_file():  # generated once; resumable if interrupted
        config = pusht.PushTGenerationConfig(episodes=episodes, resolution=resolution, seed=seed)
        pusht.generate_dataset(config, folder, workers=1, progress=False)
    return str(folder)
