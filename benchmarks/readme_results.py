"""The results pages, assembled from the committed benchmark results: docs/results.md (what holds
today), the experiments pages under docs/experiments/ (every earlier and exploratory run, grouped by
the question it asked) and README's summaries (the goals table, and what the GPU runs measured).

    python -m benchmarks.readme_results           # rewrite every page between its markers
    python -m benchmarks.readme_results --check   # exit 1 with a unified diff when a page is stale

Each benchmark renders its own sections (its module's `SECTIONS`, built on benchmarks/sections.py)
and builds its row of the goals table (its `goal()`, on benchmarks/goals.py). This file only decides
which section goes on which page, in which order, and writes the pages (a page without a results file
says "not yet measured" and which command writes it). tests/test_readme_results.py fails when a page
is stale.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Callable

from benchmarks import (cli_runs, env_overhead, goals, gpu_runs, grpo_pusht_rewards, language_world_models,
                        metrics_throughput, planning_agreement, pusht_planning, pusht_success_judge, real2sim_compare,
                        rl_algorithms, serve_load, text_sft_speed, text_verifier_throughput, web_agent,
                        web_verifier_throughput, world_model_speed)
from benchmarks import sections as fmt
from benchmarks.experiments import (best_of_n_scaling, cli_inputs, compressed_tokenizer, grpo_ablations, grpo_pusht,
                                    hostile_inputs, learned_sim_fidelity, learned_sim_step, miniweb_predictability,
                                    repetition_table, video_generation, video_world_models)

README = fmt.ROOT / "README.md"
PAGE = fmt.ROOT / "docs" / "results.md"  #: what holds today; README carries the goals table
START, END = "<!-- results -->", "<!-- /results -->"
SUMMARY_START, SUMMARY_END = "<!-- results-summary -->", "<!-- /results-summary -->"
SCALE_START, SCALE_END = "<!-- gpu-summary -->", "<!-- /gpu-summary -->"  #: README's Scale out: what ran on a GPU

#: every benchmark whose sections the pages hold, in the order they are declared
MODULES = (cli_runs, grpo_pusht_rewards, grpo_pusht, repetition_table, video_world_models, compressed_tokenizer,
           video_generation, env_overhead, text_verifier_throughput, metrics_throughput, web_verifier_throughput,
           hostile_inputs, rl_algorithms, best_of_n_scaling, grpo_ablations, pusht_planning, learned_sim_fidelity,
           planning_agreement, language_world_models, text_sft_speed, world_model_speed, gpu_runs, learned_sim_step,
           cli_inputs, web_agent, miniweb_predictability, pusht_success_judge, real2sim_compare, serve_load)
SECTIONS: tuple[fmt.Section, ...] = tuple(chain.from_iterable(m.SECTIONS for m in MODULES))
#: the goals table's rows, each built by the benchmark that measures it
GOALS = (grpo_pusht_rewards.goal, language_world_models.goal, pusht_planning.goal, pusht_success_judge.goal,
         real2sim_compare.goal)


#: docs/results.md: what holds today, under the questions a reader asks (section titles, in order)
CURRENT = (
    ("Does RLVR improve the world model?", (
        "`rlvr-world demo`", "GRPO reward: pixels and objects", "`rlvr-world demo --domain text`",
        "Text-game GRPO from the shipped longer-SFT model", "Language world models on the one-site MiniWeb")),
    ("The default simulator for policy evaluation", (
        "Real2Sim on PushT with the default simulator", "PushT success judge")),
    ("Planning with a world model", (
        "PushT CEM planning against the blind-CEM floor", "Web agents on the one-site MiniWeb")),
    ("The shipped world models and their data", (
        "PushT video world models", "Compressed multi-step tokenizer", "PushT data", "Text-game world models that ship")),
    ("Verifier, env and model speed", (
        "Env overhead", "Serving an id under load", "Text-game verifier", "Reward throughput", "Web verifier",
        "Hostile inputs",
        "KV-cached generation", "Learned-simulator step", "World-model speed", "Text SFT speed",
        "Bad command-line values")),
    ("GPU runs", ("GPU check on one H200",)),
)
#: docs/experiments/PAGE.md: the earlier and exploratory runs, one page per question they asked
EXPERIMENTS = (
    ("pusht_grpo", "How should GRPO post-train the PushT world model?", (
        "GRPO reward variants: other weights and steps", "RLVR on the PushT world model", "GRPO on PushT multi-step",
        "Table 3 analogue", "RL algorithms on one budget", "Best-of-N test-time scaling", "GRPO ablations")),
    ("pusht_planning", "Can CEM plan PushT inside a learned simulator, and does the simulator follow its actions?", (
        "PushT CEM planning", "Does the learned simulator follow its actions?",
        "Longer MLE and the pose reward: action following", "PushT CEM planning with the longer-trained models",
        "Action following over several chunks", "PushT CEM planning after GRPO on the model's own rollouts",
        "PushT CEM planning after a third round of GRPO on the model's own rollouts",
        "Action following of the retrained models", "PushT CEM planning after rollout GRPO, retrained",
        "PushT CEM planning after rollout GRPO with the agent's error weighted 3x",
        "Action following after MLE on CEM-like episodes", "PushT CEM planning after MLE on CEM-like episodes",
        "PushT CEM planning with the blurred-pixels objective", "PushT CEM planning with the pose objective",
        "Candidate ranking: learned vs true simulator")),
    ("real2sim", "Which learned simulator ranks policies as the real env does?", ("Real2Sim on PushT",)),
    ("text_world_models", "Can GRPO improve a small text world model?", (
        "Text-game world models on MiniTextWorld", "Text-game world models after longer SFT",
        "Text-game GRPO on filtered prompts", "Text-game GRPO on filtered changed and unchanged prompts",
        "Text-game GRPO, filtered changed prompts then both kinds", "Text-game world models, sampled",
        "Text-game shipped longer-SFT model, sampled", "Text-game GRPO with 16 samples per prompt")),
    ("web", "Does a web world model help a web agent?", (
        "Language world models on MiniWeb", "Web agents on MiniWeb goals",
        "MiniWeb as one site: predictability audit")),
)
EXPERIMENTS_PAGE = fmt.ROOT / "docs" / "experiments.md"  #: the index: each question, each run's finding
EXPERIMENTS_DIR = fmt.ROOT / "docs" / "experiments"
GENERATED = ("<!-- generated by `python -m benchmarks.readme_results` from benchmarks/results/: edit the "
             "benchmark's section and rerun it, not this block -->")


def goal_rows() -> list[goals.GoalRow]:
    return goals.goal_rows(GOALS)


def by_title(*titles: str) -> tuple[fmt.Section, ...]:
    found = {s.title: s for s in SECTIONS}
    return tuple(found[t] for t in titles)


def _preamble() -> str:
    machines = [fmt.machine(fmt.load(f)).lower() for section in SECTIONS for f in section.paths()]
    gpu = any("cuda" in m or ("gpu" in m and "no gpu" not in m) for m in machines)
    arches = sorted({m.split(",")[0].strip() for m in machines if m.startswith(("x86", "aarch", "arm"))})
    where = f"{' and '.join(arches)} " if arches else ""
    line = (f"Every run below was on {where}CPUs (no GPU was available to these runs)" if machines and not gpu
            else "Runs below were on the machines each subsection names")
    return (GENERATED + "\n" + line + "; each subsection quotes its run's machine string, the command that wrote "
            "its results and the results file.")


def _sections(sections: tuple[fmt.Section, ...], findings: bool = False) -> list[str]:
    return [(f"## {s.title}\n\n*Finding:* {s.finding}\n\n" if findings else "") + s.render() for s in sections]


def render() -> str:
    """docs/results.md's block: the goals table, then what holds today under each question."""
    parts = [_preamble(), goals.goals_table(goal_rows(), "the sections below give the runs behind each; earlier runs: "
                                            "[experiments.md](experiments.md)")]
    for heading, titles in CURRENT:
        parts += [f"## {heading}", *_sections(by_title(*titles))]
    return "\n\n".join(fmt.wrap(part) for part in parts if part) + "\n"


