"""archive_ecdf: empirical cumulative distribution of the elites' objectives."""

from __future__ import annotations

import numpy as np

from ribsax.visualize._utils import label_axes, read_fields, resolve_axes

__all__ = ["archive_ecdf"]

_STAT_SCALE = {"proportion": 1.0, "percent": 100.0}
_STAT_LABEL = {"proportion": "Proportion", "percent": "Percent", "count": "Count"}


def archive_ecdf(archive, df=None, **kwargs):
    """Plots the empirical CDF of the objectives of an archive's elites.

    pyribs' :func:`ribs.visualize.archive_ecdf` hands the objectives to
    ``seaborn.ecdfplot``; ribsax draws the same step curve with matplotlib alone
    (no seaborn needed): for sorted objectives :math:`f_{(1)} \\le \\dots \\le
    f_{(n)}` the curve is 0 left of :math:`f_{(1)}` and :math:`i/n` from
    :math:`f_{(i)}` on (one ``Axes.plot`` line with ``drawstyle="steps-post"``,
    starting at ``-inf`` as seaborn's does). The keyword arguments seaborn's
    ``ecdfplot`` uses for a single curve are understood; others go to
    :meth:`~matplotlib.axes.Axes.plot` (e.g. ``color``, ``linewidth``,
    ``label``).

    Args:
        archive: Any archive with ``data()``.
        df: Optional DataFrame with an ``objective`` column plotted instead of the
            archive's contents.
        **kwargs:
            ``ax``: Axes to draw on (pyplot's current Axes when None).
            ``stat``: ``"proportion"`` (default), ``"percent"`` or ``"count"``.
            ``complementary``: plot :math:`1 - F` (default False).
            Anything else is passed to ``Axes.plot``.

    Returns:
        The Axes drawn on (as pyribs).

    Raises:
        AttributeError: The archive's ``data()`` is not implemented.
        ValueError: Unknown ``stat``.
    """
    (objective,) = read_fields(archive, df, ("objective",), caller="archive_ecdf")
    ax = resolve_axes(kwargs.pop("ax", None))
    stat = kwargs.pop("stat", "proportion")
    complementary = kwargs.pop("complementary", False)
    if stat not in _STAT_LABEL:
        raise ValueError(f"stat must be one of {list(_STAT_LABEL)}, not {stat!r}")

    values = np.sort(np.asarray(objective, dtype=float))
    values = values[~np.isnan(values)]
    n = len(values)
    cumulative = np.arange(n + 1, dtype=float)
    if stat != "count":
        cumulative = cumulative / max(n, 1) * _STAT_SCALE[stat]
    if complementary:
        cumulative = cumulative[-1] - cumulative
    xs = np.concatenate([[-np.inf], values])
    kwargs.setdefault("drawstyle", "steps-post")
    ax.plot(xs, cumulative, **kwargs)
    label_axes(ax, "objective", _STAT_LABEL[stat])
    ax.set_ylim(bottom=0)
    return ax
