"""ArchiveStats dataclass."""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ArchiveStats"]


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
