"""Scatter-add whose result does not change from run to run, on any backend.

On the CPU, XLA's scatter-add applies the updates one after another in index order,
so ``target.at[indices].add(updates)`` gives the same bits on every run, and the same
bits as NumPy's ``np.add.at`` (pyribs' CMA-MAE batch thresholds, for example). On a
GPU it adds with atomics whose order varies between runs, so floating-point sums over
repeated indices change in their last bits: enough to turn a tie into a win, and to
make two runs with one seed differ. :func:`scatter_add` keeps the in-order scatter on
the CPU and elsewhere sums each index's updates with a segmented scan over the
updates sorted by index (:func:`sorted_scatter_add`), which adds in a fixed order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["scatter_add", "sorted_scatter_add"]


def _in_order_scatter_add(target, indices, updates):
    return target.at[indices].add(updates, mode="drop")


def _segmented_sum(left, right):
    """Combines two runs of a segmented inclusive scan: ``right``'s value restarts
    where it holds the first element of a segment."""
    left_start, left_sum = left
    right_start, right_sum = right
    restart = right_start.reshape(right_start.shape + (1,) * (right_sum.ndim - 1))
    return left_start | right_start, jnp.where(restart, right_sum, left_sum + right_sum)


def sorted_scatter_add(target, indices, updates):
    """``target.at[indices].add(updates, mode="drop")`` in a fixed order of additions.

    The updates are stably sorted by index and summed per index by a segmented
    inclusive scan; each index then receives its sum in one scatter with unique
    indices. The order of the additions is fixed (a tree over each index's updates
    in batch order), so results repeat exactly on any backend, though they may
    differ in the last bits from adding the updates one by one.

    Args:
        target: ``(n, ...)`` array.
        indices: ``(m,)`` integer array. Out-of-range entries are dropped, as with
            ``mode="drop"``.
        updates: ``(m, ...)`` array; trailing dimensions match ``target``'s.

    Returns:
        ``target`` with the updates added.
    """
    count = indices.shape[0]
    if count == 0:
        return target
    order = jnp.argsort(indices, stable=True)
    sorted_indices = indices[order]
    change = sorted_indices[1:] != sorted_indices[:-1]
    starts = jnp.concatenate([jnp.ones(1, bool), change])
    ends = jnp.concatenate([change, jnp.ones(1, bool)])
    _, sums = jax.lax.associative_scan(_segmented_sum, (starts, updates[order]))
    # Only each index's last partial sum is its total; the others go to distinct
    # out-of-range slots, so the indices stay unique and those updates are dropped.
    slots = jnp.where(
        ends, sorted_indices, target.shape[0] + jnp.arange(count, dtype=sorted_indices.dtype)
    )
    return target.at[slots].add(sums, mode="drop", unique_indices=True)


def scatter_add(target, indices, updates):
    """``target.at[indices].add(updates, mode="drop")``, repeatable on every backend.

    Lowered for the CPU, this is XLA's in-order scatter-add (identical to
    ``np.add.at``); for any other platform it is :func:`sorted_scatter_add`.

    Args:
        target: ``(n, ...)`` array.
        indices: ``(m,)`` integer array; out-of-range entries are dropped.
        updates: ``(m, ...)`` array; trailing dimensions match ``target``'s.

    Returns:
        ``target`` with the updates added.
    """
    return jax.lax.platform_dependent(
        target, indices, updates, cpu=_in_order_scatter_add, default=sorted_scatter_add
    )
