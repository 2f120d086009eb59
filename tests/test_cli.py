"""The `rlvr-world` command as a newcomer meets it: help on bare commands, one episode
rendered, one-line errors instead of tracebacks."""

from __future__ import annotations

import pytest

from rlvr_envs.cli import main


@pytest.mark.parametrize("argv, shows", [([], "{demo,adopt,list,episode,data,plan,policy-eval,serve}"),
                                        (["data"], "bytesized32")])
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


@pytest.mark.parametrize("tokens", [["reward=task", "size=12"], ["reward=task,size=12"],
                                    ['{"reward": "task", "size": 12}'], ["reward=task", '{"size": 12}']])
def test_env_kwargs_take_the_same_forms_in_rlvr_world_and_the_trainers(tokens):
    """One parser: space-separated pairs (the documented form), comma-joined pairs and JSON
    objects mean the same thing to `rlvr-world episode` and to every trainer."""
    from rlvr_envs.cli import build_parser
    from trainers.grpo_config import GRPOConfig

    argv = ["episode", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs", *tokens]
    assert build_parser(argv).parse_args(argv).env_kwargs == {"reward": "task", "size": 12}
    assert GRPOConfig(env_kwargs=tuple(tokens)).kwargs() == {"reward": "task", "size": 12}


def test_env_kwargs_keep_commas_inside_values_and_refuse_a_token_that_is_no_pair(capsys):
    from rlvr_envs.core.arguments import parse_env_kwargs

    assert parse_env_kwargs(["noise=[0,10],size=3"]) == {"noise": [0, 10], "size": 3}
    with pytest.raises(SystemExit) as caught:
        main(["episode", "--env-kwargs", "reward=task", "size"])
    last = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage, then one error line
    assert caught.value.code == 2
    assert last.endswith("argument --env-kwargs: env kwargs are key=value pairs (reward=task size=12), got 'size'")


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
    assert 'pip install -e ".[dev]"' in err  # the README's command, word for word


def test_list_shows_every_registered_id_with_its_availability(capsys):
    import gymnasium as gym

    from rlvr_envs.registration import all_ids

    assert main(["list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    registered = {env_id for env_id in gym.registry if env_id.startswith("RLVRWorld/")}
    assert set(rows) == set(all_ids()) == registered
    assert rows["RLVRWorld/MiniWeb-Goal-v0"].endswith("yes") and rows["RLVRWorld/MiniTextWorld-v0"].endswith("yes")
    assert all(row.endswith("yes") or " no: " in row for row in rows.values())


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    """Without the [video] extra a video id says which extra to install (here torch is made unimportable)."""
    import builtins

    import gymnasium as gym

    from rlvr_envs.core import factory
    from rlvr_envs.core.extras import MissingExtraError
    from rlvr_envs.registration import entry, task_from_env_id

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    factory._cached_task.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_torch)
    for name in [m for m in list(__import__("sys").modules) if m.startswith("rlvr_envs.video")]:
        monkeypatch.delitem(__import__("sys").modules, name)
    ok, hint = entry("RLVRWorld/PushT-SingleStep-v0").availability()
    assert not ok and "pip install 'rlvr-world[video]'" in hint and "torch is not installed" in hint
    assert main(["episode", "RLVRWorld/PushT-SingleStep-v0"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("rlvr-world: error: RLVRWorld/PushT-SingleStep-v0 needs the [video] extra (torch is not "
                   "installed): pip install 'rlvr-world[video]'")  # the id typed, not the task class behind it
    for build in (lambda: gym.make("RLVRWorld/RT1-MultiStep-v0"), lambda: gym.make_vec("RLVRWorld/Rope-v0", 2),
                  lambda: task_from_env_id("RLVRWorld/PushT-MultiStep-v0")):
        with pytest.raises(MissingExtraError, match=r"^RLVRWorld/\S+-v0 needs the \[video\] extra"):
            build()
    assert main(["plan", "--out", "unused"]) == 1  # a whole command without its extra: the same one line
    err = capsys.readouterr().err.strip()
    assert err == ("rlvr-world: error: rlvr-world plan needs the [video] extra (torch is not installed): "
                   "pip install 'rlvr-world[video]'")



@pytest.mark.parametrize("spec, says", [("/nonexistent/tok", "tokenizer=/nonexistent/tok: no such folder"),
                                        ("no-such-user/no-such-tokenizer", "could not load tokenizer"),
                                        ("pyproject.toml", "tokenizer=pyproject.toml: is a file")])
def test_a_missing_or_bad_tokenizer_is_one_line(spec, says, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["episode", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs", f"tokenizer={spec}"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rlvr-world: error: {says}") and "\n" not in err and "embedded tokenizers" in err, err


def test_a_data_root_that_cannot_be_written_is_one_line_naming_it(monkeypatch, capsys):
    """/sys refuses new folders even to root: as a read-only mount does, for the generated held-out set."""
    monkeypatch.setenv("RLVR_WORLD_DATA", "/sys/rlvr-world-data")
    assert main(["episode", "RLVRWorld/PushT-SingleStep-v0", "--env-kwargs", "reward=mae"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("rlvr-world: error: cannot write the heldout PushT episodes into "
                                              "/sys/rlvr-world-data/") and "set RLVR_WORLD_DATA" in err, err


def test_a_missing_data_dir_is_named_before_any_optional_component(capsys):
    """An RT-1 id with data_dir= a folder that does not exist: the folder, not the LPIPS trunk."""
    from rlvr_envs.video.task import default_tokenizer_dir

    assert main(["episode", "RLVRWorld/RT1-SingleStep-v0", "--env-kwargs", "data_dir=/nonexistent/rt1",
                 f"tokenizer={default_tokenizer_dir()}"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlvr-world: error: data_dir=/nonexistent/rt1: no such folder; it should be converted RT-1")
    assert "LPIPS" not in err and "\n" not in err
