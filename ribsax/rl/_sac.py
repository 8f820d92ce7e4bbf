"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and
Applications"): twin critics, tanh-Gaussian policy, learned or fixed temperature.

Pure functions over :class:`SacState` (configuration static, hyperparameters that
population-based training perturbs stored in the state), wrapped by :class:`SAC`,
which jits each of them once.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax._running_stats import RunningMeanStd, RunningMeanStdState
from ribsax.rl._checks import check_hidden_sizes, check_positive_int
from ribsax.rl._distributions import TanhNormal
from ribsax.rl._networks import GaussianPolicy, QNetwork
from ribsax.rl._off_policy import OffPolicyAgent
from ribsax.rl._optim import adam_init, adam_step, soft_update
from ribsax.rl._transition import Transition

__all__ = ["SacConfig", "SacHyperparams", "SacState", "SAC"]


@dataclasses.dataclass(frozen=True)
class SacConfig:
    """SAC settings; fields and defaults follow QDax's ``SacConfig``.

    Attributes:
        batch_size: Transitions per gradient step.
        episode_length: Time limit of training episodes.
        tau: Polyak rate of the target critics.
        normalize_observations: Normalise observations with running statistics
            (updated from the observations played by :meth:`SAC.play_step`).
        learning_rate: Adam step size of the policy, critics and temperature.
        alpha_init: Initial temperature.
        discount: Discount factor.
        reward_scaling: Factor applied to rewards in the critic target.
        critic_hidden_layer_size: Hidden widths of each critic.
        policy_hidden_layer_size: Hidden widths of the policy.
        fix_alpha: Keep the temperature at ``alpha_init``.
        target_entropy_scale: Target entropy is ``-target_entropy_scale *
            action_size`` (ribsax addition; QDax's value 0.5).
    """

    batch_size: int
    episode_length: int
    tau: float = 0.005
    normalize_observations: bool = False
    learning_rate: float = 3e-4
    alpha_init: float = 1.0
    discount: float = 0.97
    reward_scaling: float = 1.0
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    policy_hidden_layer_size: tuple[int, ...] = (256, 256)
    fix_alpha: bool = False
    target_entropy_scale: float = 0.5

    def __post_init__(self):
        check_positive_int("batch_size", self.batch_size)
        check_positive_int("episode_length", self.episode_length)
        for name in ("critic_hidden_layer_size", "policy_hidden_layer_size"):
            object.__setattr__(self, name, check_hidden_sizes(name, getattr(self, name)))
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau must be in [0, 1], got {self.tau!r}")
        if self.alpha_init <= 0:
            raise ValueError(f"alpha_init must be positive, got {self.alpha_init!r}")


class SacHyperparams(NamedTuple):
    """Hyperparameters read from the state (arrays), so PBT can perturb them."""

    policy_learning_rate: jax.Array
    critic_learning_rate: jax.Array
    alpha_learning_rate: jax.Array
    discount: jax.Array
    reward_scaling: jax.Array


class SacState(NamedTuple):
    """Training state of SAC (a pytree).

    Attributes:
        policy_params, critic_params, target_critic_params: flax parameters.
        log_alpha: Log temperature (scalar).
        policy_opt_state, critic_opt_state, alpha_opt_state: Adam moments.
        normalization: Running observation statistics (unused unless
            ``normalize_observations``).
        hyperparams: :class:`SacHyperparams`.
        key: PRNG key of :meth:`SAC.play_step` and :meth:`SAC.train`.
        steps: Number of gradient updates done (int32).
    """

    policy_params: Any
    critic_params: Any
    target_critic_params: Any
    log_alpha: jax.Array
    policy_opt_state: Any
    critic_opt_state: Any
    alpha_opt_state: Any
    normalization: RunningMeanStdState
    hyperparams: SacHyperparams
    key: jax.Array
    steps: jax.Array


