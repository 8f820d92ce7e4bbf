"""flax networks of the RL algorithms: MLP, policies and twin Q-networks.

Every network takes its input size from the data it is initialised with, so an
observation extended with a skill (``obs ⊕ skill``, DIAYN/DADS) needs no change.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

__all__ = ["MLP", "DeterministicPolicy", "GaussianPolicy", "QNetwork"]


class MLP(nn.Module):
    """Dense layers of ``layer_sizes`` with ``activation`` between them.

    Attributes:
        layer_sizes: Output width of each layer (the last one is the output).
        activation: Activation after every layer but the last.
        final_activation: Optional activation of the output.
        kernel_init: Kernel initialiser of every layer.
    """

    layer_sizes: tuple[int, ...]
    activation: Callable = nn.relu
    final_activation: Callable | None = None
    kernel_init: Callable = nn.initializers.lecun_uniform()

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, size in enumerate(self.layer_sizes):
            x = nn.Dense(size, kernel_init=self.kernel_init)(x)
            if i < len(self.layer_sizes) - 1:
                x = self.activation(x)
        if self.final_activation is not None:
            x = self.final_activation(x)
        return x


class DeterministicPolicy(nn.Module):
    """TD3's actor: ``obs -> tanh(MLP(obs))``, actions in ``[-1, 1]``."""

    hidden_layer_sizes: tuple[int, ...]
    action_size: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return MLP(tuple(self.hidden_layer_sizes) + (self.action_size,), final_activation=jnp.tanh)(
            obs
        )


class GaussianPolicy(nn.Module):
    """SAC's actor head: ``obs -> (loc, scale)`` of a pre-tanh Gaussian.

    ``scale = softplus(raw) + min_std`` keeps the standard deviation positive and
    bounded away from zero. Combine with :class:`~ribsax.rl.TanhNormal`.
    """

    hidden_layer_sizes: tuple[int, ...]
    action_size: int
    min_std: float = 1e-3

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = MLP(tuple(self.hidden_layer_sizes) + (2 * self.action_size,))(obs)
        loc, raw = jnp.split(out, 2, axis=-1)
        return loc, jax.nn.softplus(raw) + self.min_std


class QNetwork(nn.Module):
    """``n_critics`` independent Q-functions of ``(obs, action)``.

    Returns ``(..., n_critics)``: one value per critic (twin critics by default).
    """

    hidden_layer_sizes: tuple[int, ...]
    n_critics: int = 2

    @nn.compact
    def __call__(self, obs: jax.Array, actions: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, actions], axis=-1)
        qs = [MLP(tuple(self.hidden_layer_sizes) + (1,))(x) for _ in range(self.n_critics)]
        return jnp.concatenate(qs, axis=-1)
