"""benchmarks/experiments/: the benchmarks whose question is answered stay runnable at a tiny size,
and say the command that runs them from there (their committed results quote it)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import shutil

import pytest

import benchmarks.experiments
from benchmarks import sections

NAMES = sorted(m.name for m in pkgutil.iter_modules(benchmarks.experiments.__path__))


def test_the_top_level_lists_the_benchmarks_a_user_would_run():
    """At most about 15 benchmark scripts at the top (the page generators and shared helpers aside)."""
    top = {p.stem for p in (sections.ROOT / "benchmarks").glob("*.py")}
    tools = {"__init__", "readme_results", "scale_table", "sections", "goals", "gpu_runs", "cli_runs", "charts"}
    assert len(top - tools) <= 16, sorted(top - tools)
    assert not (top & set(NAMES)), "a benchmark is both at the top and under experiments/"


@pytest.mark.parametrize("name", NAMES)
def test_each_experiment_runs_from_its_new_home(name, capsys, monkeypatch):
    module = importlib.import_module(f"benchmarks.experiments.{name}")
    assert f"benchmarks.experiments.{name}" in (module.__doc__ or ""), "its docstring names its command"
    monkeypatch.setattr("sys.argv", [name, "--help"])  # for a main() that reads sys.argv itself
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"]) if inspect.signature(module.main).parameters else module.main()
    assert stop.value.code == 0 and "usage" in capsys.readouterr().out
    # the committed results it wrote quote the command as it runs now
    for section in getattr(module, "SECTIONS", ()):
        for relative in section.paths():
            command = json.dumps((sections.load(relative) or {}).get("command", ""))
            assert f"benchmarks.{name}" not in command.replace(f"benchmarks.experiments.{name}", ""), relative


def test_kv_cached_generation_at_a_tiny_size(tmp_path, monkeypatch):
    from benchmarks.experiments import video_generation

    monkeypatch.setattr(video_generation, "RESULTS", tmp_path)
    video_generation.main(["--preset", "tiny", "--batch", "2", "--future", "2", "--tokens-per-frame", "4",
                           "--action-dims", "2", "--threads", "1", "--repeats", "1", "--device", "cpu"])
    result = json.loads((tmp_path / "video_generation.json").read_text())
    assert sections.missing_fields(sections.load("video_generation.json"), result) == []


def test_compressed_tokenizer_renders_its_committed_result(tmp_path):
    from benchmarks.experiments import compressed_tokenizer

    shutil.copy(sections.RESULTS / "compressed_tokenizer.json", tmp_path)
    compressed_tokenizer.main(["--render", "--out", str(tmp_path / "compressed_tokenizer")])
    assert (tmp_path / "compressed_tokenizer.md").read_text().strip()


@pytest.mark.slow
def test_learned_sim_step_at_a_tiny_size(tmp_path):
    from benchmarks.experiments import learned_sim_step

    assert learned_sim_step.main(["--steps", "1", "--threads", "1", "--two-thread-decode", "0",
                                  "--out", str(tmp_path / "step")]) == 0
    result = json.loads((tmp_path / "step.json").read_text())
    assert sections.missing_fields(sections.load("learned_sim_step.json"), result) == []
