"""Every bad command-line value of benchmarks/experiments/cli_inputs.py is refused before any work: argparse's
one-line error, exit code 2, no traceback (run in-process here; the benchmark runs each in a fresh
process). And every option of every command says what it is and its default in `--help`."""

from __future__ import annotations

import argparse
import importlib

import pytest

from benchmarks.experiments.cli_inputs import cases, data_cases, scratch_dir

SCRATCH = scratch_dir()
CASES = cases(SCRATCH)
DATA_CASES = data_cases(SCRATCH)


def test_the_catalogue_covers_every_case_the_issues_found():
    assert len(CASES) + len(DATA_CASES) >= 110


@pytest.mark.parametrize("name", list(CASES))
def test_bad_value_is_refused_with_one_line_and_exit_code_2(name, capsys):
    module, *argv = CASES[name]
    if module == "rlvr_envs.cli" and argv[0] == "demo":  # `rlvr-world demo` runs `python -m trainers.demo` itself
        module, argv = "trainers.demo", argv[1:]
    with pytest.raises(SystemExit) as caught:
        if module == "rlvr_envs.cli":
            from rlvr_envs.cli import main

            main(argv)
        else:
            program = importlib.import_module(module)
            getattr(program, "parse_args", program.main)(argv)  # gpu_check parses inside its main
    err = capsys.readouterr().err
    assert caught.value.code == 2, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("name", list(DATA_CASES))
def test_missing_or_broken_data_is_one_line_and_exit_code_1(name, capsys, monkeypatch):
    from rlvr_envs.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module, *argv = DATA_CASES[name]
    assert module == "rlvr_envs.cli" and main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlvr-world: error: ") and "\n" not in err, err


def test_the_benchmark_judges_outcomes_as_the_issue_counts_them():
    from benchmarks.experiments.cli_inputs import judge

    assert judge(2, "usage: x\nx: error: argument --n: must be >= 1, got -1\n", 0.1)["outcome"] == "refused"
    assert judge(1, "Traceback (most recent call last):\n  ...\nValueError: x\n", 0.1)["outcome"] == "traceback"
    assert judge(0, "", 0.1)["accepted"] and judge(None, "", 90.0)["outcome"] == "accepted"
    # lines are counted: a usage block that wraps is one block, anything else is extra output
    wrapped = "usage: x [-h] [--n N]\n         [--m M]\nx: error: argument --n: must be >= 1, got -1\n"
    assert judge(2, wrapped, 0.1)["outcome"] == "refused"
    assert judge(2, "warning: slow\n" + wrapped, 0.1)["outcome"] == "extra output"
    assert judge(2, wrapped + "x: error: a second one\n", 0.1)["extra_lines"] == 1
    # a data error (exit 1) is the one line alone: a usage block before it is extra output
    assert judge(1, "x: error: no such folder: /d\n", 0.1, expected=1)["outcome"] == "refused"
    assert judge(1, wrapped, 0.1, expected=1)["outcome"] == "extra output"
    assert judge(2, "x: error: no such folder: /d\n", 0.1, expected=1)["outcome"] == "exit 2"


def _commands():
    """(name, parser) of every `rlvr-world` command and data command, and of every trainer."""
    from rlvr_envs.cli import APPLICATION_COMMANDS, DATA_COMMANDS, build_parser
    from trainers.common import add_dataclass_arguments

    def subparsers(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    for name in ("list", "episode", *APPLICATION_COMMANDS):
        yield name, subparsers(build_parser([name]))[name]
    for name in DATA_COMMANDS:
        yield f"data {name}", subparsers(subparsers(build_parser(["data", name]))["data"])[name]
    for module in ("grpo", "sft", "demo", "prompt_filter", "rollout_prompts", "sb3_ppo", "tokenizer",
                   "miniweb_tokenizer", "train_frame_tokenizer", "train_compressed_tokenizer",
                   "train_video_world_model"):
        trainer = importlib.import_module(f"trainers.{module}")
        config = importlib.import_module("trainers.grpo_config").GRPOConfig if module == "grpo" else trainer.Args
        parser = argparse.ArgumentParser(description=trainer.__doc__.splitlines()[0],  # as parse_dataclass_args
                                         formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        add_dataclass_arguments(parser, config)
        yield f"trainers.{module}", parser


def test_every_option_has_help_text_and_its_default_in_help():
    missing = []
    for name, parser in _commands():
        assert parser.formatter_class is argparse.ArgumentDefaultsHelpFormatter, name
        assert parser.description, f"{name} has no description"
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
        text = parser.format_help()
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS) \
                    and not action.required and action.help:
                assert "(default:" in text, f"{name}: defaults are not shown"
    assert not missing, f"options without help text: {missing}"


def test_recorded_command_reproduces_parsed_list_values():
    from rlvr_envs.cli import build_parser
    from rlvr_envs.core.records import recorded_command

    args = build_parser(["policy-eval"]).parse_args(["policy-eval", "--noise", "0,12.5", "--out", str(SCRATCH)])
    command = recorded_command("rlvr-world policy-eval", args)
    assert "--noise 0,12.5 " in command
    again = build_parser(["policy-eval"]).parse_args(command.split()[1:])  # drop "rlvr-world"
    assert again.noise == args.noise == (0.0, 12.5)
