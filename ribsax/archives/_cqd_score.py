"""Continuous Quality Diversity (CQD) score of an archive (Kent 2022)."""

from __future__ import annotations

import dataclasses
import functools
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_is_1d, x64_enabled

__all__ = ["CQDScoreResult", "cqd_score", "cqd_target_maxima"]

# Upper bound on the elements of the [targets, elites] distance arrays built per chunk
# of iterations; keeps memory bounded for large archives.
_CHUNK_ELEMENTS = 1 << 24


@dataclasses.dataclass
class CQDScoreResult:
    """Result of :func:`cqd_score`.

    Attributes:
        iterations: Number of times the score was computed.
        mean: Mean of :attr:`scores`; the number most users want.
        scores: (iterations,) float64 array, the score of each iteration.
        target_points: (iterations, n, measure_dim) copy of the target points.
        penalties: 1D array of the penalties used (a copy when an array was given).
        obj_min: Minimum objective passed in.
        obj_max: Maximum objective passed in.
        dist_max: Maximum measure-space distance passed in.
        dist_ord: Norm order passed in (as for :func:`numpy.linalg.norm`).
    """

    iterations: Any
    mean: Any
    scores: np.ndarray
    target_points: np.ndarray
    penalties: np.ndarray
    obj_min: Any
    obj_max: Any
    dist_max: Any
    dist_ord: Any


def _pairwise_sum(terms):
    """Sum of a list of arrays in the order NumPy's pairwise summation uses.

    Reproduces ``np.add.reduce`` along a contiguous axis of length ``len(terms)``
    (blocks of 8 partial sums up to 128 terms, recursive halving beyond), so the
    distances match :func:`numpy.linalg.norm` bit for bit.
    """
    n = len(terms)
    if n < 8:
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total
    if n <= 128:
        partial_sums = list(terms[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                partial_sums[j] = partial_sums[j] + terms[i + j]
            i += 8
        p = partial_sums
        total = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))
        for term in terms[i:]:
            total = total + term
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_sum(terms[:half]) + _pairwise_sum(terms[half:])


def _pairwise_norm(targets, measures, ord_):
    """[targets, elites] :func:`numpy.linalg.norm` of ``targets[t] - measures[e]``.

    Works one measure dimension at a time, so no [targets, elites, dim] array is
    built, and sums over dimensions in NumPy's order.
    """
    diffs = [targets[:, k, None] - measures[None, :, k] for k in range(measures.shape[1])]
    if ord_ is None or ord_ == 2:
        return jnp.sqrt(_pairwise_sum([d * d for d in diffs]))
    if ord_ == np.inf:
        return functools.reduce(jnp.maximum, [jnp.abs(d) for d in diffs])
    if ord_ == -np.inf:
        return functools.reduce(jnp.minimum, [jnp.abs(d) for d in diffs])
    if ord_ == 0:
        return _pairwise_sum([(d != 0).astype(d.dtype) for d in diffs])
    if ord_ == 1:
        return _pairwise_sum([jnp.abs(d) for d in diffs])
    power = jnp.asarray(ord_, diffs[0].dtype)
    total = _pairwise_sum([jnp.abs(d) ** power for d in diffs])
    return total ** (jnp.asarray(1, total.dtype) / jnp.asarray(ord_, total.dtype))


