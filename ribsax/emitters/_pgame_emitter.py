"""PGA-ME: MAP-Elites with policy-gradient variation (Nilsson & Cully 2021).

The emitter is written against the public emitter protocol
(:class:`~ribsax.emitters.EmitterKernel`): its critic, greedy actor, optimizers and
replay buffer are one state pytree, its ask and tell are pure functions, and
:class:`PGAMEEmitter` is the :class:`~ribsax.emitters.JaxEmitter` around it.
The TD3 pieces (twin critics, target smoothing, delayed actor) are
:class:`ribsax.rl.TD3`'s; the buffer is :class:`ribsax.rl.ReplayBuffer`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter
from ribsax.emitters._policy_gradient import (
    buffer_transitions,
    check_policy,
    kernel_td3,
    policy_gradient,
    positive_int,
    train_td3,
)
from ribsax.emitters.operators._kernels import iso_line_variation
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._td3 import TD3, TD3State
from ribsax.rl._transition import Transition

__all__ = ["PGAMEKernel", "PGAMEState", "PGAMEEmitter"]


class PGAMEState(NamedTuple):
    """State of :class:`PGAMEKernel`.

    Attributes:
        td3: :class:`~ribsax.rl.TD3State`: the twin critics, the greedy actor
            (``policy_params``), their targets and Adam states.
        buffer: The replay buffer's state (every valid step of every evaluated
            episode, the whole batch's).
        critic_loss: Mean critic loss of the last tell's training steps (NaN before
            the first training step).
        policy_loss: Mean greedy-actor loss of the same steps (actor steps only).
    """

    td3: TD3State
    buffer: Any
    critic_loss: jax.Array
    policy_loss: jax.Array


@dataclasses.dataclass(frozen=True)
class PGAMEKernel(EmitterKernel):
    """PGA-ME as an :class:`~ribsax.emitters.EmitterKernel` (see
    :class:`PGAMEEmitter` for the algorithm and the arguments).

    Attributes:
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (solutions are its
            flat parameters).
        batch_size, proportion_mutation_ga, iso_sigma, line_sigma,
        num_critic_training_steps, num_pg_training_steps, replay_buffer_size,
        critic_hidden_layer_size, critic_learning_rate, greedy_learning_rate,
        policy_learning_rate, noise_clip, policy_noise, discount, reward_scaling,
        training_batch_size, soft_tau_update, policy_delay: As in
            :class:`PGAMEEmitter`.
    """

    policy: Any
    batch_size: int = 100
    proportion_mutation_ga: float = 0.5
    iso_sigma: float = 0.005
    line_sigma: float = 0.05
    num_critic_training_steps: int = 300
    num_pg_training_steps: int = 100
    replay_buffer_size: int = 1_000_000
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    critic_learning_rate: float = 3e-4
    greedy_learning_rate: float = 3e-4
    policy_learning_rate: float = 1e-3
    noise_clip: float = 0.5
    policy_noise: float = 0.2
    discount: float = 0.99
    reward_scaling: float = 1.0
    training_batch_size: int = 256
    soft_tau_update: float = 0.005
    policy_delay: int = 2

    def __post_init__(self):
        check_policy(self.policy)
        positive_int("batch_size", self.batch_size)
        positive_int("num_critic_training_steps", self.num_critic_training_steps, allow_zero=True)
        positive_int("num_pg_training_steps", self.num_pg_training_steps, allow_zero=True)
        positive_int("replay_buffer_size", self.replay_buffer_size)
        positive_int("training_batch_size", self.training_batch_size)
        if not 0.0 <= self.proportion_mutation_ga <= 1.0:
            raise ValueError(
                f"proportion_mutation_ga must be in [0, 1], got {self.proportion_mutation_ga!r}"
            )
        for name in (
            "iso_sigma",
            "line_sigma",
            "critic_learning_rate",
            "greedy_learning_rate",
            "policy_learning_rate",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        object.__setattr__(self, "critic_hidden_layer_size", tuple(self.critic_hidden_layer_size))
        # TD3Config checks its own fields (policy_delay, soft_tau_update, noises).
        _ = self.td3

    # ------------------------------------------------------------ derived
    @property
    def ga_batch_size(self) -> int:
        """Offspring of the Iso+LineDD variation per ask."""
        return int(self.proportion_mutation_ga * self.batch_size)

    @property
    def pg_batch_size(self) -> int:
        """Offspring of the policy-gradient variation per ask, the greedy actor
        included."""
        return self.batch_size - self.ga_batch_size

    @functools.cached_property
    def td3(self) -> TD3:
        """The :class:`~ribsax.rl.TD3` whose critics and greedy actor the kernel
        trains (its actor is the task's policy network)."""
        return kernel_td3(self, self.greedy_learning_rate)

    @functools.cached_property
    def buffer(self) -> ReplayBuffer:
        """The :class:`~ribsax.rl.ReplayBuffer` (sizes only)."""
        return ReplayBuffer(max_size=self.replay_buffer_size, sample_size=self.training_batch_size)

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        del archive
        obs_dim = self.policy.obs_dim
        td3_state = self.td3.init(key, observation_size=obs_dim)
        nan = jnp.full((), jnp.nan, jnp.float32)
        return PGAMEState(
            td3=td3_state,
            buffer=self.buffer.init(Transition.zeros(obs_dim, self.policy.action_dim)),
            critic_loss=nan,
            policy_loss=nan,
        )

    def ask(self, state, archive, key):
        k_ga, k_pg_parents, k_pg, k_fresh = jax.random.split(key, 4)
        dtype = archive.solution.dtype
        parts = []
        if self.ga_batch_size:
            k_select, k_vary = jax.random.split(k_ga)
            parents = self.sample_parents(k_select, archive, 2 * self.ga_batch_size)
            parents = parents.reshape((2, self.ga_batch_size) + parents.shape[1:])
            parts.append(iso_line_variation(k_vary, parents, self.iso_sigma, self.line_sigma))
        if self.pg_batch_size > 1:
            parents = self.sample_parents(k_pg_parents, archive, self.pg_batch_size - 1)
            trained = self._policy_gradient(state, parents, k_pg)
            ready = self.buffer.size(state.buffer) > 0
            parts.append(jnp.where(ready, trained.astype(dtype), parents))
        if self.pg_batch_size:
            parts.append(self.policy.ravel(state.td3.policy_params)[None])
        offspring = jnp.concatenate([p.astype(dtype) for p in parts])
        # An empty archive has no parents: start from freshly initialised policies.
        fresh = self.policy.init_batch(k_fresh, self.batch_size, dtype)
        return state, jnp.where(archive.n_occupied > 0, offspring, fresh)

    def tell(self, state, archive, key, feedback):
        del archive
        transitions = feedback.batch["extras"].get("transitions")
        if transitions is None:
            raise ValueError(
                "PGAMEEmitter learns from the evaluated episodes' transitions: "
                "create the task with return_transitions=True (e.g. "
                "ribsax.tasks.brax.create(..., return_transitions=True)); in the "
                "ask/tell loop pass them to Scheduler.tell(..., extras=extras)"
            )
        items, mask = buffer_transitions(transitions)
        mask &= feedback.batch["valid"].reshape(
            feedback.batch["valid"].shape + (1,) * (mask.ndim - 1)
        )
        buffer_state = self.buffer.insert(state.buffer, items, mask)
        td3_state, critic_loss, policy_loss = self._train_critic(state.td3, buffer_state, key)
        return PGAMEState(
            td3=td3_state, buffer=buffer_state, critic_loss=critic_loss, policy_loss=policy_loss
        )

    # ------------------------------------------------------------ pieces
    def _policy_gradient(self, state, parents, key):
        """``num_pg_training_steps`` Adam steps of each parent on the TD3 actor
        loss against the first critic, each parent with a fresh optimizer; every
        parent's step reads the same minibatch."""
        return policy_gradient(
            self.td3,
            self.policy,
            self.buffer,
            state.buffer,
            state.td3.critic_params,
            parents,
            key,
            self.num_pg_training_steps,
            self.policy_learning_rate,
        )

    def _train_critic(self, td3_state, buffer_state, key):
        """``num_critic_training_steps`` TD3 updates (critic every step, greedy
        actor and targets every ``policy_delay``), each on a fresh minibatch; none
        while the buffer is empty."""
        return train_td3(
            self.td3,
            self.buffer,
            buffer_state,
            td3_state,
            key,
            self.num_critic_training_steps,
            self.policy_delay,
        )


class PGAMEEmitter(JaxEmitter):
    """PGA-ME's emitter: genetic and policy-gradient variation of archive elites,
    with twin critics trained on every evaluated episode.

    Each :meth:`ask` returns ``batch_size`` policies (flat parameter vectors of the
    task's :class:`~ribsax.tasks.brax.MLPPolicy`):

    * ``int(proportion_mutation_ga * batch_size)`` Iso+LineDD offspring
      (``x + iso_sigma·N(0, I) + line_sigma·N(0, 1)·(y - x)`` of two elites drawn
      uniformly);
    * the rest, but one, are elites drawn uniformly and each improved by
      ``num_pg_training_steps`` Adam steps (a fresh optimizer per offspring, step
      size ``policy_learning_rate``) on the TD3 actor loss ``-mean_s Q_1(s,
      π(s))``, every offspring's step reading the same minibatch of
      ``training_batch_size`` transitions (before any transition is stored, they
      stay the elites);
    * the last is the greedy actor, the policy TD3 trains against the critics.

    While the archive is empty, the ask returns freshly initialised policies
    instead (the task policy's initialiser).

    Each :meth:`tell` stores the transitions of *every* episode of the
    scheduler's batch (all emitters' rows, steps after an episode's end and rows
    whose evaluation was not finite left out) in one device-resident ring buffer
    of ``replay_buffer_size`` transitions, written in place at its pointer, then
    runs ``num_critic_training_steps`` TD3 updates (:class:`ribsax.rl.TD3`: twin
    critics every step, greedy actor and target networks every
    ``policy_delay``), each on a fresh minibatch. The task must return its
    transitions: ``ribsax.tasks.brax.create(..., return_transitions=True)``; in the
    ask/tell loop pass the task's extras to :meth:`Scheduler.tell
    <ribsax.schedulers.Scheduler.tell>` (``extras=``).

    The defaults are QDax's ``PGAMEConfig`` (``training_batch_size`` is its
    ``batch_size``, ``batch_size`` its ``env_batch_size``), with the Iso+LineDD
    scales of its example (0.005, 0.05). TD3 here soft-updates the target critics
    together with the delayed actor step, as in the TD3 paper; QDax updates them
    after every critic step.

    Args:
        archive: The archive (solutions: the policy's flat parameters).
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (``task.policy``).
        batch_size: Policies per ask.
        proportion_mutation_ga: Share of the batch made by Iso+LineDD.
        iso_sigma: Isotropic noise scale of Iso+LineDD.
        line_sigma: Line noise scale of Iso+LineDD.
        num_critic_training_steps: TD3 updates per tell.
        num_pg_training_steps: Adam steps per policy-gradient offspring.
        replay_buffer_size: Transitions the buffer holds.
        critic_hidden_layer_size: Hidden widths of each critic.
        critic_learning_rate: Adam step size of the critics.
        greedy_learning_rate: Adam step size of the greedy actor.
        policy_learning_rate: Adam step size of the policy-gradient offspring.
        noise_clip: Bound of the target-policy smoothing noise.
        policy_noise: Standard deviation of the target-policy smoothing noise.
        discount: Discount factor.
        reward_scaling: Factor on rewards in the critic target.
        training_batch_size: Transitions per gradient step (critic, greedy actor
            and policy-gradient offspring).
        soft_tau_update: Polyak rate of the target networks.
        policy_delay: Critic updates per greedy-actor (and target) update.
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: ``policy`` is not an MLP policy.
        ValueError: A size is not a positive int, ``proportion_mutation_ga`` is
            outside ``[0, 1]``, a scale or step size is negative, or a TD3 setting
            is invalid.
    """

    def __init__(
        self,
        archive,
        *,
        policy,
        batch_size=100,
        proportion_mutation_ga=0.5,
        iso_sigma=0.005,
        line_sigma=0.05,
        num_critic_training_steps=300,
        num_pg_training_steps=100,
        replay_buffer_size=1_000_000,
        critic_hidden_layer_size=(256, 256),
        critic_learning_rate=3e-4,
        greedy_learning_rate=3e-4,
        policy_learning_rate=1e-3,
        noise_clip=0.5,
        policy_noise=0.2,
        discount=0.99,
        reward_scaling=1.0,
        training_batch_size=256,
        soft_tau_update=0.005,
        policy_delay=2,
        seed=None,
    ):
        kernel = PGAMEKernel(
            policy=policy,
            batch_size=batch_size,
            proportion_mutation_ga=proportion_mutation_ga,
            iso_sigma=iso_sigma,
            line_sigma=line_sigma,
            num_critic_training_steps=num_critic_training_steps,
            num_pg_training_steps=num_pg_training_steps,
            replay_buffer_size=replay_buffer_size,
            critic_hidden_layer_size=critic_hidden_layer_size,
            critic_learning_rate=critic_learning_rate,
            greedy_learning_rate=greedy_learning_rate,
            policy_learning_rate=policy_learning_rate,
            noise_clip=noise_clip,
            policy_noise=policy_noise,
            discount=discount,
            reward_scaling=reward_scaling,
            training_batch_size=training_batch_size,
            soft_tau_update=soft_tau_update,
            policy_delay=policy_delay,
        )
        super().__init__(archive, kernel, seed=seed)

    @property
    def greedy_actor(self):
        """Flat parameters of the greedy actor (a solution)."""
        return self.kernel.policy.ravel(self.kernel_state.td3.policy_params)

    @property
    def critic_loss(self) -> float:
        """Mean critic loss of the last tell's training (NaN before any)."""
        return float(self.kernel_state.critic_loss)

    @property
    def buffer_size(self) -> int:
        """Transitions stored in the replay buffer."""
        return int(self.kernel.buffer.size(self.kernel_state.buffer))
