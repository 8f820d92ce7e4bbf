"""Tests for ribsax.visualize.cvt_archive_3d_plot (oracle: ribs.visualize)."""

import matplotlib
import numpy as np
import pytest
import ribs.archives
import ribs.visualize
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from ribsax.archives import CVTArchive
from ribsax.visualize import cvt_archive_3d_plot
from tests.visualize.plot_helpers import assert_same_error, fill, new_axes


def archives(measure_dim=3, cells=30, n=40):
    centroids = np.random.default_rng(1).uniform(-1, 1, size=(cells, measure_dim))
    ranges = [(-1, 1)] * measure_dim
    ours = CVTArchive(solution_dim=3, centroids=centroids, ranges=ranges)
    theirs = ribs.archives.CVTArchive(solution_dim=3, centroids=centroids, ranges=ranges)
    fill([ours, theirs], measure_dim, n)
    return ours, theirs


def faces_of(ax):
    (faces,) = [c for c in ax.collections if isinstance(c, Poly3DCollection)]
    return faces


def test_faces_coloured_like_pyribs():
    ours, theirs = archives()
    fig, ax = new_axes(projection="3d")
    out = cvt_archive_3d_plot(ours, ax, vmin=-1, vmax=1)
    fig.canvas.draw()
    fig2, ax2 = new_axes(projection="3d")
    ribs.visualize.cvt_archive_3d_plot(theirs, ax2, vmin=-1, vmax=1)
    fig2.canvas.draw()
    assert out is ax
    ours_faces, theirs_faces = faces_of(ax), faces_of(ax2)
    ours_colours = ours_faces.get_facecolor()
    # Same faces (same Voronoi diagram) with the same base colours; sort rows
    # since shading may differ with the face order.
    theirs_colours = theirs_faces.get_facecolor()
    assert len(ours_colours) == len(theirs_colours)
    np.testing.assert_allclose(
        ours_colours[np.lexsort(ours_colours.T)], theirs_colours[np.lexsort(theirs_colours.T)]
    )
    filled = ours_colours[:, 3] > 0
    assert 0 < filled.sum() < len(filled)  # Some cells are empty (transparent).
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()) == (
        "measure_0",
        "measure_1",
        "measure_2",
    )
    cbar_ax = fig.axes[-1]
    assert cbar_ax.get_ylabel() == "objective"
    assert cbar_ax.get_ylim() == (-1, 1)


def test_filled_faces_are_exactly_the_occupied_cells():
    centroids = np.array([[-0.5, -0.5, -0.5], [0.5, 0.5, 0.5]])
    archive = CVTArchive(solution_dim=1, centroids=centroids, ranges=[(-1, 1)] * 3)
    archive.add(np.zeros((1, 1)), [2.0], [[0.4, 0.6, 0.5]])  # Cell 1 only.
    fig, ax = new_axes(projection="3d")
    cvt_archive_3d_plot(archive, ax, cmap=["red", "blue"], cell_alpha=0.5)
    faces = faces_of(ax)
    colours = faces.get_facecolor()
    # The plane x + y + z = 0 halves the box: each half has a piece of every
    # box face plus the shared hexagon, 7 faces per cell.
    assert len(colours) == 14
    filled = colours[colours[:, 3] > 0]
    assert len(filled) == 7  # The occupied cell's faces.
    np.testing.assert_allclose(filled[:, 3], 0.5)
    np.testing.assert_allclose(filled[:, :3], np.tile([0.0, 0.0, 1.0], (7, 1)))


def test_measure_order_permutes_axes_and_elites():
    ours, _ = archives()
    fig, ax = new_axes(projection="3d")
    cvt_archive_3d_plot(
        ours, ax, measure_order=[2, 0, 1], plot_elites=True, plot_centroids=True, cbar=None
    )
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()) == (
        "measure_2",
        "measure_0",
        "measure_1",
    )
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_data_3d()[0], ours.centroids[:, 2])
    assert len(fig.axes) == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"plot_samples": []}, {"measure_order": [0, 1, 1]}, {"cbar": "right"}, {"vmin": 1, "vmax": 0}],
)
def test_bad_args_match_pyribs(kwargs):
    ours, theirs = archives()
    _, ax = new_axes(projection="3d")
    assert_same_error(
        lambda: cvt_archive_3d_plot(ours, ax, **kwargs),
        lambda: ribs.visualize.cvt_archive_3d_plot(theirs, ax, **kwargs),
    )


def test_not_3d_matches_pyribs():
    ours, theirs = archives(measure_dim=2)
    _, ax = new_axes(projection="3d")
    assert_same_error(
        lambda: cvt_archive_3d_plot(ours, ax),
        lambda: ribs.visualize.cvt_archive_3d_plot(theirs, ax),
    )
    assert matplotlib.get_backend().lower() == "agg"
