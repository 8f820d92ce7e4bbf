"""qd_metric_curves: QD metrics over a run, mean and band over seeds (ribsax)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.stats

from ribsax.visualize._utils import label_axes, resolve_axes

__all__ = ["qd_metric_curves"]

_PRETTY = {
    "qd_score": "QD score",
    "norm_qd_score": "normalised QD score",
    "coverage": "coverage",
    "num_elites": "number of elites",
    "obj_max": "best objective",
    "obj_mean": "mean objective",
}
_ERRORBARS = ("sd", "se", "ci95", "minmax", None)


def _runs_of(results):
    """One DataFrame per run (seed) from the accepted result types."""
    metrics = getattr(results, "metrics", None)
    if isinstance(metrics, pd.DataFrame):  # RunResult or TrialsResult.
        results = metrics
    if isinstance(results, pd.DataFrame):
        if "trial" in results.columns:
            return [run for _, run in results.groupby("trial", sort=True)]
        return [results]
    if isinstance(results, (list, tuple)) and results:
        runs = []
        for item in results:
            runs.extend(_runs_of(item))
        return runs
    raise TypeError(
        "results must be a RunResult, TrialsResult, DataFrame of metrics, a "
        f"non-empty list of them, or a dict of those; got {type(results).__name__}"
    )


def _curve(runs, metric, estimator, errorbar):
    """(iterations, centre, low, high) over the runs' shared iterations."""
    for run in runs:
        missing = [c for c in ("iteration", metric) if c not in run.columns]
        if missing:
            raise ValueError(f"Metrics lack column(s) {missing}; columns are {list(run.columns)}")
    table = pd.concat(
        [run.set_index("iteration")[metric].rename(i) for i, run in enumerate(runs)],
        axis=1,
        join="inner",
    ).sort_index()
    values = table.to_numpy(dtype=float)  # (iterations, runs)
    centre = np.mean(values, axis=1) if estimator == "mean" else np.median(values, axis=1)
    if errorbar is None or values.shape[1] < 2:
        low = high = None
    elif errorbar == "sd":
        spread = values.std(axis=1, ddof=1)
        low, high = centre - spread, centre + spread
    elif errorbar == "se":
        spread = scipy.stats.sem(values, axis=1)
        low, high = centre - spread, centre + spread
    elif errorbar == "ci95":
        spread = scipy.stats.sem(values, axis=1) * scipy.stats.t.ppf(0.975, values.shape[1] - 1)
        low, high = centre - spread, centre + spread
    else:  # "minmax"
        low, high = values.min(axis=1), values.max(axis=1)
    return table.index.to_numpy(), centre, low, high


def qd_metric_curves(
    results,
    ax=None,
    *,
    metric="qd_score",
    evaluations_per_iteration=None,
    estimator="mean",
    errorbar="ci95",
    alpha=0.2,
    colors=None,
    legend=True,
    **plot_kwargs,
):
    """Plots a QD metric over a run: one line per configuration, with a band over
    seeds (ribsax addition; pyribs has no equivalent).

    Accepts what ribsax runs return: the ``metrics`` DataFrame of
    :class:`~ribsax.schedulers.RunResult` (one run) and of
    :class:`~ribsax.schedulers.TrialsResult` (several seeds, told apart by its
    ``trial`` column), or lists of those (one per seed). Curves of several
    configurations are drawn on one Axes by passing a dict ``{label: results}``.
    Seeds are aligned on the iterations they all recorded.

    Args:
        results: A RunResult, TrialsResult or metrics DataFrame (with an
            ``iteration`` column and the metric), a list of them (seeds of one
            configuration), or a dict mapping legend labels to any of these.
        ax: Axes to draw on; pyplot's current Axes when None.
        metric: Column to plot: ``"qd_score"``, ``"norm_qd_score"``,
            ``"coverage"``, ``"num_elites"``, ``"obj_max"`` (best objective),
            ``"obj_mean"`` or any other column of the metrics.
        evaluations_per_iteration: When given, the x-axis counts evaluations
            (``iteration * evaluations_per_iteration``, e.g. the scheduler's batch
            size) instead of iterations.
        estimator: ``"mean"`` or ``"median"`` over seeds.
        errorbar: Band over seeds: ``"ci95"`` (95% Student-t confidence interval
            of the mean, default), ``"sd"``, ``"se"``, ``"minmax"``, or None. No
            band is drawn for a single seed.
        alpha: Opacity of the band.
        colors: Optional list of colours, one per configuration (default: the
            Axes' colour cycle).
        legend: Add a legend when there is more than one configuration.
        **plot_kwargs: Passed to :meth:`~matplotlib.axes.Axes.plot` for the lines.

    Returns:
        The Axes drawn on.

    Raises:
        TypeError: ``results`` is not one of the accepted types.
        ValueError: Unknown ``estimator`` or ``errorbar``, a metric column is
            missing, or ``evaluations_per_iteration`` is not positive.
    """
    if estimator not in ("mean", "median"):
        raise ValueError(f"Unknown estimator {estimator}")
    if errorbar not in _ERRORBARS:
        raise ValueError(f"Unknown errorbar {errorbar}; choose from {_ERRORBARS}")
    if evaluations_per_iteration is not None and evaluations_per_iteration <= 0:
        raise ValueError(
            f"evaluations_per_iteration must be positive, got {evaluations_per_iteration}"
        )
    configs = dict(results) if isinstance(results, Mapping) else {None: results}
    ax = resolve_axes(ax)
    for i, (label, config_results) in enumerate(configs.items()):
        iterations, centre, low, high = _curve(
            _runs_of(config_results), metric, estimator, errorbar
        )
        xs = (
            iterations
            if evaluations_per_iteration is None
            else iterations * evaluations_per_iteration
        )
        kwargs = dict(plot_kwargs)
        if colors is not None:
            kwargs.setdefault("color", colors[i])
        (line,) = ax.plot(xs, centre, label=label, **kwargs)
        if low is not None:
            ax.fill_between(xs, low, high, alpha=alpha, color=line.get_color(), linewidth=0)
    label_axes(
        ax,
        "iterations" if evaluations_per_iteration is None else "evaluations",
        _PRETTY.get(metric, metric),
    )
    if legend and len(configs) > 1:
        ax.legend()
    return ax
