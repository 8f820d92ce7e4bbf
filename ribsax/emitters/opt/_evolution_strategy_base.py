"""Provides EvolutionStrategyBase and the machinery shared by the kernel-backed ES.

Every evolution strategy in :mod:`ribsax.emitters.opt` is split in two parts:

* a **functional core**: a hashable, frozen configuration dataclass (dimensions,
  population size, dtype, ...) plus a state pytree (a ``NamedTuple`` of device
  arrays, PRNG key included) and pure functions gathered in an :class:`ESKernels`
  tuple::

      state = kernels.init(config, x0, sigma0, key)
      state, solutions = kernels.ask(config, state, lower_bounds, upper_bounds,
                                     batch_size)
      state = kernels.tell(config, state, ranking_indices, ranking_values,
                           num_parents)
      stop = kernels.check_stop(config, state, sorted_ranking_values)

  These functions are ``jax.jit``-able with ``config`` (and ``batch_size``) static,
  and ``jax.vmap``-able over stacked states, which is what lets a scheduler run many
  emitters of the same configuration as one kernel (see
  :class:`~ribsax.emitters.EvolutionStrategyKernel`).
* a thin **object shell** with pyribs' class name, constructor and methods
  (``reset``, ``ask``, ``tell``, ``check_stop``) that validates, holds the state, and
  returns NumPy arrays. Its ``config``, ``state`` and ``kernels`` attributes give
  access to the functional core.

Bounds are handled as in pyribs, by resampling every row with an out-of-bounds entry.
Inside a kernel this is a ``lax.while_loop`` capped at ``config.max_resample_rounds``
rounds (pyribs loops forever); rows still out of bounds at the cap are clipped to the
bounds. The number of rounds is kept in the state so that the shell can emit pyribs'
warning when it exceeds :data:`BOUNDS_SAMPLING_THRESHOLD`.
"""

from __future__ import annotations

import contextlib
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import kernel_key, parse_dtype, to_device
from ribsax.emitters.opt._kernel_shell import config_property, state_property

__all__ = [
    "EvolutionStrategyBase",
    "ESKernels",
    "BOUNDS_SAMPLING_THRESHOLD",
    "BOUNDS_WARNING",
    "MAX_RESAMPLE_ROUNDS",
    "default_batch_size",
    "parent_weights",
    "resample_in_bounds",
    "flat_fitness",
    "single_threaded_blas",
]

#: Number of sampling rounds after which pyribs (and ribsax) warn.
BOUNDS_SAMPLING_THRESHOLD = 100

#: Default cap on the number of resampling rounds inside a kernel.
MAX_RESAMPLE_ROUNDS = 1000

#: Warning emitted when the ES resampled more than ``BOUNDS_SAMPLING_THRESHOLD`` times.
BOUNDS_WARNING = (
    "During bounds handling, this ES resampled at least "
    f"{BOUNDS_SAMPLING_THRESHOLD} times. This may indicate that your solution "
    "space bounds are too tight. When bounds are passed in, the ES resamples "
    "until all solutions are within the bounds -- if the bounds are too tight "
    "or the distribution is too large, the ES will resample forever."
)


