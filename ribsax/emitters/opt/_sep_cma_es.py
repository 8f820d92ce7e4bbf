"""sep-CMA-ES (diagonal covariance) as pure JAX kernels, with pyribs' shell.

Mirrors pyribs' ``SeparableCMAEvolutionStrategy``: the covariance is a vector, there
is no lazy decomposition, samples are ``x = sqrt(C) * z + mean`` with
``z ~ N(0, sigma^2 I)``, and the learning rates are pycma's separable ones::

    cc  = (1 + 1/n + mueff/n) / (sqrt(n) + 1/n + 2 mueff/n)
    c1  = 2 / ((n + 1.3)^2 + mueff) / (n + 2 sqrt(n) + mueff/n)
    cmu = min(1 - c1, (mueff + 1/mueff - 2) / (n + 4 sqrt(n) + mueff/2))

The rest of the update is CMA-ES' applied elementwise, with the same quirks (c1
applied twice to the rank-one term, ``pc`` from the unscaled mean shift, sigma rule
with ``||ps||^2 / n``, parameters recomputed for the actual number of parents).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax.emitters.opt._cma_es import covariance_tell
from ribsax.emitters.opt._evolution_strategy_base import (
    MAX_RESAMPLE_ROUNDS,
    CovarianceStrategy,
    ESKernels,
    default_batch_size,
    flat_fitness,
    gaussian_init_fields,
    never_needs_prepare,
    parent_weights,
    restart,
    sample_in_bounds,
    skip_prepare,
)

__all__ = [
    "SeparableCMAEvolutionStrategy",
    "SepCMAESConfig",
    "SepCMAESState",
    "DiagonalMatrix",
    "SEP_CMA_ES_KERNELS",
]


@dataclasses.dataclass(frozen=True)
class SepCMAESConfig:
    """Static configuration of sep-CMA-ES (hashable).

    Attributes:
        solution_dim: Dimension ``n``.
        batch_size: Default population size.
        dtype: NumPy float dtype of the state.
        max_resample_rounds: Cap on bounds-resampling rounds in ``ask``.
    """

    solution_dim: int
    batch_size: int
    dtype: np.dtype
    max_resample_rounds: int = MAX_RESAMPLE_ROUNDS

    @classmethod
    def create(
        cls,
        solution_dim,
        batch_size=None,
        dtype=np.float64,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
    ):
        """Builds a config; ``batch_size=None`` gives ``4 + int(3 ln n)``."""
        solution_dim = int(solution_dim)
        batch_size = default_batch_size(solution_dim) if batch_size is None else int(batch_size)
        return cls(solution_dim, batch_size, np.dtype(dtype), int(max_resample_rounds))


class SepCMAESState(NamedTuple):
    """State of sep-CMA-ES (a pytree).

    Attributes:
        mean: ``(n,)`` mean.
        sigma: Step size.
        sigma0: Initial step size.
        pc: ``(n,)`` covariance path.
        ps: ``(n,)`` step-size path.
        cov: ``(n,)`` diagonal of the covariance.
        current_eval: int32 evaluations told since the last reset.
        solutions: ``(batch, n)`` last asked solutions.
        resample_rounds: int32 sampling rounds of the last ``ask``.
        key: PRNG key.
    """

    mean: jax.Array
    sigma: jax.Array
    sigma0: jax.Array
    pc: jax.Array
    ps: jax.Array
    cov: jax.Array
    current_eval: jax.Array
    solutions: jax.Array
    resample_rounds: jax.Array
    key: jax.Array


def init(config: SepCMAESConfig, x0, sigma0, key) -> SepCMAESState:
    """Creates a state centred at ``x0`` with step size ``sigma0``."""
    n, dtype = config.solution_dim, config.dtype
    return SepCMAESState(
        pc=jnp.zeros(n, dtype),
        ps=jnp.zeros(n, dtype),
        cov=jnp.ones(n, dtype),
        current_eval=jnp.zeros((), jnp.int32),
        **gaussian_init_fields(config, x0, sigma0, key),
    )


def reset(config: SepCMAESConfig, state: SepCMAESState, x0) -> SepCMAESState:
    """Restarts at ``x0`` with the initial step size, keeping the PRNG stream."""
    return restart(init, config, state, x0)


# sep-CMA-ES has no lazy step.
needs_prepare = never_needs_prepare
prepare = skip_prepare


def sample(
    config: SepCMAESConfig, state: SepCMAESState, lower_bounds, upper_bounds, batch_size=None
):
    """Samples ``x = sqrt(C) * z + mean``, ``z ~ N(0, sigma^2 I)``, resampling rows out
    of bounds.

    Returns:
        ``(state, solutions[batch, n])``.
    """
    dtype = config.dtype
    transform = jnp.sqrt(state.cov)

    def draw(key, shape):
        z = state.sigma * standard_normal(key, shape, dtype)
        return (transform[None] * z + state.mean[None]).astype(dtype), ()

    return sample_in_bounds(config, state, lower_bounds, upper_bounds, batch_size, draw)


ask = sample


def strategy_params(config: SepCMAESConfig, num_parents, rows: int):
    """Weights and separable learning rates for ``num_parents`` parents.

    Returns:
        ``(weights[rows], mueff, cc, cs, c1, cmu, damps)``.
    """
    n, dtype = config.solution_dim, config.dtype
    weights, mueff = parent_weights(num_parents, rows, dtype)
    cc = (1 + 1 / n + mueff / n) / (n**0.5 + 1 / n + 2 * mueff / n)
    cs = (mueff + 2) / (n + mueff + 5)
    c1 = 2 / ((n + 1.3) ** 2 + mueff)
    c1 = c1 * (1.0 / (n + 2.0 * np.sqrt(n) + mueff / n))
    cmu = jnp.minimum(1 - c1, (0 + mueff + 1.0 / mueff - 2) / (n + 4 * np.sqrt(n) + mueff / 2.0))
    damps = 1 + 2 * jnp.maximum(0, jnp.sqrt((mueff - 1) / (n + 1)) - 1) + cs
    return weights, mueff, cc, cs, c1, cmu, damps


def tell(
    config: SepCMAESConfig, state: SepCMAESState, ranking_indices, ranking_values, num_parents
) -> SepCMAESState:
    """Elementwise CMA-ES update (see module docstring); zero parents only counts the
    evaluations.

    Returns:
        The new state.
    """
    del ranking_values
    return covariance_tell(
        config,
        state,
        ranking_indices,
        num_parents,
        strategy_params,
        whiten=lambda s, y: (1 / jnp.sqrt(s.cov)) * y,
        rank_mu=lambda weighted, ys: jnp.sum(weighted * ys, axis=0),
        rank_one=lambda pc: pc**2,
    )


def check_stop(config: SepCMAESConfig, state: SepCMAESState, ranking_values):
    """Condition number > 1e14, ``sigma sqrt(max C) < 1e-11``, or flat fitness."""
    del config
    condition_number = jnp.max(state.cov) / jnp.min(state.cov)
    area = state.sigma * jnp.sqrt(jnp.max(state.cov))
    return (condition_number > 1e14) | (area < 1e-11) | flat_fitness(ranking_values)


#: The functional core of sep-CMA-ES.
SEP_CMA_ES_KERNELS = ESKernels(
    init=init,
    reset=reset,
    ask=ask,
    tell=tell,
    check_stop=check_stop,
    needs_prepare=needs_prepare,
    prepare=prepare,
    sample=sample,
)


class DiagonalMatrix:
    """Read-only host snapshot of sep-CMA-ES' diagonal covariance.

    Mirrors pyribs' ``DiagonalMatrix``: ``cov``, ``eigenvalues`` (the same vector),
    ``condition_number``, ``invsqrt`` (``1 / sqrt(cov)``), ``updated_eval`` (always 0),
    ``dtype``.
    """

    def __init__(self, cov, dtype):
        self.cov = np.asarray(cov)
        self.dtype = dtype
        self.updated_eval = 0

    @property
    def condition_number(self):
        """Condition number of the covariance matrix."""
        return np.max(self.cov) / np.min(self.cov)

    @property
    def eigenvalues(self):
        """Eigenvalues (the diagonal itself)."""
        return self.cov

    @property
    def invsqrt(self):
        """``C^-1/2`` as a vector."""
        return 1 / np.sqrt(self.cov)


class SeparableCMAEvolutionStrategy(CovarianceStrategy):
    """sep-CMA-ES optimizer for use with emitters (pyribs' update, JAX kernels).

    See :class:`EvolutionStrategyBase` for usage. The functional core is
    ``SeparableCMAEvolutionStrategy.kernels``.

    Args:
        sigma0: Initial step size.
        solution_dim: Size of the solution space.
        batch_size: Solutions per ``ask``; None gives ``4 + int(3 ln n)``.
        seed: Seed (int, None or ``np.random.SeedSequence``).
        dtype: Solution dtype; None means float64 with JAX x64, float32 otherwise.
        lower_bounds: Scalar or ``(solution_dim,)`` lower bounds.
        upper_bounds: Scalar or ``(solution_dim,)`` upper bounds.
        max_resample_rounds: ribsax extension: cap on resampling rounds per ``ask``.

    Raises:
        ValueError: float64 requested while JAX x64 is disabled.
    """

    kernels = SEP_CMA_ES_KERNELS
    _config_type = SepCMAESConfig

    @property
    def cov(self):
        """:class:`DiagonalMatrix` snapshot of the covariance."""
        if self._state is None:
            return None
        return DiagonalMatrix(self._state.cov, self.dtype)
