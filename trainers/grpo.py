"""GRPO post-training of a world model on any env id (RLVR-World's recipe).

    python -m trainers.grpo --env-id RLVRWorld/PushT-SingleStep-v0 --out runs/grpo_pusht
    python -m trainers.grpo --env-id RLVRWorld/MiniTextWorld-v0 --model runs/sft_mtw --out runs/grpo_mtw

`--algorithm rloo` swaps in RLOO (TRL's `RLOOTrainer` for language; for video the same loop
with TRL's RLOO loss and leave-one-out advantages), so the two compare on one budget.

One argument dataclass for every modality (`trainers.grpo_config.GRPOConfig`). Video ids run our own readable GRPO loop
(`trainers.grpo_video`): the env's given action tokens are forced during generation and
carry no loss, which TRL's generation cannot do. Language ids run TRL's `GRPOTrainer`
(`trainers.grpo_language`) with the env's verifier as its reward function.
"""

from __future__ import annotations

from trainers.common import parse_dataclass_args, run_command
from trainers.grpo_config import GRPOConfig


def main(args: GRPOConfig) -> dict:
    from rlvr_envs.registration import entry

    args.validate()  # also the flags that belong to one modality only
    if entry(args.env_id).modality == "video":
        from trainers.grpo_video import train

        return train(args)
    from trainers.grpo_language import train

    return train(args)


def parse_args(argv: list[str] | None = None) -> GRPOConfig:
    return parse_dataclass_args(GRPOConfig, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    run_command(main, parse_args)
