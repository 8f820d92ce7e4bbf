"""Pieces shared by the differentiable-QD emitters (GradientArborescence and
GradientOperator): Jacobian validation with pyribs' messages, and the row
normalisation of ``tell_dqd``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_batch_shape, check_finite, validate_batch
from ribsax.emitters._emitter_base import validate_add_info

__all__ = [
    "ASK_BEFORE_MSG",
    "TELL_BEFORE_MSG",
    "validate_dqd_batch",
    "normalize_jacobian",
]

#: pyribs' RuntimeError for ``ask`` before any ``tell_dqd``.
ASK_BEFORE_MSG = "Please call ask_dqd() and tell_dqd() before calling ask()."
#: pyribs' RuntimeError for ``tell`` before any ``tell_dqd``.
TELL_BEFORE_MSG = "Please call ask_dqd(), tell_dqd(), and ask() before calling tell()."


def validate_dqd_batch(archive, data: dict, add_info: dict, jacobian):
    """pyribs' ``validate_batch(archive, data, add_info, jacobian)`` of ``tell_dqd``.

    The data is checked first, then ``add_info``, then the Jacobian, which must have
    shape ``(batch, measure_dim + 1, solution_dim)`` (its batch length is not compared
    with the solutions', as in pyribs) and be finite.

    Args:
        archive: The emitter's archive.
        data: ``solution``, ``objective``, ``measures`` and extra fields.
        add_info: The archive's add info.
        jacobian: Array-like Jacobian.

    Returns:
        ``(data, add_info, jacobian)`` as NumPy arrays.

    Raises:
        ValueError: A check fails.
    """
    data = validate_batch(archive, data)
    add_info = validate_add_info(add_info, data["solution"].shape[0])
    jacobian = np.asarray(jacobian)
    check_batch_shape(
        jacobian,
        "jacobian",
        (archive.measure_dim + 1, archive.solution_dim),
        "measure_dim + 1, solution_dim",
    )
    check_finite(jacobian, "jacobian")
    return data, add_info, jacobian


def normalize_jacobian(jacobian, epsilon, solution_ndim: int = 1, xp=jnp):
    """Divides every gradient by its L2 norm plus ``epsilon``, as pyribs'
    ``tell_dqd`` does.

    One rule for the kernels (``xp=jax.numpy``, traced) and for the objects'
    ``tell_dqd`` on validated host arrays (``xp=numpy``).

    Args:
        jacobian: ``(..., 1 + measure_dim, *solution_shape)`` array.
        epsilon: Added to the norms (a Python float keeps ``jacobian``'s dtype).
        solution_ndim: Static number of trailing solution axes (the norm is
            taken over them).
        xp: Array namespace of ``jacobian`` (``jax.numpy`` or ``numpy``).

    Returns:
        The normalised Jacobian.
    """
    axes = tuple(range(jacobian.ndim - solution_ndim, jacobian.ndim))
    norms = xp.sqrt(xp.sum(xp.square(jacobian), axis=axes, keepdims=True))
    return jacobian / (norms + epsilon)
