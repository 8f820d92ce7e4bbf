"""Tests for ribsax.visualize.aggregate_cdf (oracle: ribs.visualize)."""

import numpy as np
import pytest
import ribs.archives
import ribs.visualize

from ribsax.archives import GridArchive
from ribsax.visualize import aggregate_cdf
from tests.visualize.plot_helpers import NoDataArchive, assert_same_error, fill, new_axes


def archives(count=3):
    pairs = []
    for seed in range(count):
        ours = GridArchive(solution_dim=3, dims=[10, 10], ranges=[(-1, 1)] * 2)
        theirs = ribs.archives.GridArchive(solution_dim=3, dims=[10, 10], ranges=[(-1, 1)] * 2)
        fill([ours, theirs], 2, 60 + 20 * seed, seed=seed)
        pairs.append((ours, theirs))
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"cumulative": -1, "estimator": "median", "errorbar": "iqr"},
        {"cumulative": False, "errorbar": "se", "bins": 7, "vmin": -2, "vmax": 2},
        {"errorbar": None, "show_edges": False},
    ],
)
def test_patches_match_pyribs(kwargs):
    ours, theirs = archives()
    fig, ax = new_axes()
    line, band = aggregate_cdf(ours, ax, **kwargs)
    fig.canvas.draw()
    _, ax2 = new_axes()
    their_line, their_band = ribs.visualize.aggregate_cdf(theirs, ax2, **kwargs)
    for a, b in [(line, their_line), (band, their_band)]:
        if b is None:
            assert a is None
            continue
        for x, y in zip(a.get_data(), b.get_data()):
            np.testing.assert_allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    assert line in ax.patches
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("objective", "number of elites")


def test_mean_of_cumulative_counts():
    ours, _ = archives(2)
    _, ax = new_axes()
    line, _ = aggregate_cdf(ours, ax, bins=5, vmin=-3, vmax=3, errorbar=None)
    values, edges, _ = line.get_data()
    per_archive = [np.cumsum(np.histogram(a.data("objective"), 5, (-3, 3))[0]) for a in ours]
    np.testing.assert_allclose(values, np.mean(per_archive, axis=0))
    np.testing.assert_allclose(edges, np.linspace(-3, 3, 6))
    assert values[-1] == np.mean([len(a) for a in ours])


def test_dfs_replace_archive_data():
    ours, _ = archives(2)
    dfs = [a.data(return_type="pandas") for a in ours]
    for df in dfs:
        df["objective"] = 1.0
    _, ax = new_axes()
    line, _ = aggregate_cdf(ours, ax, dfs=dfs, bins=2)
    values, edges, _ = line.get_data()
    np.testing.assert_allclose(edges, [0.9, 1.0, 1.1])
    assert values[-1] == np.mean([len(df) for df in dfs])


@pytest.mark.parametrize(
    "kwargs", [{"estimator": "mode"}, {"errorbar": "ci"}, {"vmin": 1, "vmax": 0}]
)
def test_bad_args_match_pyribs(kwargs):
    ours, theirs = archives(2)
    _, ax = new_axes()
    assert_same_error(
        lambda: aggregate_cdf(ours, ax, **kwargs),
        lambda: ribs.visualize.aggregate_cdf(theirs, ax, **kwargs),
    )


def test_dfs_length_and_missing_data_match_pyribs():
    ours, theirs = archives(2)
    _, ax = new_axes()
    dfs = [ours[0].data(return_type="pandas")]
    assert_same_error(
        lambda: aggregate_cdf(ours, ax, dfs=dfs),
        lambda: ribs.visualize.aggregate_cdf(theirs, ax, dfs=dfs),
    )
    assert_same_error(
        lambda: aggregate_cdf([NoDataArchive()], ax),
        lambda: ribs.visualize.aggregate_cdf([NoDataArchive()], ax),
    )
