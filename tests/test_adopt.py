"""`rlvr-world adopt`: a brought-back model becomes a shipped default only when it wins.

The decision on constructed paired tests; the shipped model itself, packed as a bundle, is not
adopted and `--apply` leaves the assets byte-identical; a degraded candidate is not adopted; bad
input ends in one line; a win installs the candidate in the shipped dtype with its adoption record.
"""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from rlvr_envs.core.paths import ASSETS

PUSHT = ASSETS / "video" / "pusht_single_step_model"
TEXT = ASSETS / "text" / "minitextworld_sft_model"
ROOT = Path(__file__).resolve().parents[1]


def test(mean, p, n=50):
    """A paired test of candidate - shipped as the evaluation writes it."""
    return {"mean": mean, "p": p, "n": n, "stderr": abs(mean) / 3 if mean else 0.0}


test.__test__ = False  # a helper, not a test


def pusht_tests(mae=(-0.001, 0.001), agent=(0.0, 0.9), block=(-0.01, 0.3), angle=(0.0, 1.0)):
    return {"mae": test(*mae), "agent_error": test(*agent), "block_error": test(*block), "angle_error": test(*angle)}


NOT_WORSE = {"real2sim": {"not_worse": True, "difference_text": "Pearson +0.01"},
             "planning": {"not_worse": True, "difference_text": "share +0.00"}}


def test_a_lower_mae_beyond_noise_with_no_object_error_grown_wins():
    from trainers.adopt import decide

    decision = decide("pusht", pusht_tests(), NOT_WORSE, starts=40)
    assert decision == {"adopted": True, "held_out_better": True, "reasons": []}


@pytest.mark.parametrize("tests, why", [
    (pusht_tests(mae=(0.001, 0.001)), "held-out mae is not lower beyond noise"),
    (pusht_tests(mae=(-0.001, 0.2)), "held-out mae is not lower beyond noise"),
    (pusht_tests(block=(0.02, 0.01)), "worse beyond noise: block_error"),
], ids=["mae-higher", "mae-not-significant", "mae-wins-but-the-block-error-grows"])
def test_a_held_out_loss_is_not_adopted(tests, why):
    from trainers.adopt import decide

    decision = decide("pusht", tests, NOT_WORSE, starts=40)
    assert not decision["adopted"] and why in decision["reasons"][0]


def test_a_held_out_win_needs_real2sim_and_planning_not_worse_at_40_starts_and_the_size_class():
    from trainers.adopt import decide

    worse = {**NOT_WORSE, "planning": {"not_worse": False, "difference_text": "share -0.40 (-0.6 to -0.2)"}}
    assert "planning is worse: share -0.40" in decide("pusht", pusht_tests(), worse)["reasons"][0]
    skipped = {"real2sim": {"not_worse": None, "why": "skipped"}, "planning": NOT_WORSE["planning"]}
    assert "real2sim decided nothing (skipped)" in decide("pusht", pusht_tests(), skipped)["reasons"][0]
    assert "below the 40" in decide("pusht", pusht_tests(), NOT_WORSE, starts=10)["reasons"][0]
    assert "size class" in decide("pusht", pusht_tests(), NOT_WORSE, size_ratio=3.0)["reasons"][0]


def test_text_wins_on_exact_accuracy_unless_changed_or_unchanged_transitions_fall():
    from trainers.adopt import decide

    win = {"exact": test(0.05, 0.01), "exact_changed": test(0.1, 0.01), "exact_unchanged": test(0.0, 1.0)}
    assert decide("text", win)["adopted"]
    lost_unchanged = {**win, "exact_unchanged": test(-0.03, 0.04)}
    assert "exact_unchanged" in decide("text", lost_unchanged)["reasons"][0]
    assert not decide("text", {**win, "exact": test(0.05, 0.2)})["adopted"]


