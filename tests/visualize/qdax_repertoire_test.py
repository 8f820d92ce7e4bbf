"""Tests for ribsax.visualize.qdax_repertoire_heatmap and qdax_repertoire_3d_plot
(oracle: ribs.visualize's functions of the same names)."""

import dataclasses

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import ribs.visualize
from matplotlib.figure import Figure

from ribsax.visualize import qdax_repertoire_3d_plot, qdax_repertoire_heatmap
from ribsax.visualize._qdax_repertoire import repertoire_archive


@dataclasses.dataclass
class Repertoire:
    """The arrays of a QDax MapElitesRepertoire that the plots read."""

    centroids: np.ndarray
    fitnesses: np.ndarray
    descriptors: np.ndarray


def repertoire(measure_dim=2, cells=30, fitness_columns=1, seed=0):
    rng = np.random.default_rng(seed)
    centroids = rng.uniform(-1, 1, (cells, measure_dim))
    fitnesses = rng.uniform(0, 5, (cells, fitness_columns))
    fitnesses[::3] = -np.inf  # Empty cells.
    descriptors = centroids + rng.uniform(-0.01, 0.01, centroids.shape)
    return Repertoire(centroids, fitnesses, descriptors)


def test_archive_holds_the_filled_cells_of_the_repertoire():
    rep = repertoire()
    archive = repertoire_archive(rep, [(-1, 1), (-1, 1)])
    filled = np.isfinite(rep.fitnesses[:, 0])
    assert len(archive) == filled.sum() and archive.solution_dim == 0
    data = archive.data()
    # Each elite sits in the cell of its own centroid (descriptors are close to it).
    np.testing.assert_array_equal(np.sort(data["index"]), np.flatnonzero(filled))
    np.testing.assert_allclose(data["objective"], rep.fitnesses[data["index"], 0], rtol=1e-6)


def test_conversion_equals_pyribs_and_the_heatmap_draws_it():
    from ribs.visualize._visualize_qdax import _as_cvt_archive

    rep = repertoire()
    ranges = [(-1, 1), (-1, 1)]
    ours = repertoire_archive(rep, ranges).data(return_type="pandas")
    theirs = _as_cvt_archive(rep, ranges).data(return_type="pandas")
    ours, theirs = ours.sort_values("index"), theirs.sort_values("index")
    np.testing.assert_array_equal(ours["index"], theirs["index"])
    np.testing.assert_allclose(ours["objective"], theirs["objective"], rtol=1e-6)
    np.testing.assert_allclose(
        ours[["measures_0", "measures_1"]], theirs[["measures_0", "measures_1"]], rtol=1e-6
    )
    ax = Figure().add_subplot()
    assert qdax_repertoire_heatmap(rep, ranges, ax=ax, vmin=0, vmax=5) is ax
    assert ax.collections and ax.get_xlim() == (-1, 1)


def test_3d_plot():
    rep = repertoire(measure_dim=3, cells=40)
    ax = Figure().add_subplot(projection="3d")
    assert qdax_repertoire_3d_plot(rep, [(-1, 1)] * 3, ax=ax) is ax
    assert ax.collections


@pytest.mark.parametrize("plot", ["qdax_repertoire_heatmap", "qdax_repertoire_3d_plot"])
def test_several_fitnesses_raise_as_pyribs(plot):
    rep = repertoire(measure_dim=3 if "3d" in plot else 2, fitness_columns=2)
    ranges = [(-1, 1)] * rep.centroids.shape[1]
    with pytest.raises(ValueError) as theirs:
        getattr(ribs.visualize, plot)(rep, ranges)
    import ribsax.visualize

    with pytest.raises(ValueError) as ours:
        getattr(ribsax.visualize, plot)(rep, ranges)
    assert str(ours.value) == str(theirs.value)
