"""VariationKernel: the MAP-Elites family's emitter kernel (Gaussian, IsoLine, GA).

These emitters sample parents uniformly from the archive (or use ``x0`` while the
archive is empty), apply a variation operator and clip the result to the bounds.
:class:`VariationKernel` is that ask as an :class:`~ribsax.emitters.EmitterKernel`:
one pure function that reads the archive's device store directly (no host round
trip to sample parents), run by :class:`~ribsax.emitters.JaxEmitter` in every loop
and fused by the schedulers across emitters of equal configuration.
:class:`VariationEmitter` is the pyribs-compatible shell the three emitters share.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_batch_shape, check_shape, to_device
from ribsax.archives._kernels import ArchiveView, sample_occupied
from ribsax.emitters._emitter_base import EmitterBase, _shape_tuple, archive_device_view
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter, JaxEmitterState
from ribsax.emitters.operators._kernels import noise_dtype, variation_parts

__all__ = [
    "VariationKernel",
    "VariationState",
    "VariationEmitter",
    "parse_x0",
    "ArchiveParentsMixin",
]


class VariationState(NamedTuple):
    """State of a :class:`VariationKernel` (what differs between emitters that
    share one configuration; it never changes).

    Attributes:
        x0: Solution used as parent while the archive is empty (zeros if unset).
        params: Tuple of the operator's parameters (e.g. ``(sigma,)``).
        lower_bounds: Lower clipping bounds.
        upper_bounds: Upper clipping bounds.
    """

    x0: jax.Array
    params: tuple
    lower_bounds: jax.Array
    upper_bounds: jax.Array


@dataclasses.dataclass(frozen=True, kw_only=True)
class VariationKernel(EmitterKernel):
    """Emitter kernel of MAP-Elites' variation: ``clip(operator(parents))``.

    Each ask samples ``batch_size * parent_type`` parents uniformly with
    replacement from the archive's elites (every parent is ``x0`` while the
    archive is empty), applies ``operator`` and clips the solutions to the
    bounds. It does not learn (no :meth:`tell`). Its operators with a separable
    random part (Gaussian and iso+line noise) implement :meth:`draws`, so the
    schedulers' ask/tell loop makes an ask's noise while the previous batch is
    evaluated.

    The configuration is static and hashable (its fields are keyword-only);
    per-emitter values come as ``init_args`` of
    :class:`~ribsax.emitters.JaxEmitter` and live in the state
    (:class:`VariationState`): ``x0``, the operator's ``params``,
    ``lower_bounds`` and ``upper_bounds``. The emitters run its subclasses:
    :class:`~ribsax.emitters.GaussianKernel`,
    :class:`~ribsax.emitters.IsoLineKernel` and
    :class:`~ribsax.emitters.GeneticAlgorithmKernel`; e.g.

    .. code-block:: python

        kernel = GaussianKernel(batch_size=36, solution_shape=(10,),
                                dtype=np.dtype(np.float32))
        emitter = JaxEmitter(archive, kernel, seed=0, init_args={
            "x0": np.zeros(10, np.float32),
            "params": (np.float32(0.1),)})   # sigma

    Attributes:
        operator: Pure variation ``operator(key, parents, *params)`` (e.g.
            :func:`ribsax.emitters.operators.gaussian_variation`).
        parent_type: 1 (parents ``(batch, *shape)``) or 2 (``(2, batch,
            *shape)``).
        batch_size: Solutions per ask.
        solution_shape: Shape of one solution (a tuple).
        dtype: Solution dtype (a NumPy dtype).
    """

    operator: Callable
    parent_type: int
    batch_size: int
    solution_shape: tuple
    dtype: Any

    def _parents_shape(self) -> tuple:
        lead = (2,) if self.parent_type == 2 else ()
        return lead + (self.batch_size,) + tuple(self.solution_shape)

    def init(self, key, archive, *, x0=None, params=(), lower_bounds=None, upper_bounds=None):
        """The state: ``x0`` (zeros if None), the operator's ``params`` and the
        clipping bounds (None: unbounded), on the device."""
        del key, archive
        shape, dtype = tuple(self.solution_shape), np.dtype(self.dtype)

        def host(value, fill):
            return np.full(shape, fill, dtype) if value is None else value

        return VariationState(
            x0=to_device(host(x0, 0), dtype),
            params=tuple(to_device(p) for p in params),
            lower_bounds=to_device(host(lower_bounds, -np.inf), dtype),
            upper_bounds=to_device(host(upper_bounds, np.inf), dtype),
        )

    @property
    def has_draws(self) -> bool:
        return variation_parts(self.operator)[0] is not None

    def draws(self, key):
        """The operator's noise for ``ask(state, archive, key)`` (Gaussian and
        iso+line operators)."""
        draw, _ = variation_parts(self.operator)
        _, k_vary = jax.random.split(key)
        return draw(k_vary, self._parents_shape(), noise_dtype(self.dtype))

    def ask(self, state, archive, key, draws=None):
        """Samples parents from the archive and varies them."""
        k_parents, _ = jax.random.split(key)
        n = self.batch_size * self.parent_type
        cells = sample_occupied(k_parents, archive, n)
        # One gather per parent set (the same cells as one gather of all n):
        # XLA:CPU fuses a single gather followed by the split into both parent
        # sets into a much slower loop.
        sampled = jnp.concatenate(
            [archive.solution[part] for part in cells.reshape(self.parent_type, self.batch_size)]
        ).astype(self.dtype)
        parents = jnp.where(
            archive.n_occupied > 0, sampled, jnp.broadcast_to(state.x0, sampled.shape)
        )
        return self.ask_from_parents(state, key, parents, draws)

    def ask_from_parents(self, state, key, parents, draws=None):
        """:meth:`ask` with the parents given (``[batch_size * parent_type,
        *shape]``, e.g. sampled on the host by an archive without a device
        store): the same key gives the same noise."""
        _, k_vary = jax.random.split(key)
        parents = parents.reshape(self._parents_shape())
        if draws is None:
            solutions = self.operator(k_vary, parents, *state.params)
        else:
            _, apply = variation_parts(self.operator)
            solutions = apply(draws, parents, *state.params)
        solutions = jnp.clip(solutions, state.lower_bounds, state.upper_bounds)
        return state, solutions.astype(self.dtype)


@partial(jax.jit, static_argnums=(0,))
def _ask_from_parents(kernel: VariationKernel, state: JaxEmitterState, parents):
    """:class:`JaxEmitter`'s ask of ``kernel`` with host-sampled parents."""
    key, k_ask = jax.random.split(state.key)
    inner, solutions = kernel.ask_from_parents(state.inner, k_ask, parents)
    return state._replace(inner=inner, key=key), solutions


