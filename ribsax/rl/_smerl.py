"""SMERL (Kumar et al. 2020): diversity rewards behind a task-return gate.

Structured Maximum Entropy RL trains skills that are diverse *and* near-optimal:
each transition is rewarded with the task reward, plus
``diversity_reward_scale`` times the diversity reward of DIAYN or DADS when the
task return of its episode reached ``smerl_target - smerl_margin``
(:func:`~ribsax.rl._skills.smerl_reward`). The two variants differ only in their
diversity model; the gate and the episode-return bookkeeping live in
:class:`~ribsax.rl._skill_sac.SkillSAC`, whose ``train`` unrolls whole episodes by
default for SMERL so that returns are known.
"""

from __future__ import annotations

import dataclasses

from ribsax.rl._dads import DADS, DadsConfig
from ribsax.rl._diayn import DIAYN, DiaynConfig
from ribsax.rl._unroll import RLEnv

__all__ = ["DiaynSmerlConfig", "DadsSmerlConfig", "DIAYNSMERL", "DADSSMERL"]


@dataclasses.dataclass(frozen=True)
class _SmerlFields:
    """SMERL's fields (QDax's names and defaults).

    Attributes:
        diversity_reward_scale: Weight of the diversity reward when the gate opens.
        smerl_target: Task return the agents are expected to reach.
        smerl_margin: The gate opens for episodes whose return is at least
            ``smerl_target - smerl_margin`` (inclusive).
    """

    diversity_reward_scale: float = 1.0
    smerl_target: float = 1e3
    smerl_margin: float = 1e2


@dataclasses.dataclass(frozen=True)
class DiaynSmerlConfig(_SmerlFields, DiaynConfig):
    """:class:`~ribsax.rl.DiaynConfig` plus SMERL's ``diversity_reward_scale=1.0``,
    ``smerl_target=1e3`` and ``smerl_margin=1e2``."""


@dataclasses.dataclass(frozen=True)
class DadsSmerlConfig(_SmerlFields, DadsConfig):
    """:class:`~ribsax.rl.DadsConfig` plus SMERL's ``diversity_reward_scale=1.0``,
    ``smerl_target=1e3`` and ``smerl_margin=1e2``."""


def _gate(config, expected):
    if not isinstance(config, expected):
        raise TypeError(f"config must be a {expected.__name__}, got {type(config).__name__}")
    if config.smerl_margin < 0:
        raise ValueError(f"smerl_margin must be non-negative, got {config.smerl_margin}")
    return (
        float(config.smerl_target),
        float(config.smerl_margin),
        float(config.diversity_reward_scale),
    )


class DIAYNSMERL(DIAYN):
    """SMERL with DIAYN's discriminator (see :class:`~ribsax.rl.DIAYN`).

    Args:
        config: :class:`DiaynSmerlConfig`.
        env: Training environment from :func:`~ribsax.rl.make_env`.
        buffer_size: Replay-buffer capacity.
    """

    def __init__(self, config: DiaynSmerlConfig, env: RLEnv, *, buffer_size: int = 100_000):
        super().__init__(
            config, env, buffer_size=buffer_size, smerl=_gate(config, DiaynSmerlConfig)
        )


class DADSSMERL(DADS):
    """SMERL with DADS' skill dynamics (see :class:`~ribsax.rl.DADS`).

    Args:
        config: :class:`DadsSmerlConfig`.
        env: Training environment from :func:`~ribsax.rl.make_env`.
        buffer_size: Replay-buffer capacity.
    """

    def __init__(self, config: DadsSmerlConfig, env: RLEnv, *, buffer_size: int = 100_000):
        super().__init__(config, env, buffer_size=buffer_size, smerl=_gate(config, DadsSmerlConfig))
