"""PPO from stable-baselines3 on a token-mode env: the world model as an SB3 policy.

Token mode makes next-state prediction an ordinary episodic RL problem (one token per step,
verified reward at the end), so any SB3 algorithm runs on it unchanged. SB3's
`MultiInputPolicy` reads the integer observation dict as features; it is a baseline for
comparing RL algorithms on world-model training, not a language model.

What to expect: a token-level PPO agent trained from scratch has to discover the answer's
JSON syntax one token at a time before any reward appears, so on this budget its verified
reward stays near 0 (as does a random policy). It is the floor that language world models
(SFT, then GRPO) are compared against, and a check that SB3 runs on the envs unchanged.

    python -m trainers.sb3_ppo --env-id RLVRWorld/MiniTextWorld-v0 --total-timesteps 20000
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

import rlvr_envs  # noqa: F401  (registers the RLVRWorld ids)
from rlvr_envs.core.arguments import parse_env_kwargs
from trainers.common import parse_dataclass_args


@dataclass
class Args:
    env_id: str = "RLVRWorld/MiniTextWorld-v0"
    total_timesteps: int = 20_000
    max_seconds: float = 0.0  #: also stop learning after this much wall time (0 = no limit), for equal-time comparisons
    n_envs: int = 4
    n_steps: int = 256  # rollout length per env between updates
    batch_size: int = 256
    learning_rate: float = 3e-4
    ent_coef: float = 0.01
    seed: int = 0
    eval_episodes: int = 32
    out_dir: str = "runs/sb3_ppo"
    env_kwargs: tuple[str, ...] = ()

    def validate(self) -> None:
        from rlvr_envs.registration import prediction_entry

        prediction_entry(self.env_id)
        if self.total_timesteps < 1 or self.n_envs < 1 or self.n_steps < 1 or self.max_seconds < 0:
            raise ValueError("total_timesteps, n_envs and n_steps must be positive and max_seconds >= 0")
        if (self.n_steps * self.n_envs) % self.batch_size:
            raise ValueError("n_steps * n_envs must be a multiple of batch_size")
        parse_env_kwargs(self.env_kwargs)


EXPECTATION = ("a token-level PPO agent from scratch is a baseline: on this budget its verified reward is "
               "expected to stay near 0 (it must find the answer syntax token by token first)")


class ProgressBar:
    """SB3 callback showing timesteps done (SB3's own bar needs the optional `rich`); with
    `max_seconds` > 0 it also ends learning once that much wall time has passed."""

    def __new__(cls, total: int, max_seconds: float = 0.0):
        from stable_baselines3.common.callbacks import BaseCallback
        from tqdm.auto import tqdm

        class _Bar(BaseCallback):
            def _on_training_start(self) -> None:
                self.bar = tqdm(total=total, desc="PPO", unit="step")
                self.began = time.perf_counter()

            def _on_step(self) -> bool:
                self.bar.update(self.training_env.num_envs)
                return not (max_seconds and time.perf_counter() - self.began >= max_seconds)

            def _on_training_end(self) -> None:
                self.bar.close()

        return _Bar()


def evaluate(model, env_id: str, env_kwargs: dict, episodes: int, seed: int, desc: str = "eval") -> dict[str, float]:
    """Mean verified reward and parse rate of the deterministic policy on fixed transitions."""
    from tqdm.auto import tqdm

    env = gym.make(env_id, mode="token", **env_kwargs)
    n = len(env.unwrapped.task)
    rewards, parsed = [], []
    for episode in tqdm(range(episodes), desc=desc, unit="episode"):
        obs, _ = env.reset(seed=seed + episode, options={"index": episode % n})
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        rewards.append(reward)
        parsed.append(float(info["parsed"]))
    return {"mean_reward": float(np.mean(rewards)), "parse_rate": float(np.mean(parsed))}


def main(args: Args) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    args.validate()
    print(f"SB3 PPO on {args.env_id} (token mode), {args.total_timesteps} timesteps; {EXPECTATION}.", flush=True)
    # render_mode=None: SB3's make_vec_env would otherwise ask text envs for rgb_array frames
    env_kwargs = {"mode": "token", "render_mode": None, **parse_env_kwargs(args.env_kwargs)}
    vec_env = make_vec_env(args.env_id, n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
    model = PPO("MultiInputPolicy", vec_env, n_steps=args.n_steps, batch_size=args.batch_size,
                learning_rate=args.learning_rate, ent_coef=args.ent_coef, seed=args.seed, device="cpu", verbose=0)
    eval_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("mode", "render_mode")}
    before = evaluate(model, args.env_id, eval_kwargs, args.eval_episodes, args.seed, "eval before")
    start = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=ProgressBar(args.total_timesteps, args.max_seconds))
    seconds = time.perf_counter() - start
    after = evaluate(model, args.env_id, eval_kwargs, args.eval_episodes, args.seed, "eval after")

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    summary = {"args": dataclasses.asdict(args), "before": before, "after": after, "train_seconds": seconds,
               "timesteps": int(model.num_timesteps)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'':8}{'mean reward':>12}{'parse rate':>12}")
    for name, result in (("before", before), ("after", after)):
        print(f"{name:8}{result['mean_reward']:12.3f}{result['parse_rate']:12.3f}")
    print(f"{model.num_timesteps} timesteps in {seconds:.0f}s; saved {out / 'model.zip'}")
    print(f"mean reward = verified reward of the deterministic policy on {args.eval_episodes} fixed transitions "
          f"(max 1.0); parse rate = share of answers that parse. Note: {EXPECTATION}.")
    return summary


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
