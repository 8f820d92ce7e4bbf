"""proximity_archive_plot: elites of a 2D unstructured (proximity) archive."""

from __future__ import annotations

import numpy as np

from ribsax.visualize._utils import padded_bounds, prepare_scatter_2d, scatter_2d

__all__ = ["proximity_archive_plot"]


def proximity_archive_plot(
    archive,
    ax=None,
    *,
    df=None,
    transpose_measures=False,
    cmap="magma",
    aspect=None,
    ms=None,
    lower_bounds=None,
    upper_bounds=None,
    vmin=None,
    vmax=None,
    cbar="auto",
    cbar_kwargs=None,
    rasterized=False,
):
    """Plots the elites of a 2D proximity archive as points coloured by objective.

    Same arguments and drawing as :func:`ribs.visualize.proximity_archive_plot`.
    Works with any archive exposing pyribs' ``ProximityArchive`` interface as far
    as plotting needs it: ``measure_dim`` and ``data()`` (``"measures"`` and
    ``"objective"`` fields; a novelty-only archive stores objective 0 for every
    elite). Such archives have no bounds, so unless ``lower_bounds`` /
    ``upper_bounds`` are given the view extends 0.01 beyond the extreme measures
    (±0.01 around the origin for an empty archive).

    Args:
        archive: A 2D proximity archive, e.g. :class:`ribs.archives.ProximityArchive`.
        ax: Axes to draw on; pyplot's current Axes when None.
        df: Optional DataFrame with ``objective`` and ``measures_*`` columns
            plotted instead of the archive's contents.
        transpose_measures: Put the second measure on the x-axis.
        cmap: Colormap name, list of colours, or Colormap.
        aspect: ``"auto"`` (default), ``"equal"`` or a number.
        ms: Marker size (None: matplotlib's default).
        lower_bounds: (2,) lower limits of the view, in measure order.
        upper_bounds: (2,) upper limits of the view, in measure order.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar``.
        rasterized: Rasterize the points.

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
        dim_msg="Plot can only be made for a 2D ProximityArchive",
    )
    default_lower, default_upper = padded_bounds(measures, archive.measure_dim)
    lower = default_lower if lower_bounds is None else np.asarray(lower_bounds)
    upper = default_upper if upper_bounds is None else np.asarray(upper_bounds)
    ax, _ = scatter_2d(
        ax,
        measures=measures,
        objective=objective,
        lower=lower,
        upper=upper,
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
    return ax
