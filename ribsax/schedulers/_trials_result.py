"""TrialsResult: what :func:`ribsax.run_trials` returns."""

from __future__ import annotations

import dataclasses

import pandas as pd

from ribsax.schedulers._scan import METRIC_NAMES

__all__ = ["TrialsResult"]


@dataclasses.dataclass
class TrialsResult:
    """Metrics of several trials of one configuration run in one compiled call.

    Attributes:
        metrics: :class:`pandas.DataFrame` with ``trial`` (0-based), ``seed``,
            ``iteration`` and the metric columns of
            :class:`~ribsax.schedulers.RunResult`, one row per trial and recorded
            iteration.
        schedulers: The trials' schedulers, left in their final state (their
            archives and emitters can be inspected or run further).
        seeds: The seeds, in trial order.
        iterations: Iterations per trial.
        compile_time: Seconds spent tracing and compiling (0 on reuse).
        run_time: Seconds spent running all trials.
    """

    metrics: pd.DataFrame
    schedulers: list
    seeds: list
    iterations: int
    compile_time: float
    run_time: float

    @property
    def final(self) -> pd.DataFrame:
        """The last recorded row of every trial (indexed by trial)."""
        last = self.metrics.groupby("trial").tail(1)
        return last.set_index("trial")

    def summary(self, metrics=("qd_score", "coverage", "obj_max")) -> pd.DataFrame:
        """Mean and standard deviation over trials of the final metrics, like pyribs'
        ``sphere_multirun.py`` table.

        Args:
            metrics: Names of metric columns to summarise.

        Returns:
            DataFrame indexed by metric with columns ``mean``, ``std`` (sample
            standard deviation, ``ddof=1``; NaN for one trial), ``min``, ``max``,
            ``trials``.

        Raises:
            ValueError: An unknown metric name.
        """
        unknown = [m for m in metrics if m not in METRIC_NAMES]
        if unknown:
            raise ValueError(f"Unknown metrics {unknown}; choose from {METRIC_NAMES}")
        final = self.final
        rows = {}
        for name in metrics:
            col = final[name].astype(float)
            rows[name] = {
                "mean": col.mean(),
                "std": col.std(ddof=1),
                "min": col.min(),
                "max": col.max(),
                "trials": int(col.count()),
            }
        return pd.DataFrame.from_dict(rows, orient="index")
