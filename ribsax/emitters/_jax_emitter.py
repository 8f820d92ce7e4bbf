"""JaxEmitter: the emitter object around an :class:`EmitterKernel`."""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import kernel_keys, validate_batch
from ribsax.emitters._dqd_common import validate_dqd_batch
from ribsax.emitters._emitter_base import (
    EmitterBase,
    _shape_tuple,
    archive_device_view,
    validate_add_info,
)
from ribsax.emitters._emitter_kernel import (
    EmitterKernel,
    feedback_from_batch,
    own_rows_batch,
    unpack_ask,
)
from ribsax.emitters._placement import kernel_mesh, on_mesh
from ribsax.emitters.opt._evolution_strategy_base import single_threaded_blas

__all__ = [
    "JaxEmitter",
    "JaxEmitterState",
    "ask_members",
    "tell_members",
    "draw_members",
    "evaluations_members",
]


class JaxEmitterState(NamedTuple):
    """State pytree of a :class:`JaxEmitter`.

    Attributes:
        inner: The :class:`EmitterKernel`'s own state.
        key: PRNG key; each ask and tell splits off a fresh key for the kernel.
        ask_info: What the last ``ask`` attached to its rows (zeros before the
            first ask), handed back to ``tell``.
        dqd_ask_info: The same for ``ask_dqd`` (an empty dict for plain kernels).
    """

    inner: Any
    key: jax.Array
    ask_info: Any
    dqd_ask_info: Any


# ---------------------------------------------------------------------------
# The pure kernels the schedulers run (the kernel object is the static config).
# ---------------------------------------------------------------------------
def _ask(
    kernel: EmitterKernel, state: JaxEmitterState, view, dqd=False, draws=None, prepared=False
):
    """One emitter's ask. Unless ``prepared`` (the schedulers ran
    :meth:`EmitterKernel.prepare` on the due members already), a kernel's
    ``prepare`` runs first where due. ``view`` may be None for kernels that do not
    read the archive in their ask."""
    key, k_ask = jax.random.split(state.key)
    inner = state.inner
    if not dqd and not prepared and kernel.has_prepare:
        inner = jax.lax.cond(kernel.prepare_due(inner), kernel.prepare, lambda st: st, inner)
    fn = kernel.ask_dqd if dqd else kernel.ask
    out = fn(inner, view, k_ask) if draws is None else fn(inner, view, k_ask, draws=draws)
    inner, solutions, info = unpack_ask(out, "ask_dqd" if dqd else "ask")
    if view is not None:
        solutions = solutions.astype(view.solution.dtype)
    if dqd:
        return state._replace(inner=inner, key=key, dqd_ask_info=info), solutions
    return state._replace(inner=inner, key=key, ask_info=info), solutions


def _tell(kernel: EmitterKernel, state: JaxEmitterState, feedback, view, dqd=False):
    key, k_tell = jax.random.split(state.key)
    feedback = feedback._replace(ask_info=state.dqd_ask_info if dqd else state.ask_info)
    if feedback.batch is None:  # Told on its own: the batch is its rows.
        feedback = feedback._replace(batch=own_rows_batch(feedback))
    fn = kernel.tell_dqd if dqd else kernel.tell
    return state._replace(inner=fn(state.inner, view, k_tell, feedback), key=key), None


def _draws(kernel: EmitterKernel, state: JaxEmitterState):
    """``kernel.draws`` of the key that the next :func:`_ask` on ``state`` hands
    the kernel."""
    return kernel.draws(jax.random.split(state.key)[1])


def ask_members(kernel: EmitterKernel, states, view, draws=None, dqd=False):
    """The asks (``ask_dqd`` when ``dqd``) of emitters of one kernel whose states
    are stacked (leading member axis), ``vmap``-ed: ``(states,
    solutions[members, batch, ...])``. The caller has run
    :meth:`EmitterKernel.prepare` where due (the schedulers' prepare step).

    Args:
        kernel: The :class:`EmitterKernel` (static).
        states: Stacked :class:`JaxEmitterState`.
        view: The :class:`ArchiveView` every member reads (None for kernels
            whose ask does not read it).
        draws: None, or :func:`draw_members` of ``states`` (kernels with
            :meth:`EmitterKernel.draws`), used instead of drawing.
        dqd: Whether to run ``ask_dqd``.
    """
    if draws is None:
        return jax.vmap(lambda st: _ask(kernel, st, view, dqd=dqd, prepared=True))(states)
    return jax.vmap(lambda st, d: _ask(kernel, st, view, draws=d, prepared=True))(states, draws)