def folder_digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def run_adopt(capfd, *argv) -> tuple[int, str]:
    from rlvr_envs.cli import main

    code = main(["adopt", *map(str, argv)])
    captured = capfd.readouterr()
    return code, captured.out + captured.err


def test_the_shipped_model_as_a_bundle_is_not_adopted_and_apply_changes_nothing(tmp_path, capfd):
    from rlvr_envs.core.bundle import pack

    pack(PUSHT, tmp_path / "pusht.safetensors")
    before = folder_digest(PUSHT)
    code, output = run_adopt(capfd, tmp_path / "pusht.safetensors", "--kind", "pusht", "--out", tmp_path / "report",
                             "--transitions", 4, "--seeds", 1, "--threads", 1, "--device", "cpu", "--apply")
    assert code == 0, output
    assert folder_digest(PUSHT) == before
    result = json.loads((tmp_path / "report" / "adopt.json").read_text())
    assert not result["decision"]["adopted"] and result["applied"].startswith("no: not adopted")
    assert result["held_out"]["tests"]["mae"]["mean"] == 0.0  # bf16 as shipped: the same model
    assert result["checks"]["real2sim"]["not_worse"] is None  # a held-out loss: the long checks are skipped
    report = (tmp_path / "report" / "adopt.md").read_text()
    assert "**not adopted**" in report and "rlvr-world adopt" in report and "agent error (px)" in report
    versus = result["held_out"]["candidate_vs_copy_last"]  # beside the strongest trivial baseline, objects too
    assert {"mae", "agent_error", "block_error", "angle_error"} <= set(versus)
    assert "Against copying the last frame" in report


