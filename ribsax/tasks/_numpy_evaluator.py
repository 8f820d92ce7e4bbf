"""NumpyEvaluator: runs a JAX task from the Python ask/tell loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_batch_shape, default_float_dtype, parse_dtype, seed_to_key

__all__ = ["NumpyEvaluator"]


def _to_key(seed):
    if isinstance(seed, jax.Array):
        if jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
            return seed
        return jax.random.wrap_key_data(seed)
    return seed_to_key(seed)


class NumpyEvaluator:
    """Evaluates a :class:`~ribsax.tasks.Task` on NumPy arrays with a jitted kernel.

    This is the bridge between a JAX task and pyribs-style code::

        evaluator = task.numpy_evaluator(seed=42)
        for itr in range(iterations):
            solutions = scheduler.ask()
            objective, measures, _ = evaluator(solutions)
            scheduler.tell(objective, measures)

        # DQD (CMA-MEGA and friends):
        solutions = scheduler.ask_dqd()
        objective, measures, jacobian, _ = evaluator.with_jacobian(solutions)
        scheduler.tell_dqd(objective, measures, jacobian)

    The task's function is compiled once per batch shape and dtype (the compilation
    is cached on the task and shared by its evaluators). Each call splits
    the evaluator's key, so stochastic tasks (e.g. brax with random resets) get fresh
    randomness while the sequence stays reproducible from ``seed``.

    Args:
        task: The task to evaluate.
        seed: int, :class:`numpy.random.SeedSequence`, JAX PRNG key, or None (fresh
            entropy).
        dtype: Computation dtype. None keeps the floating dtype of the solutions
            passed in (integers become the default float dtype).

    Raises:
        ValueError: A 64-bit dtype is requested while JAX x64 is disabled.
    """

    def __init__(self, task, seed=None, dtype=None):
        self._task = task
        self._key = _to_key(seed)
        self._dtype = None if dtype is None else parse_dtype(dtype, "dtype")
        self._evaluate = task.jit_evaluate
        self._evaluate_jac = task.jit_evaluate_with_jacobian

    @property
    def task(self):
        """The wrapped task."""
        return self._task

    def _prepare(self, solutions):
        solutions = np.asarray(solutions)
        if self._dtype is not None:
            dtype = self._dtype
        elif np.issubdtype(solutions.dtype, np.floating):
            dtype = parse_dtype(solutions.dtype, "solution dtype")
        else:
            dtype = default_float_dtype()
        solutions = solutions.astype(dtype, copy=False)
        check_batch_shape(solutions, "solution", self._task.solution_dim, "solution_dim")
        self._key, key = jax.random.split(self._key)
        return jnp.asarray(solutions), key

    def __call__(self, solutions):
        """Evaluates ``solutions``.

        Args:
            solutions: Array-like of shape ``(batch_size, solution_dim)``.

        Returns:
            ``(objective, measures, extras)`` as NumPy arrays (``extras`` is a dict
            whose leaves are NumPy arrays).

        Raises:
            ValueError: ``solutions`` has the wrong shape, or is float64 while JAX
                x64 is disabled.
        """
        solutions, key = self._prepare(solutions)
        objective, measures, extras = self._evaluate(solutions, key)
        return (np.asarray(objective), np.asarray(measures), jax.tree.map(np.asarray, extras))

    def with_jacobian(self, solutions):
        """Evaluates ``solutions`` and their Jacobian.

        Args:
            solutions: Array-like of shape ``(batch_size, solution_dim)``.

        Returns:
            ``(objective, measures, jacobian, extras)`` as NumPy arrays, with
            ``jacobian`` of shape ``(batch_size, 1 + measure_dim, solution_dim)``.

        Raises:
            ValueError: ``solutions`` has the wrong shape.
            NotImplementedError: The task is not differentiable.
        """
        if not self._task.has_jacobian:
            raise NotImplementedError(
                f"Task {self._task.name!r} is not differentiable; it provides no Jacobian."
            )
        solutions, key = self._prepare(solutions)
        objective, measures, jacobian, extras = self._evaluate_jac(solutions, key)
        return (
            np.asarray(objective),
            np.asarray(measures),
            np.asarray(jacobian),
            jax.tree.map(np.asarray, extras),
        )
