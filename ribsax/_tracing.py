"""Tracing helpers shared by the fused kernels.

XLA:CPU gives every output of a conditional or a loop its own buffer, so a large
array that only passes through one (a CMA-ES covariance the ask step leaves as it
is) is copied on every execution. JAX drops an output from a ``lax.cond`` when every
branch returns one of the operands unchanged; these helpers find such pass-through
outputs so that callers can build branches and loop carries without them.
"""
from __future__ import annotations

import jax

__all__ = ["forwarded_leaves"]


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
