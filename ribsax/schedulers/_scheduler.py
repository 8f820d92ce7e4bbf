"""Scheduler: the ask/tell loop over an archive and a list of emitters."""
from __future__ import annotations

import warnings
from collections import defaultdict

import jax.numpy as jnp
import numpy as np

from ribsax.emitters._fusion import group_emitters
from ribsax.schedulers._loop_runner import run_scheduler
from ribsax.schedulers._object_steps import traced_ask, traced_tell

__all__ = ["Scheduler"]

_NOT_UNIQUE = (
    "Not all emitters passed in were unique (i.e. some emitters "
    "had the same id). If emitters were created with something "
    "like [EmitterClass(...)] * n, instead use "
    "[EmitterClass(...) for _ in range(n)] so that all emitters "
    "are unique instances."
)

EMPTY_WARNING = (
    "`{name}` was empty before adding solutions, and it is still empty "
    "after adding solutions. "
    "One potential cause is that `threshold_min` is too high in this "
    "archive, i.e., solutions are not being inserted because their "
    "objective value does not exceed `threshold_min`."
)


def check_emitters(emitters, name: str, min_count_check=None):
    """pyribs' checks on an emitter list: non-empty, a sequence, unique instances,
    equal solution dims.

    Args:
        emitters: The list.
        name: Argument name for the TypeError (``emitters`` / ``emitter_pool``).
        min_count_check: Optional callable run with ``len(emitters)`` inside the
            TypeError guard (raises its own ValueError).

    Returns:
        The common solution dim.

    Raises:
        TypeError: ``emitters`` has no ``len``.
        ValueError: Empty list, duplicate instances or differing solution dims.
    """
    try:
        count = len(emitters)
        if min_count_check is not None:
            min_count_check(count)
        elif count == 0:
            raise ValueError("Pass in at least one emitter to the scheduler.")
    except TypeError as exception:
        raise TypeError(f"`{name}` must be a list of emitter objects.") from exception

    if len({id(e) for e in emitters}) != len(emitters):
        raise ValueError(_NOT_UNIQUE)

    solution_dim = emitters[0].solution_dim
    # pyribs' quirk: idx counts over emitters[1:], so the second emitter is
    # reported as "Emitter 0".
    for idx, emitter in enumerate(emitters[1:]):
        if emitter.solution_dim != solution_dim:
            raise ValueError(
                "All emitters must have the same solution dim, but "
                f"Emitter {idx} has dimension {emitter.solution_dim}, "
                f"while Emitter 0 has dimension {solution_dim}"
            )
    return solution_dim


def check_add_mode(add_mode) -> None:
    """Raises ValueError unless ``add_mode`` is ``"batch"`` or ``"single"``."""
    if add_mode not in ["single", "batch"]:
        raise ValueError(
            f"add_mode must either be 'batch' or 'single', but it was '{add_mode}'"
        )


def check_array_backend(array_backend) -> None:
    """Raises ValueError unless ``array_backend`` is ``"numpy"`` or ``"jax"``."""
    if array_backend not in ("numpy", "jax"):
        raise ValueError("array_backend must be 'numpy' or 'jax', but it was "
                         f"{array_backend!r}")


def check_result_archive(archive, result_archive, cls_name: str) -> None:
    """Raises ValueError if ``archive is result_archive``."""
    if archive is result_archive:
        raise ValueError(
            "`archive` has same id as `result_archive` -- "
            f"Note that `{cls_name}.result_archive` already "
            "defaults to be the same as `archive` if you pass "
            "`result_archive=None`"
        )


