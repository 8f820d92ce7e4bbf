"""Transition: one environment step, the unit stored in replay buffers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_positive_int

__all__ = ["Transition"]


class Transition(NamedTuple):
    """One environment step (any leading batch/time axes on every field).

    A ``NamedTuple`` of arrays, hence a pytree: it can be stacked by ``lax.scan``,
    stored in a :class:`~ribsax.rl.ReplayBuffer` and ``vmap``-ped over.

    Attributes:
        obs: Observation the action was chosen from, ``(..., obs_dim)``.
        next_obs: Observation after the step, ``(..., obs_dim)``. With an
            auto-resetting environment this is the *reset* observation when the
            step ended an episode; ``dones`` then stops bootstrapping from it, and
            losses drop steps with ``truncations == 1``.
        rewards: Reward of the step, ``(...)``.
        dones: 1.0 when the step ended the episode (termination or time limit).
        truncations: 1.0 when the episode was cut by the time limit rather than
            terminated; such steps carry no usable bootstrap target and are masked
            out of the critic losses.
        actions: Action taken, ``(..., action_dim)``.
        state_desc: State descriptor before the step, ``(..., desc_dim)``
            (``desc_dim`` may be 0 when the environment has none).
        next_state_desc: State descriptor after the step, ``(..., desc_dim)``.
    """

    obs: jax.Array
    next_obs: jax.Array
    rewards: jax.Array
    dones: jax.Array
    truncations: jax.Array
    actions: jax.Array
    state_desc: jax.Array
    next_state_desc: jax.Array

    @classmethod
    def zeros(
        cls,
        observation_size: int,
        action_size: int,
        state_descriptor_size: int = 0,
        batch_shape: Sequence[int] = (),
        dtype=jnp.float32,
    ) -> Transition:
        """A transition of zeros with the given sizes (e.g. a buffer's example item).

        Args:
            observation_size: Length of ``obs`` / ``next_obs``.
            action_size: Length of ``actions``.
            state_descriptor_size: Length of ``state_desc`` / ``next_state_desc``.
            batch_shape: Leading axes of every field.
            dtype: Floating dtype of every field.

        Raises:
            ValueError: A size is negative or not an integer.
        """
        check_positive_int("observation_size", observation_size, allow_zero=True)
        check_positive_int("action_size", action_size, allow_zero=True)
        check_positive_int("state_descriptor_size", state_descriptor_size, allow_zero=True)
        shape = tuple(int(s) for s in batch_shape)

        def z(*tail):
            return jnp.zeros(shape + tail, dtype)

        return cls(
            obs=z(observation_size),
            next_obs=z(observation_size),
            rewards=z(),
            dones=z(),
            truncations=z(),
            actions=z(action_size),
            state_desc=z(state_descriptor_size),
            next_state_desc=z(state_descriptor_size),
        )

    @property
    def observation_size(self) -> int:
        """Length of the last axis of ``obs``."""
        return int(self.obs.shape[-1])

    @property
    def action_size(self) -> int:
        """Length of the last axis of ``actions``."""
        return int(self.actions.shape[-1])

    def flatten(self) -> Transition:
        """Merges all leading axes into one (e.g. ``(T, B, ...)`` -> ``(T*B, ...)``)."""
        lead = self.rewards.ndim
        n = math.prod(self.rewards.shape)
        return jax.tree.map(lambda x: x.reshape((n,) + x.shape[lead:]), self)
