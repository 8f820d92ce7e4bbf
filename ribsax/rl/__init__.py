"""Reinforcement learning in JAX: SAC, TD3 and the pieces they share.

Transitions, a device-resident replay buffer, running normalisation, flax
networks, a tanh-squashed Gaussian, environment unrolls in ``lax.scan`` and the
off-policy algorithms, each as a state pytree with pure jitted functions and a
thin class on top. Importing this package does not import brax; only
:func:`make_env` does. Nothing here imports ``ribsax.emitters`` or
``ribsax.schedulers``: QD-RL emitters import from here.
"""

from ribsax._running_stats import RunningMeanStd, RunningMeanStdState
from ribsax.rl._distributions import TanhNormal
from ribsax.rl._networks import MLP, DeterministicPolicy, GaussianPolicy, QNetwork
from ribsax.rl._off_policy import OffPolicyAgent
from ribsax.rl._optim import adam_init, adam_step, soft_update
from ribsax.rl._replay_buffer import ReplayBuffer
from ribsax.rl._sac import SAC, SacConfig, SacHyperparams, SacState
from ribsax.rl._td3 import TD3, TD3Config, TD3Hyperparams, TD3State
from ribsax.rl._transition import Transition
from ribsax.rl._unroll import (
    RLEnv,
    episode_returns,
    evaluate_policy,
    generate_unroll,
    make_env,
    play_step,
    wrap_env,
)

__all__ = [
    "Transition",
    "ReplayBuffer",
    "RunningMeanStd",
    "RunningMeanStdState",
    "MLP",
    "DeterministicPolicy",
    "GaussianPolicy",
    "QNetwork",
    "TanhNormal",
    "adam_init",
    "adam_step",
    "soft_update",
    "RLEnv",
    "make_env",
    "wrap_env",
    "play_step",
    "generate_unroll",
    "episode_returns",
    "evaluate_policy",
    "OffPolicyAgent",
    "SAC",
    "SacConfig",
    "SacHyperparams",
    "SacState",
    "TD3",
    "TD3Config",
    "TD3Hyperparams",
    "TD3State",
]

# Skill discovery (DIAYN, DADS, SMERL) and population-based training.
from ribsax.rl._dads import DADS, DadsConfig
from ribsax.rl._diayn import DIAYN, DiaynConfig
from ribsax.rl._pbt import PBT, population_map, population_mesh, shard_population
from ribsax.rl._skill_sac import SkillEvaluation, SkillSAC, SkillState
from ribsax.rl._skills import SkillPrior
from ribsax.rl._smerl import DADSSMERL, DIAYNSMERL, DadsSmerlConfig, DiaynSmerlConfig

__all__ += [
    "SkillPrior",
    "SkillSAC",
    "SkillState",
    "SkillEvaluation",
    "DiaynConfig",
    "DIAYN",
    "DadsConfig",
    "DADS",
    "DiaynSmerlConfig",
    "DIAYNSMERL",
    "DadsSmerlConfig",
    "DADSSMERL",
    "PBT",
    "population_mesh",
    "shard_population",
    "population_map",
]
from ribsax.rl._pbt_population import PBTPopulation, PopulationState  # noqa: E402
from ribsax.rl._pbt_sac import PBTSAC, PBTSacConfig  # noqa: E402
from ribsax.rl._pbt_td3 import PBTTD3, PBTTD3Config  # noqa: E402

__all__ += ["PBTPopulation", "PopulationState", "PBTSacConfig", "PBTSAC", "PBTTD3Config", "PBTTD3"]
