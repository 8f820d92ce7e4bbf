"""ES-estimated Jacobians for black-box tasks (OpenAI-ES, as in dqd-rl).

Tjanaka et al. 2022 ("Approximating gradients for differentiable quality diversity
in reinforcement learning") run CMA-MEGA on tasks without analytic gradients by
estimating the objective and measure gradients of the solution point with
OpenAI-ES: ``N`` samples ``theta + sigma * eps_i`` with mirrored noise
(``eps_{i + N/2} = -eps_i``), every output turned into centred ranks
``rank / (N - 1) - 0.5``, and for each output ``j``::

    g_j = sum_{i < N/2} eps_i (r_j[i] - r_j[i + N/2]) / (N/2 * sigma)

The same ``N`` evaluations serve all ``1 + measure_dim`` rows.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from ribsax._normal import mirrored, standard_normal
from ribsax.tasks._task import EXTRA_EVALUATIONS

__all__ = ["centered_ranks", "es_jacobian", "es_jacobian_fn"]


def centered_ranks(values, axis: int = 0):
    """Centred ranks ``rank / (n - 1) - 0.5`` in ``[-0.5, 0.5]`` along ``axis``.

    Ties get distinct ranks in order of appearance (a stable sort).

    Args:
        values: Array.
        axis: Axis of the ``n`` samples (``n >= 2``).

    Returns:
        Array of the same shape (floating dtype of ``values``, or the default float).
    """
    values = jnp.asarray(values)
    n = values.shape[axis]
    dtype = values.dtype if jnp.issubdtype(values.dtype, jnp.floating) else jnp.result_type(float)
    order = jnp.argsort(values, axis=axis, stable=True)
    ranks = jnp.argsort(order, axis=axis, stable=True).astype(dtype)
    return ranks / (n - 1) - 0.5


def _check(sample_sigma, sample_batch_size, mirror):
    if sample_batch_size < 2:
        raise ValueError(f"sample_batch_size must be at least 2, got {sample_batch_size}")
    if mirror and sample_batch_size % 2:
        raise ValueError(
            f"sample_batch_size must be even with mirrored sampling, got {sample_batch_size}"
        )
    if not sample_sigma > 0:
        raise ValueError(f"sample_sigma must be positive, got {sample_sigma}")


def es_jacobian(
    evaluate_fn,
    solutions,
    key,
    *,
    sample_sigma: float = 0.02,
    sample_batch_size: int = 100,
    mirror: bool = True,
    rank_norm: bool = True,
    return_samples: bool = False,
):
    """Estimates the objective and measure Jacobian of each solution with OpenAI-ES.

    Pure and jittable (``sample_batch_size``, ``mirror``, ``rank_norm`` and
    ``return_samples`` are static). The solutions and all their samples are
    evaluated in **one** call of ``evaluate_fn`` (``batch * (1 + N)`` rows).

    Args:
        evaluate_fn: Batched, row-independent ``(solutions, key) -> (objective,
            measures, extras)``; JAX-traceable for use under ``jit`` (a NumPy black
            box can be wrapped with :func:`jax.pure_callback`).
        solutions: ``(batch, solution_dim)`` points whose Jacobians are wanted.
        key: PRNG key; it draws the noise and is passed (split) to
            ``evaluate_fn``. The same key gives the same estimate.
        sample_sigma: Standard deviation of the sample perturbations (dqd-rl:
            0.02).
        sample_batch_size: Number ``N`` of samples per solution (dqd-rl: 100).
        mirror: Mirrored (antithetic) sampling; ``N`` must then be even.
        rank_norm: Replace each output by its centred rank among the ``N`` samples
            (dqd-rl); otherwise the raw values minus their mean are used.
        return_samples: Also return the samples and their evaluations in
            ``extras["es_samples"]`` (dict of ``solution`` ``(batch, N, dim)``,
            ``objective`` ``(batch, N)``, ``measures`` ``(batch, N, m)``), e.g. to
            insert them into the archive (dqd-rl's ``sample_insert``).

    Returns:
        ``(objective, measures, jacobian, extras)`` for ``solutions``, with
        ``jacobian`` of shape ``(batch, 1 + measure_dim, solution_dim)`` (the
        ``tell_dqd`` layout; not normalised: the DQD emitters normalise by default);
        ``extras`` holds the centre rows' extras and
        ``extras["extra_evaluations"]``, ``N`` per row: the samples evaluated
        besides the row, which the schedulers add to a run's evaluation count.

    Raises:
        ValueError: ``sample_batch_size < 2``, odd with ``mirror``, or
            ``sample_sigma <= 0`` (checked when ``sample_sigma`` is a Python
            number).
    """
    if isinstance(sample_sigma, (int, float)):
        _check(sample_sigma, sample_batch_size, mirror)
    else:
        _check(1.0, sample_batch_size, mirror)
    solutions = jnp.asarray(solutions)
    batch, dim = solutions.shape
    n = int(sample_batch_size)
    half = n // 2 if mirror else n
    k_noise, k_eval = jax.random.split(key)
    eps = standard_normal(k_noise, (batch, half, dim), solutions.dtype)
    noise = mirrored(eps, axis=1) if mirror else eps
    samples = solutions[:, None, :] + sample_sigma * noise  # (batch, n, dim)

    rows = jnp.concatenate([solutions, samples.reshape(batch * n, dim)], axis=0)
    objective, measures, extras = evaluate_fn(rows, k_eval)
    objective = jnp.asarray(objective)
    measures = jnp.asarray(measures)
    m = measures.shape[1]
    values = jnp.concatenate([objective[batch:, None], measures[batch:]], axis=1)
    values = values.reshape(batch, n, 1 + m).astype(solutions.dtype)
    if rank_norm:
        values = centered_ranks(values, axis=1)
    else:
        values = values - jnp.mean(values, axis=1, keepdims=True)
    if mirror:
        weights = values[:, :half] - values[:, half:]
    else:
        weights = values
    jacobian = jnp.einsum("bnj,bnd->bjd", weights, eps) / (half * sample_sigma)

    center_extras = dict(jax.tree.map(lambda x: jnp.asarray(x)[:batch], extras or {}))
    # The samples are evaluations too: runs count them in their budget.
    center_extras[EXTRA_EVALUATIONS] = jnp.full((batch,), n, jnp.int32)
    if return_samples:
        center_extras = dict(center_extras)
        center_extras["es_samples"] = {
            "solution": samples,
            "objective": objective[batch:].reshape(batch, n),
            "measures": measures[batch:].reshape(batch, n, m),
        }
    return (objective[:batch], measures[:batch], jacobian.astype(solutions.dtype), center_extras)


def es_jacobian_fn(
    evaluate_fn,
    *,
    sample_sigma: float = 0.02,
    sample_batch_size: int = 100,
    mirror: bool = True,
    rank_norm: bool = True,
    return_samples: bool = False,
) -> Callable:
    """A :class:`~ribsax.tasks.JacobianSource` estimating Jacobians with
    :func:`es_jacobian` (same arguments).

    Example (CMA-MEGA on ES gradients of a task)::

        task = with_jacobian(sphere(100), es_jacobian_fn(sphere(100).evaluate))

    Returns:
        ``source(solutions, key) -> (objective, measures, jacobian, extras)``.
    """
    _check(sample_sigma, sample_batch_size, mirror)

    def source(solutions, key):
        return es_jacobian(
            evaluate_fn,
            solutions,
            key,
            sample_sigma=sample_sigma,
            sample_batch_size=sample_batch_size,
            mirror=mirror,
            rank_norm=rank_norm,
            return_samples=return_samples,
        )

    return source
