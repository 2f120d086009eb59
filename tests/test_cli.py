"""The `rlvr-world` command as a newcomer meets it: help on bare commands, one episode
rendered, one-line errors instead of tracebacks."""

from __future__ import annotations

import pytest

from rlvr_envs.cli import main


@pytest.mark.parametrize("argv, shows", [([], "{demo,list,episode,data,plan,policy-eval}"), (["data"], "bytesized32")])
def test_bare_commands_print_help(argv, shows, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: rlvr-world") and shows in out


@pytest.mark.parametrize("response, reward", [("gold", "reward 1.000 of max 1.000"), ("empty", "reward 0.000")])
def test_episode_renders_prompt_gold_response_and_reward(response, reward, capsys):
    assert main(["episode", "RLVRWorld/MiniWeb-v0", "--index", "2", "--response", response]) == 0
    out = capsys.readouterr().out
    for section in ("=== prompt ===", "=== gold ===", "=== response ===", "=== reward ==="):
        assert section in out
    assert reward in out


def test_missing_data_is_one_line_not_a_traceback(tmp_path, capsys):
    assert main(["episode", "RLVRWorld/TextGame-v0", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlvr-world: error:") and "\n" not in err and "rlvr-world data bytesized32" in err


def test_demo_runs_the_checkouts_program():
    """`rlvr-world demo` runs `python -m trainers.demo` of this checkout (the library never imports trainers)."""
    import subprocess
    import sys

    from rlvr_envs import cli

    out = subprocess.run([sys.executable, "-m", "rlvr_envs.cli", "demo", "--help"], capture_output=True, text=True,
                         cwd=cli.checkout_root().parent, timeout=300)
    assert out.returncode == 0 and "--grpo-minutes" in out.stdout, out.stderr


def test_demo_without_a_checkout_is_one_line(monkeypatch, tmp_path, capsys):
    from rlvr_envs import cli

    monkeypatch.setattr(cli, "checkout_root", lambda: tmp_path)
    assert main(["demo"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlvr-world: error:") and "\n" not in err and "from a clone" in err
