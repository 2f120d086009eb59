"""The results pages are assembled from benchmarks/results/ (benchmarks/readme_results.py, each
benchmark rendering its own sections): docs/results.md holds what holds today, docs/experiments.md
and docs/experiments/ every earlier run, README.md the goals summary; all fail here when stale."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest

from benchmarks import goals, language_world_models, real2sim_compare, web_agent
from benchmarks import readme_results as rr
from benchmarks import sections as fmt

# Subsections whose results are committed today; they must stay measured.
COMMITTED = {"`rlvr-world demo`", "GRPO reward: pixels and objects", "Text SFT speed", "PushT CEM planning against the blind-CEM floor",
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
             "PushT CEM planning with the blurred-pixels objective", "GPU check on one H200",
             "GRPO reward variants: other weights and steps", "Real2Sim on PushT with the default simulator",
             "Real2Sim on PushT"}


def _goals() -> str:
    return goals.goals_table(rr.goal_rows(), "where")


def _everything() -> str:
    """Every section, as the pages show them."""
    return "\n\n".join(fmt.wrap(section.render()) for section in rr.SECTIONS) + "\n"


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
    assert readme.count(rr.SCALE_START) == 1
    assert rr.updated(readme, rr.SCALE_START, rr.SCALE_END, rr.render_gpu_summary) == readme, \
        "README's GPU summary (Scale out) is stale: run `python -m benchmarks.readme_results`"
    assert rr.main(["--check"]) == 0


def test_each_section_is_on_one_page_and_the_results_page_stays_short():
    """Every section is either a result that holds today (docs/results.md, under 600 lines) or an
    experiment with its one-line finding (docs/experiments/); the assembler stays an assembler."""
    current = [title for _, titles in rr.CURRENT for title in titles]
    earlier = [title for _, _, titles in rr.EXPERIMENTS for title in titles]
    assert sorted(current + earlier) == sorted(section.title for section in rr.SECTIONS)  # each once
    for section in rr.by_title(*earlier):
        assert section.finding and "\n" not in section.finding, section.title
        assert f"#{fmt.anchor(section.title)})" in rr.EXPERIMENTS_PAGE.read_text(), section.title
    assert len(rr.PAGE.read_text().splitlines()) < 600
    assert len((fmt.ROOT / "benchmarks" / "readme_results.py").read_text().splitlines()) < 300
    for question, _ in rr.CURRENT:
        assert f"## {question}" in rr.PAGE.read_text()


def test_a_committed_result_that_lacks_a_field_its_benchmark_now_writes_is_caught():
    fresh = {"models": {"rlvr": {"sampled": {"mae": 0.1, "block_error": 3.0}}}, "rows": [{"a": 1, "b": 2}]}
    assert fmt.missing_fields(fresh, fresh) == []
    older = {"models": {"rlvr": {"sampled": {"mae": 0.2}}}, "rows": [{"a": 1}], "retired": 1}
    assert fmt.missing_fields(older, fresh) == ["/models/rlvr/sampled/block_error", "/rows/0/b"]
    # models named otherwise in a tiny run are compared with a committed model's record
    renamed = {"models": {"tiny": {"sampled": {"mae": 0.1, "block_error": 3.0}}}, "rows": [{"a": 1, "b": 2}]}
    assert fmt.missing_fields(older, renamed) == ["/models/tiny/sampled/block_error", "/rows/0/b"]
    assert fmt.missing_fields(fresh, renamed) == []
    # a mapping of names to paths is data only where the caller says so
    paths = {"models": {"base": "/x"}}
    assert fmt.missing_fields({"models": {"mle": "/y"}}, paths) == ["/models/base"]
    assert fmt.missing_fields({"models": {"mle": "/y"}}, paths, names=("/models",)) == []


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
    assert all((fmt.ROOT / page).is_file() for page in linked - {"docs/scale_out.md"})


def test_every_subsection_names_an_existing_results_file():
    for section in rr.SECTIONS:
        text = section.render()
        if fmt.NOT_MEASURED in text:
            assert section.title not in COMMITTED, f"{section.title}: its committed results file is gone"
            assert f"`{fmt.SHOWN}/{section.shown or section.files[0]}`" in text
            continue
        paths = section.paths()
        assert paths, section.title
        for relative in paths:
            assert (fmt.RESULTS / relative).is_file()
            if relative in section.files or section.pattern:
                assert f"`{fmt.SHOWN}/{relative}`" in text, f"{section.title} does not name {relative}"
        assert "`" in text.split("(", 1)[1], f"{section.title} names no command"
    # every results path a page cites exists, except in a "not yet measured" paragraph
    for paragraph in _everything().split("\n\n"):
        paragraph = paragraph.replace("\n", " ")  # wrapped lines may split the phrase
        if fmt.NOT_MEASURED in paragraph:
            continue
        for cited in re.findall(rf"{fmt.SHOWN}/[\w./-]+", paragraph):
            path = fmt.ROOT / cited.rstrip(".")  # a file, or a command's --out folder or file stem
            assert path.is_file() or path.is_dir() or path.with_name(path.name + ".json").is_file(), cited


def test_a_missing_results_file_renders_not_yet_measured(monkeypatch, tmp_path):
    monkeypatch.setattr(fmt, "RESULTS", tmp_path)
    text = _everything().replace("\n", " ")
    for section in rr.SECTIONS:
        assert section.render().endswith("writes it."), section.title
    assert text.count(fmt.NOT_MEASURED) == len(rr.SECTIONS)
    # one file back: only its subsection is measured
    shutil.copy(fmt.ROOT / "benchmarks" / "results" / "video_generation.json", tmp_path)
    assert _everything().replace("\n", " ").count(fmt.NOT_MEASURED) == len(rr.SECTIONS) - 1
    assert "**KV-cached generation** (`python -m benchmarks.experiments.video_generation`" in rr.render().replace("\n", " ")


def test_sections_still_to_come_render_their_results(monkeypatch, tmp_path):
    monkeypatch.setattr(fmt, "RESULTS", tmp_path)
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
    judge = json.loads((fmt.ROOT / "benchmarks" / "results" / "pusht_success_judge.json").read_text())
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
    merged_text = web_agent.section([{**merged, "_file": "web_agent/results.json"}]).replace("\n", " ")
    assert "joined by `python -m benchmarks.web_agent --merge A B`" in merged_text
    assert "is **met**: RLVR 0.25 vs base 0.20, oracle 0.91" in merged_text
    assert "only the RLVR agent succeeded in 10 and only the base agent in 5 (McNemar p 0.30)" in merged_text
    assert "With base and rlvr world models the agent does worse than the policy alone (0.31)" in merged_text
    merged["summary"]["rlvr"]["success_rate"] = 0.2
    assert "**not met**" in web_agent.section([{**merged, "_file": "web_agent/results.json"}])
    model = {"accuracy": 0.1, "accuracy_changed": 0.05, "accuracy_unchanged": 0.9, "n_changed": 60,
             "n_unchanged": 4, "reward": 0.4, "parsed": 1.0,
             "training": [{"stage": "SFT", "steps": 900, "seconds": 1800.0}, {"stage": "SFT", "steps": 700,
                                                                          "seconds": 1500.0}]}
    (tmp_path / "web_world_models.json").write_text(json.dumps({
        "command": "python -m benchmarks.language_world_models --models sft=A rlvr=B", "machine": "x86_64, 2 cores",
        "date": "today", "config": {"env_id": "RLVRWorld/MiniWeb-v0", "transitions": 64, "reward": "F1"},
        "models": {"sft": model, "rlvr": {**model, "reward": 0.45, "training": None, "versus_first": {
            "mean_difference": 0.05, "standard_error": 0.01, "p_value": 0.003}}}}))
    text = _everything()
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
    goal = next(line for line in _goals().splitlines() if line.startswith("| PushT success judge"))
    # 0.951 and 0.975 at bar 0.8 from 41 and 40 frames: their 95% intervals reach below 0.95
    assert "precision n/a (no interval), recall 0.000 [0.00, 0.49]" in goal
    assert "| >= 0.95 each | **not met** (no interval) |" in goal


def test_language_sections_add_the_sampled_answers_table_when_a_run_sampled():
    model = {"accuracy": 0.6, "accuracy_changed": 0.3, "accuracy_unchanged": 0.95, "n_changed": 80,
             "n_unchanged": 120, "reward": 0.5, "parsed": 1.0}
    sampled = {"samples": 6, "temperature": 0.7, "sample_accuracy_changed": 0.25, "pass_at_k_changed": 0.5,
               "sample_accuracy_unchanged": 0.9, "pass_at_k_unchanged": 1.0}
    data = {"command": "python -m benchmarks.language_world_models --samples 6", "machine": "x86_64", "date": "today",
            "config": {"env_id": "RLVRWorld/MiniTextWorld-v0", "transitions": 200, "reward": ""},
            "models": {"sft": {**model, "sampled": sampled}, "rlvr": model}, "_file": "x.json"}
    text = language_world_models.section([data])
    assert "6 per transition at temperature 0.7" in text
    assert "| sft | 0.300 | 0.250 | 0.500 | 0.900 | 1.000 |" in text
    assert "| rlvr | 0.300 |" not in text  # greedy only: no sampled row
    del data["models"]["sft"]["sampled"]
    assert "Sampled answers" not in language_world_models.section([data])


def test_check_reports_a_stale_block_and_the_rewrite_touches_only_the_block(tmp_path, capsys):
    page, readme = tmp_path / "results.md", tmp_path / "README.md"
    page.write_text(f"# title\n\n## Results\n\n{rr.START}\nold numbers\n{rr.END}\n\n## After\n\nkept\n")
    readme.write_text(f"# front\n\n{rr.SUMMARY_START}\nold goals\n{rr.SUMMARY_END}\n\n## Scale out\n\n"
                      f"{rr.SCALE_START}\nold GPU runs\n{rr.SCALE_END}\n\n## Docs\n")
    paths = ["--page", str(page), "--readme", str(readme)]
    assert rr.main(["--check", *paths]) == 1
    out = capsys.readouterr().out
    assert "-old numbers" in out and "-old goals" in out and "-old GPU runs" in out
    assert rr.main(paths) == 0
    text = page.read_text()
    assert text.startswith(f"# title\n\n## Results\n\n{rr.START}\n")
    assert text.endswith(f"{rr.END}\n\n## After\n\nkept\n")
    assert _block(text) == rr.render()
    assert readme.read_text() == (f"# front\n\n{rr.SUMMARY_START}\n{rr.render_summary()}{rr.SUMMARY_END}\n\n"
                                  f"## Scale out\n\n{rr.SCALE_START}\n{rr.render_gpu_summary()}{rr.SCALE_END}\n\n"
                                  "## Docs\n")
    assert rr.main(["--check", *paths]) == 0
    # a page without the closing marker yet: the block ends at the next heading
    page.write_text(f"intro\n{rr.START}\nold\n\n## Next\n")
    rr.main(paths)
    assert page.read_text() == f"intro\n{rr.START}\n{rr.render()}{rr.END}\n## Next\n"


@pytest.mark.parametrize("p, shown", [(0.1468, "0.15"), (0.0005366, "5e-4"), (3.08e-39, "3e-39"),
                                      (9.53e-44, "1e-43"), (float("nan"), "n/a")])
def test_p_values_are_written_like_the_rest_of_readme(p, shown):
    assert fmt.p_value(p) == shown


def _planning_table(folder, base: int, rlvr: int, true: int, seconds: float = 10.0):
    def row(successes: int) -> dict:
        return {"episodes": 50, "successes": successes, "success_rate": successes / 50, "ci95": [0.0, 1.0],
                "seconds_per_episode": seconds}
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"summary": {"base": row(base), "rlvr": row(rlvr),
                                                                 "true_sim": row(true)}}))


def _text_file(path, recipes: dict[str, tuple[float, float]], first_unchanged: float = 0.96):
    """recipes: name -> (mean gain on changed transitions, mean accuracy on unchanged ones); the
    three seeds' gains are the mean -0.01, +0, +0.01."""
    groups = {name: {"members": [f"{name}_seed{i}" for i in range(3)],
                     "reward": {"values": [float(len(name)), 0.5, 0.5]},  # distinct groups, distinct rewards
                     "changed_vs_first": {"mean": gain, "std": 0.01, "values": [gain - 0.01, gain, gain + 0.01]},
                     "accuracy_unchanged": {"mean": unchanged}} for name, (gain, unchanged) in recipes.items()}
    path.write_text(json.dumps({"models": {"sft": {"accuracy_changed": 0.3, "accuracy_unchanged": first_unchanged}},
                                "seed_groups": groups,
                                "baselines": {"nothing_changes": {"accuracy_changed": 0.0,
                                                                  "accuracy_unchanged": 1.0}}}))


