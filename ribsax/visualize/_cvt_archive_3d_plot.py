"""cvt_archive_3d_plot: the Voronoi cells of a 3D CVT archive, coloured by objective."""

from __future__ import annotations

import matplotlib.colors
import numpy as np
from matplotlib.cm import ScalarMappable
from mpl_toolkits.mplot3d.art3d import Poly3DCollection
from scipy.spatial import Voronoi

from ribsax.visualize._utils import (
    as_colormap,
    check_heatmap_args,
    colour_range,
    draw_colorbar,
    label_axes,
    read_fields,
)

__all__ = ["cvt_archive_3d_plot"]


def _mirrored(centroids, lower, upper):
    """The centroids reflected through each of the box's six faces.

    With these mirror points added, the Voronoi cell of every real centroid is
    bounded and clipped exactly at the box faces.
    """
    mirrors = []
    for axis in range(3):
        for bound in (lower[axis], upper[axis]):
            reflected = centroids.copy()
            reflected[:, axis] = 2.0 * bound - centroids[:, axis]
            mirrors.append(reflected)
    return np.concatenate(mirrors)


def cvt_archive_3d_plot(
    archive,
    ax=None,
    *,
    df=None,
    measure_order=None,
    cmap="magma",
    lw=0.5,
    ec=(0.0, 0.0, 0.0, 0.1),
    cell_alpha=1.0,
    vmin=None,
    vmax=None,
    cbar="auto",
    cbar_kwargs=None,
    plot_elites=False,
    elite_ms=100,
    elite_alpha=0.5,
    plot_centroids=False,
    ms=1,
    plot_samples=None,
):
    """Plots a 3D CVT archive as Voronoi cells in a 3D Axes.

    Same arguments and drawing as :func:`ribs.visualize.cvt_archive_3d_plot`. Every
    face of every centroid's Voronoi cell (clipped to the archive's bounds) is one
    polygon of a :class:`~mpl_toolkits.mplot3d.art3d.Poly3DCollection`, filled with
    the colour of that cell's elite (faces of empty cells are transparent). Make
    the cells translucent (``cell_alpha``) or draw only the elites
    (``plot_elites=True``, ``cell_alpha=0``) to see inside.

    Args:
        archive: A 3D :class:`ribsax.archives.CVTArchive` (or any archive with
            ``centroids``, ``measure_dim``, ``lower_bounds``, ``upper_bounds`` and
            ``data``).
        ax: A 3D Axes (``projection="3d"``); a new one on the current figure when
            None.
        df: Optional DataFrame with ``index``, ``objective`` and ``measures_*``
            columns plotted instead of the archive's contents.
        measure_order: A permutation of ``[0, 1, 2]``: which measure goes on the
            x, y and z axes.
        cmap: Colormap name, list of colours, or Colormap.
        lw: Width of the cell edges.
        ec: Colour of the cell edges.
        cell_alpha: Opacity of the filled cells.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``.
        plot_elites: Also draw each elite as a point at its measures.
        elite_ms: Marker size of the elites.
        elite_alpha: Opacity of the elites.
        plot_centroids: Also mark the centroids with black dots.
        ms: Marker size of the centroids.
        plot_samples: Deprecated in pyribs 0.9.0; must be None.

    Returns:
        The 3D Axes drawn on (pyribs returns None).

    Raises:
        ValueError: ``plot_samples`` is given, invalid ``cbar``, the archive is not
            3D, ``measure_order`` is not a permutation of ``[0, 1, 2]``, or
            ``vmax < vmin``.
    """
    if plot_samples is not None:
        raise ValueError(
            "`plot_samples` is deprecated in pyribs 0.9.0, as CVTArchive no longer stores samples."
        )
    check_heatmap_args(
        None, cbar, archive.measure_dim, [3], "This plot can only be made for a 3D CVTArchive"
    )
    cmap = as_colormap(cmap)
    objective, measures, index = read_fields(archive, df, ("objective", "measures", "index"))
    objective = np.asarray(objective, dtype=float)
    measures = np.asarray(measures, dtype=float).reshape(-1, 3)
    lower = np.asarray(archive.lower_bounds, dtype=float)
    upper = np.asarray(archive.upper_bounds, dtype=float)
    centroids = np.asarray(archive.centroids, dtype=float)
    labels = ["measure_0", "measure_1", "measure_2"]
    if measure_order is not None:
        if sorted(measure_order) != [0, 1, 2]:
            raise ValueError(
                f"measure_order should be a permutation of [0, 1, 2] but received {measure_order}"
            )
        order = list(measure_order)
        measures, lower, upper = measures[:, order], lower[order], upper[order]
        centroids = centroids[:, order]
        labels = [labels[i] for i in order]
    vmin, vmax = colour_range(vmin, vmax, objective)

    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.axes(projection="3d")
    ax.set_xlim(lower[0], upper[0])
    ax.set_ylim(lower[1], upper[1])
    ax.set_zlim(lower[2], upper[2])
    label_axes(ax, *labels)

    cell_objective = np.full(len(centroids), np.nan)
    cell_objective[np.asarray(index, dtype=np.int64)] = objective
    vor = Voronoi(np.concatenate([centroids, _mirrored(centroids, lower, upper)]))
    faces, face_objective = [], []
    for points, vertex_ids in zip(vor.ridge_points, vor.ridge_vertices):
        for point in points:  # A face belongs to each real centroid it separates.
            if point < len(centroids):
                faces.append(vor.vertices[vertex_ids])
                face_objective.append(cell_objective[point])
    face_objective = np.asarray(face_objective, dtype=float)
    filled = ~np.isnan(face_objective)
    norm = matplotlib.colors.Normalize(vmin=vmin, vmax=vmax, clip=True)
    facecolors = np.zeros((len(faces), 4))
    facecolors[:, :3] = 1.0  # Empty cells: transparent white.
    facecolors[filled] = cmap(norm(face_objective[filled]))
    facecolors[filled, 3] = cell_alpha
    ax.add_collection(
        Poly3DCollection(faces, edgecolor=[ec] * len(faces), facecolor=facecolors, lw=lw)
    )

    if plot_elites:
        ax.scatter(
            measures[:, 0],
            measures[:, 1],
            measures[:, 2],
            s=elite_ms,
            c=objective,
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            lw=0.0,
            alpha=elite_alpha,
        )
    if plot_centroids:
        ax.plot(centroids[:, 0], centroids[:, 1], centroids[:, 2], "o", c="black", ms=ms)
    mappable = ScalarMappable(norm=matplotlib.colors.Normalize(vmin, vmax), cmap=cmap)
    draw_colorbar(mappable, ax, cbar, cbar_kwargs)
    return ax
