"""Train the embedded MiniWeb tokenizer: a small byte-level BPE for the web-state envs.

The text-game tokenizer (`trainers.tokenizer`) never saw accessibility trees, so it spells
`heading`, `StaticText` or `hasPopup` letter by letter and MiniWeb prompts come out near
1,000 tokens. This one is trained the same way (`trainers.tokenizer.build_tokenizer`:
byte-level, so any text round-trips exactly; word runs merge into phrases) on MiniWeb
train-split prompts and gold answers, and ships as the default of `RLVRWorld/MiniWeb-v0`.
Every digit is its own token, so an id tokenizes one way wherever it appears (`[185]` is
`[`, `1`, `8`, `5`, `]` in the page, the action and the answer); with merged numbers a
small model had to learn `[185]` as `18`+`5` in one place and `185` in another:

    python -m trainers.miniweb_tokenizer            # writes rlvr_envs/assets/tokenizers/miniweb/
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

from rlvr_envs.core.tokenizers import EMBEDDED
from trainers.common import parse_dataclass_args


@dataclass
class Args:
    out_dir: str = str(EMBEDDED["miniweb"])
    vocab_size: int = 1024
    min_frequency: int = 2
    #: MiniWeb train-split transitions to train on (the test split is never used for training)
    rows: int = 3000
    #: test-split transitions, only to report lengths and check round trips
    report_rows: int = 256

    def validate(self) -> None:
        if self.vocab_size < 300:
            raise ValueError(f"vocab_size must leave room for the 256 bytes and merges, got {self.vocab_size}")
        if self.rows < 1 or self.report_rows < 1:
            raise ValueError("rows and report_rows must be positive")


def corpus(split: str, count: int) -> list[tuple[str, str]]:
    """(prompt, gold answer) of `count` MiniWeb transitions, exactly as the env shows them."""
    from rlvr_envs.web.task import MiniWebTaskConfig, miniweb_records, record_transition, web_prompt

    config = MiniWebTaskConfig(split=split, size=count)
    config.validate()
    transitions = [record_transition(record) for record in miniweb_records(config)]
    return [(web_prompt(t, config.prompt), t.target.text()) for t in transitions]


def main(args: Args) -> dict:
    from trainers.tokenizer import build_tokenizer, pair_lengths, save_tokenizer

    args.validate()
    start = time.perf_counter()
    tokenizer = build_tokenizer([f"{p}\n{a}" for p, a in corpus("train", args.rows)], args.vocab_size,
                                args.min_frequency, split_digits=True)
    out = save_tokenizer(tokenizer, args.out_dir)
    pairs = corpus("test", args.report_rows)
    summary = {
        "vocab_size": len(tokenizer),
        "trained_on": {"split": "train", "transitions": args.rows, "prompt": "compact"},
        "digits": "one token per digit",
        "test_split_lengths": {**pair_lengths(tokenizer, pairs), "transitions": len(pairs)},
        "command": "python -m trainers.miniweb_tokenizer " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in dataclasses.asdict(args).items()
            if k != "out_dir" and v != getattr(Args(), k)),
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out / "training_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    row = summary["test_split_lengths"]
    print(f"{'prompt mean':>11} {'prompt max':>10} {'answer mean':>11} {'answer max':>10}")
    print(f"{row['prompt_mean']:>11} {row['prompt_max']:>10} {row['answer_mean']:>11} {row['answer_max']:>10}")
    print(f"vocab {summary['vocab_size']} -> {out}")
    return summary


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