def parse_x0(archive, x0, initial_solutions):
    """pyribs' validation of the ``x0`` / ``initial_solutions`` pair.

    Args:
        archive: The emitter's archive (gives the solution dtype and shape).
        x0: None or one solution.
        initial_solutions: None or a batch of solutions.

    Returns:
        ``(x0, initial_solutions)`` as arrays of the solution dtype (one is None).

    Raises:
        ValueError: Both or neither given, or a wrong shape.
    """
    dtype = archive.dtypes["solution"]
    if x0 is None and initial_solutions is None:
        raise ValueError("Either x0 or initial_solutions must be provided.")
    if x0 is not None and initial_solutions is not None:
        raise ValueError("x0 and initial_solutions cannot both be provided.")
    if x0 is not None:
        x0 = np.array(x0, dtype=dtype)
        check_shape(x0, "x0", archive.solution_dim, "archive.solution_dim")
        return x0, None
    initial_solutions = np.asarray(initial_solutions, dtype=dtype)
    check_batch_shape(
        initial_solutions, "initial_solutions", archive.solution_dim, "archive.solution_dim"
    )
    return None, initial_solutions


class ArchiveParentsMixin:
    """Shared shell of the emitters whose kernels sample parents from the
    archive's device store, starting from ``x0`` or ``initial_solutions``
    (:class:`VariationEmitter`, GradientOperatorEmitter): their validation and
    properties. Placed before :class:`JaxEmitter` in the bases."""

    def _check_x0(self, x0, initial_solutions) -> None:
        """pyribs' x0 / initial_solutions validation (see :func:`parse_x0`)."""
        self._x0, self._initial_solutions = parse_x0(self.archive, x0, initial_solutions)

    def _initial_phase(self) -> bool:
        """Whether ``ask`` returns ``initial_solutions`` (given, archive empty)."""
        return self._initial_solutions is not None and self.archive.empty

    def _device_view_usable(self, dtype) -> bool:
        """Whether the kernels can read the archive's device store (one exists and
        the solutions are floating point)."""
        return archive_device_view(self.archive) is not None and np.dtype(dtype).kind in "fc"

    @property
    def x0(self):
        """Parent used while the archive is empty (None if initial_solutions is
        set)."""
        return self._x0

    @property
    def initial_solutions(self):
        """Returned by :meth:`ask` while the archive is empty (clipped to the
        bounds by the variation emitters; None if x0 is set)."""
        return self._initial_solutions


