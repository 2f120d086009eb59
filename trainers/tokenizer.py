"""Train the embedded MiniTextWorld tokenizer: a small byte-level BPE for the language envs.

The language envs must run with no download, so the package ships its own tokenizer,
trained here on MiniTextWorld prompts and gold answers (train-split seeds only, every
difficulty) with the `tokenizers` library, and saved as a `transformers` tokenizer:

    python -m trainers.tokenizer                      # writes rlvr_envs/assets/tokenizers/minitextworld/
    python -m trainers.tokenizer --vocab-size 2048 --out-dir /tmp/tok

Design choices, each for the small models this tokenizer serves:
  * byte-level: any text (any model output) encodes, and decode(encode(x)) == x exactly,
    so a gold answer survives the round trip and nothing is ever unknown;
  * ~1,024 tokens: SB3 token-mode policies have a `vocab_size` action head and small LMs an
    embedding of that size;
  * the pre-tokenizer keeps numbers apart (a uuid or a temperature is always its own
    token, never glued to JSON around it), keeps a JSON key with its true/false/word
    value together, and lets runs of words merge into phrases; the rules and the answer
    format repeat in every prompt, so phrases are what makes the prompt short.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlvr_envs.core.tokenizers import EMBEDDED
from trainers.common import parse_dataclass_args

EOS, PAD = "<|endoftext|>", "<|pad|>"

#: pre-token alternatives, tried in order (see the module docstring)
PRETOKENIZE = "|".join((
    r',?\{?"[A-Za-z_]+":(?:true|false|null|"[A-Za-z]*"?)?',  # a JSON key, with a true/false/word value
    r" ?\p{N}+",  # a number
    r"(?: ?[A-Za-z'/()]+)+[.,;:]?",  # a run of words, so phrases can merge
    r"[^\s\p{L}\p{N}]+",  # other punctuation
    r"\s+",
))
#: the same with every digit its own token, so a number tokenizes one way wherever it stands
#: (the web tokenizer: an id `[185]` is `[`, `1`, `8`, `5`, `]` in a page, an action or an answer)
PRETOKENIZE_DIGITS = PRETOKENIZE.replace(r" ?\p{N}+", r"\p{N}")


@dataclass
class Args:
    out_dir: str = str(EMBEDDED["minitextworld"])
    vocab_size: int = 1024
    min_frequency: int = 2
    #: generated train-split transitions per difficulty (the test split's seed is never used)
    rows_per_difficulty: int = 1500
    difficulties: tuple[str, ...] = field(default_factory=lambda: ("easy", "medium", "hard"))
    #: held-out test-split transitions per difficulty, only to report lengths and check round trips
    report_rows: int = 200

    def validate(self) -> None:
        from rlvr_envs.text_game.mini_text_world import DIFFICULTIES

        if self.vocab_size < 300:
            raise ValueError(f"vocab_size must leave room for the 256 bytes and merges, got {self.vocab_size}")
        unknown = sorted(set(self.difficulties) - set(DIFFICULTIES))
        if unknown:
            raise ValueError(f"unknown difficulties {unknown}; choose from {list(DIFFICULTIES)}")
        if self.rows_per_difficulty < 1:
            raise ValueError("rows_per_difficulty must be positive")


def corpus(split: str, difficulty: str, count: int) -> list[tuple[str, str]]:
    """(prompt, gold answer) texts of `count` MiniTextWorld transitions, exactly as the env shows them."""
    from rlvr_envs.text_game import mini_text_world as simulator
    from rlvr_envs.core.util import split_stream
    from rlvr_envs.text_game.task import game_prompt, game_target, row_to_transition

    rules = simulator.all_rules()
    rows = simulator.generate_rows(simulator.DIFFICULTIES[difficulty], split_stream(0, split), count)
    transitions = [row_to_transition(row, split, rules[row["game"]]) for row in rows]
    return [(game_prompt(t), game_target(t)) for t in transitions]


def build_tokenizer(texts: list[str], vocab_size: int, min_frequency: int, split_digits: bool = False):
    """A byte-level BPE trained on `texts`, wrapped as a `transformers` fast tokenizer
    (`split_digits`: one token per digit, see `PRETOKENIZE_DIGITS`)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_DIGITS if split_digits else PRETOKENIZE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=[EOS, PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS, pad_token=PAD, bos_token=EOS,
                                   model_max_length=4096, clean_up_tokenization_spaces=False)


def save_tokenizer(tokenizer, out_dir: str | Path) -> Path:
    """`save_pretrained`, naming a tokenizer class that transformers 4.x and 5.x both load
    (5.x records its own class name, which 4.x cannot)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out))
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    return out


def pair_lengths(tokenizer, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """Prompt/answer token lengths of (prompt, answer) pairs; asserts every answer decodes back exactly."""
    prompts = [len(ids) for ids in tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]]
    answers = tokenizer([a for _, a in pairs], add_special_tokens=False)["input_ids"]
    for (_, answer), ids in zip(pairs, answers):
        assert tokenizer.decode(ids) == answer, f"round trip failed for {answer[:80]!r}"
    lengths = [len(ids) for ids in answers]
    return {"prompt_mean": round(sum(prompts) / len(prompts), 1), "prompt_max": max(prompts),
            "answer_mean": round(sum(lengths) / len(lengths), 1), "answer_max": max(lengths)}


def length_report(tokenizer, split: str, difficulties: tuple[str, ...], count: int) -> dict[str, dict]:
    """`pair_lengths` per difficulty."""
    return {difficulty: pair_lengths(tokenizer, corpus(split, difficulty, count)) for difficulty in difficulties}


def main(args: Args) -> dict:
    args.validate()
    start = time.perf_counter()
    texts = []
    for difficulty in args.difficulties:
        texts += [f"{prompt}\n{answer}" for prompt, answer in corpus("train", difficulty, args.rows_per_difficulty)]
    tokenizer = build_tokenizer(texts, args.vocab_size, args.min_frequency)
    out = save_tokenizer(tokenizer, args.out_dir)
    summary = {
        "vocab_size": len(tokenizer),
        "trained_on": {"split": "train", "transitions_per_difficulty": args.rows_per_difficulty,
                       "difficulties": list(args.difficulties)},
        "test_split_lengths": length_report(tokenizer, "test", args.difficulties, args.report_rows),
        "command": "python -m trainers.tokenizer " + " ".join(
            f"--{k.replace('_', '-')} {v if not isinstance(v, tuple) else ' '.join(v)}"
            for k, v in dataclasses.asdict(args).items() if k != "out_dir" and v != getattr(Args(), k)),
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out / "training_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'difficulty':<10} {'prompt mean':>11} {'prompt max':>10} {'answer mean':>11} {'answer max':>10}")
    for difficulty, row in summary["test_split_lengths"].items():
        print(f"{difficulty:<10} {row['prompt_mean']:>11} {row['prompt_max']:>10} {row['answer_mean']:>11} "
              f"{row['answer_max']:>10}")
    print(f"vocab {summary['vocab_size']} -> {out}")
    return summary


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
