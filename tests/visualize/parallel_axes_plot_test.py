"""Tests for ribsax.visualize.parallel_axes_plot (oracle: ribs.visualize)."""

import matplotlib
import matplotlib.collections
import numpy as np
import pytest
import ribs.archives
import ribs.visualize

from ribsax.archives import CVTArchive, GridArchive
from ribsax.visualize import parallel_axes_plot
from tests.visualize.plot_helpers import assert_same_error, fill, new_axes


def grid_archives(n=60):
    ranges = [(-1, 1), (0, 10), (-5, 5)]
    ours = GridArchive(solution_dim=3, dims=[5, 5, 5], ranges=ranges)
    theirs = ribs.archives.GridArchive(solution_dim=3, dims=[5, 5, 5], ranges=ranges)
    fill([ours, theirs], 3, n, lo=np.array([-1, 0, -5]), hi=np.array([1, 10, 5]))
    return ours, theirs


def lines_of(ax):
    (lines,) = [c for c in ax.collections if isinstance(c, matplotlib.collections.LineCollection)]
    return lines


def test_lines_follow_measures_rescaled_to_first_axis():
    ours, _ = grid_archives()
    fig, ax = new_axes()
    out = parallel_axes_plot(ours, ax, measure_order=[1, 2], vmin=-1, vmax=1)
    fig.canvas.draw()
    assert out is ax
    measures = ours.data("measures")
    segments = np.array(lines_of(ax).get_segments())  # (elites, 2 axes, xy)
    np.testing.assert_allclose(segments[:, :, 0], np.tile([0, 1], (len(measures), 1)))
    np.testing.assert_allclose(segments[:, 0, 1], measures[:, 1])
    # measure 2 in [-5, 5] drawn on measure 1's scale [0, 10].
    np.testing.assert_allclose(segments[:, 1, 1], measures[:, 2] + 5)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["measure_1", "measure_2"]
    assert len(fig.axes) == 3  # host, one twin, colour bar.
    twin = fig.axes[1]
    assert twin.get_ylim() == (-5, 5) and ax.get_ylim() == (0, 10)


def test_colours_and_limits():
    ours, _ = grid_archives()
    fig, ax = new_axes()
    parallel_axes_plot(ours, ax, vmin=-0.5, vmax=0.5, cmap="viridis", alpha=1.0)
    cmap = matplotlib.colormaps["viridis"]
    objective = ours.data("objective")
    expected = cmap(np.clip((objective + 0.5) / 1.0, 0, 1))
    np.testing.assert_allclose(lines_of(ax).get_colors(), expected)
    cbar_ax = fig.axes[-1]
    assert cbar_ax.get_xlabel() == "objective"  # Horizontal colour bar.
    assert cbar_ax.get_xlim() == (-0.5, 0.5)


def test_same_lines_as_pyribs_with_labels_and_sort():
    ours, theirs = grid_archives()
    order = [(2, "z"), (0, "x"), (1, "y")]
    fig, ax1 = new_axes()
    parallel_axes_plot(ours, ax1, measure_order=order, sort_archive=True)
    fig2, ax2 = new_axes()
    ribs.visualize.parallel_axes_plot(theirs, ax2, measure_order=order, sort_archive=True)
    ours_segments = np.array(lines_of(ax1).get_segments())[:, :, 1]
    theirs_lines = np.array([line.get_ydata() for line in ax2.get_lines()])
    # Both sorted by objective: compare in objective order.
    np.testing.assert_allclose(np.sort(ours_segments, axis=0), np.sort(theirs_lines, axis=0))
    # Sorted: row i is the elite of rank i (measure 0 in [-1, 1] drawn on
    # measure 2's scale [-5, 5]).
    np.testing.assert_allclose(
        ours_segments[:, 1],
        ours.data("measures")[np.argsort(ours.data("objective")), 0] * 5 + 0,
        atol=1e-12,
    )
    assert (
        [t.get_text() for t in ax1.get_xticklabels()]
        == [t.get_text() for t in ax2.get_xticklabels()]
        == ["z", "x", "y"]
    )
    assert [a.get_ylim() for a in fig.axes[:3]] == [a.get_ylim() for a in fig2.axes[:3]]


def test_cvt_archive_and_df():
    archive = CVTArchive(solution_dim=3, centroids=20, ranges=[(0, 1)] * 4, seed=0)
    fill([archive], 4, 50, lo=0.0, hi=1.0)
    df = archive.data(return_type="pandas")
    df["objective"] = np.arange(len(df), dtype=float)
    fig, ax = new_axes()
    parallel_axes_plot(archive, ax, df=df, cbar=None)
    assert len(lines_of(ax).get_segments()) == len(df)
    assert len(fig.axes) == 4  # No colour bar.


@pytest.mark.parametrize("order", [[0, "x"], [(0, 1)], [3], [0, -1], ["a"]])
def test_bad_measure_order_matches_pyribs(order):
    ours, theirs = grid_archives()
    _, ax = new_axes()
    if order == [0, "x"]:
        # pyribs raises TypeError("object of type 'int' has no len()") for a
        # mixed list; ribsax raises its documented TypeError instead.
        with pytest.raises(TypeError, match="measure_order must be a list of ints"):
            parallel_axes_plot(ours, ax, measure_order=order)
        return
    assert_same_error(
        lambda: parallel_axes_plot(ours, ax, measure_order=order),
        lambda: ribs.visualize.parallel_axes_plot(theirs, ax, measure_order=order),
    )


def test_bad_cbar_and_limits_match_pyribs():
    ours, theirs = grid_archives()
    _, ax = new_axes()
    assert_same_error(
        lambda: parallel_axes_plot(ours, ax, vmin=3, vmax=2),
        lambda: ribs.visualize.parallel_axes_plot(theirs, ax, vmin=3, vmax=2),
    )
