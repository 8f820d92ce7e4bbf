"""Tests for ribsax.visualize.qd_metric_curves (ribsax addition)."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import ribsax
from ribsax.archives import GridArchive
from ribsax.emitters import GaussianEmitter
from ribsax.schedulers import RunResult, Scheduler, TrialsResult
from ribsax.tasks import sphere
from ribsax.visualize import qd_metric_curves
from tests.visualize.plot_helpers import new_axes


def trials_frame(values):
    """A TrialsResult-style metrics table: values[trial][iteration]."""
    values = np.asarray(values, dtype=float)
    trials, iterations = values.shape
    return pd.DataFrame(
        {
            "trial": np.repeat(np.arange(trials), iterations),
            "iteration": np.tile(np.arange(1, iterations + 1), trials),
            "qd_score": values.ravel(),
            "coverage": values.ravel() / 100,
        }
    )


def bands(ax):
    return [
        c
        for c in ax.collections
        if c.__class__.__name__ == "FillBetweenPolyCollection"
        or c.__class__.__name__ == "PolyCollection"
    ]


def test_mean_line_and_sd_band():
    values = [[1, 2, 3], [3, 4, 9]]
    fig, ax = new_axes()
    out = qd_metric_curves(trials_frame(values), ax, errorbar="sd")
    fig.canvas.draw()
    assert out is ax
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(line.get_ydata(), [2, 3, 6])
    (band,) = bands(ax)
    sd = np.std(values, axis=0, ddof=1)
    low_high = band.get_paths()[0].vertices[:, 1]
    np.testing.assert_allclose(
        [low_high.min(), low_high.max()],
        [(np.array([2, 3, 6]) - sd).min(), (np.array([2, 3, 6]) + sd).max()],
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("iterations", "QD score")


def test_ci95_band_and_evaluations_axis():
    values = np.array([[1.0, 2.0], [2.0, 4.0], [6.0, 9.0]])
    _, ax = new_axes()
    qd_metric_curves(trials_frame(values), ax, metric="coverage", evaluations_per_iteration=36)
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [36, 72])
    half = scipy.stats.sem(values / 100, axis=0) * scipy.stats.t.ppf(0.975, 2)
    vertices = bands(ax)[0].get_paths()[0].vertices[:, 1]
    np.testing.assert_allclose(vertices.max(), (values[:, 1].mean() / 100 + half[1]))
    assert ax.get_xlabel() == "evaluations" and ax.get_ylabel() == "coverage"


def test_dict_of_configurations_and_lists_of_runs():
    run_a = trials_frame([[1, 2, 3]]).drop(columns="trial")
    run_b = trials_frame([[3, 4, 5]]).drop(columns="trial")
    _, ax = new_axes()
    qd_metric_curves(
        {"a": [run_a, run_b], "b": run_a},
        ax,
        estimator="median",
        errorbar="minmax",
        colors=["red", "blue"],
    )
    line_a, line_b = ax.get_lines()
    np.testing.assert_allclose(line_a.get_ydata(), [2, 3, 4])
    np.testing.assert_allclose(line_b.get_ydata(), [1, 2, 3])
    assert line_a.get_color() == "red"
    assert len(bands(ax)) == 1  # One seed: no band for "b".
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_run_result_and_trials_result_from_real_runs():
    task = sphere(solution_dim=4)

    def make(seed):
        archive = GridArchive(solution_dim=4, dims=(8, 8), ranges=task.measure_ranges, seed=seed)
        emitter = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(4), batch_size=8, seed=seed)
        return Scheduler(archive, [emitter])

    run = make(0).run(task, iterations=4)
    trials = ribsax.run_trials(make, task, iterations=4, seeds=[1, 2], vectorize=False)
    assert isinstance(run, RunResult) and isinstance(trials, TrialsResult)
    _, ax = new_axes()
    qd_metric_curves({"one": run, "two": trials}, ax, metric="obj_max")
    line_one, line_two = ax.get_lines()
    np.testing.assert_allclose(line_one.get_ydata(), run.metrics["obj_max"])
    np.testing.assert_allclose(
        line_two.get_ydata(), trials.metrics.groupby("iteration")["obj_max"].mean()
    )
    assert ax.get_ylabel() == "best objective"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"estimator": "mode"}, ValueError, "Unknown estimator"),
        ({"errorbar": "pi"}, ValueError, "Unknown errorbar"),
        ({"metric": "speed"}, ValueError, "lack column"),
        ({"evaluations_per_iteration": 0}, ValueError, "must be positive"),
    ],
)
def test_bad_args(kwargs, error, match):
    _, ax = new_axes()
    with pytest.raises(error, match=match):
        qd_metric_curves(trials_frame([[1, 2]]), ax, **kwargs)


def test_bad_results_type():
    _, ax = new_axes()
    with pytest.raises(TypeError, match="results must be"):
        qd_metric_curves([], ax)
    with pytest.raises(TypeError, match="results must be"):
        qd_metric_curves({"a": 3}, ax)
