"""Tests for ribsax.visualize.archive_histogram (oracle: ribs.visualize)."""

import matplotlib
import numpy as np
import pytest
import ribs.visualize

from ribsax.visualize import archive_histogram
from tests.visualize.plot_helpers import (
    NoDataArchive,
    assert_same_error,
    grid_pair,
    new_axes,
)


def archives():
    return grid_pair([20, 20], 300)


def heights(ax):
    return np.array([p.get_height() for p in ax.patches])


def test_counts_match_numpy_and_pyribs():
    ours, theirs = archives()
    fig, ax = new_axes()
    out = archive_histogram(ours, ax, bins=10, vmin=-1, vmax=1, ylim=50)
    fig.canvas.draw()
    _, ax2 = new_axes()
    ribs.visualize.archive_histogram(theirs, ax2, bins=10, vmin=-1, vmax=1, ylim=50)
    assert out is ax
    expected, edges = np.histogram(ours.data("objective"), bins=10, range=(-1, 1))
    np.testing.assert_array_equal(heights(ax), expected)
    np.testing.assert_array_equal(heights(ax), heights(ax2))
    np.testing.assert_allclose([p.get_x() for p in ax.patches], edges[:-1])
    assert ax.get_ylim()[1] == 50
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("objective", "number of elites")
    colour = matplotlib.colors.to_rgba("#7e57c2")
    assert all(p.get_facecolor() == colour for p in ax.patches)


def test_cmap_colours_bars_by_centre():
    ours, theirs = archives()
    _, ax = new_axes()
    archive_histogram(ours, ax, bins=4, vmin=0, vmax=4, cmap="viridis")
    _, ax2 = new_axes()
    ribs.visualize.archive_histogram(theirs, ax2, bins=4, vmin=0, vmax=4, cmap="viridis")
    viridis = matplotlib.colormaps["viridis"]
    expected = [viridis((c - 0) / 4) for c in (0.5, 1.5, 2.5, 3.5)]
    np.testing.assert_allclose([p.get_facecolor() for p in ax.patches], expected)
    np.testing.assert_allclose(
        [p.get_facecolor() for p in ax.patches], [p.get_facecolor() for p in ax2.patches]
    )


def test_df_and_hist_kwargs():
    ours, _ = archives()
    df = ours.data(return_type="pandas")
    df["objective"] = 0.5
    _, ax = new_axes()
    archive_histogram(ours, ax, df=df, bins=3, hist_kwargs={"bins": 99, "alpha": 0.5})
    assert len(ax.patches) == 3  # bins wins over hist_kwargs.
    assert heights(ax).sum() == len(df)
    assert ax.patches[0].get_alpha() == 0.5


def test_errors_match_pyribs():
    ours, theirs = archives()
    _, ax = new_axes()
    assert_same_error(
        lambda: archive_histogram(NoDataArchive(), ax),
        lambda: ribs.visualize.archive_histogram(NoDataArchive(), ax),
    )
    assert_same_error(
        lambda: archive_histogram(ours, ax, vmin=1, vmax=0),
        lambda: ribs.visualize.archive_histogram(theirs, ax, vmin=1, vmax=0),
    )
    with pytest.raises(AttributeError, match="archive_histogram"):
        archive_histogram(NoDataArchive(), ax)
