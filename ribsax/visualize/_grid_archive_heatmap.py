"""grid_archive_heatmap: objective heatmap of a 1D or 2D GridArchive."""

from __future__ import annotations

import numpy as np

from ribsax.visualize._utils import (
    colour_range,
    draw_colorbar,
    heatmap_1d,
    label_axes,
    prepare_heatmap_1d_2d,
    resolve_axes,
)

__all__ = ["grid_archive_heatmap"]


def grid_archive_heatmap(
    archive,
    ax=None,
    *,
    df=None,
    transpose_measures=False,
    cmap="magma",
    aspect=None,
    vmin=None,
    vmax=None,
    cbar="auto",
    cbar_kwargs=None,
    rasterized=False,
    pcm_kwargs=None,
):
    """Plots the elites' objectives of a 1D or 2D grid archive as a heatmap.

    Same arguments and drawing as :func:`ribs.visualize.grid_archive_heatmap`: one
    :meth:`~matplotlib.axes.Axes.pcolormesh` quad per cell over
    ``archive.boundaries``, coloured by the elite's objective; empty cells are NaN
    (not drawn). A 1D archive is drawn as a single row spanning y in [0, 1] with the
    y ticks removed.

    Args:
        archive: A :class:`ribsax.archives.GridArchive` (or any archive with
            ``measure_dim``, ``dims``, ``cells``, ``boundaries``, ``lower_bounds``,
            ``upper_bounds``, ``int_to_grid_index`` and ``data``) with 1 or 2
            measures.
        ax: Axes to draw on; pyplot's current Axes when None.
        df: Optional DataFrame (e.g. ``archive.data(return_type="pandas")``,
            possibly modified) with ``index`` and ``objective`` columns to plot
            instead of the archive's contents.
        transpose_measures: Put the second measure on the x-axis (2D only).
        cmap: Colormap name, list of colours, or Colormap.
        aspect: ``"auto"``, ``"equal"`` or a number; defaults to 0.5 for 1D and
            ``"auto"`` for 2D.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        cbar: ``"auto"`` (colorbar beside ``ax``), None (no colorbar), or an Axes
            beside which to put it.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``.
        rasterized: Rasterize the mesh (useful for vector output such as PDF).
        pcm_kwargs: Extra kwargs for ``pcolormesh``, e.g.
            ``{"edgecolor": "black", "linewidth": 0.1}``.

    Returns:
        The Axes drawn on (pyribs returns None; returning the Axes is a ribsax
        addition). Axes without a label are labelled ``measure_0`` /
        ``measure_1`` and the colour bar ``objective`` (also ribsax additions).

    Raises:
        ValueError: Invalid ``aspect`` or ``cbar``, the archive is not 1D or 2D, or
            ``vmax < vmin``.
    """
    aspect, cmap, index, objective = prepare_heatmap_1d_2d(
        archive, df, aspect=aspect, cbar=cbar, cmap=cmap, archive_name="GridArchive"
    )

    if archive.measure_dim == 1:
        cell_objectives = np.full(int(archive.cells), np.nan)
        cell_objectives[index] = objective
        return heatmap_1d(
            ax,
            lower=archive.lower_bounds[0],
            upper=archive.upper_bounds[0],
            boundaries=archive.boundaries[0],
            cell_objectives=cell_objectives,
            cmap=cmap,
            aspect=aspect,
            vmin=vmin,
            vmax=vmax,
            cbar=cbar,
            cbar_kwargs=cbar_kwargs,
            rasterized=rasterized,
            pcm_kwargs=pcm_kwargs,
        )

    nx, ny = (int(d) for d in archive.dims)
    # Row = y cell, column = x cell, as pcolormesh expects.
    colours = np.full((ny, nx), np.nan)
    if len(index):
        grid = np.asarray(archive.int_to_grid_index(index))
        colours[grid[:, 1], grid[:, 0]] = objective
    x_edges, y_edges = archive.boundaries[0], archive.boundaries[1]
    lower = np.asarray(archive.lower_bounds)
    upper = np.asarray(archive.upper_bounds)
    if transpose_measures:
        x_edges, y_edges = y_edges, x_edges
        lower, upper = lower[::-1], upper[::-1]
        colours = colours.T

    ax = resolve_axes(ax)
    label_axes(
        ax, *(("measure_1", "measure_0") if transpose_measures else ("measure_0", "measure_1"))
    )
    ax.set_xlim(lower[0], upper[0])
    ax.set_ylim(lower[1], upper[1])
    ax.set_aspect(aspect)
    vmin, vmax = colour_range(vmin, vmax, objective)
    mesh = ax.pcolormesh(
        x_edges,
        y_edges,
        colours,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        rasterized=rasterized,
        **(pcm_kwargs or {}),
    )
    draw_colorbar(mesh, ax, cbar, cbar_kwargs)
    return ax
