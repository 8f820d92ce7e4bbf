"""A scheduler's whole mutable state as one pytree, and back.

:func:`loop_carry` gathers the states of the archives, the emitter units and the
bandit into the carry that the step functions and the fused loop take;
:func:`install_carry` writes a carry back into the objects, which then behave
exactly as after the equivalent ask/tell calls.
"""

from __future__ import annotations

from ribsax.archives._array_store import committed
from ribsax.emitters._placement import on_mesh
from ribsax.schedulers._loop_plan import LoopPlan

__all__ = ["loop_carry", "install_carry", "carry_on_mesh", "carry_off_mesh"]


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


def carry_on_mesh(plan: LoopPlan, carry):
    """``carry`` laid out for traced code when an emitter's kernel spreads its
    state over a device mesh (:attr:`LoopPlan.mesh`): the leaves already laid
    out over the mesh (e.g. ME-PBT's sharded agents) as they are, every other
    leaf (the archives' states, the other emitters' states, the bandit's)
    replicated over its devices. Unchanged without a mesh."""
    return on_mesh(carry, plan.mesh)


def carry_off_mesh(plan: LoopPlan, carry, device=None):
    """The inverse of :func:`carry_on_mesh` before :func:`install_carry`: the
    archives' and the bandit's states committed to ``device`` (None: the
    default device), where their objects keep them; the emitters' states stay
    on the mesh. Unchanged without a mesh."""
    if plan.mesh is None:
        return carry
    archive_state, result_state, unit_states, bandit = carry
    archive_state, result_state, bandit = committed((archive_state, result_state, bandit), device)
    return archive_state, result_state, unit_states, bandit
