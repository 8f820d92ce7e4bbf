"""DIAYN: Diversity Is All You Need (Eysenbach et al. 2018), on SAC.

A discriminator ``q(z|s)`` learns to recognise the skill from the state descriptor
reached; the skill-conditioned SAC policy is rewarded with
``log q(z|s') - log p(z)`` (eq. 3), so skills become distinguishable. Beyond QDax
(one-hot skills tiled over environments), skills can be continuous (Gaussian or
spherical, with a Gaussian or von Mises-Fisher discriminator) and sampled per
environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.rl._checks import check_hidden_sizes
from ribsax.rl._optim import adam_init, adam_step
from ribsax.rl._sac import SacConfig
from ribsax.rl._skill_sac import (
    SkillFields,
    SkillSAC,
    descriptor_size,
    skill_descriptors,
    skills_of,
)
from ribsax.rl._skills import SkillDiscriminator, SkillPrior, diayn_reward, discriminator_log_prob
from ribsax.rl._unroll import RLEnv

__all__ = ["DiaynConfig", "DIAYN"]


@dataclasses.dataclass(frozen=True)
class DiaynConfig(SkillFields, SacConfig):
    """DIAYN settings: :class:`~ribsax.rl.SacConfig`, the skill fields of
    :class:`~ribsax.rl._skill_sac.SkillFields` (``num_skills=5`` as QDax, plus
    ``skill_kind``, ``per_env_skills``, ``skill_concentration``) and:

    Attributes:
        descriptor_full_state: The discriminator sees the whole observation
            instead of the environment's state descriptor (QDax's field).
        discriminator_hidden_layer_size: Hidden widths of the discriminator.
    """

    descriptor_full_state: bool = False
    discriminator_hidden_layer_size: tuple[int, ...] = (256, 256)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(
            self,
            "discriminator_hidden_layer_size",
            check_hidden_sizes(
                "discriminator_hidden_layer_size", self.discriminator_hidden_layer_size
            ),
        )


class DiscriminatorState(NamedTuple):
    """Parameters and Adam moments of the discriminator."""

    params: Any
    opt_state: Any


class _Discriminator:
    """DIAYN's diversity model (see :class:`~ribsax.rl._skill_sac.SkillSAC`)."""

    def __init__(self, config: DiaynConfig, prior: SkillPrior, input_size: int):
        self.config = config
        self.prior = prior
        self.input_size = input_size
        self.network = SkillDiscriminator(config.discriminator_hidden_layer_size, config.num_skills)

    def init(self, key) -> DiscriminatorState:
        params = self.network.init(key, jnp.zeros((1, self.input_size)))
        return DiscriminatorState(params, adam_init(params))

    def _output(self, params, transitions):
        _, next_desc = skill_descriptors(
            transitions, self.config.num_skills, self.config.descriptor_full_state
        )
        return self.network.apply(params, next_desc)

    def reward(self, state: DiscriminatorState, transitions, key):
        del key
        return diayn_reward(
            self.prior,
            self._output(state.params, transitions),
            skills_of(transitions, self.config.num_skills),
        )

    def update(self, state: DiscriminatorState, transitions, key):
        del key
        skills = skills_of(transitions, self.config.num_skills)

        def loss_fn(params):
            out = self._output(params, transitions)
            return -jnp.mean(discriminator_log_prob(self.prior, out, skills))

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        params, opt_state = adam_step(
            state.params, grads, state.opt_state, self.config.learning_rate
        )
        return DiscriminatorState(params, opt_state), {"discriminator_loss": loss}


class DIAYN(SkillSAC):
    """DIAYN: skill-conditioned SAC rewarded by a skill discriminator.

    The discriminator reads the state descriptor after each step
    (``next_state_desc``, or the observation with ``descriptor_full_state``) and is
    trained by maximum likelihood of the played skill on the same batches as SAC.
    See :class:`~ribsax.rl._skill_sac.SkillSAC` for ``init``, ``play_step``,
    ``update``, ``train`` and ``evaluate``.

    Args:
        config: :class:`DiaynConfig`.
        env: Training environment from :func:`~ribsax.rl.make_env` (a QD task, so
            that it has state descriptors, unless ``descriptor_full_state``).
        buffer_size: Replay-buffer capacity.

    Raises:
        TypeError: ``config`` is not a :class:`DiaynConfig`.
        ValueError: The environment has no state descriptor and
            ``descriptor_full_state`` is False; or skills are tiled and
            ``env.batch_size`` is not a multiple of ``num_skills``.
    """

    def __init__(self, config: DiaynConfig, env: RLEnv, *, buffer_size: int = 100_000, smerl=None):
        input_size = descriptor_size(config, env, DiaynConfig)
        super().__init__(
            config,
            env,
            _Discriminator(config, config.skill_prior(), input_size),
            buffer_size=buffer_size,
            smerl=smerl,
        )