def test_a_degraded_candidate_is_not_adopted(tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    from trainers.adopt import Args, main

    degraded = tmp_path / "degraded"
    degraded.mkdir()
    for path in PUSHT.iterdir():
        (degraded / path.name).write_bytes(path.read_bytes())
    generator = torch.Generator().manual_seed(0)
    weights = {k: (v.float() + 0.5 * torch.randn(v.shape, generator=generator)).to(v.dtype)
               for k, v in load_file(str(PUSHT / "model.safetensors")).items()}
    save_file(weights, str(degraded / "model.safetensors"), metadata={"format": "pt"})
    result = main(Args(bundle=str(degraded), kind="pusht", out=str(tmp_path / "report"), transitions=6, seeds=1,
                       threads=1, device="cpu"))
    assert not result["decision"]["adopted"]
    assert result["held_out"]["tests"]["mae"]["mean"] > 0, result["held_out"]["tests"]["mae"]


@pytest.mark.parametrize("case", ["missing", "not-a-bundle", "plain-safetensors", "wrong-kind", "no-kind"])
def test_bad_input_is_one_line(tmp_path, capfd, case):
    import torch
    from safetensors.torch import save_file

    from rlvr_envs.core.bundle import pack

    candidate = tmp_path / "candidate.safetensors"
    kind = ["--kind", "pusht"]
    if case == "not-a-bundle":
        candidate = tmp_path / "notes.txt"
        candidate.write_text("not a model")
    elif case == "plain-safetensors":
        save_file({"w": torch.zeros(2)}, str(candidate))
    elif case == "wrong-kind":
        pack(TEXT, candidate)
    elif case == "no-kind":
        pack(PUSHT, candidate)
        kind = []
    code, output = run_adopt(capfd, candidate, *kind, "--out", tmp_path / "report", "--device", "cpu")
    errors = [line for line in output.splitlines() if "error" in line]
    expected = {"missing": (2, "no candidate at"), "not-a-bundle": (1, "not a model bundle"),
                "plain-safetensors": (1, "not a model bundle"), "wrong-kind": (1, "vocab_size is 1024"),
                "no-kind": (2, "--kind must be one of")}[case]
    assert code == expected[0], output
    assert len(errors) == 1 and expected[1] in errors[0] and "Traceback" not in output, output
    assert folder_digest(PUSHT)  # nothing was touched; the assets are still there


def test_a_win_installs_the_candidate_as_the_shipped_model_is_stored(tmp_path):
    """`install` (what --apply does on a win) on a copy of the shipped text model."""
    from rlvr_envs.core.bundle import pack
    from trainers.adopt import install, prepare_candidate, stored_dtype

    target = tmp_path / "minitextworld_sft_model"
    target.mkdir()
    for path in TEXT.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    pack(TEXT, tmp_path / "text.safetensors")
    facts = prepare_candidate(tmp_path / "text.safetensors", target, "text", tmp_path / "candidate")
    assert facts["dtype"] == "float16" and facts["size_ratio"] == 1.0
    (tmp_path / "candidate" / "README.md").unlink()
    written = install(tmp_path / "candidate", target, {"command": "rlvr-world adopt ...", "sha256": facts["sha256"]})
    assert "model.safetensors" in written and stored_dtype(target) == "float16"
    card = json.loads((target / "card.json").read_text())
    assert card["adoption"]["sha256"] == facts["sha256"] and "what" in card["adoption"]["replaced"]
    assert not list(target.glob("*.partial"))
    assert "**Replaced**" in (target / "README.md").read_text()  # the candidate brought no README: the old one says so


def test_the_results_that_name_each_default_are_found():
    from trainers.adopt import results_naming

    pusht = {row["file"] for row in results_naming(PUSHT, ROOT)}
    assert {"benchmarks/results/demo_pusht/results.json", "benchmarks/results/planning_agreement.json",
            "benchmarks/results/grpo_pusht_rewards_pose_120steps.json"} <= pusht
    assert "benchmarks/results/demo_text/results.json" not in pusht
    rows = {row["file"]: row for row in results_naming(PUSHT, ROOT)}
    base = rows["benchmarks/results/real2sim/base/results.json"]
    # made when policy-eval's default was this model; its default is another one now, so the command names it
    assert base["commands"][0].startswith(f"rlvr-world policy-eval --model {PUSHT.relative_to(ROOT)} ")
    text = {row["file"] for row in results_naming(TEXT, ROOT)}
    assert "benchmarks/results/demo_text/results.json" in text
    assert "benchmarks/results/demo_pusht/results.json" not in text


def test_the_recipe_policies_act_as_the_recipes_code(tmp_path, monkeypatch):
    import importlib

    from baselines.policies import Circler, toward_centre

    recipes = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    (tmp_path / "my_policy.py").write_text(re.search(r"```python\n(# my_policy\.py\n.*?)```", recipes, re.S).group(1))
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = importlib.import_module("my_policy")
    image = np.zeros((64, 64, 3), dtype=np.uint8)
    assert np.array_equal(toward_centre(image), recipe.toward_centre(image))
    ours, theirs = Circler(), recipe.Circler()
    ours.reset("push"), theirs.reset("push")
    for _ in range(3):
        assert np.array_equal(ours.step(image), theirs.step(image))


def fake_runs(monkeypatch, learned_candidate, planned_candidate):
    """`_run_command` that checks each command line with the command's own parser, then writes the
    results a run would (so the pairing and intervals are tested without an hour of rollouts)."""
    import argparse
    import importlib

    from trainers import adopt

    real = (np.arange(40) < np.array([[36], [28], [20], [12], [4]])).astype(float)  # 5 policies x 40 starts

    def run(module, argv):
        parser = argparse.ArgumentParser()
        importlib.import_module(module).add_arguments(parser)
        parsed = parser.parse_args(argv[1:])
        out = Path(parsed.out)
        out.mkdir(parents=True, exist_ok=True)
        if argv[0] == "policy-eval":
            learned = real if "candidate" not in str(parsed.model) else learned_candidate(real)
            rollouts = [{"policy": f"p{i}", "start": s, "env_success": env, "judged_success": float(side[i, s])}
                        for i in range(5) for s in range(40)
                        for side, env in ((learned, None), (real, bool(real[i, s])))]
            report = {"summary": {"pearson": 0.5, "mmrv": 0.1}, "rollouts": rollouts}
        else:
            episodes = np.arange(parsed.episodes)
            rows = {"cem_base": episodes % 2 == 0, "cem_rlvr": planned_candidate(episodes),
                    "cem_true_sim": episodes % 4 != 3}
            report = {"episodes": [{"planner": name, "index": int(i), "success": bool(ok[i])}
                                   for name, ok in rows.items() for i in episodes]}
        (out / "results.json").write_text(json.dumps(report))

    monkeypatch.setattr(adopt, "_run_command", run)


@pytest.mark.parametrize("worse", [False, True], ids=["as-good", "worse"])
def test_real2sim_and_planning_are_paired_over_the_same_starts_and_goals(tmp_path, monkeypatch, worse):
    from trainers.adopt import Args, decide, planning, real2sim

    fake_runs(monkeypatch, (lambda real: real[::-1]) if worse else (lambda real: real),
              (lambda episodes: np.zeros(len(episodes), bool)) if worse else (lambda episodes: episodes % 2 == 0))
    args = Args(bundle=str(PUSHT), kind="pusht", starts=40, planning_episodes=48, device="cpu")
    (tmp_path / "candidate").mkdir()
    checks = {"real2sim": real2sim(args, PUSHT, tmp_path / "candidate", tmp_path / "r2s"),
              "planning": planning(args, PUSHT, tmp_path / "candidate", tmp_path / "plan")}
    assert checks["real2sim"]["not_worse"] is not worse and checks["planning"]["not_worse"] is not worse
    assert checks["planning"]["successes"] == {"shipped": 24, "candidate": 0 if worse else 24, "true_sim": 36}
    assert checks["real2sim"]["commands"]["shipped"].count("--policy") == 2  # the recipe's two beside the family
    decision = decide("pusht", pusht_tests(), checks, starts=40)
    assert decision["adopted"] is not worse
    if worse:
        assert [r.split(" is worse")[0] for r in decision["reasons"]] == ["real2sim", "planning"]
    from trainers.adopt import RULE_TEXT, report_markdown, with_interval

    tests = {key: with_interval(value) for key, value in pusht_tests().items()}
    values = {key: 0.01 for key in tests}
    report = report_markdown({
        "kind": "pusht", "target": PUSHT.name, "command": "rlvr-world adopt x --kind pusht", "machine": "here",
        "seconds": 60.0, "decision": decision, "checks": checks, "rule": RULE_TEXT["pusht"], "applied": "no",
        "held_out": {"env_id": "RLVRWorld/PushT-SingleStep-v0", "transitions": 50, "seeds": 2, "tests": tests,
                     "shipped": values, "candidate": values},
        "candidate": {"source": "x", "parameters": 10, "size_ratio": 1.0, "dtype": "bfloat16", "card": {}},
        "regenerate": [{"file": "benchmarks/results/x.json", "commands": ["python -m benchmarks.x"]}]})
    assert ("**worse**" in report) is worse and "Real2Sim recipe, 40 starts" in report and "CEM planning, 48" in report
    assert "`python -m benchmarks.x`" in report


def test_the_gpu_check_s_adopt_commands_name_a_target_adopt_takes():
    """Each ship-stage model's report line names the command that judges it: a kind and a target adopt knows."""
    from benchmarks import gpu_check
    from trainers import adopt

    for kind in gpu_check.SHIP_BUNDLES:
        command = gpu_check.trained_record(kind, 0)["judge_with"].split()
        assert command[:3] == ["rlvr-world", "adopt", gpu_check.SHIP_BUNDLES[kind]]
        assert adopt.target_dir(command[command.index("--kind") + 1], command[command.index("--target") + 1]) \
            == gpu_check.SHIPPED[kind]