class _SchedulerCore:
    """State and machinery shared by :class:`Scheduler` and ``BanditScheduler``.

    Subclasses set ``_emitters`` (an attribute or a property), then call
    :meth:`_init_core`.
    """

    def _init_core(self, archive, result_archive, add_mode, fuse, num_emitted,
                   array_backend="numpy"):
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
                pieces[i] = (emitter._ask_jax() if self._device_output  # pylint: disable=protected-access
                             else emitter.ask())
        return pieces

    def _tell_all(self, emitters, membership, data, add_info, num_emitted,
                  active=None, jacobian=None):
        """The Python path of ``tell``: hands each (active) emitter its slice of
        ``data`` and ``add_info`` through ``tell``, or, when ``jacobian`` is given,
        its slice of all three through ``tell_dqd`` (fusion groups with a group
        ``tell_dqd`` take their members' slices at once)."""
        slices = [None] * len(emitters)
        pos = 0
        for i, n in enumerate(num_emitted):
            if active is not None and not active[i]:
                continue
            end = pos + n
            slices[i] = (
                {name: None if arr is None else arr[pos:end]
                 for name, arr in data.items()},
                {name: arr[pos:end] for name, arr in add_info.items()},
                None if jacobian is None else jacobian[pos:end],
            )
            pos = end

        done = [False] * len(emitters)
        for group in self._groups if jacobian is not None else ():
            slots = [(i, m[1]) for i, m in enumerate(membership)
                     if m is not None and m[0] is group and slices[i] is not None]
            if len(slots) != len(group):
                continue
            data_slices = [None] * len(group)
            info_slices = [None] * len(group)
            jacobian_slices = [None] * len(group)
            for i, slot in slots:
                data_slices[slot], info_slices[slot], jacobian_slices[slot] = slices[i]
            if group.tell_dqd(data_slices, jacobian_slices, info_slices):
                for i, _ in slots:
                    done[i] = True

        for i, emitter in enumerate(emitters):
            if slices[i] is not None and not done[i]:
                emitter_data, emitter_info, emitter_jacobian = slices[i]
                if jacobian is None:
                    emitter.tell(**emitter_data, add_info=emitter_info)
                else:
                    emitter.tell_dqd(**emitter_data, jacobian=emitter_jacobian,
                                     add_info=emitter_info)

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

    def _begin_tell(self, dqd, objective, measures, fields, jacobian=None):
        """Start of ``tell`` (``dqd=False``) and ``tell_dqd``: checks that the
        matching ask came last, validates the lengths of the data (and of the
        Jacobian, for ``tell_dqd``) and adds the solutions to the archive(s).

        Returns:
            ``(data, jacobian, add_info)`` (``jacobian`` as given for ``tell``).

        Raises:
            RuntimeError: The previous call was not the matching ask.
            ValueError: A length differs from the number of solutions.
        """
        call, asked = ("tell_dqd", "ask_dqd") if dqd else ("tell", "ask")
        if self._last_called != asked:
            raise RuntimeError(f"{call}() was called without calling {asked}().")
        self._last_called = call

        data = self._validate_tell_data(
            {"objective": objective, "measures": measures, **fields})
        if dqd:
            jacobian = np.asarray(jacobian)
            self._check_length("jacobian", jacobian)
        return data, jacobian, self._add_to_archives(data, stacklevel=4)

    def _add_to_archives(self, data, stacklevel=3):
        """Adds ``data`` to the archive(s); warns if an archive stays empty."""
        archive_empty_before = self.archive.empty
        result_empty_before = (self._result_archive is not None
                               and self._result_archive.empty)

        result_info = None
        if self._add_mode == "batch":
            add_info = self.archive.add(**data)
            if self._result_archive is not None:
                result_info = self._result_archive.add(**data)
        else:
            add_info = defaultdict(list)
            for i in range(len(self._cur_solutions)):
                single = {name: None if arr is None else arr[i]
                          for name, arr in data.items()}
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
                result_info = {name: np.asarray(arr)
                               for name, arr in result_info.items()}
        self._result_add_info = add_info if result_info is None else result_info

        if archive_empty_before and self.archive.empty:
            warnings.warn(EMPTY_WARNING.format(name="archive"), stacklevel=stacklevel)
        if result_empty_before and self._result_archive.empty:
            warnings.warn(EMPTY_WARNING.format(name="result_archive"),
                          stacklevel=stacklevel)
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

    def run(self, evaluate, iterations, *, jacobian=None, metrics_every=1, seed=None,
            fused=True, history=False, non_finite="skip"):
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
        ties in larger pools is not reproduced). Differences from the ask/tell loop: an ES restart that falls due
        while the archive is empty is skipped (the ask/tell loop raises pyribs'
        IndexError), and the ES's bound-resampling warning is not issued.

        The fused loop scans the same ask and tell steps that :meth:`ask` and
        :meth:`tell` run (:mod:`ribsax.schedulers._fused_loop`); it differs from
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
        return run_scheduler(self, evaluate, iterations, jacobian=jacobian,
                             metrics_every=metrics_every, seed=seed, fused=fused,
                             history=history, non_finite=non_finite)

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
    loop of :meth:`run` (see :mod:`ribsax.schedulers._fused_loop`), jitted once
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

    def __init__(self, archive, emitters, result_archive=None, *, add_mode="batch",
                 fuse=True, array_backend="numpy"):
        self._solution_dim = check_emitters(emitters, "emitters")
        check_add_mode(add_mode)
        check_result_archive(archive, result_archive, "Scheduler")

        self._emitters = emitters
        self._init_core(archive, result_archive, add_mode, fuse,
                        [None for _ in emitters], array_backend)

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
            out.append([i for i, m in enumerate(self._membership)
                        if m is not None and m[0] is group])
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
        self._cur_solutions = (solutions if self._device_output
                               else self._concat([solutions]))
        return True

    def ask_dqd(self):
        """Asks DQD emitters for solutions whose gradients must be evaluated.

        Returns:
            Concatenation of every emitter's ``ask_dqd()`` (possibly empty).

        Raises:
            RuntimeError: The previous call was ``ask`` or ``ask_dqd``.
        """
        if self._last_called in ["ask", "ask_dqd"]:
            raise RuntimeError(
                "ask_dqd cannot be called immediately after " + self._last_called)
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
            raise RuntimeError(
                "ask cannot be called immediately after " + self._last_called)
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

    def tell_dqd(self, objective, measures, jacobian, **fields):
        """Returns gradient information for the solutions from :meth:`ask_dqd`.

        Args:
            objective: ``(n,)`` objectives (None for diversity optimization).
            measures: ``(n, measure_dim)`` measures.
            jacobian: ``(n, 1 + measure_dim, solution_dim)`` gradients.
            fields: Extra per-solution fields.

        Raises:
            RuntimeError: The previous call was not ``ask_dqd``.
            ValueError: An argument's length differs from the number of solutions.
        """
        data, jacobian, add_info = self._begin_tell(True, objective, measures,
                                                    fields, jacobian)
        plan, self._asked_plan = self._asked_plan, None
        if plan is not None and traced_tell(self, plan, data, add_info,
                                            jacobian=jacobian):
            return
        self._refresh_groups()
        self._tell_all(self._emitters, self._membership, data, add_info,
                       self._num_emitted, jacobian=jacobian)

    def tell(self, objective, measures, **fields):
        """Returns the evaluations of the solutions from :meth:`ask`.

        The solutions are added to :attr:`archive` (and the result archive) with
        ``add`` (batch mode) or ``add_single`` (single mode), then every emitter
        receives its slice of the data and of the archive's ``add_info``.

        Args:
            objective: ``(n,)`` objectives (None for diversity optimization).
            measures: ``(n, measure_dim)`` measures.
            fields: Extra per-solution fields for the archive(s).

        Raises:
            RuntimeError: The previous call was not ``ask`` (a failed ``tell``
                still consumes the ask).
            ValueError: An argument's length differs from the number of solutions,
                or the archive rejects the data.
        """
        data, _, add_info = self._begin_tell(False, objective, measures, fields)
        plan, self._asked_plan = self._asked_plan, None
        if plan is None or not traced_tell(self, plan, data, add_info):
            self._tell_all(self._emitters, self._membership, data, add_info,
                           self._num_emitted)
