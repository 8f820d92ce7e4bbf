"""Shared machinery of the MAP-Elites family emitters (Gaussian, IsoLine, GA).

These emitters sample parents uniformly from the archive (or use ``x0`` while the
archive is empty), apply a variation kernel and clip the result to the bounds. The
whole ``ask`` is one jitted kernel that reads the archive's device store directly,
so sampling parents costs no host round trip, and emitters of equal configuration
can be fused by a scheduler.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_batch_shape, check_shape, kernel_key, to_device
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters._emitter_base import EmitterBase, _shape_tuple, archive_device_view
from ribsax.emitters._fusion import run_ask
from ribsax.emitters.operators._kernels import noise_dtype, variation_parts

__all__ = ["VariationConfig", "VariationState", "VariationEmitter", "parse_x0",
           "ArchiveParentsMixin"]


class VariationConfig(NamedTuple):
    """Static configuration of a variation emitter (hashable).

    Attributes:
        kernel: Variation kernel ``kernel(key, parents, *params)``.
        parent_type: 1 (``(batch, *shape)`` parents) or 2 (``(2, batch, *shape)``).
        batch_size: Number of solutions per ask.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
        draws: None, or the random part of ``kernel``, ``draws(key, parents_shape,
            dtype)`` (see ``ribsax.emitters.operators._kernels.variation_parts``).
        apply: With ``draws``: the rest, ``apply(draws, parents, *params)``.
    """

    kernel: Callable
    parent_type: int
    batch_size: int
    solution_shape: tuple
    dtype: np.dtype
    draws: Callable = None
    apply: Callable = None


class VariationState(NamedTuple):
    """State pytree of a variation emitter.

    Attributes:
        key: PRNG key.
        x0: Solution used as parent while the archive is empty (zeros if unset).
        params: Tuple of kernel parameters (e.g. ``(sigma,)``).
        lower_bounds: Lower clipping bounds.
        upper_bounds: Upper clipping bounds.
    """

    key: jax.Array
    x0: jax.Array
    params: tuple
    lower_bounds: jax.Array
    upper_bounds: jax.Array


def _parents_shape(config: VariationConfig) -> tuple:
    lead = (2,) if config.parent_type == 2 else ()
    return lead + (config.batch_size,) + config.solution_shape


def _vary(config: VariationConfig, state: VariationState, key, parents, draws=None):
    parents = parents.reshape(_parents_shape(config))
    if draws is None:
        solutions = config.kernel(key, parents, *state.params)
    else:  # ``config.kernel`` is ``config.apply`` of ``config.draws``.
        solutions = config.apply(draws, parents, *state.params)
    return jnp.clip(solutions, state.lower_bounds, state.upper_bounds).astype(
        config.dtype)


def variation_ask(config: VariationConfig, state: VariationState, view, draws=None):
    """Samples parents from the archive view and varies them (pure).

    Parents are drawn uniformly with replacement from the occupied cells; when the
    archive is empty every parent is ``x0``.

    Args:
        config: Static configuration.
        state: Emitter state.
        view: :class:`~ribsax.emitters._emitter_base.ArchiveView`.
        draws: None (the kernel draws its noise), or ``variation_draws(config,
            state)``, the same numbers made beforehand.

    Returns:
        ``(state, solutions[batch, *solution_shape])``.
    """
    key, k_parents, k_vary = jax.random.split(state.key, 3)
    n = config.batch_size * config.parent_type
    cells = sample_occupied(k_parents, view, n)
    # One gather per parent set (the same cells as one gather of all n): XLA:CPU
    # fuses a single gather followed by the split into both parent sets into a much
    # slower loop.
    sampled = jnp.concatenate(
        [view.solution[part] for part in
         cells.reshape(config.parent_type, config.batch_size)]).astype(config.dtype)
    parents = jnp.where(view.n_occupied > 0, sampled,
                        jnp.broadcast_to(state.x0, sampled.shape))
    return state._replace(key=key), _vary(config, state, k_vary, parents, draws)


def variation_draws(config: VariationConfig, state: VariationState):
    """The noise the next :func:`variation_ask` on ``state`` draws (a function of
    ``state.key`` alone; ``config.draws`` must be set)."""
    _, _, k_vary = jax.random.split(state.key, 3)
    return config.draws(k_vary, _parents_shape(config), noise_dtype(config.dtype))


def variation_from_parents(config: VariationConfig, state: VariationState, parents):
    """Like :func:`variation_ask` with parents given (sampled on the host)."""
    key, _, k_vary = jax.random.split(state.key, 3)
    return state._replace(key=key), _vary(config, state, k_vary, parents)


_variation_from_parents_jit = jax.jit(variation_from_parents, static_argnums=(0,))


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
    check_batch_shape(initial_solutions, "initial_solutions", archive.solution_dim,
                      "archive.solution_dim")
    return None, initial_solutions


class ArchiveParentsMixin:
    """Shared shell of the emitters whose kernels sample parents from the
    archive's device store, starting from ``x0`` or ``initial_solutions``
    (:class:`VariationEmitter`, GradientOperatorEmitter): their validation and
    properties, and the fusion key. Placed before
    :class:`~ribsax.emitters.EmitterBase` in the bases; the emitter sets
    ``_config`` and ``_device_view_ok`` and provides :meth:`_param_shapes`."""

    def _check_x0(self, x0, initial_solutions) -> None:
        """pyribs' x0 / initial_solutions validation (see :func:`parse_x0`)."""
        self._x0, self._initial_solutions = parse_x0(self.archive, x0,
                                                     initial_solutions)

    def _initial_phase(self) -> bool:
        """Whether ``ask`` returns ``initial_solutions`` (given, archive empty)."""
        return self._initial_solutions is not None and self.archive.empty

    def _device_view_usable(self, dtype) -> bool:
        """Whether the kernels can read the archive's device store (one exists and
        the solutions are floating point)."""
        return (archive_device_view(self.archive) is not None
                and np.dtype(dtype).kind in "fc")

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

    # ------------------------------------------------------------ fusion
    def _param_shapes(self) -> tuple:
        """Shapes of the traced parameters (part of the fusion key)."""
        raise NotImplementedError

    @property
    def fusion_config(self):
        return self._config

    @property
    def fusion_key(self):
        if not self._device_view_ok:
            return None
        return (type(self), self._config, self._param_shapes(), id(self.archive))


