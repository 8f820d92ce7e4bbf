"""BanditScheduler: picks the active emitters from a pool with UCB1."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ribsax.schedulers._bandit_rule import (
    BanditSpec,
    BanditState,
    bandit_credit,
    bandit_selection,
)
from ribsax.schedulers._object_steps import traced_ask, traced_tell
from ribsax.schedulers._scheduler_core import _SchedulerCore
from ribsax.schedulers._validation import (
    check_add_mode,
    check_emitters,
    check_result_archive,
)

__all__ = ["BanditScheduler"]


def _pyribs_descending_order(ucb):
    """pyribs' order of the UCB1 scores: ``np.argsort`` of an object array (as
    ``np.full_like`` of the emitter pool gives), reversed; its ties between
    equal scores are NumPy's."""
    return np.argsort(np.asarray(ucb).astype(object))[::-1]


class BanditScheduler(_SchedulerCore):
    """Schedules a subset of a pool of emitters with the UCB1 bandit rule.

    This is ME-MAP-Elites' scheduler (Cully 2021). At every :meth:`ask`, emitters
    that were *terminated* (``reselect="terminated"``: their ``restarts`` counter
    grew; emitters without ``restarts``, e.g. GaussianEmitter, count as terminated
    every time) or all active emitters (``reselect="all"``) are deactivated, and the
    pool's emitters with the highest UCB1 score are activated until ``num_active``
    are active. Emitters never selected come first (score +inf); the others score
    ``success / selection + zeta * sqrt(log(sum(success)) / selection)`` (pyribs'
    formula: the log is of the total *successes*). The first call activates the
    first ``num_active`` emitters of the pool. :meth:`tell` credits each active
    emitter with the number of solutions it emitted (selection) and the number the
    archive accepted (success).

    Emitters of the pool with equal ``fusion_key`` run as one fused kernel (the
    inactive ones are masked), exactly as in :class:`Scheduler`.

    Args:
        archive: Archive that receives the solutions.
        emitter_pool: List of emitters to choose from.
        result_archive: Optional second archive receiving the same data.
        num_active: Number of emitters active at a time.
        reselect: ``"terminated"`` or ``"all"``.
        zeta: Exploration weight of UCB1.
        add_mode: ``"batch"`` or ``"single"``.
        fuse: ribsax extension; whether to fuse emitters of equal configuration.
        array_backend: ribsax extension; ``"numpy"`` or ``"jax"`` (see
            :class:`~ribsax.schedulers.Scheduler`).

    Raises:
        TypeError: ``emitter_pool`` is not a list-like.
        ValueError: ``num_active < 1``, fewer emitters than ``num_active``,
            duplicate emitters, differing solution dims, bad ``reselect`` or
            ``add_mode``, or ``result_archive is archive``.
    """

    def __init__(
        self,
        archive,
        emitter_pool,
        result_archive=None,
        *,
        num_active,
        reselect="terminated",
        zeta=0.05,
        add_mode="batch",
        fuse=True,
        array_backend="numpy",
    ):
        if num_active < 1:
            raise ValueError("num_active cannot be less than 1.")

        def check_count(count):
            if count < num_active:
                # The missing spaces reproduce pyribs' message.
                raise ValueError(
                    f"The emitter pool must contain at least"
                    f"num_active emitters, but only"
                    f"{count} are given."
                )

        self._solution_dim = check_emitters(emitter_pool, "emitter_pool", check_count)
        if reselect not in ["terminated", "all"]:
            raise ValueError(
                f"add_mode must either be 'terminated' or 'all', but it was '{reselect}'"
            )
        check_add_mode(add_mode)
        check_result_archive(archive, result_archive, "BanditScheduler")

        pool = np.empty(len(emitter_pool), dtype=object)
        pool[:] = list(emitter_pool)
        self._emitter_pool = pool
        self._num_active = num_active
        self._reselect = reselect

        self._active_arr = np.zeros(len(pool), dtype=bool)
        self._success = np.zeros(len(pool), dtype=float)
        self._selection = np.zeros(len(pool), dtype=float)
        self._restarts = np.zeros(len(pool), dtype=int)
        self._zeta = zeta

        self._init_core(
            archive, result_archive, add_mode, fuse, np.array([None for _ in pool]), array_backend
        )

    # ------------------------------------------------------------ properties
    @property
    def emitter_pool(self):
        """The pool of emitters (a NumPy object array)."""
        return self._emitter_pool

    @property
    def active(self):
        """Read-only bool array: which emitters of the pool are active."""
        arr = self._active_arr.view()
        arr.flags.writeable = False
        return arr

    @property
    def _emitters(self):
        return self._emitter_pool

    def ask_dqd(self):
        """Not supported.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("ask_dqd() is not supported by BanditScheduler.")

    def tell_dqd(self, objective, measures, jacobian, **fields):
        """Not supported.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("tell_dqd() is not supported by BanditScheduler.")

    def _select(self):
        """Updates :attr:`active` with pyribs' reselection and UCB1 rules
        (:func:`~ribsax.schedulers._bandit_rule.bandit_selection` on the host)."""
        if self._reselect == "terminated":
            # getattr with a default reads the property once (hasattr read it too).
            restarts = np.array(
                [getattr(emitter, "restarts", -1) for emitter in self._emitter_pool]
            )
        else:
            restarts = self._restarts
        self._active_arr, self._restarts = bandit_selection(
            np,
            self._loop_bandit_spec(),
            self._active_arr,
            self._success,
            self._selection,
            self._zeta,
            restarts,
            self._restarts,
            _pyribs_descending_order,
        )

    # ------------------------------------------------------------ fused loop
    def _loop_bandit_spec(self):
        return BanditSpec(num_active=int(self._num_active), reselect_all=self._reselect == "all")

    def _loop_bandit_state(self):
        return BanditState(
            active=jnp.asarray(self._active_arr),
            success=jnp.asarray(self._success),
            selection=jnp.asarray(self._selection),
            restarts=jnp.asarray(self._restarts, jnp.int32),
            zeta=jnp.asarray(self._zeta, jnp.asarray(self._success).dtype),
            tells=jnp.zeros(len(self._emitter_pool), jnp.int32),
        )

    def _loop_bandit_install(self, state) -> None:
        self._active_arr = np.array(state.active, dtype=bool)
        self._success = np.array(state.success, dtype=float)
        self._selection = np.array(state.selection, dtype=float)
        self._restarts = np.array(state.restarts, dtype=int)

    def ask(self):
        """Selects the active emitters and concatenates their solutions.

        Returns:
            NumPy array of solutions, in pool order of the active emitters.

        Raises:
            RuntimeError: The previous call was ``ask``.
        """
        if self._last_called == "ask":
            raise RuntimeError("ask cannot be called immediately after " + self._last_called)
        self._last_called = "ask"

        with np.errstate(divide="ignore", invalid="ignore"):
            self._select()
        self._refresh_groups()
        traced = traced_ask(self, self._active_arr)
        if traced is not None:
            self._asked_plan, solutions = traced
            layout = self._asked_plan.layout
            n = 0
            for i in np.where(self._active_arr)[0]:
                self._num_emitted[i] = int(layout.sizes[i])
                n += self._num_emitted[i]
            # The step returns the active emitters' rows first, then padding.
            if len(solutions) != n:
                solutions = solutions[:n]
            self._cur_solutions = solutions if self._device_output else self._concat([solutions])
            return self._cur_solutions
        self._asked_plan = None
        active = list(self._active_arr)
        pieces = self._ask_all(self._emitter_pool, active)
        out = []
        for i in np.where(self._active_arr)[0]:
            self._num_emitted[i] = len(pieces[i])
            out.append(pieces[i])
        self._cur_solutions = self._concat(out)
        return self._cur_solutions

    def tell(self, objective, measures, extras=None, **fields):
        """Adds the evaluated solutions and credits the active emitters.

        Args:
            objective: ``(n,)`` objectives (None for diversity optimization).
            measures: ``(n, measure_dim)`` measures.
            extras: Optional dict of per-solution data for the emitters only (not
                stored in any archive), as in :meth:`Scheduler.tell
                <ribsax.schedulers.Scheduler.tell>`.
            fields: Extra per-solution fields.

        Raises:
            RuntimeError: The previous call was not ``ask``.
            ValueError: An argument's length differs from the number of solutions.
        """
        data, _, add_info = self._begin_tell(False, objective, measures, fields, extras=extras)
        active = list(self._active_arr)
        num_emitted = [n if a else 0 for n, a in zip(self._num_emitted, active)]
        # The batch holds the active emitters' rows, in pool order.
        emitted = np.asarray(num_emitted, np.int64)
        self._success, self._selection = bandit_credit(
            np,
            self._active_arr,
            self._success,
            self._selection,
            np.repeat(np.arange(len(emitted)), emitted),
            np.asarray(add_info["status"]),
            emitted,
        )
        plan, self._asked_plan = self._asked_plan, None
        if plan is None or not traced_tell(self, plan, data, add_info, self._active_arr):
            self._tell_all(
                self._emitter_pool, self._membership, data, add_info, num_emitted, active
            )
