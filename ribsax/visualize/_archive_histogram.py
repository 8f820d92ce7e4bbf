"""archive_histogram: distribution of the elites' objectives."""

from __future__ import annotations

import matplotlib.colors
import numpy as np

from ribsax.visualize._utils import (
    as_colormap,
    colour_range,
    label_axes,
    read_fields,
    resolve_axes,
)

__all__ = ["archive_histogram"]


def archive_histogram(
    archive,
    ax=None,
    *,
    df=None,
    bins=100,
    vmin=None,
    vmax=None,
    ylim=None,
    color="#7e57c2",
    cmap=None,
    rasterized=False,
    hist_kwargs=None,
):
    """Plots a histogram of the objectives of an archive's elites.

    Same arguments and drawing as :func:`ribs.visualize.archive_histogram`: an
    :meth:`~matplotlib.axes.Axes.hist` of the objectives over ``[vmin, vmax]``
    with light horizontal grid lines and only the bottom spine. With ``cmap`` each
    bar is coloured by the objective at its centre, so the histogram doubles as a
    legend for a heatmap drawn with the same colormap and limits.

    Args:
        archive: Any archive with ``data()``.
        ax: Axes to draw on; pyplot's current Axes when None.
        df: Optional DataFrame with an ``objective`` column plotted instead of the
            archive's contents.
        bins: Passed to ``hist``: number of bins, bin edges, or a binning rule.
        vmin: Lower end of the histogram's range (default: smallest objective).
        vmax: Upper end of the range (default: largest objective).
        ylim: Upper y limit (None: matplotlib's choice).
        color: Colour of the bars (when ``cmap`` is None).
        cmap: None, or a colormap name / list of colours / Colormap that colours
            each bar by its centre.
        rasterized: Rasterize the bars.
        hist_kwargs: Extra kwargs for ``hist`` (``bins``, ``range``, ``color`` and
            ``rasterized`` are taken from the arguments above).

    Returns:
        The Axes drawn on (pyribs returns None).

    Raises:
        AttributeError: The archive's ``data()`` is not implemented.
        ValueError: ``vmax < vmin``.
    """
    (objective,) = read_fields(archive, df, ("objective",), caller="archive_histogram")
    objective = np.asarray(objective, dtype=float)
    vmin, vmax = colour_range(vmin, vmax, objective)

    ax = resolve_axes(ax)
    ax.set_axisbelow(True)
    for side in ("right", "top", "left"):
        ax.spines[side].set_visible(False)
    ax.grid(color="0.9", linestyle="-", axis="y")
    if ylim is not None:
        ax.set_ylim(top=ylim)
    label_axes(ax, "objective", "number of elites")

    kwargs = dict(hist_kwargs or {})
    kwargs.update(bins=bins, range=(vmin, vmax), color=color, rasterized=rasterized)
    _, edges, patches = ax.hist(objective, **kwargs)
    if cmap is not None:
        cmap = as_colormap(cmap)
        norm = matplotlib.colors.Normalize(vmin, vmax)
        centres = (edges[:-1] + edges[1:]) / 2.0
        for centre, patch in zip(centres, patches):
            patch.set_facecolor(cmap(norm(centre)))
    return ax
