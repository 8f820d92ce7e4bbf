"""Tests for ribsax.visualize.cvt_archive_heatmap (oracle: ribs.visualize).

The function only needs an archive with ``centroids``; these tests use
ribsax's CVTArchive, a minimal stand-in object and pyribs' own CVTArchive as inputs.
"""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import ribs.archives
import ribs.visualize
import shapely
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection, QuadMesh
from matplotlib.figure import Figure

from ribsax.archives import CVTArchive
from ribsax.visualize import cvt_archive_heatmap


class StandInArchive:
    """The attributes cvt_archive_heatmap reads, and nothing else."""

    def __init__(self, centroids, lower, upper, index, objective):
        self.centroids = np.asarray(centroids, dtype=float)
        self.measure_dim = self.centroids.shape[1]
        self.cells = len(self.centroids)
        self.lower_bounds = np.asarray(lower, dtype=float)
        self.upper_bounds = np.asarray(upper, dtype=float)
        self._data = {
            "index": np.asarray(index, dtype=np.int32),
            "objective": np.asarray(objective, dtype=float),
        }

    def data(self, field):
        return self._data[field].copy()


def new_axes():
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def random_stand_in(n_cells=30, n_elites=12, dim=2, seed=1):
    rng = np.random.default_rng(seed)
    lower, upper = np.array([-1.0, 0.0][:dim]), np.array([1.0, 4.0][:dim])
    centroids = rng.uniform(lower, upper, size=(n_cells, dim))
    index = rng.choice(n_cells, size=n_elites, replace=False)
    return StandInArchive(centroids, lower, upper, index, rng.normal(size=n_elites))


def polys(ax):
    cols = [
        c for c in ax.collections if isinstance(c, PolyCollection) and not isinstance(c, QuadMesh)
    ]
    assert len(cols) == 1
    return cols[0]


def area(vertices):
    x, y = np.asarray(vertices).T
    return 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))


def colour_by_centroid(collection, centroids):
    """Maps each centroid to the RGBA of the polygon containing it."""
    collection.update_scalarmappable()
    faces = collection.get_facecolors()
    out = {}
    for path, face in zip(collection.get_paths(), faces):
        inside = [i for i, c in enumerate(centroids) if path.contains_point(c)]
        assert len(inside) == 1
        out[inside[0]] = face
    return out


def test_2d_polygon_i_is_cell_of_centroid_i():
    archive = random_stand_in()
    fig, ax = new_axes()
    out = cvt_archive_heatmap(archive, ax)
    fig.canvas.draw()
    assert out is ax

    col = polys(ax)
    paths = col.get_paths()
    assert len(paths) == archive.cells
    values = np.ma.asarray(col.get_array())
    expected = np.full(archive.cells, np.nan)
    expected[archive.data("index")] = archive.data("objective")
    np.testing.assert_array_equal(np.ma.filled(values, np.nan), expected)
    for i, path in enumerate(paths):
        assert path.contains_point(archive.centroids[i])
        # The polygon is the Voronoi cell: every vertex is at least as close to
        # centroid i as to any other centroid.
        dists = np.linalg.norm(path.vertices[:, None] - archive.centroids[None], axis=2)
        assert np.all(dists[:, i] <= dists.min(axis=1) + 1e-9)
    # Empty cells are transparent; filled ones opaque.
    col.update_scalarmappable()
    alpha = col.get_facecolors()[:, 3]
    np.testing.assert_array_equal(alpha == 0, np.isnan(expected))
    assert col.get_clim() == (archive.data("objective").min(), archive.data("objective").max())
    assert ax.get_xlim() == (-1.0, 1.0) and ax.get_ylim() == (0.0, 4.0)
    assert len(fig.axes) == 2


