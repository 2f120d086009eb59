"""One run folder, one writer: every trainer takes `--out`'s lock (the one `data pusht` takes), and
`--resume` keeps the settings a run started with (trainers.common.owns_run_folder)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr_envs.core.files import LOCK_NAME, OutputInUse, OutputLock
from trainers import common

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}


@pytest.fixture
def held(tmp_path):
    """`tmp_path / "run"` locked by another live process, as a running trainer holds its --out."""
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from rlvr_envs.core.files import OutputLock; "
         "OutputLock(sys.argv[1], 'the first run').acquire(); print('locked', flush=True); time.sleep(60)",
         str(folder)], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield folder, holder.pid
    finally:
        holder.kill()
        holder.wait()


@dataclasses.dataclass
class Args:
    out: str = ""
    lr: float = 5e-5
    seed: int = 0
    steps: int = 2
    resume: bool = False


@common.owns_run_folder()
def fake_trainer(args: Args) -> dict:
    """Writes what a trainer writes, and reports who held the lock meanwhile."""
    out = Path(args.out)
    with open(out / "log.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"step": args.steps}) + "\n")
    return json.loads((out / LOCK_NAME).read_text())


def test_a_trainer_holds_its_folder_and_a_second_writer_is_refused(held, tmp_path, monkeypatch):
    folder, pid = held
    with pytest.raises(OutputInUse, match=rf"being written by another run \(pid {pid}: `the first run`"):
        fake_trainer(Args(out=str(folder)))
    assert not (folder / "log.jsonl").exists()
    mine = fake_trainer(Args(out=str(tmp_path / "mine")))
    assert mine["pid"] == os.getpid() and mine["command"].startswith("python -m ")
    with OutputLock(tmp_path / "mine", "after"):  # released when the trainer returned
        pass


def test_two_grpo_commands_on_one_out_the_second_is_one_line_exit_1(held):
    folder, pid = held
    done = subprocess.run([sys.executable, "-m", "trainers.grpo", "--env-id", "RLVRWorld/PushT-SingleStep-v0",
                           "--steps", "2", "--device", "cpu", "--out", str(folder)],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.fullmatch(rf"python -m trainers.grpo: error: {re.escape(str(folder))} is being written by another "
                        rf"run \(pid {pid}: .*\n", done.stderr), done.stderr
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME]


def test_resume_refuses_changed_settings_naming_them_and_allows_more_steps(tmp_path):
    out = str(tmp_path / "run")
    fake_trainer(Args(out=out))  # a started run (log.jsonl), killed before it finished
    assert json.loads((tmp_path / "run" / common.SETTINGS_FILE).read_text())["lr"] == 5e-5
    with pytest.raises(ValueError, match=r"--resume: .* was started with --lr 5e-05 \(now 1\.0\), --seed 0 \(now 3\)"):
        fake_trainer(Args(out=out, lr=1.0, seed=3, resume=True))
    fake_trainer(Args(out=out, steps=4, resume=True))  # running longer is what --resume is for
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert steps == [2, 4]


def test_grpo_resume_with_another_lr_is_one_line_exit_2(tmp_path, capsys):
    from trainers.grpo import parse_args
    from trainers.grpo_config import GRPOConfig

    started = tmp_path / "started"
    started.mkdir()
    (started / "log.jsonl").write_text("")
    (started / common.SETTINGS_FILE).write_text(json.dumps(common.settings_record(GRPOConfig(out=str(started)))))
    with pytest.raises(SystemExit) as caught:
        parse_args(["--out", str(started), "--resume", "--lr", "1"])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.count("error:") == 1 and "--lr 5e-05 (now 1.0)" in err, err
    assert parse_args(["--out", str(started), "--resume", "--steps", "9"]).steps == 9


def test_language_grpo_without_a_model_is_a_bad_argument(tmp_path, capsys):
    from trainers.grpo import parse_args

    with pytest.raises(SystemExit) as caught:
        parse_args(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--out", str(tmp_path / "g")])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and "Traceback" not in err and "pass --model" in err.splitlines()[-1], err


@pytest.mark.parametrize("command", [
    ["plan", "--planners", "random", "--episodes", "1", "--horizon", "1", "--samples", "4", "--top-k", "2",
     "--iterations", "1", "--rounds", "1", "--heldout-episodes", "2", "--gifs", "0"],
    ["policy-eval", "--starts", "1", "--heldout-episodes", "2", "--max-steps", "1", "--noise", "0", "--threads", "1"]],
    ids=["plan", "policy-eval"])
def test_plan_and_policy_eval_refuse_a_folder_another_run_writes(held, command, capsys):
    pytest.importorskip("torch")
    from rlvr_envs.cli import main

    folder, pid = held
    assert main([*command, "--out", str(folder)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"rlvr-world: error: {folder} is being written by another run (pid {pid}"), err
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME]


@pytest.mark.parametrize("raised, code, says", [
    (OutputInUse("/runs/x is being written by another run (pid 1)"), 1, "error: /runs/x is being written"),
    (KeyboardInterrupt(), 130, "interrupted; rerun the same command with --resume to continue")])
def test_a_trainer_command_ends_work_time_failures_in_one_line(raised, code, says, capsys):
    def main(args):
        raise raised

    with pytest.raises(SystemExit) as caught:
        common.run_command(main, lambda: Args(out="x"))
    err = capsys.readouterr().err
    assert caught.value.code == code and err.count("\n") == 1 and says in err, err
