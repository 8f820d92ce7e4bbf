"""Running mean / standard deviation of observations (pure updates), shared by
``ribsax.rl`` and the ME-ES emitter (which must not need the ``rl`` extra)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["RunningMeanStd", "RunningMeanStdState"]


class RunningMeanStdState(NamedTuple):
    """Sufficient statistics: item count, mean and sum of squared deviations."""

    count: jax.Array
    mean: jax.Array
    m2: jax.Array

    @property
    def var(self) -> jax.Array:
        """Population variance (``np.var`` with ``ddof=0``) of the items seen."""
        return self.m2 / jnp.maximum(self.count, 1.0)

    @property
    def std(self) -> jax.Array:
        """Square root of :attr:`var`."""
        return jnp.sqrt(self.var)


class RunningMeanStd:
    """Streaming mean and variance over the last axis (Chan et al.'s merge).

    Pure functions over :class:`RunningMeanStdState`; batches may have any leading
    axes. ``normalize`` returns ``(x - mean) / (std + eps)``, with ``std`` taken as 1
    before any item was seen and clipped below by ``min_std`` afterwards so that
    constant features do not explode.
    """

    @staticmethod
    def init(size: int, dtype=jnp.float32) -> RunningMeanStdState:
        """Statistics of an empty stream of ``size``-long vectors."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"size must be a positive int, got {size!r}")
        return RunningMeanStdState(
            count=jnp.zeros((), dtype), mean=jnp.zeros((size,), dtype), m2=jnp.zeros((size,), dtype)
        )

    @staticmethod
    def update(
        state: RunningMeanStdState, batch: jax.Array, mask: jax.Array | None = None
    ) -> RunningMeanStdState:
        """Adds a batch (``(..., size)``) to the statistics.

        Args:
            state: Current statistics.
            batch: Vectors with any leading axes.
            mask: Optional 0/1 array of the leading shape: only rows with 1 count.
        """
        x = batch.reshape((-1, batch.shape[-1])).astype(state.mean.dtype)
        if mask is None:
            w = jnp.ones((x.shape[0],), x.dtype)
        else:
            w = jnp.reshape(mask, (-1,)).astype(x.dtype)
        n = jnp.sum(w)
        batch_mean = jnp.sum(w[:, None] * x, axis=0) / jnp.maximum(n, 1.0)
        batch_m2 = jnp.sum(w[:, None] * jnp.square(x - batch_mean), axis=0)
        n = n.astype(state.count.dtype)
        total = state.count + n
        safe_total = jnp.maximum(total, 1.0)  # an all-masked first batch keeps zeros
        delta = batch_mean - state.mean
        mean = state.mean + delta * (n / safe_total)
        m2 = state.m2 + batch_m2 + jnp.square(delta) * (state.count * n / safe_total)
        return RunningMeanStdState(count=total, mean=mean, m2=m2)

    @staticmethod
    def mean_std(state: RunningMeanStdState, min_std: float = 1e-6):
        """``(mean, std)`` of the normalisation: the running mean (0 before any
        item) and the standard deviation clipped below by ``min_std`` (1 before
        any item)."""
        std = jnp.where(state.count > 0, jnp.maximum(state.std, min_std), 1.0)
        return state.mean, std.astype(state.mean.dtype)

    @staticmethod
    def normalize(
        state: RunningMeanStdState, x: jax.Array, eps: float = 1e-8, min_std: float = 1e-6
    ) -> jax.Array:
        """``(x - mean) / (std + eps)`` with :meth:`mean_std`; identity before any
        update."""
        mean, std = RunningMeanStd.mean_std(state, min_std)
        return (x - mean) / (std + eps)
