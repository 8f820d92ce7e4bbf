"""Host side of the ranked evolution-strategy ``tell``: the restart rules and the
ranker's start, shared by EvolutionStrategyEmitter and
GradientArborescenceEmitter."""

from __future__ import annotations

import numbers

import numpy as np

from ribsax._utils import kernel_key, to_device

__all__ = ["restart_rule_fires", "setup_ranker", "sibling_seed"]


def restart_rule_fires(restart_rule, itrs, new_sols):
    """pyribs' rule-based restart check (works on host ints and traced values).

    Args:
        restart_rule: ``"no_improvement"``, ``"basic"`` or an int ``k``.
        itrs: Number of tells so far.
        new_sols: Number of solutions the last tell added to the archive.

    Returns:
        Whether the rule asks for a restart.

    Raises:
        ValueError: ``restart_rule`` is invalid.
    """
    if isinstance(restart_rule, numbers.Integral):
        return itrs % restart_rule == 0
    if restart_rule == "no_improvement":
        return new_sols == 0
    if restart_rule == "basic":
        return False
    raise ValueError(f"Invalid restart_rule {restart_rule}")


def sibling_seed(seed, tag: int):
    """A SeedSequence with ``seed``'s entropy and ``tag`` appended to its spawn
    key: a stream independent of ``seed``'s and of its children's, made without
    spawning from ``seed``."""
    return np.random.SeedSequence(
        seed.entropy, spawn_key=(*seed.spawn_key, tag), pool_size=seed.pool_size
    )


def setup_ranker(archive, ranker, ranker_seed):
    """Initialises ``ranker``'s kernel state if needed.

    Returns:
        ``(measure_lower, measure_upper, key)``: the archive's measure bounds
        (zeros when it has none) and the restart key, drawn from a sibling of the
        ranker's SeedSequence (same entropy, extra spawn key): independent of the
        ES and ranker streams, without spawning from the user's SeedSequence
        beyond pyribs' ``spawn(2)``.
    """
    mdtype = np.dtype(archive.dtypes["measures"])
    if ranker.state is None:
        ranker.state = ranker.kernels.init(
            ranker.config, kernel_key(ranker_seed), archive.measure_dim, mdtype
        )
    lower = np.asarray(
        getattr(archive, "lower_bounds", np.zeros(archive.measure_dim)), dtype=mdtype
    )
    upper = np.asarray(
        getattr(archive, "upper_bounds", np.zeros(archive.measure_dim)), dtype=mdtype
    )
    restart_seed = sibling_seed(ranker_seed, 0x5EED)
    return to_device(lower), to_device(upper), kernel_key(restart_seed)
