"""RunResult: what :meth:`ribsax.schedulers.Scheduler.run` returns."""

from __future__ import annotations

import dataclasses

import pandas as pd

__all__ = ["RunResult"]


@dataclasses.dataclass
class RunResult:
    """Metrics history and timings of a scheduler run.

    Attributes:
        metrics: :class:`pandas.DataFrame` with one row per recorded iteration:
            ``iteration`` (counted over all runs of the scheduler, starting at 1),
            ``num_elites``, ``coverage``, ``qd_score``, ``norm_qd_score``,
            ``obj_max`` and ``obj_mean`` of the result archive (the archive when
            there is none), as pyribs' ``ArchiveStats`` defines them (``obj_max`` and
            ``obj_mean`` are NaN while the archive is empty); ``evaluations``,
            the evaluations made since the scheduler's first run (solutions
            evaluated, those the evaluation function reports in its
            ``extra_evaluations`` extra, e.g. ES Jacobian samples, and those the
            emitters report having evaluated themselves, see
            :meth:`ribsax.emitters.EmitterKernel.evaluations`);
            and ``non_finite``, the rows of that iteration whose evaluation was
            not finite (kept out of the archives).
        iterations: Number of iterations run.
        evaluations: Number of evaluations made by this run (solutions
            evaluated and those the emitters report having evaluated
            themselves); the ``evaluations`` column counts from the scheduler's
            first run.
        compile_time: Seconds spent tracing and compiling (0 when the compiled loop
            was reused; the first Python-loop iteration's compilation is not
            separated and counts as run time).
        run_time: Seconds spent running the iterations.
        fused: Whether the iterations ran as one compiled ``lax.scan``.
        history: With ``run(..., history=True)``: the solutions inserted into the
            result archive (the archive when there is none), i.e. those whose add
            status was above 0 (1: improved a cell, 2: a new cell), one row each
            in iteration and batch order: ``iteration``, ``status``,
            ``objective`` and ``measures_<j>``. Statuses are judged against the
            archive before each batch, so two solutions of one batch that reach
            the same cell can both appear (the archive keeps the better one).
            None otherwise.
    """

    metrics: pd.DataFrame
    iterations: int
    compile_time: float
    run_time: float
    fused: bool
    history: pd.DataFrame | None = None
    evaluations: int = 0

    @property
    def final(self) -> dict:
        """The last recorded row of :attr:`metrics` as a dict."""
        return self.metrics.iloc[-1].to_dict()

    @property
    def iterations_per_second(self) -> float:
        """``iterations / run_time`` (compile time excluded)."""
        return self.iterations / self.run_time if self.run_time > 0 else float("inf")
