"""EvolutionStrategyEmitter: CMA-ME, CMA-MAE, novelty search and friends."""

from __future__ import annotations

import dataclasses
import numbers
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_shape, to_device, validate_batch
from ribsax.archives._kernels import ArchiveView, sample_occupied
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._emitter_base import (
    EmitterBase,
    archive_device_view,
    validate_add_info,
)
from ribsax.emitters._emitter_kernel import EmitterKernel, feedback_from_batch
from ribsax.emitters._jax_emitter import JaxEmitter, _run_tell
from ribsax.emitters._ranked_tell import restart_rule_fires, setup_ranker, sibling_seed
from ribsax.emitters.opt import _get_es
from ribsax.emitters.opt._evolution_strategy_base import (
    BOUNDS_SAMPLING_THRESHOLD,
    BOUNDS_WARNING,
    KernelEvolutionStrategy,
    never_needs_prepare,
    select_tree,
)

__all__ = ["EvolutionStrategyEmitter", "EvolutionStrategyKernel", "ESEmitterState"]


class ESEmitterState(NamedTuple):
    """State pytree of :class:`EvolutionStrategyKernel`.

    Attributes:
        opt: The ES state.
        ranker: The ranker state.
        key: PRNG key for choosing the elite a restart starts from.
        itrs: int32 number of tells.
        restarts: int32 number of restarts.
        pending_restart: bool, whether the last tell called for a restart that it
            could not make because the archive was empty (the emitter's own
            ``tell`` then raises pyribs' IndexError, or restarts at an elite the
            archive samples on the host).
        lower_bounds: ``(n,)`` solution lower bounds.
        upper_bounds: ``(n,)`` solution upper bounds.
        measure_lower: ``(measure_dim,)`` archive lower bounds (direction rankers).
        measure_upper: ``(measure_dim,)`` archive upper bounds.
        mu_selection: bool, ``selection_rule == "mu"``.
        restart_period: int32 ``k`` of an int ``restart_rule`` (0 otherwise).
        restart_no_improvement: bool, ``restart_rule == "no_improvement"``.

    The selection and restart rules live in the state (not the static config) so
    that emitters differing only in these rules share one compiled kernel and fuse.
    """

    opt: Any
    ranker: Any
    key: jax.Array
    itrs: jax.Array
    restarts: jax.Array
    pending_restart: jax.Array
    lower_bounds: jax.Array
    upper_bounds: jax.Array
    measure_lower: jax.Array
    measure_upper: jax.Array
    mu_selection: jax.Array
    restart_period: jax.Array
    restart_no_improvement: jax.Array


