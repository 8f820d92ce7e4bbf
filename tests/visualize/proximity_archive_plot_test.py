"""Tests for ribsax.visualize.proximity_archive_plot.

The plot works with any archive exposing pyribs' interface, so it is tested on
pyribs' own ProximityArchive (also the oracle), on ribsax's, and on a minimal
stand-in.
"""

import numpy as np
import pytest
import ribs.archives
import ribs.visualize

from ribsax.archives import ProximityArchive
from ribsax.visualize import proximity_archive_plot
from tests.visualize.plot_helpers import (
    assert_same_error,
    colorbar_axes,
    new_axes,
    new_figure,
    points_of,
)


def proximity_archive(measure_dim=2, n=100):
    archive = ribs.archives.ProximityArchive(
        solution_dim=3,
        measure_dim=measure_dim,
        k_neighbors=3,
        novelty_threshold=0.05,
        local_competition=True,
    )
    rng = np.random.default_rng(0)
    archive.add(
        rng.normal(size=(n, 3)), rng.normal(size=n), rng.uniform(-1, 1, size=(n, measure_dim))
    )
    return archive


class StandIn:
    """The least a proximity archive needs for plotting: measure_dim and data()."""

    measure_dim = 2

    def __init__(self, measures, objective):
        self._data = {
            "measures": np.asarray(measures, dtype=float),
            "objective": np.asarray(objective, dtype=float),
        }

    def data(self, field):
        return self._data[field]


def test_points_and_default_bounds():
    archive = proximity_archive()
    fig, ax = new_axes()
    out = proximity_archive_plot(archive, ax)
    fig.canvas.draw()
    assert out is ax
    measures = archive.data("measures")
    np.testing.assert_allclose(points_of(ax).get_offsets(), measures)
    np.testing.assert_allclose(points_of(ax).get_array(), archive.data("objective"))
    np.testing.assert_allclose(
        ax.get_xlim(), [measures[:, 0].min() - 0.01, measures[:, 0].max() + 0.01]
    )
    np.testing.assert_allclose(
        ax.get_ylim(), [measures[:, 1].min() - 0.01, measures[:, 1].max() + 0.01]
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measure_0", "measure_1")
    assert colorbar_axes(fig, ax)[0].get_ylabel() == "objective"


def test_ribsax_archive_matches_pyribs_plot():
    """ribsax's ProximityArchive, filled like pyribs', plots the same points."""
    theirs = proximity_archive()
    ours = ProximityArchive(
        solution_dim=3, measure_dim=2, k_neighbors=3, novelty_threshold=0.05, local_competition=True
    )
    rng = np.random.default_rng(0)
    ours.add(rng.normal(size=(100, 3)), rng.normal(size=100), rng.uniform(-1, 1, size=(100, 2)))
    ax1, ax2 = new_figure().subplots(1, 2)
    proximity_archive_plot(ours, ax1)
    ribs.visualize.proximity_archive_plot(theirs, ax2)
    np.testing.assert_allclose(points_of(ax1).get_offsets(), points_of(ax2).get_offsets())
    np.testing.assert_allclose(points_of(ax1).get_array(), points_of(ax2).get_array())
    assert ax1.get_xlim() == ax2.get_xlim() and ax1.get_ylim() == ax2.get_ylim()


def test_matches_pyribs_with_bounds_and_transpose():
    archive = proximity_archive()
    ax1, ax2 = new_figure().subplots(1, 2)
    kwargs = {
        "lower_bounds": [-2, -3],
        "upper_bounds": [2, 3],
        "transpose_measures": True,
        "vmin": -1,
        "vmax": 1,
        "ms": 4,
    }
    proximity_archive_plot(archive, ax1, **kwargs)
    ribs.visualize.proximity_archive_plot(archive, ax2, **kwargs)
    assert ax1.get_xlim() == ax2.get_xlim() == (-3, 3)
    assert ax1.get_ylim() == ax2.get_ylim() == (-2, 2)
    np.testing.assert_allclose(points_of(ax1).get_offsets(), points_of(ax2).get_offsets())
    assert points_of(ax1).get_clim() == points_of(ax2).get_clim() == (-1, 1)
    np.testing.assert_allclose(points_of(ax1).get_sizes(), [4])


def test_stand_in_archive_and_empty_archive():
    fig, ax = new_axes()
    proximity_archive_plot(StandIn([[0.0, 1.0], [2.0, 3.0]], [5.0, 6.0]), ax, cbar=None)
    np.testing.assert_allclose(points_of(ax).get_offsets(), [[0, 1], [2, 3]])
    assert points_of(ax).get_clim() == (5.0, 6.0)
    assert len(fig.axes) == 1

    fig, ax = new_axes()
    proximity_archive_plot(StandIn(np.zeros((0, 2)), []), ax)
    assert ax.get_xlim() == pytest.approx((-0.01, 0.01))
    assert points_of(ax).get_clim() == pytest.approx((-0.1, 0.1))


@pytest.mark.parametrize(
    "kwargs", [{"aspect": 3}, {"aspect": "tall"}, {"cbar": 1}, {"vmin": 2, "vmax": 1}]
)
def test_bad_args_match_pyribs(kwargs):
    archive = proximity_archive()
    _, ax = new_axes()
    if kwargs == {"aspect": 3}:
        # ribsax accepts integer aspects (pyribs wants a float); documented.
        proximity_archive_plot(archive, ax, **kwargs)
        assert ax.get_aspect() == 3
        return
    assert_same_error(
        lambda: proximity_archive_plot(archive, ax, **kwargs),
        lambda: ribs.visualize.proximity_archive_plot(archive, ax, **kwargs),
    )


def test_3d_archive_matches_pyribs():
    archive = proximity_archive(measure_dim=3)
    _, ax = new_axes()
    assert_same_error(
        lambda: proximity_archive_plot(archive, ax),
        lambda: ribs.visualize.proximity_archive_plot(archive, ax),
    )
