"""PBT-SAC: a population of SAC agents with population-based training."""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from jax.sharding import Mesh

from ribsax.rl._checks import check_positive_int
from ribsax.rl._pbt import PBT
from ribsax.rl._pbt_population import PBTPopulation
from ribsax.rl._sac import SAC, SacConfig
from ribsax.rl._unroll import RLEnv

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
    policy_hidden_layer_size: Tuple[int, ...] = (256, 256)
    critic_hidden_layer_size: Tuple[int, ...] = (256, 256)
    fix_alpha: bool = False

    def sac_config(self) -> SacConfig:
        """The :class:`~ribsax.rl.SacConfig` of each member (validates the fields)."""
        return SacConfig(
            batch_size=self.batch_size, episode_length=self.episode_length,
            tau=self.tau, normalize_observations=self.normalize_observations,
            alpha_init=self.alpha_init,
            policy_hidden_layer_size=self.policy_hidden_layer_size,
            critic_hidden_layer_size=self.critic_hidden_layer_size,
            fix_alpha=self.fix_alpha)


class PBTSAC(PBTPopulation):
    """Population-based training of SAC agents (see
    :class:`~ribsax.rl._pbt_population.PBTPopulation` for ``init``, ``train``,
    ``evaluate``, ``qd_evaluate`` and ``update``).

    Args:
        config: :class:`PBTSacConfig`.
        env: Training environment of each member.
        population_size: Number of agents.
        num_best_to_replace_from: PBT sources are drawn among this many best.
        num_worse_to_replace: This many worst agents are replaced at each update.
        buffer_size: Replay-buffer capacity of each member.
        explore: ``"resample"`` (QDax) or ``"perturb"`` (see :class:`~ribsax.rl.PBT`).
        eval_env: Evaluation environment (default ``env``).
        mesh: Optional :func:`~ribsax.rl.population_mesh` to shard the members.
    """

    def __init__(self, config: PBTSacConfig, env: RLEnv, *, population_size: int,
                 num_best_to_replace_from: int, num_worse_to_replace: int,
                 buffer_size: int = 100_000, explore: str = "resample",
                 eval_env: Optional[RLEnv] = None, mesh: Optional[Mesh] = None):
        if not isinstance(config, PBTSacConfig):
            raise TypeError(f"config must be a PBTSacConfig, got "
                            f"{type(config).__name__}")
        check_positive_int("population_size", population_size)
        self.config = config
        pbt = PBT(population_size, num_best_to_replace_from, num_worse_to_replace,
                  PBT_SAC_RANGES, explore=explore)
        super().__init__(SAC(config.sac_config(), env.action_size), pbt, env,
                         buffer_size=buffer_size, eval_env=eval_env, mesh=mesh)
