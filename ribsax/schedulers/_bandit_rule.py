"""The bandit rule of :class:`~ribsax.schedulers.BanditScheduler`, for the host
and the traced loops.

:func:`bandit_selection` (reselection, then UCB1) and :func:`bandit_credit`
(selection and success counts) are written once against an array namespace:
``BanditScheduler.ask``/``tell`` run them with NumPy, the step functions with
``jax.numpy`` on a :class:`BanditState`. :func:`active_rows` and
:func:`spread_rows` gather the active emitters' rows of a pool's batch and spread
them back.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from ribsax.schedulers._units import unit_restarts

__all__ = [
    "BanditSpec",
    "BanditState",
    "bandit_selection",
    "bandit_credit",
    "loop_bandit_selection",
    "loop_bandit_credit",
    "active_row_count",
    "active_rows",
    "spread_rows",
]


class BanditSpec(NamedTuple):
    """Static settings of a :class:`~ribsax.schedulers.BanditScheduler` in the loop.

    Attributes:
        num_active: Number of active emitters.
        reselect_all: ``reselect == "all"`` (else ``"terminated"``).
    """

    num_active: int
    reselect_all: bool


class BanditState(NamedTuple):
    """Mutable bandit state carried through the loop.

    Attributes:
        active: bool[pool] active emitters.
        success: float64[pool] solutions accepted by the archive.
        selection: float64[pool] solutions emitted.
        restarts: int[pool] restart counts seen at the last selection (-1 for
            emitters without restarts).
        zeta: UCB1 exploration weight.
        tells: int32[pool] tells received during this run (host counters).
    """

    active: Any
    success: Any
    selection: Any
    restarts: Any
    zeta: Any
    tells: Any


def bandit_selection(
    xp,
    spec: BanditSpec,
    active,
    success,
    selection,
    zeta,
    restarts_now,
    restarts_seen,
    descending_order,
):
    """pyribs' BanditScheduler selection: reselection, then UCB1 (one rule for the
    host and the traced loop).

    Written against the array namespace ``xp`` (``numpy`` in
    :meth:`BanditScheduler.ask <ribsax.schedulers.BanditScheduler.ask>`,
    ``jax.numpy`` in :func:`~ribsax.schedulers._steps.ask_step`).

    Args:
        xp: ``numpy`` or ``jax.numpy``.
        spec: :class:`BanditSpec`.
        active: bool[pool] active emitters before the selection.
        success: float[pool] accepted solutions so far.
        selection: float[pool] emitted solutions so far.
        zeta: UCB1 exploration weight.
        restarts_now: int[pool] current restart counts (-1: no restarts).
        restarts_seen: int[pool] counts seen at the last selection.
        descending_order: ``ucb -> indices`` ordering the UCB1 scores from the
            highest; ties are the caller's choice (pyribs: ``np.argsort`` of an
            object array, reversed).

    Returns:
        ``(active, restarts_seen)`` after the selection.
    """
    pool = active.shape[0]
    if spec.reselect_all:
        reselect = active
    else:
        reselect = (restarts_now > restarts_seen) | (restarts_now < 0)
        restarts_seen = restarts_now

    # First call: activate the first inactive emitters until num_active are active;
    # the emitters scanned on the way are not reselected.
    num_needed = spec.num_active - xp.sum(active.astype(xp.int32))
    inactive_rank = xp.cumsum((~active).astype(xp.int32))
    hit = (~active) & (inactive_rank == num_needed)
    stop = xp.where(num_needed > 0, xp.argmax(hit), -1)
    prefix = xp.arange(pool) <= stop
    reselect = reselect & ~prefix
    active = (active | prefix) & ~reselect

    safe = xp.where(selection == 0, 1.0, selection)
    ucb = xp.where(
        selection == 0, xp.inf, success / safe + zeta * xp.sqrt(xp.log(xp.sum(success)) / safe)
    )
    order = descending_order(ucb)
    inactive_in_order = ~active[order]
    rank = xp.cumsum(inactive_in_order.astype(xp.int32))
    room = spec.num_active - xp.sum(active.astype(xp.int32))
    take = inactive_in_order & (rank <= room)
    newly = take[xp.argsort(order)]
    active = xp.where(xp.any(reselect), active | newly, active)
    return active, restarts_seen


def _per_emitter(xp, row_emitter, values, pool):
    """Sum of ``values`` (one per row) over the rows of each of ``pool``
    emitters (``row_emitter``: the emitter of each row)."""
    if xp is np:
        out = np.zeros(pool, values.dtype)
        np.add.at(out, row_emitter, values)
        return out
    return xp.zeros(pool, values.dtype).at[row_emitter].add(values)


def bandit_credit(xp, active, success, selection, row_emitter, status, emitted):
    """pyribs' BanditScheduler credit after a tell: each active emitter's
    selection grows by the solutions it emitted and its success by those the
    archive accepted (one rule for the host and the traced loop).

    Written against the array namespace ``xp`` (``numpy`` in
    :meth:`BanditScheduler.tell <ribsax.schedulers.BanditScheduler.tell>`,
    ``jax.numpy`` in :func:`~ribsax.schedulers._steps.tell_step`).

    Args:
        xp: ``numpy`` or ``jax.numpy``.
        active: bool[pool] active emitters of the ask.
        success: float[pool] accepted solutions so far.
        selection: float[pool] emitted solutions so far.
        row_emitter: int[rows] the emitter of each row of the batch.
        status: int[rows] the archive's add statuses (0: not accepted).
        emitted: int[pool] solutions each emitter emitted (ignored for inactive
            emitters).

    Returns:
        ``(success, selection)`` after the credit.
    """
    accepted = _per_emitter(xp, row_emitter, (status != 0).astype(success.dtype), active.shape[0])
    weight = active.astype(success.dtype)
    return (success + weight * accepted, selection + weight * emitted.astype(selection.dtype))


def traced_descending_order(ucb):
    """Descending UCB1 order with ties to the later emitter, as NumPy's insertion
    sort (``np.argsort`` of up to 16 emitters) gives them."""
    return jnp.argsort(ucb, stable=True)[::-1]


def loop_bandit_selection(plan, bandit: BanditState, states):
    """:func:`bandit_selection` on the loop's bandit state (restart counts read from
    the emitter states)."""
    restarts = jnp.full(plan.num_emitters, -1, jnp.int32)
    for unit, st in zip(plan.units, states):
        count = unit_restarts(unit, st)
        if count is not None:
            restarts = restarts.at[np.asarray(unit.indices)].set(count)
    active, seen = bandit_selection(
        jnp,
        plan.bandit,
        bandit.active,
        bandit.success,
        bandit.selection,
        bandit.zeta,
        restarts,
        bandit.restarts,
        traced_descending_order,
    )
    return bandit._replace(active=active, restarts=seen)


def loop_bandit_credit(layout, bandit: BanditState, status) -> BanditState:
    """:func:`bandit_credit` on the loop's bandit state, for the statuses of the
    whole pool's batch (``layout``: the plan's row layout), counting a tell for
    each active emitter."""
    success, selection = bandit_credit(
        jnp,
        bandit.active,
        bandit.success,
        bandit.selection,
        layout.row_emitter,
        status,
        layout.sizes,
    )
    return bandit._replace(
        success=success, selection=selection, tells=bandit.tells + bandit.active.astype(jnp.int32)
    )


def active_row_count(plan) -> int:
    """The largest number of rows that ``num_active`` emitters of a bandit's pool
    can ask for (the length of :func:`active_rows`)."""
    sizes = np.asarray(plan.layout.sizes)
    return int(np.sum(np.sort(sizes)[::-1][: plan.bandit.num_active]))


def active_rows(plan, active):
    """Indices of the rows of a bandit's active emitters, in pool order, padded
    with rows of inactive emitters to a fixed length: the largest number of rows
    that ``num_active`` emitters of the pool can ask for."""
    sizes = np.asarray(plan.layout.sizes, np.int32)
    count = active_row_count(plan)
    # The rows of each emitter are contiguous and in pool order, so ordering the
    # emitters (active first, stable) orders the rows: row p of the result is row
    # p - start of the emitter whose span in that order holds p. Sorting the
    # emitters instead of the rows keeps the sort small (XLA:CPU sorts slowly).
    order = jnp.argsort(~active, stable=True)
    spans = jnp.asarray(sizes)[order]
    ends = jnp.cumsum(spans)
    pos = jnp.arange(count, dtype=jnp.int32)
    k = jnp.sum(ends[None, :] <= pos[:, None], axis=1)
    first_row = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    return jnp.asarray(first_row)[order[k]] + pos - (ends[k] - spans[k])


def spread_rows(rows, arr, total):
    """``arr`` (one row per index of ``rows``, e.g. :func:`active_rows`) spread
    over a batch of ``total`` rows, zeros elsewhere."""
    return jnp.zeros((total,) + arr.shape[1:], arr.dtype).at[rows].set(arr)
