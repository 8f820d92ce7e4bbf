"""MLPPolicy: a flax MLP controller exposed as a flat parameter vector."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["MLPPolicy"]

_ACTIVATIONS = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "elu": jax.nn.elu,
    "gelu": jax.nn.gelu,
    "swish": jax.nn.swish,
    "sigmoid": jax.nn.sigmoid,
    "identity": lambda x: x,
    None: lambda x: x,
}


def _activation(spec):
    if callable(spec):
        return spec
    try:
        return _ACTIVATIONS[spec]
    except KeyError:
        raise ValueError(
            f"Unknown activation {spec!r}; use a callable or one of "
            f"{sorted(k for k in _ACTIVATIONS if k)}"
        ) from None


class _MLP(nn.Module):
    """Dense layers with an activation between them and a final activation."""

    layer_sizes: tuple[int, ...]
    activation: Callable
    final_activation: Callable
    kernel_init: Callable

    @nn.compact
    def __call__(self, x):
        for i, size in enumerate(self.layer_sizes):
            x = nn.Dense(
                size,
                kernel_init=self.kernel_init,
                bias_init=nn.initializers.zeros,
                name=f"dense_{i}",
            )(x)
            last = i == len(self.layer_sizes) - 1
            x = self.final_activation(x) if last else self.activation(x)
        return x


@dataclasses.dataclass(frozen=True)
class MLPPolicy:
    """A deterministic MLP policy whose parameters are one flat vector.

    QD emitters work on flat solution vectors; this class maps such a vector to flax
    parameters (``unravel``) and back (``ravel``), and applies the network to
    observations. The layout is that of ``jax.tree.flatten`` on flax's parameter
    dict: layer by layer (``dense_0``, ``dense_1``, ...), the bias then the kernel
    (row-major, ``(fan_in, fan_out)``). Any floating dtype works; the network
    computes in the dtype of the parameters.

    The defaults follow dqd-rl (Tjanaka et al. 2022): hidden layers (128, 128), tanh
    activations, tanh on the output (actions in ``[-1, 1]``, brax's action range);
    kernels are initialised LeCun-uniform and biases at zero as in QDax.

    Policies with equal settings are equal (and hash alike), so emitters built on
    two tasks of the same network share compiled kernels and fuse.

    Args:
        obs_dim: Observation size.
        action_dim: Action size.
        hidden_layer_sizes: Widths of the hidden layers.
        activation: Hidden activation: a name (``"tanh"``, ``"relu"``, ``"elu"``,
            ``"gelu"``, ``"swish"``, ``"sigmoid"``, ``"identity"``) or a callable.
        final_activation: Output activation (same choices; None for linear).
        kernel_init: flax initializer for the kernels (None: LeCun-uniform).

    Raises:
        ValueError: Unknown activation name or non-positive sizes.
    """

    obs_dim: int
    action_dim: int
    hidden_layer_sizes: Sequence[int] = (128, 128)
    activation: str | Callable = "tanh"
    final_activation: str | Callable | None = "tanh"
    kernel_init: Callable | None = None

    def __post_init__(self):
        object.__setattr__(
            self, "hidden_layer_sizes", tuple(int(h) for h in self.hidden_layer_sizes)
        )
        sizes = (self.obs_dim, *self.hidden_layer_sizes, self.action_dim)
        if any(int(s) <= 0 for s in sizes):
            raise ValueError(f"Layer sizes must be positive, got {sizes}")
        _activation(self.activation)
        _activation(self.final_activation)

    def __getstate__(self):
        # The network and the layout are rebuilt on use (flax modules do not pickle).
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)

    @functools.cached_property
    def module(self) -> nn.Module:
        """The underlying flax module."""
        return _MLP(
            layer_sizes=(*self.hidden_layer_sizes, self.action_dim),
            activation=_activation(self.activation),
            final_activation=_activation(self.final_activation),
            kernel_init=(
                nn.initializers.lecun_uniform() if self.kernel_init is None else self.kernel_init
            ),
        )

    @functools.cached_property
    def _layout(self):
        """Tree structure, leaf shapes and offsets of the flat vector."""
        shapes = jax.eval_shape(
            self.module.init, jax.random.key(0), jnp.zeros((self.obs_dim,), jnp.float32)
        )
        leaves, treedef = jax.tree.flatten(shapes)
        leaf_shapes = [tuple(leaf.shape) for leaf in leaves]
        sizes = [math.prod(s) for s in leaf_shapes]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        return treedef, leaf_shapes, offsets

    @property
    def num_params(self) -> int:
        """Length of the flat parameter vector (the task's ``solution_dim``)."""
        return int(self._layout[2][-1])

    def ravel(self, params) -> jax.Array:
        """Flattens a flax parameter tree into a vector.

        Args:
            params: Parameter tree as returned by ``module.init`` / :meth:`unravel`.

        Returns:
            Array of shape ``(num_params,)``.
        """
        leaves = jax.tree.leaves(params)
        return jnp.concatenate([jnp.ravel(leaf) for leaf in leaves])

    def unravel(self, flat):
        """Rebuilds the flax parameter tree from a flat vector (traceable).

        Args:
            flat: Array of shape ``(num_params,)``.

        Returns:
            Parameter tree usable with ``module.apply``.

        Raises:
            ValueError: ``flat`` has the wrong length.
        """
        treedef, shapes, offsets = self._layout
        if flat.shape != (self.num_params,):
            raise ValueError(
                f"Expected a flat parameter vector of shape ({self.num_params},), got {flat.shape}"
            )
        leaves = [
            flat[start:end].reshape(shape)
            for start, end, shape in zip(offsets[:-1], offsets[1:], shapes)
        ]
        return jax.tree.unflatten(treedef, leaves)

    def apply(self, flat, obs):
        """Actions for observations ``obs`` (any leading batch shape).

        Args:
            flat: Flat parameters, shape ``(num_params,)``.
            obs: Observations, shape ``(..., obs_dim)``; cast to the parameters'
                dtype.

        Returns:
            Actions of shape ``(..., action_dim)``.
        """
        return self.apply_tree(self.unravel(flat), obs)

    def apply_tree(self, params, obs):
        """Like :meth:`apply` with already unravelled parameters (a flax tree).

        Rollouts unravel once per episode and call this at every step.
        """
        dtype = jax.tree.leaves(params)[0].dtype
        return self.module.apply(params, obs.astype(dtype))

    def init(self, key, dtype=jnp.float32) -> jax.Array:
        """Initial flat parameters of one policy.

        Args:
            key: PRNG key.
            dtype: Floating dtype of the vector.

        Returns:
            Array of shape ``(num_params,)``.
        """
        params = self.module.init(key, jnp.zeros((self.obs_dim,), jnp.float32))
        return self.ravel(params).astype(dtype)

    def init_batch(self, key, batch_size: int, dtype=jnp.float32) -> jax.Array:
        """Independent initial parameters of ``batch_size`` policies.

        Returns:
            Array of shape ``(batch_size, num_params)``.
        """
        keys = jax.random.split(key, batch_size)
        return jax.vmap(lambda k: self.init(k, dtype))(keys)