def draw_members(kernel: EmitterKernel, states):
    """The random numbers the next :func:`ask_members` on ``states`` draws
    (:meth:`EmitterKernel.draws`), member after member: each member's draws are
    a small computation that XLA runs on one thread, which leaves the other cores
    to the caller while they are made ahead of the ask."""
    return jax.lax.map(partial(_draws, kernel), states)


def _evaluations(kernel: EmitterKernel, state: JaxEmitterState):
    return jnp.asarray(kernel.evaluations(state.inner), jnp.int32)


def evaluations_members(kernel: EmitterKernel, states):
    """int32[members]: :meth:`EmitterKernel.evaluations` of emitters of one
    kernel whose states are stacked."""
    return jax.vmap(partial(_evaluations, kernel))(states)


@partial(jax.jit, static_argnums=(0,))
def _evaluations_jit(kernel, state):
    return _evaluations(kernel, state)


def _distinct_buffers(tree):
    """``tree`` with a copy wherever an array appears a second time (an ``init``
    may use one array for two leaves, e.g. a target network equal to its online
    network; a donated state must not hold one buffer twice)."""
    seen = set()

    def distinct(leaf):
        if id(leaf) in seen:
            return jnp.array(leaf, copy=True)
        seen.add(id(leaf))
        return leaf

    return jax.tree.map(distinct, tree)


def _describe(tree) -> str:
    return str(jax.tree.map(lambda x: f"{x.dtype}{list(x.shape)}", tree))


def _shape_signature(tree) -> tuple:
    leaves, treedef = jax.tree.flatten(tree)
    return (treedef, tuple((tuple(np.shape(x)), str(x.dtype)) for x in leaves))


# The emitter's own ask and tell. The state is donated: a large state (a replay
# buffer, a critic and its optimizer) is updated in place instead of copied.
_run_ask = jax.jit(_ask, static_argnums=(0,), static_argnames=("dqd",), donate_argnums=(1,))
_run_tell = jax.jit(_tell, static_argnums=(0,), static_argnames=("dqd",), donate_argnums=(1,))