def test_goals_table_reads_each_goal_from_its_files(monkeypatch, tmp_path):
    monkeypatch.setattr(fmt, "RESULTS", tmp_path)
    assert _goals() == ""  # nothing measured: no table, and no "not yet measured" either
    _planning_table(tmp_path / "pusht_planning", base=5, rlvr=9, true=12)
    _planning_table(tmp_path / "pusht_planning_merged", base=5, rlvr=9, true=12)  # the same runs merged again
    _planning_table(tmp_path / "pusht_planning_other", base=6, rlvr=4, true=12, seconds=11.0)
    text = _goals()
    assert "best of 2 tables: RLVR 9 vs true simulator 12 of 50 = 75% [35%, 162%]; RLVR >= base in 1 of 2" in text
    assert "**not met**" in text
    _planning_table(tmp_path / "pusht_planning_better", base=5, rlvr=10, true=12, seconds=12.0)
    row = next(line for line in _goals().split("\n") if "CEM planning" in line)
    assert "10 vs true simulator 12 of 50 = 83% [40%, 175%]" in row and "| **not met** |" in row  # 83% by chance
    _planning_table(tmp_path / "pusht_planning_best", base=5, rlvr=49, true=50, seconds=13.0)
    row = next(line for line in _goals().split("\n") if "CEM planning" in line)
    assert "49 vs true simulator 50 of 50 = 98% [94%, 102%]" in row and "| met |" in row
    # a text recipe that gains by giving up unchanged transitions is not the one shown
    _text_file(tmp_path / "text_world_models_a.json", {"changed_only": (0.12, 0.90), "balanced": (0.04, 0.955)})
    row = next(line for line in _goals().split("\n") if "MiniTextWorld" in line)
    assert "(1 keep unchanged ones): balanced +0.040 [0.02, 0.06] (t over 3 seeds)" in row and "**not met**" in row
    assert '| "nothing changes": 0.000 changed, 1.000 unchanged (SFT 0.300, 0.960) |' in row
    _text_file(tmp_path / "text_world_models_b.json", {"bigger": (0.11, 0.97)})
    row = next(line for line in _goals().split("\n") if "MiniTextWorld" in line)
    assert "best of the 3 three-seed recipe and step groups" in row and "bigger +0.110 [0.09, 0.13]" in row
    assert "| **not met** |" in row  # +0.11 on average, but its interval reaches below +0.10
    _text_file(tmp_path / "text_world_models_c.json", {"biggest": (0.15, 0.97)})
    row = next(line for line in _goals().split("\n") if "MiniTextWorld" in line)
    assert "biggest +0.150 [0.13, 0.17]" in row and "| met |" in row


