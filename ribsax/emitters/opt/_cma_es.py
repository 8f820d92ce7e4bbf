"""CMA-ES as pure JAX kernels, with pyribs' ``CMAEvolutionStrategy`` shell.

The update reproduces pyribs' implementation (itself adapted from pycma's
``purecma``) formula for formula, including its quirks:

* the strategy parameters (weights, ``mueff``, ``cc``, ``cs``, ``c1``, ``cmu``,
  ``damps``) are recomputed on every ``tell`` from the actual number of parents
  (filter selection changes it), and ``tell`` with zero parents only counts the
  evaluations;
* the rank-one term of the covariance update carries ``c1`` twice
  (``c1 * (c1 * pc pc^T)``);
* ``pc`` is built from the unscaled mean shift ``y = mean - old_mean`` (not divided
  by sigma);
* the step-size rule uses ``||ps||^2 / n`` (not ``||ps|| / E||N(0, I)||``);
* the eigendecomposition is lazy: it runs in ``ask`` only once ``current_eval``
  exceeds the last update by ``lazy_gap_evals = 0.5 n lambda / (c1 + cmu) / n^2``
  (computed once with ``mu = lambda // 2``), on the symmetrised covariance (the
  symmetrised matrix is kept), with absolute eigenvalues.
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
    CovarianceStrategy,
    ESKernels,
    commit_if_parents,
    default_batch_size,
    flat_fitness,
    gaussian_init_fields,
    parent_weights,
    restart,
    sample_in_bounds,
    select_tree,
)

__all__ = [
    "CMAEvolutionStrategy",
    "CMAESConfig",
    "CMAESState",
    "DecompMatrix",
    "CMA_ES_KERNELS",
]


def _strategy_constants(solution_dim, num_parents):
    """pyribs' CMA-ES constants for ``num_parents`` parents, in NumPy (host)."""
    weights = np.log(num_parents + 0.5) - np.log(np.arange(1, num_parents + 1))
    weights = weights / np.sum(weights)
    mueff = np.sum(weights) ** 2 / np.sum(weights**2)
    n = solution_dim
    c1 = 2 / ((n + 1.3) ** 2 + mueff)
    cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
    return c1, cmu


