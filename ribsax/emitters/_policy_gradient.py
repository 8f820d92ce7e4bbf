"""Pieces shared by the policy-gradient emitters (PGA-ME, QDPG, CMA-MEGA (TD3,
ES)): replay-buffer items from a brax task's transitions, argument checks, one
TD3 per configuration, policy-gradient offspring and critic training."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ribsax.rl._optim import adam_init, adam_step
from ribsax.rl._td3 import TD3, TD3Config
from ribsax.rl._transition import Transition

__all__ = [
    "buffer_transitions",
    "check_policy",
    "positive_int",
    "shared_td3",
    "policy_gradient",
    "train_td3",
    "kernel_td3",
]


def buffer_transitions(transitions, state_descriptors=False) -> tuple[Transition, jax.Array]:
    """Replay-buffer items and their mask from a brax task's transitions.

    Args:
        transitions: The ``extras["transitions"]`` of a
            :class:`~ribsax.tasks.brax.BraxTask` created with
            ``return_transitions=True`` (leading axes ``[batch, time]``).
        state_descriptors: Whether the items keep the task's per-step state
            descriptor (the measure features of the state the step reached) as
            their ``next_state_desc``; their ``state_desc`` stays empty.

    Returns:
        ``(items, mask)``: :class:`~ribsax.rl.Transition` items, and the bool mask
        of the steps that belong to their episode.
    """
    empty = jnp.zeros(transitions.reward.shape + (0,), transitions.reward.dtype)
    items = Transition(
        obs=transitions.obs,
        next_obs=transitions.next_obs,
        rewards=transitions.reward,
        dones=transitions.done,
        truncations=transitions.truncation,
        actions=transitions.action,
        state_desc=empty,
        next_state_desc=transitions.state_desc if state_descriptors else empty,
    )
    return items, transitions.valid > 0


def positive_int(name, value, allow_zero=False):
    """Raises ValueError unless ``value`` is a positive (or non-negative) int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        kind = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{name} must be {kind} int, got {value!r}")


def check_policy(policy):
    """Raises TypeError unless ``policy`` looks like a task's MLP policy."""
    for attr in ("apply_tree", "unravel", "ravel", "init_batch", "module"):
        if not hasattr(policy, attr):
            raise TypeError(
                "policy must be a ribsax.tasks.brax.MLPPolicy (a "
                f"task's .policy), got {type(policy).__name__}"
            )


@functools.cache
def shared_td3(config: TD3Config, policy) -> TD3:
    """One :class:`~ribsax.rl.TD3` per configuration and policy network: equal
    kernels share its jitted functions, which then compile once."""
    return TD3(config, policy.action_dim, policy=policy.module)


def kernel_td3(kernel, policy_learning_rate) -> TD3:
    """The shared :class:`~ribsax.rl.TD3` of a policy-gradient kernel, from the
    TD3 settings it declares under common names (``training_batch_size``,
    ``policy_delay``, ``soft_tau_update``, ``critic_hidden_layer_size``,
    ``critic_learning_rate``, ``discount``, ``noise_clip``, ``policy_noise``,
    ``reward_scaling``) and its ``policy`` (the actor's network), with the
    actor's step size ``policy_learning_rate``."""
    config = TD3Config(
        batch_size=kernel.training_batch_size,
        policy_delay=kernel.policy_delay,
        soft_tau_update=kernel.soft_tau_update,
        critic_hidden_layer_size=kernel.critic_hidden_layer_size,
        policy_hidden_layer_size=tuple(kernel.policy.hidden_layer_sizes),
        critic_learning_rate=kernel.critic_learning_rate,
        policy_learning_rate=policy_learning_rate,
        discount=kernel.discount,
        noise_clip=kernel.noise_clip,
        policy_noise=kernel.policy_noise,
        reward_scaling=kernel.reward_scaling,
    )
    return shared_td3(config, kernel.policy)


def policy_gradient(td3, policy, buffer, buffer_state, critic_params, parents, key, steps, lr):
    """``steps`` Adam steps of each parent on the TD3 actor loss against the first
    critic of ``critic_params``, each parent with a fresh optimizer of step size
    ``lr``; every parent's step reads the same minibatch of the buffer.

    Returns:
        The offspring's flat parameters, ``[len(parents), solution_dim]``.
    """
    params = jax.vmap(policy.unravel)(parents)
    opt_states = jax.vmap(adam_init)(params)
    lr = jnp.asarray(lr, jnp.float32)
    actor_grad = jax.grad(td3.policy_loss)

    def step(carry, k):
        params, opt_states = carry
        obs = buffer.sample(buffer_state, k).obs
        grads = jax.vmap(actor_grad, in_axes=(0, None, None))(params, critic_params, obs)
        params, opt_states = jax.vmap(adam_step, in_axes=(0, 0, 0, None))(
            params, grads, opt_states, lr
        )
        return (params, opt_states), None

    (params, _), _ = jax.lax.scan(step, (params, opt_states), jax.random.split(key, steps))
    return jax.vmap(policy.ravel)(params)


def train_td3(td3, buffer, buffer_state, td3_state, key, steps, policy_delay, batch_fn=None):
    """``steps`` TD3 updates (critic every step, greedy actor and targets every
    ``policy_delay``), each on a fresh minibatch of the buffer; none while the
    buffer is empty.

    Args:
        batch_fn: None (train on the sampled minibatch as stored), or a function
            of a sampled minibatch returning the TD3 batch to train on (e.g. one
            with novelty rewards, or with descriptor-conditioned observations).

    Returns:
        ``(td3_state, critic_loss, policy_loss)``: the losses are the means over
        the critic steps and over the actor steps (NaN without training).
    """
    nan = jnp.full((), jnp.nan, jnp.float32)
    if steps == 0:
        return td3_state, nan, nan

    def step(td3_state, k):
        k_sample, k_update = jax.random.split(k)
        batch = buffer.sample(buffer_state, k_sample)
        if batch_fn is not None:
            batch = batch_fn(batch)
        td3_state, metrics = td3.update(td3_state, batch, k_update)
        actor_step = (td3_state.steps - 1) % policy_delay == 0
        return td3_state, (metrics["critic_loss"], metrics["policy_loss"], actor_step)

    def train(td3_state):
        td3_state, (critic, policy, actor) = jax.lax.scan(
            step, td3_state, jax.random.split(key, steps)
        )
        policy_mean = jnp.sum(jnp.where(actor, policy, 0.0)) / jnp.maximum(jnp.sum(actor), 1)
        return (
            td3_state,
            jnp.mean(critic).astype(jnp.float32),
            policy_mean.astype(jnp.float32),
        )

    return jax.lax.cond(buffer.size(buffer_state) > 0, train, lambda s: (s, nan, nan), td3_state)