@pytest.mark.parametrize("input_archive", ["ribsax", "ribs"])
def test_2d_same_colours_as_pyribs(input_archive):
    rng = np.random.default_rng(3)
    centroids = rng.uniform(0, 1, size=(40, 2))
    batch = (rng.normal(size=(60, 2)), rng.normal(size=60), rng.uniform(0, 1, size=(60, 2)))
    kwargs = {"solution_dim": 2, "centroids": centroids, "ranges": [(0, 1), (0, 1)]}
    theirs = ribs.archives.CVTArchive(**kwargs)
    theirs.add(*batch)
    if input_archive == "ribsax":
        plotted = CVTArchive(**kwargs)
        plotted.add(*batch)
    else:
        plotted = theirs

    fig, ax = new_axes()
    cvt_archive_heatmap(plotted, ax, cmap="viridis")
    fig.canvas.draw()
    ref_fig, ref_ax = new_axes()
    ribs.visualize.cvt_archive_heatmap(theirs, ref_ax, cmap="viridis")
    ref_fig.canvas.draw()

    ours = colour_by_centroid(polys(ax), centroids)
    ref = colour_by_centroid(polys(ref_ax), centroids)
    assert ours.keys() == ref.keys()
    for i, face in ref.items():
        if face[3] == 0:  # Empty cell: both transparent.
            assert ours[i][3] == 0
        else:
            np.testing.assert_allclose(ours[i], face)
    assert ax.get_xlim() == ref_ax.get_xlim()
    assert ax.get_ylim() == ref_ax.get_ylim()
    assert len(fig.axes) == len(ref_fig.axes)


def test_2d_transpose_measures():
    archive = random_stand_in()
    fig, ax = new_axes()
    cvt_archive_heatmap(archive, ax, transpose_measures=True)
    fig.canvas.draw()
    assert ax.get_xlim() == (0.0, 4.0) and ax.get_ylim() == (-1.0, 1.0)
    for i, path in enumerate(polys(ax).get_paths()):
        assert path.contains_point(archive.centroids[i, ::-1])


def test_clip_true_tiles_the_bounds():
    archive = random_stand_in()
    fig, ax = new_axes()
    cvt_archive_heatmap(archive, ax, clip=True)
    fig.canvas.draw()
    paths = polys(ax).get_paths()
    assert len(paths) == archive.cells
    total = 0.0
    for i, path in enumerate(paths):
        verts = path.vertices
        assert np.all(verts >= archive.lower_bounds - 1e-9)
        assert np.all(verts <= archive.upper_bounds + 1e-9)
        assert path.contains_point(archive.centroids[i])
        total += area(verts)
    np.testing.assert_allclose(total, 2.0 * 4.0)


def test_clip_with_shapely_polygon_matches_clip_true():
    archive = random_stand_in()
    _, ax_box = new_axes()
    cvt_archive_heatmap(archive, ax_box, clip=True)
    _, ax_shape = new_axes()
    cvt_archive_heatmap(archive, ax_shape, clip=shapely.box(-1.0, 0.0, 1.0, 4.0))
    box_paths, shape_paths = polys(ax_box).get_paths(), polys(ax_shape).get_paths()
    assert len(box_paths) == len(shape_paths)
    for a, b in zip(box_paths, shape_paths):
        np.testing.assert_allclose(area(a.vertices), area(b.vertices))


def test_clip_with_shapely_polygon_splitting_cells():
    # A U-shaped region: a cell straddling the notch is cut into two pieces, each
    # carrying the cell's objective.
    centroids = np.array([[0.5, 0.9], [0.1, 0.1], [0.9, 0.1]])
    archive = StandInArchive(centroids, [0, 0], [1, 1], [0, 1, 2], [5.0, 6.0, 7.0])
    u_shape = shapely.Polygon(
        [(0, 0), (1, 0), (1, 1), (0.7, 1), (0.7, 0.3), (0.3, 0.3), (0.3, 1), (0, 1)]
    )
    _, ax = new_axes()
    cvt_archive_heatmap(archive, ax, clip=u_shape)
    col = polys(ax)
    values = np.asarray(col.get_array())
    np.testing.assert_allclose(sum(area(p.vertices) for p in col.get_paths()), u_shape.area)
    assert list(values).count(5.0) == 2


def test_plot_centroids():
    archive = random_stand_in()
    _, ax = new_axes()
    cvt_archive_heatmap(archive, ax, plot_centroids=True, ms=3)
    (line,) = ax.get_lines()
    np.testing.assert_allclose(np.c_[line.get_xdata(), line.get_ydata()], archive.centroids)
    assert line.get_markersize() == 3


def test_lw_ec_and_colour_limits():
    archive = random_stand_in()
    _, ax = new_axes()
    cvt_archive_heatmap(
        archive, ax, lw=2.0, ec="red", vmin=-5.0, vmax=5.0, cbar=None, rasterized=True
    )
    col = polys(ax)
    np.testing.assert_allclose(col.get_linewidth(), [2.0])
    np.testing.assert_allclose(col.get_edgecolor()[0], [1, 0, 0, 1])
    assert col.get_clim() == (-5.0, 5.0)
    assert col.get_rasterized()
    assert len(ax.figure.axes) == 1


