"""DNSArchive: a fixed-size population kept by Dominated Novelty Search."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import validate_batch, validate_single
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_stats import ArchiveStats, summary_stats
from ribsax.archives._knn import pairwise_sq_dist, smallest_k
from ribsax.archives._nearest import wide_float_dtype
from ribsax.archives._store_readers import (
    StoreReadersMixin,
    check_reserved_fields,
    elite_store,
)

__all__ = ["DNSArchive"]


@partial(jax.jit, static_argnames=("k",))
def dns_scores(measures, objective, n, *, k: int):
    """Dominated-novelty score of each of the first ``n`` rows against each other.

    The score of row ``i`` is the mean distance to its ``min(k_neighbors, n - 1)``
    nearest *fitter* rows (rows ``j != i`` with ``objective[j] >= objective[i]``),
    counting only those that exist; ``inf`` when there is none. Rows at or beyond
    ``n`` are padding and never neighbours.

    Args:
        measures: ``(m, d)``; rows ``n ..`` are ignored.
        objective: ``(m,)``.
        n: int32 scalar, number of real rows.
        k: Static ``min(k_neighbors, m - 1)`` (at least 1).

    Returns:
        ``(m,)`` scores in the wide float dtype (garbage beyond ``n``).
    """
    dtype = wide_float_dtype()
    m = measures.shape[0]
    row = jnp.arange(m, dtype=jnp.int32)
    real = row < n
    points = jnp.where(real[:, None], measures.astype(dtype), jnp.inf)
    dist = jnp.sqrt(pairwise_sq_dist(points, points))
    fitter = (
        (objective[None, :] >= objective[:, None]) & real[None, :] & (row[None, :] != row[:, None])
    )
    dist = jnp.where(fitter, dist, jnp.inf)
    nearest, _ = smallest_k(dist, k)
    k_eff = jnp.minimum(k, n - 1)
    use = (jnp.arange(k)[None, :] < k_eff) & jnp.isfinite(nearest)
    counts = jnp.sum(use, axis=1)
    sums = jnp.sum(jnp.where(use, nearest, 0.0), axis=1)
    return jnp.where(counts > 0, sums / jnp.maximum(counts, 1), jnp.inf)


class DNSArchive(StoreReadersMixin, ArchiveBase):
    """A fixed-size population maintained by Dominated Novelty Search.

    Behaves like :class:`ribs.archives.DNSArchive` (Bahlous-Boldi, Faldor et al.
    2025): on every :meth:`add`, the stored population and the batch are pooled, each
    member gets its DNS score (the mean distance in measure space to its ``k``
    nearest *fitter* members, those whose objective is at least its own, ties
    included; ``inf`` when it has none), and the ``capacity`` members with the highest
    scores survive. If the pool fits, everyone survives in pool order (stored
    entries, then the batch); otherwise the survivors are stored in ascending order of
    score at rows ``0 .. capacity - 1``, so rows are not stable across calls. ``add``
    returns ``status`` (2 for batch members that survive, else 0) and their ``dns``
    score. Stats are recomputed from the survivors (``coverage = len / capacity``).

    Implementation: the scores of the pool come from one jitted kernel (pairwise
    distances and rounds of minimum extraction, the pool padded to a power of two so
    that growing pools compile a handful of times); the survivor selection runs on
    the host with NumPy exactly as pyribs does it, and the survivors are written to
    the device :class:`ArrayStore`.

    Deliberate differences from pyribs 0.12:

    * :attr:`best_elite` is the stored entry with the highest objective (the first
      on ties), as its documentation says; pyribs 0.12 never sets it (always None).
    * Ties of equal scores at the survival boundary and in the ascending order may
      resolve differently from pyribs (whose ``argpartition``/``argsort`` leave them
      unspecified); ``index_of`` takes the lower row among equidistant entries.
    * ``kdtree_kwargs`` is accepted and ignored.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        measure_dim: Dimensionality of the measure space.
        capacity: Size of the population (at least 1).
        k_neighbors: Number of fitter neighbours in the score.
        qd_score_offset: Subtracted from each objective in the QD score.
        seed: Seed for :meth:`sample_elites`.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32).
        objective_dtype: dtype of objectives.
        measures_dtype: dtype of measures.
        dtype: Sets the three dtypes at once.
        extra_fields: ``{name: (shape, dtype)}`` of additional per-entry data.
        kdtree_kwargs: Accepted for compatibility; unused.

    Raises:
        ValueError: Reserved extra field names, ``capacity < 1`` or conflicting dtype
            arguments.
    """

    _reserved_fields = {"solution", "objective", "measures", "index"}

    def __init__(
        self,
        *,
        solution_dim,
        measure_dim,
        capacity,
        k_neighbors,
        qd_score_offset=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
        kdtree_kwargs=None,
    ):
        self._rng = np.random.default_rng(seed)
        ArchiveBase.__init__(
            self, solution_dim=solution_dim, objective_dim=(), measure_dim=measure_dim
        )
        check_reserved_fields(self._reserved_fields, extra_fields)
        if capacity < 1:
            raise ValueError("capacity must be at least 1.")
        self._store = elite_store(
            self, extra_fields, capacity, dtype, solution_dtype, objective_dtype, measures_dtype
        )
        objective_dtype = self._store.dtypes["objective"]
        self._k_neighbors = int(k_neighbors)
        self._kdtree_kwargs = {} if kdtree_kwargs is None else dict(kdtree_kwargs)
        self._qd_score_offset = np.asarray(qd_score_offset, dtype=objective_dtype)
        self._reset_stats()

    # ------------------------------------------------------------ properties
    @property
    def stats(self) -> ArchiveStats:
        return self._stats

    @property
    def best_elite(self):
        """The stored entry with the highest objective (dict with ``index``), or
        None when empty."""
        if self.empty:
            return None
        objective = self._store.data("objective")
        row = int(self._store.occupied_list[int(np.argmax(objective))])
        _, data = self._store.retrieve([row])
        return {name: arr[0] for name, arr in data.items()}

    @property
    def k_neighbors(self) -> int:
        """Number of fitter neighbours averaged in the DNS score."""
        return self._k_neighbors

    @property
    def capacity(self) -> int:
        """Size of the population."""
        return self._store.capacity

    @property
    def cells(self) -> int:
        """Equal to :attr:`capacity` (used for coverage)."""
        return self.capacity

    @property
    def qd_score_offset(self):
        """Subtracted from each objective in the QD score (0-d array)."""
        return self._qd_score_offset

    def _reset_stats(self):
        self._stats = summary_stats(
            0, self.cells, 0.0, self._qd_score_offset, None, self.dtypes["objective"]
        )

    # ------------------------------------------------------------ scores
    def compute_dns(self, measures, objectives):
        """DNS score of each member of a population against the others.

        Args:
            measures: (n, :attr:`measure_dim`) array.
            objectives: (n,) array.

        Returns:
            (n,) scores (``inf`` for members without a fitter one).
        """
        measures = np.asarray(measures, dtype=self.dtypes["measures"])
        objectives = np.asarray(objectives, dtype=self.dtypes["objective"])
        n = measures.shape[0]
        if n == 0:
            return np.zeros(0, dtype=self.dtypes["measures"])
        size = 1 << max(1, (n - 1).bit_length())  # Padded pool: few compilations.
        padded_measures = np.zeros((size, measures.shape[1]), measures.dtype)
        padded_measures[:n] = measures
        padded_objective = np.zeros(size, objectives.dtype)
        padded_objective[:n] = objectives
        scores = dns_scores(
            jnp.asarray(padded_measures),
            jnp.asarray(padded_objective),
            jnp.asarray(n, jnp.int32),
            k=max(1, min(self._k_neighbors, size - 1)),
        )
        return np.asarray(scores)[:n]

    def index_of(self, measures):
        """Row of the stored entry nearest to each measure vector.

        Raises:
            RuntimeError: The archive is empty.
            ValueError: Wrong shape or non-finite values.
        """
        measures = self._checked_measures(measures)
        if self.empty:
            raise RuntimeError(
                "There were no solutions in the archive. "
                "`DNSArchive.index_of` computes the nearest "
                "neighbor to the input measures, so there must be at least one "
                "solution present in the archive."
            )
        stored = self._store.data("measures").astype(np.float64)
        rows = self._store.occupied_list
        sq = np.asarray(
            pairwise_sq_dist(jnp.asarray(measures.astype(np.float64)), jnp.asarray(stored))
        )
        return rows[np.argmin(sq, axis=1)].astype(np.int32)

    # ------------------------------------------------------------ insertion
    def add(self, solution, objective, measures, **fields):
        """Pools the batch with the population and keeps the ``capacity`` members
        with the highest DNS scores.

        Args:
            solution: (batch_size, :attr:`solution_dim`) solutions.
            objective: (batch_size,) objectives, or None (zeros).
            measures: (batch_size, :attr:`measure_dim`) measures.
            fields: Extra fields, each with batch_size first.

        Returns:
            ``{"status": int32[batch] (2 survived, 0 not), "dns": [batch]}``.

        Raises:
            ValueError: Bad shapes, non-finite values, or missing fields.
        """
        if objective is None:
            objective = np.zeros(len(solution), dtype=self.dtypes["objective"])
        data = validate_batch(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        cur_size = len(self)
        if cur_size > 0:
            current = self._store.data(return_type="dict")
            pool = {}
            for name in self._store.field_list:
                if name not in data:
                    raise ValueError(
                        f"Field '{name}' is in the archive but was not passed "
                        "in the batch data. All fields must be provided."
                    )
                pool[name] = np.concatenate((current[name], data[name]), axis=0)
        else:
            pool = data
        scores = self.compute_dns(pool["measures"], pool["objective"])
        capacity = self.capacity
        total = len(scores)
        if total <= capacity:
            survivors = np.arange(total)
        else:
            survivors = np.argpartition(scores, -capacity)[-capacity:]
            survivors = survivors[np.argsort(scores[survivors], kind="stable")]

        batch_size = len(data["measures"])
        in_batch = np.arange(cur_size, cur_size + batch_size)
        status = np.where(np.isin(in_batch, survivors), 2, 0).astype(np.int32)
        info = {"status": status, "dns": scores[in_batch]}

        kept = {name: pool[name][survivors] for name in self._store.field_list}
        self._store.clear()
        if len(survivors):
            self._store.add(np.arange(len(survivors)), kept)
        if len(self):
            # pyribs' DNS arithmetic: coverage and ratios as Python / NumPy promote
            # them (not cast to the objective dtype as the cell archives do).
            objective_sum = np.sum(kept["objective"])
            qd_score = objective_sum - len(self) * self._qd_score_offset
            self._stats = ArchiveStats(
                num_elites=len(self),
                coverage=len(self) / self.cells,
                qd_score=qd_score,
                norm_qd_score=qd_score / self.cells,
                obj_max=np.max(kept["objective"]),
                obj_mean=np.mean(kept["objective"]),
            )
        else:
            self._reset_stats()
        return info

    def add_single(self, solution, objective, measures, **fields):
        """Adds one solution (a batch of one; returns arrays of length 1, as pyribs).

        Raises:
            ValueError: Bad shapes, non-finite values, or missing fields.
        """
        if objective is None:
            objective = 0.0
        data = validate_single(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        return self.add(**{name: [val] for name, val in data.items()})

    def clear(self) -> None:
        """Removes every entry and resets the stats."""
        self._store.clear()
        self._reset_stats()
