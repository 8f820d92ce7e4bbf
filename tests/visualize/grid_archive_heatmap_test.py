"""Tests for ribsax.visualize.grid_archive_heatmap (oracle: ribs.visualize)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import ribs.archives
import ribs.visualize
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ribsax.archives import GridArchive
from ribsax.visualize import grid_archive_heatmap


def new_axes():
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def filled_archives(dims, ranges, n, seed=0):
    """A ribsax and a ribs GridArchive fed the same random batch."""
    rng = np.random.default_rng(seed)
    lo = np.array([r[0] for r in ranges])
    hi = np.array([r[1] for r in ranges])
    measures = rng.uniform(lo, hi, size=(n, len(dims)))
    objective = rng.normal(size=n)
    solution = rng.normal(size=(n, 3))
    ours = GridArchive(solution_dim=3, dims=dims, ranges=ranges)
    theirs = ribs.archives.GridArchive(solution_dim=3, dims=dims, ranges=ranges)
    ours.add(solution, objective, measures)
    theirs.add(solution, objective, measures)
    return ours, theirs


def mesh_of(ax):
    meshes = [c for c in ax.collections if isinstance(c, matplotlib.collections.QuadMesh)]
    assert len(meshes) == 1
    return meshes[0]


def mesh_values(ax):
    return np.ma.filled(np.ma.asarray(mesh_of(ax).get_array(), dtype=float), np.nan)


def test_2d_cells_hold_archive_objectives():
    archive = GridArchive(solution_dim=2, dims=[4, 3], ranges=[(0, 4), (0, 3)])
    # Cells (x=0,y=0), (x=3,y=1), (x=1,y=2).
    measures = np.array([[0.5, 0.5], [3.5, 1.5], [1.5, 2.5]])
    archive.add(np.zeros((3, 2)), np.array([1.0, 2.0, 3.0]), measures)
    fig, ax = new_axes()
    out = grid_archive_heatmap(archive, ax)
    fig.canvas.draw()

    assert out is ax
    expected = np.full((3, 4), np.nan)  # Rows are y cells, columns x cells.
    expected[0, 0], expected[1, 3], expected[2, 1] = 1.0, 2.0, 3.0
    np.testing.assert_array_equal(mesh_values(ax).reshape(3, 4), expected)
    coords = mesh_of(ax).get_coordinates()
    np.testing.assert_allclose(coords[0, :, 0], archive.boundaries[0])
    np.testing.assert_allclose(coords[:, 0, 1], archive.boundaries[1])
    assert ax.get_xlim() == (0.0, 4.0)
    assert ax.get_ylim() == (0.0, 3.0)
    assert ax.get_aspect() == "auto"
    assert mesh_of(ax).get_clim() == (1.0, 3.0)
    assert len(fig.axes) == 2  # cbar="auto" adds a colorbar.


def test_2d_transpose_measures():
    archive = GridArchive(solution_dim=2, dims=[4, 3], ranges=[(0, 4), (-3, 0)])
    archive.add(np.zeros((2, 2)), np.array([1.0, 2.0]), np.array([[0.5, -2.5], [3.5, -1.5]]))
    fig, ax = new_axes()
    grid_archive_heatmap(archive, ax, transpose_measures=True)
    fig.canvas.draw()

    expected = np.full((4, 3), np.nan)  # Rows are now x cells.
    expected[0, 0], expected[3, 1] = 1.0, 2.0
    np.testing.assert_array_equal(mesh_values(ax).reshape(4, 3), expected)
    assert ax.get_xlim() == (-3.0, 0.0)
    assert ax.get_ylim() == (0.0, 4.0)


def test_1d_row_of_cells():
    archive = GridArchive(solution_dim=1, dims=[5], ranges=[(-1, 1)])
    archive.add(np.zeros((2, 1)), np.array([-4.0, 7.0]), np.array([[-0.9], [0.5]]))
    fig, ax = new_axes()
    grid_archive_heatmap(archive, ax)
    fig.canvas.draw()

    np.testing.assert_array_equal(mesh_values(ax).ravel(), [-4.0, np.nan, np.nan, 7.0, np.nan])
    coords = mesh_of(ax).get_coordinates()
    np.testing.assert_allclose(coords[0, :, 0], archive.boundaries[0])
    np.testing.assert_allclose(coords[:, 0, 1], [0.0, 1.0])
    assert ax.get_aspect() == 0.5
    assert len(ax.get_yticks()) == 0
    assert ax.get_xlim() == (-1.0, 1.0)


@pytest.mark.parametrize("dims", [[7], [6, 5]], ids=["1d", "2d"])
@pytest.mark.parametrize("transpose", [False, True])
def test_same_drawing_as_pyribs(dims, transpose):
    ranges = [(-1.0, 2.0), (0.0, 5.0)][: len(dims)]
    ours, theirs = filled_archives(dims, ranges, n=25)
    kwargs = {"transpose_measures": transpose, "vmin": None, "aspect": None}

    fig, ax = new_axes()
    grid_archive_heatmap(ours, ax, **kwargs)
    fig.canvas.draw()
    ref_fig, ref_ax = new_axes()
    ribs.visualize.grid_archive_heatmap(theirs, ref_ax, **kwargs)
    ref_fig.canvas.draw()

    np.testing.assert_array_equal(mesh_values(ax), mesh_values(ref_ax))
    np.testing.assert_allclose(mesh_of(ax).get_coordinates(), mesh_of(ref_ax).get_coordinates())
    np.testing.assert_allclose(mesh_of(ax).get_clim(), mesh_of(ref_ax).get_clim())
    np.testing.assert_allclose(mesh_of(ax).get_facecolors(), mesh_of(ref_ax).get_facecolors())
    assert ax.get_xlim() == ref_ax.get_xlim()
    assert ax.get_ylim() == ref_ax.get_ylim()
    assert ax.get_aspect() == ref_ax.get_aspect()
    assert len(fig.axes) == len(ref_fig.axes)


def test_df_replaces_archive_data():
    archive, _ = filled_archives([5, 5], [(0, 1), (0, 1)], n=10)
    df = archive.data(return_type="pandas")
    df["objective"] = np.arange(len(df), dtype=float) + 100.0
    fig, ax = new_axes()
    grid_archive_heatmap(archive, ax, df=df)
    fig.canvas.draw()

    values = mesh_values(ax).reshape(5, 5)
    grid = archive.int_to_grid_index(df["index"].to_numpy())
    np.testing.assert_array_equal(values[grid[:, 1], grid[:, 0]], df["objective"])
    assert np.isnan(values).sum() == 25 - len(df)


def test_empty_archive():
    archive = GridArchive(solution_dim=2, dims=[3, 2], ranges=[(0, 1), (0, 1)])
    fig, ax = new_axes()
    grid_archive_heatmap(archive, ax)
    fig.canvas.draw()
    assert np.isnan(mesh_values(ax)).all()
    assert mesh_of(ax).get_clim() == (-0.1, 0.1)


def test_colour_options():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=20)
    fig, ax = new_axes()
    grid_archive_heatmap(
        archive,
        ax,
        cmap=["red", "green", "blue"],
        vmin=-1.0,
        vmax=1.0,
        cbar=None,
        rasterized=True,
        pcm_kwargs={"edgecolor": "black", "linewidth": 0.25},
    )
    fig.canvas.draw()
    mesh = mesh_of(ax)
    assert isinstance(mesh.get_cmap(), ListedColormap)
    assert mesh.get_cmap().N == 3
    assert mesh.get_clim() == (-1.0, 1.0)
    assert mesh.get_rasterized()
    np.testing.assert_allclose(mesh.get_edgecolor()[0], [0, 0, 0, 1])
    np.testing.assert_allclose(mesh.get_linewidth(), [0.25])
    assert len(fig.axes) == 1  # cbar=None: no colorbar.


def test_cbar_on_given_axes_and_kwargs():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=20)
    fig = Figure()
    FigureCanvasAgg(fig)
    ax, cbar_ax = fig.subplots(1, 2)
    grid_archive_heatmap(archive, ax, cbar=cbar_ax, cbar_kwargs={"orientation": "horizontal"})
    fig.canvas.draw()
    colorbar_axes = [a for a in fig.axes if a not in (ax, cbar_ax)]
    assert len(colorbar_axes) == 1
    # A horizontal colorbar draws its scale along x.
    assert len(colorbar_axes[0].get_xticks()) > 0
    assert len(colorbar_axes[0].get_yticks()) == 0


def test_uses_current_axes_when_ax_is_none():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=20)
    fig = plt.figure()
    try:
        ax = grid_archive_heatmap(archive)
        assert ax is fig.axes[0]
        assert len(mesh_of(ax).get_array().ravel()) == 9
    finally:
        plt.close(fig)


@pytest.mark.parametrize("aspect", [1, 2.0, "equal"])
def test_numeric_and_equal_aspect(aspect):
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=5)
    _, ax = new_axes()
    grid_archive_heatmap(archive, ax, aspect=aspect)
    assert ax.get_aspect() == (1.0 if aspect == "equal" else aspect)


def test_invalid_aspect():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=5)
    _, ax = new_axes()
    with pytest.raises(
        ValueError,
        match=r"^Invalid arg aspect='wide'; must be "
        r"'auto', 'equal', or float$",
    ):
        grid_archive_heatmap(archive, ax, aspect="wide")


def test_invalid_cbar():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=5)
    _, ax = new_axes()
    with pytest.raises(
        ValueError,
        match=r"^Invalid arg cbar=left; must be 'auto', "
        r"None, or matplotlib.axes.Axes$",
    ):
        grid_archive_heatmap(archive, ax, cbar="left")


def test_3d_archive_rejected():
    archive = GridArchive(solution_dim=1, dims=[2, 2, 2], ranges=[(0, 1)] * 3)
    _, ax = new_axes()
    with pytest.raises(
        ValueError, match="^Heatmap can only be plotted for a 1D or 2D GridArchive$"
    ):
        grid_archive_heatmap(archive, ax)


def test_vmax_below_vmin():
    archive, _ = filled_archives([3, 3], [(0, 1), (0, 1)], n=5)
    _, ax = new_axes()
    with pytest.raises(
        ValueError, match=r"^vmax \(0.0\) must be greater than or equal to vmin \(1.0\)$"
    ):
        grid_archive_heatmap(archive, ax, vmin=1.0, vmax=0.0)


def test_axes_and_colour_bar_labelled_unless_set():
    archive, _ = filled_archives([4, 3], [(0, 1), (0, 1)], 20)
    fig, ax = new_axes()
    grid_archive_heatmap(archive, ax, transpose_measures=True)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measure_1", "measure_0")
    assert fig.axes[1].get_ylabel() == "objective"

    fig, ax = new_axes()
    ax.set_xlabel("x position")
    grid_archive_heatmap(archive, ax, cbar_kwargs={"label": "reward"})
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x position", "measure_1")
    assert fig.axes[1].get_ylabel() == "reward"
