"""Smoke tests for benchmarks/sphere_quality.py (criterion, CVT builder, resume)."""

import json

import numpy as np
import pytest

from tests.examples._benchmarks import load_benchmark

sq = load_benchmark("sphere_quality")


def test_spread_check_uses_larger_spread():
    theirs = [100.0, 110.0, 120.0]  # std 10
    assert sq.spread_check([125.0, 130.0, 135.0], theirs)["ok"]  # diff 20 <= 20
    failed = sq.spread_check([135.0, 140.0, 145.0], theirs)  # diff 30 > 20
    assert not failed["ok"]
    assert failed["diff"] == pytest.approx(30.0)
    assert failed["allowed"] == pytest.approx(20.0)
    # ribsax's own spread (std 20) widens the allowance to 40.
    assert sq.spread_check([120.0, 140.0, 160.0], theirs)["ok"]


def test_spread_check_relative_floor():
    theirs = [1000.0, 1000.0, 1000.0]
    assert sq.spread_check([1009.0, 1010.0, 1011.0], theirs)["ok"]
    assert not sq.spread_check([1019.0, 1020.0, 1021.0], theirs)["ok"]
    assert sq.spread_check([1019.0, 1020.0, 1021.0], theirs, rel_tol=0.05)["ok"]


def test_spread_check_needs_two_seeds():
    with pytest.raises(ValueError):
        sq.spread_check([1.0], [1.0, 2.0])


@pytest.mark.parametrize("library", ["ribs", "ribsax"])
def test_library_view_builds_cvt_from_dims(library):
    archive = sq.library_view(library).archives.CVTArchive(
        solution_dim=3, dims=(2, 3), ranges=[(-1, 1)] * 2, seed=0, samples=200
    )
    assert archive.cells == 6
    assert archive.centroids.shape == (6, 2)


def test_summarize_incomplete_and_outside():
    def run(lib, seed, qd_score, coverage):
        return {
            "config": "map_elites",
            "library": lib,
            "seed": seed,
            "itrs": 5,
            "dim": 4,
            "grid_dims": [5, 5],
            "qd_score": qd_score,
            "coverage": coverage,
            "loop_s": 1.0,
        }

    runs = [run("ribs", s, 100.0 + s, 0.5) for s in range(3)]
    runs += [run("ribsax", 0, 200.0, 0.5)]
    (entry,) = sq.summarize(runs, ["map_elites"], [0, 1, 2], 5, 4, (5, 5))
    assert entry["verdict"].startswith("incomplete")
    runs += [run("ribsax", s, 200.0, 0.5) for s in (1, 2)]
    (entry,) = sq.summarize(runs, ["map_elites"], [0, 1, 2], 5, 4, (5, 5))
    assert entry["verdict"].startswith("OUTSIDE spread (qd_score")
    assert entry["checks"]["coverage"]["ok"]
    # Runs made with other settings are ignored.
    (entry,) = sq.summarize(runs, ["map_elites"], [0, 1, 2], 6, 4, (5, 5))
    assert entry["seeds_done"] == {"ribs": 0, "ribsax": 0}


def test_main_runs_both_libraries_and_resumes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "runs.json"
    args = [
        "--configs",
        "map_elites",
        "--seeds",
        "0,1",
        "--itrs",
        "2",
        "--dim",
        "4",
        "--grid-dims",
        "5",
        "5",
        "--json",
        str(path),
    ]
    assert sq.main(args) == 0
    runs = json.loads(path.read_text())["runs"]
    assert sorted((r["library"], r["seed"]) for r in runs) == [
        ("ribs", 0),
        ("ribs", 1),
        ("ribsax", 0),
        ("ribsax", 1),
    ]
    for r in runs:
        assert 0 < r["coverage"] <= 1
        assert np.isfinite(r["qd_score"]) and r["qd_score"] > 0
        assert r["curve"][-1] == [2, r["qd_score"], r["coverage"]]
    assert "| map_elites |" in capsys.readouterr().out

    calls = []

    def fake_run_one(library, config, seed, **kwargs):
        calls.append((library, config, seed))
        return {
            "config": config,
            "seed": seed,
            "library": library,
            "itrs": kwargs["itrs"],
            "dim": kwargs["dim"],
            "grid_dims": list(kwargs["grid_dims"]),
            "qd_score": 1.0,
            "coverage": 0.01,
            "norm_qd_score": 0.0,
            "num_elites": 1,
            "curve": [],
            "build_s": 0.0,
            "loop_s": 0.0,
        }

    monkeypatch.setattr(sq, "run_one", fake_run_one)
    args[3] = "0,1,2"
    assert sq.main(args) == 0
    assert calls == [("ribs", "map_elites", 2), ("ribsax", "map_elites", 2)]
    assert len(json.loads(path.read_text())["runs"]) == 6
