"""Tests for the main job, ribsax.examples.sphere_map_elites."""

import csv
import json
import subprocess
import sys

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from ribsax.examples.sphere_map_elites import METRIC_FIELDS, main, run, sphere

BOUND = 5.12
SHIFT = 2.048


def numpy_sphere(x):
    """Independent NumPy statement of pyribs' sphere example (examples/sphere.py)."""
    dim = x.shape[1]
    worst = (BOUND + SHIFT) ** 2 * dim
    objective = 100.0 * (1.0 - np.sum((x - SHIFT) ** 2, axis=1) / worst)
    folded = x.copy()
    out = np.abs(folded) > BOUND
    folded[out] = BOUND / folded[out]
    measures = np.stack([folded[:, : dim // 2].sum(1), folded[:, dim // 2 :].sum(1)], 1)
    return objective, measures


def test_sphere_known_points():
    x = np.array([[SHIFT] * 4, [-BOUND] * 4, [10.0, -20.0, 1.0, 0.0]])
    objective, measures = (np.asarray(a) for a in sphere(x))
    np.testing.assert_allclose(objective[:2], [100.0, 0.0], atol=1e-9)
    # 10 -> 5.12/10, -20 -> 5.12/-20; in-range values are kept.
    np.testing.assert_allclose(measures[2], [0.512 - 0.256, 1.0])


def test_sphere_matches_numpy_statement():
    x = np.random.default_rng(0).normal(scale=6.0, size=(50, 10))
    objective, measures = sphere(x)
    ref_obj, ref_meas = numpy_sphere(x)
    np.testing.assert_allclose(np.asarray(objective), ref_obj, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(measures), ref_meas, rtol=1e-12)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("sphere_run")
    final = run(
        outdir=outdir,
        iterations=25,
        batch_size=64,
        dim=10,
        grid=20,
        seed=3,
        dtype="float64",
        quiet=True,
    )
    return outdir, final


def test_run_writes_all_outputs(small_run):
    outdir, final = small_run
    names = {p.name for p in outdir.iterdir()}
    assert names == {"config.json", "metrics.json", "metrics.csv", "archive.csv", "heatmap.png"}

    config = json.loads((outdir / "config.json").read_text())
    assert config["iterations"] == 25 and config["batch_size"] == 64
    assert config["grid"] == [20, 20] and config["seed"] == 3

    with open(outdir / "metrics.csv", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert tuple(rows[0].keys()) == METRIC_FIELDS
    assert [int(r["iteration"]) for r in rows] == list(range(1, 26))

    metrics = json.loads((outdir / "metrics.json").read_text())
    assert len(metrics["history"]) == 25
    assert metrics["final"] == final == metrics["history"][-1]
    assert float(rows[-1]["qd_score"]) == pytest.approx(final["qd_score"])

    image = matplotlib.image.imread(outdir / "heatmap.png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


def test_qd_score_increases(small_run):
    outdir, _ = small_run
    history = json.loads((outdir / "metrics.json").read_text())["history"]
    qd = np.array([h["qd_score"] for h in history])
    num = np.array([h["num_elites"] for h in history])
    elapsed = np.array([h["elapsed_s"] for h in history])
    assert qd[-1] > qd[0] > 0
    assert np.all(np.diff(qd) >= 0)  # Elitist MAP-Elites with positive objectives.
    assert np.all(np.diff(num) >= 0) and num[-1] > num[0]
    assert np.all(np.diff(elapsed) > 0)
    coverage = np.array([h["coverage"] for h in history])
    np.testing.assert_allclose(coverage, num / 400)


def test_archive_csv_is_consistent(small_run):
    outdir, final = small_run
    df = pd.read_csv(outdir / "archive.csv")
    assert len(df) == final["num_elites"]
    solutions = df[[f"solution_{i}" for i in range(10)]].to_numpy()
    objective, measures = numpy_sphere(solutions)
    np.testing.assert_allclose(df["objective"], objective, rtol=1e-9)
    np.testing.assert_allclose(df[["measures_0", "measures_1"]], measures, rtol=1e-9)
    assert df["objective"].sum() == pytest.approx(final["qd_score"])
    assert df["objective"].max() == pytest.approx(final["obj_max"])
    assert df["index"].is_unique


def test_same_seed_same_run(small_run, tmp_path):
    outdir, final = small_run
    again = run(
        outdir=tmp_path,
        iterations=25,
        batch_size=64,
        dim=10,
        grid=20,
        seed=3,
        dtype="float64",
        quiet=True,
    )
    assert again["qd_score"] == final["qd_score"]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "archive.csv"), pd.read_csv(outdir / "archive.csv")
    )
    other = run(
        outdir=tmp_path / "other",
        iterations=25,
        batch_size=64,
        dim=10,
        grid=20,
        seed=4,
        dtype="float64",
        quiet=True,
    )
    assert other["qd_score"] != final["qd_score"]


def test_main_float32(tmp_path, capsys):
    assert (
        main(
            [
                "--iterations",
                "4",
                "--batch-size",
                "16",
                "--dim",
                "6",
                "--grid",
                "8",
                "--outdir",
                str(tmp_path),
                "--log-every",
                "2",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("iter ") == 2 and "QD score" in out
    df = pd.read_csv(tmp_path / "archive.csv")
    assert len(df) > 0
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["dtype"] == "float32"


def test_main_rejects_zero_iterations(tmp_path):
    with pytest.raises(SystemExit):
        main(["--iterations", "0", "--outdir", str(tmp_path)])


def test_module_entry_point(tmp_path):
    """The example's command line (python -m ..., in docs/guides/development.md) works
    in a fresh interpreter."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ribsax.examples.sphere_map_elites",
            "--iterations",
            "3",
            "--batch-size",
            "8",
            "--dim",
            "4",
            "--grid",
            "5",
            "--outdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "heatmap.png").stat().st_size > 0
    assert (tmp_path / "metrics.csv").read_text().count("\n") == 4