class ESKernels(NamedTuple):
    """The pure functions of one evolution strategy.

    Attributes:
        init: ``init(config, x0, sigma0, key) -> state``.
        reset: ``reset(config, state, x0) -> state``; restarts the search at ``x0``
            with the state's initial step size, continuing its PRNG stream.
        ask: ``ask(config, state, lower_bounds, upper_bounds, batch_size=None) ->
            (state, solutions)``; ``prepare`` (when due) followed by ``sample``.
        tell: ``tell(config, state, ranking_indices, ranking_values, num_parents) ->
            state``.
        check_stop: ``check_stop(config, state, ranking_values) -> bool[]`` where the
            ranking values are already sorted by rank.
        needs_prepare: ``needs_prepare(config, state) -> bool[]``: whether the
            expensive part of ``ask`` (CMA-ES' lazy eigendecomposition) is due.
        prepare: ``prepare(config, state) -> state``: performs it where due (a no-op
            elsewhere); safe to call unconditionally.
        sample: ``sample(config, state, lower_bounds, upper_bounds, batch_size=None)
            -> (state, solutions)``: the sampling part of ``ask``.
        prepare_parts: Optional ``(rewrite, rest)`` split of ``prepare`` for
            strategies whose ``prepare`` also rewrites a state array it reads
            (CMA-ES makes its covariance exactly symmetric): ``rewrite(config,
            state) -> state`` does only that, and ``rest(config, state) -> state``
            is the remainder of ``prepare`` on a rewritten state, returning the
            rewritten arrays unchanged. For a due state, ``rest(config,
            rewrite(config, state))`` equals ``prepare(config, state)``.
    """

    init: Callable
    reset: Callable
    ask: Callable
    tell: Callable
    check_stop: Callable
    needs_prepare: Callable
    prepare: Callable
    sample: Callable
    prepare_parts: tuple | None = None


def default_batch_size(solution_dim: int) -> int:
    """pyribs' default population size ``4 + int(3 ln n)`` (a Python int)."""
    return 4 + int(3 * np.log(solution_dim))


def parent_weights(num_parents, rows: int, dtype):
    """Log-rank recombination weights for a (possibly traced) number of parents.

    ``w_i = ln(mu + 0.5) - ln(i)`` for ``i = 1..mu``, normalised to sum to one, and
    zero for ``i > mu``. ``mu`` is clamped to at least one so that the result is
    finite; callers skip the update themselves when ``num_parents`` is zero.

    Args:
        num_parents: int scalar (may be traced).
        rows: Static length of the returned weight vector (the batch size).
        dtype: Float dtype of the result.

    Returns:
        ``(weights[rows], mueff)`` with ``mueff = (sum w)^2 / sum w^2``.
    """
    mu = jnp.maximum(jnp.asarray(num_parents), 1).astype(dtype)
    i = jnp.arange(1, rows + 1, dtype=dtype)
    raw = jnp.where(i <= mu, jnp.log(mu + 0.5) - jnp.log(i), 0).astype(dtype)
    weights = raw / jnp.sum(raw)
    mueff = jnp.sum(weights) ** 2 / jnp.sum(weights**2)
    return weights, mueff


def out_of_bounds_rows(solutions, lower_bounds, upper_bounds):
    """bool[rows]: rows with an entry outside ``[lower_bounds, upper_bounds]``."""
    return jnp.any((solutions < lower_bounds) | (solutions > upper_bounds), axis=-1)


