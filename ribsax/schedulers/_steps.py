"""The step functions: one ask and one tell of the whole scheduler (pure).

:func:`ask_step` and :func:`tell_step` run on the carry of
:func:`~ribsax.schedulers._carry.loop_carry`: the bandit's selection, the
emitters' asks (:mod:`~ribsax.schedulers._emitter_steps`), the archive add(s)
with non-finite rows kept out, the bandit's credit and the emitters' tells. The
fused loop (:mod:`~ribsax.schedulers._scan`) scans them, and
:mod:`ribsax.functional` exposes them as ``ask`` and ``tell``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ribsax._tracing import forwarded_leaves
from ribsax.archives._threshold_archive import loop_add, loop_view
from ribsax.emitters._fusion import any_across_trials
from ribsax.schedulers._bandit_rule import (
    active_rows,
    loop_bandit_credit,
    loop_bandit_selection,
    spread_rows,
)
from ribsax.schedulers._emitter_steps import (
    emitters_ask,
    emitters_prepare,
    emitters_tell,
)
from ribsax.schedulers._evaluation import finite_rows, without_non_finite

__all__ = ["ask_step", "tell_step", "tell_step_rows"]


def ask_step(plan, carry, dqd=False):
    """One ask (``ask_dqd`` when ``dqd``) of the whole scheduler (pure).

    A bandit scheduler first selects its active emitters
    (:func:`~ribsax.schedulers._bandit_rule.bandit_selection`);
    the units without an active member are skipped (their rows are zeros, kept out
    of the archive by :func:`tell_step`), and only the active ones keep their new
    state.

    Args:
        plan: :class:`~ribsax.schedulers._loop_plan.LoopPlan` (static).
        carry: From :func:`~ribsax.schedulers._carry.loop_carry`.
        dqd: Whether to run the DQD emitters' ``ask_dqd`` kernels.

    Returns:
        ``(carry, solutions)``: the whole batch in emitter order (``[batch,
        *solution_dim]``, ``plan.layout.total`` rows; ``plan.dqd_layout`` when
        ``dqd``).
    """
    archive, result, states, bandit = carry
    active = None
    if bandit is not None:
        bandit = loop_bandit_selection(plan, bandit, states)
        active = bandit.active
    view = loop_view(archive)
    states = emitters_prepare(plan, states, active, dqd)
    states, solutions = _computed_once(
        lambda st: emitters_ask(plan, view, st, active, dqd), states, archive.store.n_occupied >= 0
    )
    return (archive, result, states, bandit), solutions


def _computed_once(fn, operand, always_true):
    """``fn(operand)`` with its outputs materialised once.

    XLA:CPU fuses chains of cheap elementwise operations into each of their
    consumers and recomputes them there: the emitters' Gaussian draws (random bits
    and the erf-inverse polynomial), consumed by the evaluation, the Jacobian and
    the archive writes, would be computed again in each consumer. The outputs of a
    conditional are buffers, so ``fn`` runs as the taken branch of one whose
    predicate, ``always_true``, holds at run time but is not known to the
    compiler (``lax.optimization_barrier`` is removed before fusion on CPU). The
    other branch, never taken, returns zeros, except for the leaves that ``fn``
    passes through unchanged, which it returns too, so that the conditional does
    not output (and copy) them. Under
    ``run_trials``' vmap the predicate is or-ed over the trials, so the conditional
    stays one (a batched predicate would run both branches and select).
    """
    forwarded, out_shape = forwarded_leaves(fn, operand)
    out_leaves, treedef = jax.tree.flatten(out_shape)

    def skipped(op):
        # The leaves that ``fn`` returns unchanged are returned here too, so the
        # conditional does not output (and copy) them.
        ins = jax.tree.leaves(op)
        return treedef.unflatten(
            [
                jnp.zeros(s.shape, s.dtype) if i is None else ins[i]
                for i, s in zip(forwarded, out_leaves)
            ]
        )

    return jax.lax.cond(any_across_trials(always_true), fn, skipped, operand)


def tell_step(plan, carry, data, jacobian=None, dqd=False):
    """One tell (``tell_dqd``) of the whole scheduler (pure): archive add(s),
    bandit credit, emitters' tell kernels.

    Args:
        plan: :class:`~ribsax.schedulers._loop_plan.LoopPlan` (static).
        carry: The carry returned by :func:`ask_step`.
        data: name -> [batch, ...]: ``solution``, ``objective``, ``measures`` and
            the archives' extra fields, rows as :func:`ask_step` returned them.
        jacobian: [batch, 1 + measure_dim, *solution_dim] for the DQD phase.
        dqd: Whether this is the DQD phase.

    Returns:
        ``(carry, add_info)`` with the archive's ``status`` and ``value`` per row.
        Rows of a bandit's inactive emitters are kept out of the archive (status 0).
        Rows whose objective, measures (or Jacobian) are not finite are kept out
        of every archive too: status 0, value ``-inf``; the emitters see them as
        not added, with objective ``-inf`` and zero measures.
    """
    carry, add_info, _, _ = tell_step_rows(plan, carry, data, jacobian, dqd)
    return carry, add_info


def tell_step_rows(plan, carry, data, jacobian, dqd):
    """:func:`tell_step` that also returns the result archive's statuses per row
    (the archive's when there is no result archive) and which rows were finite."""
    archive, result, states, bandit = carry
    layout = plan.dqd_layout if dqd else plan.layout
    # Non-finite rows never enter an archive, and reach the emitters as rows
    # that were not added (status 0, value -inf, ``valid`` False).
    finite = finite_rows(data["objective"], data["measures"], jacobian)
    data, emitter_data, jacobian = without_non_finite(data, jacobian, finite)
    active = None
    rows = None
    added = data
    if bandit is not None:
        active = bandit.active
        # The archive sees the active emitters' rows, in pool order: gathered
        # first (active_rows), then padding rows of inactive emitters, which
        # compete for nothing (-inf beats no threshold).
        rows = active_rows(plan, active)
        row_active = active[layout.row_emitter]
        added = {name: jax.tree.map(lambda v: v[rows], value) for name, value in data.items()}
        added["objective"] = jnp.where(row_active[rows], added["objective"], -jnp.inf)
    archive, add_info = loop_add(plan.archive_spec, archive, added)
    result_status = add_info["status"]
    if result is not None:
        result, result_info = loop_add(plan.result_spec, result, added)
        result_status = result_info["status"]
    if rows is not None:
        add_info = {
            name: spread_rows(rows, value, layout.total) for name, value in add_info.items()
        }
        result_status = spread_rows(rows, result_status, layout.total)
    if bandit is not None:
        bandit = loop_bandit_credit(layout, bandit, add_info["status"])
    add_info = dict(
        add_info,
        value=jnp.where(finite, add_info["value"], -jnp.inf).astype(add_info["value"].dtype),
    )
    states = emitters_tell(
        plan,
        loop_view(archive),
        archive.store.n_occupied > 0,
        states,
        active,
        emitter_data,
        dict(add_info, valid=finite),
        jacobian,
        dqd,
    )
    return (archive, result, states, bandit), add_info, result_status, finite
