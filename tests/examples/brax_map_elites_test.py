"""End-to-end test of ribsax.examples.brax_map_elites on a tiny hopper run."""

import csv
import json

import matplotlib.image
import numpy as np
import pandas as pd

from ribsax.examples.brax_map_elites import METRIC_FIELDS, main


def test_brax_map_elites_writes_run_directory(tmp_path):
    outdir = tmp_path / "run"
    assert (
        main(
            [
                "--outdir",
                str(outdir),
                "--task",
                "hopper_uni",
                "--iterations",
                "3",
                "--batch-size",
                "6",
                "--episode-length",
                "15",
                "--hidden",
                "8",
                "--cells",
                "10",
                "--line-sigma",
                "0.5",
                "--iso-sigma",
                "0.3",
                "--quiet",
            ]
        )
        == 0
    )

    config = json.loads((outdir / "config.json").read_text())
    assert config["task"] == "hopper_uni" and config["cells"] == 10
    assert config["qd_score_offset"] == -0.9 * 15
    assert "brax" in config["versions"]

    with open(outdir / "metrics.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == METRIC_FIELDS and len(rows) == 3
    coverage = [float(r["coverage"]) for r in rows]
    qd_scores = [float(r["qd_score"]) for r in rows]
    assert coverage[-1] > 0 and np.all(np.diff(qd_scores) >= 0)

    summary = json.loads((outdir / "metrics.json").read_text())
    assert summary["final"]["iteration"] == 3
    assert summary["timing"]["evals_per_s_loop"] > 0
    assert summary["heatmap"] is True

    archive = pd.read_csv(outdir / "archive.csv")
    assert list(archive.columns) == ["index", "objective", "measures_0"]
    assert len(archive) == int(rows[-1]["num_elites"]) > 1
    assert archive["measures_0"].between(0, 1).all()
    # More than one cell means the measures differ between policies.
    assert archive["index"].nunique() == len(archive)

    image = matplotlib.image.imread(outdir / "heatmap.png")
    assert image.ndim == 3 and image.shape[0] > 100