def resample_in_bounds(key, draw, lower_bounds, upper_bounds, max_rounds: int):
    """Draws rows and redraws the out-of-bounds ones, as pyribs' ES do.

    Each round calls ``draw`` for a full fresh batch and keeps its rows only where the
    current row is out of bounds. The loop stops when every row is in bounds or after
    ``max_rounds`` rounds; rows still out of bounds then are clipped to the bounds
    (pyribs would keep resampling forever).

    Args:
        key: PRNG key.
        draw: ``draw(key) -> (solutions[rows, n], aux)`` where ``aux`` is a pytree of
            per-row arrays (e.g. the underlying standard normals) that is replaced
            together with the solutions.
        lower_bounds: Array broadcastable to ``(n,)``, or None (with
            ``upper_bounds`` None: unbounded, one draw and no loop).
        upper_bounds: Array broadcastable to ``(n,)``, or None.
        max_rounds: Static cap on the number of rounds (at least 1).

    Returns:
        ``(solutions, aux, rounds)`` where ``rounds`` is the int32 number of sampling
        rounds (1 when no row needed resampling).
    """
    if lower_bounds is None and upper_bounds is None:
        # Unbounded: the loop would run exactly one round; draw with the key that
        # round would use, so the numbers are the same.
        _, sub = jax.random.split(key)
        solutions, aux = draw(sub)
        return solutions, aux, jnp.ones((), jnp.int32)
    # The first draw happens inside the loop (every row starts "bad"), so that the
    # sampler is traced, and compiled, once.
    shapes = jax.eval_shape(draw, key)
    solutions, aux = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    bad = jnp.ones(solutions.shape[0], bool)

    def cond(carry):
        _, _, _, bad, rounds = carry
        return jnp.any(bad) & (rounds < max(int(max_rounds), 1))

    def body(carry):
        key, solutions, aux, bad, rounds = carry
        key, sub = jax.random.split(key)
        new_solutions, new_aux = draw(sub)
        solutions = jnp.where(bad[:, None], new_solutions, solutions)
        aux = jax.tree.map(
            lambda new, old: jnp.where(bad.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
            new_aux,
            aux,
        )
        bad = bad & out_of_bounds_rows(new_solutions, lower_bounds, upper_bounds)
        return key, solutions, aux, bad, rounds + 1

    carry = (key, solutions, aux, bad, jnp.zeros((), jnp.int32))
    _, solutions, aux, _, rounds = jax.lax.while_loop(cond, body, carry)
    solutions = jnp.clip(solutions, lower_bounds, upper_bounds).astype(solutions.dtype)
    return solutions, aux, rounds


def flat_fitness(ranking_values):
    """pyribs' "flat fitness" test on ranking values sorted by rank.

    True when there are at least two values and ``||rv[0] - rv[-1]|| < 1e-12`` (the
    norm covers multi-column ranking values).
    """
    ranking_values = jnp.asarray(ranking_values)
    if ranking_values.shape[0] < 2:
        return jnp.zeros((), bool)
    diff = (ranking_values[0] - ranking_values[-1]).astype(
        jnp.result_type(float, ranking_values.dtype)
    )
    return jnp.sqrt(jnp.sum(diff**2)) < 1e-12


_BLAS_CONTROLLER = None


def single_threaded_blas():
    """Context manager limiting the host BLAS/LAPACK to one thread, as pyribs does
    around its CMA-ES (``threadpool_limits(1, "blas")``).

    jaxlib's CPU ``eigh`` calls LAPACK from SciPy's OpenBLAS, whose worker threads
    fight XLA's own threads for the cores: on a 2-core machine one jitted 100x100
    ``eigh`` took 4.0 ms without this limit against 1.2-1.6 ms with it. The one
    controller is created at first use. Wrap the *execution* of a kernel that may
    decompose (call it and ``jax.block_until_ready`` inside the ``with``): the limit
    is process-wide and lifted on exit. A no-op when threadpoolctl is not installed.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            import scipy.linalg  # noqa: F401  (loads the OpenBLAS that jaxlib uses)
            from threadpoolctl import ThreadpoolController

            _BLAS_CONTROLLER = ThreadpoolController()
        except ImportError:
            _BLAS_CONTROLLER = False
    if not _BLAS_CONTROLLER:
        return contextlib.nullcontext()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


def select_tree(pred, new, old):
    """``where(pred, new, old)`` leaf by leaf (``pred`` a scalar); a leaf that
    ``new`` shares with ``old`` is returned as it is (see :mod:`ribsax._tracing`)."""
    return jax.tree.map(lambda a, b: a if a is b else jnp.where(pred, a, b), new, old)


# ---------------------------------------------------------------------------
# Kernel building blocks shared by the built-in strategies.
# ---------------------------------------------------------------------------
def restart(init_fn: Callable, config, state, x0, batch_fields=("solutions",)):
    """The common body of a ``reset`` kernel.

    Re-initialises with ``init_fn(config, x0, state.sigma0, state.key)``, i.e. at
    ``x0`` with the state's initial step size and its PRNG stream, and zeroes the
    per-batch arrays named in ``batch_fields`` while keeping their current shapes
    (an ``ask`` with a custom batch size changes them).
    """
    fresh = init_fn(config, x0, state.sigma0, state.key)
    return fresh._replace(**{name: jnp.zeros_like(getattr(state, name)) for name in batch_fields})


def gaussian_init_fields(config, x0, sigma0, key) -> dict:
    """The initial ``mean``, ``sigma``, ``sigma0``, ``solutions``,
    ``resample_rounds`` and ``key`` fields of a Gaussian search state centred at
    ``x0`` with step size ``sigma0`` (keyword arguments for its ``NamedTuple``)."""
    n, dtype = config.solution_dim, config.dtype
    return dict(
        mean=jnp.asarray(x0, dtype).reshape(n),
        sigma=jnp.asarray(sigma0, dtype),
        sigma0=jnp.asarray(sigma0, dtype),
        solutions=jnp.zeros((config.batch_size, n), dtype),
        resample_rounds=jnp.zeros((), jnp.int32),
        key=key,
    )


def never_needs_prepare(config, state):
    """For strategies without a lazy step: always False."""
    del config, state
    return jnp.zeros((), bool)


def skip_prepare(config, state):
    """No-op ``prepare`` for strategies without a lazy step."""
    del config
    return state


def sample_in_bounds(config, state, lower_bounds, upper_bounds, batch_size, draw, aux_field=None):
    """The common body of a ``sample`` kernel.

    Splits ``state.key``, draws ``(batch, n)`` solutions with ``draw(key, shape) ->
    (solutions, aux)`` under :func:`resample_in_bounds`, and stores the solutions,
    the number of rounds and the new key (and ``aux`` in ``aux_field`` when given)
    in the state.

    Args:
        config: Static configuration (``solution_dim``, ``batch_size``, ``dtype``,
            ``max_resample_rounds``).
        state: State with ``key``, ``solutions`` and ``resample_rounds`` fields.
        lower_bounds: Bounds broadcastable to ``(n,)`` (both None: unbounded).
        upper_bounds: Bounds broadcastable to ``(n,)``.
        batch_size: Static number of rows (None: ``config.batch_size``).
        draw: ``draw(key, shape) -> (solutions, aux)``.
        aux_field: Name of the state field receiving ``aux`` (None drops it).

    Returns:
        ``(state, solutions[batch, n])``.
    """
    batch = config.batch_size if batch_size is None else batch_size
    shape = (batch, config.solution_dim)
    key, sub = jax.random.split(state.key)
    if lower_bounds is not None or upper_bounds is not None:
        lower_bounds = jnp.asarray(-jnp.inf if lower_bounds is None else lower_bounds, config.dtype)
        upper_bounds = jnp.asarray(jnp.inf if upper_bounds is None else upper_bounds, config.dtype)
    solutions, aux, rounds = resample_in_bounds(
        sub, lambda k: draw(k, shape), lower_bounds, upper_bounds, config.max_resample_rounds
    )
    extra = {} if aux_field is None else {aux_field: aux}
    return state._replace(solutions=solutions, resample_rounds=rounds, key=key, **extra), solutions


def commit_if_parents(num_parents, updated, state, **counters):
    """Keeps ``updated`` when ``num_parents > 0`` (else ``state``), then sets the
    int32 ``counters`` (which advance either way)."""
    kept = select_tree(jnp.asarray(num_parents) > 0, updated, state)
    return kept._replace(**{name: value.astype(jnp.int32) for name, value in counters.items()})


# ---------------------------------------------------------------------------
# Object API.
# ---------------------------------------------------------------------------
class EvolutionStrategyBase(ABC):
    """Base class for evolution strategy optimizers used by emitters.

    Usage: construct and ``reset(x0)``; then repeatedly ``ask()`` for solutions, rank
    them (best first) and pass the ranking back with ``tell()``; when ``check_stop()``
    says so, ``reset()`` again.

    Subclasses that only implement the four abstract methods with NumPy work as in
    pyribs. The built-in strategies additionally expose ``config``, ``state`` and
    ``kernels`` (see :mod:`ribsax.emitters.opt`) so that schedulers can fuse them.

    Args:
        sigma0: Initial step size.
        solution_dim: Size of the solution space.
        batch_size: Number of solutions to evaluate at a time.
        seed: Seed for the random number generator.
        dtype: Data type of solutions.
        lower_bounds: Scalar or ``(solution_dim,)`` array of lower bounds (``-inf``
            for unbounded).
        upper_bounds: Same as above for upper bounds (``inf`` for unbounded).
    """

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=np.float64,
        lower_bounds=-np.inf,
        upper_bounds=np.inf,
    ) -> None:
        pass

    @abstractmethod
    def reset(self, x0) -> None:
        """Resets the ES to start at ``x0``.

        Args:
            x0: Initial mean.
        """

    @abstractmethod
    def check_stop(self, ranking_values) -> bool:
        """Checks whether the ES should stop and be reset.

        Args:
            ranking_values: ``(batch_size,)`` or ``(batch_size, n_values)`` values
                used to rank the solutions, **already sorted** by rank (unlike in
                :meth:`tell`).

        Returns:
            True if any stopping condition holds.
        """

    @abstractmethod
    def ask(self, batch_size=None):
        """Samples new solutions.

        Args:
            batch_size: Number of solutions; defaults to ``self.batch_size``.

        Returns:
            Array of new solutions.
        """

    @abstractmethod
    def tell(self, ranking_indices, ranking_values, num_parents) -> None:
        """Passes the ranked solutions back to the ES.

        Args:
            ranking_indices: Indices such that ``solutions[ranking_indices]`` is
                sorted best first (an argsort, not ranks).
            ranking_values: Values used for the ranking, ``(batch_size,)`` or
                ``(batch_size, n_values)``, in the order of the solutions (higher is
                better).
            num_parents: Number of top solutions to select.
        """


class KernelEvolutionStrategy(EvolutionStrategyBase):
    """Shared shell for the kernel-backed strategies (not public API).

    Subclasses set the class attribute ``kernels`` and call :meth:`_setup` from their
    constructor with a config.
    """

    kernels: ESKernels = None

    def _setup(self, config, sigma0, seed, lower_bounds, upper_bounds):
        """Stores the config, bounds and PRNG key; the state comes with ``reset``."""
        self._config = config
        self.sigma0 = sigma0
        self.solution_dim = config.solution_dim
        self.dtype = config.dtype
        self.batch_size = config.batch_size
        # pyribs keeps scalars as 0-d arrays.
        self.lower_bounds = np.asarray(lower_bounds, dtype=self.dtype)
        self.upper_bounds = np.asarray(upper_bounds, dtype=self.dtype)
        self._lb = to_device(np.broadcast_to(self.lower_bounds, (config.solution_dim,)))
        self._ub = to_device(np.broadcast_to(self.upper_bounds, (config.solution_dim,)))
        self._key = kernel_key(seed)
        self._state = None

    @staticmethod
    def _parse_dtype(dtype):
        return parse_dtype(dtype, "dtype")

    config = config_property("The static configuration (hashable) of the functional core.")
    state = state_property(
        """The state pytree (None before :meth:`reset`). Settable, for schedulers
        that update stacked states and write them back."""
    )

    @property
    def device_bounds(self):
        """``(lower_bounds, upper_bounds)`` as ``(solution_dim,)`` device arrays."""
        return self._lb, self._ub

    def _require_state(self):
        if self._state is None:
            raise RuntimeError("reset() must be called before using the ES.")
        return self._state

    def reset(self, x0) -> None:
        # NumPy arguments: jit puts them on the device without compiling a
        # staging program for them (jnp.asarray would).
        x0 = np.array(x0, dtype=self.dtype)
        if self._state is None:
            self._state = _init_jit(
                self.kernels, self._config, x0, np.asarray(self.sigma0, self.dtype), self._key
            )
        else:
            # Keep the PRNG stream going, as pyribs' generator does across resets.
            self._state = _reset_jit(self.kernels, self._config, self._state, x0)

    def ask(self, batch_size=None):
        state = self._require_state()
        batch_size = None if batch_size is None else int(batch_size)
        with single_threaded_blas():
            self._state, solutions = jax.block_until_ready(
                _ask_jit(self.kernels, self._config, state, self._lb, self._ub, batch_size)
            )
        rounds = int(self._state.resample_rounds)
        if rounds > BOUNDS_SAMPLING_THRESHOLD:
            warnings.warn(BOUNDS_WARNING, stacklevel=2)
        solutions = np.asarray(solutions)
        solutions.flags.writeable = False
        return solutions

    def tell(self, ranking_indices, ranking_values, num_parents) -> None:
        state = self._require_state()
        ranking_indices = jnp.asarray(ranking_indices)
        # The built-in strategies only use the order; values may be omitted.
        ranking_values = (
            jnp.zeros(ranking_indices.shape[0], self.dtype)
            if ranking_values is None
            else jnp.asarray(ranking_values)
        )
        self._state = _tell_jit(
            self.kernels,
            self._config,
            state,
            ranking_indices,
            ranking_values,
            jnp.asarray(num_parents, jnp.int32),
        )

    def check_stop(self, ranking_values) -> bool:
        state = self._require_state()
        return bool(_check_stop_jit(self.kernels, self._config, state, jnp.asarray(ranking_values)))

    # Helpers for subclass properties.
    def _host(self, name):
        if self._state is None:
            return None
        return np.asarray(getattr(self._state, name))

    def _host_scalar(self, name, kind=None):
        if self._state is None:
            return None
        value = np.asarray(getattr(self._state, name))[()]
        return kind(value) if kind is not None else value


class StepSizeStrategy(KernelEvolutionStrategy):
    """Shared shell of the strategies with ``mean``, ``sigma`` and ``ps`` states
    (not public API)."""

    @property
    def mean(self):
        """``(n,)`` current mean."""
        return self._host("mean")

    @property
    def sigma(self):
        """Current step size."""
        return self._host_scalar("sigma")

    @property
    def ps(self):
        """``(n,)`` step-size evolution path."""
        return self._host("ps")


class CovarianceStrategy(StepSizeStrategy):
    """Shared shell of CMA-ES and sep-CMA-ES (not public API).

    Subclasses set ``kernels`` and ``_config_type`` (a config class whose ``create``
    takes ``(solution_dim, batch_size, dtype, max_resample_rounds)``).
    """

    _config_type = None

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=None,
        lower_bounds=-np.inf,
        upper_bounds=np.inf,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
    ) -> None:
        dtype = self._parse_dtype(dtype)
        config = self._config_type.create(solution_dim, batch_size, dtype, max_resample_rounds)
        self._setup(config, sigma0, seed, lower_bounds, upper_bounds)

    @property
    def current_eval(self):
        """Number of evaluations told since the last reset (None before reset)."""
        return self._host_scalar("current_eval", int)

    @property
    def pc(self):
        """``(n,)`` covariance evolution path."""
        return self._host("pc")


@partial(jax.jit, static_argnums=(0, 1))
def _init_jit(kernels, config, x0, sigma0, key):
    return kernels.init(config, x0, sigma0, key)


@partial(jax.jit, static_argnums=(0, 1))
def _reset_jit(kernels, config, state, x0):
    return kernels.reset(config, state, x0)


@partial(jax.jit, static_argnums=(0, 1, 5))
def _ask_jit(kernels, config, state, lower_bounds, upper_bounds, batch_size):
    return kernels.ask(config, state, lower_bounds, upper_bounds, batch_size)


@partial(jax.jit, static_argnums=(0, 1))
def _tell_jit(kernels, config, state, ranking_indices, ranking_values, num_parents):
    return kernels.tell(config, state, ranking_indices, ranking_values, num_parents)


@partial(jax.jit, static_argnums=(0, 1))
def _check_stop_jit(kernels, config, state, ranking_values):
    return kernels.check_stop(config, state, ranking_values)
