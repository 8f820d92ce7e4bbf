"""Twin Delayed DDPG (Fujimoto et al. 2018, "Addressing Function Approximation
Error in Actor-Critic Methods"): twin critics, target policy smoothing and delayed
actor / target updates.

Pure functions over :class:`TD3State` (configuration static, perturbable
hyperparameters in the state), wrapped by :class:`TD3`, which jits each once.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_hidden_sizes, check_positive_int
from ribsax.rl._networks import DeterministicPolicy, QNetwork
from ribsax.rl._off_policy import OffPolicyAgent
from ribsax.rl._optim import adam_init, adam_step, soft_update
from ribsax.rl._transition import Transition

__all__ = ["TD3Config", "TD3Hyperparams", "TD3State", "TD3"]


@dataclasses.dataclass(frozen=True)
class TD3Config:
    """TD3 settings; fields and defaults follow QDax's ``TD3Config``.

    Attributes:
        episode_length: Time limit of training episodes.
        batch_size: Transitions per gradient step.
        policy_delay: The actor and the targets are updated every
            ``policy_delay`` critic updates.
        soft_tau_update: Polyak rate of the target networks.
        expl_noise: Standard deviation of the Gaussian exploration noise.
        critic_hidden_layer_size: Hidden widths of each critic.
        policy_hidden_layer_size: Hidden widths of the actor.
        critic_learning_rate: Adam step size of the critics.
        policy_learning_rate: Adam step size of the actor.
        discount: Discount factor.
        noise_clip: Bound of the target-policy smoothing noise.
        policy_noise: Standard deviation of the target-policy smoothing noise.
        reward_scaling: Factor applied to rewards in the critic target.
    """

    episode_length: int = 1000
    batch_size: int = 256
    policy_delay: int = 2
    soft_tau_update: float = 0.005
    expl_noise: float = 0.1
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    policy_hidden_layer_size: tuple[int, ...] = (256, 256)
    critic_learning_rate: float = 3e-4
    policy_learning_rate: float = 3e-4
    discount: float = 0.99
    noise_clip: float = 0.5
    policy_noise: float = 0.2
    reward_scaling: float = 1.0

    def __post_init__(self):
        for name in ("episode_length", "batch_size", "policy_delay"):
            check_positive_int(name, getattr(self, name))
        for name in ("critic_hidden_layer_size", "policy_hidden_layer_size"):
            object.__setattr__(self, name, check_hidden_sizes(name, getattr(self, name)))
        if not 0.0 <= self.soft_tau_update <= 1.0:
            raise ValueError(f"soft_tau_update must be in [0, 1], got {self.soft_tau_update!r}")
        for name in ("expl_noise", "noise_clip", "policy_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")


class TD3Hyperparams(NamedTuple):
    """Hyperparameters read from the state (arrays), so PBT can perturb them."""

    policy_learning_rate: jax.Array
    critic_learning_rate: jax.Array
    discount: jax.Array
    reward_scaling: jax.Array
    expl_noise: jax.Array
    policy_noise: jax.Array
    noise_clip: jax.Array


class TD3State(NamedTuple):
    """Training state of TD3 (a pytree).

    Attributes:
        policy_params, critic_params, target_policy_params,
        target_critic_params: flax parameters.
        policy_opt_state, critic_opt_state: Adam moments.
        hyperparams: :class:`TD3Hyperparams`.
        key: PRNG key of :meth:`TD3.play_step` and :meth:`TD3.train`.
        steps: Number of critic updates done (int32); the actor is updated when
            ``steps % policy_delay == 0`` before the increment.
    """

    policy_params: Any
    critic_params: Any
    target_policy_params: Any
    target_critic_params: Any
    policy_opt_state: Any
    critic_opt_state: Any
    hyperparams: TD3Hyperparams
    key: jax.Array
    steps: jax.Array


class TD3(OffPolicyAgent):
    """TD3 with twin critics, target policy smoothing and delayed actor updates.

    A thin shell over pure functions jitted once (``init``, ``select_action``,
    ``play_step``, ``update``, ``train``; see
    :class:`~ribsax.rl.OffPolicyAgent`).

    One :meth:`update` on a batch (``d`` = dones, ``m = 1 - truncations``):

    * critics: ``mean(m · (Q_i(s, a) - y)^2)`` summed over the twins, with
      ``y = scale · r + γ (1 - d) min_i Q̄_i(s', clip(μ̄(s') + ε, -1, 1))`` and
      ``ε = clip(N(0, policy_noise²), -noise_clip, noise_clip)``;
    * every ``policy_delay`` updates (counting from the first): the actor
      descends ``-mean(Q_1(s, μ(s)))`` against the updated critics, then the
      target actor and critics move by ``soft_tau_update``.

    Exploration (:meth:`select_action` without ``deterministic``) adds
    ``N(0, expl_noise²)`` to ``μ(s)`` and clips to ``[-1, 1]``.

    Args:
        config: :class:`TD3Config`.
        action_size: Number of action dimensions.
        policy: Optional flax module mapping observations to actions in
            ``[-1, 1]`` (e.g. a QD task's policy network, so that the actor and the
            archive's solutions share one architecture); by default
            :class:`~ribsax.rl.DeterministicPolicy` with
            ``config.policy_hidden_layer_size``.
    """

    def __init__(self, config: TD3Config, action_size: int, policy=None):
        if not isinstance(config, TD3Config):
            raise TypeError(f"config must be a TD3Config, got {type(config).__name__}")
        check_positive_int("action_size", action_size)
        if policy is not None and not callable(getattr(policy, "apply", None)):
            raise TypeError(
                f"policy must be a flax module (with init and apply), got {type(policy).__name__}"
            )
        self.config = config
        self.action_size = action_size
        self.policy = (
            DeterministicPolicy(config.policy_hidden_layer_size, action_size)
            if policy is None
            else policy
        )
        self.critic = QNetwork(config.critic_hidden_layer_size)
        super().__init__()

    def _init(self, key: jax.Array, observation_size: int) -> TD3State:
        cfg = self.config
        policy_params, critic_params, k_state = self._init_networks(key, observation_size)
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        return TD3State(
            policy_params=policy_params,
            critic_params=critic_params,
            target_policy_params=policy_params,
            target_critic_params=critic_params,
            policy_opt_state=adam_init(policy_params),
            critic_opt_state=adam_init(critic_params),
            hyperparams=TD3Hyperparams(
                policy_learning_rate=f32(cfg.policy_learning_rate),
                critic_learning_rate=f32(cfg.critic_learning_rate),
                discount=f32(cfg.discount),
                reward_scaling=f32(cfg.reward_scaling),
                expl_noise=f32(cfg.expl_noise),
                policy_noise=f32(cfg.policy_noise),
                noise_clip=f32(cfg.noise_clip),
            ),
            key=k_state,
            steps=jnp.zeros((), jnp.int32),
        )

    def _select_action(
        self, state: TD3State, obs: jax.Array, key: jax.Array, deterministic: bool = False
    ) -> jax.Array:
        actions = self.policy.apply(state.policy_params, obs)
        if deterministic:
            return actions
        noise = jax.random.normal(key, actions.shape, actions.dtype)
        return jnp.clip(actions + state.hyperparams.expl_noise * noise, -1.0, 1.0)

    def critic_loss(
        self, critic_params, state: TD3State, transitions: Transition, key: jax.Array
    ) -> jax.Array:
        """Twin-critic loss with target policy smoothing (class docstring)."""
        hp = state.hyperparams
        next_actions = self.policy.apply(state.target_policy_params, transitions.next_obs)
        noise = jnp.clip(
            hp.policy_noise * jax.random.normal(key, next_actions.shape, next_actions.dtype),
            -hp.noise_clip,
            hp.noise_clip,
        )
        next_actions = jnp.clip(next_actions + noise, -1.0, 1.0)
        next_q = jnp.min(
            self.critic.apply(state.target_critic_params, transitions.next_obs, next_actions),
            axis=-1,
        )
        target = jax.lax.stop_gradient(
            hp.reward_scaling * transitions.rewards
            + (1.0 - transitions.dones) * hp.discount * next_q
        )
        q = self.critic.apply(critic_params, transitions.obs, transitions.actions)
        error = (q - target[..., None]) * (1.0 - transitions.truncations)[..., None]
        return jnp.sum(jnp.mean(jnp.square(error), axis=tuple(range(error.ndim - 1))))

    def policy_loss(self, policy_params, critic_params, obs: jax.Array) -> jax.Array:
        """``-mean(Q_1(s, μ(s)))``."""
        actions = self.policy.apply(policy_params, obs)
        return -jnp.mean(self.critic.apply(critic_params, obs, actions)[..., 0])

    def _update(
        self, state: TD3State, transitions: Transition, key: jax.Array
    ) -> tuple[TD3State, dict]:
        hp = state.hyperparams
        critic_loss, grad = jax.value_and_grad(self.critic_loss)(
            state.critic_params, state, transitions, key
        )
        critic_params, critic_opt_state = adam_step(
            state.critic_params, grad, state.critic_opt_state, hp.critic_learning_rate
        )

        def actor_and_targets(_):
            loss, g = jax.value_and_grad(self.policy_loss)(
                state.policy_params, critic_params, transitions.obs
            )
            policy_params, policy_opt_state = adam_step(
                state.policy_params, g, state.policy_opt_state, hp.policy_learning_rate
            )
            tau = self.config.soft_tau_update
            return (
                policy_params,
                policy_opt_state,
                soft_update(state.target_policy_params, policy_params, tau),
                soft_update(state.target_critic_params, critic_params, tau),
                loss,
            )

        def keep(_):
            return (
                state.policy_params,
                state.policy_opt_state,
                state.target_policy_params,
                state.target_critic_params,
                jnp.zeros((), critic_loss.dtype),
            )

        (policy_params, policy_opt_state, target_policy, target_critic, policy_loss) = jax.lax.cond(
            state.steps % self.config.policy_delay == 0, actor_and_targets, keep, None
        )
        new_state = state._replace(
            policy_params=policy_params,
            critic_params=critic_params,
            target_policy_params=target_policy,
            target_critic_params=target_critic,
            policy_opt_state=policy_opt_state,
            critic_opt_state=critic_opt_state,
            steps=state.steps + 1,
        )
        return new_state, {"critic_loss": critic_loss, "policy_loss": policy_loss}
