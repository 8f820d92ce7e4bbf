"""PBT-SAC: a population of SAC agents with population-based training."""

from __future__ import annotations

import dataclasses

from ribsax.rl._pbt_population import PresetPBT
from ribsax.rl._sac import SAC, SacConfig

__all__ = ["PBTSacConfig", "PBTSAC", "PBT_SAC_RANGES"]

PBT_SAC_RANGES = (
    ("discount", 0.9, 1.0),
    ("policy_learning_rate", 3e-5, 3e-3),
    ("critic_learning_rate", 3e-5, 3e-3),
    ("alpha_learning_rate", 3e-5, 3e-3),
    ("reward_scaling", 0.1, 10.0),
)
"""QDax's PBT-SAC hyperparameter ranges (uniform sampling)."""


@dataclasses.dataclass(frozen=True)
class PBTSacConfig:
    """PBT-SAC settings (QDax's ``PbtSacConfig`` fields); the learning rates,
    discount and reward scaling are per-member hyperparameters in
    :data:`PBT_SAC_RANGES`.

    Attributes:
        batch_size: Transitions per gradient step.
        episode_length: Time limit of training episodes.
        tau: Polyak rate of the target critics.
        normalize_observations: Normalise observations with running statistics.
        alpha_init: Initial temperature.
        policy_hidden_layer_size: Hidden widths of the policy.
        critic_hidden_layer_size: Hidden widths of each critic.
        fix_alpha: Keep the temperature at ``alpha_init``.
    """

    batch_size: int
    episode_length: int
    tau: float = 0.005
    normalize_observations: bool = False
    alpha_init: float = 1.0
    policy_hidden_layer_size: tuple[int, ...] = (256, 256)
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    fix_alpha: bool = False

    def sac_config(self) -> SacConfig:
        """The :class:`~ribsax.rl.SacConfig` of each member (validates the fields)."""
        return SacConfig(
            batch_size=self.batch_size,
            episode_length=self.episode_length,
            tau=self.tau,
            normalize_observations=self.normalize_observations,
            alpha_init=self.alpha_init,
            policy_hidden_layer_size=self.policy_hidden_layer_size,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            fix_alpha=self.fix_alpha,
        )


class PBTSAC(PresetPBT):
    """Population-based training of SAC agents.

    Constructor arguments: see :class:`~ribsax.rl._pbt_population.PresetPBT`
    (``config`` is a :class:`PBTSacConfig`); functions ``init``, ``train``,
    ``evaluate``, ``qd_evaluate`` and ``update``: see
    :class:`~ribsax.rl._pbt_population.PBTPopulation`. Hyperparameters are drawn
    in :data:`PBT_SAC_RANGES`.
    """

    config_type = PBTSacConfig
    ranges = PBT_SAC_RANGES

    @staticmethod
    def make_agent(config, action_size: int):
        return SAC(config.sac_config(), action_size)
