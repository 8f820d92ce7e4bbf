"""DADS: Dynamics-Aware Discovery of Skills (Sharma et al. 2019), on SAC.

A skill-dynamics model ``q(delta | s, z)`` predicts how the state descriptor
changes under skill ``z``; the policy is rewarded with
``log q(delta|s,z) - log (1/L) sum_i q(delta|s,z_i)`` (eq. 6), i.e. for behaving
predictably under its own skill and unlike under others. Beyond QDax, skills can
be continuous (the ``L`` alternatives are prior samples) and sampled per
environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax._running_stats import RunningMeanStd, RunningMeanStdState
from ribsax.rl._checks import check_hidden_sizes, check_positive_int
from ribsax.rl._optim import adam_init, adam_step
from ribsax.rl._sac import SacConfig
from ribsax.rl._skill_sac import (
    SkillFields,
    SkillSAC,
    descriptor_size,
    skill_descriptors,
    skills_of,
)
from ribsax.rl._skills import (
    SkillDynamics,
    SkillPrior,
    dads_reward,
    dynamics_inputs,
    dynamics_log_prob,
)
from ribsax.rl._unroll import RLEnv

__all__ = ["DadsConfig", "DADS"]


@dataclasses.dataclass(frozen=True)
class DadsConfig(SkillFields, SacConfig):
    """DADS settings: :class:`~ribsax.rl.SacConfig`, the skill fields of
    :class:`~ribsax.rl._skill_sac.SkillFields` (``num_skills=5`` as QDax, plus
    ``skill_kind``, ``per_env_skills``; ``skill_concentration`` is unused) and:

    Attributes:
        dynamics_update_freq: The skill dynamics is trained on every
            ``dynamics_update_freq``-th update.
        descriptor_full_state: The dynamics models the whole observation instead
            of the environment's state descriptor.
        normalize_target: Predict the descriptor change normalised by running
            statistics (updated from the training batches).
        omit_input_dynamics_dim: Leading descriptor entries left out of the
            dynamics' input (the x-y position: translation invariance).
        num_prior_samples: ``L``, alternative skills drawn from the prior for the
            reward of continuous skills (one-hot skills use all ``num_skills``).
        dynamics_hidden_layer_size: Hidden widths of the skill dynamics.
    """

    dynamics_update_freq: int = 1
    descriptor_full_state: bool = False
    normalize_target: bool = True
    omit_input_dynamics_dim: int = 2
    num_prior_samples: int = 100
    dynamics_hidden_layer_size: tuple[int, ...] = (256, 256)

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("dynamics_update_freq", self.dynamics_update_freq)
        check_positive_int("omit_input_dynamics_dim", self.omit_input_dynamics_dim, allow_zero=True)
        check_positive_int("num_prior_samples", self.num_prior_samples)
        object.__setattr__(
            self,
            "dynamics_hidden_layer_size",
            check_hidden_sizes("dynamics_hidden_layer_size", self.dynamics_hidden_layer_size),
        )


class DynamicsState(NamedTuple):
    """Skill-dynamics parameters, Adam moments, target statistics, update count."""

    params: Any
    opt_state: Any
    target_stats: RunningMeanStdState
    steps: jax.Array


class _SkillDynamicsModel:
    """DADS' diversity model (see :class:`~ribsax.rl._skill_sac.SkillSAC`)."""

    def __init__(self, config: DadsConfig, prior: SkillPrior, size: int):
        self.config = config
        self.prior = prior
        self.descriptor_size = size
        self.network = SkillDynamics(config.dynamics_hidden_layer_size, size)

    def init(self, key) -> DynamicsState:
        cfg = self.config
        inputs = dynamics_inputs(
            jnp.zeros((1, self.descriptor_size)),
            jnp.zeros((1, cfg.num_skills)),
            cfg.omit_input_dynamics_dim,
        )
        params = self.network.init(key, inputs)
        return DynamicsState(
            params,
            adam_init(params),
            RunningMeanStd.init(self.descriptor_size, jnp.result_type(float)),
            jnp.zeros((), jnp.int32),
        )

    def _data(self, stats, transitions):
        """``(descriptor, skills, target)``: target is the (normalised) change."""
        desc, next_desc = skill_descriptors(
            transitions, self.config.num_skills, self.config.descriptor_full_state
        )
        target = next_desc - desc
        if self.config.normalize_target:
            target = RunningMeanStd.normalize(stats, target)
        return desc, skills_of(transitions, self.config.num_skills), target

    def alternatives(self, key, dtype) -> jax.Array:
        """The ``L`` skills of the reward's marginal: every one-hot skill, or
        ``num_prior_samples`` prior samples."""
        if self.prior.continuous:
            return self.prior.sample(key, self.config.num_prior_samples, dtype)
        return jnp.eye(self.config.num_skills, dtype=dtype)

    def reward(self, state: DynamicsState, transitions, key):
        desc, skills, target = self._data(state.target_stats, transitions)
        return dads_reward(
            self.network.apply,
            state.params,
            desc,
            skills,
            target,
            self.alternatives(key, skills.dtype),
            self.config.omit_input_dynamics_dim,
        )

    def update(self, state: DynamicsState, transitions, key):
        del key
        cfg = self.config
        desc, next_desc = skill_descriptors(transitions, cfg.num_skills, cfg.descriptor_full_state)
        # Steps that ended an episode carry a reset observation as next_obs: their
        # change is not a dynamics sample (state descriptors are kept, so only the
        # full-state variant needs the mask).
        weight = (
            1.0 - transitions.dones
            if cfg.descriptor_full_state
            else jnp.ones_like(transitions.dones)
        )
        stats = state.target_stats
        if cfg.normalize_target:
            stats = RunningMeanStd.update(stats, next_desc - desc, mask=weight)
        desc, skills, target = self._data(stats, transitions)

        def loss_fn(params):
            mean = self.network.apply(
                params, dynamics_inputs(desc, skills, cfg.omit_input_dynamics_dim)
            )
            log_q = dynamics_log_prob(mean, target)
            return -jnp.sum(weight * log_q) / jnp.maximum(jnp.sum(weight), 1.0)

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        params, opt_state = adam_step(state.params, grads, state.opt_state, cfg.learning_rate)
        train_now = state.steps % cfg.dynamics_update_freq == 0
        params, opt_state = jax.tree.map(
            lambda new, old: jnp.where(train_now, new, old),
            (params, opt_state),
            (state.params, state.opt_state),
        )
        return (DynamicsState(params, opt_state, stats, state.steps + 1), {"dynamics_loss": loss})


