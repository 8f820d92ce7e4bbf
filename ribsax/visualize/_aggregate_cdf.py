"""aggregate_cdf: the objective distribution of several archives, with a band."""

from __future__ import annotations

import numpy as np
import scipy.stats

from ribsax.visualize._utils import (
    colour_range,
    label_axes,
    read_fields,
    resolve_axes,
)

__all__ = ["aggregate_cdf"]


def aggregate_cdf(
    archives,
    ax=None,
    dfs=None,
    cumulative=True,
    bins=100,
    vmin=None,
    vmax=None,
    estimator="mean",
    errorbar="sd",
    show_edges=True,
):
    """Plots the mean (or median) cumulative count of elites over several archives.

    Same arguments, drawing and return value as
    :func:`ribs.visualize.aggregate_cdf`, typically one archive per seed of an
    experiment. Each archive's objectives are counted in ``bins`` over ``[vmin,
    vmax]`` (shared by all archives), the counts accumulate from the left
    (``cumulative=True``: elites with at most that objective), from the right
    (``cumulative=-1``: elites with at least that objective, the "archive CCDF"
    used to compare QD algorithms) or not at all (``cumulative=False``), and the
    archives are combined by ``estimator`` with a shaded ``errorbar`` band.

    Args:
        archives: Archives with ``data()``.
        ax: Axes to draw on; pyplot's current Axes when None.
        dfs: Optional DataFrames with ``objective`` columns, one per archive,
            plotted instead of the archives' contents.
        cumulative: True, False or -1 (see above).
        bins: Number of bins, bin edges, or a rule accepted by
            :func:`numpy.histogram`.
        vmin: Lower end of the range (default: smallest objective of all).
        vmax: Upper end of the range (default: largest objective of all).
        estimator: ``"mean"`` or ``"median"`` over archives.
        errorbar: ``"sd"`` (standard deviation), ``"se"`` (standard error),
            ``"iqr"`` (25th to 75th percentile) or None (no band).
        show_edges: Close the curve down to 0 at both ends (the patch's baseline).

    Returns:
        ``(line, band)``: the :class:`~matplotlib.patches.StepPatch` of the
        estimate and that of the band (None when ``errorbar`` is None).

    Raises:
        AttributeError: An archive's ``data()`` is not implemented.
        ValueError: ``dfs`` is given with another length than ``archives``,
            ``vmax < vmin``, or an unknown ``estimator`` or ``errorbar``.
    """
    if dfs is None:
        objectives = []
        for archive in archives:
            try:
                objectives.append(np.asarray(archive.data("objective"), dtype=float))
            except NotImplementedError as e:
                raise AttributeError(
                    "To use aggregate_cdf, each archive must have the data() method."
                ) from e
    else:
        if len(dfs) != len(archives):
            raise ValueError("If passed in, the number of dfs must equal the number of archives.")
        objectives = [
            np.asarray(read_fields(None, df, ("objective",))[0], dtype=float) for df in dfs
        ]
    vmin, vmax = colour_range(vmin, vmax, np.concatenate(objectives))
    ax = resolve_axes(ax)

    counts = []
    for objective in objectives:
        hist, edges = np.histogram(objective, bins, range=(vmin, vmax))
        counts.append(hist)
    counts = np.stack(counts)
    if cumulative > 0:
        counts = np.cumsum(counts, axis=1)
    elif cumulative < 0:
        counts = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]

    if estimator == "mean":
        centre = counts.mean(axis=0)
    elif estimator == "median":
        centre = np.median(counts, axis=0)
    else:
        raise ValueError(f"Unknown estimator {estimator}")

    if errorbar is None:
        band = None
    elif errorbar == "sd":
        spread = counts.std(axis=0)
        band = (centre - spread, centre + spread)
    elif errorbar == "se":
        spread = scipy.stats.sem(counts, axis=0)
        band = (centre - spread, centre + spread)
    elif errorbar == "iqr":
        band = tuple(np.percentile(counts, (25, 75), axis=0))
    else:
        raise ValueError(f"Unknown errorbar {errorbar}")

    label_axes(ax, "objective", "number of elites")
    line = ax.stairs(values=centre, edges=edges, baseline=0 if show_edges else None)
    band_patch = None
    if band is not None:
        band_patch = ax.stairs(
            values=band[1],
            edges=edges,
            baseline=band[0],
            fill=True,
            alpha=0.2,
            color=line.get_edgecolor(),
        )
    return line, band_patch
