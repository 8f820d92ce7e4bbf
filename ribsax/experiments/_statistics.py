"""Significance tests between groups of runs (``ribsax plot --tests``):
pairwise two-sided Mann-Whitney U tests with the Holm-Bonferroni correction."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

__all__ = ["holm_bonferroni", "pairwise_tests", "TEST_COLUMNS"]

#: Columns of :func:`pairwise_tests`' table.
TEST_COLUMNS = (
    "metric",
    "group_a",
    "group_b",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "u_statistic",
    "p_value",
    "p_holm",
    "significant",
)


def holm_bonferroni(p_values) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the order given.

    With the ``m`` p-values sorted in increasing order ``p_(1) <= ... <= p_(m)``,
    the adjusted ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting
    the hypotheses whose adjusted p-value is below ``alpha`` controls the
    family-wise error rate at ``alpha``. NaN p-values are left NaN and do not
    count in ``m``.

    Args:
        p_values: 1-D sequence of p-values.

    Returns:
        The adjusted p-values (float64), in the order of ``p_values``.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p_values.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(p_values))
    order = finite[np.argsort(p_values[finite], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def pairwise_tests(finals: pd.DataFrame, metrics, *, group="group", alpha=0.05) -> pd.DataFrame:
    """Two-sided Mann-Whitney U test (Wilcoxon rank-sum) of every pair of groups on
    each metric, Holm-Bonferroni-corrected over the pairs of each metric.

    The test is ``scipy.stats.mannwhitneyu(a, b, alternative="two-sided",
    method="auto")``: the exact distribution of U for samples under 9 runs without
    ties, the normal approximation with tie correction otherwise. A rank test needs
    enough runs to reject: with 3 runs per group the smallest two-sided exact
    p-value is 0.1, with 5 runs 0.0079. A metric whose values are all equal in
    both groups gets p = 1.

    Args:
        finals: One row per run, with the ``group`` column and the metric columns
            (NaN values are dropped per metric).
        metrics: Metric columns to test.
        group: Column naming each run's group (sorted for the pair order).
        alpha: Level of ``significant``.

    Returns:
        One row per (metric, pair) with :data:`TEST_COLUMNS`: the groups and
        their run counts and medians, U (of ``group_a``), the p-value, the
        Holm-Bonferroni adjusted p-value within the metric, and whether it is
        below ``alpha``.
    """
    # scipy.stats takes most of a second to import; the ``ribsax`` command imports
    # this module for every sub-command.
    import scipy.stats

    names = sorted(finals[group].unique())
    rows = []
    for metric in metrics:
        samples = {
            g: finals.loc[finals[group] == g, metric].dropna().to_numpy(np.float64) for g in names
        }
        metric_rows = []
        for a, b in itertools.combinations(names, 2):
            x, y = samples[a], samples[b]
            if len(x) == 0 or len(y) == 0:
                u, p = np.nan, np.nan
            else:
                u, p = scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="auto")
            metric_rows.append(
                {
                    "metric": metric,
                    "group_a": a,
                    "group_b": b,
                    "n_a": len(x),
                    "n_b": len(y),
                    "median_a": float(np.median(x)) if len(x) else np.nan,
                    "median_b": float(np.median(y)) if len(y) else np.nan,
                    "u_statistic": float(u),
                    "p_value": float(p),
                }
            )
        adjusted = holm_bonferroni([row["p_value"] for row in metric_rows])
        for row, p_holm in zip(metric_rows, adjusted):
            row["p_holm"] = float(p_holm)
            row["significant"] = bool(p_holm < alpha)
        rows.extend(metric_rows)
    return pd.DataFrame(rows, columns=list(TEST_COLUMNS))
