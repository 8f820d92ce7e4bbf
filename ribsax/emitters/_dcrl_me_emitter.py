"""DCRL-ME: MAP-Elites with a descriptor-conditioned critic and actor (Faldor et
al. 2024, "Synergizing Quality-Diversity with Descriptor-Conditioned
Reinforcement Learning"), and its predecessor DCG-ME (Faldor et al. 2023).

The emitter is written against the public emitter protocol
(:class:`~ribsax.emitters.EmitterKernel`), beside PGA-ME's
(:mod:`ribsax.emitters._pgame_emitter`): the critics, the conditioned actor, the
optimizers and the replay buffer are one state pytree, ask and tell are pure
functions, and :class:`DCRLMEEmitter` is the :class:`~ribsax.emitters.JaxEmitter`
around the kernel.

A descriptor-conditioned TD3 is plain TD3 on observations augmented with the
conditioning descriptor: the kernel feeds :class:`ribsax.rl.TD3` minibatches whose
``obs`` and ``next_obs`` are ``[s, d']`` and whose rewards are already scaled by
the descriptor kernel, and the conditioned actor is the task's policy network
with ``obs_dim + measure_dim`` inputs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.archives._kernels import sample_occupied
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._jax_emitter import JaxEmitter
from ribsax.emitters._policy_gradient import buffer_transitions, kernel_td3, train_td3
from ribsax.emitters.operators._kernels import iso_line_variation
from ribsax.rl._optim import adam_init, adam_step
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._td3 import TD3, TD3State
from ribsax.rl._transition import Transition

__all__ = ["DCRLMEKernel", "DCRLMEState", "DCRLMEEmitter", "descriptor_reward"]


def descriptor_reward(rewards, desc, desc_prime, lengthscale):
    """Rewards relabelled for the conditioning descriptor: ``r * exp(-||desc -
    desc_prime||_2 / lengthscale)``.

    A transition of an episode that reached ``desc`` keeps its reward when the
    critic is conditioned on that descriptor, and is worth less the farther
    ``desc_prime`` is from it. The rewards must be non-negative for this to
    make sense (a negative reward would look *better* under a mismatched
    descriptor).

    Args:
        rewards: ``[...]`` rewards.
        desc: ``[..., measure_dim]`` descriptors the episodes reached
            (normalised).
        desc_prime: ``[..., measure_dim]`` conditioning descriptors (normalised).
        lengthscale: Length scale of the kernel.

    Returns:
        ``[...]`` scaled rewards.
    """
    distance = jnp.linalg.norm(desc - desc_prime, axis=-1)
    return rewards * jnp.exp(-distance / lengthscale)


class _Item(NamedTuple):
    """One replay-buffer item: a transition with the normalised descriptor its
    episode reached (``desc``) and the one its policy was meant to reach
    (``desc_prime``)."""

    transition: Transition
    desc: jax.Array
    desc_prime: jax.Array


class DCRLMEState(NamedTuple):
    """State of :class:`DCRLMEKernel`.

    Attributes:
        td3: :class:`~ribsax.rl.TD3State`: the twin descriptor-conditioned
            critics, the conditioned actor (``policy_params``, a network of
            ``obs_dim + measure_dim`` inputs), their targets and Adam states.
        buffer: The replay buffer's state (items: transitions with ``desc`` and
            ``desc_prime``).
        critic_loss: Mean critic loss of the last tell's training steps (NaN
            before the first training step).
        actor_loss: Mean conditioned-actor loss of the same steps (actor steps
            only).
        evaluations: Actor evaluations made by the emitter itself (DCG-ME's
            ``actor_evaluations`` per tell; 0 for DCRL-ME).
    """

    td3: TD3State
    buffer: Any
    critic_loss: jax.Array
    actor_loss: jax.Array
    evaluations: jax.Array


def _check_int(name, value, allow_zero=True):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < (0 if allow_zero else 1):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be {kind}, got {value}")


def _check_float(name, value, *, positive=False, signed=False):
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or (not signed and value < 0) or (positive and value == 0):
        kind = "finite" if signed else "positive" if positive else "non-negative"
        raise ValueError(f"{name} must be {kind}{'' if signed else ' and finite'}, got {value}")


@dataclasses.dataclass(frozen=True)
class DCRLMEKernel(EmitterKernel):
    """DCRL-ME (and DCG-ME) as an :class:`~ribsax.emitters.EmitterKernel` (see
    :class:`DCRLMEEmitter` for the algorithm and the arguments).

    Attributes:
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (solutions are
            its flat parameters).
        measure_ranges: ``((low, high), ...)`` per measure: descriptors are
            normalised to ``[-1, 1]`` with them.
        ga_batch_size, pg_batch_size, ai_batch_size, lengthscale, iso_sigma,
        line_sigma, num_critic_training_steps, num_pg_training_steps,
        replay_buffer_size, critic_hidden_layer_size, critic_learning_rate,
        actor_learning_rate, policy_learning_rate, noise_clip, policy_noise,
        discount, reward_scaling, training_batch_size, soft_tau_update,
        policy_delay, reward_offset, clip_rewards, actor_evaluations,
        descriptor_sigma, evaluate: As in :class:`DCRLMEEmitter`.
    """

    policy: Any
    measure_ranges: tuple[tuple[float, float], ...]
    ga_batch_size: int = 128
    pg_batch_size: int = 64
    ai_batch_size: int = 64
    lengthscale: float = 0.1
    iso_sigma: float = 0.005
    line_sigma: float = 0.05
    num_critic_training_steps: int = 3000
    num_pg_training_steps: int = 150
    replay_buffer_size: int = 1_000_000
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    critic_learning_rate: float = 3e-4
    actor_learning_rate: float = 3e-4
    policy_learning_rate: float = 1e-3
    noise_clip: float = 0.5
    policy_noise: float = 0.2
    discount: float = 0.99
    reward_scaling: float = 1.0
    training_batch_size: int = 100
    soft_tau_update: float = 0.005
    policy_delay: int = 2
    reward_offset: float = 0.0
    clip_rewards: bool = True
    actor_evaluations: int = 0
    descriptor_sigma: float = 0.0004
    evaluate: Callable[..., Any] | None = None

    def __post_init__(self):
        for attr in (
            "apply_tree",
            "unravel",
            "ravel",
            "init_batch",
            "module",
            "obs_dim",
            "hidden_layer_sizes",
        ):
            if not hasattr(self.policy, attr):
                raise TypeError(
                    "policy must be a ribsax.tasks.brax.MLPPolicy (a "
                    "task's .policy), got "
                    f"{type(self.policy).__name__}"
                )
        try:
            ranges = tuple((float(lo), float(hi)) for lo, hi in self.measure_ranges)
        except (TypeError, ValueError):
            raise ValueError(
                "measure_ranges must be a sequence of (low, high) "
                f"pairs, got {self.measure_ranges!r}"
            ) from None
        if not ranges or not all(
            math.isfinite(lo) and math.isfinite(hi) and lo < hi for lo, hi in ranges
        ):
            raise ValueError(
                "measure_ranges must be a non-empty sequence of finite "
                f"(low, high) pairs with low < high, got {ranges}"
            )
        object.__setattr__(self, "measure_ranges", ranges)
        for name in (
            "ga_batch_size",
            "pg_batch_size",
            "ai_batch_size",
            "num_critic_training_steps",
            "num_pg_training_steps",
            "actor_evaluations",
        ):
            _check_int(name, getattr(self, name))
        for name in ("replay_buffer_size", "training_batch_size", "policy_delay"):
            _check_int(name, getattr(self, name), allow_zero=False)
        if self.batch_size == 0:
            raise ValueError(
                "ga_batch_size + pg_batch_size + ai_batch_size must be "
                "positive (the emitter asks that many solutions), got 0"
            )
        if self.training_batch_size > self.replay_buffer_size:
            raise ValueError(
                f"training_batch_size ({self.training_batch_size}) must "
                "not exceed replay_buffer_size "
                f"({self.replay_buffer_size})"
            )
        _check_float("lengthscale", self.lengthscale, positive=True)
        for name in (
            "iso_sigma",
            "line_sigma",
            "critic_learning_rate",
            "actor_learning_rate",
            "policy_learning_rate",
            "noise_clip",
            "policy_noise",
            "discount",
            "reward_scaling",
            "descriptor_sigma",
        ):
            _check_float(name, getattr(self, name))
        _check_float("reward_offset", self.reward_offset, signed=True)
        if not 0.0 <= self.soft_tau_update <= 1.0:
            raise ValueError(f"soft_tau_update must be in [0, 1], got {self.soft_tau_update!r}")
        if not isinstance(self.clip_rewards, (bool, np.bool_)):
            raise TypeError(f"clip_rewards must be a bool, got {type(self.clip_rewards).__name__}")
        if self.actor_evaluations and not callable(self.evaluate):
            raise ValueError(
                "actor_evaluations > 0 (DCG-ME) needs evaluate, the task's "
                "evaluate(solutions, key) -> (objective, measures, extras) with "
                "the episodes' transitions, got "
                f"{type(self.evaluate).__name__}"
            )
        object.__setattr__(self, "critic_hidden_layer_size", tuple(self.critic_hidden_layer_size))
        _ = self.td3

    # ------------------------------------------------------------ derived
    @property
    def batch_size(self) -> int:
        """Solutions per ask: ``ga_batch_size + pg_batch_size + ai_batch_size``."""
        return self.ga_batch_size + self.pg_batch_size + self.ai_batch_size

    @property
    def measure_dim(self) -> int:
        """Length of the conditioning descriptor."""
        return len(self.measure_ranges)

    @property
    def evaluations_per_tell(self) -> int:
        """``actor_evaluations``: the actor policies each tell evaluates."""
        return self.actor_evaluations

    @functools.cached_property
    def td3(self) -> TD3:
        """The :class:`~ribsax.rl.TD3` on descriptor-augmented observations
        (its actor is the task's policy network, with ``obs_dim + measure_dim``
        inputs)."""
        return kernel_td3(self, self.actor_learning_rate)

    @functools.cached_property
    def buffer(self) -> ReplayBuffer:
        """The :class:`~ribsax.rl.ReplayBuffer` (sizes only)."""
        return ReplayBuffer(max_size=self.replay_buffer_size, sample_size=self.training_batch_size)

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        del archive
        obs_dim, nd = self.policy.obs_dim, self.measure_dim
        td3_state = self.td3.init(key, observation_size=obs_dim + nd)
        example = _Item(
            Transition.zeros(obs_dim, self.policy.action_dim),
            jnp.zeros((nd,), jnp.float32),
            jnp.zeros((nd,), jnp.float32),
        )
        nan = jnp.full((), jnp.nan, jnp.float32)
        return DCRLMEState(
            td3=td3_state,
            buffer=self.buffer.init(example),
            critic_loss=nan,
            actor_loss=nan,
            evaluations=jnp.zeros((), jnp.int32),
        )

    def ask(self, state, archive, key):
        """GA, then PG, then AI offspring, and ``ask_info["desc_prime"]``: the
        normalised descriptor each PG/AI row is meant to reach (NaN for GA rows
        and for the fresh policies of an empty archive)."""
        if archive.measures is None:
            raise ValueError(
                "DCRLMEEmitter needs the archive's measures (its device view carries none)"
            )
        k_ga, k_pg_cells, k_pg, k_ai, k_fresh = jax.random.split(key, 5)
        dtype = archive.solution.dtype

        def nan_desc(n):
            return jnp.full((n, self.measure_dim), jnp.nan, jnp.float32)

        parts, desc_prime = [], []
        if self.ga_batch_size:
            k_select, k_vary = jax.random.split(k_ga)
            parents = self.sample_parents(k_select, archive, 2 * self.ga_batch_size)
            parents = parents.reshape((2, self.ga_batch_size) + parents.shape[1:])
            parts.append(iso_line_variation(k_vary, parents, self.iso_sigma, self.line_sigma))
            desc_prime.append(nan_desc(self.ga_batch_size))
        if self.pg_batch_size:
            cells = sample_occupied(k_pg_cells, archive, self.pg_batch_size)
            parents = archive.solution[cells]
            d_hat = self.normalize(archive.measures[cells])
            trained = self._policy_gradient(state, parents, d_hat, k_pg)
            ready = self.buffer.size(state.buffer) > 0
            parts.append(jnp.where(ready, trained.astype(dtype), parents))
            desc_prime.append(d_hat)
        if self.ai_batch_size:
            cells = sample_occupied(k_ai, archive, self.ai_batch_size)
            d_hat = self.normalize(archive.measures[cells])
            parts.append(jax.vmap(self.fold, in_axes=(None, 0))(state.td3.policy_params, d_hat))
            desc_prime.append(d_hat)
        offspring = jnp.concatenate([p.astype(dtype) for p in parts])
        desc_prime = jnp.concatenate(desc_prime)
        # An empty archive has no parents: start from freshly initialised policies.
        nonempty = archive.n_occupied > 0
        fresh = self.policy.init_batch(k_fresh, self.batch_size, dtype)
        offspring = jnp.where(nonempty, offspring, fresh)
        desc_prime = jnp.where(nonempty, desc_prime, jnp.nan)
        return state, offspring, {"desc_prime": desc_prime}

    def tell(self, state, archive, key, feedback):
        """Stores the batch's transitions (and, for DCG-ME, the actor
        evaluations'), then trains the critics and the conditioned actor."""
        k_eval, k_train = jax.random.split(key)
        batch = feedback.batch
        transitions = batch["extras"].get("transitions")
        if transitions is None:
            raise ValueError(
                "DCRLMEEmitter learns from the evaluated episodes' transitions: "
                "create the task with return_transitions=True (e.g. "
                "ribsax.tasks.brax.create(..., return_transitions=True)); in the "
                "ask/tell loop pass them to Scheduler.tell(..., extras=extras)"
            )
        desc = self.normalize(batch["measures"])
        desc_prime = self.batch_desc_prime(feedback, desc)
        buffer_state = self._store(state.buffer, transitions, batch["valid"], desc, desc_prime)
        evaluations = state.evaluations
        if self.actor_evaluations:
            buffer_state = self._evaluate_actor(
                state.td3.policy_params, buffer_state, archive, k_eval
            )
            evaluations = evaluations + self.actor_evaluations
        td3_state, critic_loss, actor_loss = self._train(state.td3, buffer_state, k_train)
        return DCRLMEState(
            td3=td3_state,
            buffer=buffer_state,
            critic_loss=critic_loss,
            actor_loss=actor_loss,
            evaluations=evaluations,
        )

    def evaluations(self, state):
        """The actor evaluations made so far (``actor_evaluations`` per tell)."""
        return state.evaluations

    # ------------------------------------------------------------ pieces
    def normalize(self, measures):
        """Measures mapped to ``[-1, 1]`` with ``measure_ranges`` (float32)."""
        low, high = np.asarray(self.measure_ranges, np.float32).T
        measures = jnp.asarray(measures, jnp.float32)
        return 2.0 * (measures - low) / (high - low) - 1.0

    def transform_rewards(self, rewards):
        """The rewards the critics learn from: ``r + reward_offset``, clipped at 0
        when ``clip_rewards``."""
        rewards = rewards + jnp.asarray(self.reward_offset, rewards.dtype)
        return jnp.maximum(rewards, 0.0) if self.clip_rewards else rewards

    def fold(self, actor_params, d_hat):
        """The conditioned actor ``pi(. | d_hat)`` as flat parameters of the
        task's policy: first-layer kernel ``W[:obs_dim]`` and bias ``b + d_hat @
        W[obs_dim:]``, the other layers unchanged.

        Args:
            actor_params: The conditioned actor's flax parameters.
            d_hat: ``[measure_dim]`` normalised descriptor.
        """
        params = dict(actor_params["params"])
        layer = params["dense_0"]
        kernel, bias = layer["kernel"], layer["bias"]
        obs_dim = self.policy.obs_dim
        params["dense_0"] = {
            **layer,
            "kernel": kernel[:obs_dim],
            "bias": bias + d_hat.astype(kernel.dtype) @ kernel[obs_dim:],
        }
        return self.policy.ravel({**actor_params, "params": params})

    def conditioned_batch(self, items: _Item) -> Transition:
        """A TD3 minibatch from buffer items: observations augmented with
        ``desc_prime`` and rewards scaled by :func:`descriptor_reward`."""
        t = items.transition
        return t._replace(
            obs=jnp.concatenate([t.obs, items.desc_prime], axis=-1),
            next_obs=jnp.concatenate([t.next_obs, items.desc_prime], axis=-1),
            rewards=descriptor_reward(t.rewards, items.desc, items.desc_prime, self.lengthscale),
        )

    def _store(self, buffer_state, transitions, valid, desc, desc_prime):
        """Inserts the valid steps of the valid rows, each with its row's ``desc``
        and ``desc_prime`` repeated over time."""
        items, mask = buffer_transitions(transitions)
        mask &= valid.reshape(valid.shape + (1,) * (mask.ndim - 1))
        steps = mask.shape[1]
        items = items._replace(rewards=self.transform_rewards(items.rewards))
        repeat = lambda d: jnp.broadcast_to(  # noqa: E731
            d[:, None], (d.shape[0], steps, d.shape[1])
        )
        return self.buffer.insert(
            buffer_state, _Item(items, repeat(desc), repeat(desc_prime)), mask
        )

    def batch_desc_prime(self, feedback, desc):
        """``desc_prime`` of every row of the scheduler's batch: what this
        emitter's ask attached to its PG/AI rows, the observed ``desc`` for
        every other row (the emitter's rows are those where
        ``feedback.batch["own"]`` is True, in order).

        Args:
            feedback: The :class:`~ribsax.emitters.EmitterFeedback` of a tell
                (its ``ask_info``, ``measures`` and ``batch``).
            desc: ``[batch, measure_dim]`` normalised measures of the whole
                batch.

        Returns:
            ``[batch, measure_dim]`` conditioning descriptors.
        """
        own = self.normalize(feedback.measures)
        asked = feedback.ask_info["desc_prime"]
        own = jnp.where(jnp.isnan(asked), own, asked)
        mask = feedback.batch.get("own") if feedback.batch is not None else None
        if mask is None or own.shape[0] == desc.shape[0]:
            return own
        rows = jnp.nonzero(mask, size=own.shape[0], fill_value=desc.shape[0])[0]
        return desc.at[rows].set(own.astype(desc.dtype), mode="drop")

    def _policy_gradient(self, state, parents, d_hat, key):
        """``num_pg_training_steps`` Adam steps of each parent on ``-mean_s
        Q_1([s, d_hat], pi(s))`` with its own descriptor ``d_hat``, each parent
        with a fresh optimizer; every parent's step reads the same minibatch."""
        policy, td3 = self.policy, self.td3
        params = jax.vmap(policy.unravel)(parents)
        opt_states = jax.vmap(adam_init)(params)
        critic_params = state.td3.critic_params
        lr = jnp.asarray(self.policy_learning_rate, jnp.float32)

        def loss(params, d_hat, obs):
            actions = policy.apply_tree(params, obs)
            conditioned = jnp.concatenate(
                [obs, jnp.broadcast_to(d_hat, obs.shape[:-1] + d_hat.shape)], axis=-1
            )
            return -jnp.mean(td3.critic.apply(critic_params, conditioned, actions)[..., 0])

        grad = jax.vmap(jax.grad(loss), in_axes=(0, 0, None))

        def step(carry, k):
            params, opt_states = carry
            obs = self.buffer.sample(state.buffer, k).transition.obs
            grads = grad(params, d_hat, obs)
            params, opt_states = jax.vmap(adam_step, in_axes=(0, 0, 0, None))(
                params, grads, opt_states, lr
            )
            return (params, opt_states), None

        (params, _), _ = jax.lax.scan(
            step, (params, opt_states), jax.random.split(key, self.num_pg_training_steps)
        )
        return jax.vmap(policy.ravel)(params)

    def _evaluate_actor(self, actor_params, buffer_state, archive, key):
        """DCG-ME: evaluates ``pi(. | d')`` for ``actor_evaluations`` descriptors
        ``d' = d_elite + N(0, descriptor_sigma^2)`` (normalised) and stores their
        transitions with ``desc_prime = d'``."""
        k_cells, k_noise, k_eval = jax.random.split(key, 3)
        n = self.actor_evaluations
        cells = sample_occupied(k_cells, archive, n)
        d_hat = self.normalize(archive.measures[cells])
        d_hat = d_hat + self.descriptor_sigma * jax.random.normal(k_noise, d_hat.shape, d_hat.dtype)
        policies = jax.vmap(self.fold, in_axes=(None, 0))(actor_params, d_hat)
        out = self.evaluate(policies.astype(archive.solution.dtype), k_eval)
        objective, measures = jnp.asarray(out[0]), jnp.asarray(out[1]).reshape(n, -1)
        extras = out[2] if len(out) > 2 else {}
        if "transitions" not in extras:
            raise ValueError(
                "DCG-ME's actor evaluations need their episodes' transitions: "
                "evaluate must return extras['transitions'] (create the brax task "
                "with return_transitions=True)"
            )
        valid = (
            jnp.isfinite(objective)
            & jnp.all(jnp.isfinite(measures), axis=1)
            & (archive.n_occupied > 0)
        )
        return self._store(
            buffer_state, extras["transitions"], valid, self.normalize(measures), d_hat
        )

    def _train(self, td3_state, buffer_state, key):
        """``num_critic_training_steps`` TD3 updates on conditioned minibatches
        (critics every step, actor and targets every ``policy_delay``); none while
        the buffer is empty."""
        return train_td3(
            self.td3,
            self.buffer,
            buffer_state,
            td3_state,
            key,
            self.num_critic_training_steps,
            self.policy_delay,
            batch_fn=self.conditioned_batch,
        )


