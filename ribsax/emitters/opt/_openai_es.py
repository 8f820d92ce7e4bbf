"""OpenAI-ES as pure JAX kernels, with pyribs' ``OpenAIEvolutionStrategy`` shell.

See `Salimans et al. 2017 <https://arxiv.org/abs/1703.03864>`_. As in pyribs:

* ``ask``: ``noise ~ N(0, I)`` (with mirror sampling, half a batch and its negation
  stacked), solutions ``theta + sigma0 * noise``; without mirror sampling, rows out
  of bounds are resampled (mirror sampling does not allow bounds);
* ``tell``: centred ranks ``rank / (lambda - 1) - 0.5`` (``rank`` 0 for the worst),
  gradient ``sum_i noise_i (r_i - r_{i+lambda/2}) / (lambda/2 sigma0)`` with mirror
  sampling or ``sum_i noise_i r_i / (lambda sigma0)`` without, then one
  :class:`~ribsax.emitters.opt.AdamOpt` ascent step, and the update ratio
  ``||theta - theta_prev|| / ||theta||``;
* ``check_stop``: update ratio below ``1e-9`` or flat fitness.

Deliberate difference: when rows are resampled without mirror sampling, pyribs keeps
only the noise of the last resampling round (so ``tell`` would then fail or use the
wrong noise); ribsax keeps the noise of every row.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal
from ribsax.emitters.opt import _adam_opt as adam
from ribsax.emitters.opt._evolution_strategy_base import (
    MAX_RESAMPLE_ROUNDS,
    ESKernels,
    KernelEvolutionStrategy,
    default_batch_size,
    flat_fitness,
    never_needs_prepare,
    restart,
    sample_in_bounds,
    skip_prepare,
)

__all__ = [
    "OpenAIEvolutionStrategy",
    "OpenAIESConfig",
    "OpenAIESState",
    "OPENAI_ES_KERNELS",
]


@dataclasses.dataclass(frozen=True)
class OpenAIESConfig:
    """Static configuration of OpenAI-ES (hashable).

    Attributes:
        solution_dim: Dimension ``n``.
        batch_size: Population size.
        dtype: NumPy float dtype of the state.
        mirror_sampling: Whether noise comes in mirrored pairs.
        adam: :class:`~ribsax.emitters.opt.AdamConfig` of the inner optimizer.
        max_resample_rounds: Cap on bounds-resampling rounds in ``ask``.
    """

    solution_dim: int
    batch_size: int
    dtype: np.dtype
    mirror_sampling: bool = True
    adam: adam.AdamConfig = adam.AdamConfig()
    max_resample_rounds: int = MAX_RESAMPLE_ROUNDS

    @classmethod
    def create(
        cls,
        solution_dim,
        batch_size=None,
        dtype=np.float64,
        mirror_sampling=True,
        bounded=False,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
        **adam_kwargs,
    ):
        """Builds a config with pyribs' defaults and checks.

        Args:
            solution_dim: Dimension of the search space.
            batch_size: Population size; None gives ``4 + int(3 ln n)`` rounded up
                to an even number.
            dtype: Float dtype.
            mirror_sampling: Whether to use mirror sampling.
            bounded: Whether finite bounds were given (refused with mirror sampling).
            max_resample_rounds: Cap on resampling rounds.
            **adam_kwargs: ``lr, beta1, beta2, epsilon, l2_coeff`` for Adam.

        Raises:
            ValueError: Bounds with mirror sampling, batch size of 1 or less, or an
                odd batch size with mirror sampling.
        """
        solution_dim = int(solution_dim)
        if mirror_sampling and bounded:
            raise ValueError(
                "Bounds are currently not supported when using "
                "mirror_sampling in OpenAI-ES; see "
                "OpenAIEvolutionStrategy.ask() for more info."
            )
        if batch_size is None:
            batch_size = default_batch_size(solution_dim)
            batch_size += batch_size % 2
        batch_size = int(batch_size)
        if batch_size <= 1:
            raise ValueError(
                "Batch size of 1 is not supported because rank"
                " normalization does not work with batch size of"
                " 1."
            )
        if mirror_sampling and batch_size % 2 != 0:
            raise ValueError("If using mirror sampling, batch_size must be an even number.")
        adam_config = adam.AdamConfig(**{k: float(v) for k, v in adam_kwargs.items()})
        return cls(
            solution_dim,
            batch_size,
            np.dtype(dtype),
            bool(mirror_sampling),
            adam_config,
            int(max_resample_rounds),
        )


class OpenAIESState(NamedTuple):
    """State of OpenAI-ES (a pytree).

    Attributes:
        adam: :class:`~ribsax.emitters.opt.AdamState`; ``adam.theta`` is the mean.
        sigma0: Noise scale.
        last_update_ratio: ``||theta - theta_prev|| / ||theta||`` of the last
            ``tell`` (inf after a reset).
        noise: ``(batch, n)`` noise of the last ``ask``.
        solutions: ``(batch, n)`` last asked solutions.
        resample_rounds: int32 sampling rounds of the last ``ask``.
        key: PRNG key.
    """

    adam: adam.AdamState
    sigma0: jax.Array
    last_update_ratio: jax.Array
    noise: jax.Array
    solutions: jax.Array
    resample_rounds: jax.Array
    key: jax.Array


def init(config: OpenAIESConfig, x0, sigma0, key) -> OpenAIESState:
    """Creates a state centred at ``x0`` with noise scale ``sigma0``."""
    n, dtype = config.solution_dim, config.dtype
    return OpenAIESState(
        adam=adam.init(config.adam, jnp.asarray(x0, dtype).reshape(n)),
        sigma0=jnp.asarray(sigma0, dtype),
        last_update_ratio=jnp.asarray(jnp.inf, dtype),
        noise=jnp.zeros((config.batch_size, n), dtype),
        solutions=jnp.zeros((config.batch_size, n), dtype),
        resample_rounds=jnp.zeros((), jnp.int32),
        key=key,
    )


def reset(config: OpenAIESConfig, state: OpenAIESState, x0) -> OpenAIESState:
    """Restarts Adam at ``x0``, keeping the PRNG stream."""
    return restart(init, config, state, x0, ("noise", "solutions"))


# OpenAI-ES has no lazy step.
needs_prepare = never_needs_prepare
prepare = skip_prepare


def sample(
    config: OpenAIESConfig, state: OpenAIESState, lower_bounds, upper_bounds, batch_size=None
):
    """Samples ``theta + sigma0 * noise`` (see module docstring).

    Returns:
        ``(state, solutions[batch, n])``.
    """
    dtype = config.dtype
    theta = state.adam.theta

    if not config.mirror_sampling:

        def draw(k, shape):
            noise = standard_normal(k, shape, dtype)
            return (theta[None] + state.sigma0 * noise).astype(dtype), noise

        return sample_in_bounds(
            config, state, lower_bounds, upper_bounds, batch_size, draw, aux_field="noise"
        )
    batch = config.batch_size if batch_size is None else batch_size
    key, sub = jax.random.split(state.key)
    half = standard_normal(sub, (batch // 2, config.solution_dim), dtype)
    noise = jnp.concatenate((half, -half))
    solutions = (theta[None] + state.sigma0 * noise).astype(dtype)
    return state._replace(
        noise=noise, solutions=solutions, resample_rounds=jnp.ones((), jnp.int32), key=key
    ), solutions


ask = sample


def tell(
    config: OpenAIESConfig, state: OpenAIESState, ranking_indices, ranking_values, num_parents
) -> OpenAIESState:
    """Rank-based gradient estimate followed by an Adam step (``num_parents`` and
    ``ranking_values`` are unused, as in pyribs).

    Returns:
        The new state.
    """
    del ranking_values, num_parents
    dtype = config.dtype
    noise = state.noise
    rows = noise.shape[0]
    ranks = (
        jnp.zeros(rows, jnp.int32).at[ranking_indices[::-1]].set(jnp.arange(rows, dtype=jnp.int32))
    )
    ranks = ranks.astype(dtype) / (rows - 1) - 0.5

    if config.mirror_sampling:
        half = rows // 2
        gradient = jnp.sum(noise[:half] * (ranks[:half] - ranks[half:])[:, None], axis=0)
        gradient = gradient / (half * state.sigma0)
    else:
        gradient = jnp.sum(noise * ranks[:, None], axis=0)
        gradient = gradient / (rows * state.sigma0)

    theta_prev = state.adam.theta
    adam_state = adam.step(config.adam, state.adam, gradient.astype(dtype))
    ratio = jnp.linalg.norm(adam_state.theta - theta_prev) / jnp.linalg.norm(adam_state.theta)
    return state._replace(adam=adam_state, last_update_ratio=ratio.astype(dtype))


def check_stop(config: OpenAIESConfig, state: OpenAIESState, ranking_values):
    """Update ratio below ``1e-9`` or flat fitness."""
    del config
    return (state.last_update_ratio < 1e-9) | flat_fitness(ranking_values)


#: The functional core of OpenAI-ES.
OPENAI_ES_KERNELS = ESKernels(
    init=init,
    reset=reset,
    ask=ask,
    tell=tell,
    check_stop=check_stop,
    needs_prepare=needs_prepare,
    prepare=prepare,
    sample=sample,
)


class OpenAIEvolutionStrategy(KernelEvolutionStrategy):
    """OpenAI-ES optimizer for use with emitters (pyribs' update, JAX kernels).

    See :class:`EvolutionStrategyBase` for usage. The functional core is
    ``OpenAIEvolutionStrategy.kernels``.

    Args:
        sigma0: Noise scale.
        solution_dim: Size of the solution space.
        batch_size: Solutions per ``ask``; None gives ``4 + int(3 ln n)``, rounded up
            to an even number.
        seed: Seed (int, None or ``np.random.SeedSequence``).
        dtype: Solution dtype; None means float64 with JAX x64, float32 otherwise.
        lower_bounds: Scalar or ``(solution_dim,)`` lower bounds.
        upper_bounds: Scalar or ``(solution_dim,)`` upper bounds.
        mirror_sampling: Whether to sample mirrored noise pairs.
        max_resample_rounds: ribsax extension: cap on resampling rounds per ``ask``.
        adam_kwargs: Keyword arguments of :class:`~ribsax.emitters.opt.AdamOpt`
            (``lr``, ``beta1``, ``beta2``, ``epsilon``, ``l2_coeff``).

    Raises:
        ValueError: Bounds with mirror sampling, batch size <= 1, odd batch size with
            mirror sampling, or float64 without JAX x64.
        TypeError: Unknown Adam keyword.
    """

    kernels = OPENAI_ES_KERNELS

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=None,
        lower_bounds=-np.inf,
        upper_bounds=np.inf,
        mirror_sampling=True,
        max_resample_rounds=MAX_RESAMPLE_ROUNDS,
        **adam_kwargs,
    ) -> None:
        dtype = self._parse_dtype(dtype)
        unknown = set(adam_kwargs) - {f.name for f in dataclasses.fields(adam.AdamConfig)}
        if unknown:
            raise TypeError(
                f"AdamOpt.__init__() got an unexpected keyword argument '{sorted(unknown)[0]}'"
            )
        bounded = not (
            np.all(np.asarray(lower_bounds) == -np.inf)
            and np.all(np.asarray(upper_bounds) == np.inf)
        )
        config = OpenAIESConfig.create(
            solution_dim,
            batch_size,
            dtype,
            mirror_sampling,
            bounded,
            max_resample_rounds,
            **adam_kwargs,
        )
        self._setup(config, sigma0, seed, lower_bounds, upper_bounds)
        self.mirror_sampling = config.mirror_sampling

    @property
    def last_update_ratio(self):
        """Update ratio of the last ``tell`` (None before reset)."""
        return self._host_scalar("last_update_ratio")

    @property
    def noise(self):
        """``(batch, n)`` noise of the last ``ask`` (None before reset)."""
        return self._host("noise")

    @property
    def mean(self):
        """``(n,)`` current point of the inner Adam optimizer."""
        if self._state is None:
            return None
        return np.asarray(self._state.adam.theta)

    @property
    def adam_opt(self):
        """Snapshot :class:`~ribsax.emitters.opt.AdamOpt` holding the inner state."""
        if self._state is None:
            return None
        opt = adam.AdamOpt(
            np.asarray(self._state.adam.theta), **dataclasses.asdict(self._config.adam)
        )
        opt.state = self._state.adam
        return opt