class JaxEmitter(EmitterBase):
    """An emitter object that runs an :class:`~ribsax.emitters.EmitterKernel`.

    It is what schedulers take: ``Scheduler(archive, [JaxEmitter(archive,
    MyKernel(...), seed=s) for s in range(5)])``. The kernel's pure functions run in
    every loop: :meth:`ask`/:meth:`tell` here and through the schedulers, the fused
    loop of :meth:`Scheduler.run <ribsax.schedulers.Scheduler.run>`,
    :mod:`ribsax.functional` and :func:`ribsax.run_trials`. Emitters whose kernels
    are equal (and whose states have the same shapes) are fused by the scheduler:
    their states are stacked and their kernels run under one ``jax.vmap``.

    The emitter's state is donated to each compiled ask and tell, so that a large
    state is updated in place: arrays read from :attr:`state` or
    :attr:`kernel_state` before a call are invalid after it (read them again).

    Args:
        archive: The archive the kernel reads parents from; it must keep its
            solutions on the device (all built-in archives with floating-point
            solutions do).
        kernel: An :class:`~ribsax.emitters.EmitterKernel` instance (hashable).
        seed: Seed of the emitter's PRNG key (int, None or
            ``np.random.SeedSequence``).
        init_args: Optional dict handed to ``kernel.init(key, view,
            **init_args)``: per-emitter arrays (a starting point, noise scales,
            bounds) that live in the state rather than in the hashable
            configuration, so that emitters differing in them alone are fused.
        initial_solutions: Optional ``(n, *solution_dim)`` array that
            :meth:`ask` returns, instead of running the kernel, while the archive
            is empty (pyribs' ``initial_solutions``); the kernel's state is left
            as it is, and the :meth:`tell` of those solutions does not reach the
            kernel (it did not ask them). Meanwhile :meth:`kernel_ready` is
            False, so schedulers ask and tell this emitter through its own
            :meth:`ask`/:meth:`tell`.

    Raises:
        TypeError: ``kernel`` is not an :class:`EmitterKernel`, or is not hashable.
        ValueError: ``archive`` has no device store of its solutions.
    """

    _initial_batch = None
    _asked_initial = False

    def __new__(cls, *args, **kwargs):
        kernel = args[1] if len(args) > 1 else kwargs.get("kernel")
        if cls is JaxEmitter and isinstance(kernel, EmitterKernel) and kernel.has_dqd:
            cls = _JaxDQDEmitter
        return super().__new__(cls)

    def __init__(self, archive, kernel, *, seed=None, init_args=None, initial_solutions=None):
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=None,
            lower_bounds=None,
            upper_bounds=None,
        )
        view = archive_device_view(archive)
        if view is None:
            raise ValueError(
                "archive must keep its solutions in a device store (a built-in "
                "archive with floating-point solutions); "
                f"{type(archive).__name__} does not"
            )
        self._start_kernel(kernel, view, seed, init_args, initial_solutions)

    def _start_kernel(self, kernel, view, seed, init_args, initial_solutions):
        """Checks ``kernel`` and makes the first state from ``view`` (the shell
        of :meth:`__init__`, after :class:`EmitterBase`'s)."""
        if not isinstance(kernel, EmitterKernel):
            raise TypeError(
                "kernel must be an instance of a "
                "ribsax.emitters.EmitterKernel subclass, got "
                f"{type(kernel).__name__}"
            )
        try:
            hash(kernel)
        except TypeError as error:
            raise TypeError(
                f"kernel must be hashable (e.g. a frozen dataclass): {error}"
            ) from error
        self._kernel = kernel
        self._initial_batch = (
            None
            if initial_solutions is None
            else np.array(initial_solutions, self.archive.dtypes["solution"])
        )
        self._asked_initial = False
        key, k_init = kernel_keys(seed, 2)
        inner = _distinct_buffers(kernel.init(k_init, view, **(init_args or {})))
        start = JaxEmitterState(inner, key, {}, {})
        self._batch_size, info = self._probe_ask(start, view, dqd=False)
        dqd_info = self._probe_ask(start, view, dqd=True)[1] if kernel.has_dqd else {}
        self._state = JaxEmitterState(inner, key, info, dqd_info)
        self._signature = _shape_signature(self._state)

    def _probe_ask(self, start, view, dqd):
        """Traces the kernel's ask (``ask_dqd``) once, without running it: checks
        its solutions' shape and that it keeps the state's structure, and returns
        ``(rows per ask, zeros shaped like its ask_info)``.

        Raises:
            ValueError: Solutions of the wrong shape, or a state that changes.
        """
        state, solutions = jax.eval_shape(partial(_ask, self._kernel, dqd=dqd), start, view)
        name = f"{type(self._kernel).__name__}.{'ask_dqd' if dqd else 'ask'}"
        expected = _shape_tuple(self.solution_dim)
        if tuple(solutions.shape[1:]) != expected:
            raise ValueError(
                f"{name} returns solutions of shape "
                f"{tuple(solutions.shape)}; expected (batch, *{expected})"
            )
        if _shape_signature(state.inner) != _shape_signature(start.inner):
            raise ValueError(
                f"{name} changes the structure, shapes or dtypes of the state "
                f"(init gives {_describe(start.inner)}, {name} returns "
                f"{_describe(state.inner)}); they must stay as init makes them"
            )
        info = state.dqd_ask_info if dqd else state.ask_info
        return (int(solutions.shape[0]), jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), info))

    # ------------------------------------------------------------ properties
    @property
    def kernel(self) -> EmitterKernel:
        """The :class:`~ribsax.emitters.EmitterKernel` this emitter runs."""
        return self._kernel

    @property
    def initial_solutions(self):
        """What :meth:`ask` returns while the archive is empty (None: the kernel
        asks from the start)."""
        return self._initial_batch

    @property
    def batch_size(self) -> int:
        """Number of solutions each :meth:`ask` returns."""
        return self._batch_size

    @property
    def kernel_state(self):
        """The kernel's own state (``state.inner``)."""
        return self.state.inner

    @property
    def evaluations(self) -> int:
        """Evaluations the kernel reports having made itself
        (:meth:`EmitterKernel.evaluations`)."""
        return int(_evaluations_jit(self._kernel, self.state))

    def kernel_ready(self, phase="ask") -> bool:
        """Whether the next :meth:`ask` runs the kernel's pure ask, as the
        schedulers' traced loops do. False (here: ``initial_solutions`` pending
        on an empty archive) makes the schedulers ask and tell this emitter
        through its own :meth:`ask` and :meth:`tell`; subclasses add their own
        host-side conditions (e.g. an ask that must raise pyribs' error).

        Args:
            phase: What the scheduler is about to run: ``"ask"`` (the next
                :meth:`ask`), ``"ask_dqd"`` (the next ``ask_dqd`` of a DQD
                emitter) or ``"loop"`` (the fused loop, whose iterations start
                with ``ask_dqd`` for DQD emitters). A DQD emitter whose ``ask``
                must follow a ``tell_dqd`` is ready for ``"ask_dqd"`` and
                ``"loop"`` before it is for ``"ask"``.
        """
        del phase
        return not self._initial_pending()

    def _initial_pending(self) -> bool:
        return self._initial_batch is not None and self.archive.empty

    def kernel_tell_ready(self, data, add_info) -> bool:
        """Whether the schedulers' traced tell of this emitter on this batch
        does exactly what its own :meth:`tell` would. False makes the scheduler
        tell it through its own :meth:`tell` instead (which raises pyribs'
        errors). True by default; subclasses add host-side conditions (e.g. an
        ES whose restart may fall due while the archive is empty, where pyribs
        raises).

        Args:
            data: The scheduler's validated batch (``solution``, ``objective``,
                ``measures`` and extra fields; every emitter's rows).
            add_info: The archive's add_info for that batch.
        """
        del data, add_info
        return True

    def _kernel_state(self, view=None):
        """:attr:`state`, to be handed to a jitted kernel: on the archive's
        device (see :meth:`EmitterBase._kernel_state`), or, for a kernel whose
        state is spread over a device mesh, laid out over that mesh (its
        sharded leaves as they are, the others replicated)."""
        mesh = kernel_mesh(self._kernel)
        if mesh is None:
            return super()._kernel_state(view)
        return on_mesh(self.state, mesh)

    def _kernel_view(self, view):
        """The archive's ``view`` as a jitted kernel takes it: replicated over
        the kernel's device mesh, if it has one."""
        return on_mesh(view, kernel_mesh(self._kernel))

    # ------------------------------------------------------------ protocol glue
    @property
    def fusion_key(self):
        return (type(self), self._kernel, self._signature, id(self.archive))

    @property
    def fusion_config(self):
        return self._kernel

    # ------------------------------------------------------------ ask / tell
    def _ask_device(self, dqd=False, stacklevel=3):
        if not dqd:
            self._asked_initial = self._initial_pending()
            if self._asked_initial:
                return jnp.asarray(self._initial_batch)
        kernel = self._kernel
        view = archive_device_view(self.archive)
        state = self._kernel_state(view)
        if not kernel.ask_reads_archive and not dqd:
            view = None  # Its compiled ask then does not depend on the archive.
        view = self._kernel_view(view)
        if kernel.uses_lapack:
            with single_threaded_blas():
                state, solutions = jax.block_until_ready(_run_ask(kernel, state, view, dqd=dqd))
        else:
            state, solutions = _run_ask(kernel, state, view, dqd=dqd)
        self.state = state
        if kernel.has_ask_warnings and not dqd:
            for message in kernel.ask_warnings(state.inner, None):
                warnings.warn(message, stacklevel=stacklevel)
        return solutions

    def ask(self) -> np.ndarray:
        """Runs the kernel's :meth:`~EmitterKernel.ask`.

        While ``initial_solutions`` are pending (given, archive empty), returns
        them instead.

        Returns:
            ``(batch_size, *solution_dim)`` NumPy array.
        """
        if self._initial_pending():
            self._asked_initial = True
            return np.array(self._initial_batch)
        return np.asarray(self._ask_device())

    def ask_device(self) -> jax.Array:
        """:meth:`ask` as a device array, without the copy to the host."""
        return self._ask_device(stacklevel=4)

    def _feedback(self, data, add_info, jacobian=None):
        data = {k: jax.tree.map(jnp.asarray, v) for k, v in data.items() if v is not None}
        info = {name: jnp.asarray(arr) for name, arr in add_info.items()}
        info["status"] = info["status"].astype(jnp.int32)
        feedback = feedback_from_batch(data, info)
        if jacobian is not None:
            feedback = feedback._replace(jacobian=jnp.asarray(jacobian))
        return feedback

    def tell(self, solution, objective, measures, add_info, **fields) -> None:
        """Runs the kernel's :meth:`~EmitterKernel.tell` on the evaluated solutions.

        Args:
            solution: ``(batch_size, *solution_dim)`` solutions from :meth:`ask`.
            objective: ``(batch_size,)`` objectives.
            measures: ``(batch_size, measure_dim)`` measures.
            add_info: The archive's ``add`` output for these solutions.
            fields: Extra per-solution data (:attr:`EmitterFeedback.extras`).

        Raises:
            ValueError: Invalid data or add_info (pyribs' checks: shapes, batch
                lengths, finite values).
        """
        data = validate_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
        )
        add_info = validate_add_info(add_info, data["solution"].shape[0])
        asked_initial, self._asked_initial = self._asked_initial, False
        if asked_initial or not self._kernel.has_tell:
            return  # See EmitterKernel.has_tell.
        view = archive_device_view(self.archive)
        state, _ = _run_tell(
            self._kernel,
            self._kernel_state(view),
            self._feedback(data, add_info),
            self._kernel_view(view),
        )
        self.state = state


