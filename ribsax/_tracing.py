"""Tracing helpers shared by the fused kernels.

XLA:CPU gives every output of a conditional or a loop its own buffer, so a large
array that only passes through one (a CMA-ES covariance the ask step leaves as it
is) is copied on every execution. JAX drops an output from a ``lax.cond`` when every
branch returns one of the operands unchanged; these helpers find such pass-through
outputs so that callers can build branches and loop carries without them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["forwarded_leaves", "update_members"]


def forwarded_leaves(fn, *args):
    """Which leaves of ``fn(*args)`` are input leaves returned unchanged.

    ``fn`` is traced once (nothing is computed), so this also works on tracers
    inside a jitted function.

    Args:
        fn: Function of ``args`` returning a pytree.
        args: Its arguments (pytrees of arrays, tracers or ``ShapeDtypeStruct``).

    Returns:
        ``(forwarded, out_shape)``: ``forwarded[i]`` is the position, among the
        flattened leaves of ``args``, of the input that the ``i``-th output leaf
        is, or None when the output is computed; ``out_shape`` is the output
        pytree of ``jax.ShapeDtypeStruct``.
    """
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    position = {id(var): i for i, var in enumerate(closed.jaxpr.invars)}
    return [position.get(id(var)) for var in closed.jaxpr.outvars], out_shape


def update_members(fn, mask, stacked, inputs=None, *, keep_axis):
    """Runs ``fn`` on the members of a stack where ``mask`` is set, one after
    another in a loop (in index order), writing each result back into the member's
    slot.

    The stack is updated in place: only the leaves that ``fn`` computes are carried
    through the loop (see :func:`forwarded_leaves`), so the others are neither
    copied nor rewritten, and the other members keep their values.

    Args:
        fn: ``fn(member[, member_inputs]) -> (member, out)``.
        mask: bool[members], the members to visit.
        stacked: State pytree whose leaves have a leading member axis.
        inputs: Optional pytree of per-member inputs (leading member axis).
        keep_axis: Whether ``fn`` receives (and returns) each member with a member
            axis of length 1 (stacked kernels) or without it.

    Returns:
        ``(stacked, outs)``: the updated stack, and ``out`` of every visited member
        at its index of a ``[members, ...]`` stack (zeros elsewhere).
    """
    leaves, treedef = jax.tree.flatten(stacked)
    members = mask.shape[0]
    order = jnp.nonzero(mask, size=members, fill_value=0)[0]

    def read(tree, i):
        return jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=keep_axis), tree)

    def call(member, member_inputs):
        return fn(member) if member_inputs is None else fn(member, member_inputs)

    forwarded, out_shape = forwarded_leaves(call, read(stacked, 0), read(inputs, 0))
    changed = [j for j in range(len(leaves)) if forwarded[j] != j]
    outs = jax.tree.map(
        lambda s: jnp.zeros((members,) + s.shape[1 if keep_axis else 0 :], s.dtype), out_shape[1]
    )

    def with_carried(carried):
        current = list(leaves)
        for position, leaf in zip(changed, carried):
            current[position] = leaf
        return current

    def body(k, carry):
        carried, outs = carry
        i = order[k]
        new, out = call(treedef.unflatten(read(with_carried(carried), i)), read(inputs, i))
        new = jax.tree.leaves(new)
        carried = [
            jax.lax.dynamic_update_index_in_dim(leaf, new[position], i, 0)
            for position, leaf in zip(changed, carried)
        ]
        outs = jax.tree.map(
            lambda buf, o: jax.lax.dynamic_update_index_in_dim(buf, o, i, 0), outs, out
        )
        return carried, outs

    carried, outs = jax.lax.fori_loop(
        0, jnp.sum(mask, dtype=jnp.int32), body, ([leaves[j] for j in changed], outs)
    )
    return treedef.unflatten(with_carried(carried)), outs
