"""PushT inside a video world model: `LearnedPushTSim`, a gymnasium env of the original task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr_envs.core.actions import real_array, reset_options
from rlvr_envs.core.episode import refuse_mode
from rlvr_envs.simulators.actions import ActionCounts, action_space, as_chunk_batch, sanitize_chunk
from rlvr_envs.video.pusht.physics import ARENA_SIZE, SUCCESS_COVERAGE, checked_physics

#: what `LearnedPushTSim.reset(options=...)` reads (the class docstring says how)
RESET_OPTIONS = ("physics", "frames", "actions", "agent_position", "episode", "start")

LEARNED_SIM_ID = "RLVRWorld/PushT-LearnedSim-v0"
REWARDS = ("judge", "none")


@dataclass
class SimContext:
    """What the world model conditions on: the last `history` frames' codes and the action
    chunks between them (the chunk after the last frame is the step's own action)."""

    codes: np.ndarray  #: int64 [history, tokens_per_frame], oldest first
    action_tokens: np.ndarray  #: int64 [history - 1, action_dims]
    last_target: np.ndarray  #: float64 [2], the last target sent (fills non-finite actions)

    def copy(self) -> "SimContext":
        return SimContext(self.codes.copy(), self.action_tokens.copy(), self.last_target.copy())


def check_world_model_layout(model_config: dict[str, Any], card: dict[str, Any], vocab, layout, model_name: str,
                             tokenizer_name: str) -> None:
    """Fail, naming the model and the tokenizer, when a world model cannot drive this simulator:
    another vocabulary (size, bos/eos/pad), too few positions for prompt + response, or a model
    card saying it was trained for another layout, history or frame skip."""
    from rlvr_envs.video.world_model import check_world_model_config

    check_world_model_config(model_config, vocab, layout, f"the world model {model_name}", tokenizer_name)
    args = card.get("args", {}) if isinstance(card, dict) else {}
    trained = {"layout": args.get("layout"), "frame_skip": args.get("frame_skip"), "history": args.get("history")}
    wanted = {"layout": "single", "frame_skip": layout.action_dims // 2, "history": layout.history}
    wrong = {k: v for k, v in trained.items() if v is not None and v != wanted[k]}
    if wrong:
        raise ValueError(f"the world model {model_name} was trained with {wrong} (its card.json), but this simulator "
                         f"runs the single-step layout over the tokenizer at {tokenizer_name} with {wanted}")


def slide_window(codes: np.ndarray, action_tokens: np.ndarray, new_codes: np.ndarray,
                 new_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The context window's one step, batched over leading axes: drop the oldest frame (and the
    action after it), append the new frame's codes and the action that led to it.
    codes [..., history, F], action_tokens [..., history - 1, A]; new_codes [..., F], new_tokens [..., A]."""
    codes = np.concatenate([codes[..., 1:, :], new_codes[..., None, :]], axis=-2)
    if action_tokens.shape[-2] > 0:  # history 1 carries no action between frames
        action_tokens = np.concatenate([action_tokens, new_tokens[..., None, :]], axis=-2)[..., 1:, :]
    return codes, action_tokens


class LearnedPushTSim(gym.Env):
    """
    ## Description
    PushT simulated by a single-step video world model (frame tokenizer + LLaMA over frame
    codes and action bins, RLVR-World's iVideoGPT-style layout `[f1 a1][f2 a2][f3 a3] bos ->
    f4`). The model was trained on frames 5 simulator steps apart, so **one env step is one
    chunk of 5 PushT actions** and advances the scene by 0.5 s. The context window slides:
    each predicted frame's codes join the history (the oldest drop out), so rollouts can be
    as long as `max_steps` chunks. Starts come from real frames.

    ## Observation Space
    The decoded predicted frame, `Box(0, 255, (H, W, 3), uint8)` at the tokenizer's
    resolution (64x64 for the shipped tokenizer). After `reset` it is the (real) start frame.

    ## Action Space
    `Box(0, 512, (5, 2), float32)`: five absolute agent targets (x, y) in arena pixels, one
    per PushT simulator step (PushT's own action space, `Box(0, 512, (2,))`, five times).
    A single (2,) target is accepted and held for the chunk. Bad actions: see
    `rlvr_envs.simulators.actions` (`invalid_actions="clip"` repairs and counts them,
    `"reject"` raises); the counts are in `info["actions"]`.

    ## Reward
    `reward="judge"` (default): PushT's own reward, clip(coverage / 0.95, 0, 1), with the
    coverage read from the predicted frame by the frame judge
    (`rlvr_envs.video.pusht.judge`); `reward="none"`: 0 (planners use `rollout`).

    ## Episode End
    Terminated when the judged coverage exceeds 0.95 (reward "judge"); truncated after
    `max_steps` chunks (default 60 = PushT's 300 simulator steps).

    ## Starting State
    `reset(options=...)`, one of:
    - `{"physics": [10 numbers]}` (`rlvr_envs.video.pusht.PHYSICS_FIELDS`): the real
      simulator renders that state;
    - `{"frames": uint8 [n, H, W, 3], "actions": [n-1, 5, 2]}`: a real history (n >= 1);
    - `{"episode": PushTEpisode, "start": t}`: frames t, t+5, ... of a recorded episode;
    - nothing: gym-pusht's own random start for `seed`.
    Other keys are refused, and so is a physics state that is not finite, puts the agent
    outside the arena or the block's centre outside the walls (`checked_physics`).
    A history shorter than `history` frames is padded with its first frame, the agent
    standing still (its target = its position: `options["agent_position"]`, the physics
    state, else read from the frame's blue pixels).

    ## Arguments
    ```python
    from rlvr_envs.simulators import LearnedPushTSim
    env = LearnedPushTSim()                                  # the shipped MLE model and tokenizer
    env = LearnedPushTSim(model="runs/grpo_pusht/final")     # an RLVR-trained model
    frames = env.rollout(np.full((8, 5, 5, 2), 256.0))       # 8 candidates x 5 chunks, batched
    ```
    `model`: a world model directory (default the shipped single-step PushT model) or a
    loaded `LlamaForCausalLM`; `tokenizer`: a FrameTokenizer directory (default the shipped
    one) or object; `history` 3, `frame_skip` 5 (must match the model);
    `temperature` (0 = greedy, the default: deterministic), `top_k`; `batch_size` for
    `rollout`; `max_steps`; `invalid_actions`; `reward`; `render_mode` "rgb_array".
    `mode=` is refused (ValueError): it belongs to the next-state prediction ids.
    A model whose vocabulary, positions or card do not match fails at construction naming
    both the model and the tokenizer.

    ## Version History
    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, model: Any = None, tokenizer: Any = None, *, history: int = 3, frame_skip: int = 5,
                 temperature: float = 0.0, top_k: int | None = None, batch_size: int = 64, max_steps: int = 60,
                 invalid_actions: str = "clip", reward: str = "judge", render_mode: str | None = None,
                 device: str = "cpu", mode: str | None = None):
        refuse_mode(mode, "a PushT learned simulator", "a chunk of agent target positions")
        from rlvr_envs.video.frame_tokenizer import FrameTokenizer
        from rlvr_envs.video.layout import SingleStepLayout, VideoVocabulary
        from rlvr_envs.video.sources import pusht_action_bins
        from rlvr_envs.video.task import default_tokenizer_dir, shipped_world_model_dir
        from rlvr_envs.core.files import check_model_dir, read_json
        from rlvr_envs.video.world_model import WORLD_MODEL_REMEDY, load_world_model

        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        if history < 1 or frame_skip < 1 or max_steps < 1 or batch_size < 1:
            raise ValueError("history, frame_skip, max_steps and batch_size must be >= 1")
        sanitize_chunk(np.zeros(2), frame_skip, np.zeros(2), invalid_actions)  # validates the mode
        self.frame_skip, self.history, self.max_steps = frame_skip, history, max_steps
        self.temperature, self.top_k, self.batch_size = float(temperature), top_k, batch_size
        self.invalid_actions, self.reward_name, self.render_mode = invalid_actions, reward, render_mode

        if tokenizer is None or isinstance(tokenizer, (str, Path)):
            self.tokenizer_name = str(tokenizer or default_tokenizer_dir())
            self.tokenizer = FrameTokenizer.load(self.tokenizer_name, device=device)
        else:
            self.tokenizer, self.tokenizer_name = tokenizer, f"<{type(tokenizer).__name__} object>"
        self.tokenizer.eval()
        config = self.tokenizer.config
        self.resolution = tuple(config.resolution)
        self.bins = pusht_action_bins(frame_skip)
        self.vocab = VideoVocabulary(config.codebook_size, self.bins.num_bins)
        self.layout = SingleStepLayout(self.vocab, config.tokens_per_frame, self.bins.dim, history)

        if model is None or isinstance(model, (str, Path)):
            directory = Path(model or shipped_world_model_dir("single"))
            self.model_name = str(directory)
            if not (directory / "config.json").is_file():
                raise FileNotFoundError(f"no world model at {directory} (expected a save_pretrained directory with "
                                        "config.json)")
            check_model_dir(directory, "the world model", WORLD_MODEL_REMEDY)  # files whole, sizes fit the weights
            card_path = directory / "card.json"
            card = read_json(card_path, "the world model's card") if card_path.is_file() else {}
            check_world_model_layout(read_json(directory / "config.json", "the world model's config"), card,
                                     self.vocab, self.layout, self.model_name, self.tokenizer_name)
            self.model = load_world_model(str(directory), device=device)
            self.card = self.model.card
        else:
            self.model, self.model_name, self.card = model, f"<{type(model).__name__} object>", {}
            check_world_model_layout(model.config.to_dict(), {}, self.vocab, self.layout, self.model_name,
                                     self.tokenizer_name)
        self.model.eval()

        self.action_space = action_space(frame_skip)
        self.observation_space = gym.spaces.Box(0, 255, shape=(*self.resolution, 3), dtype=np.uint8)
        self.context: SimContext | None = None
        self._frame: np.ndarray | None = None
        self._steps = 0
        self.counts = ActionCounts()
        self._reset_env = None

    # -- copies: the real PushT env (pymunk's C objects) is rebuilt on demand, never copied ----
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_reset_env"], state["_reset_done"] = None, False
        return state

    # -- starts ------------------------------------------------------------------------------
    def _real_env(self):
        if self._reset_env is None:
            from rlvr_envs.video.pusht import make_env

            self._reset_env = make_env(self.resolution[0], 300, render=True)
        return self._reset_env

    def render_physics(self, physics) -> np.ndarray:
        """The real simulator's frame of a physics state, at this simulator's resolution."""
        from rlvr_envs.video.pusht import render_frame, restore_physics_state

        env = self._real_env()
        if not getattr(self, "_reset_done", False):
            env.reset(seed=0)
            self._reset_done = True
        restore_physics_state(env, physics)
        return self._fit(render_frame(env)[None])[0]

    def _fit(self, frames: np.ndarray) -> np.ndarray:
        from rlvr_envs.video.sources import resize_frames

        frames = np.asarray(frames)
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
            raise ValueError(f"start frames must be uint8 [n, H, W, 3]; got {frames.dtype} {frames.shape}")
        return resize_frames(frames, self.resolution)

    def context_from(self, frames: np.ndarray, actions: np.ndarray | None = None,
                     agent_position: np.ndarray | None = None) -> SimContext:
        """The model's context for a real history: frames [n, H, W, 3] (n >= 1), the n-1 action
        chunks between them ([n-1, 5, 2]); padded to `history` frames as `reset` documents."""
        frames = self._fit(frames)
        n = len(frames)
        if n < 1:
            raise ValueError("a start needs at least one frame")
        chunks = np.zeros((0, self.frame_skip, 2)) if actions is None else real_array(actions, "start actions")
        chunks = chunks.reshape(-1, self.frame_skip, 2) if chunks.size else np.zeros((0, self.frame_skip, 2))
        if len(chunks) != n - 1:
            raise ValueError(f"{n} start frames need {n - 1} action chunks between them; got {len(chunks)}")
        frames, chunks = frames[-self.history:], chunks[max(0, len(chunks) - (self.history - 1)):]
        if len(frames) < self.history:
            if agent_position is None:
                from rlvr_envs.video.pusht.judge import agent_position as read_agent

                agent_position = read_agent(frames[0])
            stay = np.full(2, ARENA_SIZE / 2) if agent_position is None else np.asarray(agent_position, float)
            pad = self.history - len(frames)
            frames = np.concatenate([np.repeat(frames[:1], pad, axis=0), frames])
            chunks = np.concatenate([np.tile(stay, (pad, self.frame_skip, 1)), chunks])
        codes = self.tokenizer.encode(frames)
        tokens = self.vocab.action_tokens(self.bins.encode(chunks.reshape(len(chunks), -1)))
        last = chunks[-1, -1] if len(chunks) else np.full(2, ARENA_SIZE / 2)
        self._start_frame = frames[-1]
        return SimContext(codes.astype(np.int64), tokens.reshape(self.history - 1, self.bins.dim).astype(np.int64),
                          np.asarray(last, dtype=np.float64))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = reset_options(options, RESET_OPTIONS)
        if options.get("physics") is not None:  # checked even beside frames: a start's state is one input
            options["physics"] = checked_physics(options["physics"])
        agent = options.get("agent_position")
        if "frames" in options:
            context = self.context_from(options["frames"], options.get("actions"), agent)
        elif "episode" in options:
            from rlvr_envs.video.task import skip_frames

            episode, start = options["episode"], int(options.get("start", 0))
            frames, chunks = skip_frames(np.asarray(episode.frames), np.asarray(episode.actions), self.frame_skip)
            if not 0 <= start < len(frames):
                raise ValueError(f"start {start} outside the episode's {len(frames)} kept frames")
            first = max(0, start - self.history + 1)
            if agent is None and hasattr(episode, "physics"):
                agent = np.asarray(episode.physics)[first * self.frame_skip, 0:2]
            context = self.context_from(frames[first:start + 1], chunks[first:start], agent)
        else:
            physics = options.get("physics")
            if physics is None:
                env = self._real_env()
                env.reset(seed=int(self.np_random.integers(0, 2**31 - 1)))
                self._reset_done = True
                from rlvr_envs.video.pusht import physics_state

                physics = physics_state(env)
            physics = np.asarray(physics, dtype=np.float64)
            context = self.context_from(self.render_physics(physics)[None], None,
                                        physics[0:2] if agent is None else agent)
        self.context, self._frame, self._steps = context, self._start_frame, 0
        self.counts = ActionCounts()
        return self._frame.copy(), {"step": 0, "actions": self.counts.as_dict(), "model": self.model_name}

    # -- dynamics ----------------------------------------------------------------------------
    def _generate(self, contexts_codes: np.ndarray, contexts_tokens: np.ndarray, step_tokens: np.ndarray,
                  seed: int | None) -> np.ndarray:
        """Codes [N, F] of the next frame for N contexts (batched, in `batch_size` pieces)."""
        import torch

        from rlvr_envs.video.world_model import generate_responses

        out = []
        for start in range(0, len(contexts_codes), self.batch_size):
            end = start + self.batch_size
            tokens = np.concatenate([contexts_tokens[start:end], step_tokens[start:end, None]], axis=1)
            prompts = np.stack([self.layout.prompt(c, t) for c, t in zip(contexts_codes[start:end], tokens)])
            with torch.inference_mode():
                response = generate_responses(self.model, prompts, self.layout, temperature=self.temperature,
                                              top_k=self.top_k, seed=None if seed is None else seed + start)
            out.append(response[:, : self.layout.tokens_per_frame])
        return np.concatenate(out)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """uint8 frames [..., H, W, 3] of frame codes [..., F]."""
        codes = np.asarray(codes)
        flat = codes.reshape(-1, codes.shape[-1])
        frames = (self.tokenizer.decode(flat).numpy() * 255.0).round().astype(np.uint8)
        return frames.reshape(*codes.shape[:-1], *frames.shape[1:])

    def reconstruct(self, frame: np.ndarray) -> np.ndarray:
        """`frame` [H, W, 3] as this simulator would show it: through its tokenizer's encode and decode
        (what a judge of both simulators' frames reads from the real one, so blur counts in both)."""
        frame = self._fit(np.asarray(frame)[None])
        return self.decode(self.tokenizer.encode(frame))[0]

    def step(self, action):
        if self.context is None:
            raise RuntimeError("call reset() before step()")
        chunk = sanitize_chunk(action, self.frame_skip, self.context.last_target, self.invalid_actions, self.counts)
        tokens = self.vocab.action_tokens(self.bins.encode(chunk.reshape(-1)))
        seed = int(self.np_random.integers(0, 2**31 - 1)) if self.temperature > 0 else None
        codes = self._generate(self.context.codes[None], self.context.action_tokens[None], tokens[None], seed)[0]
        self.context = self._advance(self.context, codes, tokens, chunk[-1])
        self._frame = self.decode(codes)
        self._steps += 1
        reward, terminated, info = 0.0, False, {"step": self._steps, "actions": self.counts.as_dict()}
        if self.reward_name == "judge":
            from rlvr_envs.video.pusht.judge import judge_frame

            judged = judge_frame(self._frame)
            reward = float(np.clip(judged.coverage / SUCCESS_COVERAGE, 0.0, 1.0))
            terminated = bool(judged.success)
            info.update(coverage=judged.coverage, is_success=judged.success, block_pose=judged.pose)
        truncated = self._steps >= self.max_steps and not terminated
        return self._frame.copy(), reward, terminated, truncated, info

    def _advance(self, context: SimContext, codes: np.ndarray, tokens: np.ndarray, target: np.ndarray) -> SimContext:
        """The sliding window: drop the oldest frame, append the prediction and its action."""
        codes, action_tokens = slide_window(context.codes, context.action_tokens, codes, tokens)
        return SimContext(codes, action_tokens, np.asarray(target, float))

    def rollout(self, action_sequences, start: SimContext | None = None, seed: int | None = None,
                frames: str = "all", return_codes: bool = False):
        """Predicted frames of N candidate action sequences, all generated as one batch per step.

        `action_sequences`: [N, H, 5, 2] (or [N, H, 2], each target held for its chunk), clipped
        to the arena (non-finite values are rejected). `start`: a `SimContext` (default: the env's
        current one, untouched), or a list of N of them, one per sequence (many starts in one
        batch). `frames`: "all" -> uint8 [N, H, h, w, 3], "last" -> [N, h, w, 3] (decodes only
        the last frame: what a planner's objective needs). With `return_codes`, also the codes
        [N, H, F]. Deterministic for temperature 0, else seeded by `seed`.
        """
        start = start or self.context
        if start is None:
            raise RuntimeError("call reset() (or pass start=) before rollout()")
        if frames not in ("all", "last"):
            raise ValueError(f"frames must be 'all' or 'last', got {frames!r}")
        chunks = as_chunk_batch(action_sequences, self.frame_skip)
        n, horizon = chunks.shape[:2]
        tokens = self.vocab.action_tokens(self.bins.encode(chunks.reshape(n, horizon, -1)))  # [N, H, A]
        if isinstance(start, SimContext):
            codes = np.repeat(start.codes[None], n, axis=0)
            action_tokens = np.repeat(start.action_tokens[None], n, axis=0)
        else:
            if len(start) != n:
                raise ValueError(f"{len(start)} starts for {n} action sequences: pass one start, or one per sequence")
            codes = np.stack([s.codes for s in start])
            action_tokens = np.stack([s.action_tokens for s in start])
        predicted = []
        for t in range(horizon):
            step_seed = None if seed is None else seed + 100_003 * t
            new = self._generate(codes, action_tokens, tokens[:, t], step_seed)
            predicted.append(new)
            codes, action_tokens = slide_window(codes, action_tokens, new, tokens[:, t])
        all_codes = np.stack(predicted, axis=1)  # [N, H, F]
        out = self.decode(all_codes) if frames == "all" else self.decode(all_codes[:, -1])
        return (out, all_codes) if return_codes else out

    def planning_start(self, observation) -> SimContext:
        """The context a planner rolls out from: the real frames (and chunks) seen so far."""
        from rlvr_envs.video.pusht.judge import agent_position

        frames = np.asarray(observation.frames)
        agent = observation.agent_position
        if agent is None:
            agent = agent_position(self._fit(frames[:1])[0])
        return self.context_from(frames, observation.actions, agent)

    def render(self):
        if self.render_mode == "rgb_array" and self._frame is not None:
            return self._frame.copy()
        return None

    def close(self):
        if self._reset_env is not None:
            self._reset_env.close()
            self._reset_env = None