class DADS(SkillSAC):
    """DADS: skill-conditioned SAC rewarded through a learned skill dynamics.

    The dynamics ``q(delta|s,z)`` is a unit-variance Gaussian whose mean an MLP
    predicts from ``descriptor[omit_input_dynamics_dim:] ⊕ z``; it is trained by
    maximum likelihood on the batches SAC learns from (every
    ``dynamics_update_freq``-th update). See :class:`~ribsax.rl._skill_sac.SkillSAC`
    for ``init``, ``play_step``, ``update``, ``train`` and ``evaluate``.

    Args:
        config: :class:`DadsConfig`.
        env: Training environment from :func:`~ribsax.rl.make_env`.
        buffer_size: Replay-buffer capacity.

    Raises:
        TypeError: ``config`` is not a :class:`DadsConfig`.
        ValueError: No state descriptor (and not ``descriptor_full_state``),
            ``omit_input_dynamics_dim`` larger than the descriptor, or tiled skills
            that do not divide ``env.batch_size``.
    """

    def __init__(self, config: DadsConfig, env: RLEnv, *, buffer_size: int = 100_000, smerl=None):
        size = descriptor_size(config, env, DadsConfig)
        if config.omit_input_dynamics_dim > size:
            raise ValueError(
                f"omit_input_dynamics_dim ({config.omit_input_dynamics_dim})"
                f" must not exceed the descriptor size ({size})"
            )
        super().__init__(
            config,
            env,
            _SkillDynamicsModel(config, config.skill_prior(), size),
            buffer_size=buffer_size,
            smerl=smerl,
        )
