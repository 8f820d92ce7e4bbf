"""The state and machinery that :class:`~ribsax.schedulers.Scheduler` and
:class:`~ribsax.schedulers.BanditScheduler` share: fusion groups, the Python path of
``ask``/``tell``, the archive add and ``run``."""

from __future__ import annotations

import warnings
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.emitters._fusion import group_emitters
from ribsax.schedulers._loop_runner import run_scheduler
from ribsax.schedulers._validation import check_array_backend

__all__ = ["EMPTY_WARNING", "rows_of"]

EMPTY_WARNING = (
    "`{name}` was empty before adding solutions, and it is still empty "
    "after adding solutions. "
    "One potential cause is that `threshold_min` is too high in this "
    "archive, i.e., solutions are not being inserted because their "
    "objective value does not exceed `threshold_min`."
)


def rows_of(value, start, end):
    """Rows ``start:end`` of an array, or of every leaf of a pytree of arrays."""
    if isinstance(value, (np.ndarray, jax.Array)):
        return value[start:end]
    return jax.tree.map(lambda arr: arr[start:end], value)


class _SchedulerCore:
    """State and machinery shared by :class:`Scheduler` and ``BanditScheduler``.

    Subclasses set ``_emitters`` (an attribute or a property), then call
    :meth:`_init_core`.
    """

    def _init_core(
        self, archive, result_archive, add_mode, fuse, num_emitted, array_backend="numpy"
    ):
        check_array_backend(array_backend)
        self._array_backend = array_backend
        self._archive = archive
        self._add_mode = add_mode
        self._result_archive = result_archive
        self._fuse = bool(fuse)
        self._last_called = None
        self._result_add_info = None
        self._cur_solutions = []
        self._num_emitted = num_emitted
        self._asked_plan = None  # LoopPlan of a traced ask awaiting its tell.
        self._groups = []
        self._membership = [None] * len(self._emitters)
        self._build_groups()

    @property
    def _device_output(self) -> bool:
        return getattr(self, "_array_backend", "numpy") == "jax"

    def _concat(self, pieces):
        """Concatenates per-emitter solutions as :meth:`ask` returns them."""
        if self._device_output:
            if not pieces:
                return jnp.empty((0, self._solution_dim))
            return jnp.concatenate([jnp.asarray(p) for p in pieces], axis=0)
        if not pieces:
            return np.empty((0, self._solution_dim))
        if len(pieces) == 1:  # A new, writeable array, as pyribs returns.
            return np.array(pieces[0])
        return np.concatenate([np.asarray(p) for p in pieces], axis=0)

    @property
    def array_backend(self) -> str:
        """ribsax extension: ``"numpy"`` (pyribs' behaviour) or ``"jax"``: the type
        of the arrays :meth:`ask` returns."""
        return getattr(self, "_array_backend", "numpy")

    @property
    def archive(self):
        """Archive that receives the solutions."""
        return self._archive

    @property
    def result_archive(self):
        """The result archive, or :attr:`archive` when none was given."""
        return self._archive if self._result_archive is None else self._result_archive

    def _build_groups(self):
        for group in self._groups:
            group.release()
        if self._fuse:
            self._groups, self._membership = group_emitters(list(self._emitters))
        else:
            self._groups, self._membership = [], [None] * len(self._emitters)

    def _refresh_groups(self):
        """Regroups if an emitter was taken by another scheduler (or unpickled)."""
        if any(not group.valid for group in self._groups):
            self._build_groups()

    def _ask_all(self, emitters, active=None):
        """The Python path of ``ask``: each (active) emitter's own ``ask``;
        returns the list of arrays (None for inactive emitters)."""
        pieces = [None] * len(emitters)
        for i, emitter in enumerate(emitters):
            if active is None or active[i]:
                pieces[i] = emitter.ask_device() if self._device_output else emitter.ask()
        return pieces

    def _tell_all(
        self, emitters, membership, data, add_info, num_emitted, active=None, jacobian=None
    ):
        """The Python path of ``tell``: hands each (active) emitter its slice of
        ``data`` and ``add_info`` through ``tell``, or, when ``jacobian`` is given,
        its slice of all three through ``tell_dqd``."""
        slices = [None] * len(emitters)
        pos = 0
        for i, n in enumerate(num_emitted):
            if active is not None and not active[i]:
                continue
            end = pos + n
            slices[i] = (
                {
                    name: None if arr is None else rows_of(arr, pos, end)
                    for name, arr in data.items()
                },
                {name: arr[pos:end] for name, arr in add_info.items()},
                None if jacobian is None else jacobian[pos:end],
            )
            pos = end

        for i, emitter in enumerate(emitters):
            if slices[i] is not None:
                emitter_data, emitter_info, emitter_jacobian = slices[i]
                if jacobian is None:
                    emitter.tell(**emitter_data, add_info=emitter_info)
                else:
                    emitter.tell_dqd(
                        **emitter_data, jacobian=emitter_jacobian, add_info=emitter_info
                    )

    def _check_length(self, name, arr):
        if len(arr) != len(self._cur_solutions):
            raise ValueError(
                f"{name} should have length {len(self._cur_solutions)} "
                "(this is the number of solutions output by ask()) but "
                f"has length {len(arr)}"
            )

    def _validate_tell_data(self, data):
        for name, arr in data.items():
            if arr is None:
                continue
            data[name] = np.asarray(arr)
            self._check_length(name, arr)
        data["solution"] = np.asarray(self._cur_solutions)
        return data

    def _begin_tell(self, dqd, objective, measures, fields, jacobian=None, extras=None):
        """Start of ``tell`` (``dqd=False``) and ``tell_dqd``: checks that the
        matching ask came last, validates the lengths of the data (and of the
        Jacobian, for ``tell_dqd``) and adds the solutions to the archive(s).

        Returns:
            ``(data, jacobian, add_info)`` (``jacobian`` as given for ``tell``);
            ``data`` holds the ``extras`` too (for the emitters; the archives do
            not see them).

        Raises:
            RuntimeError: The previous call was not the matching ask.
            ValueError: A length differs from the number of solutions, or
                ``extras`` is not a dict of per-row data whose names differ from
                the fields'.
        """
        call, asked = ("tell_dqd", "ask_dqd") if dqd else ("tell", "ask")
        if self._last_called != asked:
            raise RuntimeError(f"{call}() was called without calling {asked}().")
        self._last_called = call

        data = self._validate_tell_data({"objective": objective, "measures": measures, **fields})
        if dqd:
            jacobian = np.asarray(jacobian)
            self._check_length("jacobian", jacobian)
        extras = self._validated_extras(extras, data)
        add_info = self._add_to_archives(data, stacklevel=4)
        return {**data, **extras}, jacobian, add_info

    def _validated_extras(self, extras, data):
        """``extras`` (None: none) checked: a dict whose names are not fields and
        whose arrays (pytrees of them) have one row per solution."""
        if extras is None:
            return {}
        if not isinstance(extras, dict):
            raise ValueError(
                "extras must be a dict of per-solution data (e.g. the "
                "task's extras), got " + type(extras).__name__
            )
        clash = sorted(set(extras) & (set(data) | {"solution"}))
        if clash:
            raise ValueError(f"extras cannot hold {clash}: these names are tell's fields")
        for name, value in extras.items():
            for leaf in jax.tree.leaves(value):
                if np.ndim(leaf) == 0:
                    raise ValueError(
                        f"extras[{name!r}] must have one row per solution, got a scalar"
                    )
                self._check_length(f"extras[{name!r}]", leaf)
        return dict(extras)

    def _add_to_archives(self, data, stacklevel=3):
        """Adds ``data`` to the archive(s); warns if an archive stays empty."""
        archive_empty_before = self.archive.empty
        result_empty_before = self._result_archive is not None and self._result_archive.empty

        result_info = None
        if self._add_mode == "batch":
            add_info = self.archive.add(**data)
            if self._result_archive is not None:
                result_info = self._result_archive.add(**data)
        else:
            add_info = defaultdict(list)
            for i in range(len(self._cur_solutions)):
                single = {name: None if arr is None else arr[i] for name, arr in data.items()}
                info = self.archive.add_single(**single)
                for name, val in info.items():
                    add_info[name].append(val)
                if self._result_archive is not None:
                    info = self._result_archive.add_single(**single)
                    result_info = result_info or {"status": [], "value": []}
                    result_info["status"].append(info["status"])
                    result_info["value"].append(info["value"])
            add_info = {name: np.asarray(arr) for name, arr in add_info.items()}
            if result_info is not None:
                result_info = {name: np.asarray(arr) for name, arr in result_info.items()}
        self._result_add_info = add_info if result_info is None else result_info

        if archive_empty_before and self.archive.empty:
            warnings.warn(EMPTY_WARNING.format(name="archive"), stacklevel=stacklevel)
        if result_empty_before and self._result_archive.empty:
            warnings.warn(EMPTY_WARNING.format(name="result_archive"), stacklevel=stacklevel)
        return add_info

    @property
    def result_add_info(self):
        """ribsax extension: the ``add_info`` (``status`` and ``value`` per
        solution) that the result archive returned in the last :meth:`tell` or
        ``tell_dqd`` (the archive's when there is no separate result archive);
        None before the first tell and after unpickling. A status above 0 means
        the solution was inserted (a new cell or an improvement)."""
        return getattr(self, "_result_add_info", None)

    def _loop_bandit_spec(self):
        """Static bandit settings for the fused loop (None: no bandit)."""
        return None

    def _loop_bandit_state(self):
        """Bandit state pytree for the fused loop (None: no bandit)."""
        return None

    def run(
        self,
        evaluate,
        iterations,
        *,
        jacobian=None,
        metrics_every=1,
        seed=None,
        fused=True,
        history=False,
        non_finite="skip",
    ):
        """ribsax extension: runs ``iterations`` of ask -> evaluate -> tell.

        With ``fused=True`` (default) the whole run is one compiled
        ``jax.lax.scan``: no Python per iteration. ``evaluate`` must then be
        JAX-traceable, every emitter must have pure kernels (all built-in emitters
        do) and the archives must compute cells on the device (GridArchive,
        CVTArchive). The scheduler, archives and emitters end in the state the
        equivalent ``ask``/``tell`` loop (``fused=False``) leaves them in: same seeds,
        same kernels, so the same elites up to floating-point reassociation by the
        compiler. A :class:`~ribsax.schedulers.BanditScheduler` runs its UCB1
        selection inside the loop too (every emitter of the pool asks and is
        evaluated; inactive emitters' rows are kept out of the archive and their
        states untouched); ties between equal UCB1 scores go to the later emitter,
        as ``np.argsort`` does for pools of up to 16 emitters (NumPy's ordering of
        ties in larger pools is not reproduced). Differences from the ask/tell loop:
        an ES restart that falls due while the archive is empty is skipped (the
        ask/tell loop raises pyribs' IndexError), and the ES's bound-resampling
        warning is not issued.

        The fused loop scans the same ask and tell steps that :meth:`ask` and
        :meth:`tell` run (:mod:`ribsax.schedulers._steps`); it differs from
        them only in adding to the archives inside the step (``loop_add``) rather
        than through the archive objects, and in the points below.

        The first call for a configuration compiles (reported separately as
        ``compile_time``); later calls with the same configuration, evaluation
        function and number of iterations reuse the executable. Runs continue each
        other: two runs of 50 iterations equal one run of 100.

        Args:
            evaluate: A :class:`ribsax.tasks.Task` or a callable ``evaluate(solutions,
                key) -> (objective, measures[, extras])`` on a batch; ``extras`` is a
                dict that must hold the archive's extra fields, if any.
            iterations: Number of iterations.
            jacobian: For DQD emitters (when ``evaluate`` is not a differentiable
                task): ``(solutions, key) -> (objective, measures, jacobian[,
                extras])`` with ``jacobian`` of shape ``(batch, 1 + measure_dim,
                solution_dim)``.
            metrics_every: Record the metrics every this many iterations (the last
                iteration is always recorded).
            seed: Seed of the evaluation keys (None: keep the key of earlier runs,
                or draw one). Iteration ``i`` of the scheduler's runs evaluates with
                ``fold_in(fold_in(key, i), 0)`` (``..., 1)`` for the DQD phase).
            fused: False runs the same iterations through :meth:`ask` /
                :meth:`tell` (for non-traceable functions, or to compare).
            history: Also return the insertions into the result archive, taken
                from the statuses its ``add`` returned
                (:attr:`RunResult.history <ribsax.schedulers.RunResult.history>`);
                the fused loop then also outputs every solution's status,
                objective and measures per iteration.
            non_finite: What the fused loop does with rows whose objective or
                measures (or Jacobian) are not finite: ``"skip"`` (default) keeps
                them out of the archives (emitters see them as not added) and
                counts them in the ``non_finite`` column of the metrics;
                ``"raise"`` does the same, then raises ValueError after the run
                naming the first such iteration and row (the objects keep the
                run's final state). The ask/tell loop (``fused=False``) raises
                pyribs' errors on such rows at the first ``tell``.

        Returns:
            :class:`~ribsax.schedulers.RunResult` with the metrics history (and
            the insertions with ``history=True``).

        Raises:
            RuntimeError: The previous call was ``ask`` or ``ask_dqd``.
            ValueError: Bad ``iterations``/``metrics_every``/``non_finite``, a
                component cannot run fused (the message says which), or, with
                ``non_finite="raise"``, a non-finite evaluation.
            TypeError: ``evaluate`` is not callable or returns the wrong structure.
        """
        return run_scheduler(
            self,
            evaluate,
            iterations,
            jacobian=jacobian,
            metrics_every=metrics_every,
            seed=seed,
            fused=fused,
            history=history,
            non_finite=non_finite,
        )

    def __getstate__(self):
        state = self.__dict__.copy()
        # Groups hold the stacked states; emitters pickle their own slices and the
        # groups are rebuilt on first use.
        state["_groups"] = []
        state["_membership"] = [None] * len(self._emitters)
        state["_object_plan"] = None
        state["_asked_plan"] = None
        state["_pending_draws"] = None
        state["_result_add_info"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._build_groups()
