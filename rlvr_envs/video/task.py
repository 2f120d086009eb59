"""Video next-frame prediction tasks: PushT, RT-1, and DINO-WM's Rope and Granular.

A transition is a window of an episode: k history frames with their actions (the prompt,
in the frame tokenizer's codes and the action bins' tokens) and the future frame(s) to
predict. The agent writes frame codes; in the multi-step layout the env inserts each
step's given action tokens after every generated frame. The reward is computed on the
*decoded* frames against the real ones, RLVR-World's -(L1 + LPIPS) by default.

One task class serves every dataset (`VideoTaskConfig.dataset`); per dataset it differs
only in where episodes come from, how actions are binned and its defaults (`DATASETS`):

* ``pusht``: PushT episodes from the simulator (`rlvr-world data pusht`, or the embedded
  held-out set); 256 bins over the 512-pixel arena; frame_skip 5.
* ``rt1``: converted RT-1 episodes (`data_dir/{train,test}/episode_*.npz`, written by
  `rlvr-world data rt1`; every 100th episode is test, see `rlvr_envs.video.rt1`); 256
  uniform bins per action dim from a ranges JSON (`action_ranges=`, the format of
  RLVR-World's `frac_action_ranges.json`), else from the min/max of the train split's
  actions; frame_skip 1 (the data is already 3 Hz); single-step history 4 as in the paper,
  multi-step 1 context frame + 7 future frames.
* ``rope`` / ``granular``: DINO-WM's deformable folders (`states.pth`, `actions.pth`,
  `{i:06d}/obses.pth`); bins from the min/max of the train episodes' actions (episode
  index % 10 != 0); frame_skip 1.

Frames are taken every `frame_skip` simulator steps and the skipped steps' actions are
concatenated into one action chunk (DINO-WM predicts PushT 5 steps ahead the same way):
at 10 fps consecutive frames barely differ, and copying the last frame would beat any
model in pixels.

Resolution: frames whose size differs from the tokenizer's `resolution` are resized to it
once, when the task is built (antialiased bilinear, `resize_frames`); history, truth and
every metric (MAE, MSE, PSNR, SSIM, LPIPS) are then at the tokenizer's resolution, not the
dataset's native one (RT-1 is 256x320). `describe()` says what was done.

The video invariant (a tokenizer cannot reconstruct frames exactly): the gold codes do not
reach `max_reward`; they score at least as well as perturbed or random responses, and
`info["metrics"]["ceiling"]` reports what they score. Prompts, gold responses and truth
frames are encoded once when the task is built, never per reset.

Compressed tokenizer (multi-step only, RLVR-World's multi-step setting): when `tokenizer=`
is a `CompressedTokenizer` checkpoint (its config.json says so), every window's first
history frame is its context frame. The prompt starts with that frame's context codes
(`MultiStepLayout(context_len=...)`), and the history and future frames are coded against
it with few codes each, so a window's codes depend on its context frame: they are encoded
per window (batched, at build time). Verification decodes the predicted codes with the
window's context codes in one batched call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr_envs.core.paths import ASSETS
from rlvr_envs.core.task import Task
from rlvr_envs.core.types import RewardResult, Transition
from rlvr_envs.core.util import as_tuple
from rlvr_envs.video.action_bins import ActionBins
from rlvr_envs.video.compressed_tokenizer import CompressedTokenizer, check_tokenizer_layout, load_video_tokenizer
from rlvr_envs.video.frame_tokenizer import FrameTokenizer
from rlvr_envs.video.frames import FrameWindowDataset, WindowSpec, frames_and_actions
from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary
from rlvr_envs.video.sources import (DATASETS, PUSHT_ACTION_RANGE, TEST_EVERY, TOKENIZER_HINT, DatasetSpec,
                                     deformable_train_action_bins, episode_source, missing_arguments,
                                     pusht_action_bins, ranges_file_action_bins, resize_frames,
                                     rt1_train_action_bins, tile_action_bins)

#: reward name -> (what it is, minimum, maximum); every one is computed on decoded frames
REWARDS: dict[str, tuple[str, float, float]] = {
    "l1_lpips": ("-(L1 + LPIPS) of decoded frames, clipped at -3", -3.0, 0.0),
    "mae": ("-MAE of decoded frames (pixels in [0, 1])", -1.0, 0.0),
    "mse": ("-MSE of decoded frames (pixels in [0, 1])", -1.0, 0.0),
    "psnr": ("PSNR of decoded frames in dB, clipped to [0, 100]", 0.0, 100.0),
    "ssim": ("SSIM of decoded frames", -1.0, 1.0),
    "pose": ("PushT: -(agent and block position errors / arena diagonal + block angle error / pi, weighted by "
             "pose_weights) read from decoded and real frames by the frame judge, minus MAE; an object left out "
             "costs the most", -4.0, 0.0),
}
LAYOUTS = ("single", "multi")
SPLITS = ("all", "train", "test")
EMBEDDED_DIR = ASSETS / "video"
MODEL_HINT = ("a world model directory (`save_pretrained` LLaMA over this tokenizer's codes + 256 action bins), "
              "e.g. from `python -m trainers.train_video_world_model`")


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


def _numbers(value: Any) -> Any:
    """A command line's comma-separated numbers ("0.03,0.03,0.03") as floats; anything else as given
    (validate() says what is wrong with it)."""
    if isinstance(value, str):
        try:
            return [float(part) for part in value.split(",")]
        except ValueError:
            return value
    return value


@dataclass(frozen=True)
class VideoTaskConfig:
    """Arguments of the video ids (pass them to `gym.make`).

    `frame_skip` and `future` default per dataset (`DATASETS`); after construction they
    hold the resolved values.
    """

    layout: str = "single"  #: "single" (k history frames -> 1 frame) or "multi" (-> `future` frames)
    dataset: str = "pusht"  #: "pusht", "rt1", "rope" or "granular" (see `DATASETS`)
    data_dir: str | None = None  #: episodes folder (PushT: `rlvr-world data pusht`, default the embedded held-out set; RT-1: `rlvr-world data rt1` output; Rope/Granular: DINO-WM's folder); required except for PushT
    split: str = "all"  #: episodes to use: "all", "train" or "test" (index % 10 == 0 is test; RT-1: its test folder, every 100th episode)
    episodes: int = 12  #: PushT only: size of the embedded held-out set (generated once with the real simulator, then cached)
    tokenizer: str | None = None  #: frame tokenizer checkpoint dir (or a CompressedTokenizer's, layout="multi" only); default (PushT only): the shipped PushT tokenizer
    model: str | None = None  #: world model dir for `shipped_world_model(task)`, its vocabulary checked at build; default (PushT only): the shipped model
    action_ranges: str | None = None  #: JSON of per-dim [min, max] rows (format of RLVR-World's frac_action_ranges.json); default: PushT the arena, others the train split's min/max (RT-1: reads every train episode's actions, slow on the full set)
    reward: str = "l1_lpips"  #: one of REWARDS
    lpips_net: str = "vgg"  #: LPIPS trunk for reward="l1_lpips" ("vgg" as in the reference code, or "alex")
    lpips_random_backbone_seed: int | None = None  #: explicit opt-in to a random LPIPS trunk (tests, offline)
    repetition_penalty: float = 0.0  #: subtracted per repeated frame (a copy of the previous frame's codes)
    #: reward="pose": weights of the agent position, block position and block angle errors
    #: (raise the agent's to pay more for following the actions)
    pose_weights: tuple[float, ...] = (1.0, 1.0, 1.0)
    frame_skip: int | None = None  #: simulator steps between frames (actions chunked); default PushT 5, others 1
    frame_offsets: tuple[int, ...] = (0,)  #: phases of the frame skip to take windows from (training: all)
    history: int | None = None  #: history frames (default single-step: PushT 3, RT-1 4, Rope/Granular 1; multi-step 1)
    future: int | None = None  #: predicted frames of the multi-step layout (default PushT 4, RT-1 7, Rope/Granular 4)
    window_stride: int = 2  #: distance between window starts (in kept frames)
    size: int | None = None  #: keep the first N windows
    #: where the tokenizer, decoding and the reward's networks (LPIPS) run: "cpu", "cuda", "cuda:N" or "auto"
    #: (CUDA when present); the default stays "cpu" so vector-env workers never touch a GPU unasked
    device: str = "cpu"

    def __post_init__(self):
        object.__setattr__(self, "frame_offsets", as_tuple(self.frame_offsets))
        object.__setattr__(self, "pose_weights", as_tuple(_numbers(self.pose_weights)))
        spec = DATASETS.get(self.dataset)
        if spec is not None:  # an unknown dataset is reported by validate()
            if self.frame_skip is None:
                object.__setattr__(self, "frame_skip", spec.frame_skip)
            if self.future is None:
                object.__setattr__(self, "future", spec.future)

    @property
    def spec(self) -> DatasetSpec:
        return DATASETS[self.dataset]

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {self.dataset!r}")
        problem = missing_arguments(self.dataset, self.data_dir, self.tokenizer)
        if problem:
            raise ValueError(problem)
        if self.data_dir is not None and not Path(self.data_dir).expanduser().is_dir():  # before any optional part
            raise FileNotFoundError(f"data_dir={self.data_dir}: no such folder; it should be {self.spec.data_hint}")
        if not self.frame_offsets or any(not 0 <= o < self.frame_skip for o in self.frame_offsets):
            raise ValueError(f"frame_offsets must lie in [0, frame_skip={self.frame_skip}), got {self.frame_offsets}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        if self.reward == "pose" and self.dataset != "pusht":
            raise ValueError(f"reward='pose' reads PushT's agent and block from frames; dataset {self.dataset!r} "
                             "has no reader, use another reward")
        for name in ("episodes", "frame_skip", "future", "window_stride"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.history is not None and self.history < 1:
            raise ValueError(f"history must be >= 1, got {self.history}")
        if self.size is not None and self.size < 1:
            raise ValueError(f"size must be positive, got {self.size}")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # a bad or absent device fails here, with what to pass
        if self.repetition_penalty < 0:
            raise ValueError("repetition_penalty must be >= 0")
        weights = self.pose_weights
        if (len(weights) != 3 or not all(isinstance(w, (int, float)) and math.isfinite(w) and w >= 0 for w in weights)
                or sum(weights) <= 0):
            raise ValueError("pose_weights must be 3 finite weights >= 0 (agent, block position, block angle), "
                             f"not all 0; got {weights!r}")

    @property
    def history_frames(self) -> int:
        return self.history or (self.spec.single_history if self.layout == "single" else self.spec.multi_history)

    @property
    def future_frames(self) -> int:
        return 1 if self.layout == "single" else self.future


def default_tokenizer_dir() -> Path:
    return EMBEDDED_DIR / "pusht_frame_tokenizer"


def compressed_tokenizer_dir() -> Path:
    """The shipped PushT compressed tokenizer (64 context codes, 16 codes per later frame)."""
    return EMBEDDED_DIR / "pusht_compressed_tokenizer"


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str, device: str = "cpu") -> FrameTokenizer | CompressedTokenizer:
    return load_video_tokenizer(path, device=device)


def _lpips_or_explain(config: VideoTaskConfig):
    from rlvr_envs.core.device import resolve_device
    from rlvr_envs.video import metrics

    try:
        # torchvision fetches the trunk into its own cache where the network allows (once per machine)
        return metrics.load_lpips(config.lpips_net, device=resolve_device(config.device),
                                  random_backbone_seed=config.lpips_random_backbone_seed)
    except metrics.LPIPSWeightsUnavailable as exc:
        raise metrics.LPIPSWeightsUnavailable(
            f"reward='l1_lpips' needs the real LPIPS trunk: {str(exc).rstrip('.')}; or use reward='mae' (the "
            f"paper's MAE-only setting)") from None


class VideoPredictionTask(Task):
    """
    ## Description
    Next-frame prediction, RLVR-World's video domain: from k history frames and actions
    (frame tokenizer codes + action-bin tokens), predict the next frame (single-step) or the
    next T frames with the given actions (multi-step). `dataset` picks PushT (embedded
    default, CPU scale), RT-1 or DINO-WM's Rope/Granular (these need `data_dir=` and
    `tokenizer=`). Frames are resized to the tokenizer's resolution at build time and every
    metric is computed at that resolution.

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
    env = gym.make("RLVRWorld/RT1-SingleStep-v0", data_dir="data/rt1", tokenizer="runs/rt1_tokenizer",
                   action_ranges="frac_action_ranges.json", reward="mae")
    ```
    See `VideoTaskConfig`; `describe()` says where the frames, action ranges and tokenizer came from.
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
        if config.reward == "pose":  # every error term is at most 1, MAE too
            self.min_reward = -(sum(config.pose_weights) + 1.0)
        from rlvr_envs.core.device import resolve_device

        #: where the tokenizer, decoding and LPIPS run (`shipped_world_model` puts the model here too)
        self.device = resolve_device(config.device)
        self.lpips = _lpips_or_explain(config) if config.reward == "l1_lpips" else None
        self.tokenizer_dir = str(config.tokenizer or default_tokenizer_dir())
        check_tokenizer_layout(self.tokenizer_dir, config.layout)  # single-step over a compressed one fails here
        self.tokenizer = _load_tokenizer(self.tokenizer_dir, str(self.device))
        #: a CompressedTokenizer: context codes in the prompt, later frames coded against them
        self.compressed = isinstance(self.tokenizer, CompressedTokenizer)
        self.resolution = tuple(self.tokenizer.config.resolution)
        source = self._episode_source()
        self.bins = self._action_bins(source)
        if self.compressed:
            tok = self.tokenizer
            self.vocab = VideoVocabulary(tok.future_codebook_size, self.bins.num_bins,
                                         context_codes=tok.context_codebook_size)
            self.layout = MultiStepLayout(self.vocab, tok.tokens_per_future, self.bins.dim, config.history_frames,
                                          config.future_frames, context_len=tok.tokens_per_context)
        else:
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
        if config.model is not None:  # a checkpoint for another vocabulary fails now, naming both
            check_world_model_dir(config.model, self)
        self.native_resolution: tuple[int, int] | None = None
        self._build(source)

    # -- data ----------------------------------------------------------------------------
    def _episode_source(self):
        config = self.config
        folder = config.data_dir
        if config.dataset == "pusht" and folder is None:
            folder = embedded_heldout_dir(config.episodes, self.tokenizer.config.resolution[0])
        return episode_source(config.dataset, folder, config.split)

    def _action_bins(self, source) -> ActionBins:
        """Per-frame bins (from `action_ranges=`, else the dataset's default), tiled over a
        frame-skip chunk; `self.action_ranges_source` says where the ranges came from."""
        config = self.config
        dims = {"pusht": 2, "rt1": 13}.get(config.dataset, 4)
        if config.action_ranges is not None:
            bins, self.action_ranges_source = ranges_file_action_bins(config.action_ranges, dims, config.spec.label)
        elif config.dataset == "pusht":
            self.action_ranges_source = f"the PushT arena: [{PUSHT_ACTION_RANGE[0]:g}, {PUSHT_ACTION_RANGE[1]:g}] pixels"
            return pusht_action_bins(config.frame_skip)
        elif config.dataset == "rt1":
            bins, self.action_ranges_source = rt1_train_action_bins(config.data_dir)
        else:
            bins, self.action_ranges_source = deformable_train_action_bins(source)
        return tile_action_bins(bins, config.frame_skip)

    def _build(self, source) -> None:
        """Encode every kept frame once; windows then index into the per-episode codes."""
        config, layout = self.config, self.layout
        spec = WindowSpec(history=config.history_frames, future=config.future_frames, stride=config.window_stride,
                          action_after_last_frame=isinstance(layout, MultiStepLayout))
        episodes, names, codes = [], [], []
        windows_seen = 0
        for position in range(len(source)):
            if config.size is not None and windows_seen >= config.size:
                break  # windows go in episode order: the first `size` need no later episode
            episode = source[position]
            if not self._in_split(episode):
                continue
            frames, actions = frames_and_actions(episode)
            if tuple(frames.shape[1:3]) != self.resolution:
                self.native_resolution = tuple(int(v) for v in frames.shape[1:3])
                frames = resize_frames(frames, self.resolution)  # once, here: truth and metrics at this size
            # once per episode, shared by every offset (compressed: per window, below)
            all_codes = None if self.compressed else self.tokenizer.encode(frames)
            for offset in config.frame_offsets:
                kept = skip_frames(frames, actions, config.frame_skip, offset)
                episodes.append(kept)
                codes.append(None if all_codes is None else all_codes[offset::config.frame_skip][: len(kept[0])])
                names.append(f"{getattr(episode, 'index', position)}" + (f"+{offset}" if offset else ""))
                windows_seen += len(spec.starts(len(kept[0]), len(kept[1])))
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
        #: per transition, the context codes its frames are decoded with (compressed tokenizer only)
        self._context: list[np.ndarray | None] = []
        if self.compressed:
            context_codes, window_codes = self._encode_windows(windows, limit)
        for item in range(limit):
            window = windows[item]
            e, s = window.episode, window.start
            if self.compressed:
                history_codes, future_codes = window_codes[item, :k], window_codes[item, k:]
                context = context_codes[item]
            else:
                history_codes, future_codes = codes[e][s:s + k], codes[e][s + k:s + k + t]
                context = None
            acts = action_tokens[e][s:s + spec.actions]
            given = acts[k:k + t] if isinstance(layout, MultiStepLayout) else None
            if context is None:
                self._prompts.append(layout.prompt(history_codes, acts[:k]))
            else:
                self._prompts.append(layout.prompt(history_codes, acts[:k], context_codes=context))
            self._targets.append(layout.response(future_codes, given))
            self._given.append(given)
            self._truth.append(window.future)
            self._context.append(context)
            meta = {"last_history_codes": history_codes[-1]}
            if context is not None:
                meta["context_codes"] = context
            self._transitions.append(Transition(
                uid=f"{config.dataset}/{names[e]}/{s}", state=window.history, action=window.actions, next_state=window.future,
                target=future_codes, split="test", changed=None, meta=meta))
        self._ceiling: dict[int, float] = {}
        self._truth_objects: dict[int, list] = {}  #: reward='pose': the judge's readings of the real frames

    def with_windows(self, prompts: np.ndarray, truth: np.ndarray, uids: Sequence[str]) -> "VideoPredictionTask":
        """A copy of this (single-step) task whose transitions are the given windows, scored by
        the same tokenizer, layout and reward: `prompts` int [N, prompt_len] in this layout,
        `truth` uint8 [N, H, W, 3] the real next frames at this task's resolution. Used for
        prompts the data cannot hold, e.g. histories of a world model's own predictions with
        actions no recorded episode took (`trainers.rollout_prompts`)."""
        import copy

        if self.config.layout != "single" or self.compressed:
            raise ValueError("with_windows takes single-step windows over a frame tokenizer")
        prompts, truth = np.asarray(prompts, dtype=np.int64), np.asarray(truth)
        if prompts.ndim != 2 or prompts.shape[1] != self.layout.prompt_len:
            raise ValueError(f"prompts must be [N, {self.layout.prompt_len}] for this layout; got {prompts.shape}")
        if truth.dtype != np.uint8 or truth.shape != (len(prompts), *self.resolution, 3):
            raise ValueError(f"truth must be uint8 [{len(prompts)}, {self.resolution[0]}, {self.resolution[1]}, 3]; "
                             f"got {truth.dtype} {truth.shape}")
        if len(uids) != len(prompts):
            raise ValueError(f"{len(uids)} uids for {len(prompts)} prompts")
        frame_len, action_dims = self.layout.tokens_per_frame, self.bins.dim
        begin = (self.config.history_frames - 1) * (frame_len + action_dims)
        last_frame = slice(begin, begin + frame_len)
        if len(prompts) and ((prompts[:, -1] != self.vocab.bos).any() or
                             (prompts[:, last_frame] >= self.vocab.frame_codes).any() or prompts.min() < 0):
            raise ValueError("prompts are not in this task's single-step layout (frames, actions, then bos)")
        codes = self.tokenizer.encode(truth)  # the gold the ceiling is scored with
        task = copy.copy(self)
        task._prompts = list(prompts)
        task._targets = [task.layout.response(c[None], None) for c in codes]
        task._given = [None] * len(prompts)
        task._truth = list(truth[:, None])
        task._context = [None] * len(prompts)
        task._transitions = [Transition(uid=str(uid), state=None, action=None, next_state=frame[None], target=c[None],
                                        split="train", changed=None,
                                        meta={"last_history_codes": prompt[last_frame]})
                             for uid, frame, c, prompt in zip(uids, truth, codes, prompts)]
        task._ceiling, task._truth_objects = {}, {}
        return task

    def _encode_windows(self, windows: FrameWindowDataset, limit: int,
                        chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """Compressed tokenizer: (context codes [N, C], codes of the history + future frames
        [N, k+T, F]) of the first `limit` windows, each coded against its first history frame;
        batched, `chunk` windows at a time."""
        contexts, clips = [], []
        for start in range(0, limit, chunk):
            items = [windows[i] for i in range(start, min(start + chunk, limit))]
            frames = np.stack([np.concatenate([w.history, w.future]) for w in items])
            context_frames = frames[:, 0]
            contexts.append(self.tokenizer.encode_context(context_frames))
            clips.append(self.tokenizer.encode_future(frames, context_frames))
        return np.concatenate(contexts), np.concatenate(clips)

    def _in_split(self, episode) -> bool:
        if self.config.split == "all" or self.config.dataset == "rt1":  # RT-1: the split is the folder read
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
        if self.compressed:
            return self.tokenizer.decode(self._context[index][None], codes[None])[0], None
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

    def empty_prediction(self, index: int) -> np.ndarray:
        """Codes of -1 (no code) in the shape of a parsed prediction, [future frames, codes per frame]."""
        return np.full((self.layout.future, self.layout.tokens_per_frame), -1, dtype=np.int64)

    def ceiling(self, index: int) -> float:
        """The reward of the gold codes themselves (what a perfect world model earns here)."""
        if index not in self._ceiling:
            self._ceiling[index] = self._score([index], [self.transition(index).target], with_ceiling=False)[0].reward
        return self._ceiling[index]

    def _score(self, indices: list[int], codes: list[np.ndarray], with_ceiling: bool = True) -> list[RewardResult]:
        """One batched decode and one batched metric call for the whole batch, on the task's device;
        only the per-row numbers come back to the host."""
        from rlvr_envs.video import metrics
        from rlvr_envs.video.metrics.repetition import multi_step_repetition, single_step_repetition

        t = self.config.future_frames
        all_codes = np.stack(codes)  # [B, T, F]
        if self.compressed:  # [B, T, H, W, 3], each row decoded with its window's context codes
            pred = self.tokenizer.decode(np.stack([self._context[i] for i in indices]), all_codes, keep_device=True)
        else:
            decoded = self.tokenizer.decode(all_codes.reshape(-1, all_codes.shape[-1]), keep_device=True)
            pred = decoded.reshape(len(indices), t, *decoded.shape[1:])
        truth = torch.as_tensor(np.stack([self._truth[i] for i in indices])).to(pred.device).float() / 255.0
        values = {name: value.float().cpu() for name, value in
                  metrics.video_prediction_metrics(pred, truth, self.lpips).values.items()}
        if t == 1:
            last = np.stack([self.transition(i).meta["last_history_codes"] for i in indices])
            repeated = single_step_repetition(torch.as_tensor(all_codes[:, 0]), torch.as_tensor(last)).float()
        else:
            repeated = multi_step_repetition(torch.as_tensor(all_codes)).float().mean(dim=1)
        rewards = {"mae": -values["mae"], "mse": -values["mse"], "psnr": values["psnr"].clamp(0, 100),
                   "ssim": values["ssim"]}
        if self.lpips is not None:
            rewards["l1_lpips"] = (-(values["mae"] + values["lpips"])).clamp(min=-3.0)
        if self.reward_name == "pose":
            errors = self._object_errors(indices, pred)  # [B, 3], each column in [0, 1]
            for column, name in enumerate(("agent_error", "block_error", "angle_error")):
                values[name] = errors[:, column]
            weights = torch.tensor(self.config.pose_weights, dtype=errors.dtype)
            rewards["pose"] = -(errors @ weights + values["mae"])
        reward = rewards[self.reward_name] - self.config.repetition_penalty * repeated * t
        reward = reward.clamp(self.min_reward, self._max)
        out = []
        for row, index in enumerate(indices):
            metrics_row = {name: float(value[row]) for name, value in values.items()}
            metrics_row["repetition"] = float(repeated[row])
            out.append(RewardResult(reward=float(reward[row]), max_reward=self._max, metrics=metrics_row,
                                    prediction=all_codes[row]))
        return out

    def _object_errors(self, indices: list[int], pred: torch.Tensor) -> torch.Tensor:
        """reward='pose': per row, the (agent, block position, block angle) errors of the judge's
        readings of the predicted frames against its readings of the real ones (cached),
        averaged over the predicted frames."""
        from rlvr_envs.video.pusht.judge import object_errors, read_objects

        frames = (pred.clamp(0, 1) * 255.0).round().to(torch.uint8).cpu().numpy()  # [B, T, H, W, 3]
        rows = []
        for index, predicted in zip(indices, frames):
            if index not in self._truth_objects:
                self._truth_objects[index] = [read_objects(frame) for frame in self._truth[index]]
            rows.append(np.mean([object_errors(read_objects(frame), truth)
                                 for frame, truth in zip(predicted, self._truth_objects[index])], axis=0))
        return torch.as_tensor(np.asarray(rows), dtype=torch.float32)

    def render_text(self, index: int, response_ids: Sequence[int] | None = None) -> str:
        n = 0 if response_ids is None else len(response_ids)
        return (f"{self.transition(index).uid}: {self.config.layout}-step {self.config.spec.label}, "
                f"{self.layout.prompt_len} prompt tokens, {n}/{self.layout.response_len} response tokens written; "
                f"action ranges from {self.action_ranges_source}")

    def describe(self) -> dict[str, Any]:
        """Where this task's pieces came from: dataset, frames (native size and the size they
        were resized to), action ranges (a file or the data), tokenizer, layout."""
        config = self.config
        native = self.native_resolution or self.resolution
        out = {
            "dataset": config.dataset, "data_dir": config.data_dir, "split": config.split,
            "transitions": len(self), "layout": config.layout, "history": config.history_frames,
            "future": config.future_frames, "frame_skip": config.frame_skip,
            "frames": (f"{native[0]}x{native[1]} resized to {self.resolution[0]}x{self.resolution[1]} (the "
                       "tokenizer's resolution; metrics are computed at it)" if self.native_resolution else
                       f"{native[0]}x{native[1]} (the tokenizer's resolution)"),
            "action_ranges": self.action_ranges_source, "action_bins": self.bins.num_bins,
            "action_dims": self.bins.dim, "tokenizer": self.tokenizer_dir, "vocab_size": self.vocab.size,
            "model": config.model,
        }
        if self.compressed:
            out["tokenizer_kind"] = (f"compressed: {self.tokenizer.tokens_per_context} context codes of the first history "
                                     f"frame in the prompt, {self.tokenizer.tokens_per_future} codes per later frame")
        return out

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
    def availability(data_dir: str | None = None, dataset: str = "pusht", tokenizer: str | None = None,
                     reward: str = "l1_lpips", lpips_net: str = "vgg", lpips_random_backbone_seed: int | None = None,
                     **_: Any) -> tuple[bool, str]:
        """(buildable with these arguments?, what is missing), without building anything: the
        data and tokenizer first, then the LPIPS trunk weights the default reward downloads."""
        ok, where = VideoPredictionTask._data_availability(data_dir, dataset, tokenizer)
        if ok and reward == "l1_lpips" and lpips_random_backbone_seed is None:
            from rlvr_envs.video.metrics.perceptual import trunk_checkpoint_path, trunk_url

            if not trunk_checkpoint_path(lpips_net).is_file():
                return False, (f"reward l1_lpips needs the LPIPS {lpips_net} trunk at {trunk_checkpoint_path(lpips_net)}"
                               f" (download {trunk_url(lpips_net)} there), or pass reward='mae'")
        return ok, where

    @staticmethod
    def _data_availability(data_dir: str | None, dataset: str, tokenizer: str | None) -> tuple[bool, str]:
        if dataset not in DATASETS:
            return False, f"unknown dataset {dataset!r}; one of {sorted(DATASETS)}"
        if dataset == "pusht":
            if tokenizer is None and not (default_tokenizer_dir() / "config.json").exists():
                return False, "the shipped PushT frame tokenizer is missing; pass tokenizer= a trained checkpoint"
            return True, "embedded" if data_dir is None else data_dir
        problem = missing_arguments(dataset, data_dir, tokenizer)
        if problem:
            return False, problem
        if dataset == "rt1":
            found = any(Path(data_dir, split).glob("episode_*.npz") for split in ("train", "test"))
        else:
            found = Path(data_dir, "states.pth").is_file()
        if not found:
            return False, f"nothing usable in {data_dir}: it should be {DATASETS[dataset].data_hint}"
        if not Path(tokenizer, "config.json").is_file():
            return False, f"no frame tokenizer at {tokenizer}: pass tokenizer= {TOKENIZER_HINT}"
        return True, data_dir


def shipped_world_model_dir(layout: str) -> Path:
    return EMBEDDED_DIR / f"pusht_{layout}_step_model"


def check_world_model_dir(directory: str | Path, task: "VideoPredictionTask") -> None:
    """Fail, naming the checkpoint and the tokenizer, when the world model at `directory`
    (its `config.json` and weights' headers; no weights are read) is damaged or out of bounds
    (`check_model_dir`) or cannot serve `task`: another vocabulary (size or bos/eos/pad ids)
    or too few positions for prompt + response."""
    from rlvr_envs.core.errors import DataError
    from rlvr_envs.core.files import check_model_dir, read_json
    from rlvr_envs.video.world_model import WORLD_MODEL_REMEDY

    path = Path(directory) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"no world model at {directory} (expected a save_pretrained directory with "
                                f"config.json): pass model= {MODEL_HINT}")
    check_model_dir(directory, "the world model", WORLD_MODEL_REMEDY)
    raw = read_json(path, "the world model's config", WORLD_MODEL_REMEDY)
    if not isinstance(raw, dict) or "vocab_size" not in raw:
        raise DataError(f"{path}: not a world model config (no vocab_size); {WORLD_MODEL_REMEDY}")
    from rlvr_envs.video.world_model import check_world_model_config

    check_world_model_config(raw, task.vocab, task.layout, f"the world model at {directory}",
                             str(task.tokenizer_dir))


def shipped_world_model(task: "VideoPredictionTask", directory: str | None = None):
    """The world model at `directory`, else the task's `model=`, else (PushT) the shipped MLE
    model for its layout, checked against the task's vocabulary; its model card is `model.card`."""
    from rlvr_envs.video.world_model import load_world_model

    directory = directory or task.config.model
    if directory is None:
        if task.config.dataset != "pusht":
            raise ValueError(f"no world model ships for {task.config.spec.label}: pass model= {MODEL_HINT}")
        if getattr(task, "compressed", False):
            raise ValueError(f"no world model ships for the compressed tokenizer at {task.tokenizer_dir} yet: pass "
                             f"model= a world model over its vocabulary ({task.vocab.size} tokens), "
                             "e.g. from `python -m trainers.train_video_world_model`")
        directory = shipped_world_model_dir(task.config.layout)
    directory = Path(directory)
    check_world_model_dir(directory, task)
    # its card is model.card
    return load_world_model(str(directory), task.vocab, device=str(getattr(task, "device", "cpu")))


#: the seed of the embedded held-out PushT set; no training set uses it
HELD_OUT_EPISODES_SEED = 10_000


def embedded_heldout_dir(episodes: int, resolution: int) -> str:
    """The deterministic held-out PushT set: `episodes` episodes recorded from the real
    simulator with a seed no training set uses (`pusht_episodes_dir`)."""
    return pusht_episodes_dir(episodes, resolution, HELD_OUT_EPISODES_SEED)


def pusht_episodes_dir(episodes: int, resolution: int, seed: int) -> str:
    """`episodes` PushT episodes recorded from the real simulator with `seed`, generated on
    first use and cached under the data root (`$RLVR_WORLD_DATA`, default ~/.cache/rlvr_world):
    the held-out set, or training episodes generated once (another seed)."""
    from rlvr_envs.core.errors import DataError
    from rlvr_envs.core.paths import data_root
    from rlvr_envs.video import pusht

    kind = "heldout" if seed == HELD_OUT_EPISODES_SEED else "train"
    folder = data_root() / f"pusht-{kind}-r{resolution}-s{seed}-n{episodes}"
    if not (folder / "summary.json").is_file():  # generated once; resumable if interrupted
        # the sets every committed figure measured: episodes run on after a block leaves the arena
        config = pusht.PushTGenerationConfig(episodes=episodes, resolution=resolution, seed=seed,
                                             end_when_block_leaves=False)
        try:
            pusht.generate_dataset(config, folder, workers=1, progress=False)
        except OSError as error:  # a read-only or missing data root: say which, and what to do
            raise DataError(f"cannot write the {kind} PushT episodes into {folder} "
                            f"({error.strerror or type(error).__name__}): set RLVR_WORLD_DATA to a folder you can "
                            f"write (the data root; now {data_root()})") from None
    return str(folder)