def test_df_replaces_archive_data():
    archive = random_stand_in()
    df = {"index": archive.data("index")[:3], "objective": np.array([7.0, 8.0, 9.0])}
    import pandas as pd

    _, ax = new_axes()
    cvt_archive_heatmap(archive, ax, df=pd.DataFrame(df))
    values = np.ma.filled(np.ma.asarray(polys(ax).get_array()), np.nan)
    np.testing.assert_array_equal(values[df["index"]], df["objective"])
    assert np.count_nonzero(~np.isnan(values)) == 3


def test_1d_cells_between_centroid_midpoints():
    centroids = np.array([[0.8], [0.1], [0.4]])
    archive = StandInArchive(centroids, [0.0], [1.0], [0, 2], [3.0, -1.0])
    fig, ax = new_axes()
    cvt_archive_heatmap(archive, ax, plot_centroids=True, lw=0.0, ec="blue")
    fig.canvas.draw()
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    np.testing.assert_allclose(mesh.get_coordinates()[0, :, 0], [0.0, 0.25, 0.6, 1.0])
    # Sorted order: centroid 1 (empty), centroid 2 (-1), centroid 0 (3).
    np.testing.assert_array_equal(
        np.ma.filled(np.ma.asarray(mesh.get_array(), dtype=float), np.nan).ravel(),
        [np.nan, -1.0, 3.0],
    )
    np.testing.assert_allclose(mesh.get_edgecolor()[0], [0, 0, 1, 1])
    assert ax.get_aspect() == 0.5
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), 0.5)


def test_1d_same_mesh_as_pyribs():
    rng = np.random.default_rng(5)
    kwargs = {"solution_dim": 1, "centroids": rng.uniform(-2, 2, size=(15, 1)), "ranges": [(-2, 2)]}
    batch = (rng.normal(size=(20, 1)), rng.normal(size=20), rng.uniform(-2, 2, size=(20, 1)))
    ours = CVTArchive(**kwargs)
    ours.add(*batch)
    theirs = ribs.archives.CVTArchive(**kwargs)
    theirs.add(*batch)
    _, ax = new_axes()
    cvt_archive_heatmap(ours, ax)
    _, ref_ax = new_axes()
    ribs.visualize.cvt_archive_heatmap(theirs, ref_ax)
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    (ref,) = [c for c in ref_ax.collections if isinstance(c, QuadMesh)]
    np.testing.assert_array_equal(
        np.ma.filled(np.ma.asarray(mesh.get_array(), dtype=float), np.nan),
        np.ma.filled(np.ma.asarray(ref.get_array(), dtype=float), np.nan),
    )
    np.testing.assert_allclose(mesh.get_coordinates(), ref.get_coordinates())
    assert mesh.get_clim() == ref.get_clim()


def test_plot_samples_is_deprecated():
    _, ax = new_axes()
    with pytest.raises(
        ValueError,
        match=r"^`plot_samples` is deprecated in pyribs "
        r"0.9.0, as CVTArchive no longer stores samples.$",
    ):
        cvt_archive_heatmap(random_stand_in(), ax, plot_samples=True)


def test_invalid_args():
    _, ax = new_axes()
    with pytest.raises(ValueError, match=r"^Invalid arg aspect='tall'"):
        cvt_archive_heatmap(random_stand_in(), ax, aspect="tall")
    with pytest.raises(
        ValueError,
        match=r"^Invalid arg cbar=1; must be 'auto', "
        r"None, or matplotlib.axes.Axes$",
    ):
        cvt_archive_heatmap(random_stand_in(), ax, cbar=1)
    three_d = StandInArchive(np.zeros((4, 3)), [0] * 3, [1] * 3, [], [])
    with pytest.raises(ValueError, match="^Heatmap can only be plotted for a 1D or 2D CVTArchive$"):
        cvt_archive_heatmap(three_d, ax)


def test_axes_and_colour_bar_labelled():
    archive = random_stand_in()
    fig, ax = new_axes()
    cvt_archive_heatmap(archive, ax)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measure_0", "measure_1")
    assert fig.axes[1].get_ylabel() == "objective"
    archive_1d = random_stand_in(dim=1)
    fig, ax = new_axes()
    cvt_archive_heatmap(archive_1d, ax, cbar_kwargs={"label": "fitness"})
    assert ax.get_xlabel() == "measure_0"
    assert fig.axes[1].get_ylabel() == "fitness"
