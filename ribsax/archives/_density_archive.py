"""DensityArchive: a reservoir of measures and a density estimate (Density Descent)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_batch_shape, check_finite, parse_all_dtypes
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._knn import pairwise_sq_dist
from ribsax.archives._nearest import wide_float_dtype

__all__ = ["DensityArchive"]

_METHODS = ("kde", "kde_sklearn", "cnf")


@jax.jit
def kde_density(measures, buffer, n, bandwidth):
    """Gaussian KDE of ``buffer[:n]`` at ``measures``: ``sum_j phi(|m - b_j| / h) /
    (n h)`` with the standard normal pdf ``phi`` (pyribs' formula: ``h``, not
    ``h^d``); 0 when ``n == 0``.

    Args:
        measures: ``(Q, d)``.
        buffer: ``(buffer_size, d)``; rows ``n ..`` are ignored.
        n: int32 scalar.
        bandwidth: 0-d array ``h``.

    Returns:
        ``(Q,)`` densities in the wide float dtype.
    """
    dtype = wide_float_dtype()
    dist = jnp.sqrt(pairwise_sq_dist(measures.astype(dtype), buffer.astype(dtype)))
    kernel = jnp.exp(-0.5 * jnp.square(dist / bandwidth)) / jnp.sqrt(2 * jnp.pi)
    valid = jnp.arange(buffer.shape[0]) < n
    total = jnp.sum(jnp.where(valid[None, :], kernel, 0.0), axis=1)
    return jnp.where(n > 0, total / (jnp.maximum(n, 1) * bandwidth), 0.0)


class DensityArchive(ArchiveBase):
    """A buffer of measures and a density estimate over it; stores no elites.

    Behaves like :class:`ribs.archives.DensityArchive` (Density Descent Search, Lee
    2024): :meth:`add` returns ``status`` 2 for every solution and the ``density`` of
    each measure vector *before* the buffer is updated, then streams the measures
    into a buffer of ``buffer_size`` rows: the buffer fills in order, then reservoir
    sampling (Li 1994, algorithm L, drawn from the archive's NumPy generator) replaces
    rows. Emitters rank by low density (the ``density`` ranker), and a separate
    result archive keeps the elites; the archive is never :attr:`empty`, and
    ``stats``, ``len``, ``data`` and the other elite methods are not implemented.

    Density methods: ``"kde"``, a Gaussian KDE ``sum_j phi(|m - b_j| / h) / (n h)``
    computed by a jitted kernel (0 for an empty buffer); ``"kde_sklearn"``, the *log*
    density of :class:`sklearn.neighbors.KernelDensity` fitted on the buffer (needs
    scikit-learn; 0 for an empty buffer); ``"cnf"`` (DDS-CNF), the *log* density of a
    continuous normalizing flow in JAX (flax network, optax Adam) that :meth:`add`
    fine-tunes on the buffer after each batch, once the buffer holds
    ``cnf_min_buffer_size`` measures (0 before the first fit).

    The flow (pyribs uses zuko's ``CNF`` in torch): a free-form continuous flow whose
    vector field is an MLP over ``x`` and the time features ``cos(k pi t), sin(k pi
    t)``, ``k = 1..freqs``, with ELU activations, integrated from the data at ``t = 0``
    to a standard normal at ``t = 1`` with the exact trace of the Jacobian. Differences
    from pyribs, on purpose: the ODE is solved by ``steps`` fixed Runge-Kutta (RK4)
    steps rather than an adaptive solver with tolerances, so that fitting and
    evaluation are single jitted programs; the random streams (weights, mini-batches)
    are JAX's, so the densities are not pyribs' numbers for the same seed.

    pyribs quirk kept on purpose (so that the buffer evolves exactly as in pyribs for
    the same seed): once the buffer is full, the measure written at a replacement is
    the one at position ``skip`` counted from the start of the batch's remaining part
    (not from the current position in the stream), and the replaced item is not
    consumed from the stream.

    Args:
        measure_dim: Dimensionality of the measure space.
        buffer_size: Number of rows of the buffer.
        density_method: ``"kde"``, ``"kde_sklearn"`` or ``"cnf"``.
        bandwidth: Kernel bandwidth ``h``.
        sklearn_kwargs: Extra arguments of ``KernelDensity`` for ``"kde_sklearn"``.
        cnf_kwargs: Options of the flow for ``"cnf"``: ``hidden_features`` (widths of
            the hidden layers, default ``(64, 64)``), ``freqs`` (time frequencies,
            default 3), ``activation`` (a JAX function, default ELU), ``steps`` (RK4
            steps, default 10) and ``exact`` (must be True). ``features`` is the
            measure dimension and cannot be given.
        cnf_lr: Adam learning rate of the flow.
        cnf_train_steps: Adam steps after each :meth:`add`.
        cnf_batch_size: Mini-batch size of those steps (drawn with replacement from
            the buffer; the buffer's size when it is smaller).
        cnf_min_buffer_size: Number of buffered measures before the flow is first
            fitted.
        cnf_device: Device of the flow: ``"cpu"``, ``"gpu"`` (``"cuda"`` is read as
            ``"gpu"``), ``"platform:index"`` or a ``jax.Device``.
        seed: Seed of the reservoir sampling and of the flow's weights and
            mini-batches.
        measures_dtype: dtype of measures and densities.
        dtype: Same as ``measures_dtype``.

    Raises:
        ValueError: Unknown ``density_method``, conflicting dtypes, ``features`` in
            ``cnf_kwargs`` or a bad flow option.
        TypeError: A ``cnf_kwargs`` key that the flow does not have.
    """

    def __init__(
        self,
        *,
        measure_dim,
        buffer_size=10000,
        density_method="kde",
        bandwidth=None,
        sklearn_kwargs=None,
        cnf_kwargs=None,
        cnf_lr=1e-3,
        cnf_train_steps=5,
        cnf_batch_size=32,
        cnf_min_buffer_size=128,
        cnf_device="cpu",
        seed=None,
        measures_dtype=None,
        dtype=None,
    ):
        self._rng = np.random.default_rng(seed)
        _, _, self._measures_dtype = parse_all_dtypes(dtype, None, None, measures_dtype)
        ArchiveBase.__init__(self, solution_dim=0, objective_dim=(), measure_dim=measure_dim)
        self._buffer = np.zeros((buffer_size, measure_dim), dtype=self._measures_dtype)
        self._n_occupied = 0
        # Algorithm L's state: the running weight and the number of items to skip.
        self._w = np.exp(np.log(self._rng.uniform()) / buffer_size)
        self._n_skip = int(np.log(self._rng.uniform()) / np.log(1 - self._w))
        if density_method not in _METHODS:
            raise ValueError(f"Unknown density_method '{density_method}'")
        self._cnf = None
        if density_method == "cnf":
            # Imported here: flax and optax take a third of a second to import.
            from ribsax.archives._cnf_density import CNFDensityEstimator

            self._cnf = CNFDensityEstimator(
                measure_dim=self.measure_dim,
                lr=cnf_lr,
                train_steps=cnf_train_steps,
                batch_size=cnf_batch_size,
                min_buffer_size=cnf_min_buffer_size,
                device=cnf_device,
                seed=seed,
                cnf_kwargs=cnf_kwargs,
            )
        self._density_method = density_method
        self._bandwidth = bandwidth
        self._sklearn_kwargs = dict(sklearn_kwargs or {})

    @property
    def empty(self) -> bool:
        """Always False: the archive stores no elites, so the scheduler's warning
        about an empty archive never applies."""
        return False

    @property
    def buffer(self) -> np.ndarray:
        """Read-only ``(n, measure_dim)`` view of the buffered measures."""
        view = self._buffer[: self._n_occupied].view()
        view.flags.writeable = False
        return view

    def compute_density(self, measures):
        """Density (log density for ``"kde_sklearn"`` and ``"cnf"``) of the buffer
        at ``measures``.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.

        Returns:
            (batch_size,) array in the measures dtype.
        """
        measures = np.asarray(measures, dtype=self._measures_dtype)
        if self._density_method == "cnf":
            return self._cnf.log_density(measures).astype(self._measures_dtype)
        if self._density_method == "kde_sklearn":
            if self._n_occupied == 0:
                return np.zeros(measures.shape[0], dtype=measures.dtype)
            from sklearn.neighbors import KernelDensity

            kde = KernelDensity(bandwidth=self._bandwidth, **self._sklearn_kwargs).fit(self.buffer)
            return kde.score_samples(measures).astype(self._measures_dtype)
        if len(measures) == 0:
            return np.zeros(0, dtype=self._measures_dtype)
        density = kde_density(
            jnp.asarray(measures),
            jnp.asarray(self._buffer),
            jnp.asarray(self._n_occupied, jnp.int32),
            jnp.asarray(self._bandwidth, wide_float_dtype()),
        )
        return np.asarray(density).astype(self._measures_dtype)

    def add(self, solution, objective, measures, **fields):
        """Returns the densities of ``measures`` and streams them into the buffer.

        Args:
            solution: Ignored.
            objective: Ignored.
            measures: (batch_size, :attr:`measure_dim`) array.
            fields: Ignored.

        Returns:
            ``{"status": int32[batch] of 2, "density": [batch]}`` (density before the
            update).

        Raises:
            ValueError: ``measures`` has the wrong shape or non-finite values.
        """
        del solution, objective, fields
        measures = np.asarray(measures, dtype=self._measures_dtype)
        check_batch_shape(measures, "measures", self.measure_dim, "measure_dim", "")
        check_finite(measures, "measures")
        batch_size = len(measures)
        buffer_size = len(self._buffer)
        info = {
            "status": np.full(batch_size, 2, dtype=np.int32),
            "density": self.compute_density(measures),
        }

        n_fill = min(max(buffer_size - self._n_occupied, 0), batch_size)
        self._buffer[self._n_occupied : self._n_occupied + n_fill] = measures[:n_fill]
        self._n_occupied += n_fill
        remaining = measures[n_fill:]
        n_remaining = len(remaining)
        while n_remaining > 0:
            if self._n_skip < n_remaining:
                self._buffer[self._rng.integers(buffer_size)] = remaining[self._n_skip]
                self._w *= np.exp(np.log(self._rng.uniform()) / buffer_size)
                self._n_skip = int(np.log(self._rng.uniform()) / np.log(1 - self._w))
            skip = min(self._n_skip, n_remaining)
            n_remaining -= skip
            self._n_skip -= skip
        if self._cnf is not None:
            # DDS-CNF refits the density model on the updated buffer every iteration.
            self._cnf.fit(self._buffer, self._n_occupied)
        return info

    def add_single(self, solution, objective, measures, **fields):
        """:meth:`add` for one solution (arrays of length 1)."""
        return self.add(None, None, np.asarray(measures)[None], **fields)