def render_experiments() -> str:
    """docs/experiments.md's block: each question, and each run with its one-line finding."""
    parts = [GENERATED]
    for page, question, titles in EXPERIMENTS:
        parts.append(f"## [{question}](experiments/{page}.md)")
        parts.append("\n".join(f"* [{s.title}](experiments/{page}.md#{fmt.anchor(s.title)}): {s.finding}"
                               + "".join(f"\n  * {fmt.shown(f)}: {s.run_line(fmt.load(f))}" for f in s.paths()
                                         if s.run_line) for s in by_title(*titles)))
    shown = {f for s in SECTIONS for f in s.paths()}
    other = sorted(str(f.relative_to(fmt.RESULTS)) for f in fmt.RESULTS.rglob("*.json")
                   if str(f.relative_to(fmt.RESULTS)) not in shown)
    if other:
        parts.append("## Results files no section shows\n\nEach is cited where its finding is told: in "
                     "[How the results were made](#how-the-results-were-made) below, in the text of a section "
                     "whose run it fed, or in its folder's README:\n\n" + "\n".join(f"* {fmt.shown(f)}" for f in other))
    return "\n\n".join(fmt.wrap(part) for part in parts) + "\n"


def render_experiment_page(page: str) -> str:
    """A whole docs/experiments/PAGE.md: its question, then each run with its finding."""
    _, question, titles = next(e for e in EXPERIMENTS if e[0] == page)
    parts = [f"# {question}", "Earlier and exploratory runs, kept with what each found; what holds today is in "
             "[results.md](results.md), every question in [experiments.md](experiments.md).", GENERATED,
             *_sections(by_title(*titles), findings=True)]
    text = "\n\n".join(fmt.wrap(part) for part in parts) + "\n"
    return re.sub(r"\]\((?!https?:|#)", "](../", text)  # one folder deeper than docs/