class VariationEmitter(ArchiveParentsMixin, JaxEmitter):
    """pyribs' shell around a :class:`VariationKernel` (not public): the
    constructor's validation, ``initial_solutions``, the error for a negative
    noise scale, and host-side parent sampling for archives without a device
    store.

    Subclasses call :meth:`_check_x0`, then :meth:`_setup` with their variation
    operator and parameters.
    """

    def __init__(
        self,
        archive,
        *,
        x0,
        initial_solutions,
        bounds,
        lower_bounds,
        upper_bounds,
        batch_size,
        seed,
    ):
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=bounds,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
        )
        self._batch_size = batch_size
        self._seed = seed
        self._x0 = None
        self._initial_solutions = None
        self._params_host = ()

    def _setup(self, make_kernel, params):
        """Builds the kernel (``make_kernel(batch_size=, solution_shape=,
        dtype=)``) and its first state."""
        dtype = np.dtype(self.archive.dtypes["solution"])
        shape = _shape_tuple(self.solution_dim)
        self._params_host = tuple(np.asarray(p) for p in params)
        # NumPy's sampler rejects negative scales (at ask time, like pyribs).
        self._params_ok = not any(np.any(p < 0) for p in self._params_host)
        kernel = make_kernel(batch_size=int(self._batch_size), solution_shape=shape, dtype=dtype)
        self._device_view_ok = self._device_view_usable(dtype)
        view = archive_device_view(self.archive)
        if not self._device_view_ok:
            # Parents come from ``archive.sample_elites``; the kernel only needs
            # the solutions' shape and dtype to start.
            view = ArchiveView(
                to_device(np.zeros(1, np.int32)),
                to_device(np.zeros((), np.int32)),
                to_device(np.zeros((1, *shape), dtype)),
            )
        initial = None if self._initial_solutions is None else self._clip(self._initial_solutions)
        self._start_kernel(
            kernel,
            view,
            self._seed,
            {
                "x0": self._x0,
                "params": self._params_host,
                "lower_bounds": self.lower_bounds,
                "upper_bounds": self.upper_bounds,
            },
            initial,
        )

    # ------------------------------------------------------------ properties
    @property
    def batch_size(self):
        """Number of solutions returned by :meth:`ask` (once the archive has
        elites, or with x0)."""
        return self._batch_size

    @property
    def fusion_key(self):
        return JaxEmitter.fusion_key.fget(self) if self._device_view_ok else None

    @property
    def fusion_config(self):
        return self.kernel

    def kernel_ready(self, phase="ask") -> bool:
        """Whether the next :meth:`ask` runs the kernel: not while
        ``initial_solutions`` are pending, nor with a negative noise scale (the
        ask must raise pyribs' error)."""
        return JaxEmitter.kernel_ready(self, phase) and self._params_ok

    # ------------------------------------------------------------ ask / tell
    def _clip(self, solutions):
        return np.clip(solutions, self.lower_bounds, self.upper_bounds)

    def _ask_device(self, dqd=False, stacklevel=3):
        """The ask as a device array."""
        del dqd, stacklevel
        if self._initial_phase():
            return jnp.asarray(self._initial_batch)
        if not self._params_ok:
            raise ValueError("scale < 0")  # NumPy's sampler's error, as in pyribs.
        if self._device_view_ok:
            return JaxEmitter._ask_device(self)
        n = self.kernel.batch_size * self.kernel.parent_type
        if self.archive.empty:
            parents = np.repeat(self._x0[None], n, axis=0)
        else:
            parents = self.archive.sample_elites(n)["solution"]
        parents = jnp.asarray(np.asarray(parents, dtype=self.kernel.dtype))
        state, solutions = _ask_from_parents(self.kernel, self._kernel_state(), parents)
        self.state = state
        return solutions

    def ask(self):
        """Creates solutions by varying elites sampled uniformly from the archive.

        While the archive is empty: returns ``initial_solutions`` (clipped) if they
        were given, otherwise varies ``x0``.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array (``initial_solutions`` may
            have another length).
        """
        if self._initial_phase():
            return np.array(self._initial_batch)
        return np.array(self._ask_device())

    def tell(self, solution, objective, measures, add_info, **fields) -> None:
        """Does nothing: these emitters do not learn (as in pyribs)."""
