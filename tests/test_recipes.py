"""docs/recipes.md runs as written, at a tiny budget.

Each how-to's bash block runs in order in one scratch folder (the repository's shipped assets
linked in as `rlvr_envs/`), every command with small sizes appended (argparse keeps the last
value of a repeated flag). So a command that names a folder no earlier command makes, a flag a
trainer no longer takes, or a chain whose artefacts do not fit (a world model trained on one
tokenizer, GRPO on another) fails here, not on a user's machine.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "docs" / "recipes.md"

#: per command (`python -m MODULE` by module, `rlvr-world SUB [NAME]` by its words): the sizes appended at test time
TINY = {
    "rlvr-world data pusht": ["--episodes", "10", "--max-steps", "40", "--workers", "1", "--no-progress"],
    "trainers.train_frame_tokenizer": ["--steps", "2", "--batch-size", "4", "--eval-frames", "8",
                                       "--checkpoint-every", "100", "--threads", "1"],
    "trainers.train_video_world_model": ["--preset", "tiny", "--steps", "2", "--batch-size", "2", "--eval-windows", "2",
                                         "--eval-every", "100", "--checkpoint-every", "100", "--threads", "1"],
    "trainers.grpo": ["--steps", "1", "--prompts-per-step", "1", "--group-size", "2", "--eval-windows", "2",
                      "--eval-every", "100", "--checkpoint-every", "100", "--max-completion-len", "24",
                      "--train-episodes", "2", "--threads", "1"],
    "trainers.sft": ["--preset", "tiny", "--steps", "2", "--batch-size", "2", "--train-size", "16", "--eval-size", "2",
                     "--eval-every", "100", "--checkpoint-every", "100", "--max-new-tokens", "16", "--threads", "1"],
    # whole answers, or no sample is right and the filter keeps nothing for GRPO
    "trainers.prompt_filter": ["--limit", "12", "--samples", "4", "--threads", "1"],
    "benchmarks.language_world_models": ["--transitions", "2", "--max-new-tokens", "16", "--threads", "1"],
    # one learned-simulator planner each: the others run the same loop (tests/test_planning.py)
    "rlvr-world plan": ["--planners", "base,rlvr", "--episodes", "1", "--horizon", "1", "--samples", "4",
                        "--top-k", "2", "--iterations", "1", "--rounds", "1", "--batch-size", "4", "--gifs", "0",
                        "--threads", "1"],
    "benchmarks.planning_agreement": ["--episodes", "1", "--candidates", "4", "--top-k", "2", "--horizon", "1",
                                      "--threads", "1"],
    # GRPO alone: the flags and the chain are what is checked here (every method: tests/test_rl_algorithms.py)
    "benchmarks.rl_algorithms": ["--methods", "grpo", "--steps", "1", "--seeds", "0", "--prompts-per-step", "1",
                                 "--group-size", "2", "--eval-windows", "2", "--best-of", "1,2", "--sb3-seconds", "1", "--sb3-eval", "2",
                                 "--threads", "1"],
    # the long checks (Real2Sim, planning) at their smallest, whether or not the held-out comparison wins
    "rlvr-world adopt": ["--transitions", "4", "--seeds", "1", "--starts", "2", "--heldout-episodes", "2",
                         "--max-steps", "1", "--planning-episodes", "1", "--cem-samples", "2", "--cem-iterations", "1",
                         "--all-checks", "--threads", "1"],
    "benchmarks.web_agent": ["--episodes", "1", "--k", "2", "--max-steps", "4", "--max-new-tokens", "16",
                             "--threads", "1"],
}
#: sections whose commands a test of their own reads from this page and runs (with more asserted of the output)
TESTED_ELSEWHERE = {"Evaluate your own policy in a learned simulator": "tests/test_policy_eval.py",
                    "Serve an id to any trainer or policy (OpenEnv, verifiers)": "tests/test_serve_recipes.py"}


def sections() -> dict[str, str]:
    """The page's `## ` sections that hold a bash block, by title."""
    parts = re.split(r"^## (.+)$", RECIPES.read_text(encoding="utf-8"), flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2]) if "```bash" in body}


def commands(body: str) -> list[list[str]]:
    """Each bash block's commands, continuation lines joined, comments dropped."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", body, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                found.append(shlex.split(line))
    return found


def files(body: str) -> dict[str, str]:
    """Python blocks that open with `# NAME.py`: files the commands import."""
    return {name: code for name, code in re.findall(r"```python\n# (\w+\.py)\n(.*?)```", body, re.S)}


def key(argv: list[str]) -> str:
    if argv[:2] == ["python", "-m"]:
        return argv[2]
    if argv[0] == "rlvr-world":
        return " ".join(argv[:3] if argv[1] == "data" else argv[:2])
    raise AssertionError(f"docs/recipes.md: a command neither `python -m ...` nor `rlvr-world ...`: {argv}")


def runnable(argv: list[str]) -> list[str]:
    """The command for this interpreter, with its tiny sizes appended."""
    name = key(argv)
    assert name in TINY, f"docs/recipes.md runs {name!r}: give it a tiny budget in tests/test_recipes.py TINY"
    if argv[0] == "rlvr-world":
        head = [sys.executable, "-c", "import sys; from rlvr_envs.cli import main; sys.exit(main())"]
        return [*head, *argv[1:], *TINY[name]]
    return [sys.executable, *argv[1:], *TINY[name]]


def test_every_how_to_has_commands_and_every_command_a_tiny_budget():
    found = sections()
    assert len(found) >= 6, sorted(found)
    for title, body in found.items():
        for argv in commands(body) if title not in TESTED_ELSEWHERE else []:
            assert key(argv) in TINY, (title, argv)
    for title, test_file in TESTED_ELSEWHERE.items():
        assert title in found, f"{title!r} is no longer a section of docs/recipes.md"
        assert "recipes" in (REPO / test_file).read_text(encoding="utf-8"), test_file


RUN_HERE = sorted(title for title in sections() if title not in TESTED_ELSEWHERE)


def run_how_to(title: str, folder: Path) -> str:
    """Run one how-to's commands in order in `folder`; '' when all pass, else what failed."""
    body = sections()[title]
    folder.mkdir()
    (folder / "rlvr_envs").symlink_to(REPO / "rlvr_envs")  # the shipped assets at the paths the page gives
    for name, code in files(body).items():
        (folder / name).write_text(code, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{REPO}{os.pathsep}{folder}",
           "RLVR_WORLD_DATA": str(folder / "cache")}
    for argv in commands(body):
        done = subprocess.run(runnable(argv), cwd=folder, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return f"{title}: {shlex.join(argv)}\nexit {done.returncode}\n{done.stderr[-3000:]}"
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("title", RUN_HERE)
def test_how_to_runs_as_written_at_a_tiny_budget(title, tmp_path):
    """One test per how-to, so that pytest-xdist's workers share them out."""
    failure = run_how_to(title, tmp_path / "how_to")
    assert not failure, failure
