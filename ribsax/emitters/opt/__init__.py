"""Optimizers used by emitters: evolution strategies and gradient-based optimizers.

Each optimizer is a thin pyribs-compatible object around a **functional core**: a
hashable configuration, a state pytree and pure, ``jit``/``vmap``-able kernels
(``.kernels`` on each class; ``.config`` and ``.state`` on each instance). Schedulers
use the kernels to run many emitters of one configuration as a single vmapped kernel.

When an emitter takes an optimizer, it accepts the class (or any callable returning an
instance), its full name, or one of these abbreviations:

Evolution strategies (:class:`EvolutionStrategyBase`):

* ``cma_es``: :class:`CMAEvolutionStrategy`
* ``lm_ma_es``: :class:`LMMAEvolutionStrategy`
* ``openai_es``: :class:`OpenAIEvolutionStrategy`
* ``pycma_es``: :class:`PyCMAEvolutionStrategy` (NumPy-backed, needs `pycma
  <https://github.com/CMA-ES/pycma>`_: the ``pycma`` extra)
* ``sep_cma_es``: :class:`SeparableCMAEvolutionStrategy`

Gradient-based optimizers (:class:`GradientOptBase`):

* ``adam``: :class:`AdamOpt`
* ``gradient_ascent``: :class:`GradientAscentOpt`
"""

from __future__ import annotations

from ribsax.emitters.opt._adam_opt import ADAM_KERNELS, AdamConfig, AdamOpt
from ribsax.emitters.opt._cma_es import (
    CMA_ES_KERNELS,
    CMAESConfig,
    CMAEvolutionStrategy,
)
from ribsax.emitters.opt._evolution_strategy_base import (
    ESKernels,
    EvolutionStrategyBase,
    single_threaded_blas,
)
from ribsax.emitters.opt._gradient_ascent_opt import (
    GRADIENT_ASCENT_KERNELS,
    GradientAscentConfig,
    GradientAscentOpt,
)
from ribsax.emitters.opt._gradient_opt_base import GradientOptBase, GradOptKernels
from ribsax.emitters.opt._lm_ma_es import (
    LM_MA_ES_KERNELS,
    LMMAESConfig,
    LMMAEvolutionStrategy,
)
from ribsax.emitters.opt._openai_es import (
    OPENAI_ES_KERNELS,
    OpenAIESConfig,
    OpenAIEvolutionStrategy,
)
from ribsax.emitters.opt._pycma_es import PyCMAEvolutionStrategy
from ribsax.emitters.opt._sep_cma_es import (
    SEP_CMA_ES_KERNELS,
    SeparableCMAEvolutionStrategy,
    SepCMAESConfig,
)

__all__ = [
    "CMAEvolutionStrategy",
    "LMMAEvolutionStrategy",
    "OpenAIEvolutionStrategy",
    "PyCMAEvolutionStrategy",
    "SeparableCMAEvolutionStrategy",
    "EvolutionStrategyBase",
    "AdamOpt",
    "GradientAscentOpt",
    "GradientOptBase",
    "ESKernels",
    "GradOptKernels",
    "CMAESConfig",
    "SepCMAESConfig",
    "LMMAESConfig",
    "OpenAIESConfig",
    "AdamConfig",
    "GradientAscentConfig",
    "CMA_ES_KERNELS",
    "SEP_CMA_ES_KERNELS",
    "LM_MA_ES_KERNELS",
    "OPENAI_ES_KERNELS",
    "ADAM_KERNELS",
    "GRADIENT_ASCENT_KERNELS",
    "single_threaded_blas",
]

_NAME_TO_GRAD_OPT_MAP = {
    "AdamOpt": AdamOpt,
    "GradientAscentOpt": GradientAscentOpt,
    "adam": AdamOpt,
    "gradient_ascent": GradientAscentOpt,
}

_NAME_TO_ES_MAP = {
    "CMAEvolutionStrategy": CMAEvolutionStrategy,
    "SeparableCMAEvolutionStrategy": SeparableCMAEvolutionStrategy,
    "LMMAEvolutionStrategy": LMMAEvolutionStrategy,
    "OpenAIEvolutionStrategy": OpenAIEvolutionStrategy,
    "PyCMAEvolutionStrategy": PyCMAEvolutionStrategy,
    "cma_es": CMAEvolutionStrategy,
    "sep_cma_es": SeparableCMAEvolutionStrategy,
    "lm_ma_es": LMMAEvolutionStrategy,
    "openai_es": OpenAIEvolutionStrategy,
    "pycma_es": PyCMAEvolutionStrategy,
}


def _build(klass, kwargs, name_map, kind, base):
    """Resolves ``klass`` (name or callable) and builds an instance of ``base``."""
    if isinstance(klass, str):
        if klass in name_map:
            klass = name_map[klass]
        else:
            raise ValueError(f"`{klass}` is not the full or abbreviated name of a valid {kind}")
    if callable(klass):
        obj = klass(**kwargs)
        if isinstance(obj, base):
            return obj
        raise ValueError(f"Callable `{klass}` did not return an instance of {base.__name__}.")
    raise ValueError(f"`{klass}` is neither a callable nor a string")


def _get_grad_opt(klass, **grad_opt_kwargs) -> GradientOptBase:
    """Builds a gradient optimizer from its name, abbreviation, or a callable.

    Args:
        klass: Name (``"adam"``, ``"AdamOpt"`` ...) or callable returning a
            :class:`GradientOptBase`.
        grad_opt_kwargs: Constructor arguments.

    Returns:
        The optimizer instance.

    Raises:
        ValueError: Unknown name, callable returning something else, or neither a
            callable nor a string.
    """
    return _build(
        klass, grad_opt_kwargs, _NAME_TO_GRAD_OPT_MAP, "gradient optimizer", GradientOptBase
    )


def _get_es(klass, **es_kwargs) -> EvolutionStrategyBase:
    """Builds an evolution strategy from its name, abbreviation, or a callable.

    Args:
        klass: Name (``"cma_es"``, ``"pycma_es"``, ``"CMAEvolutionStrategy"`` ...)
            or callable
            returning an :class:`EvolutionStrategyBase`.
        es_kwargs: Constructor arguments.

    Returns:
        The ES instance.

    Raises:
        ValueError: Unknown name, callable returning something else, or neither a
            callable nor a string.
    """
    return _build(klass, es_kwargs, _NAME_TO_ES_MAP, "evolution strategy", EvolutionStrategyBase)