@dataclasses.dataclass(frozen=True)
class CMAESConfig:
    """Static configuration of CMA-ES (hashable; a ``jit`` static argument).

    Attributes:
        solution_dim: Dimension ``n`` of the search space.
        batch_size: Default population size ``lambda``.
        dtype: NumPy float dtype of every state array.
        lazy_gap_evals: Evaluations between two eigendecompositions.
        max_resample_rounds: Cap on bounds-resampling rounds in ``ask``.
    """

    solution_dim: int
    batch_size: int
    dtype: np.dtype
    lazy_gap_evals: float
    max_resample_rounds: int = MAX_RESAMPLE_ROUNDS

    @classmethod
    def create(
        cls,
        solution_dim,
        batch_size=None,
        dtype=np.float64,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
    ):
        """Builds a config with pyribs' defaults.

        Args:
            solution_dim: Dimension of the search space.
            batch_size: Population size; None gives ``4 + int(3 ln n)``.
            dtype: Float dtype.
            max_resample_rounds: Cap on bounds-resampling rounds.

        Returns:
            CMAESConfig.
        """
        solution_dim = int(solution_dim)
        batch_size = default_batch_size(solution_dim) if batch_size is None else int(batch_size)
        with np.errstate(divide="ignore", invalid="ignore"):
            c1, cmu = _strategy_constants(solution_dim, batch_size // 2)
            lazy_gap_evals = 0.5 * solution_dim * batch_size * (c1 + cmu) ** -1 / solution_dim**2
        return cls(
            solution_dim,
            batch_size,
            np.dtype(dtype),
            float(lazy_gap_evals),
            int(max_resample_rounds),
        )


class CMAESState(NamedTuple):
    """State of CMA-ES (a pytree).

    Attributes:
        mean: ``(n,)`` distribution mean.
        sigma: Step size.
        sigma0: Initial step size (restored by ``reset``).
        pc: ``(n,)`` evolution path of the covariance.
        ps: ``(n,)`` evolution path of the step size.
        cov: ``(n, n)`` covariance matrix.
        eigenbasis: ``(n, n)`` eigenvectors (columns) from the last decomposition.
        eigenvalues: ``(n,)`` absolute eigenvalues from the last decomposition.
        invsqrt: ``(n, n)`` ``C^-1/2`` from the last decomposition.
        condition_number: ``max / min`` eigenvalue.
        updated_eval: int32 ``current_eval`` at the last decomposition.
        current_eval: int32 number of evaluations told since the last reset.
        solutions: ``(batch, n)`` solutions of the last ``ask``.
        resample_rounds: int32 sampling rounds used by the last ``ask``.
        key: PRNG key.
    """

    mean: jax.Array
    sigma: jax.Array
    sigma0: jax.Array
    pc: jax.Array
    ps: jax.Array
    cov: jax.Array
    eigenbasis: jax.Array
    eigenvalues: jax.Array
    invsqrt: jax.Array
    condition_number: jax.Array
    updated_eval: jax.Array
    current_eval: jax.Array
    solutions: jax.Array
    resample_rounds: jax.Array
    key: jax.Array


def init(config: CMAESConfig, x0, sigma0, key) -> CMAESState:
    """Creates a CMA-ES state centred at ``x0`` with step size ``sigma0``.

    Args:
        config: Static configuration.
        x0: ``(n,)`` initial mean.
        sigma0: Initial step size.
        key: PRNG key.

    Returns:
        CMAESState.
    """
    n, dtype = config.solution_dim, config.dtype
    eye = jnp.eye(n, dtype=dtype)
    return CMAESState(
        pc=jnp.zeros(n, dtype),
        ps=jnp.zeros(n, dtype),
        cov=eye,
        eigenbasis=eye,
        eigenvalues=jnp.ones(n, dtype),
        invsqrt=eye,
        condition_number=jnp.ones((), dtype),
        updated_eval=jnp.zeros((), jnp.int32),
        current_eval=jnp.zeros((), jnp.int32),
        **gaussian_init_fields(config, x0, sigma0, key),
    )


def reset(config: CMAESConfig, state: CMAESState, x0) -> CMAESState:
    """Restarts at ``x0`` with the initial step size, keeping the PRNG stream."""
    return restart(init, config, state, x0)


def needs_prepare(config: CMAESConfig, state: CMAESState):
    """Whether the lazy eigendecomposition is due (``current_eval > updated_eval +
    lazy_gap_evals``)."""
    wide = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    return state.current_eval.astype(wide) > state.updated_eval.astype(wide) + config.lazy_gap_evals


def _symmetric(cov):
    """``max(cov, cov^T)`` (over the last two axes): pyribs' symmetrisation."""
    return jnp.maximum(cov, jnp.swapaxes(cov, -1, -2))


def _decompose(config: CMAESConfig, state: CMAESState) -> CMAESState:
    """Unconditional eigendecomposition update (pyribs' ``update_eigensystem``)."""
    return _eigensystem(config, state._replace(cov=_symmetric(state.cov)))


def _eigensystem(config: CMAESConfig, state: CMAESState) -> CMAESState:
    """:func:`_decompose` of a state whose covariance is already symmetrised (the
    covariance is returned as it is)."""
    dtype = config.dtype
    cov = state.cov
    # ``cov`` is exactly symmetric, so JAX's own symmetrisation is skipped.
    eigenvalues, eigenbasis = jnp.linalg.eigh(cov, symmetrize_input=False)
    eigenvalues = jnp.abs(eigenvalues).astype(dtype)
    eigenbasis = eigenbasis.astype(dtype)
    invsqrt = (eigenbasis * (1 / jnp.sqrt(eigenvalues))) @ eigenbasis.T
    invsqrt = _symmetric(invsqrt)
    return state._replace(
        eigenbasis=eigenbasis,
        eigenvalues=eigenvalues,
        invsqrt=invsqrt,
        condition_number=(jnp.max(eigenvalues) / jnp.min(eigenvalues)).astype(dtype),
        updated_eval=state.current_eval,
    )


def prepare(config: CMAESConfig, state: CMAESState) -> CMAESState:
    """Runs the eigendecomposition where it is due; elsewhere returns ``state``.

    Always computes the decomposition (then selects), so it is cheap to vmap; use
    :func:`ask` for a single state, which skips the work when not due.
    """
    return select_tree(needs_prepare(config, state), _decompose(config, state), state)


def _symmetrize(config: CMAESConfig, state: CMAESState) -> CMAESState:
    """The covariance symmetrisation of :func:`prepare` alone (see
    ``ESKernels.prepare_parts``)."""
    del config
    return state._replace(cov=_symmetric(state.cov))


def _prepare_symmetrized(config: CMAESConfig, state: CMAESState) -> CMAESState:
    """:func:`prepare` of a state whose covariance :func:`_symmetrize` made
    symmetric."""
    return select_tree(needs_prepare(config, state), _eigensystem(config, state), state)


def sample(config: CMAESConfig, state: CMAESState, lower_bounds, upper_bounds, batch_size=None):
    """Samples ``batch_size`` solutions from the current eigensystem.

    ``x = (B sqrt(D)) z + mean`` with ``z ~ N(0, sigma^2 I)``; rows outside the bounds
    are resampled (see :func:`resample_in_bounds`).

    Returns:
        ``(state, solutions[batch, n])``.
    """
    dtype = config.dtype
    transform = state.eigenbasis * jnp.sqrt(state.eigenvalues)

    def draw(key, shape):
        z = state.sigma * standard_normal(key, shape, dtype)
        return (z @ transform.T + state.mean).astype(dtype), ()

    return sample_in_bounds(config, state, lower_bounds, upper_bounds, batch_size, draw)


def ask(config: CMAESConfig, state: CMAESState, lower_bounds, upper_bounds, batch_size=None):
    """Lazy eigendecomposition (when due) followed by :func:`sample`.

    Args:
        config: Static configuration.
        state: Current state.
        lower_bounds: Bounds broadcastable to ``(n,)``.
        upper_bounds: Bounds broadcastable to ``(n,)``.
        batch_size: Static number of solutions (None: ``config.batch_size``).

    Returns:
        ``(state, solutions[batch, n])``.
    """
    state = jax.lax.cond(
        needs_prepare(config, state), lambda s: _decompose(config, s), lambda s: s, state
    )
    return sample(config, state, lower_bounds, upper_bounds, batch_size)


def strategy_params(config: CMAESConfig, num_parents, rows: int):
    """Weights and learning rates for ``num_parents`` parents (traced).

    Returns:
        ``(weights[rows], mueff, cc, cs, c1, cmu, damps)``.
    """
    n, dtype = config.solution_dim, config.dtype
    weights, mueff = parent_weights(num_parents, rows, dtype)
    cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
    cs = (mueff + 2) / (n + mueff + 5)
    c1 = 2 / ((n + 1.3) ** 2 + mueff)
    cmu = jnp.minimum(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
    damps = 1 + 2 * jnp.maximum(0, jnp.sqrt((mueff - 1) / (n + 1)) - 1) + cs
    return weights, mueff, cc, cs, c1, cmu, damps


def tell(
    config: CMAESConfig, state: CMAESState, ranking_indices, ranking_values, num_parents
) -> CMAESState:
    """Updates mean, paths, covariance and step size from the ranked solutions.

    Args:
        config: Static configuration.
        state: State after :func:`ask`.
        ranking_indices: ``(batch,)`` argsort of the solutions, best first.
        ranking_values: Unused (kept for a uniform signature).
        num_parents: Number of top solutions recombined (may be traced); zero only
            advances ``current_eval``.

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
        whiten=lambda s, y: s.invsqrt @ y,
        rank_mu=lambda weighted, ys: weighted.T @ ys,
        rank_one=lambda pc: jnp.outer(pc, pc),
    )


def covariance_tell(
    config, state, ranking_indices, num_parents, params_fn, whiten, rank_mu, rank_one
):
    """The CMA-ES update shared by CMA-ES and sep-CMA-ES (see :func:`tell`).

    Args:
        config: Static configuration.
        state: State after ``ask`` (``mean``, ``sigma``, ``pc``, ``ps``, ``cov``,
            ``current_eval``, ``solutions``).
        ranking_indices: ``(batch,)`` argsort of the solutions, best first.
        num_parents: Number of top solutions recombined (may be traced); zero only
            advances ``current_eval``.
        params_fn: ``params_fn(config, num_parents, rows) -> (weights, mueff, cc, cs,
            c1, cmu, damps)``.
        whiten: ``whiten(state, y)``: ``C^-1/2 y``.
        rank_mu: ``rank_mu(weighted_ys, ys)``: the rank-mu term of the covariance.
        rank_one: ``rank_one(pc)``: the rank-one term ``pc pc^T``.

    Returns:
        The new state.
    """
    n, dtype = config.solution_dim, config.dtype
    ranked = state.solutions[ranking_indices]
    rows = ranked.shape[0]
    current_eval = state.current_eval + rows
    weights, mueff, cc, cs, c1, cmu, damps = params_fn(config, num_parents, rows)

    old_mean = state.mean
    sigma = state.sigma
    mean = jnp.sum(ranked * weights[:, None], axis=0)

    y = mean - old_mean
    z = whiten(state, y)
    ps = (1 - cs) * state.ps + (jnp.sqrt(cs * (2 - cs) * mueff) / sigma) * z
    left = (
        jnp.sum(jnp.square(ps))
        / n
        / (1 - (1 - cs) ** (2 * current_eval.astype(dtype) / config.batch_size))
    )
    hsig = (left < 2 + 4.0 / (n + 1)).astype(dtype)
    pc = (1 - cc) * state.pc + hsig * jnp.sqrt(cc * (2 - cc) * mueff) * y

    ys = ranked - old_mean[None]
    rank_mu_update = rank_mu(ys * weights[:, None], ys)
    c1a = c1 * (1 - (1 - hsig**2) * cc * (2 - cc))
    # pyribs' quirk: the rank-one term is multiplied by c1 twice.
    cov = (
        state.cov * (1 - c1a - cmu * jnp.sum(weights))
        + (c1 * rank_one(pc)) * c1
        + rank_mu_update * cmu / sigma**2
    )

    cn, sum_square_ps = cs / damps, jnp.sum(jnp.square(ps))
    sigma = sigma * jnp.exp(jnp.minimum(1, cn * (sum_square_ps / n - 1) / 2))

    updated = state._replace(
        mean=mean.astype(dtype),
        sigma=sigma.astype(dtype),
        pc=pc.astype(dtype),
        ps=ps.astype(dtype),
        cov=cov.astype(dtype),
    )
    return commit_if_parents(num_parents, updated, state, current_eval=current_eval)


def check_stop(config: CMAESConfig, state: CMAESState, ranking_values):
    """pyribs' stopping tests: condition number > 1e14, ``sigma sqrt(max eig) <
    1e-11``, or flat fitness on the sorted ranking values.

    Returns:
        bool scalar.
    """
    del config
    area = state.sigma * jnp.sqrt(jnp.max(state.eigenvalues))
    return (state.condition_number > 1e14) | (area < 1e-11) | flat_fitness(ranking_values)


#: The functional core of CMA-ES.
CMA_ES_KERNELS = ESKernels(
    init=init,
    reset=reset,
    ask=ask,
    tell=tell,
    check_stop=check_stop,
    needs_prepare=needs_prepare,
    prepare=prepare,
    sample=sample,
    prepare_parts=(_symmetrize, _prepare_symmetrized),
)


class DecompMatrix:
    """Read-only host snapshot of CMA-ES' covariance and its eigensystem.

    Mirrors the attributes of pyribs' ``DecompMatrix``: ``cov``, ``eigenbasis``,
    ``eigenvalues``, ``condition_number``, ``invsqrt``, ``updated_eval``, ``dtype``.
    Changing it does not change the ES (set ``es.state`` instead).
    """

    def __init__(self, state: CMAESState, dtype):
        self.cov = np.asarray(state.cov)
        self.eigenbasis = np.asarray(state.eigenbasis)
        self.eigenvalues = np.asarray(state.eigenvalues)
        self.condition_number = np.asarray(state.condition_number)[()]
        self.invsqrt = np.asarray(state.invsqrt)
        self.updated_eval = int(state.updated_eval)
        self.dtype = dtype


class CMAEvolutionStrategy(CovarianceStrategy):
    """CMA-ES optimizer for use with emitters (pyribs' update, JAX kernels).

    See :class:`EvolutionStrategyBase` for usage and the module docstring for the
    update rules. The functional core is ``CMAEvolutionStrategy.kernels``
    (:data:`CMA_ES_KERNELS`) with :class:`CMAESConfig` / :class:`CMAESState`.

    Args:
        sigma0: Initial step size.
        solution_dim: Size of the solution space.
        batch_size: Number of solutions per ``ask``; None gives ``4 + int(3 ln n)``.
        seed: Seed (int, None or ``np.random.SeedSequence``) for the PRNG key.
        dtype: Data type of solutions. None means float64 when JAX x64 is enabled,
            float32 otherwise; float64 requires x64.
        lower_bounds: Scalar or ``(solution_dim,)`` lower bounds (``-inf`` for none).
        upper_bounds: Scalar or ``(solution_dim,)`` upper bounds (``inf`` for none).
        max_resample_rounds: ribsax extension: cap on bounds-resampling rounds per
            ``ask`` (rows still out of bounds are then clipped).

    Raises:
        ValueError: ``dtype`` is float64 while JAX x64 is disabled.
    """

    kernels = CMA_ES_KERNELS
    _config_type = CMAESConfig

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
        super().__init__(
            sigma0,
            solution_dim,
            batch_size,
            seed,
            dtype,
            lower_bounds,
            upper_bounds,
            max_resample_rounds,
        )
        self.lazy_gap_evals = self._config.lazy_gap_evals

    @property
    def cov(self):
        """:class:`DecompMatrix` snapshot of the covariance and its eigensystem."""
        if self._state is None:
            return None
        return DecompMatrix(self._state, self.dtype)
