"""benchmarks.language_world_models: paired held-out comparison of language world models."""

from __future__ import annotations

import json

import pytest

from benchmarks import sections


@pytest.fixture(scope="module")
def micro_models(tmp_path_factory):
    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import build_text_model, save_final

    task = task_from_env_id("RLVRWorld/MiniWeb-v0", split="test", size=4)
    root = tmp_path_factory.mktemp("lwm")
    dirs = []
    for seed in (0, 1):
        model = build_text_model(task.tokenizer, "micro", seed=seed)
        dirs.append(save_final(model, task.tokenizer, root / f"m{seed}" / "final"))
    (root / "m0" / "results.json").write_text(json.dumps({"steps": 7, "seconds": 1.5, "args": {"model": ""}}))
    # m1: GRPO from m0 (a chain of runs, oldest first in the report)
    (root / "m1" / "results.json").write_text(json.dumps({"steps": 3, "seconds": 2.0, "args": {
        "model": str(dirs[0]), "group_size": 8, "algorithm": "grpo"}}))
    return dirs


def test_compares_models_on_the_same_transitions(micro_models, tmp_path):
    from benchmarks.language_world_models import main

    out = tmp_path / "lwm.json"
    assert main(["--models", f"a={micro_models[0]}", f"b={micro_models[1]}", f"again={micro_models[0]}",
                 "--transitions", "3", "--max-new-tokens", "8", "--threads", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    # the MiniWeb run docs/results.md shows holds every field the benchmark writes now
    gaps = sections.missing_fields(sections.load("web_world_models_site.json"), report)
    assert gaps == [], f"rerun the committed run: it lacks {gaps}"
    a, b, again = (report["models"][k] for k in ("a", "b", "again"))
    assert len(a["rewards"]) == 3 and a["n"] == 3 and "versus_first" not in a
    assert [(t["stage"], t["steps"]) for t in a["training"]] == [("SFT", 7)]
    assert [(t["stage"], t["steps"]) for t in b["training"]] == [("SFT", 7), ("GRPO", 3)]
    # the same model answers the same transitions the same way (greedy): no difference
    assert again["rewards"] == a["rewards"] and again["versus_first"]["reward"]["mean_difference"] == 0
    assert "mean_difference" in b["versus_first"]["reward"]
    assert report["baselines"] == {} and report["seed_groups"] == {}  # MiniWeb has no "nothing changes" answer
    assert report["command"].startswith("python -m benchmarks.language_world_models --models a=")
    assert "| again |" in out.with_suffix(".md").read_text()


def test_bad_model_specs_fail_with_the_reason(micro_models, tmp_path):
    from benchmarks.language_world_models import main

    with pytest.raises(SystemExit, match="NAME=DIR"):
        main(["--models", str(micro_models[0]), "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="config.json missing"):
        main(["--models", f"a={tmp_path}", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="twice"):
        main(["--models", f"a={micro_models[0]}", f"a={micro_models[1]}", "--out", str(tmp_path / "x.json")])


def test_paired_difference_and_test():
    from rlvr_envs.integrations.hf import paired_test as paired

    result = paired([0.0, 0.5, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0])
    assert result["mean_difference"] == pytest.approx(0.25)
    assert 0 < result["p_value"] < 1
    with pytest.raises(ValueError):
        paired([0.0], [0.0, 1.0])


def test_text_games_get_the_nothing_changes_baseline_and_seed_groups(tmp_path):
    from benchmarks.language_world_models import main
    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import build_text_model, save_final

    task = task_from_env_id("RLVRWorld/MiniTextWorld-v0", split="test", size=8)
    dirs = {name: save_final(build_text_model(task.tokenizer, "micro", seed=seed), task.tokenizer, tmp_path / name)
            for name, seed in (("sft", 0), ("rlvr_seed0", 1), ("rlvr_seed1", 2))}
    out = tmp_path / "mtw.json"
    assert main(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--models", *(f"{k}={v}" for k, v in dirs.items()),
                 "--transitions", "8", "--max-new-tokens", "4", "--threads", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    changed = report["changed"]
    assert len(changed) == 8 and 0 < sum(changed) < 8
    baseline = report["baselines"]["nothing_changes"]
    # right on every unchanged transition, wrong on every changed one
    assert baseline["accuracy_unchanged"] == 1.0 and baseline["accuracy_changed"] == 0.0
    assert baseline["solved"] == [not c for c in changed]
    # untrained micro models solve nothing: the baseline is ahead only on the unchanged transitions
    assert baseline["versus_first"]["exact_unchanged"]["mean_difference"] == 1.0
    assert baseline["versus_first"]["exact_changed"]["mean_difference"] == 0.0
    group = report["seed_groups"]["rlvr"]
    assert group["members"] == ["rlvr_seed0", "rlvr_seed1"]
    assert group["accuracy_changed"]["values"] == [0.0, 0.0] and group["changed_vs_first"]["mean"] == 0.0
    text = out.with_suffix(".md").read_text()
    assert "| nothing_changes (baseline) |" in text and "| rlvr | 2 |" in text


def test_sampled_answers_report_pass_at_k_and_per_sample_accuracy(tmp_path, monkeypatch):
    import rlvr_envs.integrations.hf as hf
    from benchmarks.language_world_models import main
    from rlvr_envs.registration import task_from_env_id
    from tests.samples import gold_for_first_samples
    from trainers.sft import build_text_model, save_final

    task = task_from_env_id("RLVRWorld/MiniTextWorld-v0", split="test", size=8)
    model = save_final(build_text_model(task.tokenizer, "micro"), task.tokenizer, tmp_path / "m")
    calls: list[list[int]] = []
    monkeypatch.setattr(hf, "generate", gold_for_first_samples(lambda i: i % 4, calls))  # 0..3 of 3 right
    out = tmp_path / "sampled.json"
    assert main(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--models", f"m={model}", "--transitions", "8",
                 "--samples", "3", "--temperature", "0.7", "--threads", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    sampled, changed = report["models"]["m"]["sampled"], report["changed"]
    counts = [min(i % 4, 3) for i in range(8)]
    assert sampled["solved_counts"] == counts and sampled["samples"] == 3 and sampled["temperature"] == 0.7
    on_changed = [k for k, c in zip(counts, changed) if c]
    assert sampled["pass_at_k_changed"] == pytest.approx(sum(k > 0 for k in on_changed) / len(on_changed))
    assert sampled["sample_accuracy_changed"] == pytest.approx(sum(on_changed) / (3 * len(on_changed)))
    assert sampled["pass_at_k"] == pytest.approx(6 / 8) and sampled["sample_accuracy"] == pytest.approx(12 / 24)
    assert "| m | 0.750 |" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit, match="--temperature > 0"):
        main(["--env-id", "RLVRWorld/MiniTextWorld-v0", "--models", f"m={model}", "--samples", "2",
              "--temperature", "0", "--out", str(out)])
