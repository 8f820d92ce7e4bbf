"""CategoricalArchive: a grid whose measure dimensions are categorical variables."""

from __future__ import annotations

import numpy as np

from ribsax._utils import check_batch_shape
from ribsax.archives._bounds import GridIndexMixin
from ribsax.archives._threshold_archive import ThresholdArchive

__all__ = ["CategoricalArchive"]


class CategoricalArchive(GridIndexMixin, ThresholdArchive):
    """An archive where each measure dimension is a set of categories.

    Behaves like :class:`ribs.archives.CategoricalArchive`: a grid with one cell per
    combination of categories, one elite per cell, and the MAP-Elites / CMA-MAE
    threshold rules of :class:`~ribsax.archives.GridArchive` (same statuses, values,
    thresholds and stats). Category names are mapped to positions with one dict per
    dimension on the host; insertion then runs on the same jitted kernel as the other
    grid archives, which receives the host-computed cell indices.

    Measures default to the ``object`` dtype (categories can be any hashable, typically
    strings) and are kept on the host; solutions, objectives and thresholds live on the
    JAX device.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        categories: One list of category names per measure dimension, e.g.
            ``[["A", "B", "C"], ["One", "Two"]]`` gives a 3 x 2 grid.
        learning_rate: CMA-MAE archive learning rate (None means 1.0).
        threshold_min: Initial threshold of every cell (CMA-MAE).
        qd_score_offset: Subtracted from each objective in the QD score.
        seed: Seed for :meth:`sample_elites`.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32).
        objective_dtype: dtype of objectives and thresholds.
        measures_dtype: dtype of measures (default ``object``).
        dtype: Sets the solution and objective dtypes at once (not the measures
            dtype, which stays ``object``).
        extra_fields: ``{name: (shape, dtype)}`` of additional per-elite data.

    Raises:
        ValueError: Invalid CMA-MAE settings, reserved extra field names, or
            conflicting dtype arguments.
    """

    def __init__(
        self,
        *,
        solution_dim,
        categories,
        learning_rate=None,
        threshold_min=-np.inf,
        qd_score_offset=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
    ):
        self._categories = [list(dim_categories) for dim_categories in categories]
        self._dims = np.array([len(c) for c in self._categories], dtype=np.int32)
        ThresholdArchive.__init__(
            self,
            solution_dim=solution_dim,
            measure_dim=len(self._categories),
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
            default_measures_dtype=object,
        )
        # One dict per dimension from category name to its position.
        self._category_to_idx = [
            {name: pos for pos, name in enumerate(dim_categories)}
            for dim_categories in self._categories
        ]

    # ------------------------------------------------------------ properties
    @property
    def categories(self):
        """List of the category names of each measure dimension."""
        return self._categories

    @property
    def dims(self):
        """int32 array: number of categories (cells) per measure dimension."""
        return self._dims

    # ------------------------------------------------------------ indexing
    def index_of(self, measures):
        """Flat cell index of each row of categories.

        Each category is mapped to its position in :attr:`categories`, and the grid
        coordinates are flattened in C order (see :meth:`grid_to_int_index`).

        Args:
            measures: (batch_size, :attr:`measure_dim`) array of categories.

        Returns:
            int32[batch_size].

        Raises:
            ValueError: ``measures`` has the wrong shape.
            KeyError: A measure is not one of the categories of its dimension.
        """
        measures = np.asarray(measures, dtype=self.dtypes["measures"])
        check_batch_shape(measures, "measures", self.measure_dim, "measure_dim")
        try:
            columns = [
                [lookup[m] for m in col] for lookup, col in zip(self._category_to_idx, measures.T)
            ]
        except KeyError:
            # Report the first unknown category in row-major order, as pyribs does.
            for row in measures:
                for lookup, m in zip(self._category_to_idx, row):
                    lookup[m]
            raise
        grid = np.array(columns, dtype=np.int64).reshape(self.measure_dim, -1).T
        return self.grid_to_int_index(grid)
