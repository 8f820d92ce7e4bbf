"""OffPolicyAgent: the jitted shell and training loop shared by SAC and TD3.

A subclass writes the algorithm as pure methods over its state pytree —
``_init(key, observation_size)``, ``_select_action(state, obs, key,
deterministic)``, ``_update(state, transitions, key)`` and optionally
``_observe(state, obs)`` (statistics of played observations) — and this class
jits each one once and adds the environment loop (``play_step``, ``train``) on top
of :func:`~ribsax.rl.play_step` and :class:`~ribsax.rl.ReplayBuffer`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_positive_int
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import play_step as env_play_step

__all__ = ["OffPolicyAgent"]


class OffPolicyAgent:
    """Base of off-policy agents: jitted pure functions plus an env loop.

    Public (jitted) functions, all pure (state in, state out):

    * ``init(key, observation_size) -> state``;
    * ``select_action(state, obs, key, deterministic=False) -> actions``;
    * ``update(state, transitions, key) -> (state, metrics)``: one gradient
      step on a batch whose ``rewards`` are already final (DIAYN/DADS set
      diversity rewards before calling it);
    * ``play_step(state, env_state, env, deterministic=False,
      random_actions=False) -> (state, env_state, transition)``: acts in a
      batched environment (``env`` static) with the key held in the state;
      uniform actions in ``[-1, 1]`` with ``random_actions`` (warm-up);
      ``deterministic`` plays the mode and leaves statistics untouched;
    * ``train(state, env_state, buffer_state, env=, buffer=, num_steps=,
      grad_updates_per_step=1, random_actions=False) -> (state, env_state,
      buffer_state, metrics)``: ``num_steps`` iterations of one ``play_step``,
      insertion into the buffer and ``grad_updates_per_step`` updates on batches
      sampled from it, in one ``lax.scan``. The buffer state is donated.
      ``metrics`` holds the mean of each update metric and ``"reward"``, the mean
      reward of the played steps.
    """

    def __init__(self):
        self.init = jax.jit(self._init, static_argnames=("observation_size",))
        self.select_action = jax.jit(self._select_action, static_argnames=("deterministic",))
        self.update = jax.jit(self._update)
        self.play_step = jax.jit(
            self._play_step, static_argnames=("env", "deterministic", "random_actions")
        )
        self.train = jax.jit(
            self._train,
            static_argnames=(
                "env",
                "buffer",
                "num_steps",
                "grad_updates_per_step",
                "random_actions",
            ),
            donate_argnames=("buffer_state",),
        )

    # -- to be provided by subclasses -----------------------------------------

    def _init(self, key: jax.Array, observation_size: int):
        raise NotImplementedError

    def _select_action(
        self, state, obs: jax.Array, key: jax.Array, deterministic: bool = False
    ) -> jax.Array:
        raise NotImplementedError

    def _update(self, state, transitions: Transition, key: jax.Array):
        raise NotImplementedError

    def _init_networks(self, key: jax.Array, observation_size: int):
        """``(policy_params, critic_params, state_key)`` for ``self.policy`` (of
        observations) and ``self.critic`` (of observations and actions)."""
        k_policy, k_critic, k_state = jax.random.split(key, 3)
        obs = jnp.zeros((1, observation_size))
        act = jnp.zeros((1, self.action_size))
        return (self.policy.init(k_policy, obs), self.critic.init(k_critic, obs, act), k_state)

    def _observe(self, state, obs: jax.Array):
        """Hook: the state after seeing played observations (default: unchanged)."""
        del obs
        return state

    # -- environment loop ------------------------------------------------------

    def _play_step(
        self, state, env_state, env, deterministic: bool = False, random_actions: bool = False
    ) -> tuple[Any, Any, Transition]:
        key, act_key = jax.random.split(state.key)

        def policy_fn(obs, k):
            if random_actions:
                return jax.random.uniform(
                    k, obs.shape[:-1] + (self.action_size,), obs.dtype, -1.0, 1.0
                )
            return self._select_action(state, obs, k, deterministic)

        if not deterministic:
            state = self._observe(state, env_state.obs)
        env_state, transition = env_play_step(env, env_state, policy_fn, act_key)
        return state._replace(key=key), env_state, transition

    def _train(
        self,
        state,
        env_state,
        buffer_state,
        *,
        env,
        buffer,
        num_steps: int,
        grad_updates_per_step: int = 1,
        random_actions: bool = False,
    ):
        check_positive_int("num_steps", num_steps)
        check_positive_int("grad_updates_per_step", grad_updates_per_step, allow_zero=True)

        def grad_step(carry, _):
            agent_state, buf = carry
            key, sample_key, update_key = jax.random.split(agent_state.key, 3)
            batch = buffer.sample(buf, sample_key)
            agent_state, metrics = self._update(agent_state._replace(key=key), batch, update_key)
            return (agent_state, buf), metrics

        def iteration(carry, _):
            agent_state, env_state, buf = carry
            agent_state, env_state, transition = self._play_step(
                agent_state, env_state, env, random_actions=random_actions
            )
            buf = buffer.insert(buf, transition)
            metrics = {}
            if grad_updates_per_step > 0:
                (agent_state, buf), metrics = jax.lax.scan(
                    grad_step, (agent_state, buf), None, grad_updates_per_step
                )
                metrics = jax.tree.map(jnp.mean, metrics)
            metrics["reward"] = jnp.mean(transition.rewards)
            return (agent_state, env_state, buf), metrics

        (state, env_state, buffer_state), metrics = jax.lax.scan(
            iteration, (state, env_state, buffer_state), None, num_steps
        )
        return state, env_state, buffer_state, jax.tree.map(jnp.mean, metrics)
