"""A scheduler's whole mutable state as one pytree, and back.

:func:`loop_carry` gathers the states of the archives, the emitter units and the
bandit into the carry that the step functions and the fused loop take;
:func:`install_carry` writes a carry back into the objects, which then behave
exactly as after the equivalent ask/tell calls.
"""

from __future__ import annotations

from ribsax.schedulers._loop_plan import LoopPlan

__all__ = ["loop_carry", "install_carry"]


def loop_carry(scheduler, plan: LoopPlan):
    """The scheduler's whole mutable state as one pytree.

    Returns:
        ``(archive_state, result_state_or_None, [unit states], bandit_or_None)``.
    """
    result = scheduler._result_archive
    return (
        scheduler.archive._loop_state(),
        None if result is None else result._loop_state(),
        [plan.unit_state(u) for u in plan.units],
        scheduler._loop_bandit_state(),
    )


def install_carry(scheduler, plan: LoopPlan, carry, iterations=None) -> None:
    """Writes ``carry`` back into the scheduler, its archives and emitters.

    Args:
        scheduler: The scheduler ``plan`` was built from.
        plan: The :class:`LoopPlan`.
        carry: Final carry of
            :func:`~ribsax.schedulers._scan.scan_iterations` (or of the step
            functions).
        iterations: Number of iterations run (optional and not needed: the
            emitters keep their counters in their states).
    """
    del iterations
    archive_state, result_state, unit_states, bandit = carry
    if archive_state is not None:
        scheduler.archive._loop_install(archive_state)
    if result_state is not None:
        scheduler._result_archive._loop_install(result_state)
    plan.install_unit_states(scheduler, unit_states)
    if bandit is not None:
        scheduler._loop_bandit_install(bandit)
    scheduler._last_called = "tell"
