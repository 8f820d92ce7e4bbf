"""QDPG: Quality-Diversity Policy Gradient (Pierrot et al. 2022), as QDax runs it
inside MAP-Elites.

The emitter is written against the public emitter protocol
(:class:`~ribsax.emitters.EmitterKernel`): two TD3 learners (one on the task's
reward, one on a novelty reward), their shared replay buffer and the novelty
archive of state descriptors are one state pytree, its ask and tell are pure
functions, and :class:`QDPGEmitter` is the :class:`~ribsax.emitters.JaxEmitter`
around it. The TD3 pieces are :class:`ribsax.rl.TD3`'s and the buffer is
:class:`ribsax.rl.ReplayBuffer`, as in :class:`~ribsax.emitters.PGAMEEmitter`.
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

__all__ = [
    "QDPGKernel",
    "QDPGState",
    "QDPGEmitter",
    "novelty_reward",
    "insert_state_descriptors",
]

#: Candidates per chunk when measuring their distance to the novelty archive.
_CHUNK = 256


class QDPGState(NamedTuple):
    """State of :class:`QDPGKernel`.

    Attributes:
        quality: :class:`~ribsax.rl.TD3State` of the learner on the task's reward
            (twin critics, the quality greedy actor, targets, Adam states).
        diversity: :class:`~ribsax.rl.TD3State` of the learner on the novelty
            reward.
        buffer: The replay buffer's state, shared by both learners (every valid
            step of every evaluated episode, with its state descriptor).
        descriptors: ``[archive_max_size, desc_dim]`` the novelty archive's slots,
            filled in insertion order and then overwritten oldest first.
        inserted: int32, state descriptors inserted since init (the archive holds
            the last ``min(inserted, archive_max_size)`` of them).
        critic_loss: ``[2]`` mean critic loss of the last tell's training steps
            (quality, diversity; NaN without training).
        policy_loss: ``[2]`` mean greedy-actor loss of the same steps.
    """

    quality: TD3State
    diversity: TD3State
    buffer: Any
    descriptors: jax.Array
    inserted: jax.Array
    critic_loss: jax.Array
    policy_loss: jax.Array


def _square_distances(x, data):
    """``[n, m]`` squared Euclidean distances between the rows of ``x`` and
    ``data``."""
    return jnp.sum(jnp.square(x[:, None, :] - data[None, :, :]), axis=-1)


def novelty_reward(descriptors, inserted, state_descriptors, num_nearest_neighbors, scaling_ratio):
    """The novelty reward of state descriptors against a novelty archive.

    ``scaling_ratio`` times the mean squared Euclidean distance to the
    ``num_nearest_neighbors`` nearest stored descriptors (to all of them while the
    archive holds fewer; 0 while it is empty).

    Args:
        descriptors: ``[max_size, desc_dim]`` the archive's slots.
        inserted: Descriptors inserted so far (the first ``min(inserted,
            max_size)`` slots are filled).
        state_descriptors: ``[n, desc_dim]`` the descriptors to score.
        num_nearest_neighbors: ``k`` (static).
        scaling_ratio: Factor on the mean.

    Returns:
        ``[n]`` rewards.
    """
    max_size = descriptors.shape[0]
    stored = jnp.minimum(inserted, max_size)
    d2 = _square_distances(state_descriptors, descriptors)
    d2 = jnp.where(jnp.arange(max_size) < stored, d2, jnp.inf)
    k = min(num_nearest_neighbors, max_size)
    nearest = -jax.lax.top_k(-d2, k)[0]
    used = jnp.arange(k) < stored
    total = jnp.sum(jnp.where(used, nearest, 0.0), axis=-1)
    return scaling_ratio * total / jnp.maximum(jnp.minimum(stored, k), 1)


def insert_state_descriptors(descriptors, inserted, candidates, mask, threshold):
    """Inserts state descriptors into a novelty archive.

    The candidates are considered in order; one whose ``mask`` holds is inserted
    when it lies farther than ``threshold`` from every descriptor the archive held
    before this call and from every descriptor this call inserted before it (that
    the archive still holds). Each insertion writes the next slot, wrapping around
    once the archive is full (the oldest descriptor is overwritten).

    Args:
        descriptors: ``[max_size, desc_dim]`` the archive's slots.
        inserted: Descriptors inserted so far.
        candidates: ``[n, desc_dim]`` state descriptors.
        mask: ``[n]`` bool, the candidates to consider.
        threshold: Acceptance distance.

    Returns:
        ``(descriptors, inserted)`` after the insertions.
    """
    max_size = descriptors.shape[0]
    candidates = candidates.astype(descriptors.dtype)
    stored = jnp.minimum(inserted, max_size)
    threshold2 = jnp.square(jnp.asarray(threshold, descriptors.dtype))
    filled = jnp.arange(max_size) < stored

    def nearest(x):
        return jnp.min(jnp.where(filled, _square_distances(x[None], descriptors)[0], jnp.inf))

    before = jax.lax.map(nearest, candidates, batch_size=_CHUNK)
    eligible = mask & (before > threshold2)
    count = jnp.sum(eligible)
    order = jnp.nonzero(eligible, size=eligible.shape[0], fill_value=0)[0]
    start = inserted % max_size
    slots = jnp.arange(max_size)

    def body(carry):
        i, descriptors, added = carry
        x = candidates[order[i]]
        d2 = jnp.sum(jnp.square(descriptors - x), axis=-1)
        fresh = (slots - start) % max_size < added
        accept = jnp.all(jnp.where(fresh, d2 > threshold2, True))
        slot = (start + added) % max_size
        descriptors = descriptors.at[slot].set(jnp.where(accept, x, descriptors[slot]))
        return i + 1, descriptors, added + accept.astype(added.dtype)

    _, descriptors, added = jax.lax.while_loop(
        lambda carry: carry[0] < count,
        body,
        (jnp.zeros((), jnp.int32), descriptors, jnp.zeros((), jnp.int32)),
    )
    return descriptors, (inserted + added).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class QDPGKernel(EmitterKernel):
    """QDPG as an :class:`~ribsax.emitters.EmitterKernel` (see
    :class:`QDPGEmitter` for the algorithm and the arguments).

    Attributes:
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (solutions are its
            flat parameters).
        quality_batch_size, diversity_batch_size, ga_batch_size, iso_sigma,
        line_sigma, num_quality_critic_training_steps,
        num_diversity_critic_training_steps, num_pg_training_steps,
        replay_buffer_size, critic_hidden_layer_size, critic_learning_rate,
        greedy_learning_rate, policy_learning_rate, noise_clip, policy_noise,
        discount, reward_scaling, training_batch_size, soft_tau_update,
        policy_delay, num_nearest_neighbors, novelty_scaling_ratio,
        archive_acceptance_threshold, archive_max_size: As in
            :class:`QDPGEmitter`.
    """

    policy: Any
    quality_batch_size: int = 34
    diversity_batch_size: int = 33
    ga_batch_size: int = 33
    iso_sigma: float = 0.005
    line_sigma: float = 0.05
    num_quality_critic_training_steps: int = 300
    num_diversity_critic_training_steps: int = 300
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
    num_nearest_neighbors: int = 5
    novelty_scaling_ratio: float = 1.0
    archive_acceptance_threshold: float = 0.1
    archive_max_size: int = 10_000

    def __post_init__(self):
        check_policy(self.policy)
        for name in ("quality_batch_size", "diversity_batch_size", "ga_batch_size"):
            positive_int(name, getattr(self, name), allow_zero=True)
        if self.batch_size == 0:
            raise ValueError(
                "quality_batch_size + diversity_batch_size + ga_batch_size must be positive, got 0"
            )
        for name in (
            "num_quality_critic_training_steps",
            "num_diversity_critic_training_steps",
            "num_pg_training_steps",
        ):
            positive_int(name, getattr(self, name), allow_zero=True)
        for name in (
            "replay_buffer_size",
            "training_batch_size",
            "num_nearest_neighbors",
            "archive_max_size",
        ):
            positive_int(name, getattr(self, name))
        for name in (
            "iso_sigma",
            "line_sigma",
            "critic_learning_rate",
            "greedy_learning_rate",
            "policy_learning_rate",
            "novelty_scaling_ratio",
            "archive_acceptance_threshold",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        object.__setattr__(self, "critic_hidden_layer_size", tuple(self.critic_hidden_layer_size))
        # TD3Config checks its own fields (policy_delay, soft_tau_update, noises)
        # and ReplayBuffer its sizes.
        _ = self.td3, self.buffer

    # ------------------------------------------------------------ derived
    @property
    def batch_size(self) -> int:
        """Policies per ask."""
        return self.quality_batch_size + self.diversity_batch_size + self.ga_batch_size

    @functools.cached_property
    def td3(self) -> TD3:
        """The :class:`~ribsax.rl.TD3` of both learners (their actor is the task's
        policy network); each has its own :class:`~ribsax.rl.TD3State`."""
        return kernel_td3(self, self.greedy_learning_rate)

    @functools.cached_property
    def buffer(self) -> ReplayBuffer:
        """The shared :class:`~ribsax.rl.ReplayBuffer` (sizes only)."""
        return ReplayBuffer(max_size=self.replay_buffer_size, sample_size=self.training_batch_size)

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        desc_dim = archive.measures.shape[-1]
        obs_dim = self.policy.obs_dim
        k_quality, k_diversity = jax.random.split(key)
        item = Transition.zeros(obs_dim, self.policy.action_dim)
        item = item._replace(next_state_desc=jnp.zeros((desc_dim,), jnp.float32))
        nan = jnp.full((2,), jnp.nan, jnp.float32)
        return QDPGState(
            quality=self.td3.init(k_quality, observation_size=obs_dim),
            diversity=self.td3.init(k_diversity, observation_size=obs_dim),
            buffer=self.buffer.init(item),
            descriptors=jnp.zeros((self.archive_max_size, desc_dim), jnp.float32),
            inserted=jnp.zeros((), jnp.int32),
            critic_loss=nan,
            policy_loss=nan,
        )

    def ask(self, state, archive, key):
        keys = jax.random.split(key, 6)
        dtype = archive.solution.dtype
        ready = self.buffer.size(state.buffer) > 0
        parts = []
        for learner, size, k_parents, k_pg in (
            (state.quality, self.quality_batch_size, keys[0], keys[1]),
            (state.diversity, self.diversity_batch_size, keys[2], keys[3]),
        ):
            if size > 1:
                parents = self.sample_parents(k_parents, archive, size - 1)
                trained = policy_gradient(
                    self.td3,
                    self.policy,
                    self.buffer,
                    state.buffer,
                    learner.critic_params,
                    parents,
                    k_pg,
                    self.num_pg_training_steps,
                    self.policy_learning_rate,
                )
                parts.append(jnp.where(ready, trained.astype(dtype), parents))
            if size:
                parts.append(self.policy.ravel(learner.policy_params)[None])
        if self.ga_batch_size:
            k_select, k_vary = jax.random.split(keys[4])
            parents = self.sample_parents(k_select, archive, 2 * self.ga_batch_size)
            parents = parents.reshape((2, self.ga_batch_size) + parents.shape[1:])
            parts.append(iso_line_variation(k_vary, parents, self.iso_sigma, self.line_sigma))
        offspring = jnp.concatenate([p.astype(dtype) for p in parts])
        # An empty archive has no parents: start from freshly initialised policies.
        fresh = self.policy.init_batch(keys[5], self.batch_size, dtype)
        return state, jnp.where(archive.n_occupied > 0, offspring, fresh)

    def tell(self, state, archive, key, feedback):
        del archive
        transitions = feedback.batch["extras"].get("transitions")
        if transitions is None:
            raise ValueError(
                "QDPGEmitter learns from the evaluated episodes' transitions: "
                "create the task with return_transitions=True (e.g. "
                "ribsax.tasks.brax.create(..., return_transitions=True)); in the "
                "ask/tell loop pass them to Scheduler.tell(..., extras=extras)"
            )
        items, mask = buffer_transitions(transitions, state_descriptors=True)
        desc_dim = state.descriptors.shape[-1]
        if items.next_state_desc.shape[-1] != desc_dim:
            raise ValueError(
                "QDPGEmitter's novelty archive holds state descriptors of the "
                f"archive's measure dimension {desc_dim}; the transitions' "
                f"state_desc has {items.next_state_desc.shape[-1]} entries"
            )
        valid = feedback.batch["valid"]
        mask &= valid.reshape(valid.shape + (1,) * (mask.ndim - 1))
        buffer_state = self.buffer.insert(state.buffer, items, mask)
        descriptors, inserted = insert_state_descriptors(
            state.descriptors,
            state.inserted,
            items.next_state_desc.reshape(-1, desc_dim),
            mask.reshape(-1),
            self.archive_acceptance_threshold,
        )

        def rewards(batch):
            return novelty_reward(
                descriptors,
                inserted,
                batch.next_state_desc,
                self.num_nearest_neighbors,
                self.novelty_scaling_ratio,
            )

        k_quality, k_diversity = jax.random.split(key)
        quality, q_critic, q_policy = train_td3(
            self.td3,
            self.buffer,
            buffer_state,
            state.quality,
            k_quality,
            self.num_quality_critic_training_steps,
            self.policy_delay,
        )
        diversity, d_critic, d_policy = train_td3(
            self.td3,
            self.buffer,
            buffer_state,
            state.diversity,
            k_diversity,
            self.num_diversity_critic_training_steps,
            self.policy_delay,
            batch_fn=lambda batch: batch._replace(
                rewards=rewards(batch).astype(batch.rewards.dtype)
            ),
        )
        return QDPGState(
            quality=quality,
            diversity=diversity,
            buffer=buffer_state,
            descriptors=descriptors,
            inserted=inserted,
            critic_loss=jnp.stack([q_critic, d_critic]),
            policy_loss=jnp.stack([q_policy, d_policy]),
        )


class QDPGEmitter(JaxEmitter):
    """QDPG's emitter (Quality-Diversity Policy Gradient): genetic variation and
    two kinds of policy-gradient variation of archive elites, one following the
    task's reward and one a novelty reward.

    Each :meth:`ask` returns ``quality_batch_size + diversity_batch_size +
    ga_batch_size`` policies (flat parameter vectors of the task's
    :class:`~ribsax.tasks.brax.MLPPolicy`), in this order:

    * ``quality_batch_size - 1`` elites drawn uniformly, each improved by
      ``num_pg_training_steps`` Adam steps (a fresh optimizer per offspring, step
      size ``policy_learning_rate``) on the TD3 actor loss ``-mean_s Q_1(s,
      π(s))`` of the *quality* critics (trained on the task's reward), then the
      quality greedy actor;
    * ``diversity_batch_size - 1`` elites improved in the same way against the
      *diversity* critics (trained on the novelty reward), then the diversity
      greedy actor;
    * ``ga_batch_size`` Iso+LineDD offspring (``x + iso_sigma·N(0, I) +
      line_sigma·N(0, 1)·(y - x)`` of two elites drawn uniformly).

    Within a group every offspring's step reads the same minibatch of
    ``training_batch_size`` transitions; before any transition is stored, the
    policy-gradient offspring stay the elites. While the archive is empty, the
    ask returns freshly initialised policies instead.

    Each :meth:`tell` stores the transitions of *every* episode of the
    scheduler's batch (all emitters' rows; steps after an episode's end and rows
    whose evaluation was not finite left out), with each step's state descriptor
    (the task's per-step measure features of the state the step reached: feet
    contacts, or the torso's x, y), in **one** ring buffer of
    ``replay_buffer_size`` transitions that both learners sample. It offers the
    same steps' state descriptors to the *novelty archive*: in order, a
    descriptor is inserted when it lies farther than
    ``archive_acceptance_threshold`` from every descriptor the archive held
    before the tell and from every one inserted before it in this tell; the
    archive holds the last ``archive_max_size`` insertions. Then it runs
    ``num_quality_critic_training_steps`` TD3 updates (:class:`ribsax.rl.TD3`:
    twin critics every step, greedy actor and targets every ``policy_delay``) of
    the quality learner on the stored rewards, and
    ``num_diversity_critic_training_steps`` of the diversity learner, whose
    minibatches' rewards are replaced by the novelty reward of their state
    descriptors: ``novelty_scaling_ratio`` times the mean squared distance to
    the ``num_nearest_neighbors`` nearest descriptors of the novelty archive (to
    all of them while it holds fewer). Each learner has its own critics, targets
    and optimizers.

    The task must return its transitions:
    ``ribsax.tasks.brax.create(..., return_transitions=True)``; in the ask/tell
    loop pass the task's extras to :meth:`Scheduler.tell
    <ribsax.schedulers.Scheduler.tell>` (``extras=``).

    The defaults are the settings of QDax's QDPG example (walker2d_uni, QDax's
    ``QDPGEmitterConfig`` has no defaults): a 34/33/33 split, 300 critic steps
    for each learner, 100 policy-gradient steps of step size 1e-3, minibatches of
    256, and the novelty settings k = 5, scaling 1.0, threshold 0.1, 10,000
    descriptors. Differences from QDax: QDax keeps two identical replay buffers,
    one per learner; this emitter shares one. QDax scores the descriptor of the
    state a transition starts from; this emitter scores the state it reaches, so
    that the reward depends on the action. QDax's novelty archive counts its
    empty slots as neighbours at the largest float distance, so while it holds
    fewer than ``num_nearest_neighbors`` descriptors its reward is about
    ``scaling · 3.4e38 / k`` for every state. And as in
    :class:`~ribsax.emitters.PGAMEEmitter`, TD3 soft-updates the target critics
    with the delayed actor step (QDax: after every critic step).

    On the feet-contact tasks the per-step descriptors are binary contact
    vectors, so the novelty archive holds at most ``2 ** feet`` of them; once it
    holds all of them and ``num_nearest_neighbors`` is at least ``2 ** feet``
    (hopper_uni and walker2d_uni with the default 5), every state's novelty is
    ``novelty_scaling_ratio · feet / 2`` and the diversity critics learn a
    constant. The omni tasks' descriptors (x, y positions) have no such limit.

    Args:
        archive: The archive (solutions: the policy's flat parameters; its
            measure dimension is the state descriptors' size).
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (``task.policy``).
        quality_batch_size: Policies per ask from the quality learner (its
            greedy actor included; 0 for none).
        diversity_batch_size: Policies per ask from the diversity learner (its
            greedy actor included; 0 for none).
        ga_batch_size: Iso+LineDD offspring per ask.
        iso_sigma: Isotropic noise scale of Iso+LineDD.
        line_sigma: Line noise scale of Iso+LineDD.
        num_quality_critic_training_steps: TD3 updates of the quality learner
            per tell.
        num_diversity_critic_training_steps: TD3 updates of the diversity learner
            per tell.
        num_pg_training_steps: Adam steps per policy-gradient offspring.
        replay_buffer_size: Transitions the shared buffer holds.
        critic_hidden_layer_size: Hidden widths of each critic.
        critic_learning_rate: Adam step size of the critics.
        greedy_learning_rate: Adam step size of the greedy actors.
        policy_learning_rate: Adam step size of the policy-gradient offspring.
        noise_clip: Bound of the target-policy smoothing noise.
        policy_noise: Standard deviation of the target-policy smoothing noise.
        discount: Discount factor.
        reward_scaling: Factor on rewards (task and novelty) in the critic
            targets.
        training_batch_size: Transitions per gradient step (critics, greedy
            actors and policy-gradient offspring).
        soft_tau_update: Polyak rate of the target networks.
        policy_delay: Critic updates per greedy-actor (and target) update.
        num_nearest_neighbors: ``k`` of the novelty reward.
        novelty_scaling_ratio: Factor of the novelty reward.
        archive_acceptance_threshold: Distance beyond which a state descriptor
            enters the novelty archive.
        archive_max_size: State descriptors the novelty archive holds.
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: ``policy`` is not an MLP policy.
        ValueError: A size is not a (positive, or for the batch split and step
            counts non-negative) int, the batch is empty, a scale, step size or
            novelty setting is negative, or a TD3 or buffer setting is invalid.
    """

    def __init__(
        self,
        archive,
        *,
        policy,
        quality_batch_size=34,
        diversity_batch_size=33,
        ga_batch_size=33,
        iso_sigma=0.005,
        line_sigma=0.05,
        num_quality_critic_training_steps=300,
        num_diversity_critic_training_steps=300,
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
        num_nearest_neighbors=5,
        novelty_scaling_ratio=1.0,
        archive_acceptance_threshold=0.1,
        archive_max_size=10_000,
        seed=None,
    ):
        kernel = QDPGKernel(
            policy=policy,
            quality_batch_size=quality_batch_size,
            diversity_batch_size=diversity_batch_size,
            ga_batch_size=ga_batch_size,
            iso_sigma=iso_sigma,
            line_sigma=line_sigma,
            num_quality_critic_training_steps=num_quality_critic_training_steps,
            num_diversity_critic_training_steps=num_diversity_critic_training_steps,
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
            num_nearest_neighbors=num_nearest_neighbors,
            novelty_scaling_ratio=novelty_scaling_ratio,
            archive_acceptance_threshold=archive_acceptance_threshold,
            archive_max_size=archive_max_size,
        )
        super().__init__(archive, kernel, seed=seed)

    @property
    def quality_greedy_actor(self):
        """Flat parameters of the quality learner's greedy actor (a solution)."""
        return self.kernel.policy.ravel(self.kernel_state.quality.policy_params)

    @property
    def diversity_greedy_actor(self):
        """Flat parameters of the diversity learner's greedy actor."""
        return self.kernel.policy.ravel(self.kernel_state.diversity.policy_params)

    @property
    def critic_loss(self) -> float:
        """Mean critic loss of the quality learner in the last tell (NaN before
        any training)."""
        return float(self.kernel_state.critic_loss[0])

    @property
    def diversity_critic_loss(self) -> float:
        """Mean critic loss of the diversity learner in the last tell."""
        return float(self.kernel_state.critic_loss[1])

    @property
    def buffer_size(self) -> int:
        """Transitions stored in the shared replay buffer."""
        return int(self.kernel.buffer.size(self.kernel_state.buffer))

    @property
    def state_descriptors(self):
        """``[n, desc_dim]`` the state descriptors the novelty archive holds, in
        slot order."""
        state = self.kernel_state
        stored = min(int(state.inserted), self.kernel.archive_max_size)
        return jax.device_get(state.descriptors[:stored])
