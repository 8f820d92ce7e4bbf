"""PBT-TD3: a population of TD3 agents with population-based training."""

from __future__ import annotations

import dataclasses

from ribsax.rl._pbt_population import PresetPBT
from ribsax.rl._td3 import TD3, TD3Config

__all__ = ["PBTTD3Config", "PBTTD3", "PBT_TD3_RANGES"]

PBT_TD3_RANGES = (
    ("discount", 0.9, 1.0),
    ("policy_learning_rate", 3e-5, 3e-3),
    ("critic_learning_rate", 3e-5, 3e-3),
    ("noise_clip", 0.0, 1.0),
    ("policy_noise", 0.0, 1.0),
    ("expl_noise", 0.0, 0.2),
)
"""PBT-TD3 hyperparameter ranges (uniform sampling; QDax's, as we read them)."""


@dataclasses.dataclass(frozen=True)
class PBTTD3Config:
    """PBT-TD3 settings (QDax's ``PbtTd3Config`` fields); the learning rates,
    discount and noises are per-member hyperparameters in :data:`PBT_TD3_RANGES`.

    Attributes:
        episode_length: Time limit of training episodes.
        batch_size: Transitions per gradient step.
        policy_delay: Actor and targets are updated every ``policy_delay`` steps.
        soft_tau_update: Polyak rate of the target networks.
        critic_hidden_layer_size: Hidden widths of each critic.
        policy_hidden_layer_size: Hidden widths of the actor.
    """

    episode_length: int = 1000
    batch_size: int = 256
    policy_delay: int = 2
    soft_tau_update: float = 0.005
    critic_hidden_layer_size: tuple[int, ...] = (256, 256)
    policy_hidden_layer_size: tuple[int, ...] = (256, 256)

    def td3_config(self) -> TD3Config:
        """The :class:`~ribsax.rl.TD3Config` of each member (validates the fields)."""
        return TD3Config(
            episode_length=self.episode_length,
            batch_size=self.batch_size,
            policy_delay=self.policy_delay,
            soft_tau_update=self.soft_tau_update,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            policy_hidden_layer_size=self.policy_hidden_layer_size,
        )


class PBTTD3(PresetPBT):
    """Population-based training of TD3 agents.

    Constructor arguments: see :class:`~ribsax.rl._pbt_population.PresetPBT`
    (``config`` is a :class:`PBTTD3Config`); functions ``init``, ``train``,
    ``evaluate``, ``qd_evaluate`` and ``update``: see
    :class:`~ribsax.rl._pbt_population.PBTPopulation`. Hyperparameters are drawn
    in :data:`PBT_TD3_RANGES`.
    """

    config_type = PBTTD3Config
    ranges = PBT_TD3_RANGES

    @staticmethod
    def make_agent(config, action_size: int):
        return TD3(config.td3_config(), action_size)
