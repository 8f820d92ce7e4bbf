"""Tanh-squashed Gaussian: SAC's action distribution.

A small module rather than distrax: distrax 0.1.9 pulls ``tfp-nightly`` (the whole
TensorFlow Probability substrate) for what is here about forty lines.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["TanhNormal"]

_LOG_2 = 0.6931471805599453
_HALF_LOG_2PI = 0.9189385332046727


def _log_det_tanh(u: jax.Array) -> jax.Array:
    """``log(1 - tanh(u)^2)`` computed stably: ``2 (log 2 - u - softplus(-2u))``."""
    return 2.0 * (_LOG_2 - u - jax.nn.softplus(-2.0 * u))


class TanhNormal(NamedTuple):
    """``a = tanh(u)``, ``u ~ N(loc, scale^2)`` independently per action dimension.

    Attributes:
        loc: Mean of ``u``, ``(..., action_size)``.
        scale: Standard deviation of ``u`` (positive), same shape.
    """

    loc: jax.Array
    scale: jax.Array

    def sample_pre_tanh(self, key: jax.Array) -> jax.Array:
        """A reparameterised draw of ``u``."""
        noise = jax.random.normal(key, jnp.shape(self.loc), jnp.result_type(self.loc))
        return self.loc + self.scale * noise

    def sample(self, key: jax.Array) -> jax.Array:
        """A reparameterised action draw (differentiable in ``loc``/``scale``)."""
        return jnp.tanh(self.sample_pre_tanh(key))

    def log_prob_pre_tanh(self, u: jax.Array) -> jax.Array:
        """Log density of the action ``tanh(u)``, summed over the last axis.

        Change of variables: ``log p(a) = log N(u) - sum log(1 - tanh(u)^2)``.
        Use this form when ``u`` is known (no ``atanh`` of a saturated action).
        """
        z = (u - self.loc) / self.scale
        normal = -0.5 * jnp.square(z) - jnp.log(self.scale) - _HALF_LOG_2PI
        return jnp.sum(normal - _log_det_tanh(u), axis=-1)

    def log_prob(self, actions: jax.Array, eps: float = 1e-6) -> jax.Array:
        """Log density of ``actions`` (clipped into ``(-1+eps, 1-eps)`` first)."""
        u = jnp.arctanh(jnp.clip(actions, -1.0 + eps, 1.0 - eps))
        return self.log_prob_pre_tanh(u)

    def sample_and_log_prob(self, key: jax.Array):
        """``(action, log_prob)`` of one reparameterised draw."""
        u = self.sample_pre_tanh(key)
        return jnp.tanh(u), self.log_prob_pre_tanh(u)

    def entropy(self, key: jax.Array) -> jax.Array:
        """One-sample Monte-Carlo estimate of the entropy (``-log p`` of a draw).

        The Gaussian entropy is exact; the tanh term has no closed form.
        """
        u = self.sample_pre_tanh(key)
        gaussian = jnp.sum(0.5 + _HALF_LOG_2PI + jnp.log(self.scale), axis=-1)
        return gaussian + jnp.sum(_log_det_tanh(u), axis=-1)

    def mode(self) -> jax.Array:
        """``tanh(loc)``: the deterministic action used for evaluation."""
        return jnp.tanh(self.loc)