@partial(jax.jit, static_argnames=("dist_ord", "iteration_batch", "penalty_batch"))
def cqd_target_maxima(
    norm_objectives,
    measures,
    target_points,
    penalties,
    dist_max,
    *,
    dist_ord=None,
    iteration_batch=None,
    penalty_batch=None,
):
    """Best penalised value per (iteration, penalty, target), as a pure kernel.

    For iteration ``i``, penalty ``theta`` and target ``t``, returns
    ``max_e norm_objectives[e] - theta * ||measures[e] - t||_ord / dist_max``.
    Iterations and penalties are mapped in chunks of ``iteration_batch`` /
    ``penalty_batch`` (all at once when None, one at a time when 1); targets and
    elites are vectorised. Padding elites get a ``-inf`` objective and never win.

    Each operation runs in the dtype of its inputs (the caller casts them with
    NumPy's promotion rules): the difference and the norm in the dtype of
    ``measures``, the division in that of ``dist_max``, the product in that of
    ``penalties`` and the subtraction in that of ``norm_objectives``.

    Args:
        norm_objectives: [n] normalised objectives (value dtype).
        measures: [n, measure_dim] elite measures (distance dtype).
        target_points: [iterations, targets, measure_dim] (distance dtype).
        penalties: [p] penalties (product dtype).
        dist_max: Scalar distance normaliser (normalised-distance dtype).
        dist_ord: Static norm order (None, or a number as in numpy).
        iteration_batch: Static chunk size over iterations.
        penalty_batch: Static chunk size over penalties.

    Returns:
        [iterations, p, targets] array in the value dtype.
    """
    value_dtype = norm_objectives.dtype

    def one_iteration(targets):
        dist = _pairwise_norm(targets, measures, dist_ord)
        norm_dist = (dist.astype(dist_max.dtype) / dist_max).astype(penalties.dtype)

        def one_penalty(penalty):
            values = norm_objectives[None, :] - (penalty * norm_dist).astype(value_dtype)
            return jnp.max(values, axis=1)

        return jax.lax.map(one_penalty, penalties, batch_size=penalty_batch)

    return jax.lax.map(one_iteration, target_points, batch_size=iteration_batch)


def _canonical(dtype):
    """``dtype``, or float32 when it is float64 and JAX x64 is disabled."""
    dtype = np.dtype(dtype)
    if dtype == np.float64 and not x64_enabled():
        return np.dtype(np.float32)
    return dtype


def cqd_score(
    archive, *, iterations, target_points, penalties, obj_min, obj_max, dist_max, dist_ord=None
):
    """Computes the CQD score of an archive, like :func:`ribs.archives.cqd_score`.

    On each iteration ``i``, with target points ``T_i`` and every penalty ``theta``,
    the score adds ``sum_{t in T_i} max_e (f_e / (obj_max - obj_min) - theta *
    ||m_e - t||_ord / dist_max)`` over the elites ``e``. As in pyribs, objectives are
    divided by ``obj_max - obj_min`` **without** subtracting ``obj_min`` first. The
    maxima come from one jitted JAX kernel (:func:`cqd_target_maxima`) that sums over
    measure dimensions in NumPy's order; the final sums use NumPy in pyribs' order.
    The numbers match pyribs to rounding (usually bit for bit; XLA may fuse a multiply
    and an add into one FMA, which changes the last bit).

    Without JAX x64 the distances and values are computed in float32.

    Args:
        archive: Any archive implementing ``data()`` with ``objective`` and
            ``measures`` fields.
        iterations: Number of times to compute the score.
        target_points: (iterations, n, measure_dim) target points.
        penalties: An int (that many penalties evenly spaced in [0, 1]) or a 1D
            array of penalties.
        obj_min: Minimum objective, used for normalisation.
        obj_max: Maximum objective, used for normalisation.
        dist_max: Maximum distance in measure space.
        dist_ord: Norm order as in :func:`numpy.linalg.norm` (None: Euclidean).

    Returns:
        :class:`CQDScoreResult`.

    Raises:
        ValueError: ``target_points`` or ``penalties`` has the wrong shape, the norm
            order is a string, or the archive is empty (with ``iterations > 0``).
    """
    target_points = np.copy(target_points)
    if (
        target_points.ndim != 3
        or target_points.shape[0] != iterations
        or target_points.shape[2] != archive.measure_dim
    ):
        raise ValueError(
            "Expected target_points to be a 3D array with "
            f"shape ({iterations}, n, {archive.measure_dim}) "
            "(i.e. shape (iterations, n, measure_dim)) but it had "
            f"shape {target_points.shape}"
        )
    if np.isscalar(penalties):
        penalties = np.linspace(0, 1, penalties)
    else:
        penalties = np.copy(penalties)
        check_is_1d(penalties, "penalties")

    objectives = np.asarray(archive.data("objective"))
    measures = np.asarray(archive.data("measures"))
    norm_objectives = objectives / (obj_max - obj_min)

    scores = np.zeros(iterations)
    if iterations > 0:
        if isinstance(dist_ord, str):
            raise ValueError(f"Invalid norm order '{dist_ord}' for vectors")
        if len(objectives) == 0:
            raise ValueError("zero-size array to reduction operation maximum which has no identity")
        maxima = _target_maxima(
            norm_objectives, measures, target_points, penalties, dist_max, dist_ord
        )
        # Sum over targets, then accumulate penalties in order, as pyribs does.
        per_penalty = np.sum(maxima, axis=2).astype(np.float64)
        for col in range(per_penalty.shape[1]):
            scores += per_penalty[:, col]

    return CQDScoreResult(
        iterations=iterations,
        mean=np.mean(scores),
        scores=scores,
        target_points=target_points,
        penalties=penalties,
        obj_min=obj_min,
        obj_max=obj_max,
        dist_max=dist_max,
        dist_ord=dist_ord,
    )


