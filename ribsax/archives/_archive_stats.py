"""ArchiveStats dataclass."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["ArchiveStats", "summary_stats"]


@dataclasses.dataclass
class ArchiveStats:
    """Statistics of an archive, as pyribs reports them.

    Attributes:
        num_elites: Number of elites (Python int).
        coverage: Fraction of cells occupied (0-d array, objective dtype).
        qd_score: Sum of ``objective - qd_score_offset`` over elites.
        norm_qd_score: ``qd_score / cells``.
        obj_max: Best objective ever inserted (None when empty).
        obj_mean: Mean objective of the current elites (None when empty).
    """

    num_elites: int
    coverage: Any
    qd_score: Any
    norm_qd_score: Any
    obj_max: Any
    obj_mean: Any


def summary_stats(n, cells, objective_sum, qd_score_offset, obj_max, dtype
                  ) -> ArchiveStats:
    """The stats of ``n`` elites in ``cells`` cells whose objectives sum to
    ``objective_sum`` (pyribs' rule, in the objective ``dtype``): QD score
    ``objective_sum - n * qd_score_offset``, normalised by ``cells``; empty stats
    (zeros, None) when ``n`` is 0.

    Args:
        n: Number of elites.
        cells: Number of cells (coverage and normalised QD score divide by it).
        objective_sum: Sum of the elites' objectives.
        qd_score_offset: The archive's offset.
        obj_max: Best objective (ignored when ``n`` is 0).
        dtype: Objective dtype.
    """
    if n == 0:
        zero = np.asarray(0.0, dtype=dtype)
        return ArchiveStats(num_elites=0, coverage=zero.copy(), qd_score=zero.copy(),
                            norm_qd_score=zero.copy(), obj_max=None, obj_mean=None)
    objective_sum = np.asarray(objective_sum, dtype=dtype)[()]
    qd_score = objective_sum - np.asarray(n, dtype=dtype) * qd_score_offset
    return ArchiveStats(
        num_elites=int(n),
        coverage=np.asarray(n / cells, dtype=dtype),
        qd_score=qd_score,
        norm_qd_score=np.asarray(qd_score / cells, dtype=dtype),
        obj_max=obj_max,
        obj_mean=np.asarray(objective_sum / n, dtype=dtype),
    )
