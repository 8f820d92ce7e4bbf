"""Tests for ribsax.examples.lunar_lander (Gymnasium LunarLander on Dask)."""

import numpy as np
import pandas as pd

from ribsax.examples.lunar_lander import run, simulate


def test_simulate_is_deterministic_for_a_seed():
    solution = np.random.default_rng(0).normal(size=32)
    first = simulate(solution, seed=3)
    assert first == simulate(solution, seed=3)
    episode_return, (impact_x, impact_vy) = first
    assert -1000 < episode_return < 400
    assert np.isfinite(impact_x) and np.isfinite(impact_vy)


def test_run_on_two_workers_fills_the_archive(tmp_path):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            final = run(
                outdir=tmp_path, iterations=2, batch_size=4, emitters=2, client=client, quiet=True
            )
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert metrics["iteration"].tolist() == [1, 2]
    assert final["num_elites"] >= 1
    # QD score counts objective + 600 per elite (pyribs' qd_score_offset=-600).
    assert final["qd_score"] > 0
    assert (tmp_path / "heatmap.png").stat().st_size > 0
