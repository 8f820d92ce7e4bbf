"""Scheduler: the ask/tell loop over an archive and a list of emitters."""

from __future__ import annotations

import jax.numpy as jnp

from ribsax.schedulers._object_steps import traced_ask, traced_tell
from ribsax.schedulers._scheduler_core import _SchedulerCore
from ribsax.schedulers._validation import (
    check_add_mode,
    check_emitters,
    check_result_archive,
)

__all__ = ["Scheduler"]


class Scheduler(_SchedulerCore):
    """Runs the ask/tell loop of a QD algorithm over one archive and its emitters.

    ``ask()`` concatenates the solutions of every emitter; ``tell(objective,
    measures, **fields)`` inserts them into the archive (and the optional
    ``result_archive``) and hands each emitter its slice of the data and of the
    archive's ``add_info``. The call order is enforced exactly as in pyribs (see
    :meth:`ask` and :meth:`tell`), including the DQD loop ``ask_dqd -> tell_dqd ->
    ask -> tell``.

    **Step functions.** When every emitter has pure kernels and the archive keeps
    its elites in a device store (all built-in emitters and archives except
    CategoricalArchive and SlidingBoundariesArchive), :meth:`ask`, :meth:`tell`,
    :meth:`ask_dqd` and :meth:`tell_dqd` run the same emitter steps as the fused
    loop of :meth:`run` (see :mod:`ribsax.schedulers._steps`), jitted once
    per configuration, on the states gathered from the emitter objects and written
    back after each call; the archive add is the archive object's ``add`` (or
    ``add_single``). Otherwise (user-written emitters without kernels, emitters
    whose next ask needs host work such as pending ``initial_solutions``, archives
    without a device store) and for tells that must raise pyribs' errors or
    restart an emitter on the host, every emitter's own ``ask``/``tell``
    (``ask_dqd``/``tell_dqd``) runs instead (the Python path). Both paths give the
    same results.

    **Fusion.** Emitters with identical static configuration (equal
    ``fusion_key``, e.g. 15 :class:`~ribsax.emitters.EvolutionStrategyEmitter` of
    batch 36 on one archive) are grouped and run as one ``jax.vmap``-ed kernel per
    ``ask`` and per ``tell``; each emitter object stays usable on its own and gives
    the same results as if it ran alone. Pass ``fuse=False`` to run emitters one by
    one.

    Args:
        archive: Archive that receives the solutions.
        emitters: List of emitters (distinct instances with equal solution dims).
        result_archive: Optional second archive that receives the same data (e.g.
            the plain archive of CMA-MAE); :attr:`result_archive` falls back to
            ``archive``.
        add_mode: ``"batch"`` (one ``add`` per tell) or ``"single"`` (``add_single``
            per solution).
        fuse: ribsax extension; whether to fuse emitters of equal configuration.
        array_backend: ribsax extension; ``"numpy"`` (default, as pyribs) or
            ``"jax"``: :meth:`ask` and :meth:`ask_dqd` then return ``jax.Array``
            solutions straight from the device (no host copy), for evaluation
            functions written in JAX. :meth:`tell` accepts NumPy or JAX arrays
            either way.

    Raises:
        TypeError: ``emitters`` is not a list-like.
        ValueError: Empty or non-unique emitters, differing solution dims, bad
            ``add_mode`` or ``array_backend``, or ``result_archive is archive``.
    """

    def __init__(
        self,
        archive,
        emitters,
        result_archive=None,
        *,
        add_mode="batch",
        fuse=True,
        array_backend="numpy",
    ):
        self._solution_dim = check_emitters(emitters, "emitters")
        check_add_mode(add_mode)
        check_result_archive(archive, result_archive, "Scheduler")

        self._emitters = emitters
        self._init_core(
            archive, result_archive, add_mode, fuse, [None for _ in emitters], array_backend
        )

    @property
    def emitters(self):
        """The emitters, as passed in."""
        return self._emitters

    @property
    def fusion_groups(self) -> list:
        """ribsax extension: lists of emitter indices run as one fused kernel."""
        self._refresh_groups()
        out = []
        for group in self._groups:
            out.append(
                [i for i, m in enumerate(self._membership) if m is not None and m[0] is group]
            )
        return out

    def _traced_ask(self, dqd: bool) -> bool:
        """The ask (``ask_dqd``) on the step functions: records the plan, the
        emitters' row counts and the solutions; False (nothing done) when the
        configuration takes the Python path."""
        traced = traced_ask(self, dqd=dqd)
        if traced is None:
            return False
        self._asked_plan, solutions = traced
        layout = self._asked_plan.dqd_layout if dqd else self._asked_plan.layout
        self._num_emitted[:] = [int(n) for n in layout.sizes]
        self._cur_solutions = solutions if self._device_output else self._concat([solutions])
        return True

    def ask_dqd(self):
        """Asks DQD emitters for solutions whose gradients must be evaluated.

        Returns:
            Concatenation of every emitter's ``ask_dqd()`` (possibly empty).

        Raises:
            RuntimeError: The previous call was ``ask`` or ``ask_dqd``.
        """
        if self._last_called in ["ask", "ask_dqd"]:
            raise RuntimeError("ask_dqd cannot be called immediately after " + self._last_called)
        self._last_called = "ask_dqd"

        self._refresh_groups()
        if self._traced_ask(dqd=True):
            return self._cur_solutions
        pieces = []
        for i, emitter in enumerate(self._emitters):
            sols = emitter.ask_dqd()
            if self._device_output:
                sols = jnp.asarray(sols)
            pieces.append(sols)
            self._num_emitted[i] = len(sols)
        self._cur_solutions = self._concat(pieces)
        self._asked_plan = None
        return self._cur_solutions

    def ask(self):
        """Generates solutions from every emitter.

        Returns:
            NumPy array, the concatenation of each emitter's ``ask()`` in order.

        Raises:
            RuntimeError: The previous call was ``ask`` or ``ask_dqd``.
        """
        if self._last_called in ["ask", "ask_dqd"]:
            raise RuntimeError("ask cannot be called immediately after " + self._last_called)
        self._last_called = "ask"

        self._refresh_groups()
        if self._traced_ask(dqd=False):
            return self._cur_solutions
        self._asked_plan = None
        pieces = self._ask_all(self._emitters)
        for i, sols in enumerate(pieces):
            self._num_emitted[i] = len(sols)
        self._cur_solutions = self._concat(pieces)
        return self._cur_solutions

    def tell_dqd(self, objective, measures, jacobian, extras=None, **fields):
        """Returns gradient information for the solutions from :meth:`ask_dqd`.

        Args:
            objective: ``(n,)`` objectives (None for diversity optimization).
            measures: ``(n, measure_dim)`` measures.
            jacobian: ``(n, 1 + measure_dim, solution_dim)`` gradients.
            extras: Optional dict of per-solution data for the emitters only (not
                stored in any archive): arrays or pytrees of arrays with one row
                per solution, e.g. the ``extras`` of a task's evaluation (an RL
                task's transitions, which PGA-ME's critics learn from).
            fields: Extra per-solution fields.

        Raises:
            RuntimeError: The previous call was not ``ask_dqd``.
            ValueError: An argument's length differs from the number of solutions.
        """
        data, jacobian, add_info = self._begin_tell(
            True, objective, measures, fields, jacobian, extras
        )
        plan, self._asked_plan = self._asked_plan, None
        if plan is not None and traced_tell(self, plan, data, add_info, jacobian=jacobian):
            return
        self._refresh_groups()
        self._tell_all(
            self._emitters, self._membership, data, add_info, self._num_emitted, jacobian=jacobian
        )

    def tell(self, objective, measures, extras=None, **fields):
        """Returns the evaluations of the solutions from :meth:`ask`.

        The solutions are added to :attr:`archive` (and the result archive) with
        ``add`` (batch mode) or ``add_single`` (single mode), then every emitter
        receives its slice of the data and of the archive's ``add_info``.

        Args:
            objective: ``(n,)`` objectives (None for diversity optimization).
            measures: ``(n, measure_dim)`` measures.
            extras: Optional dict of per-solution data for the emitters only (not
                stored in any archive): arrays or pytrees of arrays with one row
                per solution, e.g. the ``extras`` of a task's evaluation (an RL
                task's transitions, which PGA-ME's critics learn from).
            fields: Extra per-solution fields for the archive(s).

        Raises:
            RuntimeError: The previous call was not ``ask`` (a failed ``tell``
                still consumes the ask).
            ValueError: An argument's length differs from the number of solutions,
                or the archive rejects the data.
        """
        data, _, add_info = self._begin_tell(False, objective, measures, fields, extras=extras)
        plan, self._asked_plan = self._asked_plan, None
        if plan is None or not traced_tell(self, plan, data, add_info):
            self._tell_all(self._emitters, self._membership, data, add_info, self._num_emitted)
