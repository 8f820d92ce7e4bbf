"""GridArchive: a regular grid over the measure space."""

from __future__ import annotations

import numpy as np

from ribsax.archives._array_store import ArrayStore, committed
from ribsax.archives._bounds import GridIndexMixin, MeasureBoundsMixin
from ribsax.archives._kernels import indexed, packed_grid_index
from ribsax.archives._threshold_archive import ThresholdArchive

__all__ = ["GridArchive"]


class GridArchive(MeasureBoundsMixin, GridIndexMixin, ThresholdArchive):
    """An archive that divides each measure dimension into uniform bins.

    Behaves like :class:`ribs.archives.GridArchive` (same arguments, defaults,
    statuses, values, stats, errors) with its storage on the JAX device and ``add``
    running as one jitted kernel.

    A measure vector ``m`` maps to grid coordinate
    ``int32((dims * (m - lower_bounds) + epsilon) / interval_size)`` clipped to
    ``[0, dims - 1]``, then to a flat index in C order. Values outside ``ranges`` go
    to the edge cells; the upper bound belongs to the last cell.

    Thresholds: with the defaults (``learning_rate=None`` meaning 1.0,
    ``threshold_min=-inf``) a cell's threshold is its elite's objective (plain
    MAP-Elites). Otherwise (CMA-MAE), a batch of k insertable solutions in a cell moves
    its threshold to ``(1-lr)^k t + mean(f) (1-(1-lr)^k)``.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        dims: Number of cells along each measure dimension.
        ranges: ``(low, high)`` per measure dimension.
        learning_rate: CMA-MAE archive learning rate (None means 1.0).
        threshold_min: Initial threshold of every cell (CMA-MAE).
        epsilon: Added before the division so values on a boundary land in the upper
            cell despite rounding.
        qd_score_offset: Subtracted from each objective in the QD score.
        seed: Seed for :meth:`sample_elites`.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32; ``object`` is kept on the host).
        objective_dtype: dtype of objectives and thresholds.
        measures_dtype: dtype of measures.
        dtype: Sets the three dtypes at once.
        extra_fields: ``{name: (shape, dtype)}`` of additional per-elite data.

    Raises:
        ValueError: ``dims`` and ``ranges`` differ in length, invalid CMA-MAE
            settings, reserved extra field names, or conflicting dtype arguments.
    """

    def __init__(
        self,
        *,
        solution_dim,
        dims,
        ranges,
        learning_rate=None,
        threshold_min=-np.inf,
        epsilon=1e-6,
        qd_score_offset=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
    ):
        self._dims = np.array(dims, dtype=np.int32)
        ThresholdArchive.__init__(
            self,
            solution_dim=solution_dim,
            measure_dim=len(self._dims),
            cells=int(np.prod(self._dims)),
            learning_rate=learning_rate,
            threshold_min=threshold_min,
            qd_score_offset=qd_score_offset,
            seed=seed,
            solution_dtype=solution_dtype,
            objective_dtype=objective_dtype,
            measures_dtype=measures_dtype,
            dtype=dtype,
            extra_fields=extra_fields,
        )
        if len(self._dims) != len(ranges):
            raise ValueError(
                f"dims (length {len(self._dims)}) and ranges "
                f"(length {len(ranges)}) must be the same length"
            )
        ranges = list(zip(*ranges))
        mdtype = self.dtypes["measures"]
        self._lower_bounds = np.array(ranges[0], dtype=mdtype)
        self._upper_bounds = np.array(ranges[1], dtype=mdtype)
        self._interval_size = self._upper_bounds - self._lower_bounds
        self._epsilon = np.array(epsilon, dtype=mdtype)
        self._build_index_args()

    def _build_index_args(self):
        self._boundaries = [
            np.linspace(lo, hi, dim + 1)
            for dim, lo, hi in zip(self._dims, self._lower_bounds, self._upper_bounds)
        ]
        # Two device arguments instead of four: each buffer handed to a jitted kernel
        # costs a few microseconds per call on CPU.
        bounds = np.stack(
            [
                self._lower_bounds,
                self._interval_size,
                np.full_like(self._lower_bounds, self._epsilon),
            ]
        )
        self._index_args = committed((self._dims, bounds))

    def _index_spec(self):
        return packed_grid_index, self._index_args

    # ------------------------------------------------------------ properties
    @property
    def dims(self):
        """int32 array: number of cells per measure dimension."""
        return self._dims

    @property
    def boundaries(self):
        """List of ``np.linspace(lower, upper, dims + 1)`` per dimension."""
        return self._boundaries

    @property
    def epsilon(self):
        """Epsilon used in :meth:`index_of` (0-d array)."""
        return self._epsilon

    # ------------------------------------------------------------ indexing
    def index_of(self, measures):
        """Flat cell index of each measure vector.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.

        Returns:
            int32[batch_size].

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        measures = self._checked_measures(measures)
        return np.asarray(indexed(measures, self._index_args, index_fn=packed_grid_index))

    def retessellate(self, new_dims):
        """Changes the grid resolution and re-inserts the current elites.

        Unlike pyribs 0.12, whose running objective sum is not reset (so the QD score
        counts re-inserted elites twice), the stats are rebuilt from the re-inserted
        elites: QD score, mean and best elite describe the new archive.

        Args:
            new_dims: New number of cells per measure dimension.

        Raises:
            ValueError: The learning rate is not 1, or ``new_dims`` has the wrong
                length.
        """
        if not np.isclose(self.learning_rate, 1):
            raise ValueError("Cannot retessellate an archive with learning rate not equal to 1.")
        if len(new_dims) != self.measure_dim:
            raise ValueError(
                "The measure space dimensionality indicated in `new_dims` "
                f"is {len(new_dims)}, but this archive has a measure space "
                f"dimensionality of {self.measure_dim}."
            )
        current = self.data()
        del current["index"]
        self._dims = np.array(new_dims, dtype=np.int32)
        self._build_index_args()
        self._store = ArrayStore(self._store.field_desc, capacity=int(np.prod(self._dims)))
        self._reset_stats()
        if len(current["objective"]):
            self.add(**current)
