"""Emitters: generate new solutions for the archive.

Subpackages: :mod:`ribsax.emitters.opt` (evolution strategies and gradient optimizers),
:mod:`ribsax.emitters.operators` (variation operators) and
:mod:`ribsax.emitters.rankers`.
"""

from ribsax.emitters import operators, opt, rankers
from ribsax.emitters._bayesian_opt_emitter import BayesianOptimizationEmitter
from ribsax.emitters._emitter_base import EmitterBase
from ribsax.emitters._emitter_kernel import ArchiveView, EmitterFeedback, EmitterKernel
from ribsax.emitters._evolution_strategy_emitter import (
    EvolutionStrategyEmitter,
    EvolutionStrategyKernel,
)
from ribsax.emitters._gaussian_emitter import GaussianEmitter, GaussianKernel
from ribsax.emitters._genetic_algorithm_emitter import (
    GeneticAlgorithmEmitter,
    GeneticAlgorithmKernel,
)
from ribsax.emitters._gradient_arborescence_emitter import (
    GradientArborescenceEmitter,
    GradientArborescenceKernel,
)
from ribsax.emitters._gradient_operator_emitter import (
    GradientOperatorEmitter,
    GradientOperatorKernel,
)
from ribsax.emitters._iso_line_emitter import IsoLineEmitter, IsoLineKernel
from ribsax.emitters._jax_emitter import JaxEmitter
from ribsax.emitters._me_es_emitter import MEESEmitter, MEESKernel
from ribsax.emitters._variation_emitter import VariationKernel, VariationState

__all__ = [
    "BayesianOptimizationEmitter",
    "EvolutionStrategyEmitter",
    "EvolutionStrategyKernel",
    "GaussianEmitter",
    "GaussianKernel",
    "GeneticAlgorithmEmitter",
    "GeneticAlgorithmKernel",
    "GradientArborescenceEmitter",
    "GradientArborescenceKernel",
    "GradientOperatorEmitter",
    "GradientOperatorKernel",
    "IsoLineEmitter",
    "IsoLineKernel",
    "JaxEmitter",
    "MEESEmitter",
    "MEESKernel",
    "EmitterBase",
    "EmitterKernel",
    "EmitterFeedback",
    "ArchiveView",
    "VariationKernel",
    "VariationState",
    "operators",
    "opt",
    "rankers",
]

#: Emitters that need :mod:`ribsax.rl` (the ``rl`` extra: flashbax), imported on
#: first use so that ``import ribsax`` works without it.
_RL_EMITTERS = ("PGAMEEmitter", "PGAMEKernel")
_CMA_MEGA_TD3_EMITTERS = ("CMAMEGATD3Emitter", "CMAMEGATD3Kernel")
_DCRL_ME_EMITTERS = ("DCRLMEEmitter", "DCRLMEKernel")
_QDPG_EMITTERS = ("QDPGEmitter", "QDPGKernel")
_PBT_ME_EMITTERS = ("PBTMEEmitter", "PBTMEKernel")
__all__ += (
    list(_RL_EMITTERS)
    + list(_CMA_MEGA_TD3_EMITTERS)
    + list(_DCRL_ME_EMITTERS)
    + list(_QDPG_EMITTERS)
    + list(_PBT_ME_EMITTERS)
)


def __getattr__(name):
    if name in _RL_EMITTERS:
        from ribsax.emitters import _pgame_emitter

        return getattr(_pgame_emitter, name)
    if name in _CMA_MEGA_TD3_EMITTERS:
        from ribsax.emitters import _cma_mega_td3_emitter

        return getattr(_cma_mega_td3_emitter, name)
    if name in _DCRL_ME_EMITTERS:
        from ribsax.emitters import _dcrl_me_emitter

        return getattr(_dcrl_me_emitter, name)
    if name in _QDPG_EMITTERS:
        from ribsax.emitters import _qdpg_emitter

        return getattr(_qdpg_emitter, name)
    if name in _PBT_ME_EMITTERS:
        from ribsax.emitters import _pbt_me_emitter

        return getattr(_pbt_me_emitter, name)
    raise AttributeError(f"module 'ribsax.emitters' has no attribute {name!r}")
