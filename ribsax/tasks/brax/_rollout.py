"""Episode rollouts of a policy in a brax environment with ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Transition", "Rollout", "rollout", "cast_floats", "observation_size"]


class Transition(NamedTuple):
    """Per-step data of an episode, for RL-based emitters (leading axis: time).

    Attributes:
        obs: Observation the action was chosen from.
        next_obs: Observation after the step.
        action: Action taken.
        reward: Reward of the step (0 once the episode has ended).
        done: Termination flag of the step (1.0 when the robot became unhealthy).
        truncation: 1.0 on the last counted step when the episode was cut by the
            length limit rather than terminated.
        valid: 1.0 for steps that belong to the episode (up to and including the
            terminating step), 0.0 for the padding steps after it; RL code must
            ignore invalid steps.
        state_desc: Per-step measure features after the step (e.g. feet contacts).
    """

    obs: jax.Array
    next_obs: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    truncation: jax.Array
    valid: jax.Array
    state_desc: jax.Array


class Rollout(NamedTuple):
    """Result of :func:`rollout` for one episode.

    Attributes:
        rewards: ``(T,)`` rewards, zero after the episode ended.
        valid: ``(T,)`` bool, whether each step belongs to the episode.
        features: ``(T, k)`` per-step features (zero after the episode ended).
        final_features: ``(k,)`` features after the episode's last step (the
            terminating step when the episode ended early).
        transitions: :class:`Transition` or None.
    """

    rewards: jax.Array
    valid: jax.Array
    features: jax.Array
    final_features: jax.Array
    transitions: Transition | None


def cast_floats(tree, dtype):
    """Casts every floating array leaf of ``tree`` to ``dtype``.

    brax mixes float32 and float64 when JAX x64 is on (e.g. metrics created with the
    default dtype next to float32 physics), which breaks ``lax.scan`` carries. A
    single physics dtype for the whole state avoids it.
    """

    def cast(x):
        if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating):
            return x.astype(dtype)
        return x

    return jax.tree.map(cast, tree)


def observation_size(env) -> int:
    """The length of ``env``'s observations.

    brax's ``PipelineEnv.observation_size`` runs ``reset`` op by op, compiling one
    small program per operation. For such an environment, bare or inside brax
    wrappers that pass the property through, the same value is read from the
    shapes of ``reset`` alone (:func:`jax.eval_shape`: traced once, nothing run). Any other
    ``observation_size`` (an attribute, an overriding property) is read as is.
    """
    from brax.envs import base

    inner = env
    while (
        isinstance(inner, base.Wrapper)
        and type(inner).observation_size is base.Wrapper.observation_size
    ):
        inner = inner.env
    if getattr(type(inner), "observation_size", None) is not (base.PipelineEnv.observation_size):
        return int(env.observation_size)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)  # brax's property resets with one.
    return int(jax.eval_shape(inner.reset, key).obs.shape[-1])


def rollout(
    env,
    policy_apply: Callable,
    params,
    init_state,
    *,
    episode_length: int,
    feature_fn: Callable,
    reward_fn: Callable | None = None,
    obs_fn: Callable | None = None,
    return_transitions: bool = False,
) -> Rollout:
    """Plays one episode of ``episode_length`` steps (pure; vmap it for a batch).

    The scan always runs ``episode_length`` steps (static shapes). Once a step returns
    ``done``, the episode is over: that step still counts, and later steps are
    *masked* with ``jnp.where`` (zero reward and features, ``valid=False``), so
    whatever the simulation does after termination, NaNs included, never reaches the
    results. (The simulation keeps stepping rather than freezing the state, which
    would cost a select over the whole physics state every step.)

    Args:
        env: A brax ``Env`` (``reset``/``step``), not auto-resetting.
        policy_apply: ``(params, obs) -> action``.
        params: Policy parameters (any pytree accepted by ``policy_apply``; pass
            them already unravelled so the scan body does not rebuild them).
        init_state: Initial environment state (from ``env.reset``).
        episode_length: Number of steps.
        feature_fn: ``state -> (k,) array`` computed on the state after each step.
        reward_fn: Optional ``state -> reward`` replacing ``state.reward``.
        obs_fn: Optional ``(obs, t) -> obs``: what the policy sees (and the
            transitions record) of the observation before step ``t``
            (``next_obs`` gets ``t + 1``), e.g. the observation with the
            remaining time appended.
        return_transitions: Also return the :class:`Transition` sequence.

    Returns:
        :class:`Rollout`.
    """
    dtype = init_state.obs.dtype
    if reward_fn is None:
        reward_fn = lambda state: state.reward  # noqa: E731

    if obs_fn is None:
        obs_fn = lambda obs, t: obs  # noqa: E731

    def step(carry, t):
        state, alive, last_features = carry
        obs = obs_fn(state.obs, t)
        action = policy_apply(params, obs).astype(dtype)
        next_state = cast_floats(env.step(state, action), dtype)
        reward = jnp.where(alive, reward_fn(next_state), 0.0)
        features = feature_fn(next_state)
        last_features = jnp.where(alive, features, last_features)
        features = jnp.where(alive, features, jnp.zeros_like(features))
        done = next_state.done > 0
        out = (reward, alive, features)
        if return_transitions:
            truncation = alive & ~done & (t == episode_length - 1)
            out += (
                Transition(
                    obs=obs,
                    next_obs=obs_fn(next_state.obs, t + 1),
                    action=action,
                    reward=reward,
                    done=jnp.where(alive, done, False).astype(dtype),
                    truncation=truncation.astype(dtype),
                    valid=alive.astype(dtype),
                    state_desc=features,
                ),
            )
        return (next_state, alive & ~done, last_features), out

    init_features = jnp.zeros_like(feature_fn(init_state))
    (_, _, final_features), outs = jax.lax.scan(
        step, (init_state, jnp.bool_(True), init_features), jnp.arange(episode_length)
    )
    rewards, valid, features = outs[:3]
    transitions = outs[3] if return_transitions else None
    return Rollout(
        rewards=rewards,
        valid=valid,
        features=features,
        final_features=final_features,
        transitions=transitions,
    )
