"""benchmarks.experiments.best_of_n_scaling: the best-of-N curve of shipped PushT world models (oracle selection)."""

from __future__ import annotations

import json

import pytest

from benchmarks import sections


def test_curve_points_and_matching_n():
    from benchmarks.experiments.best_of_n_scaling import curve_points, matching_n

    assert curve_points(100) == [1, 2, 3, 5, 10, 20, 30, 50, 75, 100]
    assert curve_points(4) == [1, 2, 3, 4]
    curve = {"1": {"mae": 0.009}, "2": {"mae": 0.008}, "10": {"mae": 0.006}}
    assert matching_n(curve, 0.0085) == 2 and matching_n(curve, 0.006) == 10 and matching_n(curve, 0.001) is None


def test_writes_a_curve_that_never_worsens_with_n(tmp_path):
    from benchmarks.experiments.best_of_n_scaling import main

    out = tmp_path / "bon.json"
    assert main(["--transitions", "3", "--max-n", "3", "--threads", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    gaps = sections.missing_fields(sections.load("best_of_n_scaling.json"), report)
    assert gaps == [], f"rerun the committed run: it lacks {gaps}"
    assert set(report["models"]) == {"mle_base", "rlvr"}
    for model in report["models"].values():
        assert list(model["curve"]) == ["1", "2", "3"]
        maes = [row["mae"] for row in model["curve"].values()]
        assert maes == sorted(maes, reverse=True)  # best of more samples by reward -MAE: MAE never rises
    assert len(report["matches"]) == 1 and "rlvr sample" in report["matches"][0]
    assert out.with_suffix(".png").is_file() and "oracle" in out.with_suffix(".md").read_text()


def test_bad_arguments_fail_with_the_reason(tmp_path):
    from benchmarks.experiments.best_of_n_scaling import main

    with pytest.raises(SystemExit, match="NAME=DIR"):
        main(["--models", "a=x", "a=y", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="max-n"):
        main(["--max-n", "0", "--out", str(tmp_path / "x.json")])
