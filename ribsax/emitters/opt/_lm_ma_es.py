"""LM-MA-ES (limited-memory matrix adaptation) as JAX kernels, with pyribs' shell.

Mirrors pyribs' ``LMMAEvolutionStrategy`` (Loshchilov et al. 2018, without mirror
sampling):

* learning rates ``csigma = 2 lambda / n``, ``cd_j = 1 / (1.5^j n)`` and
  ``cc_j = lambda / (4^j n)`` for ``j = 0..n_vectors-1``;
* ``ask``: ``z ~ N(0, I)``, then ``d = z`` transformed through the first
  ``min(gens, n_vectors)`` direction vectors,
  ``d <- (1 - cd_j) d + cd_j m_j (m_j . d)``, and ``x = mean + sigma d`` (rows out
  of bounds are resampled);
* ``tell``: ``gens += 1``; with at least one parent, the mean and ``z_mean`` are the
  weighted parents, ``ps <- (1 - csigma) ps + sqrt(mueff csigma (2 - csigma)) z_mean``,
  ``m_j <- (1 - cc_j) m_j + sqrt(mueff cc_j (2 - cc_j)) z_mean`` and
  ``sigma *= exp(csigma / 2 (||ps||^2 / n - 1))``.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax.emitters.opt._evolution_strategy_base import (
    MAX_RESAMPLE_ROUNDS,
    ESKernels,
    StepSizeStrategy,
    commit_if_parents,
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
    "LMMAEvolutionStrategy",
    "LMMAESConfig",
    "LMMAESState",
    "LM_MA_ES_KERNELS",
]


@dataclasses.dataclass(frozen=True)
class LMMAESConfig:
    """Static configuration of LM-MA-ES (hashable).

    Attributes:
        solution_dim: Dimension ``n``.
        batch_size: Population size ``lambda``.
        n_vectors: Number of direction vectors ``m``.
        dtype: NumPy float dtype of the state.
        max_resample_rounds: Cap on bounds-resampling rounds in ``ask``.
    """

    solution_dim: int
    batch_size: int
    n_vectors: int
    dtype: np.dtype
    max_resample_rounds: int = MAX_RESAMPLE_ROUNDS

    @classmethod
    def create(
        cls,
        solution_dim,
        batch_size=None,
        n_vectors=None,
        dtype=np.float64,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
    ):
        """Builds a config with pyribs' defaults and checks.

        Raises:
            ValueError: ``batch_size > solution_dim``.
        """
        solution_dim = int(solution_dim)
        batch_size = default_batch_size(solution_dim) if batch_size is None else int(batch_size)
        if batch_size > solution_dim:
            raise ValueError(
                f"batch_size ({batch_size}) is greater than solution_dim ({solution_dim})"
            )
        n_vectors = batch_size if n_vectors is None else int(n_vectors)
        return cls(solution_dim, batch_size, n_vectors, np.dtype(dtype), int(max_resample_rounds))

    @property
    def csigma(self) -> float:
        """Step-size path learning rate ``2 lambda / n``."""
        return 2 * self.batch_size / self.solution_dim

    @property
    def cd(self) -> np.ndarray:
        """``(n_vectors,)`` rates ``1 / (1.5^j n)``."""
        return 1 / (1.5 ** np.arange(self.n_vectors) * self.solution_dim)

    @property
    def cc(self) -> np.ndarray:
        """``(n_vectors,)`` rates ``lambda / (4^j n)``."""
        return self.batch_size / (4.0 ** np.arange(self.n_vectors) * self.solution_dim)


class LMMAESState(NamedTuple):
    """State of LM-MA-ES (a pytree).

    Attributes:
        mean: ``(n,)`` mean.
        sigma: Step size.
        sigma0: Initial step size.
        ps: ``(n,)`` step-size path.
        m: ``(n_vectors, n)`` direction vectors.
        current_gens: int32 number of ``tell`` calls since the last reset.
        solutions: ``(batch, n)`` last asked solutions.
        solution_z: ``(batch, n)`` their standard-normal draws.
        resample_rounds: int32 sampling rounds of the last ``ask``.
        key: PRNG key.
    """

    mean: jax.Array
    sigma: jax.Array
    sigma0: jax.Array
    ps: jax.Array
    m: jax.Array
    current_gens: jax.Array
    solutions: jax.Array
    solution_z: jax.Array
    resample_rounds: jax.Array
    key: jax.Array


def init(config: LMMAESConfig, x0, sigma0, key) -> LMMAESState:
    """Creates a state centred at ``x0`` with step size ``sigma0``."""
    n, dtype = config.solution_dim, config.dtype
    return LMMAESState(
        ps=jnp.zeros(n, dtype),
        m=jnp.zeros((config.n_vectors, n), dtype),
        current_gens=jnp.zeros((), jnp.int32),
        solution_z=jnp.zeros((config.batch_size, n), dtype),
        **gaussian_init_fields(config, x0, sigma0, key),
    )


def reset(config: LMMAESConfig, state: LMMAESState, x0) -> LMMAESState:
    """Restarts at ``x0`` with the initial step size, keeping the PRNG stream."""
    return restart(init, config, state, x0, ("solutions", "solution_z"))


# LM-MA-ES has no lazy step.
needs_prepare = never_needs_prepare
prepare = skip_prepare


def transform(config: LMMAESConfig, state: LMMAESState, z):
    """Maps standard normals ``z[rows, n]`` through the active direction vectors."""
    dtype = config.dtype
    cd = jnp.asarray(config.cd, dtype)
    itrs = jnp.minimum(state.current_gens, config.n_vectors)

    def body(j, d):
        mj = state.m[j]
        return (1 - cd[j]) * d + cd[j] * mj[None] * (d @ mj)[:, None]

    return jax.lax.fori_loop(0, itrs, body, z.astype(dtype))


def sample(config: LMMAESConfig, state: LMMAESState, lower_bounds, upper_bounds, batch_size=None):
    """Samples ``mean + sigma d`` (see module docstring), resampling rows out of bounds.

    Returns:
        ``(state, solutions[batch, n])``.
    """
    dtype = config.dtype

    def draw(key, shape):
        z = standard_normal(key, shape, dtype)
        d = transform(config, state, z)
        return (state.mean[None] + state.sigma * d).astype(dtype), z

    return sample_in_bounds(
        config, state, lower_bounds, upper_bounds, batch_size, draw, aux_field="solution_z"
    )


ask = sample


def tell(
    config: LMMAESConfig, state: LMMAESState, ranking_indices, ranking_values, num_parents
) -> LMMAESState:
    """LM-MA-ES update (see module docstring); zero parents only counts the
    generation.

    Returns:
        The new state.
    """
    del ranking_values
    n, dtype = config.solution_dim, config.dtype
    gens = state.current_gens + 1
    ranked = state.solutions[ranking_indices]
    ranked_z = state.solution_z[ranking_indices]
    weights, mueff = parent_weights(num_parents, ranked.shape[0], dtype)
    z_mean = jnp.sum(weights[:, None] * ranked_z, axis=0)
    mean = jnp.sum(weights[:, None] * ranked, axis=0)

    csigma = config.csigma
    cc = jnp.asarray(config.cc, dtype)[:, None]
    ps = (1 - csigma) * state.ps + jnp.sqrt(mueff * csigma * (2 - csigma)) * z_mean
    m = (1 - cc) * state.m + jnp.sqrt(mueff * cc * (2 - cc)) * z_mean[None]
    sigma = state.sigma * jnp.exp(csigma / 2 * (jnp.sum(ps**2) / n - 1))

    updated = state._replace(
        mean=mean.astype(dtype), ps=ps.astype(dtype), m=m.astype(dtype), sigma=sigma.astype(dtype)
    )
    return commit_if_parents(num_parents, updated, state, current_gens=gens)


def check_stop(config: LMMAESConfig, state: LMMAESState, ranking_values):
    """``sigma < 1e-12`` or flat fitness."""
    del config
    return (state.sigma < 1e-12) | flat_fitness(ranking_values)


#: The functional core of LM-MA-ES.
LM_MA_ES_KERNELS = ESKernels(
    init=init,
    reset=reset,
    ask=ask,
    tell=tell,
    check_stop=check_stop,
    needs_prepare=needs_prepare,
    prepare=prepare,
    sample=sample,
)


class LMMAEvolutionStrategy(StepSizeStrategy):
    """LM-MA-ES optimizer for use with emitters (pyribs' update, JAX kernels).

    See :class:`EvolutionStrategyBase` for usage. The functional core is
    ``LMMAEvolutionStrategy.kernels``.

    Args:
        sigma0: Initial step size.
        solution_dim: Size of the solution space.
        batch_size: Solutions per ``ask``; None gives ``4 + int(3 ln n)``.
        seed: Seed (int, None or ``np.random.SeedSequence``).
        dtype: Solution dtype; None means float64 with JAX x64, float32 otherwise.
        lower_bounds: Scalar or ``(solution_dim,)`` lower bounds.
        upper_bounds: Scalar or ``(solution_dim,)`` upper bounds.
        n_vectors: Number of direction vectors; None means ``batch_size``.
        max_resample_rounds: ribsax extension: cap on resampling rounds per ``ask``.

    Raises:
        ValueError: ``batch_size > solution_dim``, or float64 without JAX x64.
    """

    kernels = LM_MA_ES_KERNELS

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=None,
        lower_bounds=-np.inf,
        upper_bounds=np.inf,
        n_vectors=None,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
    ) -> None:
        dtype = self._parse_dtype(dtype)
        config = LMMAESConfig.create(
            solution_dim, batch_size, n_vectors, dtype, max_resample_rounds
        )
        self._setup(config, sigma0, seed, lower_bounds, upper_bounds)
        self.n_vectors = config.n_vectors
        self.csigma = config.csigma
        self.cd = config.cd
        self.cc = config.cc

    @property
    def current_gens(self):
        """Number of ``tell`` calls since the last reset (None before reset)."""
        return self._host_scalar("current_gens", int)

    @property
    def m(self):
        """``(n_vectors, n)`` direction vectors."""
        return self._host("m")
