"""Archive statistics, written once for NumPy and JAX.

:func:`stats_values` is the one place where the statistics of an archive are
computed from its summary numbers (number of elites, cells, objective sum, QD-score
offset, best objective). It is written against an array namespace ``xp``:

* ``xp=numpy`` for the archive objects: :func:`summary_stats` turns the values into
  pyribs' :class:`ArchiveStats`, the same numbers and types as pyribs;
* ``xp=jax.numpy`` for the fused loop (:func:`ribsax.functional.archive_stats`,
  whose values are the per-iteration metrics of ``Scheduler.run`` and
  ``run_trials``).

**The empty archive.** A traced array cannot hold None, so the metric values use NaN
for ``obj_max`` and ``obj_mean`` while the archive is empty (``num_elites``,
``coverage``, ``qd_score`` and ``norm_qd_score`` are 0). :class:`ArchiveStats` keeps
pyribs' convention, None for both. :func:`stats_metrics` maps an :class:`ArchiveStats`
back to metric values (None -> NaN), so a run through ask/tell and the same run fused
record the same numbers, NaN included.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

__all__ = ["ArchiveStats", "STAT_NAMES", "stats_values", "summary_stats", "stats_metrics"]

#: The statistics, in pyribs' ``ArchiveStats`` order (also the fused loop's metrics).
STAT_NAMES = ("num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean")


@dataclasses.dataclass
class ArchiveStats:
    """Statistics of an archive, as pyribs reports them.

    Attributes:
        num_elites: Number of elites (Python int).
        coverage: Fraction of cells occupied (0-d array, objective dtype).
        qd_score: Sum of ``objective - qd_score_offset`` over elites.
        norm_qd_score: ``qd_score / cells``.
        obj_max: Best objective ever inserted (None when empty; metric records
            of runs hold NaN instead, see :func:`stats_metrics`).
        obj_mean: Mean objective of the current elites (None when empty; NaN in
            metric records).
    """

    num_elites: int
    coverage: Any
    qd_score: Any
    norm_qd_score: Any
    obj_max: Any
    obj_mean: Any


def _opaque(xp, value, anchor):
    """``value``, rounded to its dtype and hidden from XLA's rewrites (NaN where
    ``anchor`` is NaN, which leaves every result below NaN either way).

    NumPy rounds every operation; XLA may not: it turns a division by a constant,
    or by a value broadcast over a batch (as under ``vmap``), into a multiplication
    by the reciprocal, and fuses a multiplication followed by a subtraction into one
    fused multiply-add; both are up to 1 ulp off. A value selected against the
    ``anchor`` (same batch as the other operand) and passed through an optimisation
    barrier is neither folded, broadcast, nor fused, so the operation that uses it
    rounds as NumPy's does.
    """
    if xp is np:
        return value
    return jax.lax.optimization_barrier(xp.where(anchor != anchor, anchor, value))


def _divide(xp, a, b):
    """``a / b``, rounded as NumPy rounds it (see :func:`_opaque`)."""
    return a / _opaque(xp, b, a)


def stats_values(n, cells, objective_sum, qd_score_offset, obj_max, *, dtype, xp=np) -> dict:
    """The statistics of an archive from its summary numbers (pyribs' rules).

    ``coverage = n / cells``; ``qd_score = objective_sum - n * qd_score_offset``;
    ``norm_qd_score = qd_score / cells``; ``obj_mean = objective_sum / n``; every
    value in the objective ``dtype``, rounded as pyribs' ``GridArchive`` rounds it:
    the coverage divides in float64 (Python's division; in JAX without x64, in
    float32, which rounds the quotient of two integers below 2**24 the same way)
    and is cast; the other divisions are in ``dtype``. In JAX the results equal
    NumPy's bit for bit, traced, scanned or vmapped (see :func:`_opaque`).

    Args:
        n: Number of elites (a Python int with NumPy, an integer scalar, possibly
            traced, with JAX).
        cells: Number of cells (Python int; 0 counts as 1).
        objective_sum: Sum of the elites' objectives (0 when empty).
        qd_score_offset: The archive's QD-score offset.
        obj_max: Best objective ever inserted; None or anything while empty.
        dtype: Objective dtype.
        xp: Array namespace: :mod:`numpy` or :mod:`jax.numpy`.

    Returns:
        Dict of the :data:`STAT_NAMES` values: ``num_elites`` is ``n`` as given,
        the others scalars of ``dtype`` (0-d arrays, or NumPy scalars for
        ``qd_score`` and ``obj_max`` as in pyribs). While ``n`` is 0:
        ``coverage``, ``qd_score`` and ``norm_qd_score`` are 0 and ``obj_max`` and
        ``obj_mean`` are NaN.
    """
    empty = n == 0
    # An unstructured archive may have no cells yet (then it is empty: stats 0).
    cells = max(int(cells), 1)
    nan = xp.asarray(xp.nan, dtype=dtype)
    count = xp.asarray(n, dtype=dtype)
    objective_sum = xp.asarray(objective_sum, dtype=dtype)
    offsets = _opaque(xp, count * xp.asarray(qd_score_offset, dtype=dtype), objective_sum)
    qd_score = objective_sum - offsets
    obj_max = xp.asarray(xp.nan if obj_max is None else obj_max, dtype=dtype)
    if xp is np:
        coverage = n / cells
    else:
        wide = jax.dtypes.canonicalize_dtype(np.float64)  # float32 without x64.
        coverage = _divide(xp, xp.asarray(n, dtype=wide), xp.asarray(cells, wide))
    return {
        "num_elites": n,
        "coverage": xp.asarray(coverage, dtype=dtype),
        "qd_score": qd_score,
        "norm_qd_score": xp.asarray(
            _divide(xp, qd_score, xp.asarray(cells, dtype=dtype)), dtype=dtype
        ),
        # ``[()]``: a NumPy scalar, as pyribs' best elite objective (a no-op in JAX).
        "obj_max": xp.where(empty, nan, obj_max)[()],
        "obj_mean": xp.asarray(
            xp.where(empty, nan, _divide(xp, objective_sum, xp.maximum(count, 1))), dtype=dtype
        ),
    }


def summary_stats(n, cells, objective_sum, qd_score_offset, obj_max, dtype) -> ArchiveStats:
    """The :class:`ArchiveStats` of ``n`` elites in ``cells`` cells whose
    objectives sum to ``objective_sum``: :func:`stats_values` in NumPy, with
    pyribs' empty stats (0-d zeros, None for ``obj_max`` and ``obj_mean``) when
    ``n`` is 0.

    Args:
        n: Number of elites.
        cells: Number of cells (coverage and normalised QD score divide by it).
        objective_sum: Sum of the elites' objectives.
        qd_score_offset: The archive's offset.
        obj_max: Best objective (ignored when ``n`` is 0).
        dtype: Objective dtype.
    """
    n = int(n)
    values = stats_values(
        n, cells, objective_sum, qd_score_offset, obj_max if n else None, dtype=dtype, xp=np
    )
    if n == 0:
        return ArchiveStats(
            num_elites=0,
            coverage=np.array(values["coverage"]),
            qd_score=np.array(values["qd_score"]),
            norm_qd_score=np.array(values["norm_qd_score"]),
            obj_max=None,
            obj_mean=None,
        )
    return ArchiveStats(**values)


def stats_metrics(stats: ArchiveStats) -> dict:
    """The metric values of an :class:`ArchiveStats` (what a fused run records for
    the same archive): the :data:`STAT_NAMES` fields, with NaN for the None
    ``obj_max`` and ``obj_mean`` of an empty archive.

    Args:
        stats: Stats of an archive object.

    Returns:
        Dict of the :data:`STAT_NAMES` values (``num_elites`` an int, NaN a
        Python float, the others as ``stats`` holds them).
    """
    return {
        name: float("nan") if getattr(stats, name) is None else getattr(stats, name)
        for name in STAT_NAMES
    }
