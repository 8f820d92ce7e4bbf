"""parallel_axes_plot: every elite as a line across one vertical axis per measure."""

from __future__ import annotations

import numbers

import matplotlib.colors
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection

from ribsax.visualize._utils import (
    as_colormap,
    colour_range,
    draw_colorbar,
    padded_bounds,
    read_fields,
    resolve_axes,
)

__all__ = ["parallel_axes_plot"]


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _columns_and_labels(measure_order, measure_dim):
    """Measure columns to draw and their axis labels, validated as pyribs does."""
    if measure_order is None:
        cols = np.arange(measure_dim)
        return cols, [f"measure_{i}" for i in cols]
    measure_order = list(measure_order)
    if all(_is_int(m) for m in measure_order):
        cols = np.array(measure_order, dtype=int)
        labels = [f"measure_{i}" for i in cols]
    elif all(
        isinstance(m, (tuple, list)) and len(m) == 2 and _is_int(m[0]) and isinstance(m[1], str)
        for m in measure_order
    ):
        cols = np.array([m[0] for m in measure_order], dtype=int)
        labels = [m[1] for m in measure_order]
    else:
        # The missing space in "oftuples" is pyribs' message, kept verbatim.
        raise TypeError(
            "measure_order must be a list of ints or a list oftuples in the form (int, str)"
        )
    if np.max(cols) >= measure_dim:
        raise ValueError(
            f"Invalid Measures: requested measures index {np.max(cols)}, but "
            f"archive only has {measure_dim} measures."
        )
    if np.any(cols < 0):
        raise ValueError("Invalid Measures: requested a negative measure index.")
    return cols, labels


def parallel_axes_plot(
    archive,
    ax=None,
    *,
    df=None,
    measure_order=None,
    cmap="magma",
    linewidth=1.5,
    alpha=0.8,
    vmin=None,
    vmax=None,
    sort_archive=False,
    cbar="auto",
    cbar_kwargs=None,
):
    """Draws a parallel-coordinates plot of an archive of any measure dimension.

    Same arguments and drawing as :func:`ribs.visualize.parallel_axes_plot`: one
    vertical axis per measure (left to right in ``measure_order``), each scaled to
    the archive's bounds, and one polyline per elite through its measure values,
    coloured by objective. The colour bar is horizontal below the plot unless
    ``cbar_kwargs`` say otherwise.

    ribsax draws the elites as a single
    :class:`~matplotlib.collections.LineCollection` (pyribs adds one line per
    elite), which keeps large archives fast; the segments are in the measure
    units of the leftmost axis (the other measures are rescaled onto it, as the
    twin axes show).

    Args:
        archive: Any archive with ``measure_dim`` and ``data()``: grid, CVT,
            sliding-boundaries or proximity. Archives without ``lower_bounds`` /
            ``upper_bounds`` use the measures' extremes ±0.01.
        ax: Axes to draw on; pyplot's current Axes when None. Twin axes are added
            for the second and later measures.
        df: Optional DataFrame with ``objective`` and ``measures_*`` columns
            plotted instead of the archive's contents.
        measure_order: Measures to show, in order: a list of ints, or a list of
            ``(int, label)`` tuples to name the axes. Default: all, labelled
            ``measure_i``.
        cmap: Colormap name, list of colours, or Colormap.
        linewidth: Width of the lines.
        alpha: Opacity of the lines.
        vmin: Lower colour limit (default: smallest objective).
        vmax: Upper colour limit (default: largest objective).
        sort_archive: Draw the elites in increasing objective order, so the best
            ones are on top.
        cbar: ``"auto"``, None, or an Axes for the colorbar.
        cbar_kwargs: Extra kwargs for ``Figure.colorbar`` (defaults:
            ``orientation="horizontal"``, ``pad=0.1``).

    Returns:
        The host Axes (the leftmost measure's; pyribs returns None).

    Raises:
        TypeError: ``measure_order`` mixes or contains other entries than ints
            or ``(int, str)`` tuples.
        ValueError: A measure index in ``measure_order`` is out of range or
            negative, or ``vmax < vmin``.
    """
    cmap = as_colormap(cmap)
    cols, labels = _columns_and_labels(measure_order, archive.measure_dim)
    measures, objective = read_fields(archive, df, ("measures", "objective"))
    measures = np.asarray(measures, dtype=float).reshape(-1, archive.measure_dim)
    objective = np.asarray(objective, dtype=float)

    default_lower, default_upper = padded_bounds(measures, archive.measure_dim)
    lower = np.asarray(getattr(archive, "lower_bounds", default_lower), dtype=float)[cols]
    upper = np.asarray(getattr(archive, "upper_bounds", default_upper), dtype=float)[cols]
    host = resolve_axes(ax)
    vmin, vmax = colour_range(vmin, vmax, objective)
    norm = matplotlib.colors.Normalize(vmin=vmin, vmax=vmax, clip=True)

    if sort_archive:
        order = np.argsort(objective, kind="stable")
        measures, objective = measures[order], objective[order]

    # Every measure is mapped linearly onto the first one's range, so all lines
    # live in the host Axes' units; the twin axes only show the tick values.
    ys = measures[:, cols]
    scaled = (ys - lower) / (upper - lower) * (upper[0] - lower[0]) + lower[0]
    scaled[:, 0] = ys[:, 0]

    n_axes = len(cols)
    all_axes = [host] + [host.twinx() for _ in range(n_axes - 1)]
    for i, axis in enumerate(all_axes):
        axis.set_ylim(lower[i], upper[i])
        axis.spines["top"].set_visible(False)
        axis.spines["bottom"].set_visible(False)
        if i > 0:
            axis.spines["left"].set_visible(False)
            axis.yaxis.set_ticks_position("right")
            axis.spines["right"].set_position(("axes", i / (n_axes - 1)))
    host.set_xlim(0, max(n_axes - 1, 1e-9))
    host.set_xticks(range(n_axes))
    host.set_xticklabels(labels)
    host.tick_params(axis="x", which="major", pad=7)
    host.spines["right"].set_visible(False)
    host.xaxis.tick_top()

    xs = np.arange(n_axes, dtype=float)
    segments = np.stack([np.broadcast_to(xs, scaled.shape), scaled], axis=-1)
    lines = LineCollection(
        list(segments), colors=cmap(norm(objective)), linewidths=linewidth, alpha=alpha
    )
    host.add_collection(lines, autolim=False)

    mappable = ScalarMappable(norm=matplotlib.colors.Normalize(vmin, vmax), cmap=cmap)
    kwargs = dict(cbar_kwargs or {})
    kwargs.setdefault("orientation", "horizontal")
    kwargs.setdefault("pad", 0.1)
    draw_colorbar(mappable, host, cbar, kwargs)
    return host
