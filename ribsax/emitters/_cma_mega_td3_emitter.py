"""CMA-MEGA (TD3, ES): CMA-MEGA on policies with a TD3 critic's objective gradient
and OpenAI-ES measure gradients (Tjanaka et al. 2022, "Approximating gradients for
differentiable quality diversity in reinforcement learning").

The emitter is written against the public emitter protocol
(:class:`~ribsax.emitters.EmitterKernel`, with ``ask_dqd``/``tell_dqd``):
:class:`CMAMEGATD3Kernel` holds the task's ``evaluate`` (for the ES samples) and
the task's policy network as static configuration, and its state carries the
solution point, the coefficient CMA-ES, the Jacobian, the twin critics with the
greedy actor and the replay buffer. :class:`CMAMEGATD3Emitter` is the
:class:`~ribsax.emitters.JaxEmitter` around it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax._normal import mirrored
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._dqd_common import normalize_jacobian
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._gradient_arborescence_emitter import branch
from ribsax.emitters._jax_emitter import _JaxDQDEmitter
from ribsax.emitters._pgame_emitter import PGAMEKernel, PGAMEState
from ribsax.emitters._policy_gradient import buffer_transitions, positive_int
from ribsax.emitters.opt import _cma_es
from ribsax.emitters.opt._evolution_strategy_base import parent_weights, select_tree
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.tasks._es_gradient import centered_ranks
from ribsax.tasks._gradient_sources import zero_jacobian_fn

__all__ = ["CMAMEGATD3Kernel", "CMAMEGATD3State", "CMAMEGATD3Emitter"]

_TWO_STAGE_IMPROVEMENT = _rankers.RankerConfig(kind="TwoStageImprovementRanker")


class CMAMEGATD3State(NamedTuple):
    """State of :class:`CMAMEGATD3Kernel`.

    Attributes:
        rl: :class:`~ribsax.emitters.PGAMEState`: the TD3 state (twin critics,
            greedy actor, targets, Adam states), the replay buffer and the last
            training losses.
        cma: :class:`~ribsax.emitters.opt.CMAESState` of the coefficient CMA-ES
            (``1 + measure_dim`` dimensions; ``cma.solutions`` are the
            coefficients of the last ask's branches).
        theta: The solution point.
        jacobian: ``[1 + measure_dim, solution_dim]`` normalised gradients at the
            solution point from the last ``tell_dqd`` (objective row first).
        evaluations: ES samples evaluated so far.
        restarts: Restarts so far.
        greedy_objective: Objective of the greedy actor in the last tell (NaN
            before the first).
    """

    rl: PGAMEState
    cma: Any
    theta: jax.Array
    jacobian: jax.Array
    evaluations: jax.Array
    restarts: jax.Array
    greedy_objective: jax.Array


def _check_number(name, value, positive=True):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (value > 0 if positive else value >= 0) or value != value:
        raise ValueError(
            f"{name} must be {'positive' if positive else 'non-negative'}, got {value!r}"
        )


@dataclasses.dataclass(frozen=True)
class CMAMEGATD3Kernel(EmitterKernel):
    """CMA-MEGA (TD3, ES) as an :class:`~ribsax.emitters.EmitterKernel` (see
    :class:`CMAMEGATD3Emitter` for the algorithm and the arguments).

    Attributes:
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy`.
        evaluate: The task's batched, JAX-traceable ``evaluate(solutions, key) ->
            (objective, measures[, extras])`` for the ES samples (compared by
            identity).
        batch_size, sigma0, step_size, sample_sigma, sample_batch_size,
        sample_mirror, sample_rank_norm, normalize_grad, epsilon,
        gradient_batch_size, num_critic_training_steps, replay_buffer_size,
        critic_hidden_layer_size, critic_learning_rate, greedy_learning_rate,
        noise_clip, policy_noise, discount, reward_scaling, training_batch_size,
        soft_tau_update, policy_delay: As in :class:`CMAMEGATD3Emitter`.
    """

    policy: Any
    evaluate: Callable[..., Any]
    batch_size: int = 100
    sigma0: float = 1.0
    step_size: float = 1.0
    sample_sigma: float = 0.02
    sample_batch_size: int = 100
    sample_mirror: bool = True
    sample_rank_norm: bool = True
    normalize_grad: bool = True
    epsilon: float = 1e-8
    gradient_batch_size: int = 65536
    num_critic_training_steps: int = 600
    replay_buffer_size: int = 1_000_000
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    critic_learning_rate: float = 3e-4
    greedy_learning_rate: float = 3e-4
    noise_clip: float = 0.5
    policy_noise: float = 0.2
    discount: float = 0.99
    reward_scaling: float = 1.0
    training_batch_size: int = 256
    soft_tau_update: float = 0.005
    policy_delay: int = 2

    def __post_init__(self):
        if not callable(self.evaluate):
            raise TypeError(
                "evaluate must be a callable evaluate(solutions, key) -> "
                "(objective, measures[, extras]) (or a ribsax Task), "
                f"got {type(self.evaluate).__name__}"
            )
        positive_int("batch_size", self.batch_size)
        if self.batch_size < 3:
            raise ValueError(
                "batch_size must be at least 3 (the greedy actor and at "
                f"least two branches), got {self.batch_size}"
            )
        positive_int("sample_batch_size", self.sample_batch_size)
        if self.sample_batch_size < 2:
            raise ValueError(f"sample_batch_size must be at least 2, got {self.sample_batch_size}")
        if self.sample_mirror and self.sample_batch_size % 2:
            raise ValueError(
                "sample_batch_size must be even with sample_mirror=True, "
                f"got {self.sample_batch_size}"
            )
        positive_int("gradient_batch_size", self.gradient_batch_size)
        if self.gradient_batch_size > self.replay_buffer_size:
            raise ValueError(
                f"gradient_batch_size ({self.gradient_batch_size}) must "
                f"not exceed replay_buffer_size "
                f"({self.replay_buffer_size})"
            )
        for name in ("sigma0", "sample_sigma"):
            _check_number(name, getattr(self, name))
        for name in ("step_size", "epsilon"):
            _check_number(name, getattr(self, name), positive=False)
        object.__setattr__(self, "critic_hidden_layer_size", tuple(self.critic_hidden_layer_size))
        # PGAMEKernel checks the policy and the TD3 and buffer settings.
        _ = self.rl

    # ------------------------------------------------------------ derived
    @property
    def num_branches(self) -> int:
        """``batch_size - 1``: the branches of each ask (the CMA-ES λ)."""
        return self.batch_size - 1

    @property
    def evaluations_per_tell(self) -> int:
        """``sample_batch_size``: the ES samples each iteration evaluates (in
        ``tell_dqd``)."""
        return self.sample_batch_size

    @functools.cached_property
    def rl(self) -> PGAMEKernel:
        """The :class:`~ribsax.emitters.PGAMEKernel` whose TD3 (critics, greedy
        actor), replay buffer and critic training this kernel uses (its variation
        operators are not used)."""
        return PGAMEKernel(
            policy=self.policy,
            batch_size=1,
            proportion_mutation_ga=0.0,
            num_critic_training_steps=self.num_critic_training_steps,
            num_pg_training_steps=0,
            replay_buffer_size=self.replay_buffer_size,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            critic_learning_rate=self.critic_learning_rate,
            greedy_learning_rate=self.greedy_learning_rate,
            noise_clip=self.noise_clip,
            policy_noise=self.policy_noise,
            discount=self.discount,
            reward_scaling=self.reward_scaling,
            training_batch_size=self.training_batch_size,
            soft_tau_update=self.soft_tau_update,
            policy_delay=self.policy_delay,
        )

    @functools.cached_property
    def gradient_buffer(self) -> ReplayBuffer:
        """The replay buffer's sizes for drawing the ``gradient_batch_size``
        states of the objective gradient (same storage as ``rl.buffer``)."""
        return ReplayBuffer(max_size=self.replay_buffer_size, sample_size=self.gradient_batch_size)

    def cma_config(self, measure_dim: int, dtype):
        """The coefficient CMA-ES configuration (``1 + measure_dim`` dimensions,
        population ``batch_size - 1``)."""
        return _cma_es.CMAESConfig.create(1 + measure_dim, self.num_branches, dtype)

    # ------------------------------------------------------------ protocol
    def init(self, key, archive):
        """The initial state: a freshly initialised policy as the solution point,
        the CMA-ES at zero coefficients with step ``sigma0``, zero Jacobian, empty
        buffer and untrained critics."""
        k_rl, k_theta, k_cma = jax.random.split(key, 3)
        dtype = archive.solution.dtype
        measure_dim = archive.measures.shape[1]
        config = self.cma_config(measure_dim, dtype)
        theta = self.policy.init_batch(k_theta, 1, dtype)[0]
        return CMAMEGATD3State(
            rl=self.rl.init(k_rl, archive),
            cma=_cma_es.init(config, jnp.zeros(1 + measure_dim, dtype), self.sigma0, k_cma),
            theta=theta,
            jacobian=jnp.zeros((1 + measure_dim,) + theta.shape, dtype),
            evaluations=jnp.zeros((), jnp.int32),
            restarts=jnp.zeros((), jnp.int32),
            greedy_objective=jnp.full((), jnp.nan, jnp.float32),
        )

    def ask_dqd(self, state, archive, key):
        """Returns the solution point as a batch of one."""
        del archive, key
        return state, state.theta[None]

    def tell_dqd(self, state, archive, key, feedback):
        """Estimates the Jacobian at the solution point and stores it normalised.

        The measure rows are OpenAI-ES estimates from ``sample_batch_size``
        evaluations of ``evaluate``; the objective row is the gradient of
        ``mean_s Q_1(s, π_θ(s))`` over ``gradient_batch_size`` buffer states (a
        standard normal vector while the buffer is empty). The scheduler's
        Jacobian is not used. Then the samples' and the solution point's
        transitions (when the evaluations return them) enter the buffer."""
        del archive
        k_noise, k_eval, k_states, k_random = jax.random.split(key, 4)
        theta = state.theta
        dtype = theta.dtype
        measure_rows, extras = self.es_measure_gradients(theta, k_noise, k_eval)
        objective_row = self.objective_gradient(state.rl, theta, k_states)
        random_row = jax.random.normal(k_random, theta.shape, dtype)
        ready = self.rl.buffer.size(state.rl.buffer) > 0
        objective_row = jnp.where(ready, objective_row.astype(dtype), random_row)
        jacobian = jnp.concatenate([objective_row[None], measure_rows.astype(dtype)])
        if self.normalize_grad:
            jacobian = normalize_jacobian(jacobian, self.epsilon)

        buffer_state = state.rl.buffer
        if isinstance(extras, dict) and "transitions" in extras:
            items, mask = buffer_transitions(extras["transitions"])
            buffer_state = self.rl.buffer.insert(buffer_state, items, mask)
        transitions = feedback.batch["extras"].get("transitions")
        if transitions is not None:
            buffer_state = self._insert_batch(buffer_state, feedback.batch, transitions)
        return state._replace(
            rl=state.rl._replace(buffer=buffer_state),
            jacobian=jacobian,
            evaluations=state.evaluations + self.sample_batch_size,
        )

    def ask(self, state, archive, key):
        """Returns the greedy actor followed by ``batch_size - 1`` branches
        ``theta + sum_j c_j grad_j`` with coefficients ``c`` from the CMA-ES."""
        del archive, key
        cma, coefficients = _cma_es.ask(self._cma_config_of(state), state.cma, None, None)
        branches = branch(state.theta, coefficients, state.jacobian)
        greedy = self.policy.ravel(state.rl.td3.policy_params).astype(state.theta.dtype)
        solutions = jnp.concatenate([greedy[None], branches.astype(greedy.dtype)])
        return state._replace(cma=cma), solutions

    def tell(self, state, archive, key, feedback):
        """Ranks the branches (the greedy actor is not ranked), updates the
        CMA-ES, moves the solution point, restarts when no branch entered the
        archive (or the CMA-ES stops), stores every episode of the batch in the
        buffer and trains the critics."""
        transitions = feedback.batch["extras"].get("transitions")
        if transitions is None:
            raise ValueError(
                "CMAMEGATD3Emitter learns from the evaluated episodes' transitions: "
                "create the task with return_transitions=True (e.g. "
                "ribsax.tasks.brax.create(..., return_transitions=True)); in the "
                "ask/tell loop pass them to Scheduler.tell(..., extras=extras)"
            )
        k_restart, k_train = jax.random.split(key)
        config = self._cma_config_of(state)
        dtype = state.theta.dtype
        status = feedback.status[1:]
        value = jnp.where(feedback.valid[1:], feedback.value[1:], -jnp.inf)
        indices, values = _rankers.rank(
            _TWO_STAGE_IMPROVEMENT,
            None,
            None,
            None,
            feedback.objective[1:],
            feedback.measures[1:],
            {"status": status, "value": value},
        )
        num_parents = self.num_branches // 2
        cma = _cma_es.tell(config, state.cma, indices, values, num_parents)

        weights, _ = parent_weights(num_parents, self.num_branches, dtype)
        parents = feedback.solution[1:].astype(dtype)[indices]
        new_mean = jnp.tensordot(weights, parents, axes=1)
        theta = state.theta + self.step_size * (new_mean - state.theta)

        improved = jnp.sum((status > 0) & feedback.valid[1:])
        stop = _cma_es.check_stop(config, cma, values[indices])
        restart = ((improved == 0) | stop) & (archive.n_occupied > 0)
        elite = self.sample_parents(k_restart, archive, 1, default=theta)[0]
        theta = jnp.where(restart, elite.astype(dtype), theta)
        cma = select_tree(
            restart, _cma_es.reset(config, cma, jnp.zeros(config.solution_dim, dtype)), cma
        )

        buffer_state = self._insert_batch(state.rl.buffer, feedback.batch, transitions)
        td3_state, critic_loss, policy_loss = self.rl._train_critic(
            state.rl.td3, buffer_state, k_train
        )
        return state._replace(
            rl=PGAMEState(
                td3=td3_state, buffer=buffer_state, critic_loss=critic_loss, policy_loss=policy_loss
            ),
            cma=cma,
            theta=theta,
            restarts=state.restarts + restart.astype(jnp.int32),
            greedy_objective=jnp.where(feedback.valid[0], feedback.objective[0], jnp.nan).astype(
                jnp.float32
            ),
        )

    def evaluations(self, state):
        """The ES samples evaluated so far (``sample_batch_size`` per
        ``tell_dqd``)."""
        return state.evaluations

    # ------------------------------------------------------------ pieces
    def _cma_config_of(self, state):
        return self.cma_config(state.jacobian.shape[0] - 1, state.theta.dtype)

    def _insert_batch(self, buffer_state, batch, transitions):
        items, mask = buffer_transitions(transitions)
        valid = batch["valid"]
        mask &= valid.reshape(valid.shape + (1,) * (mask.ndim - 1))
        return self.rl.buffer.insert(buffer_state, items, mask)

    def objective_gradient(self, rl_state, theta, key):
        """``∇_θ mean_s Q_1(s, π_θ(s))`` over ``gradient_batch_size`` states drawn
        uniformly from the buffer (flat, shaped like ``theta``; meaningless while
        the buffer is empty)."""
        obs = self.gradient_buffer.sample(rl_state.buffer, key).obs
        params = self.policy.unravel(theta)
        grads = jax.grad(self.rl.td3.policy_loss)(params, rl_state.td3.critic_params, obs)
        return -self.policy.ravel(grads)

    def es_measure_gradients(self, theta, key_noise, key_eval):
        """OpenAI-ES estimates of the measure gradients at ``theta``.

        ``sample_batch_size`` samples ``theta + sample_sigma * eps_i`` (mirrored
        pairs when ``sample_mirror``) are evaluated with ``evaluate``; each measure
        is replaced by its centred ranks when ``sample_rank_norm`` (else centred
        by its mean), and ``g_j = sum_i eps_i (r_j[i] - r_j[i + N/2]) / (N/2 ·
        sample_sigma)`` (``sum_i eps_i r_j[i] / (N · sample_sigma)`` unmirrored),
        the estimator of :func:`ribsax.tasks.es_jacobian`. Samples whose measures
        are not finite count as zero.

        Returns:
            ``(rows, extras)``: ``[measure_dim, *theta.shape]`` gradients and the
            samples' evaluation extras (None when ``evaluate`` returns none).
        """
        n = self.sample_batch_size
        half = n // 2 if self.sample_mirror else n
        eps = jax.random.normal(key_noise, (half,) + theta.shape, theta.dtype)
        noise = mirrored(eps) if self.sample_mirror else eps
        samples = theta[None] + self.sample_sigma * noise
        out = self.evaluate(samples, key_eval)
        measures = jnp.asarray(out[1]).reshape(n, -1).astype(theta.dtype)
        measures = jnp.where(jnp.isfinite(measures), measures, 0)
        if self.sample_rank_norm:
            values = centered_ranks(measures, axis=0)
        else:
            values = measures - jnp.mean(measures, axis=0, keepdims=True)
        weights = values[:half] - values[half:] if self.sample_mirror else values
        rows = jnp.einsum("nj,nd->jd", weights, eps.reshape(half, -1)) / (half * self.sample_sigma)
        extras = out[2] if len(out) > 2 else None
        return rows.reshape((-1,) + theta.shape), extras


class CMAMEGATD3Emitter(_JaxDQDEmitter):
    r"""CMA-MEGA (TD3, ES) (Tjanaka et al. 2022): gradient arborescence from a
    solution point, with the objective gradient from a TD3 critic and the measure
    gradients from OpenAI-ES.

    Each iteration:

    1. :meth:`ask_dqd` returns the solution point :math:`\theta`. Its
       :meth:`tell_dqd` estimates the Jacobian at :math:`\theta`: the measure
       gradients with OpenAI-ES (``sample_batch_size`` samples
       :math:`\theta + \sigma\epsilon_i`, mirrored, centred ranks; they are
       evaluated with ``evaluate`` inside the emitter, never enter the archive
       and are counted in :attr:`evaluations`), the objective gradient as the
       gradient of :math:`\mathrm{mean}_s Q_1(s, \pi_\theta(s))` (an ascent
       direction) over ``gradient_batch_size`` states drawn uniformly from the
       replay buffer, or a standard normal vector while the buffer is empty.
       Each row is divided by its norm (``normalize_grad``). The Jacobian the
       scheduler hands to ``tell_dqd`` is not used: run with
       ``jacobian=CMAMEGATD3Emitter.jacobian_free(task)`` so that the solution
       point costs a single evaluation.
    2. :meth:`ask` returns ``batch_size`` policies: the greedy TD3 actor first,
       then ``batch_size - 1`` branches :math:`\theta + \sum_j c_j \nabla_j` with
       coefficients :math:`c \sim \mathcal{N}(\mu, \sigma^2 C)` from a CMA-ES over
       the ``1 + measure_dim`` coefficients (mean 0 and step ``sigma0`` at the
       start and at every restart).
    3. :meth:`tell` ranks the branches by two-stage improvement (new cells
       first, by objective, then improvements of existing cells, by how much;
       the greedy actor is inserted but not ranked), updates the CMA-ES with the
       top ``(batch_size - 1) // 2`` branches and log-rank weights, and moves the
       solution point by ``step_size`` towards their weighted mean (with 1.0 it
       becomes that mean). When no branch entered the archive, or the CMA-ES
       stops, the point restarts at an elite drawn uniformly and the CMA-ES is
       reset. The transitions of every episode of the scheduler's batch (and of
       the solution point and the ES samples, in ``tell_dqd``) enter the replay
       buffer, and ``num_critic_training_steps`` TD3 updates train the twin
       critics and the greedy actor (:class:`ribsax.rl.TD3`).

    An iteration costs ``1 + sample_batch_size + batch_size`` evaluations. The
    task must return its transitions
    (``ribsax.tasks.brax.create(..., return_transitions=True)``); in the ask/tell
    loop pass the evaluation's extras to :meth:`Scheduler.tell_dqd
    <ribsax.schedulers.Scheduler.tell_dqd>` and :meth:`Scheduler.tell
    <ribsax.schedulers.Scheduler.tell>` (``extras=``).

    The defaults are dqd-rl's ``cma_mega_td3_es`` settings (99 + 1 policies,
    100 ES samples of σ 0.02, 65,536 states per objective gradient, 600 critic
    updates per iteration, 256-wide critics, Adam 3e-4).

    Args:
        archive: The archive (solutions: the policy's flat parameters).
        policy: The task's :class:`~ribsax.tasks.brax.MLPPolicy` (``task.policy``).
        evaluate: The task's ``evaluate(solutions, key) -> (objective, measures[,
            extras])``, JAX-traceable, or a :class:`ribsax.tasks.Task` (its
            ``evaluate`` is used), for the ES samples.
        batch_size: Policies per ask: the greedy actor and ``batch_size - 1``
            branches.
        sigma0: Initial step size of the coefficient CMA-ES.
        step_size: Step of the solution point towards the branches' weighted mean.
        sample_sigma: Standard deviation of the ES perturbations.
        sample_batch_size: ES samples per iteration (even when mirrored).
        sample_mirror: Mirrored ES sampling.
        sample_rank_norm: Centred ranks of the sample measures.
        normalize_grad: Divide each gradient by its norm plus ``epsilon``.
        epsilon: Added to the gradient norms.
        gradient_batch_size: Buffer states per objective gradient.
        num_critic_training_steps: TD3 updates per tell.
        replay_buffer_size: Transitions the buffer holds.
        critic_hidden_layer_size: Hidden widths of each critic.
        critic_learning_rate: Adam step size of the critics.
        greedy_learning_rate: Adam step size of the greedy actor.
        noise_clip: Bound of the target-policy smoothing noise.
        policy_noise: Standard deviation of the target-policy smoothing noise.
        discount: Discount factor.
        reward_scaling: Factor on rewards in the critic target.
        training_batch_size: Transitions per TD3 update.
        soft_tau_update: Polyak rate of the target networks.
        policy_delay: Critic updates per greedy-actor (and target) update.
        x0: Initial solution point (None: a freshly initialised policy).
        seed: Seed of the emitter's PRNG key.

    Raises:
        TypeError: ``policy`` is not an MLP policy, ``evaluate`` is not callable,
            or a scale is not a number.
        ValueError: A size is out of range, ``sample_batch_size`` is odd with
            mirrored sampling, ``gradient_batch_size`` or ``training_batch_size``
            exceeds ``replay_buffer_size``, a scale is not positive, ``x0`` has
            the wrong shape, or a TD3 setting is invalid.
    """

    #: The Jacobian function to run it with on a task without one
    #: (:func:`ribsax.tasks.zero_jacobian_fn`).
    jacobian_free = staticmethod(zero_jacobian_fn)

    def __init__(
        self,
        archive,
        *,
        policy,
        evaluate,
        batch_size=100,
        sigma0=1.0,
        step_size=1.0,
        sample_sigma=0.02,
        sample_batch_size=100,
        sample_mirror=True,
        sample_rank_norm=True,
        normalize_grad=True,
        epsilon=1e-8,
        gradient_batch_size=65536,
        num_critic_training_steps=600,
        replay_buffer_size=1_000_000,
        critic_hidden_layer_size=(256, 256),
        critic_learning_rate=3e-4,
        greedy_learning_rate=3e-4,
        noise_clip=0.5,
        policy_noise=0.2,
        discount=0.99,
        reward_scaling=1.0,
        training_batch_size=256,
        soft_tau_update=0.005,
        policy_delay=2,
        x0=None,
        seed=None,
    ):
        if not callable(evaluate) and callable(getattr(evaluate, "evaluate", None)):
            evaluate = evaluate.evaluate
        kernel = CMAMEGATD3Kernel(
            policy=policy,
            evaluate=evaluate,
            batch_size=batch_size,
            sigma0=sigma0,
            step_size=step_size,
            sample_sigma=sample_sigma,
            sample_batch_size=sample_batch_size,
            sample_mirror=sample_mirror,
            sample_rank_norm=sample_rank_norm,
            normalize_grad=normalize_grad,
            epsilon=epsilon,
            gradient_batch_size=gradient_batch_size,
            num_critic_training_steps=num_critic_training_steps,
            replay_buffer_size=replay_buffer_size,
            critic_hidden_layer_size=critic_hidden_layer_size,
            critic_learning_rate=critic_learning_rate,
            greedy_learning_rate=greedy_learning_rate,
            noise_clip=noise_clip,
            policy_noise=policy_noise,
            discount=discount,
            reward_scaling=reward_scaling,
            training_batch_size=training_batch_size,
            soft_tau_update=soft_tau_update,
            policy_delay=policy_delay,
        )
        super().__init__(archive, kernel, seed=seed)
        if x0 is not None:
            x0 = jnp.asarray(x0)
            inner = self.kernel_state
            if x0.shape != inner.theta.shape:
                raise ValueError(f"x0 must have shape {inner.theta.shape}, got {x0.shape}")
            self.state = self.state._replace(
                inner=inner._replace(theta=x0.astype(inner.theta.dtype))
            )

    @property
    def theta(self):
        """The solution point."""
        return self.kernel_state.theta

    @property
    def greedy_actor(self):
        """Flat parameters of the greedy actor (the first solution of each ask)."""
        return self.kernel.policy.ravel(self.kernel_state.rl.td3.policy_params)

    @property
    def critic_loss(self) -> float:
        """Mean critic loss of the last tell's training (NaN before any)."""
        return float(self.kernel_state.rl.critic_loss)

    @property
    def buffer_size(self) -> int:
        """Transitions stored in the replay buffer."""
        return int(self.kernel.rl.buffer.size(self.kernel_state.rl.buffer))

    @property
    def restarts(self) -> int:
        """Restarts of the solution point so far."""
        return int(self.kernel_state.restarts)