class DCRLMEEmitter(JaxEmitter):
    """DCRL-ME's emitter: genetic and descriptor-conditioned policy-gradient
    variation of elites, and policies injected from a descriptor-conditioned
    actor.

    Each :meth:`ask` returns ``ga_batch_size + pg_batch_size + ai_batch_size``
    policies (flat parameter vectors of the task's
    :class:`~ribsax.tasks.brax.MLPPolicy`), in this order:

    * ``ga_batch_size`` Iso+LineDD offspring (``x + iso_sigma·N(0, I) +
      line_sigma·N(0, 1)·(y - x)`` of two elites drawn uniformly);
    * ``pg_batch_size`` elites drawn uniformly, each with its stored descriptor
      ``d`` normalised to ``d̂ ∈ [-1, 1]`` by ``measure_ranges``, improved by
      ``num_pg_training_steps`` Adam steps (a fresh optimizer per offspring,
      step size ``policy_learning_rate``) on ``-mean_s Q_1([s, d̂], π(s))``, every
      offspring's step reading the same minibatch of ``training_batch_size``
      transitions (before any transition is stored, they stay the elites);
    * ``ai_batch_size`` actor injections: for descriptors ``d`` of elites drawn
      uniformly, the conditioned actor ``π_φ(· | d̂)`` folded into a policy of
      the task's shape (first-layer kernel ``W[:obs_dim]``, bias ``b + d̂ ·
      W[obs_dim:]``), which acts exactly as the actor conditioned on ``d̂``.

    The ask attaches to each row its intended descriptor ``desc_prime`` (``d̂``
    for PG and AI rows); while the archive is empty it returns freshly
    initialised policies instead.

    Each :meth:`tell` stores the transitions of *every* episode of the
    scheduler's batch (steps after an episode's end and rows whose evaluation was
    not finite left out) in one device-resident ring buffer, each with ``desc``,
    the descriptor its episode reached (its measures, normalised), and
    ``desc_prime``: the intended descriptor for this emitter's PG and AI rows, the
    reached one for every other row. The stored rewards are ``r +
    reward_offset``, clipped at 0 with ``clip_rewards``. Then it runs
    ``num_critic_training_steps`` TD3 updates (:class:`ribsax.rl.TD3` on
    observations ``[s, desc_prime]``: twin critics every step, the conditioned
    actor and the target networks every ``policy_delay``), each on a fresh
    minibatch whose rewards are relabelled ``r · exp(-||desc - desc_prime||_2 /
    lengthscale)`` (:func:`descriptor_reward`). The task must return its
    transitions: ``ribsax.tasks.brax.create(..., return_transitions=True)``; in the
    ask/tell loop pass the task's extras to :meth:`Scheduler.tell
    <ribsax.schedulers.Scheduler.tell>` (``extras=``).

    **Rewards must be non-negative**: the relabelling shrinks rewards towards 0
    for mismatched descriptors, which rewards mismatch when rewards are
    negative. The DCRL-ME paper's code clips every environment's reward at 0
    (adding 3.03 per step on ant_omni first); QDax's example wraps the
    environment in ``OffsetRewardWrapper(offset)`` with the task's per-step
    offset, then ``ClipRewardWrapper(clip_min=0)``. ribsax's brax tasks return
    raw rewards (their per-step offsets only enter ``qd_score_offset``), so the
    emitter applies ``reward_offset`` and the clip to the rewards its critics
    learn from: ``clip_rewards=True`` by default (the paper's clip); pass
    ``reward_offset=ribsax.tasks.brax.REWARD_OFFSETS[name]`` for QDax's
    example. The archive's objectives stay the task's returns: the paper's QD
    scores, sums of clipped rewards, need a task that clips its rewards.

    **DCG-ME** (the predecessor, no actor injection): ``ai_batch_size=0`` and
    ``actor_evaluations=n`` with ``evaluate``: each tell evaluates ``n`` folded
    actors ``π_φ(· | d̂ + N(0, descriptor_sigma²))`` for descriptors of elites
    drawn uniformly (after the batch was added), stores their transitions with
    ``desc_prime`` the noisy descriptor, and counts them in the run's
    evaluations (:attr:`evaluations`); they never enter the archive. The DCG-ME
    paper uses ``lengthscale=0.008`` and ``descriptor_sigma=0.0004`` on raw
    descriptors; here both apply to normalised descriptors (the DCRL repository's
    DCG-ME configuration uses ``lengthscale=0.1``).

    The defaults are QDax's ``DCRLMEConfig`` (``training_batch_size`` is its
    ``batch_size``, ``pg_batch_size`` its ``dcrl_batch_size``), with the
    Iso+LineDD scales of its example (0.005, 0.05). Like
    :class:`~ribsax.emitters.PGAMEEmitter`, TD3 here soft-updates the target
    critics with the delayed actor step, as in the TD3 paper (QDax updates them
    after every critic step).

    Args:
        archive: The archive (solutions: the policy's flat parameters; its device
            view must carry measures, as the built-in archives' do).
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (``task.policy``);
            the conditioned actor has its hidden layers and activations.
        ga_batch_size: Iso+LineDD offspring per ask.
        pg_batch_size: Descriptor-conditioned policy-gradient offspring per ask.
        ai_batch_size: Actor injections per ask.
        lengthscale: Length scale of the reward relabelling (normalised
            descriptors).
        iso_sigma: Isotropic noise scale of Iso+LineDD.
        line_sigma: Line noise scale of Iso+LineDD.
        num_critic_training_steps: TD3 updates per tell.
        num_pg_training_steps: Adam steps per policy-gradient offspring.
        replay_buffer_size: Transitions the buffer holds.
        critic_hidden_layer_size: Hidden widths of each critic.
        critic_learning_rate: Adam step size of the critics.
        actor_learning_rate: Adam step size of the conditioned actor.
        policy_learning_rate: Adam step size of the policy-gradient offspring.
        noise_clip: Bound of the target-policy smoothing noise.
        policy_noise: Standard deviation of the target-policy smoothing noise.
        discount: Discount factor.
        reward_scaling: Factor on rewards in the critic target.
        training_batch_size: Transitions per gradient step (critic, actor and
            policy-gradient offspring).
        soft_tau_update: Polyak rate of the target networks.
        policy_delay: Critic updates per actor (and target) update.
        reward_offset: Added to every stored reward (before the clip).
        clip_rewards: Clip stored rewards at 0 (after the offset).
        actor_evaluations: DCG-ME's actor evaluations per tell (0: none).
        descriptor_sigma: Standard deviation of the noise on the normalised
            descriptors of the actor evaluations.
        evaluate: The task's ``evaluate(solutions, key) -> (objective, measures,
            extras)`` returning transitions, JAX-traceable, or a
            :class:`ribsax.tasks.Task` (its ``evaluate`` is used); required with
            ``actor_evaluations``, unused otherwise. Pass the same function as
            the scheduler evaluates with.
        measure_ranges: ``((low, high), ...)`` to normalise descriptors with;
            None takes the archive's bounds (``lower_bounds``, ``upper_bounds``).
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: ``policy`` is not an MLP policy, or an argument has the wrong
            type.
        ValueError: A size is negative (``policy_delay``, ``replay_buffer_size``,
            ``training_batch_size``: not positive), the batch is empty,
            ``training_batch_size > replay_buffer_size``, ``lengthscale`` is not
            positive, a scale, rate or factor is negative or not finite,
            ``soft_tau_update`` is outside ``[0, 1]``, ``measure_ranges`` is
            invalid or does not match the archive's measures, the policy does not
            match the archive's ``solution_dim``, or ``actor_evaluations > 0``
            without ``evaluate`` (or with a task created without
            ``return_transitions``).
    """

    def __init__(
        self,
        archive,
        *,
        policy,
        ga_batch_size=128,
        pg_batch_size=64,
        ai_batch_size=64,
        lengthscale=0.1,
        iso_sigma=0.005,
        line_sigma=0.05,
        num_critic_training_steps=3000,
        num_pg_training_steps=150,
        replay_buffer_size=1_000_000,
        critic_hidden_layer_size=(256, 256),
        critic_learning_rate=3e-4,
        actor_learning_rate=3e-4,
        policy_learning_rate=1e-3,
        noise_clip=0.5,
        policy_noise=0.2,
        discount=0.99,
        reward_scaling=1.0,
        training_batch_size=100,
        soft_tau_update=0.005,
        policy_delay=2,
        reward_offset=0.0,
        clip_rewards=True,
        actor_evaluations=0,
        descriptor_sigma=0.0004,
        evaluate=None,
        measure_ranges=None,
        seed=None,
    ):
        if measure_ranges is None:
            if not (hasattr(archive, "lower_bounds") and hasattr(archive, "upper_bounds")):
                raise ValueError(
                    f"{type(archive).__name__} has no lower_bounds and "
                    "upper_bounds to normalise descriptors with: pass "
                    "measure_ranges"
                )
            measure_ranges = tuple(
                zip(
                    np.asarray(archive.lower_bounds).tolist(),
                    np.asarray(archive.upper_bounds).tolist(),
                )
            )
        elif len(measure_ranges) != archive.measure_dim:
            raise ValueError(
                f"measure_ranges has {len(measure_ranges)} ranges but "
                f"the archive has {archive.measure_dim} measures"
            )
        if actor_evaluations and getattr(evaluate, "return_transitions", None) is False:
            raise ValueError(
                "actor_evaluations needs the actor episodes' transitions, but "
                "evaluate is a task created without them: create it with "
                "return_transitions=True"
            )
        if not callable(evaluate) and callable(getattr(evaluate, "evaluate", None)):
            evaluate = evaluate.evaluate
        kernel = DCRLMEKernel(
            policy=policy,
            measure_ranges=measure_ranges,
            ga_batch_size=ga_batch_size,
            pg_batch_size=pg_batch_size,
            ai_batch_size=ai_batch_size,
            lengthscale=lengthscale,
            iso_sigma=iso_sigma,
            line_sigma=line_sigma,
            num_critic_training_steps=num_critic_training_steps,
            num_pg_training_steps=num_pg_training_steps,
            replay_buffer_size=replay_buffer_size,
            critic_hidden_layer_size=critic_hidden_layer_size,
            critic_learning_rate=critic_learning_rate,
            actor_learning_rate=actor_learning_rate,
            policy_learning_rate=policy_learning_rate,
            noise_clip=noise_clip,
            policy_noise=policy_noise,
            discount=discount,
            reward_scaling=reward_scaling,
            training_batch_size=training_batch_size,
            soft_tau_update=soft_tau_update,
            policy_delay=policy_delay,
            reward_offset=reward_offset,
            clip_rewards=clip_rewards,
            actor_evaluations=actor_evaluations,
            descriptor_sigma=descriptor_sigma,
            # Unused without actor evaluations: leaving it out keeps such kernels
            # equal (fusable) whatever a caller passes.
            evaluate=evaluate if actor_evaluations else None,
        )
        if policy.num_params != int(np.prod(archive.solution_dim)):
            raise ValueError(
                f"policy has {policy.num_params} parameters but the archive's "
                f"solution_dim is {archive.solution_dim}; pass the task's policy"
            )
        super().__init__(archive, kernel, seed=seed)

    def conditioned_policy(self, measures):
        """The conditioned actor ``π_φ(· | d)`` for descriptors ``measures``
        (raw, as the archive stores them) as solutions of the task's policy.

        Args:
            measures: ``[measure_dim]`` or ``[n, measure_dim]``.

        Returns:
            ``[num_params]`` or ``[n, num_params]`` flat parameters.
        """
        kernel = self.kernel
        measures = jnp.asarray(measures)
        d_hat = kernel.normalize(measures.reshape(-1, kernel.measure_dim))
        flat = jax.vmap(kernel.fold, in_axes=(None, 0))(self.kernel_state.td3.policy_params, d_hat)
        return flat[0] if measures.ndim == 1 else flat

    @property
    def critic_loss(self) -> float:
        """Mean critic loss of the last tell's training (NaN before any)."""
        return float(self.kernel_state.critic_loss)

    @property
    def buffer_size(self) -> int:
        """Transitions stored in the replay buffer."""
        return int(self.kernel.buffer.size(self.kernel_state.buffer))
