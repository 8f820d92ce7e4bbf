"""PBT-TD3: a population of TD3 agents with population-based training."""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from jax.sharding import Mesh

from ribsax.rl._checks import check_positive_int
from ribsax.rl._pbt import PBT
from ribsax.rl._pbt_population import PBTPopulation
from ribsax.rl._td3 import TD3, TD3Config
from ribsax.rl._unroll import RLEnv

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
    critic_hidden_layer_size: Tuple[int, ...] = (256, 256)
    policy_hidden_layer_size: Tuple[int, ...] = (256, 256)

    def td3_config(self) -> TD3Config:
        """The :class:`~ribsax.rl.TD3Config` of each member (validates the fields)."""
        return TD3Config(
            episode_length=self.episode_length, batch_size=self.batch_size,
            policy_delay=self.policy_delay, soft_tau_update=self.soft_tau_update,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            policy_hidden_layer_size=self.policy_hidden_layer_size)


class PBTTD3(PBTPopulation):
    """Population-based training of TD3 agents (see
    :class:`~ribsax.rl._pbt_population.PBTPopulation` for ``init``, ``train``,
    ``evaluate``, ``qd_evaluate`` and ``update``).

    Args:
        config: :class:`PBTTD3Config`.
        env: Training environment of each member.
        population_size: Number of agents.
        num_best_to_replace_from: PBT sources are drawn among this many best.
        num_worse_to_replace: This many worst agents are replaced at each update.
        buffer_size: Replay-buffer capacity of each member.
        explore: ``"resample"`` (QDax) or ``"perturb"`` (see :class:`~ribsax.rl.PBT`).
        eval_env: Evaluation environment (default ``env``).
        mesh: Optional :func:`~ribsax.rl.population_mesh` to shard the members.
    """

    def __init__(self, config: PBTTD3Config, env: RLEnv, *, population_size: int,
                 num_best_to_replace_from: int, num_worse_to_replace: int,
                 buffer_size: int = 100_000, explore: str = "resample",
                 eval_env: Optional[RLEnv] = None, mesh: Optional[Mesh] = None):
        if not isinstance(config, PBTTD3Config):
            raise TypeError(f"config must be a PBTTD3Config, got "
                            f"{type(config).__name__}")
        check_positive_int("population_size", population_size)
        self.config = config
        pbt = PBT(population_size, num_best_to_replace_from, num_worse_to_replace,
                  PBT_TD3_RANGES, explore=explore)
        super().__init__(TD3(config.td3_config(), env.action_size), pbt, env,
                         buffer_size=buffer_size, eval_env=eval_env, mesh=mesh)
