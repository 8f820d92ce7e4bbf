"""speed_plot: throughputs or speed-up ratios per configuration (ribsax)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ribsax.visualize._utils import label_axes, resolve_axes

__all__ = ["speed_plot"]


def _as_table(speeds):
    """``{configuration: {series: [values]}}`` from the accepted inputs."""
    if isinstance(speeds, pd.Series):
        speeds = speeds.to_dict()
    if isinstance(speeds, pd.DataFrame):
        speeds = {
            row: {col: speeds.loc[row, col] for col in speeds.columns} for row in speeds.index
        }
    if not isinstance(speeds, Mapping) or not speeds:
        raise TypeError(
            f"speeds must be a non-empty dict, Series or DataFrame, got {type(speeds).__name__}"
        )
    table = {}
    for config, value in speeds.items():
        series = value if isinstance(value, Mapping) else {None: value}
        table[str(config)] = {
            name: np.atleast_1d(np.asarray(v, dtype=float)).ravel() for name, v in series.items()
        }
    for config, series in table.items():
        for name, values in series.items():
            if values.size == 0 or not np.all(np.isfinite(values)):
                raise ValueError(
                    f"speeds[{config!r}][{name!r}] must hold finite numbers, got {values}"
                )
    return table


def speed_plot(
    speeds,
    ax=None,
    *,
    reference=None,
    log=False,
    xlabel=None,
    ylabel=None,
    fmt="{:.4g}",
    annotate=True,
    colors=None,
    legend=True,
):
    """Draws horizontal bars of speeds (throughputs or ratios) per configuration,
    as the benchmark scripts report them (ribsax addition).

    Each bar is the median of the repeated measurements given for it, with a
    whisker from their minimum to their maximum when there are several. Several
    series (e.g. ``"ribsax"`` and ``"pyribs"`` iterations per second) are grouped
    per configuration; ratios (e.g. ribsax / pyribs) are one series with
    ``reference=1`` marking parity.

    Args:
        speeds: ``{configuration: value}`` where a value is a number, a sequence
            of repeats, or ``{series: number or repeats}``; a pandas Series
            (configurations as index) or DataFrame (configurations as rows,
            series as columns) works too.
        ax: Axes to draw on; pyplot's current Axes when None.
        reference: Draw a dashed vertical line at this value (e.g. 1 for ratios).
        log: Logarithmic speed axis (speed-ups spanning orders of magnitude).
        xlabel: Label of the speed axis (default: ``"speed"``).
        ylabel: Label of the configuration axis (default: ``"configuration"``).
        fmt: Format of the value written at the end of each bar.
        annotate: Write each bar's value at its end.
        colors: Optional list of colours, one per series.
        legend: Add a legend when there are named series.

    Returns:
        The Axes drawn on; configurations read top to bottom in the given order.

    Raises:
        TypeError: ``speeds`` is not a non-empty dict, Series or DataFrame.
        ValueError: A value is empty or not finite, or ``log`` with a value <= 0.
    """
    table = _as_table(speeds)
    series_names = list(dict.fromkeys(n for s in table.values() for n in s))
    if log and any(np.any(v <= 0) for s in table.values() for v in s.values()):
        raise ValueError("log=True needs positive speeds")
    ax = resolve_axes(ax)
    configs = list(table)
    height = 0.8 / len(series_names)
    positions = np.arange(len(configs), dtype=float)
    for j, name in enumerate(series_names):
        offset = (j - (len(series_names) - 1) / 2) * height
        ys, medians, lows, highs = [], [], [], []
        for k, config in enumerate(configs):
            if name in table[config]:
                values = table[config][name]
                ys.append(positions[k] + offset)
                medians.append(np.median(values))
                lows.append(np.min(values))
                highs.append(np.max(values))
        medians = np.asarray(medians)
        xerr = np.stack([medians - np.asarray(lows), np.asarray(highs) - medians])
        bars = ax.barh(
            ys,
            medians,
            height=height,
            xerr=xerr if np.any(xerr > 0) else None,
            label=name,
            color=None if colors is None else colors[j],
            capsize=2,
        )
        if annotate:
            ax.bar_label(bars, labels=[fmt.format(m) for m in medians], padding=3, fontsize="small")
    if annotate and not log:
        ax.margins(x=0.12)  # Room for the labels at the end of the longest bar.
    ax.set_yticks(positions)
    ax.set_yticklabels(configs)
    ax.invert_yaxis()  # First configuration on top.
    if log:
        ax.set_xscale("log")
    if reference is not None:
        ax.axvline(reference, color="0.3", linestyle="--", linewidth=1)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    label_axes(ax, "speed", "configuration")
    if legend and series_names != [None]:
        ax.legend()
    return ax
