"""ProximityArchive: an unstructured archive for novelty search (NS and NSLC)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import validate_batch, validate_single
from ribsax.archives import _bucket_index as bucket_index
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_stats import ArchiveStats, summary_stats
from ribsax.archives._array_store import keys_mismatch_error
from ribsax.archives._kernels import StoreState, store_write
from ribsax.archives._knn import knn
from ribsax.archives._nearest import wide_float_dtype
from ribsax.archives._store_readers import (
    StoreReadersMixin,
    check_reserved_fields,
    elite_store,
)

__all__ = ["ProximityArchive"]

#: The neighbour searches :class:`ProximityArchive` offers.
NEAREST_NEIGHBORS = ("scipy_kd_tree", "jax")
#: KD-tree options used unless ``kdtree_kwargs`` sets them: the tree is rebuilt after
#: every change, and these build it about twice as fast as scipy's defaults.
_FAST_BUILD = {"balanced_tree": False, "compact_nodes": False}
#: Factor by which the store's rows grow when they run out. Each new number of rows
#: compiles the kernels that take the store again, so the rows grow faster than the
#: reported capacity, which doubles as in pyribs.
_ROW_GROWTH = 4


# ---------------------------------------------------------------------------
# Pure kernels.
# ---------------------------------------------------------------------------
@partial(jax.jit, static_argnames=("k", "with_objective"))
def proximity_query(
    store: StoreState, index, measures, objective, threshold, *, k: int, with_objective: bool
):
    """Novelty of a batch against the archive and where each item would go, with the
    neighbours searched on the device.

    The ``k`` nearest stored measures (``n`` entries in rows ``0 .. n-1``) come from
    the bucket grid ``index`` when there is one, else from the exact brute force
    (same results; among equal distances the lower row first); then as
    :func:`proximity_decide`.

    Args:
        store: The archive's store.
        index: None (brute-force search) or a
            :class:`~ribsax.archives._bucket_index.BucketIndex` of the stored
            measures (same results, faster in low dimensions).
        measures: ``(batch, measure_dim)``.
        objective: ``(batch,)`` objectives (ignored unless ``with_objective``).
        threshold: 0-d novelty threshold (wide float).
        k: Static number of neighbours, at most the capacity.
        with_objective: Static; whether to compute local competition.

    Returns:
        The dict of :func:`proximity_decide`.
    """
    n = store.n_occupied
    if index is None:
        dist, idx = knn(measures, store.fields["measures"], n, k)
    else:
        dist, idx = bucket_index.query(index, measures, store.fields["measures"], n, k)
    return _decide(store, dist, idx, idx[:, 0], objective, threshold, with_objective)


@partial(jax.jit, static_argnames=("with_objective",))
def proximity_decide(
    store: StoreState, dist, idx, nearest, objective, threshold, *, with_objective: bool
):
    """Novelty of a batch against the archive and where each item would go, from
    neighbours found elsewhere (the host KD-tree).

    Novelty is the mean distance to the ``min(n, k)`` nearest stored measures, or
    ``threshold`` when the archive is empty; it is measured against the archive only,
    never within the batch. Items with ``novelty >= threshold`` are *novel* and would
    be appended, in batch order, at rows ``n, n + 1, ...``.

    With ``with_objective``, local competition is computed as well: the number of the
    neighbours whose objective is strictly lower than the item's, and whether a
    non-novel item beats its nearest neighbour; among the items that beat the same
    neighbour, the one with the highest objective (the first on ties) is the one
    written over it.

    Args:
        store: The archive's store.
        dist: ``(batch, k)`` distances to the nearest stored measures, nearest first
            (wide float); slots beyond ``min(n, k)`` hold ``inf``.
        idx: ``(batch, k)`` int32 rows of those neighbours, ``-1`` in unused slots.
        nearest: ``(batch,)`` int32 row of the nearest entry (the one a non-novel
            item competes with; pyribs asks its KD-tree for it separately, which
            may pick another of several equally near entries than ``idx[:, 0]``).
        objective: ``(batch,)`` objectives (ignored unless ``with_objective``).
        threshold: 0-d novelty threshold (wide float).
        with_objective: Static; whether to compute local competition.

    Returns:
        Dict of ``novelty`` (wide float), ``novel`` (bool), ``nearest`` (int32 row of
        the nearest entry, -1 when empty), ``target`` (int32 row each item would be
        written to) and ``write`` (bool, whether it is written); with
        ``with_objective`` also ``local_competition`` (int32), ``neighbor_objective``
        (objective of the nearest entry) and ``improve`` (bool, beats it).
    """
    return _decide(store, dist, idx, nearest, objective, threshold, with_objective)


def _decide(store: StoreState, dist, idx, nearest, objective, threshold, with_objective):
    """The rules of :func:`proximity_decide` (traced inside both kernels)."""
    n = store.n_occupied
    k = dist.shape[1]
    valid = idx >= 0
    k_eff = jnp.maximum(jnp.minimum(n, k), 1).astype(dist.dtype)
    novelty = jnp.sum(jnp.where(valid, dist, 0.0), axis=1) / k_eff
    novelty = jnp.where(n > 0, novelty, threshold.astype(dist.dtype))
    novel = novelty >= threshold
    appended = n + jnp.cumsum(novel, dtype=jnp.int32) - 1
    out = {
        "novelty": novelty,
        "novel": novel,
        "nearest": nearest,
        "target": jnp.where(novel, appended, 0),
        "write": novel,
    }
    if not with_objective:
        return out

    stored_objective = store.fields["objective"]
    objective = objective.astype(stored_objective.dtype)
    neighbor_objective = stored_objective[jnp.maximum(idx, 0)]
    local_competition = jnp.sum(
        valid & (neighbor_objective < objective[:, None]), axis=1, dtype=jnp.int32
    )
    current = stored_objective[jnp.maximum(nearest, 0)]
    improve = ~novel & (nearest >= 0) & (objective > current)

    # One winner per improved entry: highest objective, first in the batch on ties.
    capacity = store.stamp.shape[0]
    cell = jnp.where(improve, nearest, capacity)
    best = jnp.full(capacity, -jnp.inf, objective.dtype).at[cell].max(objective, mode="drop")
    is_best = improve & (objective == best[jnp.maximum(nearest, 0)])
    pos = jnp.arange(objective.shape[0], dtype=jnp.int32)
    first = (
        jnp.full(capacity, objective.shape[0], jnp.int32)
        .at[jnp.where(is_best, nearest, capacity)]
        .min(pos, mode="drop")
    )
    winner = is_best & (first[jnp.maximum(nearest, 0)] == pos)

    out.update(
        target=jnp.where(novel, appended, nearest),
        write=novel | winner,
        local_competition=local_competition,
        neighbor_objective=current,
        improve=improve,
    )
    return out


@partial(jax.jit, donate_argnums=(0,))
def _write_store(store: StoreState, indices, write, data: dict) -> StoreState:
    """Writes the rows of ``data`` selected by ``write`` at ``indices`` (unique)."""
    return store_write(store, indices, write, data)


@partial(jax.jit, donate_argnums=(0, 1))
def _write_store_indexed(store: StoreState, index, indices, write, moved, data: dict):
    """:func:`_write_store`, and the written rows put into the bucket index
    (``moved``: rows that were indexed already). Returns ``(store, index,
    overflow)``; after an overflow the index must be rebuilt."""
    store = store_write(store, indices, write, data)
    index, overflow = bucket_index.insert(index, data["measures"], indices, write, moved)
    return store, index, overflow


class ProximityArchive(StoreReadersMixin, ArchiveBase):
    """An archive that keeps solutions whose measures are novel enough.

    Behaves like :class:`ribs.archives.ProximityArchive` (novelty search, Lehman and
    Stanley 2011), with the same arguments, add statuses, values and errors:

    * The **novelty** of a measure vector is the mean Euclidean distance to its
      ``min(len(archive), k_neighbors)`` nearest neighbours in the archive (the
      :attr:`novelty_threshold` itself when the archive is empty). A batch is
      measured against the archive as it was before the call, never against itself.
    * Without local competition, every solution with ``novelty >= novelty_threshold``
      is appended (status 2); the others are not added (status 0). ``add`` returns
      ``status`` and ``novelty``.
    * With ``local_competition=True`` (NSLC), novel solutions are appended (status 2,
      value = objective); a solution that is not novel replaces its nearest neighbour
      if its objective is strictly higher (status 1, value = improvement; among
      several solutions beating the same neighbour the highest objective wins, the
      first on ties), otherwise status 0 and value = objective - neighbour's
      objective. ``add`` also returns ``local_competition``: how many of the
      solution's nearest neighbours have a strictly lower objective.
    * Entries occupy rows ``0 .. len - 1``; the capacity starts at
      ``initial_capacity`` and doubles as often as needed to fit new entries (the
      store's own rows grow fourfold at a time, so that the kernels that take the
      store compile for fewer sizes).
    * With ``threshold_decay_rate``, every ``threshold_decay_itrs`` consecutive calls
      to ``add`` that append nothing multiply the threshold by the rate (never below
      ``threshold_decay_min``); any call that appends resets the count.
    * :meth:`index_of` and :meth:`retrieve` return the nearest stored entry (so
      ``retrieve`` always reports occupied), and raise ``RuntimeError`` on an empty
      archive. :attr:`cells` equals ``len(archive)``, so ``coverage`` is 1 once
      anything is stored and ``norm_qd_score`` equals the mean objective minus the
      offset.

    Implementation: the entries live in an :class:`ArrayStore` on the JAX device; a
    jitted kernel decides where each solution goes and a second writes the store in
    place. The ``k_neighbors`` nearest entries are found by ``nearest_neighbors``:

    * ``"scipy_kd_tree"`` (default): as pyribs, a :class:`scipy.spatial.KDTree`
      built with ``kdtree_kwargs`` over the stored measures (on the host; rebuilt at
      the first query after the archive changed) answers the queries, so the
      neighbours are pyribs' own. One difference: unless ``kdtree_kwargs`` sets
      them, the tree is built with ``balanced_tree=False`` and
      ``compact_nodes=False``, which builds it about twice as fast; among
      neighbours at exactly equal distance such a tree may return another one than
      pyribs' (with ``kdtree_kwargs={"balanced_tree": True, "compact_nodes":
      True}``, scipy's defaults, the tree and its ties are pyribs').
    * ``"jax"``: the search runs on the JAX device too. For measure spaces of up to
      three dimensions the stored measures are kept in a bucket grid
      (``ribsax.archives._bucket_index``) that the write kernel updates, so a query
      only looks at the entries around it; queries the grid cannot answer exactly
      (far from every entry) and higher-dimensional measures use an exact
      brute-force search (``ribsax.archives._knn``). Both give the same neighbours
      (among equal distances the lower row first). The grid is rebuilt from the
      stored measures when the capacity grows or a bucket fills up. This keeps the
      data on an accelerator; on a CPU the KD-tree is the faster search.

    Kernels compile once per batch size and number of store rows.

    Deliberate choices relative to pyribs 0.12:

    * pyribs 0.10's bug that wrote non-novel, non-improving solutions into the store
      when other solutions of the batch were novel (fixed in pyribs 0.11) is not
      reproduced: only the solutions with status > 0 are written.
    * With ``nearest_neighbors="jax"``, among neighbours at exactly equal distance
      the lower row is taken (pyribs' KD-tree may return either); this only matters
      for :meth:`index_of` and for which neighbour a non-novel NSLC solution competes
      with. ``kdtree_kwargs`` is then checked but not used.
    * Novelty is returned in the widest float dtype (float64 under JAX x64, as
      pyribs' KD-tree distances; float32 without x64), except for an empty archive,
      where it is the threshold in the measures dtype, as in pyribs.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        measure_dim: Dimensionality of the measure space.
        k_neighbors: Number of nearest neighbours in the novelty.
        novelty_threshold: Novelty a solution needs to be appended.
        local_competition: Whether to use NSLC's local competition.
        initial_capacity: Initial number of rows of the store (at least 1).
        qd_score_offset: Subtracted from each objective in the QD score.
        threshold_decay_rate: None (no decay) or the multiplier in ``(0, 1]``.
        threshold_decay_itrs: Number of calls without any novel solution before the
            threshold decays.
        threshold_decay_min: Lowest threshold the decay reaches.
        seed: Seed for :meth:`sample_elites`.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32).
        objective_dtype: dtype of objectives.
        measures_dtype: dtype of measures.
        dtype: Sets the three dtypes at once.
        extra_fields: ``{name: (shape, dtype)}`` of additional per-entry data.
        kdtree_kwargs: Keyword arguments of :class:`scipy.spatial.KDTree` (over
            ``balanced_tree=False, compact_nodes=False``; see above).
        ckdtree_kwargs: Deprecated in pyribs 0.9.0; raises if given.
        nearest_neighbors: ``"scipy_kd_tree"`` or ``"jax"``, the neighbour search
            (see above; not a pyribs argument).

    Raises:
        ValueError: Reserved extra field names, ``initial_capacity < 1``, invalid
            decay arguments, conflicting dtype arguments, ``ckdtree_kwargs``, or an
            unknown ``nearest_neighbors``.
        TypeError: ``kdtree_kwargs`` that :class:`scipy.spatial.KDTree` does not
            take (as in pyribs).
    """

    _reserved_fields = {"solution", "objective", "measures", "index"}

    def __init__(
        self,
        *,
        solution_dim,
        measure_dim,
        k_neighbors,
        novelty_threshold,
        local_competition=False,
        initial_capacity=128,
        qd_score_offset=0.0,
        threshold_decay_rate=None,
        threshold_decay_itrs=1,
        threshold_decay_min=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
        kdtree_kwargs=None,
        ckdtree_kwargs=None,
        nearest_neighbors="scipy_kd_tree",
    ):
        if ckdtree_kwargs is not None:
            raise ValueError(
                "`ckdtree_kwargs` is deprecated in pyribs 0.9.0. "
                "Please use `kdtree_kwargs` instead."
            )
        if nearest_neighbors not in NEAREST_NEIGHBORS:
            raise ValueError(
                "nearest_neighbors must be one of "
                f"{', '.join(map(repr, NEAREST_NEIGHBORS))}, got "
                f"{nearest_neighbors!r}"
            )
        self._rng = np.random.default_rng(seed)
        ArchiveBase.__init__(
            self, solution_dim=solution_dim, objective_dim=(), measure_dim=measure_dim
        )
        check_reserved_fields(self._reserved_fields, extra_fields)
        if initial_capacity < 1:
            raise ValueError("initial_capacity must be at least 1.")
        self._capacity = int(initial_capacity)
        self._store = elite_store(
            self,
            extra_fields,
            initial_capacity,
            dtype,
            solution_dtype,
            objective_dtype,
            measures_dtype,
        )
        objective_dtype = self._store.dtypes["objective"]
        measures_dtype = self._store.dtypes["measures"]
        self._objective_dtype = np.dtype(objective_dtype)
        self._measures_dtype = np.dtype(measures_dtype)
        self._k_neighbors = int(k_neighbors)
        self._novelty_threshold = np.asarray(novelty_threshold, dtype=measures_dtype)
        self._local_competition = local_competition
        self._kdtree_kwargs = {**_FAST_BUILD, **(kdtree_kwargs or {})}
        self._use_kd_tree = nearest_neighbors == "scipy_kd_tree"
        # Built as pyribs does, which also checks kdtree_kwargs; None once stale.
        from scipy.spatial import KDTree

        self._tree = KDTree(np.zeros((0, measure_dim)), **self._kdtree_kwargs)
        self._qd_score_offset = np.asarray(qd_score_offset, dtype=objective_dtype)
        self._reset_stats()

        if threshold_decay_rate is None:
            self._decay = None
        else:
            if threshold_decay_rate <= 0.0 or threshold_decay_rate > 1.0:
                raise ValueError(
                    "If passed in, threshold_decay_rate must be a float in the range [0.0, 1.0]."
                )
            if threshold_decay_itrs <= 0:
                raise ValueError("threshold_decay_itrs must be either None or a positive integer.")
            if threshold_decay_min < 0.0:
                raise ValueError("threshold_decay_min must be a non-negative float value.")
            self._decay = (
                float(threshold_decay_rate),
                int(threshold_decay_itrs),
                float(threshold_decay_min),
            )
        self._itrs_without_novel = 0
        self._index = None  # Bucket grid of the stored measures (None: none).
        self._unindexable_capacity = None  # Capacity at which no grid fitted.

    # ------------------------------------------------------------ properties
    @property
    def stats(self) -> ArchiveStats:
        return self._stats

    @property
    def best_elite(self):
        """The entry with the highest objective ever inserted since the last
        :meth:`clear` (a dict with every field and ``index``), or None."""
        return self._best_elite

    @property
    def k_neighbors(self) -> int:
        """Number of nearest neighbours used in the novelty."""
        return self._k_neighbors

    @property
    def novelty_threshold(self):
        """Novelty needed to be appended (0-d array, measures dtype)."""
        return self._novelty_threshold

    @property
    def nearest_neighbors(self) -> str:
        """The neighbour search: ``"scipy_kd_tree"`` or ``"jax"``."""
        return "scipy_kd_tree" if self._use_kd_tree else "jax"

    @property
    def local_competition(self) -> bool:
        """Whether local competition (NSLC) is on."""
        return self._local_competition

    @property
    def capacity(self) -> int:
        """pyribs' capacity: ``initial_capacity``, doubled as often as needed to fit
        the entries. (The store itself grows fourfold when it runs out of rows, so
        it may hold more rows than this.)"""
        return self._capacity

    @property
    def cells(self) -> int:
        """Equal to ``len(archive)``: this archive has no tessellation."""
        return len(self)

    @property
    def qd_score_offset(self):
        """Subtracted from each objective in the QD score (0-d array)."""
        return self._qd_score_offset

    # ------------------------------------------------------------ stats
    def _reset_stats(self):
        self._best_elite = None
        self._objective_sum = np.asarray(0.0, dtype=self._objective_dtype)
        self._stats = summary_stats(
            0, self.cells, 0.0, self._qd_score_offset, None, self._objective_dtype
        )

    def _update_stats(self, objective_sum, best):
        """Stats after an insertion; ``best`` is the candidate best elite (a dict)."""
        obj_max = self._stats.obj_max
        if obj_max is None or best["objective"] > obj_max:
            self._best_elite = best
            obj_max = best["objective"]
        self._objective_sum = objective_sum
        self._stats = summary_stats(
            len(self),
            self.cells,
            objective_sum,
            self._qd_score_offset,
            obj_max,
            self._objective_dtype,
        )

    # ------------------------------------------------------------ novelty
    def _query(self, measures, objective=None):
        """Runs :func:`proximity_query` (or the KD-tree and
        :func:`proximity_decide`) and returns the outputs as NumPy arrays."""
        state = self._store.state
        k = min(self._k_neighbors, self._store.capacity)
        with_objective = objective is not None
        if not with_objective:
            objective = np.zeros(len(measures), dtype=self._objective_dtype)
        threshold = np.asarray(self._novelty_threshold, dtype=wide_float_dtype())
        if self._use_kd_tree:
            dist, idx = self._tree_neighbors(measures, k)
            # pyribs finds the neighbour to compete with by a query of its own.
            nearest = self._tree_neighbors(measures, 1)[1][:, 0] if with_objective else idx[:, 0]
            out = proximity_decide(
                state,
                dist,
                idx,
                nearest,
                jnp.asarray(objective),
                jnp.asarray(threshold),
                with_objective=with_objective,
            )
        else:
            out = proximity_query(
                state,
                self._index,
                jnp.asarray(measures),
                jnp.asarray(objective),
                jnp.asarray(threshold),
                k=k,
                with_objective=with_objective,
            )
        return jax.device_get(out)

    def _tree_neighbors(self, measures, k):
        """The ``k`` nearest entries from the KD-tree, padded as the device search
        pads them: ``(batch, k)`` wide-float distances (``inf`` beyond
        ``len(self)``) and int32 rows (``-1`` there)."""
        n = len(self)
        if self._tree is None:  # Stale: rebuilt from a copy of the stored measures.
            stored = np.array(np.asarray(self._store.state.fields["measures"])[:n])
            from scipy.spatial import KDTree

            self._tree = KDTree(stored, **self._kdtree_kwargs)
        batch = len(measures)
        dist = np.full((batch, k), np.inf, dtype=wide_float_dtype())
        idx = np.full((batch, k), -1, dtype=np.int32)
        k_eff = min(n, k)
        if k_eff > 0:
            found_dist, found_idx = self._tree.query(np.asarray(measures), k=k_eff)
            dist[:, :k_eff] = np.reshape(found_dist, (batch, k_eff))
            idx[:, :k_eff] = np.reshape(found_idx, (batch, k_eff))
        return dist, idx

    def _rebuild_index(self):
        """Rebuilds the bucket grid from the stored measures (or drops it); used by
        the ``"jax"`` search only.

        The cell width starts from the bounding box of the entries and shrinks by
        a factor sqrt(2) while some bucket would overflow (a few far entries make
        the box much larger than the bulk of the entries; at most 40 times); if no
        width fits, queries use the brute force until the capacity grows.
        """
        self._index = None
        n = len(self)
        if self.measure_dim > bucket_index.MAX_DIM or n == 0:
            return
        points = self._store.state.fields["measures"]
        n = jnp.int32(n)
        g, m = bucket_index.table_shape(self._store.capacity, self._k_neighbors, self.measure_dim)
        origin, width = jax.device_get(
            bucket_index.layout(points, n, occupancy=bucket_index.occupancy(self._k_neighbors))
        )
        fitting = None
        for _ in range(40):
            if int(bucket_index.max_count(points, n, origin, width, g=g)) <= m:
                fitting = width
                break
            width = width / np.sqrt(2.0)
        if fitting is None:
            self._unindexable_capacity = self._store.capacity
        else:
            self._index = bucket_index.build(points, n, origin, fitting, g=g, m=m)

    def index_of(self, measures):
        """Row of the stored entry nearest to each measure vector.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.

        Returns:
            int32[batch_size].

        Raises:
            RuntimeError: The archive is empty.
            ValueError: Wrong shape or non-finite values.
        """
        measures = self._checked_measures(measures)
        if self.empty:
            raise RuntimeError(
                "There were no solutions in the archive. "
                "`ProximityArchive.index_of` computes the nearest "
                "neighbor to the input measures, so there must be at least one "
                "solution present in the archive."
            )
        if self._use_kd_tree:  # One neighbour, as pyribs asks its tree for.
            return self._tree_neighbors(measures, 1)[1][:, 0]
        return np.asarray(self._query(measures)["nearest"], dtype=np.int32)

    def compute_novelty(self, measures, local_competition=None):
        """Novelty (and optionally local competition) of measures against the archive.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.
            local_competition: None, or (batch_size,) objectives to compare with the
                neighbours' objectives.

        Returns:
            The (batch_size,) novelty (the :attr:`novelty_threshold` for an empty
            archive), and, if ``local_competition`` is given, the (batch_size,) int32
            number of neighbours with a strictly lower objective (0 for an empty
            archive), as a tuple.
        """
        measures = np.asarray(measures)
        objective = None if local_competition is None else np.asarray(local_competition)
        if self.empty:
            novelty = np.full(len(measures), self._novelty_threshold, dtype=self._measures_dtype)
            lc = np.zeros(len(measures), dtype=np.int32)
        else:
            out = self._query(measures, objective)
            novelty = np.asarray(out["novelty"])
            lc = out.get("local_competition")
        return novelty if objective is None else (novelty, np.asarray(lc, np.int32))

    # ------------------------------------------------------------ insertion
    def _grow(self, new_size) -> bool:
        """Doubles the capacity as many times as needed to hold ``new_size``
        entries, and grows the store's rows fourfold as often as needed; returns
        whether the store grew."""
        if new_size > self._capacity:
            self._capacity *= 2 ** int(np.ceil(np.log2(new_size / self._capacity)))
        rows = self._store.capacity
        if new_size <= rows:
            return False
        while rows < new_size:
            rows *= _ROW_GROWTH
        self._store.resize(rows)
        return True

    def _decay_threshold(self, n_novel):
        """Threshold decay after an ``add`` that appended ``n_novel`` solutions."""
        if self._decay is None:
            return
        if n_novel > 0:
            self._itrs_without_novel = 0
            return
        self._itrs_without_novel += 1
        rate, itrs, minimum = self._decay
        if self._itrs_without_novel >= itrs:
            self._novelty_threshold = np.asarray(
                max(minimum, self._novelty_threshold * rate), dtype=self._measures_dtype
            )
            self._itrs_without_novel = 0

    def _empty_batch_info(self):
        info = {
            "status": np.zeros(0, np.int32),
            "novelty": np.zeros(0, self._measures_dtype if self.empty else wide_float_dtype()),
        }
        if self._local_competition:
            info["value"] = np.zeros(0, self._objective_dtype)
            info["local_competition"] = np.zeros(0, np.int32)
        return info

    def add(self, solution, objective, measures, **fields):
        """Inserts a batch of solutions (see the class docstring for the rules).

        Args:
            solution: (batch_size, :attr:`solution_dim`) solutions.
            objective: (batch_size,) objectives, or None (treated as zeros) when
                local competition is off.
            measures: (batch_size, :attr:`measure_dim`) measures.
            fields: Extra fields, each with batch_size first.

        Returns:
            Without local competition ``{"status", "novelty"}``; with it
            ``{"status", "value", "novelty", "local_competition"}``.

        Raises:
            ValueError: ``objective`` is None with local competition, bad shapes,
                non-finite values, or missing/unknown fields (the latter only when
                something is inserted, as in pyribs).
        """
        if objective is None:
            if self._local_competition:
                raise ValueError(
                    "If local competition is turned on, objective must be passed in to add()."
                )
            objective = np.zeros(len(solution), dtype=self._objective_dtype)
        data = validate_batch(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        return self._add_validated(data)

    def _add_validated(self, data):
        batch = len(data["objective"])
        if batch == 0:
            self._decay_threshold(0)
            return self._empty_batch_info()
        lc = self._local_competition
        empty = self.empty
        out = self._query(data["measures"], data["objective"] if lc else None)
        novel = np.asarray(out["novel"])
        n_novel = int(novel.sum())
        if empty:
            novelty = np.full(batch, self._novelty_threshold, self._measures_dtype)
        else:
            novelty = np.asarray(out["novelty"])

        status = np.where(novel, 2, 0).astype(np.int32)
        info = {"status": status, "novelty": novelty}
        objective = data["objective"]
        if lc:
            improve = np.asarray(out["improve"])
            status[improve] = 1
            current = np.where(
                novel, np.zeros((), self._objective_dtype), np.asarray(out["neighbor_objective"])
            )
            info = {
                "status": status,
                "value": (objective - current).astype(self._objective_dtype),
                "novelty": novelty,
                "local_competition": (
                    np.zeros(batch, np.int32)
                    if empty
                    else np.asarray(out["local_competition"], np.int32)
                ),
            }

        write = np.asarray(out["write"])
        if write.any():
            self._insert(data, np.asarray(out["target"], np.int32), write, novel, info.get("value"))
        self._decay_threshold(n_novel)
        return info

    def _insert(self, data, target, write, novel, value):
        """Writes the selected rows and updates the stats as pyribs does."""
        store = self._store
        if data.keys() != store.field_desc.keys():
            raise keys_mismatch_error(data.keys(), store.field_desc.keys())
        n_before = len(self)
        n_novel = int(novel.sum())
        grew = self._grow(n_before + n_novel)
        device = {
            name: jnp.asarray(np.asarray(data[name], dtype=dt))
            for name, (_, dt) in store.field_desc.items()
            if name in store.device_field_names
        }
        rebuild = not self._use_kd_tree and (
            grew or (self._index is None and self._unindexable_capacity != self._store.capacity)
        )
        if rebuild or self._index is None:
            new_state = _write_store(store.state, jnp.asarray(target), jnp.asarray(write), device)
        else:
            new_state, self._index, overflow = _write_store_indexed(
                store.state,
                self._index,
                jnp.asarray(target),
                jnp.asarray(write),
                jnp.asarray(write & ~novel),
                device,
            )
        for name in store.host_fields:
            store.host_fields[name][target[write]] = np.asarray(data[name])[write]
        store._set_state(new_state, n_before + n_novel)
        self._tree = None
        if rebuild or (self._index is not None and bool(overflow)):
            self._rebuild_index()

        # Objective sum and best candidate in pyribs' order: the replacing solutions
        # sorted by the row they replace, then the appended ones in batch order.
        objective = data["objective"]
        replacing = np.flatnonzero(write & ~novel)
        replacing = replacing[np.argsort(target[replacing], kind="stable")]
        appended = np.flatnonzero(novel)
        objective_sum = self._objective_sum + np.sum(objective[appended])
        if value is not None:  # Local competition: add the improvements.
            objective_sum = objective_sum + np.sum(value[replacing])
        combined = np.concatenate([replacing, appended])
        best = combined[np.argmax(objective[combined])]
        best_elite = {
            name: np.array(data[name][best], dtype=dt)[()] for name, dt in store.dtypes.items()
        }
        best_elite["index"] = np.int32(target[best])
        self._update_stats(objective_sum, best_elite)

    def add_single(self, solution, objective, measures, **fields):
        """Inserts one solution.

        Returns:
            The add info of :meth:`add` for a batch of one (arrays of length 1, as
            pyribs returns).

        Raises:
            ValueError: ``objective`` is None with local competition, bad shapes,
                non-finite values, or missing/unknown fields.
        """
        if objective is None:
            if self._local_competition:
                raise ValueError(
                    "If local competition is turned on, objective "
                    "must be passed in to add_single()."
                )
            objective = 0.0
        data = validate_single(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        return self.add(**{name: [val] for name, val in data.items()})

    def clear(self) -> None:
        """Removes every entry and resets the stats (the threshold is kept)."""
        self._store.clear()
        self._index = None
        self._tree = None
        self._reset_stats()