def _target_maxima(norm_objectives, measures, target_points, penalties, dist_max, dist_ord):
    """Prepares dtypes, padding and chunking, then runs :func:`cqd_target_maxima`."""
    # The dtypes NumPy would use in pyribs' expressions.
    dist_dtype = np.result_type(measures.dtype, target_points.dtype)
    if not np.issubdtype(dist_dtype, np.inexact):
        dist_dtype = np.dtype(np.float64)
    norm_dist_dtype = np.result_type(dist_dtype, dist_max)
    product_dtype = np.result_type(penalties.dtype, norm_dist_dtype)
    value_dtype = np.result_type(norm_objectives.dtype, product_dtype)
    dist_dtype, norm_dist_dtype, product_dtype, value_dtype = (
        _canonical(d) for d in (dist_dtype, norm_dist_dtype, product_dtype, value_dtype)
    )

    # Pad the elites (objective -inf) to one of 8 sizes per octave, so a growing
    # archive rarely recompiles.
    n = len(norm_objectives)
    step = max(8, 1 << max(0, (n - 1).bit_length() - 3))
    padded = -(-n // step) * step
    objectives = np.full(padded, -np.inf, dtype=value_dtype)
    objectives[:n] = norm_objectives
    elite_measures = np.zeros((padded, measures.shape[1]), dtype=dist_dtype)
    elite_measures[:n] = measures

    # Bound the [targets, elites] intermediates of a chunk of iterations. On CPU a
    # sequential map over penalties is faster than vectorising them.
    iterations, n_targets, _ = target_points.shape
    per_iteration = padded * max(n_targets, 1)
    iteration_batch = max(1, min(iterations, _CHUNK_ELEMENTS // per_iteration))
    if iteration_batch >= iterations:
        iteration_batch = None
    penalty_batch = 1 if jax.default_backend() == "cpu" else None

    if dist_ord is not None and not isinstance(dist_ord, (int, float)):
        dist_ord = float(dist_ord)
    maxima = cqd_target_maxima(
        jnp.asarray(objectives),
        jnp.asarray(elite_measures),
        jnp.asarray(target_points.astype(dist_dtype)),
        jnp.asarray(penalties.astype(product_dtype)),
        jnp.asarray(np.asarray(dist_max, dtype=norm_dist_dtype)),
        dist_ord=dist_ord,
        iteration_batch=iteration_batch,
        penalty_batch=penalty_batch,
    )
    return np.asarray(maxima)
