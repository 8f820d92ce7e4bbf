"""Optimiser and target-network steps shared by the RL algorithms.

Learning rates are *arguments* (arrays from the training state), not baked into an
optax transformation, so population-based training can perturb them per member
without rebuilding optimisers.
"""

from __future__ import annotations

import jax
import optax

__all__ = ["adam_init", "adam_step", "soft_update"]

_ADAM = optax.scale_by_adam()


def adam_init(params):
    """Adam moments (optax ``scale_by_adam`` state) for ``params``."""
    return _ADAM.init(params)


def adam_step(params, grads, opt_state, learning_rate):
    """One Adam step with a traced ``learning_rate``: ``(new_params, new_opt_state)``."""
    direction, opt_state = _ADAM.update(grads, opt_state, params)
    params = jax.tree.map(lambda p, d: p - learning_rate * d, params, direction)
    return params, opt_state


def soft_update(target, online, tau):
    """Polyak averaging ``tau * online + (1 - tau) * target``, leaf by leaf."""
    return jax.tree.map(lambda t, o: tau * o + (1.0 - tau) * t, target, online)