def render_summary() -> str:
    """README's results summary: the goals table, pointing at docs/results.md for every run."""
    table = goals.goals_table(goal_rows(), "[docs/results.md](docs/results.md) gives each run, with its command and file")
    return fmt.wrap(table or f"Results: {fmt.NOT_MEASURED}; see [docs/results.md](docs/results.md).") + "\n"


def render_gpu_summary() -> str:
    """README's Scale out: what the committed GPU runs measured (benchmarks/gpu_runs.py)."""
    return gpu_runs.summary()


def _split(readme: str, start_marker: str = START, end_marker: str = END) -> tuple[str, str, str]:
    """(before and including the opening marker's line, the block, from the closing marker on)."""
    start = readme.index(start_marker) + len(start_marker)
    if readme[start:start + 1] == "\n":
        start += 1
    end = readme.find(end_marker, start)
    if end < 0:  # no closing marker yet: the block runs to the next section or the end
        heading = re.search(r"^## ", readme[start:], flags=re.MULTILINE)
        end = start + heading.start() if heading else len(readme)
        return readme[:start], readme[start:end], end_marker + "\n" + readme[end:]
    return readme[:start], readme[start:end], readme[end:]


def updated(text: str, start_marker: str = START, end_marker: str = END, body: Callable[[], str] = render) -> str:
    before, _, after = _split(text, start_marker, end_marker)
    return before + body() + after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 with a diff when a page is out of date")
    parser.add_argument("--page", default=str(PAGE), help="the results page (what holds today)")
    parser.add_argument("--readme", default=str(README), help="the README holding the summary")
    parser.add_argument("--experiments", default=str(EXPERIMENTS_PAGE),
                        help="the experiments index; its pages go in the folder of the same name beside it")
    args = parser.parse_args(argv)
    stale = 0
    index = Path(args.experiments)
    pages = [(Path(args.page), (((START, END), render),)),
             (Path(args.readme), (((SUMMARY_START, SUMMARY_END), render_summary),
                                  ((SCALE_START, SCALE_END), render_gpu_summary))),
             (index, (((START, END), render_experiments),))]
    pages += [(index.with_suffix("") / f"{page}.md", ((None, partial(render_experiment_page, page)),))
              for page, _, _ in EXPERIMENTS]
    for path, blocks in pages:
        whole = blocks[0][0] is None  # a page generated whole
        if not path.is_file() and not whole:
            print(f"{path}: missing (it holds the {blocks[0][0][0]} block)", file=sys.stderr)
            return 1
        current = wanted = path.read_text() if path.is_file() else ""
        for markers, body in blocks:
            if whole:
                wanted = body()
                continue
            if markers[0] not in wanted:
                print(f"{path}: no {markers[0]} marker (the block goes after it)", file=sys.stderr)
                return 1
            wanted = updated(wanted, *markers, body)
        if args.check:
            if wanted != current:
                stale = 1
                sys.stdout.writelines(difflib.unified_diff(current.splitlines(keepends=True),
                                                           wanted.splitlines(keepends=True),
                                                           f"{path.name} (committed)", f"{path.name} (rendered)"))
            continue
        if wanted != current:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted)
            print(f"rewrote {path}")
        else:
            print(f"{path} is up to date")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
