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


@pytest.mark.parametrize("kwargs", ["size=8", '{"size": 8}'])
def test_episode_passes_env_kwargs_as_key_value_pairs_or_json(kwargs, capsys):
    assert main(["episode", "--env-kwargs", kwargs, "--index", "7"]) == 0
    assert "reward 1.000 of max 1.000 (gold response)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as caught:  # the kwargs reached the env: it has 8 transitions now
        main(["episode", "--env-kwargs", kwargs, "--index", "8"])
    assert caught.value.code == 2 and "--index must be in [0, 8)" in capsys.readouterr().err
