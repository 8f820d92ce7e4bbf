"""sliding_boundaries_archive_heatmap: elites of a 2D SlidingBoundariesArchive."""

from __future__ import annotations

import numpy as np

from ribsax.visualize._utils import prepare_scatter_2d, scatter_2d

__all__ = ["sliding_boundaries_archive_heatmap"]


def sliding_boundaries_archive_heatmap(
    archive,
    ax=None,
    *,
    df=None,
    transpose_measures=False,
    cmap="magma",
    aspect=None,
    ms=None,
    boundary_lw=0,
    vmin=None,
    vmax=None,
    cbar="auto",
    cbar_kwargs=None,
    rasterized=False,
):
    """Plots the elites of a 2D sliding-boundaries archive, coloured by objective.

    Same arguments and drawing as
    :func:`ribs.visualize.sliding_boundaries_archive_heatmap`. The cell boundaries
    of such an archive move as it is filled, so each elite is drawn as one point at
    its measures (a scatter plot) rather than as a cell; the current boundaries can
    be overlaid as black lines.

    Args:
        archive: A 2D :class:`ribsax.archives.SlidingBoundariesArchive` (or any
            archive with ``measure_dim``, ``boundaries``, ``lower_bounds``,
            ``upper_bounds`` and ``data``).
        ax: Axes to draw on; pyplot's current Axes when None.
        df: Optional DataFrame in the layout of ``archive.data(return_type=
            "pandas")`` with ``objective`` and ``measures_*`` columns, plotted
            instead of the archive's contents.
        transpose_measures: Put the second measure on the x-axis.
        cmap: Colormap name, list of colours, or Colormap.
        aspect: ``"auto"`` (default), ``"equal"`` or a number.
        ms: Marker size of the elites (None: matplotlib's default).
        boundary_lw: Width of the boundary lines; 0 (default) draws none.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``.
        rasterized: Rasterize the points and lines.

    Returns:
        The Axes drawn on (pyribs returns None).

    Raises:
        ValueError: Invalid ``aspect`` or ``cbar``, the archive is not 2D, or
            ``vmax < vmin``.
    """
    aspect, cmap, measures, objective = prepare_scatter_2d(
        archive,
        df,
        aspect=aspect,
        cbar=cbar,
        cmap=cmap,
        dim_msg="Heatmap can only be plotted for a 2D SlidingBoundariesArchive",
    )
    ax, _ = scatter_2d(
        ax,
        measures=measures,
        objective=objective,
        lower=archive.lower_bounds,
        upper=archive.upper_bounds,
        transpose_measures=transpose_measures,
        cmap=cmap,
        aspect=aspect,
        ms=ms,
        vmin=vmin,
        vmax=vmax,
        cbar=cbar,
        cbar_kwargs=cbar_kwargs,
        rasterized=rasterized,
    )

    if boundary_lw > 0:
        x_edges, y_edges = (np.asarray(b, dtype=float) for b in archive.boundaries)
        (x_lo, y_lo), (x_hi, y_hi) = ax.get_xlim(), ax.get_ylim()
        if transpose_measures:
            x_edges, y_edges = y_edges, x_edges
        # Vertical lines span the y range and horizontal ones the x range.
        ax.vlines(x_edges, y_lo, y_hi, color="k", linewidth=boundary_lw, rasterized=rasterized)
        ax.hlines(y_edges, x_lo, x_hi, color="k", linewidth=boundary_lw, rasterized=rasterized)
    return ax