def _real2sim_run(folder, model: str, starts: int, pearson: float, policies=("expert", "toward_centre", "circler"),
                  temperature: str = "0.0", lead_from: str | None = None, data: str | None = None,
                  interval: tuple[float, float] | None = None):
    """A results.json of policy-eval with the recipe's settings: the first policy succeeds from
    the first half of the starts in both simulators, the others never (`lead_from` None: a run
    from before the option, whose starts counted from the episodes' ends, as the default does;
    `data`: the `--data` folder, None for the embedded held-out set)."""
    rollouts = [{"policy": p, "start": s, "env_success": None if sim == "learned" else ok, "judged_success": ok}
                for p in policies for s in range(starts) for sim in ("learned", "real")
                for ok in [p == policies[0] and s < starts // 2]]
    folder.mkdir(parents=True)
    summary = {"pearson": pearson, "mmrv": 0.1, **({"pearson_interval": list(interval)} if interval else {})}
    (folder / "results.json").write_text(json.dumps({
        "command": f"rlvr-world policy-eval {f'--data {data} ' if data else ''}--heldout-episodes 12 --starts "
                   f"{starts} --lead 60 --start-from history --judge-frames rendered --max-steps 20 --noise "
                   f"0,10,25,50 --success any --success-coverage 0.8 --temperature {temperature} --seed 0 --out X",
        "model": f"/somewhere/{model}", "rollouts": rollouts, "summary": summary,
        "policies": [{"policy": p, "starts": starts, "learned_success": 0.5 if p == policies[0] else 0.25,
                      "real_success": 0.5 if p == policies[0] else 0.0} for p in policies],
        **({"lead_from": lead_from} if lead_from else {})}))


def test_the_real2sim_goal_is_reported_on_the_held_out_set_that_did_not_choose_the_simulator(monkeypatch,
                                                                                              tmp_path):
    from rlvr_envs.policy_eval.command import DEFAULT_MODEL

    monkeypatch.setattr(fmt, "RESULTS", tmp_path)
    _real2sim_run(tmp_path / "real2sim" / "ten", DEFAULT_MODEL.name, 10, 0.85)
    _real2sim_run(tmp_path / "real2sim" / "other_model", "wm_other", 40, 0.99)  # not what a user gets
    _real2sim_run(tmp_path / "real2sim" / "no_recipe_policies", DEFAULT_MODEL.name, 40, 0.99, ("expert", "random"))
    _real2sim_run(tmp_path / "real2sim" / "sampled", DEFAULT_MODEL.name, 40, 0.99, temperature="1.0")  # not a default
    _real2sim_run(tmp_path / "real2sim" / "from_success", DEFAULT_MODEL.name, 40, 0.99, lead_from="success")  # option
    row = next(line for line in _goals().split("\n") if "Real2Sim" in line)
    # no second held-out set yet: the row says it reports on the set that chose the simulator
    assert "the set that chose it (no other held-out set measured yet), 10 starts: Pearson 0.850 [1.00, 1.00]" in row
    assert "| met |" in row and "0.99" not in row
    _real2sim_run(tmp_path / "real2sim" / "set_b", DEFAULT_MODEL.name, 40, 0.93, data="/tmp/x/heldout_b",
                  interval=(0.71, 0.97))
    _real2sim_run(tmp_path / "real2sim" / "set_b_sampled", DEFAULT_MODEL.name, 80, 0.99, data="/tmp/x/heldout_b",
                  temperature="1.0")
    (tmp_path / real2sim_compare.REAL2SIM_CHOICE).write_text(json.dumps({
        "first": {"run": "benchmarks/results/real2sim/other_model", "model": "/x/wm_other"},
        "second": {"run": "benchmarks/results/real2sim/ten", "model": f"/x/{DEFAULT_MODEL.name}"}}))
    row = next(line for line in _goals().split("\n") if "Real2Sim" in line)
    assert "held-out set B (`--data heldout_b`), 40 starts: Pearson 0.930 [0.71, 0.97] over 3 policies" in row
    assert "learned vs real success: expert 50% vs 50%, toward_centre 25% vs 0%, circler 25% vs 0%" in row
    assert "simulator chosen on the embedded held-out set (`benchmarks/results/real2sim_default_choice.json`)" in row
    assert "| >= 0.8 | **not met** |" in row and "real2sim/set_b/results.json" in row
    # a simulator chosen on set B is reported on the embedded set
    (tmp_path / real2sim_compare.REAL2SIM_CHOICE).write_text(json.dumps({
        "second": {"run": "benchmarks/results/real2sim/set_b", "model": f"/x/{DEFAULT_MODEL.name}"}}))
    row = next(line for line in _goals().split("\n") if "Real2Sim" in line)
    assert "| the embedded held-out set, 10 starts: Pearson 0.850" in row and "chosen on held-out set B" in row


def test_policies_at_several_noise_levels_are_named_once():
    d = {"policies": [{"policy": f"expert_noise{n}", "learned_success": 0.5, "real_success": r}
                      for n, r in ((0, 0.7), (25, 0.3))]
         + [{"policy": "random", "learned_success": 0.1, "real_success": 0.0}]}
    assert real2sim_compare._policy_names(d) == "expert at 2 noise levels, random"
    assert real2sim_compare._policy_rates(d) == [("expert (noise 0/25) 50%/50% vs 70%/30%", [0, 1]), ("random 10% vs 0%", [2])]


def test_intervals_of_a_ratio_and_of_a_seed_mean():
    low, high = goals._ratio_interval(9, 50, 12, 50)
    assert (round(low, 2), round(high, 2)) == (0.35, 1.62)
    assert all(map(math.isnan, goals._ratio_interval(0, 50, 12, 50)))
    low, high = goals._seed_interval([0.0, 0.0241, 0.0723])  # t(0.975, 2) = 4.303
    assert (round(low, 3), round(high, 3)) == (-0.059, 0.124)
    assert goals._verdict(0.81, 0.9, 0.8) == "met" and goals._verdict(0.79, 0.9, 0.8) == "**not met**"
    assert goals._verdict(-0.3, -0.16, -0.15, at_least=False) == "met"


# -- README's headlines hold for a sceptic -----------------------------------------------------

INTERVAL = re.compile(r"\[([-+]?[\d.]+)(%?), ([-+]?[\d.]+)(%?)\]")
TARGET = re.compile(r"(>=|<=) ([-+]?[\d.]+)(%?)")


def _goal_table(readme: str) -> list[list[str]]:
    """The goals table's rows in README's summary, as cells."""
    summary = readme.split(rr.SUMMARY_START)[1].split(rr.SUMMARY_END)[0]
    lines = [line for line in summary.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:]]  # after the header


def _misjudged(readme: str) -> list[str]:
    """Goals rows whose verdict the intervals they show do not support: a row says met while an
    interval it shows reaches past the target, shows no interval, or says neither met nor not met."""
    problems = []
    for goal, measured, _, target, verdict, _ in _goal_table(readme):
        if not (verdict == "met" or verdict.startswith("**not met**")):
            problems.append(f"{goal}: the verdict {verdict!r} is neither 'met' nor '**not met**'")
        intervals, bound = INTERVAL.findall(measured), TARGET.search(target)
        if not intervals or not bound:
            problems.append(f"{goal}: {'no interval' if not intervals else 'no target'} to judge it by")
            continue
        scale = 100 if bound[3] else 1
        if verdict == "met":
            for low, low_percent, high, high_percent in intervals:
                low, high = float(low) / (100 if low_percent else 1), float(high) / (100 if high_percent else 1)
                target_value = float(bound[2]) / scale
                if (low < target_value) if bound[1] == ">=" else (high > target_value):
                    problems.append(f"{goal}: says met while [{low}, {high}] crosses {bound[0]}")
    return problems


def test_a_goal_is_met_only_when_the_whole_interval_clears_its_target():
    readme = rr.README.read_text()
    rows = _goal_table(readme)
    assert len(rows) == len(rr.goal_rows()) >= 5
    assert _misjudged(readme) == []
    real2sim = next(row for row in rows if row[0].startswith("Real2Sim"))
    assert real2sim[4].startswith("**not met**")
    # the check itself: a row that says met while its interval reaches below the target fails it
    doctored = readme.replace(real2sim[4] + " | " + real2sim[5], "met | " + real2sim[5])
    assert doctored != readme
    assert any("crosses >= 0.8" in problem for problem in _misjudged(doctored))
    assert any("no interval" in problem for problem in _misjudged(readme.replace("[0.71, 0.97]", "0.71-0.97")))


def _anchors(page) -> set[str]:
    """GitHub's anchors of a markdown page's headings."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)}


def _cited_results(text: str) -> list[str]:
    """Every benchmarks/results path a page names, except in a "not yet measured" paragraph."""
    cited = []
    for paragraph in text.split("\n\n"):
        paragraph = paragraph.replace("\n", " ")  # wrapped lines may split a path
        if fmt.NOT_MEASURED not in paragraph:
            cited += [c.rstrip(".") for c in re.findall(rf"{fmt.SHOWN}/[\w./*-]+", paragraph)]
    return cited


def test_every_link_and_results_path_of_readme_and_the_results_page_exists():
    pages = (rr.README, rr.PAGE, rr.EXPERIMENTS_PAGE, *sorted(rr.EXPERIMENTS_DIR.glob("*.md")))
    assert len(pages) == 3 + len(rr.EXPERIMENTS)
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path) if path else page
            assert linked.exists(), f"{page.name} links {target}, which does not exist"
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{page.name} links {target}: no such heading"
        cited = _cited_results(text)
        assert cited, page.name
        for path in cited:
            found = fmt.ROOT / path
            assert (found.is_file() or found.is_dir() or found.with_name(found.name + ".json").is_file()
                    or ("*" in path and list(fmt.ROOT.glob(path)))), f"{page.name} names {path}, which does not exist"
    # a name README gives to the wrong file is caught
    assert not (fmt.ROOT / "benchmarks/results/real2sim/recipe_defaults_waypoint_40starts_heldout_c").exists()


def _pointer(data, pointer: str):
    for key in pointer.strip("/").split("/"):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?%?")


def test_every_goal_row_figure_is_read_from_the_file_the_row_names():
    """Each figure a goals row quotes is, at the precision shown, the value at its place in the
    file the row names (README's row is the rendered one: the sync test above)."""
    readme = rr.README.read_text()
    rows = {cells[0]: cells for cells in _goal_table(readme)}
    for row in rr.goal_rows():
        cells = rows[row.goal]
        assert cells[5] == f"`{fmt.SHOWN}/{row.file}`"
        data = json.loads((fmt.RESULTS / row.file).read_text())
        assert row.quoted, f"{row.goal}: quotes no figure"
        line = " | ".join(cells)
        for text, pointers in row.quoted:
            assert text in line, (row.goal, text)
            numbers = _NUMBER.findall(text)
            assert len(numbers) == len(pointers), (text, pointers)
            for shown, pointer in zip(numbers, pointers):
                value = _pointer(data, pointer)
                value = len(value) if isinstance(value, list) else value
                digits = shown.rstrip("%").replace(",", "")
                decimals = len(digits.split(".")[1]) if "." in digits else 0
                scale = 100 if shown.endswith("%") else 1
                assert abs(value * scale - float(digits)) <= 0.5 * 10 ** -decimals + 1e-9, (row.goal, shown, pointer,
                                                                                          value)


def test_every_figure_of_the_gpu_summary_is_in_a_gpu_run():
    """README's Scale out quotes only what a committed GPU run holds (and the goals beside it)."""
    block = rr.README.read_text().split(rr.SCALE_START)[1].split(rr.SCALE_END)[0]
    block = re.sub(r"\]\([^)]*\)", "]", re.sub(r"`[^`]*`", "", block))  # no commands, no link targets
    values = []

    def leaves(x):
        if isinstance(x, dict):
            for v in x.values():
                leaves(v)
        elif isinstance(x, list):
            for v in x:
                leaves(v)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            values.append(float(x))
    for path in (fmt.RESULTS / "gpu_check").glob("*/gpu_check.json"):
        leaves(json.loads(path.read_text()))
    runs = len(list((fmt.RESULTS / "gpu_check").glob("*/gpu_check.json")))
    targets = {goals.GOAL_MLE_MFU * 100, float(goals.GOAL_DECODE_TOKENS_PER_S), float(runs)}  # and how many runs
    numbers = _NUMBER.findall(block.replace("M,", ",").replace("M)", ")"))
    assert numbers
    for shown in numbers:
        digits = shown.rstrip("%").replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        number = float(digits)
        candidates = [v * s for v in values for s in ((100,) if shown.endswith("%") else (1, 1e-6))]
        assert number in targets or any(abs(c - number) <= 0.5 * 10 ** -decimals + 1e-9 for c in candidates), shown


def test_a_run_record_names_the_machine_and_flags_a_shared_one():
    record = {"machine": "x86_64, 2 cores, CPU only", "load": {"before": 3.1, "after": 4.0, "busy": True}}
    assert fmt.machine({"run": record, "machine": "old"}) == "x86_64, 2 cores, CPU only (shared: load 3.1 -> 4.0)"
    assert fmt.machine({"run": {**record, "load": {"busy": False}}}) == "x86_64, 2 cores, CPU only"
    assert fmt.machine({"machine": "x86_64, 2 threads, CPU"}) == "x86_64, 2 threads, CPU"  # older files