def tell_members(kernel, states, feedback, whole, view, dqd=False):
    """The tells (``tell_dqd`` when ``dqd``) of emitters of one kernel whose
    states are stacked, ``vmap``-ed: ``feedback`` has a leading member axis,
    and every member reads the same ``whole`` batch
    (:attr:`EmitterFeedback.batch`), plus what its own ``feedback.batch``
    holds (``{"own": bool[members, whole batch]}``, the member's rows), if
    anything. Returns ``(states, None)``."""

    def tell(st, fb):
        batch = dict(whole) if fb.batch is None else {**whole, **fb.batch}
        return _tell(kernel, st, fb._replace(batch=batch), view, dqd=dqd)

    return jax.vmap(tell)(states, feedback)


class _JaxDQDEmitter(JaxEmitter):
    """:class:`JaxEmitter` of a kernel with ``ask_dqd``/``tell_dqd`` (created by
    ``JaxEmitter(...)`` itself; schedulers find the DQD kernels on the class)."""

    def ask_dqd(self) -> np.ndarray:
        """Runs the kernel's :meth:`~EmitterKernel.ask_dqd`.

        Returns:
            ``(n, *solution_dim)`` NumPy array.
        """
        return np.asarray(self._ask_device(dqd=True))

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields) -> None:
        """Runs the kernel's :meth:`~EmitterKernel.tell_dqd`.

        Args:
            solution: Solutions from :meth:`ask_dqd`.
            objective: Objectives.
            measures: Measures.
            jacobian: ``(n, 1 + measure_dim, *solution_dim)`` gradients.
            add_info: The archive's ``add`` output for these solutions.
            fields: Extra per-solution data.

        Raises:
            ValueError: Invalid data, add_info or Jacobian (pyribs' checks).
        """
        data, add_info, jacobian = validate_dqd_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
            add_info,
            jacobian,
        )
        view = archive_device_view(self.archive)
        state, _ = _run_tell(
            self._kernel,
            self._kernel_state(view),
            self._feedback(data, add_info, jacobian),
            self._kernel_view(view),
            dqd=True,
        )
        self.state = state
