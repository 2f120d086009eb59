"""The results pages are generated from benchmarks/results/ (benchmarks/readme_results.py):
docs/results.md holds every result, README.md the goals summary; both fail here when stale."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from benchmarks import readme_results as rr

# Subsections whose results are committed today; they must stay measured.
COMMITTED = {"`rlvr-world demo`", "PushT CEM planning against the blind-CEM floor",
             "Candidate ranking: learned vs true simulator", "RLVR on the PushT world model",
             "GRPO on PushT multi-step",
             "PushT video world models", "Compressed multi-step tokenizer", "KV-cached generation", "Env overhead",
             "Reward throughput", "Web verifier", "Hostile inputs", "PushT data", "PushT success judge",
             "Best-of-N test-time scaling", "GRPO ablations", "Text-game world models on MiniTextWorld",
             "`rlvr-world demo --domain text`", "Table 3 analogue",
             "Text-game world models after longer SFT", "Text-game GRPO on filtered prompts",
             "Text-game world models, sampled", "Text-game GRPO on filtered changed and unchanged prompts",
             "Text-game GRPO, filtered changed prompts then both kinds", "Text-game world models that ship",
             "Text-game shipped longer-SFT model, sampled", "Text-game GRPO from the shipped longer-SFT model",
             "Text-game GRPO with 16 samples per prompt",
             "Longer MLE and the pose reward: action following",
             "PushT CEM planning with the longer-trained models", "PushT CEM planning with the pose objective",
             "Action following over several chunks", "PushT CEM planning after GRPO on the model's own rollouts",
             "PushT CEM planning after a third round of GRPO on the model's own rollouts",
             "PushT CEM planning after rollout GRPO with the agent's error weighted 3x",
             "PushT CEM planning after rollout GRPO, retrained", "Action following of the retrained models",
             "Action following after MLE on CEM-like episodes", "PushT CEM planning after MLE on CEM-like episodes",
             "PushT CEM planning with the blurred-pixels objective", "GPU check on one H200"}


def _block(readme: str) -> str:
    start = readme.index(rr.START) + len(rr.START) + 1
    return readme[start:readme.index(rr.END, start)]


def test_generated_pages_are_in_sync():
    page = rr.PAGE.read_text()
    assert page.count(rr.START) == 1 and page.count(rr.END) == 1
    assert _block(page) == rr.render(), "docs/results.md is stale: run `python -m benchmarks.readme_results`"
    readme = rr.README.read_text()
    assert readme.count(rr.SUMMARY_START) == 1 and rr.START not in readme
    assert rr.updated(readme, rr.SUMMARY_START, rr.SUMMARY_END, rr.render_summary) == readme, \
        "README's results summary is stale: run `python -m benchmarks.readme_results`"
    assert rr.main(["--check"]) == 0


def test_readme_is_a_front_door():
    """At most 300 lines, the summary at most 15, and every docs page it links exists."""
    readme = rr.README.read_text()
    assert len(readme.splitlines()) <= 300
    summary = readme.split(rr.SUMMARY_START)[1].split(rr.SUMMARY_END)[0]
    assert len(summary.strip().splitlines()) <= 15
    linked = set(re.findall(r"\]\((docs/[\w.]+\.md)", readme))
    assert linked >= {"docs/results.md", "docs/recipes.md", "docs/environments.md", "docs/architecture.md",
                      "docs/scale_out.md"}
    # docs/scale_out.md is the GPU work's page (its own issue); every other linked page is here
    assert all((rr.ROOT / page).is_file() for page in linked - {"docs/scale_out.md"})


def test_every_subsection_names_an_existing_results_file():
    for section in rr.SECTIONS:
        text = section.render()
        if rr.NOT_MEASURED in text:
            assert section.title not in COMMITTED, f"{section.title}: its committed results file is gone"
            assert f"`{rr.SHOWN}/{section.shown or section.files[0]}`" in text
            continue
        paths = section.paths()
        assert paths, section.title
        for relative in paths:
            assert (rr.RESULTS / relative).is_file()
            if relative in section.files or section.pattern:
                assert f"`{rr.SHOWN}/{relative}`" in text, f"{section.title} does not name {relative}"
        assert "`" in text.split("(", 1)[1], f"{section.title} names no command"
    # every results path README's block cites exists, except in a "not yet measured" paragraph
    for paragraph in rr.render().split("\n\n"):
        paragraph = paragraph.replace("\n", " ")  # wrapped lines may split the phrase
        if rr.NOT_MEASURED in paragraph:
            continue
        for cited in re.findall(rf"{rr.SHOWN}/[\w./-]+", paragraph):
            path = rr.ROOT / cited.rstrip(".")  # a file, or a command's --out folder or file stem
            assert path.is_file() or path.is_dir() or path.with_name(path.name + ".json").is_file(), cited


def test_a_missing_results_file_renders_not_yet_measured(monkeypatch, tmp_path):
    monkeypatch.setattr(rr, "RESULTS", tmp_path)
    text = rr.render().replace("\n", " ")
    for section in rr.SECTIONS:
        assert section.render().endswith("writes it."), section.title
    assert text.count(rr.NOT_MEASURED) == len(rr.SECTIONS)
    # one file back: only its subsection is measured
    shutil.copy(rr.ROOT / "benchmarks" / "results" / "video_generation.json", tmp_path)
    assert rr.render().replace("\n", " ").count(rr.NOT_MEASURED) == len(rr.SECTIONS) - 1
    assert "**KV-cached generation** (`python -m benchmarks.video_generation`" in rr.render().replace("\n", " ")


def test_sections_still_to_come_render_their_results(monkeypatch, tmp_path):
    monkeypatch.setattr(rr, "RESULTS", tmp_path)
    (tmp_path / "pusht_planning").mkdir()
    (tmp_path / "pusht_planning" / "results.json").write_text(json.dumps({
        "command": "rlvr-world plan --planners base,random --out X", "machine": "x86_64, cpu",
        "cem": {"horizon": 5, "samples": 32, "top_k": 4, "iterations": 3, "init_std": 60.0, "min_std": 1.0},
        "mpc": {"rounds": 2, "execute": None}, "success": "position error < 20 px",
        "summary": {"base": {"episodes": 50, "successes": 21, "success_rate": 0.42, "ci95": [0.29, 0.56],
                             "seconds_per_episode": 12.25},
                    "random": {"episodes": 50, "successes": 3, "success_rate": 0.06, "ci95": [0.02, 0.16],
                               "seconds_per_episode": 1.0}}}))
    (tmp_path / "real2sim" / "mle").mkdir(parents=True)
    (tmp_path / "real2sim" / "mle" / "results.json").write_text(json.dumps({
        "command": "rlvr-world policy-eval --out X", "model": "pusht_single_step_model", "judge": "frame judge",
        "policies": [{"policy": "expert", "learned_success": 0.7, "real_success": 0.8, "real_env_success": 0.9,
                      "starts": 10},
                     {"policy": "random", "learned_success": 0.1, "real_success": 0.0, "real_env_success": 0.0,
                      "starts": 10}],
        "summary": {"pearson": 0.987, "mmrv": 0.0, "pearson_vs_env_success": 0.95, "mmrv_vs_env_success": 0.0,
                    "judge_vs_env_agreement": 0.9}}))
    judge = json.loads((rr.ROOT / "benchmarks" / "results" / "pusht_success_judge.json").read_text())
    judge["summary"]["success"] = [
        {"bar": 0.8, "env_successes": 40, "judge_successes": 41, "both": 39, "precision": 39 / 41,
         "recall": 0.975},
        {"bar": 0.95, "env_successes": 4, "judge_successes": 0, "both": 0, "precision": None, "recall": 0.0}]
    (tmp_path / "pusht_success_judge.json").write_text(json.dumps(judge))
    (tmp_path / "rl_algorithms.json").write_text(json.dumps({
        "command": "python -m benchmarks.rl_algorithms --data D", "machine": "x86_64, cpu",
        "env_id": "RLVRWorld/PushT-SingleStep-v0",
        "config": {"steps": 40, "prompts_per_step": 4, "group_size": 8, "lr": 1e-4, "beta": 1e-3, "eval_windows": 64,
                   "sb3_eval": 16},
        "methods": {"rloo": {"seeds": {"0": {"train_seconds": 100.0, "start_sampled_mae": 0.009,
                                             "final_sampled_mae": 0.008}},
                             "final_sampled_mae_mean": 0.008, "final_sampled_mae_spread": 0.0},
                    "sb3_ppo": {"seeds": {"0": {"train_seconds": 90.0, "start_mae": 0.2, "final_mae": 0.15}},
                                "final_mae_mean": 0.15}},
        "best_of_n_sampled_mae": {"8": 0.006}}))
    (tmp_path / "web_agent").mkdir()
    (tmp_path / "web_agent" / "results.json").write_text(json.dumps({
        "command": "python -m benchmarks.web_agent --episodes 100", "machine": "x86_64, 2 cores", "date": "today",
        "config": {"episodes": 100, "k": 3, "noise": 0.7}, "skipped": {"rlvr": "--rlvr-model not given"},
        "summary": {"oracle": {"episodes": 100, "successes": 91, "success_rate": 0.91, "ci95": [0.84, 0.95],
                               "unparsable": 0, "predictions": 700, "seconds_per_episode": 0.05}}}))
    agent = {"episodes": 100, "ci95": [0.1, 0.3], "unparsable": 1, "predictions": 700, "seconds_per_episode": 20.0}
    (tmp_path / "web_agent_merged").mkdir()
    merged = {"command": ["python -m benchmarks.web_agent --agents base,oracle --out A",
                          "python -m benchmarks.web_agent --agents rlvr --out B"], "runs": ["A", "B"],
              "machine": "x86_64, 2 cores", "date": "today", "config": {"episodes": 100, "k": 3, "noise": 0.7},
              "summary": {"policy": {**agent, "successes": 31, "success_rate": 0.31},
                          "base": {**agent, "successes": 20, "success_rate": 0.20},
                          "rlvr": {**agent, "successes": 25, "success_rate": 0.25},
                          "oracle": {**agent, "successes": 91, "success_rate": 0.91}},
              "paired": {"base vs rlvr": {"episodes": 100, "base_only": 5, "rlvr_only": 10, "p_mcnemar": 0.3}}}
    merged_text = rr._web_agent([{**merged, "_file": "web_agent/results.json"}]).replace("\n", " ")
    assert "joined by `python -m benchmarks.web_agent --merge A B`" in merged_text
    assert "is **met**: RLVR 0.25 vs base 0.20, oracle 0.91" in merged_text
    assert "only the RLVR agent succeeded in 10 and only the base agent in 5 (McNemar p 0.30)" in merged_text
    assert "With base and rlvr world models the agent does worse than the policy alone (0.31)" in merged_text
    merged["summary"]["rlvr"]["success_rate"] = 0.2
    assert "**not met**" in rr._web_agent([{**merged, "_file": "web_agent/results.json"}])
    model = {"accuracy": 0.1, "accuracy_changed": 0.05, "accuracy_unchanged": 0.9, "n_changed": 60,
             "n_unchanged": 4, "reward": 0.4, "parsed": 1.0,
             "training": [{"stage": "SFT", "steps": 900, "seconds": 1800.0}, {"stage": "SFT", "steps": 700,
                                                                          "seconds": 1500.0}]}
    (tmp_path / "web_world_models.json").write_text(json.dumps({
        "command": "python -m benchmarks.language_world_models --models sft=A rlvr=B", "machine": "x86_64, 2 cores",
        "date": "today", "config": {"env_id": "RLVRWorld/MiniWeb-v0", "transitions": 64, "reward": "F1"},
        "models": {"sft": model, "rlvr": {**model, "reward": 0.45, "training": None, "versus_first": {
            "mean_difference": 0.05, "standard_error": 0.01, "p_value": 0.003}}}}))
    text = rr.render()
    assert "| sft | SFT 900 steps (30 min) then SFT 700 steps (25 min) | 0.400 | 0.100 | 0.050 (60) | 0.900 (4) |  |  |" in text
    assert "| rlvr |  | 0.450 | 0.100 | 0.050 (60) | 0.900 (4) | +0.050 ± 0.010 (p 3e-3) |  |" in text
    assert "| + the true simulator (oracle) | 100 | 91 | 0.91 | [0.84, 0.95] | 0 / 700 | 0.05 |" in text
    assert "Agent rlvr not run: --rlvr-model not given." in text.replace("\n", " ")
    assert "| rloo | 1 | 0.00900 | 0.00800 ± 0.00000 | 100 |" in text
    assert "| best of 8 samples of the start model (oracle selection, no training) |  |  | 0.00600 | 0 |" in text
    assert "| CEM, MLE base world model | 50 | 21 | 0.42 | [0.29, 0.56] | 12.2 |" in text
    assert "horizon 5, 32 samples, top 4, 3 iterations, 2 plans per episode" in text.replace("\n", " ")
    assert "| expert | 0.70 | 0.80 | 0.90 | 10 |" in text
    assert "Pearson 0.987, MMRV 0.000" in text.replace("\n", " ")
    assert "`benchmarks/results/real2sim/mle/results.json`" in text.replace("\n", " ")
    assert "| 0.8 | 40 | 41 | 39 | 0.951 | 0.975 |" in text
    assert "| 0.95 | 4 | 0 | 0 | n/a | 0.000 |" in text
    assert "success is **not** reliable: precision n/a, recall 0.000" in text.replace("\n", " ")
    goal = next(line for line in rr._goals().splitlines() if line.startswith("| PushT success judge"))
    assert "| 95% each | **not met** at 0.95; met at bars 0.8 |" in goal


def test_language_sections_add_the_sampled_answers_table_when_a_run_sampled():
    model = {"accuracy": 0.6, "accuracy_changed": 0.3, "accuracy_unchanged": 0.95, "n_changed": 80,
             "n_unchanged": 120, "reward": 0.5, "parsed": 1.0}
    sampled = {"samples": 6, "temperature": 0.7, "sample_accuracy_changed": 0.25, "pass_at_k_changed": 0.5,
               "sample_accuracy_unchanged": 0.9, "pass_at_k_unchanged": 1.0}
    data = {"command": "python -m benchmarks.language_world_models --samples 6", "machine": "x86_64", "date": "today",
            "config": {"env_id": "RLVRWorld/MiniTextWorld-v0", "transitions": 200, "reward": ""},
            "models": {"sft": {**model, "sampled": sampled}, "rlvr": model}, "_file": "x.json"}
    text = rr._language_world_models([data])
    assert "6 per transition at temperature 0.7" in text
    assert "| sft | 0.300 | 0.250 | 0.500 | 0.900 | 1.000 |" in text
    assert "| rlvr | 0.300 |" not in text  # greedy only: no sampled row
    del data["models"]["sft"]["sampled"]
    assert "Sampled answers" not in rr._language_world_models([data])


def test_check_reports_a_stale_block_and_the_rewrite_touches_only_the_block(tmp_path, capsys):
    page, readme = tmp_path / "results.md", tmp_path / "README.md"
    page.write_text(f"# title\n\n## Results\n\n{rr.START}\nold numbers\n{rr.END}\n\n## After\n\nkept\n")
    readme.write_text(f"# front\n\n{rr.SUMMARY_START}\nold goals\n{rr.SUMMARY_END}\n\n## Docs\n")
    paths = ["--page", str(page), "--readme", str(readme)]
    assert rr.main(["--check", *paths]) == 1
    out = capsys.readouterr().out
    assert "-old numbers" in out and "-old goals" in out
    assert rr.main(paths) == 0
    text = page.read_text()
    assert text.startswith(f"# title\n\n## Results\n\n{rr.START}\n")
    assert text.endswith(f"{rr.END}\n\n## After\n\nkept\n")
    assert _block(text) == rr.render()
    assert readme.read_text() == f"# front\n\n{rr.SUMMARY_START}\n{rr.render_summary()}{rr.SUMMARY_END}\n\n## Docs\n"
    assert rr.main(["--check", *paths]) == 0
    # a page without the closing marker yet: the block ends at the next heading
    page.write_text(f"intro\n{rr.START}\nold\n\n## Next\n")
    rr.main(paths)
    assert page.read_text() == f"intro\n{rr.START}\n{rr.render()}{rr.END}\n## Next\n"


@pytest.mark.parametrize("p, shown", [(0.1468, "0.15"), (0.0005366, "5e-4"), (3.08e-39, "3e-39"),
                                      (9.53e-44, "1e-43"), (float("nan"), "n/a")])
def test_p_values_are_written_like_the_rest_of_readme(p, shown):
    assert rr._p(p) == shown


def _planning_table(folder, base: int, rlvr: int, true: int, seconds: float = 10.0):
    def row(successes: int) -> dict:
        return {"episodes": 50, "successes": successes, "success_rate": successes / 50, "ci95": [0.0, 1.0],
                "seconds_per_episode": seconds}
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"summary": {"base": row(base), "rlvr": row(rlvr),
                                                                 "true_sim": row(true)}}))


def _text_file(path, recipes: dict[str, tuple[float, float]], first_unchanged: float = 0.96):
    """recipes: name -> (mean gain on changed transitions, mean accuracy on unchanged ones)."""
    groups = {name: {"members": [f"{name}_seed{i}" for i in range(3)],
                     "reward": {"values": [float(len(name)), 0.5, 0.5]},  # distinct groups, distinct rewards
                     "changed_vs_first": {"mean": gain, "std": 0.01},
                     "accuracy_unchanged": {"mean": unchanged}} for name, (gain, unchanged) in recipes.items()}
    path.write_text(json.dumps({"models": {"sft": {"accuracy_unchanged": first_unchanged}}, "seed_groups": groups}))


def test_goals_table_reads_each_goal_from_its_files(monkeypatch, tmp_path):
    monkeypatch.setattr(rr, "RESULTS", tmp_path)
    assert rr._goals() == ""  # nothing measured: no table, and no "not yet measured" either
    _planning_table(tmp_path / "pusht_planning", base=5, rlvr=9, true=12)
    _planning_table(tmp_path / "pusht_planning_merged", base=5, rlvr=9, true=12)  # the same runs merged again
    _planning_table(tmp_path / "pusht_planning_other", base=6, rlvr=4, true=12, seconds=11.0)
    text = rr._goals()
    assert "best of 2 tables: 9 vs 12 of 50 (75%); RLVR >= base in 1 of 2" in text and "**not met**" in text
    _planning_table(tmp_path / "pusht_planning_better", base=5, rlvr=10, true=12, seconds=12.0)
    row = next(line for line in rr._goals().split("\n") if "CEM planning" in line)
    assert "10 vs 12 of 50 (83%)" in row and "| met |" in row
    # a text recipe that gains by giving up unchanged transitions is not the one shown
    _text_file(tmp_path / "text_world_models_a.json", {"changed_only": (0.12, 0.90), "balanced": (0.04, 0.955)})
    row = next(line for line in rr._goals().split("\n") if "MiniTextWorld" in line)
    assert "(1 keep unchanged ones): balanced +0.040" in row and "**not met**" in row
    _text_file(tmp_path / "text_world_models_b.json", {"bigger": (0.11, 0.97)})
    row = next(line for line in rr._goals().split("\n") if "MiniTextWorld" in line)
    assert "best of 3 recipes and steps" in row and "bigger +0.110" in row and "| met |" in row


def _real2sim_run(folder, model: str, starts: int, pearson: float, policies=("expert", "toward_centre", "circler"),
                  temperature: str = "0.0", lead_from: str | None = None):
    """A results.json of policy-eval with the recipe's settings: the first policy succeeds from
    the first half of the starts in both simulators, the others never (`lead_from` None: a run
    from before the option, whose starts counted from the episodes' ends, as the default does)."""
    rollouts = [{"policy": p, "start": s, "env_success": None if sim == "learned" else ok, "judged_success": ok}
                for p in policies for s in range(starts) for sim in ("learned", "real")
                for ok in [p == policies[0] and s < starts // 2]]
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({
        "command": f"rlvr-world policy-eval --heldout-episodes 12 --starts {starts} --lead 60 --start-from history "
                   f"--judge-frames rendered --max-steps 20 --noise 0,10,25,50 --success any --success-coverage 0.8 "
                   f"--temperature {temperature} --seed 0 --out X",
        "model": f"/somewhere/{model}", "rollouts": rollouts, "summary": {"pearson": pearson, "mmrv": 0.1},
        "policies": [{"policy": p, "starts": starts} for p in policies],
        **({"lead_from": lead_from} if lead_from else {})}))


def test_the_real2sim_goal_is_judged_at_the_most_starts_of_the_default_simulator(monkeypatch, tmp_path):
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL

    monkeypatch.setattr(rr, "RESULTS", tmp_path)
    _real2sim_run(tmp_path / "real2sim" / "ten", DEFAULT_MODEL.name, 10, 0.85)
    _real2sim_run(tmp_path / "real2sim" / "other_model", "wm_other", 40, 0.99)  # not what a user gets
    _real2sim_run(tmp_path / "real2sim" / "no_recipe_policies", DEFAULT_MODEL.name, 40, 0.99, ("expert", "random"))
    _real2sim_run(tmp_path / "real2sim" / "sampled", DEFAULT_MODEL.name, 40, 0.99, temperature="1.0")  # not a default
    _real2sim_run(tmp_path / "real2sim" / "from_success", DEFAULT_MODEL.name, 40, 0.99, lead_from="success")  # option
    row = next(line for line in rr._goals().split("\n") if "Real2Sim" in line)
    assert "10 starts: Pearson 0.850 (1.00 to 1.00)" in row and "| met |" in row and "0.99" not in row
    _real2sim_run(tmp_path / "real2sim" / "forty", DEFAULT_MODEL.name, 40, 0.6)
    row = next(line for line in rr._goals().split("\n") if "Real2Sim" in line)
    assert "10 starts: Pearson 0.850 (1.00 to 1.00); 40 starts: Pearson 0.600" in row
    assert "**not met**" in row and "real2sim/forty/results.json" in row


def test_a_run_record_names_the_machine_and_flags_a_shared_one():
    record = {"machine": "x86_64, 2 cores, CPU only", "load": {"before": 3.1, "after": 4.0, "busy": True}}
    assert rr._machine({"run": record, "machine": "old"}) == "x86_64, 2 cores, CPU only (shared: load 3.1 -> 4.0)"
    assert rr._machine({"run": {**record, "load": {"busy": False}}}) == "x86_64, 2 cores, CPU only"
    assert rr._machine({"machine": "x86_64, 2 threads, CPU"}) == "x86_64, 2 threads, CPU"  # older files
