"""DiscountArchive: the archive of Discount Model Search (DMS)."""

from __future__ import annotations

import numpy as np

from ribsax._utils import parse_all_dtypes, validate_batch
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._cvt_archive import CVTArchive
from ribsax.archives._grid_archive import GridArchive

__all__ = ["DiscountArchive"]

_RESULT_ARCHIVE_ERROR = "result_archive must be a GridArchive or CVTArchive."


class DiscountArchive(ArchiveBase):
    """Stores no elites; compares solutions with a learned discount function.

    Behaves like :class:`ribs.archives.DiscountArchive` (Discount Model Search): a
    discount model (see :mod:`ribsax.discount_models`) predicts, for a measure
    vector, the threshold a solution must beat. :meth:`add` returns ``status`` 2
    where ``objective > discount`` (else 0), ``value = objective - discount`` and the
    ``discount``, and caches the batch. :meth:`train_discount_model` (call it after
    ``Scheduler.tell``) trains the model towards ``(1 - learning_rate) * discount +
    learning_rate * objective`` where the solution beat its discount (the discount
    itself elsewhere), plus ``empty_points`` centres of empty cells of the
    ``result_archive`` with target ``threshold_min``; :meth:`init_discount_model`
    trains on ``init_train_points`` such centres only. Centres are drawn without
    replacement with the archive's generator: grid cell centres for a
    :class:`GridArchive`, centroids for a :class:`CVTArchive`.

    The archive is never :attr:`empty`; :attr:`dtypes` holds only solution,
    objective and measures.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        measure_dim: Dimensionality of the measure space.
        learning_rate: Rate of the discount targets.
        threshold_min: Target of empty cells (finite).
        discount_model_manager: A :class:`ribsax.discount_models.DiscountModelManager`
            (or any object with ``inference`` and ``training_loop``).
        result_archive: The :class:`GridArchive` or :class:`CVTArchive` of results.
        init_train_points: Empty-cell centres used by :meth:`init_discount_model`.
        empty_points: Empty-cell centres added by :meth:`train_discount_model`.
        seed: Seed of the centre sampling.
        solution_dtype, objective_dtype, measures_dtype, dtype: As in the other
            archives.

    Raises:
        ValueError: ``threshold_min`` is not finite, or ``result_archive`` is neither
            a GridArchive nor a CVTArchive.
    """

    def __init__(
        self,
        *,
        solution_dim,
        measure_dim,
        learning_rate,
        threshold_min,
        discount_model_manager,
        result_archive,
        init_train_points,
        empty_points,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
    ):
        ArchiveBase.__init__(
            self, solution_dim=solution_dim, objective_dim=(), measure_dim=measure_dim
        )
        solution_dtype, objective_dtype, measures_dtype = parse_all_dtypes(
            dtype, solution_dtype, objective_dtype, measures_dtype
        )
        self._dtypes = {
            "solution": solution_dtype,
            "objective": objective_dtype,
            "measures": measures_dtype,
        }
        self._rng = np.random.default_rng(seed)
        if not np.isfinite(threshold_min):
            raise ValueError("Unlike in CMA-MAE, threshold_min must be a finite value.")
        self._learning_rate = np.asarray(learning_rate, dtype=measures_dtype)
        self._threshold_min = np.asarray(threshold_min, dtype=measures_dtype)
        self._discount_model_manager = discount_model_manager
        if not isinstance(result_archive, (GridArchive, CVTArchive)):
            raise ValueError(_RESULT_ARCHIVE_ERROR)
        self._result_archive = result_archive
        self._init_train_points = init_train_points
        self._empty_points = empty_points
        self._cached_data = None
        self._cached_add_info = None

    @property
    def empty(self) -> bool:
        """Always False (the archive stores no elites)."""
        return False

    @property
    def dtypes(self):
        """dtypes of solution, objective and measures."""
        return self._dtypes

    @property
    def learning_rate(self):
        """Rate of the discount targets (0-d array)."""
        return self._learning_rate

    @property
    def threshold_min(self):
        """Target of empty cells (0-d array)."""
        return self._threshold_min

    @property
    def discount_model_manager(self):
        """The discount model manager."""
        return self._discount_model_manager

    @property
    def init_train_points(self):
        """Empty-cell centres used by :meth:`init_discount_model`."""
        return self._init_train_points

    @property
    def empty_points(self):
        """Empty-cell centres added by :meth:`train_discount_model`."""
        return self._empty_points

    def _sample_empty_centers(self, n):
        """Measures of up to ``n`` distinct empty cells of the result archive."""
        result = self._result_archive
        empty = np.arange(result.cells)[~np.asarray(result.store.occupied)]
        chosen = self._rng.choice(empty, size=min(len(empty), n), replace=False)
        if isinstance(result, GridArchive):
            grid = result.int_to_grid_index(chosen)
            return ((grid + 0.5) / result.dims) * result.interval_size + (result.lower_bounds)
        return result.centroids[chosen]

    def _train(self, measures, targets, empty_measures, solution_targets):
        losses = self._discount_model_manager.training_loop(measures, targets)
        return {
            "solution_measures": measures[: len(solution_targets)],
            "solution_targets": solution_targets,
            "empty_measures": empty_measures,
            "epochs": len(losses),
            "losses": losses,
        }

    def init_discount_model(self) -> dict:
        """Trains the model on empty-cell centres with target ``threshold_min``.

        Returns:
            Dict of ``solution_measures`` and ``solution_targets`` (empty),
            ``empty_measures``, ``epochs`` and ``losses``.
        """
        empty_measures = self._sample_empty_centers(self._init_train_points)
        targets = np.full(len(empty_measures), self._threshold_min)
        out = self._train(empty_measures, targets, empty_measures, np.empty((0,)))
        out["solution_measures"] = np.empty((0, self.measure_dim))
        return out

    def train_discount_model(self) -> dict:
        """Trains the model on the last added batch and on empty-cell centres.

        Returns:
            Dict of ``solution_measures``, ``solution_targets``, ``empty_measures``,
            ``epochs`` and ``losses``.
        """
        data, info = self._cached_data, self._cached_add_info
        empty_measures = self._sample_empty_centers(self._empty_points)
        discount = info["discount"]
        solution_targets = np.where(
            data["objective"] > discount,
            (1.0 - self._learning_rate) * discount + self._learning_rate * data["objective"],
            discount,
        )
        measures = np.concatenate((data["measures"], empty_measures))
        targets = np.concatenate(
            (solution_targets, np.full(len(empty_measures), self._threshold_min))
        )
        return self._train(measures, targets, empty_measures, solution_targets)

    def add(self, solution, objective, measures, **fields):
        """Compares a batch with the discount model (nothing is stored).

        Returns:
            ``{"status": 2 where objective > discount else 0, "value": objective -
            discount, "discount": discount}``.

        Raises:
            ValueError: Bad shapes or non-finite values.
        """
        data = validate_batch(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        discount = np.asarray(self._discount_model_manager.inference(data["measures"])).astype(
            self._dtypes["objective"]
        )
        status = (2 * (data["objective"] > discount)).astype(np.int32)
        info = {"status": status, "value": data["objective"] - discount, "discount": discount}
        self._cached_data = data
        self._cached_add_info = info
        return info
