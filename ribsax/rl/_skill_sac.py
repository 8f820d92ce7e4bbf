"""SkillSAC: skill-conditioned SAC, the training loop shared by DIAYN and DADS.

The policy and critics see ``obs ⊕ z`` (the observation joined with the skill of
the environment); the rewards they learn from are intrinsic diversity rewards
computed by a *diversity model* (DIAYN's discriminator, DADS' skill dynamics) on
each sampled batch, optionally mixed with the task reward through SMERL's gate.
A diversity model is any object with three pure functions::

    model.init(key) -> model_state
    model.reward(model_state, transitions, key) -> (batch,) diversity rewards
    model.update(model_state, transitions, key) -> (model_state, metrics)

where ``transitions`` are :class:`~ribsax.rl.Transition` whose ``obs`` and
``next_obs`` end with the skill. :class:`SkillSAC` composes SAC, the model, the
environment and a replay buffer into one state pytree (:class:`SkillState`) and
pure functions jitted once: ``init``, ``play_step``, ``update``, ``train`` and
``evaluate``.

Skills are assigned per environment (:func:`~ribsax.rl._skills.initial_skills`):
QDax's tiled one-hot skills, or, with ``per_env_skills``, a fresh prior sample for
each environment at every episode start. The buffer stores, next to each
transition, the return of the episode it belongs to (NaN while unknown), which is
what SMERL's gate reads.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_positive_int
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._sac import SAC, SacConfig, SacState
from ribsax.rl._skills import (
    SKILL_KINDS,
    SkillPrior,
    initial_skills,
    resample_finished,
    smerl_reward,
)
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import RLEnv, episode_returns, play_step

__all__ = [
    "SkillSAC",
    "SkillState",
    "SkillItem",
    "SkillEvaluation",
    "SkillFields",
    "descriptor_size",
    "skill_descriptors",
]


class SkillState(NamedTuple):
    """Training state of a skill-discovery agent (a pytree).

    Attributes:
        sac: :class:`~ribsax.rl.SacState` of the skill-conditioned policy.
        model: State of the diversity model (discriminator or skill dynamics).
        env_state: Batched environment state.
        skills: ``(num_envs, num_skills)`` skill of each environment.
        episode_return: ``(num_envs,)`` task return of each current episode so far.
        buffer: Replay-buffer state (items are :class:`SkillItem`).
        key: PRNG key.
    """

    sac: SacState
    model: Any
    env_state: Any
    skills: jax.Array
    episode_return: jax.Array
    buffer: Any
    key: jax.Array


class SkillItem(NamedTuple):
    """One replay-buffer item: a transition and its episode's task return.

    ``episode_return`` is NaN when the episode had not finished within the unroll
    that played the step (see :meth:`SkillSAC.train`).
    """

    transition: Transition
    episode_return: jax.Array


class SkillEvaluation(NamedTuple):
    """Result of :meth:`SkillSAC.evaluate` (one episode per environment).

    Attributes:
        returns: ``(B,)`` task returns (steps up to the first ``done``).
        diversity_returns: ``(B,)`` sums of the diversity rewards of those steps.
        state_descriptors: ``(T, B, d)`` state descriptors after each step.
        final_state_descriptors: ``(B, d)`` descriptor after each episode's last step.
        valid: ``(T, B)`` 1.0 for the steps that count.
        skills: ``(B, num_skills)`` skills played.
    """

    returns: jax.Array
    diversity_returns: jax.Array
    state_descriptors: jax.Array
    final_state_descriptors: jax.Array
    valid: jax.Array
    skills: jax.Array


@dataclasses.dataclass(frozen=True)
class SkillFields:
    """Skill fields shared by DIAYN and DADS configs (mixed into their
    :class:`~ribsax.rl.SacConfig` subclasses).

    Attributes:
        num_skills: Number of one-hot skills, or dimension of continuous skills.
        skill_kind: ``"one_hot"`` (QDax), ``"gaussian"`` or ``"sphere"``.
        per_env_skills: Every environment draws its own skill at each episode
            start (any number of environments); otherwise one-hot skills are tiled
            over the environments (their number must be a multiple of
            ``num_skills``) and continuous skills are drawn once per environment.
        skill_concentration: Concentration of the von Mises-Fisher discriminator
            of spherical skills (DIAYN).
    """

    num_skills: int = 5
    skill_kind: str = "one_hot"
    per_env_skills: bool = False
    skill_concentration: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("num_skills", self.num_skills)
        if self.skill_kind not in SKILL_KINDS:
            raise ValueError(f"skill_kind must be one of {SKILL_KINDS}, got {self.skill_kind!r}")
        self.skill_prior()  # Validates the combination.

    def skill_prior(self) -> SkillPrior:
        """The :class:`~ribsax.rl.SkillPrior` of these fields."""
        return SkillPrior(self.skill_kind, self.num_skills, self.skill_concentration)


def skill_descriptors(
    transitions: Transition, num_skills: int, descriptor_full_state: bool
) -> tuple[jax.Array, jax.Array]:
    """``(descriptor, next_descriptor)`` a diversity model looks at.

    The environment's state descriptors, or with ``descriptor_full_state`` the whole
    observations (without the trailing skill).
    """
    if descriptor_full_state:
        return (transitions.obs[..., :-num_skills], transitions.next_obs[..., :-num_skills])
    return transitions.state_desc, transitions.next_state_desc


def descriptor_size(config, env: RLEnv, expected: type) -> int:
    """Checks ``config``'s type and returns the size of the descriptor its
    diversity model reads (see :func:`skill_descriptors`).

    Raises:
        TypeError: ``config`` is not an ``expected``.
        ValueError: That descriptor is empty (an environment without state
            descriptors and ``descriptor_full_state=False``).
    """
    if not isinstance(config, expected):
        raise TypeError(f"config must be a {expected.__name__}, got {type(config).__name__}")
    size = env.observation_size if config.descriptor_full_state else env.state_descriptor_size
    if size == 0:
        raise ValueError(
            f"env {env.name!r} has no state descriptor; use a QD task or descriptor_full_state=True"
        )
    return size


def skills_of(transitions: Transition, num_skills: int) -> jax.Array:
    """The skills stored at the end of ``transitions.obs``."""
    return transitions.obs[..., -num_skills:]


def _episode_totals(rewards, dones, running_start):
    """Per-step return of the episode each step belongs to, in a ``(T, B)`` unroll.

    ``running_start`` is the return accumulated before the unroll. Steps of
    episodes still running at the end of the unroll get NaN.
    """

    def forward(running, x):
        r, d = x
        running = running + r
        return jnp.where(d > 0, 0.0, running), running

    running_end, so_far = jax.lax.scan(forward, running_start, (rewards, dones))

    def backward(total, x):
        s, d = x
        total = jnp.where(d > 0, s, total)
        return total, total

    _, totals = jax.lax.scan(
        backward, jnp.full_like(running_start, jnp.nan), (so_far, dones), reverse=True
    )
    return totals, running_end


class SkillSAC:
    """Skill-conditioned SAC trained on a diversity model's rewards.

    Public functions (pure, jitted once; the environment and buffer are static):

    * ``init(key) -> SkillState``;
    * ``play_step(state, deterministic=False, random_actions=False) ->
      (state, transition)``: one step of every environment (the transition's
      observations carry the skills);
    * ``rewards(state, items, key) -> (diversity, training_rewards)``: the
      diversity rewards of a batch of :class:`SkillItem` and the rewards SAC
      learns from (the diversity rewards, or SMERL's gated mix);
    * ``update(state) -> (state, metrics)``: one gradient step of SAC and of the
      diversity model on a batch sampled from the buffer, with ``rewards``;
    * ``train(state, num_iterations, unroll_length=None, grad_updates_per_step=1,
      random_actions=False) -> (state, metrics)``: ``num_iterations`` times, play
      ``unroll_length`` steps, insert them, and do ``grad_updates_per_step``
      updates (per iteration, i.e. per unroll), in one ``lax.scan`` (the state is
      donated). ``unroll_length``
      defaults to 1, and to the episode length with SMERL: a step's episode return
      is only known (and SMERL's gate only open) when its episode ends within the
      unroll that played it, so unrolls should cover whole episodes;
    * ``evaluate(state, key, skills=None) -> SkillEvaluation``: one deterministic
      episode per environment from fresh resets.

    Args:
        config: A :class:`~ribsax.rl.SacConfig` subclass with the
            :class:`SkillFields`.
        env: Training environment (:func:`~ribsax.rl.make_env`, auto-resetting).
        model: The diversity model.
        buffer_size: Replay-buffer capacity (transitions).
        smerl: ``(smerl_target, smerl_margin, diversity_reward_scale)`` for SMERL's
            reward, or None for pure diversity rewards.
    """

    def __init__(
        self,
        config: SacConfig,
        env: RLEnv,
        model,
        *,
        buffer_size: int,
        smerl: tuple[float, float, float] | None = None,
    ):
        if not isinstance(env, RLEnv):
            raise TypeError(f"env must be an RLEnv (ribsax.rl.make_env), got {type(env).__name__}")
        check_positive_int("buffer_size", buffer_size)
        self.config = config
        self.env = env
        self.model = model
        self.smerl = smerl
        self.prior = config.skill_prior()
        self.per_env_skills = bool(config.per_env_skills)
        if not self.per_env_skills and not self.prior.continuous:
            initial_skills(self.prior, None, env.batch_size, False)  # Validates sizes.
        self.sac = SAC(config, env.action_size)
        self.buffer = ReplayBuffer(buffer_size, config.batch_size)
        self.init = jax.jit(self._init)
        self.play_step = jax.jit(
            self._play_step, static_argnames=("deterministic", "random_actions")
        )
        self.update = jax.jit(self._update)
        self.rewards = jax.jit(self._rewards)
        self.train = jax.jit(
            self._train,
            static_argnames=(
                "num_iterations",
                "unroll_length",
                "grad_updates_per_step",
                "random_actions",
            ),
            donate_argnums=0,
        )
        self.evaluate = jax.jit(self._evaluate)

    # -- pure functions ----------------------------------------------------------

    def _init(self, key) -> SkillState:
        k_sac, k_model, k_env, k_skill, k_state = jax.random.split(key, 5)
        env, k = self.env, self.prior.num_skills
        env_state = env.reset(k_env)
        dtype = env_state.obs.dtype
        example = SkillItem(
            Transition.zeros(
                env.observation_size + k, env.action_size, env.state_descriptor_size, dtype=dtype
            ),
            jnp.zeros((), dtype),
        )
        return SkillState(
            sac=self.sac._init(k_sac, env.observation_size + k),
            model=self.model.init(k_model),
            env_state=env_state,
            skills=initial_skills(self.prior, k_skill, env.batch_size, self.per_env_skills, dtype),
            episode_return=jnp.zeros((env.batch_size,), dtype),
            buffer=self.buffer.init(example),
            key=k_state,
        )

    def _policy_fn(self, sac_state, skills, deterministic, random_actions):
        def policy_fn(obs, key):
            if random_actions:
                return jax.random.uniform(
                    key, obs.shape[:-1] + (self.env.action_size,), obs.dtype, -1.0, 1.0
                )
            return self.sac._select_action(
                sac_state, jnp.concatenate([obs, skills], -1), key, deterministic
            )

        return policy_fn

    def _play_step(
        self, state: SkillState, deterministic: bool = False, random_actions: bool = False
    ):
        key, act_key, skill_key = jax.random.split(state.key, 3)
        skills = state.skills
        sac_state = state.sac
        if not deterministic:
            sac_state = self.sac._observe(
                sac_state, jnp.concatenate([state.env_state.obs, skills], -1)
            )
        env_state, tr = play_step(
            self.env,
            state.env_state,
            self._policy_fn(sac_state, skills, deterministic, random_actions),
            act_key,
        )
        tr = tr._replace(
            obs=jnp.concatenate([tr.obs, skills], -1),
            next_obs=jnp.concatenate([tr.next_obs, skills], -1),
        )
        running = state.episode_return + tr.rewards
        finished = tr.dones > 0
        state = state._replace(
            sac=sac_state,
            env_state=env_state,
            key=key,
            skills=resample_finished(self.prior, skill_key, skills, finished, self.per_env_skills),
            episode_return=jnp.where(finished, 0.0, running),
        )
        return state, tr

    def _rewards(self, state: SkillState, items: SkillItem, key):
        transitions = items.transition
        diversity = self.model.reward(state.model, transitions, key)
        if self.smerl is None:
            return diversity, diversity
        target, margin, scale = self.smerl
        return diversity, smerl_reward(
            transitions.rewards, diversity, items.episode_return, target, margin, scale
        )

    def _update(self, state: SkillState):
        key, sample_key, reward_key, sac_key, model_key = jax.random.split(state.key, 5)
        batch = self.buffer.sample(state.buffer, sample_key)
        transitions = batch.transition
        diversity, rewards = self._rewards(state, batch, reward_key)
        sac_state, metrics = self.sac._update(
            state.sac,
            transitions._replace(rewards=rewards.astype(transitions.rewards.dtype)),
            sac_key,
        )
        model_state, model_metrics = self.model.update(state.model, transitions, model_key)
        metrics = {
            **metrics,
            **model_metrics,
            "diversity_reward": jnp.mean(diversity),
            "training_reward": jnp.mean(rewards),
        }
        return state._replace(sac=sac_state, model=model_state, key=key), metrics

    def _collect(self, state: SkillState, unroll_length: int, random_actions: bool):
        start = state.episode_return

        def body(s, _):
            return self._play_step(s, False, random_actions)

        state, transitions = jax.lax.scan(body, state, None, unroll_length)
        totals, _ = _episode_totals(transitions.rewards, transitions.dones, start)
        buffer = self.buffer.insert(state.buffer, SkillItem(transitions, totals))
        return state._replace(buffer=buffer), transitions

    def _train(
        self,
        state: SkillState,
        num_iterations: int,
        unroll_length: int | None = None,
        grad_updates_per_step: int = 1,
        random_actions: bool = False,
    ):
        if unroll_length is None:
            unroll_length = 1 if self.smerl is None else self.env.episode_length
        check_positive_int("num_iterations", num_iterations)
        check_positive_int("unroll_length", unroll_length)
        check_positive_int("grad_updates_per_step", grad_updates_per_step, allow_zero=True)

        def iteration(s, _):
            s, transitions = self._collect(s, unroll_length, random_actions)
            metrics = {}
            if grad_updates_per_step:
                s, metrics = jax.lax.scan(
                    lambda c, _: self._update(c), s, None, grad_updates_per_step
                )
                metrics = jax.tree.map(jnp.mean, metrics)
            metrics["reward"] = jnp.mean(transitions.rewards)
            return s, metrics

        state, metrics = jax.lax.scan(iteration, state, None, num_iterations)
        return state, jax.tree.map(jnp.mean, metrics)

    def default_eval_skills(self, key) -> jax.Array:
        """Evaluation skills: one-hot skills in order (cycling), or prior samples."""
        n, k = self.env.batch_size, self.prior.num_skills
        dtype = jnp.result_type(float)
        if self.prior.continuous:
            return self.prior.sample(key, n, dtype)
        return jax.nn.one_hot(jnp.arange(n) % k, k, dtype=dtype)

    def _evaluate(self, state: SkillState, key, skills=None) -> SkillEvaluation:
        reset_key, play_key, skill_key, reward_key = jax.random.split(key, 4)
        env = self.env
        if skills is None:
            skills = self.default_eval_skills(skill_key)
        env_state = env.reset(reset_key)
        skills = skills.astype(env_state.obs.dtype)
        policy_fn = self._policy_fn(state.sac, skills, True, False)

        def body(env_state, k):
            return play_step(env, env_state, policy_fn, k)

        _, tr = jax.lax.scan(body, env_state, jax.random.split(play_key, env.episode_length))
        returns, valid = episode_returns(tr)
        tiled = jnp.broadcast_to(skills, tr.obs.shape[:-1] + skills.shape[-1:])
        tr = tr._replace(
            obs=jnp.concatenate([tr.obs, tiled], -1),
            next_obs=jnp.concatenate([tr.next_obs, tiled], -1),
        )
        diversity = self.model.reward(state.model, tr.flatten(), reward_key)
        diversity = diversity.reshape(valid.shape)
        last = jnp.maximum(jnp.sum(valid, axis=0).astype(jnp.int32) - 1, 0)
        final = jnp.take_along_axis(tr.next_state_desc, last[None, :, None], axis=0)[0]
        return SkillEvaluation(
            returns=returns,
            diversity_returns=jnp.sum(diversity * valid, axis=0),
            state_descriptors=tr.next_state_desc,
            final_state_descriptors=final,
            valid=valid,
            skills=skills,
        )
