"""docs/recipes.md's serving recipes run as written, at a tiny budget: GRPO (TRL's GRPOTrainer)
whose rollouts run on a served MiniTextWorld, and an external policy in a served learned PushT
simulator whose success equals `rlvr-world policy-eval`'s from the same starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="the [serve] extra (openenv-core) is not installed")

REPO = Path(__file__).resolve().parents[1]
SECTION = "Serve an id to any trainer or policy (OpenEnv, verifiers)"


def recipes_section() -> str:
    text = (REPO / "docs" / "recipes.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip((t.strip() for t in parts[1::2]), parts[2::2]))[SECTION]


def python_file(name: str, section: str | None = None) -> str:
    """The recipe's Python block that starts with `# NAME`."""
    text = section if section is not None else recipes_section()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if block.startswith(f"# {name}\n"):
            return block
    raise AssertionError(f"docs/recipes.md has no python block '# {name}'")


def tiny(code: str, **values) -> str:
    """The recipe with its budget line(s) `NAME, ... = ...` replaced by tiny values."""
    for names, value in values.items():
        pattern = rf"^{re.escape(names.replace('__', ', '))} = .*$"
        assert re.search(pattern, code, flags=re.M), names
        code = re.sub(pattern, f"{names.replace('__', ', ')} = {value}", code, flags=re.M)
    return code


def serve(env_id: str, *extra: str):
    """`rlvr-world serve ENV_ID --port 0` as the recipe runs it; (process, URL) once it listens."""
    server = subprocess.Popen([sys.executable, "-m", "rlvr_envs.cli", "serve", env_id, "--port", "0", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    line = server.stdout.readline()
    if " on http://" not in line:
        server.kill()
        raise AssertionError(f"the server did not start: {line!r} {server.stderr.read()[-2000:]}")
    return server, line.split(" on ")[1].split(" ")[0]


def run_script(folder: Path, name: str, code: str, url: str) -> str:
    (folder / name).write_text(code, encoding="utf-8")
    (folder / "rlvr_envs").exists() or (folder / "rlvr_envs").symlink_to(REPO / "rlvr_envs")  # assets at their paths
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RLVR_WORLD_SERVER": url, "TRL_EXPERIMENTAL_SILENCE": "1",
           "PYTHONPATH": f"{REPO}{os.pathsep}{folder}"}
    out = subprocess.run([sys.executable, name], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_recipe_grpo_rollouts_through_a_served_env(tmp_path):
    pytest.importorskip("trl")
    code = tiny(python_file("grpo_served.py"), STEPS__PROMPTS__GROUP__MAX_COMPLETION="1, 1, 2, 24")
    server, url = serve("RLVRWorld/MiniTextWorld-v0", "--env-kwargs", "split=train")
    try:
        out = run_script(tmp_path, "grpo_served.py", code, url)
    finally:
        server.terminate()
        server.wait(timeout=30)
    line = next(l for l in out.splitlines() if l.startswith("mean served reward per step:"))
    rewards = json.loads(line.split(":", 1)[1].split("refused")[0].strip())
    assert len(rewards) == 1 and 0.0 <= rewards[0] <= 1.0 and line.endswith("refused: 0")


@pytest.mark.slow
def test_recipe_external_policy_in_a_served_learned_simulator_equals_policy_eval(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("gym_pusht")
    section = recipes_section()
    first = re.split(r"^## (.+)$", (REPO / "docs" / "recipes.md").read_text(encoding="utf-8"), flags=re.M)
    own_policy = dict(zip((t.strip() for t in first[1::2]), first[2::2]))["Evaluate your own policy in a learned simulator"]
    (tmp_path / "my_policy.py").write_text(python_file("my_policy.py", own_policy), encoding="utf-8")
    starts, steps = 2, 3
    code = tiny(python_file("policy_client.py", section), STARTS__MAX_STEPS__LEAD__SEED__BAR=f"{starts}, {steps}, 60, 0, 0.8")
    command = next(line for line in re.findall(r"```bash\n(.*?)```", section, re.S)[-1].splitlines()
                   if line.startswith("rlvr-world policy-eval"))
    argv = command.split()[1:] + ["--starts", str(starts), "--max-steps", str(steps), "--out", str(tmp_path / "local"),
                                  "--threads", "2"]
    (tmp_path / "rlvr_envs").symlink_to(REPO / "rlvr_envs")  # the shipped assets at the paths the page gives
    # policy-eval in process runs meanwhile (it needs no server)
    local = subprocess.Popen([sys.executable, "-m", "rlvr_envs.cli", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"})
    try:
        server, url = serve("RLVRWorld/PushT-LearnedSim-v0")
        try:
            out = run_script(tmp_path, "policy_client.py", code, url)
        finally:
            server.terminate()
            server.wait(timeout=30)
        _, err = local.communicate(timeout=900)
    finally:
        if local.poll() is None:
            local.kill()
    assert local.returncode == 0, err[-3000:]
    served = json.loads(out.splitlines()[0])
    results = json.loads((tmp_path / "local" / "results.json").read_text())
    learned = sorted((r for r in results["rollouts"] if r["simulator"] == "LearnedPushTSim"), key=lambda r: r["start"])
    assert [r["judged_success"] for r in learned] == [row["success"] for row in served]
    assert [r["steps"] for r in learned] == [row["steps"] for row in served]
    assert [r["final_coverage"] for r in learned] == pytest.approx([row["final_coverage"] for row in served])