@dataclasses.dataclass(frozen=True)
class EvolutionStrategyKernel(EmitterKernel):
    """The :class:`~ribsax.emitters.EmitterKernel` of
    :class:`EvolutionStrategyEmitter`: an evolution strategy adapted towards
    archive improvement.

    Each ask samples the ES (after its lazy eigendecomposition, when due: the
    kernel's :meth:`prepare`); each tell ranks the batch with the ranker,
    selects parents, updates the ES and restarts it, at a uniformly sampled
    elite of the archive with a fresh ranker direction, when the ES stops or the
    restart rule fires. The state (:class:`ESEmitterState`) holds the ES and
    ranker states, whose PRNG keys the kernel uses (the ``key`` arguments of
    :meth:`ask` and :meth:`tell` are not used), the counters and the per-emitter
    rules and bounds.

    Attributes:
        es_kernels: :class:`~ribsax.emitters.opt.ESKernels` of the ES.
        es_config: The ES's static config.
        ranker_kernels: The ranker's kernels.
        ranker_config: The ranker's :class:`~ribsax.emitters.rankers.RankerConfig`.
        batch_size: Population size.
        bounded: Whether any solution bound is finite (samples are then resampled
            into the bounds, and an ask that needed many rounds warns).
    """

    es_kernels: Any
    es_config: Any
    ranker_kernels: Any
    ranker_config: Any
    batch_size: int
    bounded: bool

    #: The ES samples from its own distribution, not from the archive.
    ask_reads_archive = False
    #: A CMA-ES holds an ``n x n`` covariance: a bandit scheduler runs only its
    #: active members, one after another.
    members_one_by_one = True
    #: The eigendecomposition of :meth:`prepare` calls LAPACK.
    uses_lapack = True

    # ------------------------------------------------------------ protocol
    def init(
        self,
        key,
        archive,
        *,
        opt,
        ranker,
        restart_key,
        lower_bounds,
        upper_bounds,
        measure_lower,
        measure_upper,
        mu_selection,
        restart_period,
        restart_no_improvement,
    ):
        """Assembles the state from the ES and ranker states the emitter's objects
        made (see :class:`ESEmitterState` for the other arguments)."""
        del key, archive
        return ESEmitterState(
            opt=opt,
            ranker=ranker,
            key=restart_key,
            itrs=to_device(0, np.int32),
            restarts=to_device(0, np.int32),
            pending_restart=to_device(False),
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
            measure_lower=measure_lower,
            measure_upper=measure_upper,
            mu_selection=mu_selection,
            restart_period=restart_period,
            restart_no_improvement=restart_no_improvement,
        )

    @property
    def has_prepare(self) -> bool:
        """Whether the ES has a lazy step (CMA-ES' eigendecomposition)."""
        return self.es_kernels.needs_prepare is not never_needs_prepare

    def prepare(self, state):
        """The ES' lazy eigendecomposition where due."""
        return state._replace(opt=self.es_kernels.prepare(self.es_config, state.opt))

    def prepare_due(self, state):
        """Whether the ES' lazy eigendecomposition is due."""
        return self.es_kernels.needs_prepare(self.es_config, state.opt)

    def prepare_passes(self) -> tuple:
        """CMA-ES: the covariance symmetrisation, then the decomposition."""
        if self.es_kernels.prepare_parts is None:
            return (self.prepare,)
        return tuple(
            partial(_opt_pass, part, self.es_config) for part in self.es_kernels.prepare_parts
        )

    def ask(self, state, archive, key):
        """Samples a population from the ES (``archive`` and ``key`` are unused)."""
        del archive, key
        lower, upper = (
            (state.lower_bounds, state.upper_bounds) if self.bounded else (None, None)
        )  # Unbounded: no resampling loop.
        opt, solutions = self.es_kernels.sample(self.es_config, state.opt, lower, upper, None)
        return state._replace(opt=opt), solutions

    def tell(self, state, archive, key, feedback):
        """Ranks the evaluated population, updates the ES and restarts it if
        needed.

        Pure counterpart of pyribs' ``EvolutionStrategyEmitter.tell``: count the
        solutions with nonzero status, rank, select ``num_parents`` (filter: the
        new solutions; mu: half the population), tell the ES, and restart (mean
        at a uniformly sampled elite of ``archive``, fresh ranker direction) when
        the ES's ``check_stop`` or the restart rule says so. A restart due while
        ``archive`` is empty is not made; the state's ``pending_restart`` says so.
        """
        del key
        status = feedback.status
        new_sols = jnp.sum(status != 0).astype(jnp.int32)
        add_info = {"status": status, "value": feedback.value}
        for name in _rankers.required_fields(self.ranker_config):
            if name not in add_info:
                add_info[name] = (
                    feedback.add_info[name] if name in feedback.add_info else feedback.extras[name]
                )
        add_info = {name: add_info[name] for name in _rankers.required_fields(self.ranker_config)}
        indices, values = self.ranker_kernels.rank(
            self.ranker_config,
            state.ranker,
            None,
            None,
            feedback.objective,
            feedback.measures,
            add_info,
        )
        num_parents = jnp.where(
            state.mu_selection, jnp.asarray(self.batch_size // 2, jnp.int32), new_sols
        )
        opt = self.es_kernels.tell(self.es_config, state.opt, indices, values, num_parents)
        itrs = state.itrs + 1
        stop = self.es_kernels.check_stop(self.es_config, opt, values[indices])
        period = state.restart_period
        by_period = (period != 0) & (itrs % jnp.where(period == 0, 1, period) == 0)
        restart = stop | by_period | (state.restart_no_improvement & (new_sols == 0))

        key, sub = jax.random.split(state.key)
        cell = sample_occupied(sub, archive, 1)[0]
        x0 = (
            archive.solution[cell]
            .reshape(state.lower_bounds.shape)
            .astype(state.lower_bounds.dtype)
        )
        opt_reset = self.es_kernels.reset(self.es_config, opt, x0)
        ranker_reset = self.ranker_kernels.reset(
            self.ranker_config, state.ranker, state.measure_lower, state.measure_upper
        )
        nonempty = archive.n_occupied > 0
        do_reset = restart & nonempty
        return state._replace(
            opt=select_tree(do_reset, opt_reset, opt),
            ranker=select_tree(do_reset, ranker_reset, state.ranker),
            key=key,
            itrs=itrs,
            restarts=state.restarts + do_reset.astype(jnp.int32),
            pending_restart=restart & ~nonempty,
        )

    def restarts(self, state):
        """The number of restarts."""
        return state.restarts

    @property
    def has_ask_warnings(self) -> bool:
        """Bounded emitters warn after an ask that resampled many times."""
        return self.bounded

    def ask_warnings(self, states, members) -> list:
        """pyribs' bound-resampling warning, once per asking member that needed
        more sampling rounds than
        :data:`~ribsax.emitters.opt.BOUNDS_SAMPLING_THRESHOLD`."""
        rounds = np.asarray(states.opt.resample_rounds)
        rounds = rounds[None] if members is None else rounds[np.asarray(members)]
        return [BOUNDS_WARNING] * int(np.sum(rounds > BOUNDS_SAMPLING_THRESHOLD))


def _opt_pass(part, es_config, state):
    """One pass of the ES's ``prepare`` on the emitter state."""
    return state._replace(opt=part(es_config, state.opt))


@partial(jax.jit, static_argnums=(0,))
def _host_restart(kernel, state, x0):
    """Restarts at ``x0`` (an elite sampled on the host)."""
    opt = kernel.es_kernels.reset(kernel.es_config, state.opt, x0.reshape(state.lower_bounds.shape))
    ranker = kernel.ranker_kernels.reset(
        kernel.ranker_config, state.ranker, state.measure_lower, state.measure_upper
    )
    return state._replace(
        opt=opt, ranker=ranker, restarts=state.restarts + 1, pending_restart=jnp.zeros((), bool)
    )


def _kernel_capable(opt, ranker) -> bool:
    """Whether ``opt`` and ``ranker`` are built-in, kernel-backed implementations."""
    if not isinstance(opt, KernelEvolutionStrategy):
        return False
    opt_cls = type(opt)
    for name in ("ask", "tell", "check_stop", "reset"):
        if getattr(opt_cls, name) is not getattr(KernelEvolutionStrategy, name):
            return False
    if not isinstance(ranker, _rankers._KernelRanker):
        return False
    rcls = type(ranker)
    if rcls.rank is not _rankers._KernelRanker.rank:
        return False
    return rcls.reset in (_rankers.RankerBase.reset, _rankers._DirectionRanker.reset)


def _restarts_leaf(stacked):
    return stacked.inner.restarts


def _itrs_leaf(stacked):
    return stacked.inner.itrs


def ranked_kernel_tell(emitter, data, add_info, host_restart):
    """The tell of an emitter that ranks its batch (the evolution-strategy and
    gradient-arborescence emitters) after its input checks: through the ES,
    ranker and optimizer objects when they are custom classes, else through its
    kernel, with a restart from an archive elite done on the host when the
    archive has no device view (or is empty): ``host_restart(kernel, state,
    x0)`` returns the emitter's kernel state restarted at ``x0``."""
    if emitter._kernel is None:
        emitter._tell_objects(data, add_info)
        return
    # Errors of the ranker's own input checks (e.g. NSLC's KeyError).
    emitter._ranker_obj._validate(data, add_info)
    if "value" not in add_info and "value" in _rankers.required_fields(
        emitter._kernel.ranker_config
    ):
        raise KeyError("value")
    view = archive_device_view(emitter.archive)
    if view is None:
        view = emitter._empty_view()
    state, _ = _run_tell(
        emitter._kernel, emitter._kernel_state(view), emitter._feedback(data, add_info), view
    )
    emitter.state = state
    if (not emitter._device_view_ok or emitter.archive.empty) and bool(state.inner.pending_restart):
        # Raises IndexError on an empty archive, as pyribs does.
        new_x0 = emitter.archive.sample_elites(1)["solution"][0]
        emitter.state = state._replace(
            inner=host_restart(emitter._kernel, state.inner, jnp.asarray(np.asarray(new_x0)))
        )


class EvolutionStrategyEmitter(JaxEmitter):
    """Adapts an evolution strategy (CMA-ES by default) towards archive improvement.

    This is the emitter of CMA-ME (Fontaine 2020), CMA-MAE (Fontaine 2023), and, with
    other rankers and archives, novelty search, NSLC, DDS and DMS. Every ``ask``
    samples the ES; every ``tell`` ranks the evaluated solutions with the ranker,
    selects parents (``selection_rule``), updates the ES, and restarts it from a
    uniformly sampled elite when the ES stops or the ``restart_rule`` fires.

    With the built-in evolution strategies and rankers, the emitter is a
    :class:`~ribsax.emitters.JaxEmitter` running an
    :class:`EvolutionStrategyKernel`: ``ask`` and ``tell`` are one jitted kernel
    each, and a scheduler fuses emitters of equal configuration. Custom ES or
    ranker classes (and ``"pycma_es"``) run through their object methods, as in
    pyribs; such an emitter has no kernel (:attr:`kernel` is None) and schedulers
    ask and tell it through :meth:`ask` and :meth:`tell`.
    Differences from pyribs: randomness comes from JAX PRNG keys, and the restart
    elite is drawn with the emitter's own key on the device instead of
    ``archive.sample_elites(1)`` (the archive's generator is not consumed).

    Args:
        archive: Archive of solutions.
        x0: Initial mean of the ES, of shape ``archive.solution_dim``.
        sigma0: Initial step size.
        ranker: Ranker name (``"2imp"``, ``"imp"``, ``"obj"``, ``"2obj"``,
            ``"rd"``, ``"2rd"``, ``"nov"``, ``"density"``, ``"nslc"``, ... or the
            full class names) or a callable taking a seed and returning a ranker.
        es: ES name (``"cma_es"``, ``"sep_cma_es"``, ``"lm_ma_es"``,
            ``"openai_es"``, ``"pycma_es"`` or the class names) or a callable
            returning an :class:`~ribsax.emitters.opt.EvolutionStrategyBase`.
            ``"pycma_es"`` (and custom strategies) run through their Python
            methods: not fused, not in ``Scheduler.run``'s fused loop.
        es_kwargs: Extra keyword arguments for the ES.
        selection_rule: ``"filter"`` (parents are the solutions added to the
            archive) or ``"mu"`` (the top half of the population).
        restart_rule: ``"no_improvement"`` (restart when nothing was added),
            ``"basic"`` (only the ES's own stopping test) or an int ``k``
            (restart every ``k`` tells).
        bounds: None, or per-dimension ``(lower, upper)`` pairs; out-of-bounds
            samples are resampled by the ES.
        lower_bounds: Alternative to ``bounds``.
        upper_bounds: Alternative to ``bounds``.
        batch_size: Population size (None: the ES default, ``4 + int(3 ln n)`` for
            CMA-ES).
        seed: None, an int or a :class:`numpy.random.SeedSequence`; split into the
            ES and ranker seeds with ``SeedSequence(seed).spawn(2)``.

    Raises:
        ValueError: Bad x0 shape, selection_rule, restart_rule, ranker or ES name,
            or bounds.
    """

    def __init__(
        self,
        archive,
        *,
        x0,
        sigma0,
        ranker="2imp",
        es="cma_es",
        es_kwargs=None,
        selection_rule="filter",
        restart_rule="no_improvement",
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        batch_size=None,
        seed=None,
    ):
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=bounds,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
        )
        seed_sequence = (
            seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        )
        opt_seed, ranker_seed = seed_sequence.spawn(2)

        self._x0 = np.array(np.asarray(x0, dtype=archive.dtypes["solution"]))
        check_shape(self._x0, "x0", archive.solution_dim, "archive.solution_dim")
        self._sigma0 = sigma0

        if selection_rule not in ["mu", "filter"]:
            raise ValueError(f"Invalid selection_rule {selection_rule}")
        self._selection_rule = selection_rule
        self._restart_rule = restart_rule
        restart_rule_fires(restart_rule, 0, 0)  # Validates restart_rule.
        # Counters of the object mode (the kernel keeps its own in its state).
        self._itrs = 0
        self._restarts = 0

        self._opt_obj = _get_es(
            es,
            sigma0=sigma0,
            batch_size=batch_size,
            solution_dim=self._solution_dim,
            seed=opt_seed,
            dtype=self.archive.dtypes["solution"],
            lower_bounds=self.lower_bounds,
            upper_bounds=self.upper_bounds,
            **(es_kwargs if es_kwargs is not None else {}),
        )
        self._opt_obj.reset(self._x0)

        self._ranker_obj = _rankers._get_ranker(ranker, ranker_seed)
        self._ranker_obj.reset(self, archive)

        self._batch_size = self._opt_obj.batch_size
        self._kernel = None
        self._device_view_ok = False
        if _kernel_capable(self._opt_obj, self._ranker_obj):
            self._setup_kernel(ranker_seed)

    def _setup_kernel(self, ranker_seed):
        """Builds the :class:`EvolutionStrategyKernel` and its first state from
        the ES and ranker objects."""
        archive = self.archive
        ranker = self._ranker_obj
        measure_lower, measure_upper, restart_key = setup_ranker(archive, ranker, ranker_seed)
        bounded = bool(np.isfinite(self.lower_bounds).any() or np.isfinite(self.upper_bounds).any())
        kernel = EvolutionStrategyKernel(
            es_kernels=self._opt_obj.kernels,
            es_config=self._opt_obj.config,
            ranker_kernels=ranker.kernels,
            ranker_config=ranker.config,
            batch_size=int(self._batch_size),
            bounded=bounded,
        )
        rule = self._restart_rule
        period = int(rule) if isinstance(rule, numbers.Integral) else 0
        view = archive_device_view(archive)
        self._device_view_ok = view is not None
        self._start_kernel(
            kernel,
            view if view is not None else self._empty_view(),
            sibling_seed(ranker_seed, 0x4B4E),
            {
                "opt": self._opt_obj.state,
                "ranker": ranker.state,
                "restart_key": restart_key,
                "lower_bounds": to_device(self.lower_bounds),
                "upper_bounds": to_device(self.upper_bounds),
                "measure_lower": measure_lower,
                "measure_upper": measure_upper,
                "mu_selection": to_device(self._selection_rule == "mu"),
                "restart_period": to_device(period, np.int32),
                "restart_no_improvement": to_device(rule == "no_improvement"),
            },
            None,
        )

    def _empty_view(self):
        """A one-cell empty view, for archives without a device store (a restart
        then samples its elite on the host)."""
        return ArchiveView(
            to_device(np.zeros(1, np.int32)),
            to_device(np.zeros((), np.int32)),
            to_device(self._x0[None]),
        )

    # ------------------------------------------------------------ state
    def _set_own_state(self, new_state) -> None:
        self._state = new_state
        if new_state is not None and self._kernel is not None:
            # The ES and ranker objects follow the state (pyribs code holds them).
            self._opt_obj.state = new_state.inner.opt
            self._ranker_obj.state = new_state.inner.ranker

    def _sync_objects(self):
        """Copies a fused member's slice into the ES and ranker objects."""
        if self._fused_group is not None:
            inner = self.state.inner
            self._opt_obj.state = inner.opt
            self._ranker_obj.state = inner.ranker

    # ------------------------------------------------------------ properties
    @property
    def x0(self):
        """Initial mean of the ES."""
        return self._x0

    @property
    def batch_size(self):
        """Number of solutions per :meth:`ask` (a Python int for built-in ES)."""
        return self._batch_size

    @property
    def kernel(self):
        """The :class:`EvolutionStrategyKernel` (None when the ES or the ranker is
        a custom class run through its object methods)."""
        return self._kernel

    @property
    def opt(self):
        """ribsax extension: the evolution strategy object, synchronised with the
        emitter's state."""
        self._sync_objects()
        return self._opt_obj

    @property
    def ranker(self):
        """ribsax extension: the ranker object."""
        self._sync_objects()
        return self._ranker_obj

    # pyribs code sometimes reads the private attributes.
    _opt = opt
    _ranker = ranker

    @property
    def mean(self):
        """ribsax extension: current mean of the ES (``opt.mean``)."""
        return self.opt.mean

    @property
    def sigma(self):
        """ribsax extension: current step size of the ES (``opt.sigma``), for
        strategies that have one."""
        return self.opt.sigma

    @property
    def restarts(self) -> int:
        """Number of restarts."""
        return self._counter(_restarts_leaf, "_restarts")

    @property
    def itrs(self) -> int:
        """Number of calls to :meth:`tell`."""
        return self._counter(_itrs_leaf, "_itrs")

    def _counter(self, leaf, host_name) -> int:
        if self._kernel is None:
            return getattr(self, host_name)
        if self._fused_group is not None:
            return int(self._fused_group.host_leaf(leaf)[self._fused_index])
        return int(leaf(self.state))

    @property
    def evaluations(self) -> int:
        """Evaluations the emitter made itself: none (its samples are the
        scheduler's batch)."""
        return 0

    @property
    def fusion_key(self):
        if self._kernel is None or not self._device_view_ok:
            return None
        return JaxEmitter.fusion_key.fget(self)

    def kernel_ready(self, phase="ask") -> bool:
        """Whether the schedulers' traced loops can run this emitter: it has a
        kernel (built-in ES and ranker)."""
        del phase
        return self._kernel is not None

    def kernel_tell_ready(self, data, add_info) -> bool:
        """False (the scheduler then calls :meth:`tell`) when the archive is
        empty (a restart due then raises pyribs' IndexError), the objective is
        missing, or the archive's add_info lacks a field the ranker reads (the
        ranker then raises pyribs' error)."""
        if self.archive.empty or data.get("objective") is None:
            return False
        batch = len(data["solution"])
        fields = ("status",) + _rankers.required_fields(self._kernel.ranker_config)
        return all(name in add_info and np.shape(add_info[name]) == (batch,) for name in fields)

    # ------------------------------------------------------------ ask / tell
    def ask(self):
        """Samples a population from the evolution strategy.

        Returns:
            ``(batch_size, solution_dim)`` read-only NumPy array.
        """
        if self._kernel is None:
            return self._opt_obj.ask()
        solutions = np.asarray(self._ask_device())
        if solutions.flags.writeable:
            solutions.flags.writeable = False
        return solutions

    def ask_device(self):
        """:meth:`ask` as a device array (without the copy to the host, for a
        kernel)."""
        if self._kernel is None:
            return jnp.asarray(self._opt_obj.ask())
        return self._ask_device(stacklevel=4)

    def tell(self, solution, objective, measures, add_info, **fields):
        """Ranks the solutions, updates the ES, and restarts it if needed.

        Args:
            solution: ``(batch_size, solution_dim)`` solutions from :meth:`ask`.
            objective: ``(batch_size,)`` objectives (None is rejected).
            measures: ``(batch_size, measure_dim)`` measures.
            add_info: The archive's ``add`` output for these solutions.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data or add_info (pyribs' ``validate_batch``).
            IndexError: A restart is due while the archive is empty.
            KeyError: The ranker reads an add_info field the archive did not
                return.
        """
        data = validate_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
        )
        add_info = validate_add_info(add_info, data["solution"].shape[0])
        ranked_kernel_tell(self, data, add_info, _host_restart)

    def _feedback(self, data, add_info, jacobian=None):
        del jacobian
        # Unlike JaxEmitter's, keeps a None objective (rankers that do not read
        # it, e.g. novelty, accept one).
        data = {
            name: None if value is None else jax.tree.map(jnp.asarray, value)
            for name, value in data.items()
        }
        info = {name: jnp.asarray(arr) for name, arr in add_info.items()}
        info["status"] = info["status"].astype(jnp.int32)
        return feedback_from_batch(data, info)

    def _tell_objects(self, data, add_info):
        """pyribs' tell through the ES and ranker objects (custom classes)."""
        self._itrs += 1
        new_sols = add_info["status"].astype(bool).sum()
        indices, ranking_values = self._ranker_obj.rank(self, self.archive, data, add_info)
        num_parents = new_sols if self._selection_rule == "filter" else self._batch_size // 2
        self._opt_obj.tell(indices, ranking_values, num_parents)
        if self._opt_obj.check_stop(ranking_values[indices]) or restart_rule_fires(
            self._restart_rule, self._itrs, new_sols
        ):
            new_x0 = self.archive.sample_elites(1)["solution"][0]
            self._opt_obj.reset(new_x0)
            self._ranker_obj.reset(self, self.archive)
            self._restarts += 1