class SAC(OffPolicyAgent):
    """Soft Actor-Critic with a learned (or fixed) temperature.

    A thin shell over pure functions, each jitted once: ``init``,
    ``select_action``, ``play_step``, ``update`` and ``train`` (see
    :class:`~ribsax.rl._off_policy.OffPolicyAgent`). The observation size is an
    argument of :meth:`init`, so inputs such as ``obs ⊕ skill`` work unchanged.

    Losses (per batch of transitions, ``d`` = dones, ``m = 1 - truncations``):

    * temperature: ``-log α · (log π(a|s) + H̄)``, ``H̄ = -0.5 · action_size``;
    * critics: ``0.5 · mean(m · (Q_i(s, a) - y)^2)`` summed over the twins, with
      ``y = scale · r + γ (1 - d) (min_i Q̄_i(s', a') - α log π(a'|s'))``;
    * policy: ``mean(α log π(a|s) - min_i Q_i(s, a))`` with ``a ~ π(·|s)``;

    then the target critics move by ``tau``. Updates run in that order, each using
    the parameters the previous ones produced.

    Args:
        config: :class:`SacConfig`.
        action_size: Number of action dimensions (actions in ``[-1, 1]``).
    """

    def __init__(self, config: SacConfig, action_size: int):
        if not isinstance(config, SacConfig):
            raise TypeError(f"config must be a SacConfig, got {type(config).__name__}")
        check_positive_int("action_size", action_size)
        self.config = config
        self.action_size = action_size
        self.policy = GaussianPolicy(config.policy_hidden_layer_size, action_size)
        self.critic = QNetwork(config.critic_hidden_layer_size)
        self.target_entropy = -config.target_entropy_scale * action_size
        super().__init__()

    # -- pure functions (jitted by OffPolicyAgent) -----------------------------

    def _init(self, key: jax.Array, observation_size: int) -> SacState:
        cfg = self.config
        policy_params, critic_params, k_state = self._init_networks(key, observation_size)
        log_alpha = jnp.log(jnp.asarray(cfg.alpha_init, jnp.float32))
        lr = jnp.asarray(cfg.learning_rate, jnp.float32)
        return SacState(
            policy_params=policy_params,
            critic_params=critic_params,
            target_critic_params=critic_params,
            log_alpha=log_alpha,
            policy_opt_state=adam_init(policy_params),
            critic_opt_state=adam_init(critic_params),
            alpha_opt_state=adam_init(log_alpha),
            normalization=RunningMeanStd.init(observation_size),
            hyperparams=SacHyperparams(
                policy_learning_rate=lr,
                critic_learning_rate=lr,
                alpha_learning_rate=lr,
                discount=jnp.asarray(cfg.discount, jnp.float32),
                reward_scaling=jnp.asarray(cfg.reward_scaling, jnp.float32),
            ),
            key=k_state,
            steps=jnp.zeros((), jnp.int32),
        )

    def _normalize(self, state: SacState, obs: jax.Array) -> jax.Array:
        if self.config.normalize_observations:
            return RunningMeanStd.normalize(state.normalization, obs)
        return obs

    def _dist(self, policy_params, obs: jax.Array) -> TanhNormal:
        return TanhNormal(*self.policy.apply(policy_params, obs))

    def _select_action(
        self, state: SacState, obs: jax.Array, key: jax.Array, deterministic: bool = False
    ) -> jax.Array:
        dist = self._dist(state.policy_params, self._normalize(state, obs))
        return dist.mode() if deterministic else dist.sample(key)

    def _observe(self, state: SacState, obs: jax.Array) -> SacState:
        if not self.config.normalize_observations:
            return state
        return state._replace(normalization=RunningMeanStd.update(state.normalization, obs))

    def alpha_loss(self, log_alpha, log_prob):
        """Temperature loss for the batch's policy log-probabilities."""
        return -jnp.mean(log_alpha * jax.lax.stop_gradient(log_prob + self.target_entropy))

    def critic_loss(
        self, critic_params, state: SacState, alpha, obs, next_obs, transitions: Transition, key
    ):
        """Twin-critic soft Bellman loss (see the class docstring)."""
        hp = state.hyperparams
        next_actions, next_log_prob = self._dist(state.policy_params, next_obs).sample_and_log_prob(
            key
        )
        next_q = self.critic.apply(state.target_critic_params, next_obs, next_actions)
        next_v = jnp.min(next_q, axis=-1) - alpha * next_log_prob
        target = (
            hp.reward_scaling * transitions.rewards
            + (1.0 - transitions.dones) * hp.discount * next_v
        )
        target = jax.lax.stop_gradient(target)
        q = self.critic.apply(critic_params, obs, transitions.actions)
        error = (q - target[..., None]) * (1.0 - transitions.truncations)[..., None]
        return 0.5 * jnp.sum(jnp.mean(jnp.square(error), axis=tuple(range(error.ndim - 1))))

    def policy_loss(self, policy_params, critic_params, alpha, obs, key):
        """``mean(α log π(a|s) - min_i Q_i(s, a))`` with reparameterised actions."""
        actions, log_prob = self._dist(policy_params, obs).sample_and_log_prob(key)
        q = self.critic.apply(critic_params, obs, actions)
        return jnp.mean(alpha * log_prob - jnp.min(q, axis=-1)), log_prob

    def _update(
        self, state: SacState, transitions: Transition, key: jax.Array
    ) -> tuple[SacState, dict]:
        hp = state.hyperparams
        k_alpha, k_critic, k_policy = jax.random.split(key, 3)
        obs = self._normalize(state, transitions.obs)
        next_obs = self._normalize(state, transitions.next_obs)

        # 1. Temperature, from the current policy's log-probabilities.
        _, log_prob = self._dist(state.policy_params, obs).sample_and_log_prob(k_alpha)
        if self.config.fix_alpha:
            log_alpha, alpha_opt_state = state.log_alpha, state.alpha_opt_state
            alpha_loss = jnp.zeros(())
        else:
            alpha_loss, grad = jax.value_and_grad(self.alpha_loss)(state.log_alpha, log_prob)
            log_alpha, alpha_opt_state = adam_step(
                state.log_alpha, grad, state.alpha_opt_state, hp.alpha_learning_rate
            )
        alpha = jnp.exp(log_alpha)

        # 2. Critics, towards the soft Bellman target of the target critics.
        critic_loss, grad = jax.value_and_grad(self.critic_loss)(
            state.critic_params, state, alpha, obs, next_obs, transitions, k_critic
        )
        critic_params, critic_opt_state = adam_step(
            state.critic_params, grad, state.critic_opt_state, hp.critic_learning_rate
        )

        # 3. Policy, against the updated critics.
        (policy_loss, _), grad = jax.value_and_grad(self.policy_loss, has_aux=True)(
            state.policy_params, critic_params, alpha, obs, k_policy
        )
        policy_params, policy_opt_state = adam_step(
            state.policy_params, grad, state.policy_opt_state, hp.policy_learning_rate
        )

        # 4. Target critics.
        target = soft_update(state.target_critic_params, critic_params, self.config.tau)
        new_state = state._replace(
            policy_params=policy_params,
            critic_params=critic_params,
            target_critic_params=target,
            log_alpha=log_alpha,
            policy_opt_state=policy_opt_state,
            critic_opt_state=critic_opt_state,
            alpha_opt_state=alpha_opt_state,
            steps=state.steps + 1,
        )
        metrics = {
            "policy_loss": policy_loss,
            "critic_loss": critic_loss,
            "alpha_loss": alpha_loss,
            "alpha": alpha,
        }
        return new_state, metrics
