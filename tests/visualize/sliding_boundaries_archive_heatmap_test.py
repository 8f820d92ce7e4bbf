"""Tests for ribsax.visualize.sliding_boundaries_archive_heatmap (oracle: ribs)."""

import matplotlib.collections
import numpy as np
import pytest
import ribs.archives
import ribs.visualize

from ribsax.archives import SlidingBoundariesArchive
from ribsax.visualize import sliding_boundaries_archive_heatmap
from tests.visualize.plot_helpers import (
    assert_same_error,
    colorbar_axes,
    fill,
    new_axes,
    new_figure,
    points_of,
)


def archives(dims=(4, 5), n=200):
    ranges = [(-1, 1)] * len(dims)
    ours = SlidingBoundariesArchive(solution_dim=3, dims=dims, ranges=ranges, remap_frequency=50)
    theirs = ribs.archives.SlidingBoundariesArchive(
        solution_dim=3, dims=dims, ranges=ranges, remap_frequency=50
    )
    fill([ours, theirs], len(dims), n)
    return ours, theirs


def test_points_are_elites_coloured_by_objective():
    ours, _ = archives()
    fig, ax = new_axes()
    out = sliding_boundaries_archive_heatmap(ours, ax, vmin=-0.5, vmax=0.5)
    fig.canvas.draw()
    assert out is ax
    points = points_of(ax)
    np.testing.assert_allclose(points.get_offsets(), ours.data("measures"))
    np.testing.assert_allclose(points.get_array(), ours.data("objective"))
    assert points.get_clim() == (-0.5, 0.5)
    # The view follows the archive's current (remapped) bounds.
    assert ax.get_xlim() == (ours.lower_bounds[0], ours.upper_bounds[0])
    assert ax.get_ylim() == (ours.lower_bounds[1], ours.upper_bounds[1])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measure_0", "measure_1")
    (cax,) = colorbar_axes(fig, ax)
    assert cax.get_ylabel() == "objective"


def test_same_points_as_pyribs_and_transpose():
    ours, theirs = archives()
    ax1, ax2 = new_figure().subplots(1, 2)
    sliding_boundaries_archive_heatmap(ours, ax1, transpose_measures=True)
    ribs.visualize.sliding_boundaries_archive_heatmap(theirs, ax2, transpose_measures=True)
    ours_pts, theirs_pts = points_of(ax1), points_of(ax2)
    order_ours = np.lexsort(ours_pts.get_offsets().T)
    order_theirs = np.lexsort(theirs_pts.get_offsets().T)
    np.testing.assert_allclose(
        ours_pts.get_offsets()[order_ours], theirs_pts.get_offsets()[order_theirs]
    )
    np.testing.assert_allclose(ours_pts.get_offsets()[:, 0], ours.data("measures")[:, 1])
    assert ax1.get_xlabel() == "measure_1"
    assert ours_pts.get_clim() == theirs_pts.get_clim()


def test_boundaries_drawn_at_archive_boundaries():
    ours, _ = archives()
    fig, ax = new_axes()
    sliding_boundaries_archive_heatmap(ours, ax, boundary_lw=0.5, cbar=None)
    lines = [c for c in ax.collections if isinstance(c, matplotlib.collections.LineCollection)]
    assert len(lines) == 2
    vertical = np.array([seg[0, 0] for seg in lines[0].get_segments()])
    horizontal = np.array([seg[0, 1] for seg in lines[1].get_segments()])
    np.testing.assert_allclose(vertical, ours.boundaries[0])
    np.testing.assert_allclose(horizontal, ours.boundaries[1])
    assert len(fig.axes) == 1  # cbar=None: no colour bar.


def test_df_replaces_archive_data():
    ours, _ = archives()
    df = ours.data(return_type="pandas")
    df["objective"] = 7.0
    fig, ax = new_axes()
    sliding_boundaries_archive_heatmap(ours, ax, df=df)
    np.testing.assert_allclose(points_of(ax).get_array(), 7.0)
    # Equal objectives: limits spread by 0.1 either side, as pyribs.
    assert points_of(ax).get_clim() == pytest.approx((6.9, 7.1))


@pytest.mark.parametrize("kwargs", [{"aspect": "wide"}, {"cbar": "left"}])
def test_bad_args_match_pyribs(kwargs):
    ours, theirs = archives()
    _, ax = new_axes()
    assert_same_error(
        lambda: sliding_boundaries_archive_heatmap(ours, ax, **kwargs),
        lambda: ribs.visualize.sliding_boundaries_archive_heatmap(theirs, ax, **kwargs),
    )


def test_not_2d_matches_pyribs():
    ours, theirs = archives(dims=(4, 5, 6))
    _, ax = new_axes()
    assert_same_error(
        lambda: sliding_boundaries_archive_heatmap(ours, ax),
        lambda: ribs.visualize.sliding_boundaries_archive_heatmap(theirs, ax),
    )


def test_vmax_below_vmin_matches_pyribs():
    ours, theirs = archives()
    _, ax = new_axes()
    assert_same_error(
        lambda: sliding_boundaries_archive_heatmap(ours, ax, vmin=1, vmax=0),
        lambda: ribs.visualize.sliding_boundaries_archive_heatmap(theirs, ax, vmin=1, vmax=0),
    )
