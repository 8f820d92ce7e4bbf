"""GradientArborescenceEmitter: CMA-MEGA and CMA-MAEGA (Fontaine & Nikolaidis 2021)."""

from __future__ import annotations

import dataclasses
import numbers
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import check_shape, to_device, validate_batch
from ribsax.archives._kernels import sample_occupied
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._dqd_common import (
    ASK_BEFORE_MSG,
    TELL_BEFORE_MSG,
    normalize_jacobian,
    validate_dqd_batch,
)
from ribsax.emitters._emitter_base import (
    EmitterBase,
    _shape_tuple,
    archive_device_view,
    validate_add_info,
)
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._evolution_strategy_emitter import (
    EvolutionStrategyEmitter,
    _kernel_capable,
    ranked_kernel_tell,
)
from ribsax.emitters._jax_emitter import _JaxDQDEmitter, _run_tell
from ribsax.emitters._ranked_tell import restart_rule_fires, setup_ranker, sibling_seed
from ribsax.emitters.opt import _get_es, _get_grad_opt
from ribsax.emitters.opt._evolution_strategy_base import parent_weights, select_tree
from ribsax.emitters.opt._gradient_opt_base import KernelGradientOpt

__all__ = ["GradientArborescenceEmitter", "GradientArborescenceKernel", "GAEState"]

_BOUNDS_MSG = (
    "bounds, lower_bounds, and upper_bounds must be set to None. "
    "The GradientArborescenceEmitter does not currently support solution "
    "space bounds, as bounding solutions for DQD algorithms such as "
    "CMA-MEGA is an open problem."
)


class GAEState(NamedTuple):
    """State pytree of :class:`GradientArborescenceKernel`.

    Everything the ``ask_dqd -> tell_dqd -> ask -> tell`` cycle carries lives here:
    the solution point (in ``grad_opt``), the stored Jacobian, and the coefficients
    sampled by the last ``ask`` (``opt.solutions``, which the ES's ``tell`` uses, so
    the coefficients that are ranked and recombined are by construction the ones
    that produced the returned solutions).

    Attributes:
        opt: ES state over the ``1 + measure_dim`` gradient coefficients.
        ranker: Ranker state.
        grad_opt: Gradient-optimizer state (``grad_opt.theta`` is the solution point).
        jacobian: ``(1 + measure_dim, *solution_shape)`` (normalised) Jacobian of the
            solution point, from the last ``tell_dqd``.
        key: PRNG key for choosing the elite a restart starts from.
        itrs: int32 number of tells.
        restarts: int32 number of restarts.
        pending_restart: bool, whether the last tell called for a restart that it
            could not make because the archive was empty (the emitter's own
            ``tell`` then raises pyribs' IndexError, or restarts at an elite the
            archive samples on the host).
        told_dqd: bool, whether a ``tell_dqd`` has stored a Jacobian (pyribs'
            ``ask`` and ``tell`` raise before one).
        measure_lower: ``(measure_dim,)`` archive lower bounds (direction rankers).
        measure_upper: ``(measure_dim,)`` archive upper bounds.
        mu_selection: bool, ``selection_rule == "mu"``.
        restart_period: int32 ``k`` of an int ``restart_rule`` (0 otherwise).
        restart_no_improvement: bool, ``restart_rule == "no_improvement"``.
    """

    opt: Any
    ranker: Any
    grad_opt: Any
    jacobian: jax.Array
    key: jax.Array
    itrs: jax.Array
    restarts: jax.Array
    pending_restart: jax.Array
    told_dqd: jax.Array
    measure_lower: jax.Array
    measure_upper: jax.Array
    mu_selection: jax.Array
    restart_period: jax.Array
    restart_no_improvement: jax.Array


def branch(theta, coefficients, jacobian):
    """Gradient arborescence ``theta + sum_j c_ij J_j`` for every row ``i`` of
    ``coefficients`` (``(batch, 1 + m)``; ``jacobian`` is ``(1 + m, *shape)``).

    The sum over the ``1 + m`` gradients is unrolled into broadcast multiply-adds:
    on CPU that is about half the time of a (batched) ``tensordot`` for these
    shapes."""
    trailing = (1,) * (jacobian.ndim - 1)
    out = theta
    for j in range(jacobian.shape[0]):
        out = out + coefficients[:, j].reshape((-1,) + trailing) * jacobian[j]
    return out