class VariationEmitter(ArchiveParentsMixin, EmitterBase):
    """Base of emitters that vary parents sampled from the archive (not public).

    Subclasses call :meth:`_check_x0`, then :meth:`_setup` with their variation
    kernel and parameters.
    """

    def __init__(self, archive, *, x0, initial_solutions, bounds, lower_bounds,
                 upper_bounds, batch_size, seed):
        EmitterBase.__init__(self, archive, solution_dim=archive.solution_dim,
                             bounds=bounds, lower_bounds=lower_bounds,
                             upper_bounds=upper_bounds)
        self._batch_size = batch_size
        self._seed = seed
        self._x0 = None
        self._initial_solutions = None
        self._config = None
        self._params_host = ()

    def _setup(self, kernel, parent_type, params):
        """Builds the static config and the initial state."""
        dtype = np.dtype(self.archive.dtypes["solution"])
        shape = _shape_tuple(self.solution_dim)
        self._params_host = tuple(np.asarray(p) for p in params)
        # NumPy's sampler rejects negative scales (at ask time, like pyribs).
        self._params_ok = not any(np.any(p < 0) for p in self._params_host)
        draws, apply = variation_parts(kernel)
        self._config = VariationConfig(kernel, int(parent_type), int(self._batch_size),
                                       shape, dtype, draws, apply)
        x0 = self._x0 if self._x0 is not None else np.zeros(shape, dtype)
        self._state = VariationState(
            key=kernel_key(self._seed),
            x0=to_device(x0),
            params=tuple(to_device(p) for p in self._params_host),
            lower_bounds=to_device(self.lower_bounds),
            upper_bounds=to_device(self.upper_bounds),
        )
        self._device_view_ok = self._device_view_usable(dtype)

    # ------------------------------------------------------------ properties
    @property
    def batch_size(self):
        """Number of solutions returned by :meth:`ask` (once the archive has
        elites, or with x0)."""
        return self._batch_size

    # ------------------------------------------------------------ fusion
    def _param_shapes(self) -> tuple:
        return tuple(p.shape for p in self._params_host)

    _ask_kernel = staticmethod(variation_ask)
    _ask_draws_kernel = staticmethod(variation_draws)

    @classmethod
    def _draws_ahead(cls, config) -> bool:
        return config.draws is not None

    def _fused_ask_ready(self) -> bool:
        return not self._initial_phase() and self._params_ok

    # ------------------------------------------------------------ ask
    def _clip(self, solutions):
        return np.clip(solutions, self.lower_bounds, self.upper_bounds)

    def _check_params(self) -> None:
        """Raises the error NumPy's sampler (used by pyribs) raises for a negative
        noise scale."""
        if not self._params_ok:
            raise ValueError("scale < 0")

    def _ask_device(self):
        """Runs the ask kernel; returns a device array (no initial_solutions)."""
        self._check_params()
        if self._device_view_ok:
            view = archive_device_view(self.archive)
            state, solutions = run_ask(type(self), self._config,
                                       self._kernel_state(view), view)
        else:
            n = self._config.batch_size * self._config.parent_type
            if self.archive.empty:
                parents = np.repeat(self._x0[None], n, axis=0)
            else:
                parents = self.archive.sample_elites(n)["solution"]
            parents = jnp.asarray(np.asarray(parents, dtype=self._config.dtype))
            state, solutions = _variation_from_parents_jit(
                self._config, self._kernel_state(), parents)
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
            return self._clip(self._initial_solutions)
        return np.array(self._ask_device())

    def _ask_jax(self):
        if self._initial_phase():
            return jnp.asarray(self._clip(self._initial_solutions))
        return self._ask_device()
