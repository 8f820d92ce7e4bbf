"""PyCMAEvolutionStrategy: pycma's CMA-ES behind ribsax's ES interface."""

from __future__ import annotations

import numpy as np

from ribsax.emitters.opt._evolution_strategy_base import (
    EvolutionStrategyBase,
    single_threaded_blas,
)

__all__ = ["PyCMAEvolutionStrategy"]


class PyCMAEvolutionStrategy(EvolutionStrategyBase):
    """CMA-ES from the `pycma <https://github.com/CMA-ES/pycma>`_ package
    (``cma.CMAEvolutionStrategy``).

    A NumPy-backed strategy, as in pyribs: it has no JAX kernels, so an
    :class:`~ribsax.emitters.EvolutionStrategyEmitter` using it (``es="pycma_es"``)
    runs through its Python methods, is never fused with other emitters, and cannot
    run in :meth:`ribsax.schedulers.Scheduler.run`'s fused loop (which raises a
    ValueError naming the emitter; ``run(..., fused=False)`` and ``ask``/``tell``
    work).

    Every :meth:`reset` builds a new ``cma.CMAEvolutionStrategy(x0, sigma0, opts)``
    where ``opts`` holds ``popsize=batch_size`` (None: pycma's default), ``bounds=
    [lower_bounds, upper_bounds]`` (pycma's own bound handling), ``verbose=-9``
    unless given, ``seed=nan`` and a ``randn`` that draws from this object's NumPy
    generator (seeded with ``seed``), so that runs do not depend on NumPy's global
    seed. :meth:`tell` passes one-dimensional ranking values negated (pycma
    minimises); for multi-column ranking values it passes the solutions in rank
    order with the fitness ``0, 1, 2, ...``, and :meth:`check_stop` then applies
    ribsax's CMA-ES stopping tests (condition number above 1e14, ``sigma ·
    sqrt(max eigenvalue) < 1e-11``, flat ranking values) instead of pycma's.

    Difference from pyribs: the ``opts`` dict passed in is copied, not modified.

    .. note:: Needs pycma (the ``pycma`` extra: ``pip install 'ribsax[pycma]'``);
       without it, :meth:`reset` raises an ImportError.

    Args:
        sigma0: Initial step size.
        solution_dim: Size of the solution space.
        batch_size: Population size (pycma's ``popsize``).
        seed: Seed of the generator behind ``randn`` (None, an int or a
            :class:`numpy.random.SeedSequence`).
        dtype: Dtype of the solutions returned by :meth:`ask`.
        lower_bounds: Scalar or ``(solution_dim,)`` lower bounds (None or -inf:
            unbounded).
        upper_bounds: Same for the upper bounds.
        opts: Other pycma options; ``popsize``, ``bounds``, ``randn`` and ``seed``
            are overwritten.
    """

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=np.float64,
        lower_bounds=None,
        upper_bounds=None,
        opts=None,
    ):
        super().__init__(sigma0, solution_dim, batch_size, seed, dtype, lower_bounds, upper_bounds)
        self.sigma0 = sigma0
        self.solution_dim = solution_dim
        self.dtype = dtype

        self._solutions = None
        self._es = None
        self._opts = dict(opts or {})
        self._opts["popsize"] = batch_size
        self._opts["bounds"] = [lower_bounds, upper_bounds]
        # pycma draws from NumPy's global generator unless given ``randn``.
        self._rng = np.random.default_rng(seed)
        self._opts["randn"] = self._randn
        self._opts["seed"] = np.nan
        self._opts.setdefault("verbose", -9)

    def _randn(self, rows, n):
        """pycma's ``randn``: standard normals from this object's generator."""
        return self._rng.standard_normal((rows, n))

    @property
    def batch_size(self):
        """Population size (valid after :meth:`reset`)."""
        return self._es.popsize

    def reset(self, x0):
        """Starts a new pycma CMA-ES at ``x0``.

        Args:
            x0: Initial mean.

        Raises:
            ImportError: pycma is not installed.
        """
        try:
            import cma
        except ImportError as e:
            raise ImportError(
                "pycma must be installed -- please run `pip install cma` or `conda install cma`"
            ) from e
        self._es = cma.CMAEvolutionStrategy(x0, self.sigma0, self._opts)

    def check_stop(self, ranking_values):
        """Whether the ES should be restarted.

        Args:
            ranking_values: Ranking values sorted best first.

        Returns:
            For one-dimensional ranking values, pycma's ``stop()`` as pyribs
            returns it: a dict of the termination criteria met, empty (falsy) when
            none is. Otherwise a bool from the CMA-ES tests listed in the class
            docstring.
        """
        ranking_values = np.asarray(ranking_values)
        if ranking_values.ndim == 2 and ranking_values.shape[1] == 1:
            ranking_values = ranking_values[:, 0]
        if ranking_values.ndim == 1:
            return self._es.stop()

        # pycma only saw made-up fitness values, so its own criteria do not apply.
        if self._es.condition_number > 1e14:
            return True
        if self._es.sigma * np.sqrt(np.max(self._es.sm.eigenspectrum)) < 1e-11:
            return True
        return bool(
            len(ranking_values) >= 2
            and np.linalg.norm(ranking_values[0] - ranking_values[-1]) < 1e-12
        )

    def ask(self, batch_size=None):
        """Samples solutions from pycma.

        Args:
            batch_size: Number of solutions (None: :attr:`batch_size`).

        Returns:
            Read-only ``(batch_size, solution_dim)`` array of ``dtype``.
        """
        with single_threaded_blas():
            self._solutions = np.asarray(self._es.ask(batch_size))
        solutions = self._solutions.astype(self.dtype)
        solutions.flags.writeable = False
        return solutions

    def tell(self, ranking_indices, ranking_values, num_parents):
        """Updates pycma with the ranking of the last :meth:`ask`'s solutions.

        Args:
            ranking_indices: Best-first order of the solutions.
            ranking_values: Ranking values in solution order (higher is better).
            num_parents: Unused (pycma selects its own parents).
        """
        del num_parents
        ranking_values = np.asarray(ranking_values)
        if ranking_values.ndim == 2 and ranking_values.shape[1] == 1:
            ranking_values = ranking_values[:, 0]
        with single_threaded_blas():
            if ranking_values.ndim == 1:
                self._es.tell(self._solutions, -ranking_values)
            else:
                ranking_indices = np.asarray(ranking_indices)
                self._es.tell(self._solutions[ranking_indices], np.arange(len(ranking_indices)))