@dataclasses.dataclass(frozen=True)
class GradientArborescenceKernel(EmitterKernel):
    """The :class:`~ribsax.emitters.EmitterKernel` of
    :class:`GradientArborescenceEmitter` (a DQD kernel).

    :meth:`ask_dqd` returns the solution point; :meth:`tell_dqd` stores its
    (normalised) Jacobian; :meth:`ask` samples coefficients from the ES (after its
    lazy eigendecomposition when due) and branches from the point; :meth:`tell`
    ranks the branches, updates the ES, moves the point with the gradient
    optimizer and restarts when the ES stops or the restart rule fires. The
    state (:class:`GAEState`) holds the ES and ranker states, whose PRNG keys the
    kernel uses (the ``key`` arguments are not used).

    Attributes:
        es_kernels: :class:`~ribsax.emitters.opt.ESKernels` of the coefficient ES.
        es_config: The ES's static config.
        ranker_kernels: The ranker's kernels.
        ranker_config: The ranker's :class:`~ribsax.emitters.rankers.RankerConfig`.
        grad_kernels: :class:`~ribsax.emitters.opt.GradOptKernels` of the gradient
            optimizer that moves the solution point.
        grad_config: Its static config.
        batch_size: Number of branches per :meth:`ask`.
        num_coefficients: ``1 + measure_dim``.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
        normalize_grad: Whether :meth:`tell_dqd` normalises the gradients.
        epsilon: Added to the gradient norms.
    """

    es_kernels: Any
    es_config: Any
    ranker_kernels: Any
    ranker_config: Any
    grad_kernels: Any
    grad_config: Any
    batch_size: int
    num_coefficients: int
    solution_shape: tuple
    dtype: Any
    normalize_grad: bool
    epsilon: float

    #: The ES samples the coefficients from its own distribution.
    ask_reads_archive = False
    #: The coefficient ES's eigendecomposition calls LAPACK.
    uses_lapack = True

    def init(
        self,
        key,
        archive,
        *,
        opt,
        ranker,
        grad_opt,
        restart_key,
        measure_lower,
        measure_upper,
        mu_selection,
        restart_period,
        restart_no_improvement,
    ):
        """Assembles the state from the ES, ranker and gradient-optimizer states
        the emitter's objects made (see :class:`GAEState` for the others)."""
        del key, archive
        return GAEState(
            opt=opt,
            ranker=ranker,
            grad_opt=grad_opt,
            jacobian=to_device(np.zeros((self.num_coefficients, *self.solution_shape), self.dtype)),
            key=restart_key,
            itrs=to_device(0, np.int32),
            restarts=to_device(0, np.int32),
            pending_restart=to_device(False),
            told_dqd=to_device(False),
            measure_lower=measure_lower,
            measure_upper=measure_upper,
            mu_selection=mu_selection,
            restart_period=restart_period,
            restart_no_improvement=restart_no_improvement,
        )

    def ask_dqd(self, state, archive, key):
        """The solution point, as a batch of one."""
        del archive, key
        return state, state.grad_opt.theta[None]

    def tell_dqd(self, state, archive, key, feedback):
        """Stores the (normalised) Jacobian of the solution point."""
        del archive, key
        jacobian = jnp.asarray(feedback.jacobian).astype(self.dtype)[0]
        if self.normalize_grad:
            jacobian = normalize_jacobian(jacobian, self.epsilon, len(self.solution_shape))
        return state._replace(jacobian=jacobian, told_dqd=jnp.ones((), bool))

    def ask(self, state, archive, key):
        """Samples coefficients from the ES and branches from the solution point."""
        del archive, key
        # The ES over 1 + measure_dim coefficients is small: its lazy
        # eigendecomposition stays inside the ask (vmapped over a fused group),
        # which costs less than a separate prepare step visiting the due members.
        opt, coefficients = self.es_kernels.ask(self.es_config, state.opt, None, None, None)
        solutions = branch(state.grad_opt.theta, coefficients, state.jacobian)
        return state._replace(opt=opt), solutions.astype(self.dtype)

    def tell(self, state, archive, key, feedback):
        """Ranks the branches, updates the coefficient ES, moves the solution
        point and restarts if needed (pure counterpart of pyribs' ``tell``).

        The solution point steps towards the log-rank weighted mean of the best
        ``num_parents`` branches (``grad_opt.step(mean - theta)``; with zero
        parents the mean is 0, pyribs' empty-sum quirk). A restart (ES
        ``check_stop`` or the restart rule) moves the point to a uniformly sampled
        elite of ``archive``, resets the ES to zero coefficients and resets the
        ranker; one due while ``archive`` is empty is not made, and the state's
        ``pending_restart`` says so.
        """
        del key
        new_sols = jnp.sum(feedback.status != 0).astype(jnp.int32)
        add_info = {"status": feedback.status, "value": feedback.value}
        fields = _rankers.required_fields(self.ranker_config)
        for name in fields:
            if name not in add_info:
                add_info[name] = (
                    feedback.add_info[name] if name in feedback.add_info else feedback.extras[name]
                )
        indices, values = self.ranker_kernels.rank(
            self.ranker_config,
            state.ranker,
            None,
            None,
            feedback.objective,
            feedback.measures,
            {name: add_info[name] for name in fields},
        )
        num_parents = jnp.where(
            state.mu_selection, jnp.asarray(self.batch_size // 2, jnp.int32), new_sols
        )
        opt = self.es_kernels.tell(self.es_config, state.opt, indices, values, num_parents)

        theta = state.grad_opt.theta
        weights, _ = parent_weights(num_parents, self.batch_size, self.dtype)
        parents = jnp.asarray(feedback.solution).astype(self.dtype)[indices]
        new_mean = jnp.tensordot(weights, parents, axes=1)
        new_mean = jnp.where(num_parents > 0, new_mean, jnp.zeros_like(new_mean))
        grad_opt = self.grad_kernels.step(self.grad_config, state.grad_opt, new_mean - theta)

        itrs = state.itrs + 1
        stop = self.es_kernels.check_stop(self.es_config, opt, values[indices])
        period = state.restart_period
        by_period = (period != 0) & (itrs % jnp.where(period == 0, 1, period) == 0)
        restart = stop | by_period | (state.restart_no_improvement & (new_sols == 0))

        key, sub = jax.random.split(state.key)
        cell = sample_occupied(sub, archive, 1)[0]
        x0 = archive.solution[cell].reshape(theta.shape).astype(theta.dtype)
        nonempty = archive.n_occupied > 0
        do_reset = restart & nonempty
        return state._replace(
            opt=select_tree(do_reset, self._reset_es(opt), opt),
            ranker=select_tree(do_reset, self._reset_ranker(state), state.ranker),
            grad_opt=select_tree(do_reset, self.grad_kernels.init(self.grad_config, x0), grad_opt),
            key=key,
            itrs=itrs,
            restarts=state.restarts + do_reset.astype(jnp.int32),
            pending_restart=restart & ~nonempty,
        )

    def restarts(self, state):
        """The number of restarts."""
        return state.restarts

    def _reset_es(self, opt):
        return self.es_kernels.reset(
            self.es_config, opt, jnp.zeros(self.num_coefficients, self.dtype)
        )

    def _reset_ranker(self, state):
        return self.ranker_kernels.reset(
            self.ranker_config, state.ranker, state.measure_lower, state.measure_upper
        )


@partial(jax.jit, static_argnums=(0,))
def _host_restart(kernel, state, x0):
    """Restarts at ``x0`` (an elite sampled on the host)."""
    return state._replace(
        opt=kernel._reset_es(state.opt),
        ranker=kernel._reset_ranker(state),
        grad_opt=kernel.grad_kernels.init(
            kernel.grad_config,
            x0.reshape(state.grad_opt.theta.shape).astype(state.grad_opt.theta.dtype),
        ),
        restarts=state.restarts + 1,
        pending_restart=jnp.zeros((), bool),
    )


def _grad_opt_capable(grad_opt) -> bool:
    """Whether ``grad_opt`` is a built-in, kernel-backed gradient optimizer."""
    if not isinstance(grad_opt, KernelGradientOpt):
        return False
    cls = type(grad_opt)
    return (
        cls.step is KernelGradientOpt.step
        and cls.reset is KernelGradientOpt.reset
        and cls.theta is KernelGradientOpt.theta
    )


def _theta_leaf(stacked):
    return stacked.inner.grad_opt.theta


def _told_dqd_leaf(stacked):
    return stacked.inner.told_dqd


class GradientArborescenceEmitter(_JaxDQDEmitter):
    r"""Gradient arborescence with ES-adapted coefficients: CMA-MEGA and CMA-MAEGA.

    From `Fontaine & Nikolaidis 2021 <https://arxiv.org/abs/2106.03894>`_. The
    emitter keeps a *solution point* :math:`\theta`. :meth:`ask_dqd` returns it so
    that the objective and measure gradients can be evaluated there, and
    :meth:`tell_dqd` stores them (normalised by default). :meth:`ask` then samples
    coefficients :math:`c_i \sim \mathcal{N}(\mu, \sigma^2 C)` from an evolution
    strategy over the ``1 + measure_dim`` coefficients and returns the branches

    .. math::

        \theta'_i = \theta + c_{i,0} \nabla f(\theta)
            + \sum_{j=1}^{k} c_{i,j} \nabla m_j(\theta).

    :meth:`tell` ranks the branches with the ranker, updates the ES with the
    ranking (the coefficients are those that produced the branches: they are kept
    in the state between ``ask`` and ``tell``), moves :math:`\theta` with the
    gradient optimizer towards the log-rank weighted mean of the selected branches,
    and restarts (solution point at a random elite, ES at zero coefficients, ranker
    reset) when the ES stops or the restart rule fires.

    Call order: :meth:`ask_dqd`, :meth:`tell_dqd`, then :meth:`ask`, :meth:`tell`.

    With the built-in ES, ranker and gradient optimizer, the emitter is a
    :class:`~ribsax.emitters.JaxEmitter` running a
    :class:`GradientArborescenceKernel`: its asks and tells are jitted kernels, a
    scheduler fuses emitters of equal configuration, and the fused loop runs it.
    Custom classes run through their object methods, as in pyribs (such an
    emitter has no kernel: :attr:`kernel` is None). Differences from pyribs:
    randomness comes from JAX PRNG keys; the restart elite is drawn with the
    emitter's own key on the device (the archive's generator is not consumed);
    ``tell_dqd`` expects the Jacobian of exactly one solution (the solution
    point), as :meth:`ask_dqd` returns one.

    Args:
        archive: Archive of solutions.
        x0: Initial solution point, of shape ``archive.solution_dim``.
        sigma0: Initial step size of the coefficient distribution.
        lr: Learning rate of the gradient optimizer.
        ranker: Ranker name or callable taking a seed (see
            :mod:`ribsax.emitters.rankers`).
        selection_rule: ``"filter"`` (parents are the branches that entered the
            archive) or ``"mu"`` (the top half).
        restart_rule: ``"no_improvement"``, ``"basic"`` or an int ``k``.
        grad_opt: ``"adam"``, ``"gradient_ascent"``, a full class name, or a callable
            taking ``theta0`` and ``lr`` and returning a
            :class:`~ribsax.emitters.opt.GradientOptBase`.
        grad_opt_kwargs: Extra keyword arguments of the gradient optimizer.
        es: ES name or callable (see :mod:`ribsax.emitters.opt`).
        es_kwargs: Extra keyword arguments of the ES.
        normalize_grad: Whether :meth:`tell_dqd` divides each gradient by its norm
            (plus ``epsilon``).
        bounds: Must be None (bounds are not supported).
        lower_bounds: Must be None.
        upper_bounds: Must be None.
        batch_size: Branches per :meth:`ask` (None: the ES default for
            ``1 + measure_dim`` dimensions, ``4 + int(3 ln(1 + m))`` for CMA-ES). The
            solution point of :meth:`ask_dqd` is not counted.
        epsilon: Added to the gradient norms when normalising.
        seed: None, an int or a :class:`numpy.random.SeedSequence`; split into the
            ES and ranker seeds with ``SeedSequence(seed).spawn(2)``.

    Raises:
        ValueError: A bound is given, x0 has the wrong shape, or
            ``selection_rule``, ``restart_rule``, ``ranker``, ``grad_opt`` or ``es`` is
            invalid.
    """

    def __init__(
        self,
        archive,
        *,
        x0,
        sigma0,
        lr,
        ranker="2imp",
        selection_rule="filter",
        restart_rule="no_improvement",
        grad_opt="adam",
        grad_opt_kwargs=None,
        es="cma_es",
        es_kwargs=None,
        normalize_grad=True,
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        batch_size=None,
        epsilon=1e-8,
        seed=None,
    ):
        if bounds is not None or lower_bounds is not None or upper_bounds is not None:
            raise ValueError(_BOUNDS_MSG)
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=None,
            lower_bounds=None,
            upper_bounds=None,
        )
        seed_sequence = (
            seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        )
        opt_seed, ranker_seed = seed_sequence.spawn(2)

        dtype = archive.dtypes["solution"]
        self._epsilon = epsilon
        self._x0 = np.array(x0, dtype=dtype)
        check_shape(self._x0, "x0", archive.solution_dim, "archive.solution_dim")
        self._sigma0 = sigma0
        self._normalize_grads = bool(normalize_grad)
        # Object mode: whether tell_dqd was called, and its Jacobian. Kernel
        # mode: a True read from the state's told_dqd (it never turns False).
        self._told_dqd = False
        self._jacobian_host = None

        self._ranker_obj = _rankers._get_ranker(ranker, ranker_seed)
        self._ranker_obj.reset(self, archive)

        if selection_rule not in ["mu", "filter"]:
            raise ValueError(f"Invalid selection_rule {selection_rule}")
        self._selection_rule = selection_rule
        self._restart_rule = restart_rule
        restart_rule_fires(restart_rule, 0, 0)  # Validates restart_rule.
        # Counters of the object mode (the kernel keeps its own in its state).
        self._itrs = 0
        self._restarts = 0

        self._num_coefficients = archive.measure_dim + 1
        self._grad_opt_obj = _get_grad_opt(
            grad_opt,
            theta0=self._x0,
            lr=lr,
            **(grad_opt_kwargs if grad_opt_kwargs is not None else {}),
        )
        self._opt_obj = _get_es(
            es,
            sigma0=sigma0,
            batch_size=batch_size,
            solution_dim=self._num_coefficients,
            seed=opt_seed,
            dtype=dtype,
            lower_bounds=-np.inf,
            upper_bounds=np.inf,
            **(es_kwargs if es_kwargs is not None else {}),
        )
        self._opt_obj.reset(np.zeros(self._num_coefficients))
        self._batch_size = self._opt_obj.batch_size

        self._kernel = None
        self._device_view_ok = False
        if _kernel_capable(self._opt_obj, self._ranker_obj) and _grad_opt_capable(
            self._grad_opt_obj
        ):
            self._setup_kernel(ranker_seed)

    def _setup_kernel(self, ranker_seed):
        """Builds the :class:`GradientArborescenceKernel` and its first state from
        the ES, ranker and gradient-optimizer objects."""
        archive = self.archive
        ranker = self._ranker_obj
        measure_lower, measure_upper, restart_key = setup_ranker(archive, ranker, ranker_seed)
        kernel = GradientArborescenceKernel(
            es_kernels=self._opt_obj.kernels,
            es_config=self._opt_obj.config,
            ranker_kernels=ranker.kernels,
            ranker_config=ranker.config,
            grad_kernels=self._grad_opt_obj.kernels,
            grad_config=self._grad_opt_obj.config,
            batch_size=int(self._batch_size),
            num_coefficients=int(self._num_coefficients),
            solution_shape=_shape_tuple(self.solution_dim),
            dtype=np.dtype(archive.dtypes["solution"]),
            normalize_grad=self._normalize_grads,
            epsilon=float(self._epsilon),
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
                "grad_opt": self._grad_opt_obj.state,
                "restart_key": restart_key,
                "measure_lower": measure_lower,
                "measure_upper": measure_upper,
                "mu_selection": to_device(self._selection_rule == "mu"),
                "restart_period": to_device(period, np.int32),
                "restart_no_improvement": to_device(rule == "no_improvement"),
            },
            None,
        )

    # The shell shared with EvolutionStrategyEmitter: the view of an archive
    # without a device store, the counters, fusion and the tell's feedback.
    _empty_view = EvolutionStrategyEmitter._empty_view
    _counter = EvolutionStrategyEmitter._counter
    restarts = EvolutionStrategyEmitter.restarts
    itrs = EvolutionStrategyEmitter.itrs
    evaluations = EvolutionStrategyEmitter.evaluations
    fusion_key = EvolutionStrategyEmitter.fusion_key
    _feedback = EvolutionStrategyEmitter._feedback

    # ------------------------------------------------------------ properties
    @property
    def x0(self):
        """Initial solution point."""
        return self._x0

    @property
    def batch_size(self):
        """Number of solutions per :meth:`ask` (a Python int for built-in ES)."""
        return self._batch_size

    @property
    def batch_size_dqd(self) -> int:
        """Number of solutions returned by :meth:`ask_dqd` (always 1: the solution
        point)."""
        return 1

    @property
    def epsilon(self):
        """Added to the gradient norms when :meth:`tell_dqd` normalises them."""
        return self._epsilon

    @property
    def kernel(self):
        """The :class:`GradientArborescenceKernel` (None when the ES, the ranker
        or the gradient optimizer is a custom class run through its object
        methods)."""
        return self._kernel

    @property
    def theta(self) -> np.ndarray:
        """ribsax extension: the current solution point."""
        if self._kernel is None:
            return np.array(self._grad_opt_obj.theta)
        if self._fused_group is not None:
            return np.array(self._fused_group.host_leaf(_theta_leaf)[self._fused_index])
        return np.array(self.state.inner.grad_opt.theta)

    def _sync_objects(self):
        """Copies the kernel state into the ES, ranker and optimizer objects."""
        if self._kernel is not None:
            inner = self.state.inner
            self._opt_obj.state = inner.opt
            self._ranker_obj.state = inner.ranker
            self._grad_opt_obj.state = inner.grad_opt

    @property
    def opt(self):
        """ribsax extension: the evolution strategy over the gradient coefficients,
        synchronised with the emitter's state."""
        self._sync_objects()
        return self._opt_obj

    @property
    def ranker(self):
        """ribsax extension: the ranker object."""
        self._sync_objects()
        return self._ranker_obj

    @property
    def grad_opt(self):
        """ribsax extension: the gradient optimizer holding the solution point."""
        self._sync_objects()
        return self._grad_opt_obj

    # pyribs code sometimes reads the private attributes.
    _opt = opt
    _ranker = ranker
    _grad_opt = grad_opt

    def _has_jacobian(self) -> bool:
        """Whether :meth:`tell_dqd` has stored a Jacobian (in the state, when
        the emitter has a kernel: the scheduler's steps and the fused loop set
        it there)."""
        if self._kernel is not None and not self._told_dqd:
            self._told_dqd = bool(self._counter(_told_dqd_leaf, None))
        return self._told_dqd

    # ------------------------------------------------------------ scheduler
    def kernel_ready(self, phase="ask") -> bool:
        """Whether the schedulers' traced steps can run this emitter: it has a
        kernel, and before an ``ask`` its Jacobian is stored (otherwise its own
        :meth:`ask` raises pyribs' error)."""
        return self._kernel is not None and (phase != "ask" or self._has_jacobian())

    def kernel_tell_ready(self, data, add_info) -> bool:
        """As :meth:`EvolutionStrategyEmitter.kernel_tell_ready
        <ribsax.emitters.EvolutionStrategyEmitter.kernel_tell_ready>`, and False
        before the first :meth:`tell_dqd` (:meth:`tell` raises then)."""
        return self._has_jacobian() and EvolutionStrategyEmitter.kernel_tell_ready(
            self, data, add_info
        )

    # ------------------------------------------------------------ DQD
    def ask_dqd(self):
        """Returns the solution point, whose gradients must be evaluated.

        Returns:
            ``(1, *solution_dim)`` NumPy array.
        """
        return self.theta[None]

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields):
        """Stores the Jacobian of the solution point from :meth:`ask_dqd`.

        Args:
            solution: ``(1, solution_dim)`` solution from :meth:`ask_dqd`.
            objective: ``(1,)`` objective.
            measures: ``(1, measure_dim)`` measures.
            jacobian: ``(1, 1 + measure_dim, solution_dim)``: the objective gradient
                followed by the measure gradients.
            add_info: The archive's ``add`` output for the solution.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data, add_info or Jacobian (shape or non-finite
                entries), or a Jacobian for more than one solution.
        """
        data, add_info, jacobian = validate_dqd_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
            add_info,
            jacobian,
        )
        if self._kernel is None:
            if self._normalize_grads:
                jacobian = normalize_jacobian(jacobian, self._epsilon, jacobian.ndim - 2, xp=np)
            self._jacobian_host = jacobian
            self._told_dqd = True
            return
        if jacobian.shape[0] != 1:
            raise ValueError(
                "GradientArborescenceEmitter.tell_dqd expects the jacobian of the "
                f"single solution returned by ask_dqd(), but it has shape "
                f"{jacobian.shape}."
            )
        view = archive_device_view(self.archive)
        if view is None:
            view = self._empty_view()
        state, _ = _run_tell(
            self._kernel,
            self._kernel_state(view),
            self._feedback(data, add_info)._replace(jacobian=jnp.asarray(jacobian)),
            view,
            dqd=True,
        )
        self.state = state
        self._told_dqd = True

    # ------------------------------------------------------------ ask / tell
    def ask(self):
        """Samples gradient coefficients from the ES and branches from the solution
        point.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array.

        Raises:
            RuntimeError: :meth:`tell_dqd` was never called.
        """
        if not self._has_jacobian():
            raise RuntimeError(ASK_BEFORE_MSG)
        if self._kernel is None:
            coefficients = self._opt_obj.ask()[:, :, None]
            return self._grad_opt_obj.theta + np.sum(self._jacobian_host * coefficients, axis=1)
        return np.array(self._ask_device())

    def ask_device(self):
        """:meth:`ask` as a device array (without the copy to the host, for a
        kernel)."""
        if not self._has_jacobian() or self._kernel is None:
            return jnp.asarray(self.ask())
        return self._ask_device(stacklevel=4)

    def tell(self, solution, objective, measures, add_info, **fields):
        """Ranks the branches, updates the coefficient ES, moves the solution point
        and restarts if needed.

        Args:
            solution: ``(batch_size, solution_dim)`` solutions from :meth:`ask`.
            objective: ``(batch_size,)`` objectives.
            measures: ``(batch_size, measure_dim)`` measures.
            add_info: The archive's ``add`` output.
            fields: Extra per-solution fields.

        Raises:
            ValueError: Invalid data or add_info.
            RuntimeError: :meth:`tell_dqd` was never called.
            IndexError: A restart is due while the archive is empty.
            KeyError: The ranker reads an add_info field the archive did not
                return.
        """
        data = validate_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
        )
        add_info = validate_add_info(add_info, data["solution"].shape[0])
        if not self._has_jacobian():
            raise RuntimeError(TELL_BEFORE_MSG)
        ranked_kernel_tell(self, data, add_info, _host_restart)

    def _tell_objects(self, data, add_info):
        """pyribs' tell through the ES, ranker and optimizer objects (custom
        classes)."""
        self._itrs += 1
        new_sols = add_info["status"].astype(bool).sum()
        indices, ranking_values = self._ranker_obj.rank(self, self.archive, data, add_info)
        num_parents = new_sols if self._selection_rule == "filter" else self._batch_size // 2
        self._opt_obj.tell(indices, ranking_values, num_parents)
        parents = data["solution"][indices][:num_parents]
        weights = np.log(num_parents + 0.5) - np.log(np.arange(1, num_parents + 1))
        weights = weights / np.sum(weights)
        new_mean = np.sum(parents * np.expand_dims(weights, axis=1), axis=0)
        self._grad_opt_obj.step(new_mean - self._grad_opt_obj.theta)
        if self._opt_obj.check_stop(ranking_values[indices]) or restart_rule_fires(
            self._restart_rule, self._itrs, new_sols
        ):
            new_x0 = self.archive.sample_elites(1)["solution"][0]
            self._grad_opt_obj.reset(new_x0)
            self._opt_obj.reset(np.zeros(self._num_coefficients))
            self._ranker_obj.reset(self, self.archive)
            self._restarts += 1
