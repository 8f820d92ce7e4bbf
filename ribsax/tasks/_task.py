"""Task: a batched, jittable QD evaluation function with its metadata."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import parse_dtype
from ribsax.tasks._jacobian import jacobian_via_vjp
from ribsax.tasks._numpy_evaluator import NumpyEvaluator

#: Name of the per-row extra in which an evaluation function may report the
#: evaluations it made for a row besides the row itself (e.g. an ES Jacobian's
#: samples, :func:`~ribsax.tasks.es_jacobian`); the schedulers add them to a run's
#: evaluation count.
EXTRA_EVALUATIONS = "extra_evaluations"

__all__ = ["Task", "EXTRA_EVALUATIONS"]


def _zeros_init(key, batch_size, solution_dim, dtype):
    del key
    return jnp.zeros((batch_size, solution_dim), dtype=dtype)


def unit_uniform_init(key, batch_size, solution_dim, dtype):
    """Initial population uniform in ``[0, 1]`` (for tasks defined on the unit box)."""
    return jax.random.uniform(key, (batch_size, solution_dim), dtype=dtype)


@dataclasses.dataclass(frozen=True, eq=False)
class Task:
    """A quality-diversity task: solutions in, objectives and measures out.

    The heart of a task is a pure, batched, jittable function
    ``evaluate_fn(solutions, key) -> (objective, measures, extras)`` where
    ``solutions`` has shape ``(batch_size, solution_dim)``, ``objective`` has shape
    ``(batch_size,)``, ``measures`` has shape ``(batch_size, measure_dim)`` and
    ``extras`` is a dict of arrays whose leading axis is the batch. Outputs have the
    floating dtype of ``solutions`` (float32 or float64). Rows are evaluated
    independently: the outputs of one row never depend on another row.

    There are three ways to use a task:

    * **Traced** (fused loop, ``vmap`` over seeds, your own ``jit``): call
      :meth:`evaluate` / :meth:`evaluate_with_jacobian` with JAX arrays inside any
      transformation, or hand ``task.evaluate`` to a fused scheduler loop as its
      ``evaluate(solutions, key)`` function. Nothing is jitted for you, so the task
      fuses into the caller's computation. :attr:`jit_evaluate` is the jitted
      version for standalone calls on JAX arrays.
    * **Python ask/tell loop**: :meth:`numpy_evaluator` returns a
      :class:`~ribsax.tasks.NumpyEvaluator` that takes NumPy solutions (e.g. from
      ``scheduler.ask()``), runs the jit-compiled task and returns NumPy arrays ready
      for ``scheduler.tell``. It carries its own PRNG key for stochastic tasks.
    * **DQD**: :meth:`evaluate_with_jacobian` returns the Jacobian in the layout that
      ``tell_dqd`` expects, ``(batch_size, 1 + measure_dim, solution_dim)`` with the
      objective gradient in row 0 and the measure gradients after it.

    Tasks are hashable by identity, so ``task.evaluate`` can be a static argument of
    a jitted function.

    Args:
        name: Short identifier of the task (e.g. ``"sphere"``).
        solution_dim: Length of one solution vector.
        measure_dim: Number of measures.
        measure_ranges: ``((low, high), ...)`` per measure: the range the task's
            measures fall into (for the suggested search region when the task is
            unbounded); use it as the archive's ``ranges``.
        qd_score_offset: Value to pass as the archive's ``qd_score_offset`` (the
            pyribs convention: the QD score sums ``objective - qd_score_offset``), a
            lower bound of the objective over the task's search region.
        evaluate_fn: The batched function described above.
        jacobian_fn: Optional analytic ``(solutions, key) -> (objective, measures,
            jacobian, extras)``. When None and ``differentiable`` is True, the
            Jacobian is computed by automatic differentiation of ``evaluate_fn``.
        differentiable: Whether objective and measures are differentiable
            (almost everywhere) with respect to the solutions.
        solution_bounds: Optional ``(low, high)`` scalars: the search region the
            task is designed for (None when unbounded). Emitters may use it as
            ``bounds``.
        objective_range: Optional ``(low, high)`` of the objective over the search
            region (documentation and normalisation of plots).
        init_fn: Optional ``(key, batch_size, solution_dim, dtype) -> solutions``
            giving a sensible initial population; zeros by default.
        description: One paragraph about the task's origin and formula.
    """

    name: str
    solution_dim: int
    measure_dim: int
    measure_ranges: tuple[tuple[float, float], ...]
    qd_score_offset: float
    evaluate_fn: Callable[..., Any]
    jacobian_fn: Callable[..., Any] | None = None
    differentiable: bool = False
    solution_bounds: tuple[float, float] | None = None
    objective_range: tuple[float, float] | None = None
    init_fn: Callable[..., Any] = _zeros_init
    description: str = ""

    def __post_init__(self):
        ranges = tuple((float(lo), float(hi)) for lo, hi in self.measure_ranges)
        if len(ranges) != self.measure_dim:
            raise ValueError(
                f"measure_ranges has {len(ranges)} entries but measure_dim is {self.measure_dim}"
            )
        object.__setattr__(self, "measure_ranges", ranges)
        object.__setattr__(self, "solution_dim", int(self.solution_dim))
        object.__setattr__(self, "measure_dim", int(self.measure_dim))
        object.__setattr__(self, "qd_score_offset", float(self.qd_score_offset))

    @property
    def has_jacobian(self) -> bool:
        """Whether :meth:`evaluate_with_jacobian` is available."""
        return self.jacobian_fn is not None or self.differentiable

    def evaluate(self, solutions, key=None):
        """Evaluates a batch of solutions (pure, traceable).

        Args:
            solutions: Array of shape ``(batch_size, solution_dim)``.
            key: PRNG key for stochastic tasks; None uses ``jax.random.key(0)``
                (deterministic tasks ignore it).

        Returns:
            ``(objective, measures, extras)`` with shapes ``(batch_size,)``,
            ``(batch_size, measure_dim)`` and a dict of batch-leading arrays.
        """
        if key is None:
            key = jax.random.key(0)
        return self.evaluate_fn(solutions, key)

    def evaluate_with_jacobian(self, solutions, key=None):
        """Evaluates a batch and returns the Jacobian as well (pure, traceable).

        Args:
            solutions: Array of shape ``(batch_size, solution_dim)``.
            key: PRNG key for stochastic tasks; None uses ``jax.random.key(0)``.

        Returns:
            ``(objective, measures, jacobian, extras)`` where ``jacobian`` has shape
            ``(batch_size, 1 + measure_dim, solution_dim)``: row 0 is the objective
            gradient, rows ``1..`` the measure gradients (pyribs' ``tell_dqd``
            layout).

        Raises:
            NotImplementedError: The task is not differentiable.
        """
        if key is None:
            key = jax.random.key(0)
        if self.jacobian_fn is not None:
            return self.jacobian_fn(solutions, key)
        if self.differentiable:
            return jacobian_via_vjp(self.evaluate_fn, solutions, key)
        raise NotImplementedError(
            f"Task {self.name!r} is not differentiable; it provides no Jacobian."
        )

    @functools.cached_property
    def jit_evaluate(self):
        """``jax.jit(self.evaluate)``, cached on the task.

        Every user of the cached function (e.g. all :class:`NumpyEvaluator` objects
        of this task) shares its compilations (one per batch shape and dtype).
        """
        return jax.jit(self.evaluate)

    @functools.cached_property
    def jit_evaluate_with_jacobian(self):
        """``jax.jit(self.evaluate_with_jacobian)``, cached on the task."""
        return jax.jit(self.evaluate_with_jacobian)

    def initial_solutions(self, batch_size: int, key=None, dtype=None):
        """A starting population for this task.

        Args:
            batch_size: Number of solutions.
            key: PRNG key (None uses ``jax.random.key(0)``).
            dtype: Floating dtype (default: float64 under JAX x64, else float32).

        Returns:
            JAX array of shape ``(batch_size, solution_dim)``.
        """
        if key is None:
            key = jax.random.key(0)
        dtype = parse_dtype(dtype, "dtype")
        return self.init_fn(key, int(batch_size), self.solution_dim, dtype)

    def numpy_evaluator(self, seed=None, dtype=None):
        """A NumPy-in/NumPy-out evaluator for the Python ask/tell loop.

        Args:
            seed: int, :class:`numpy.random.SeedSequence`, JAX key, or None; seeds the
                evaluator's key, which is split at every call.
            dtype: Computation dtype (None: the dtype of the solutions passed in).

        Returns:
            :class:`~ribsax.tasks.NumpyEvaluator`.
        """
        return NumpyEvaluator(self, seed=seed, dtype=dtype)

    def __repr__(self):
        return (
            f"{type(self).__name__}(name={self.name!r}, "
            f"solution_dim={self.solution_dim}, measure_dim={self.measure_dim}, "
            f"measure_ranges={self.measure_ranges}, "
            f"qd_score_offset={self.qd_score_offset})"
        )


def as_float_array(solutions):
    """Converts ``solutions`` to a JAX floating array, keeping a floating dtype.

    Integer inputs become the default float dtype.
    """
    solutions = jnp.asarray(solutions)
    if not jnp.issubdtype(solutions.dtype, jnp.floating):
        solutions = solutions.astype(jnp.result_type(float))
    return solutions


def measure_shape_check(solutions, solution_dim: int) -> None:
    """Static shape check used by the task kernels (raises at trace time)."""
    if solutions.ndim != 2 or solutions.shape[1] != solution_dim:
        raise ValueError(
            "Expected solution to be an array with shape (batch_size, "
            f"{solution_dim}) (i.e. shape (batch_size, solution_dim)) but it had "
            f"shape {tuple(np.shape(solutions))}."
        )
