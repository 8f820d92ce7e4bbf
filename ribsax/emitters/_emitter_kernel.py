"""EmitterKernel: the public protocol for writing an emitter as pure functions.

An emitter written against this protocol is a hashable, static configuration (a
frozen dataclass, say) with three pure methods over a state pytree:

.. code-block:: python

    import dataclasses
    import jax, jax.numpy as jnp
    from ribsax.emitters import EmitterKernel, JaxEmitter

    @dataclasses.dataclass(frozen=True)
    class RandomWalk(EmitterKernel):
        batch_size: int = 36
        sigma: float = 0.1

        def init(self, key, archive):
            return {"step": jnp.zeros((), jnp.int32)}

        def ask(self, state, archive, key):
            k_parent, k_noise = jax.random.split(key)
            parents = self.sample_parents(k_parent, archive, self.batch_size)
            noise = jax.random.normal(k_noise, parents.shape, parents.dtype)
            return state, parents + self.sigma * noise

        def tell(self, state, archive, key, feedback):
            return {"step": state["step"] + 1}

    emitter = JaxEmitter(archive, RandomWalk(sigma=0.2), seed=1)

:class:`~ribsax.emitters.JaxEmitter` is the object around it that schedulers take;
with it the same emitter runs in :meth:`Scheduler.ask
<ribsax.schedulers.Scheduler.ask>`/:meth:`~ribsax.schedulers.Scheduler.tell`, in
the fused loop of :meth:`~ribsax.schedulers.Scheduler.run`, in
:mod:`ribsax.functional`, in :func:`ribsax.run_trials` and under ``jax.vmap``, and
emitters with equal configurations are fused into one ``vmap``-ed kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax.numpy as jnp

from ribsax.archives._kernels import ArchiveView, sample_occupied

__all__ = ["EmitterKernel", "EmitterFeedback", "ArchiveView"]


class EmitterFeedback(NamedTuple):
    """What :meth:`EmitterKernel.tell` receives about the solutions of its last ask.

    Every array has the emitter's batch as its leading axis, rows in the order the
    emitter's ``ask`` returned them.

    Attributes:
        solution: ``[batch, *solution_dim]`` the solutions.
        objective: ``[batch]`` objectives.
        measures: ``[batch, measure_dim]`` measures.
        status: ``[batch]`` int32 add statuses of the scheduler's archive (0: not
            added, 1: improved an existing elite, 2: a new cell).
        value: ``[batch]`` add values of the archive (the improvement over the
            cell's threshold, as pyribs defines it; ``-inf`` for rows that are not
            ``valid``).
        valid: ``[batch]`` bool, False for rows whose evaluation was not finite
            (a fused run keeps them out of the archive, gives them status 0,
            objective ``-inf`` and zero measures). The ask/tell loop raises on such
            rows, so all its rows are valid.
        extras: Dict of the evaluation's per-row extras (``[batch, ...]`` leaves):
            the archive's extra fields and, in the fused loop and
            :mod:`ribsax.functional`, everything else the task returned in its
            ``extras`` (an RL task's transitions, for one).
        ask_info: What this emitter's ``ask`` attached to its rows (the third value
            it returned; an empty dict if it returned none).
        jacobian: ``[batch, 1 + measure_dim, *solution_dim]`` objective and
            measure gradients in :meth:`EmitterKernel.tell_dqd`; None in
            :meth:`EmitterKernel.tell`.
        batch: The scheduler's whole batch, every emitter's rows (an emitter
            that learns from all evaluations, e.g. a critic trained on every
            episode's transitions, reads it): a dict of ``solution``,
            ``objective``, ``measures``, ``status``, ``valid`` (False also for
            the rows of a bandit's inactive emitters), ``extras`` and ``own``
            (bool, True exactly on this emitter's own rows, those of the other
            fields of this feedback, in the same order), each with the whole
            batch as leading axis. When an emitter is told on its own (its
            ``tell`` called directly, or a scheduler that cannot trace it), the
            batch is its own rows (``own`` all True).
        add_info: Dict of the archive's other per-row add_info entries
            (``[batch]`` arrays), e.g. a ProximityArchive's ``novelty`` and
            ``local_competition`` or a DensityArchive's ``density``; empty when
            the archive returns none (the fused loop's archives do not).
    """

    solution: Any
    objective: Any
    measures: Any
    status: Any
    value: Any
    valid: Any
    extras: Any
    ask_info: Any
    jacobian: Any = None
    batch: Any = None
    add_info: Any = None


class EmitterKernel:
    """Base class of emitters written as pure functions (the emitter protocol).

    Subclass it as a frozen dataclass (or any hashable class whose equality means
    "the same static configuration") and implement :meth:`init`, :meth:`ask` and
    :meth:`tell`; DQD emitters also implement :meth:`ask_dqd` and :meth:`tell_dqd`.
    Wrap an instance in :class:`~ribsax.emitters.JaxEmitter` to use it with a
    scheduler.

    **Contract.** The methods are traced by JAX (``jit``, ``vmap``, ``lax.scan``):

    * they read only their arguments and the configuration's fields, and return
      new values instead of mutating anything;
    * ``state`` is any pytree of arrays; its structure, shapes and dtypes never
      change after :meth:`init` (so nothing recompiles), and the number of
      solutions an ``ask`` returns is fixed;
    * ``archive`` is a read-only :class:`ArchiveView` of the scheduler's archive:
      ``solution`` (``[cells, *solution_dim]``), ``objective`` (``[cells]``),
      ``measures`` (``[cells, measure_dim]``), ``order`` and ``n_occupied`` (the
      first ``n_occupied`` entries of ``order`` are the occupied cells; other
      rows are meaningless); :meth:`sample_parents` draws elites from it;
    * ``key`` is a fresh PRNG key for each call, derived from the seed the
      :class:`~ribsax.emitters.JaxEmitter` was given (the same seed gives the same
      run); the state need not hold a key;
    * a large state (a replay buffer, a critic and its optimizer) is updated in
      place: the schedulers donate emitter states to the compiled steps, so return
      ``buffer.at[rows].set(...)`` rather than a rebuilt array.

    **Optional members.** :meth:`draws` (random numbers made ahead of the ask),
    :meth:`prepare` with :meth:`prepare_due` and :meth:`prepare_passes` (an
    occasional, expensive step before the ask, run only for the members that are
    due), :meth:`restarts`, :meth:`ask_warnings`, :meth:`evaluations`, and the
    settings :attr:`ask_reads_archive`, :attr:`members_one_by_one`,
    :attr:`uses_lapack` and :attr:`evaluations_per_tell` tell the schedulers how
    to run the kernel; the defaults suit a kernel that uses none of them.
    """

    def __getstate__(self):
        # A dataclass configuration pickles its fields only: what it derives and
        # caches from them (jitted functions, networks) is rebuilt on use.
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return dict(self.__dict__)

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def __deepcopy__(self, memo):
        # A configuration is immutable: copies of an emitter share it (and what
        # it holds, e.g. a task's evaluation function).
        return self

    # ------------------------------------------------------------ required
    def init(self, key, archive: ArchiveView, **init_args):
        """Returns the initial state pytree.

        Args:
            key: A PRNG key.
            archive: The archive's view (for shapes and dtypes; it may be empty).
            init_args: The ``init_args`` the :class:`~ribsax.emitters.JaxEmitter`
                was given (none by default): per-emitter values that are not
                static configuration (a starting point, noise scales, bounds).
                They belong in the state, so emitters that differ in them alone
                share one compiled kernel, are fused, and can be ``vmap``-ed
                over.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement init")

    def ask(self, state, archive: ArchiveView, key):
        """Generates solutions.

        A kernel that implements :meth:`draws` takes a fourth argument,
        ``draws=None``: None means "draw them from ``key``"; otherwise they are
        ``draws(key)``, made ahead by the scheduler, to be used instead.

        Args:
            state: The emitter's state.
            archive: Read-only view of the archive.
            key: A fresh PRNG key.

        Returns:
            ``(state, solutions)`` or ``(state, solutions, ask_info)``:
            ``solutions`` of shape ``[batch, *solution_dim]`` in the archive's
            solution dtype, and ``ask_info`` a dict of ``[batch, ...]`` arrays that
            come back in :attr:`EmitterFeedback.ask_info` at the next :meth:`tell`
            (e.g. the descriptor a policy was conditioned on).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement ask")

    def tell(self, state, archive: ArchiveView, key, feedback: EmitterFeedback):
        """Updates the state from the evaluation of the last ask's solutions.

        The default keeps the state (an emitter that does not learn).

        Args:
            state: The emitter's state after its ask.
            archive: Read-only view of the archive after the batch was added.
            key: A fresh PRNG key.
            feedback: :class:`EmitterFeedback` of the emitter's rows.

        Returns:
            The new state.
        """
        del archive, key, feedback
        return state

    # ------------------------------------------------------------ optional
    def ask_dqd(self, state, archive: ArchiveView, key):
        """DQD emitters: solutions whose objective and measure gradients the
        scheduler evaluates before :meth:`ask` (same return values as
        :meth:`ask`). Not overriding it makes the emitter a plain one."""
        raise NotImplementedError(f"{type(self).__name__} has no ask_dqd")

    def tell_dqd(self, state, archive: ArchiveView, key, feedback: EmitterFeedback):
        """DQD emitters: receives the :meth:`ask_dqd` solutions' evaluation, with
        :attr:`EmitterFeedback.jacobian` set. Returns the new state."""
        raise NotImplementedError(f"{type(self).__name__} has no tell_dqd")

    def draws(self, key):
        """The random numbers ``ask(state, archive, key)`` draws (a pytree of
        arrays), for kernels whose draws are a function of ``key`` and of the
        configuration alone (not of the state or the archive).

        Optional. A kernel that implements it lets the ask/tell loop of the
        schedulers make its next ask's random numbers while the caller evaluates
        the current batch (on the CPU, drawing 540 x 100 normals costs about as
        much as the rest of a MAP-Elites ask); the loop then calls ``ask(state,
        archive, key, draws=draws(key))``, which must return exactly what
        ``ask(state, archive, key)`` returns. Not implementing it (the default)
        means the ask always draws its numbers itself.
        """
        raise NotImplementedError(f"{type(self).__name__} has no draws")

    def evaluations(self, state):
        """Evaluations the emitter made itself since :meth:`init` (int scalar).

        Count here what the emitter evaluated outside the scheduler's batches (ES
        samples that are not inserted, for one): the scheduler adds it to the
        run's evaluation count. The default is 0.
        """
        del state
        return jnp.zeros((), jnp.int32)

    def prepare(self, state):
        """The occasional, expensive part of an ask that updates a large part of
        the state (CMA-ES' lazy eigendecomposition of its covariance), run before
        :meth:`ask` where :meth:`prepare_due` holds.

        Optional. A kernel that implements it receives in :meth:`ask` a state
        that :meth:`prepare` has brought up to date: :class:`JaxEmitter` and the
        schedulers call ``prepare`` before each ask of a member for which
        :meth:`prepare_due` is True, and never otherwise. The schedulers do it
        member by member, only for the members that are due, each updating its
        slots of the stacked states in place, so that a fused group of many
        emitters does the work of the members that need it (a ``vmap``-ed
        conditional would do every member's). ``ask`` itself then stays cheap
        to ``vmap``.

        Args:
            state: The emitter's state before its ask.

        Returns:
            The prepared state (same structure, shapes and dtypes).
        """
        raise NotImplementedError(f"{type(self).__name__} has no prepare")

    def prepare_due(self, state):
        """bool scalar: whether :meth:`prepare` has work to do on ``state``
        (traced; the default says always). Only read for kernels with
        :meth:`prepare`."""
        del state
        return jnp.ones((), bool)

    def prepare_passes(self) -> tuple:
        """The passes that make up :meth:`prepare`, each ``state -> state``, run
        one after another over the due members (the default: ``prepare``
        alone).

        A prepare that both rewrites an array and reads it for the rest of its
        work (CMA-ES makes its covariance exactly symmetric, then decomposes it)
        may split into a pass that only rewrites it and a pass that only reads
        it: each pass then updates the stacked states in place, where one pass
        would copy the whole stacked array for each member. Running the passes
        in order must equal ``prepare`` on a due state.
        """
        return (self.prepare,)

    def restarts(self, state):
        """int32 scalar: the number of times the emitter restarted its search
        since :meth:`init` (an ES that restarts at an elite), or None (the
        default) for emitters that do not restart.

        A :class:`~ribsax.schedulers.BanditScheduler` with
        ``reselect="terminated"`` reselects its active emitters when one of
        them restarted; emitters without restarts count as terminated after
        every tell.
        """
        del state
        return None

    def ask_warnings(self, states, members) -> list:
        """Host side: the messages of the warnings the last ask calls for (the
        default: none), issued by the ask/tell loops (not by the fused loop).

        Only called for kernels whose :attr:`has_ask_warnings` is True, after an
        ask, outside any trace.

        Args:
            states: Kernel states with a leading member axis: a fused group's
                stacked states, or one emitter's state with an axis of length 1.
            members: Indices (along that axis) of the members that asked.

        Returns:
            A list of warning messages, one per warning to issue.
        """
        del states, members
        return []

    #: Whether :meth:`ask` reads its ``archive`` argument. A kernel whose ask
    #: does not (an ES samples from its own distribution) may receive None
    #: instead of the archive's view there, so that its compiled ask does not
    #: depend on the archive's size (a ProximityArchive grows); its solutions
    #: must then have the archive's solution dtype already.
    ask_reads_archive: bool = True

    #: Whether a bandit scheduler runs the asks and tells of a fused group's
    #: active members one member after another, each updating its slots of the
    #: stacked states in place (True: much work per member, e.g. a CMA-ES with
    #: its covariance matrix), rather than for every member of a group that has
    #: an active one, keeping the active members' results (False, the default:
    #: cheap members, e.g. Gaussian mutation).
    members_one_by_one: bool = False

    #: Whether :meth:`prepare` or :meth:`ask` call LAPACK (an
    #: eigendecomposition): the schedulers' loops then run them with the host
    #: BLAS limited to one thread, whose worker threads would otherwise compete
    #: with XLA's for the cores.
    uses_lapack: bool = False

    #: Evaluations each :meth:`tell` makes itself, when that number is fixed (an
    #: ES emitter's samples): runners turn an evaluation budget into iterations
    #: with it before the run starts. 0 by default; it must agree with
    #: :meth:`evaluations`.
    evaluations_per_tell: int = 0

    @property
    def has_dqd(self) -> bool:
        """Whether this kernel implements :meth:`ask_dqd` and :meth:`tell_dqd`."""
        cls = type(self)
        return (
            cls.ask_dqd is not EmitterKernel.ask_dqd or cls.tell_dqd is not EmitterKernel.tell_dqd
        )

    @property
    def has_draws(self) -> bool:
        """Whether this kernel implements :meth:`draws` (a subclass whose draws
        depend on its configuration may override this property)."""
        return type(self).draws is not EmitterKernel.draws

    @property
    def has_prepare(self) -> bool:
        """Whether this kernel implements :meth:`prepare`."""
        return type(self).prepare is not EmitterKernel.prepare

    @property
    def has_restarts(self) -> bool:
        """Whether this kernel implements :meth:`restarts`."""
        return type(self).restarts is not EmitterKernel.restarts

    @property
    def has_ask_warnings(self) -> bool:
        """Whether the loops call :meth:`ask_warnings` after an ask (a subclass
        whose warnings depend on its configuration may override this
        property)."""
        return type(self).ask_warnings is not EmitterKernel.ask_warnings

    @property
    def has_tell(self) -> bool:
        """Whether this kernel implements :meth:`tell`. A kernel that does not
        (an emitter that does not learn) is not told at all: its state, key
        included, stays what its ask left, and the schedulers' ask/tell loop sends
        nothing to the device after the archive add."""
        return type(self).tell is not EmitterKernel.tell

    # ------------------------------------------------------------ helpers
    @staticmethod
    def sample_parents(key, archive: ArchiveView, n: int, default=None):
        """``n`` elites drawn uniformly with replacement from ``archive``.

        Args:
            key: A PRNG key.
            archive: The :class:`ArchiveView`.
            n: Number of parents (static).
            default: What to return while the archive is empty: a solution (or
                something that broadcasts to ``[n, *solution_dim]``); None means
                zeros.

        Returns:
            ``[n, *solution_dim]`` solutions.
        """
        cells = sample_occupied(key, archive, n)
        parents = archive.solution[cells]
        fallback = (
            jnp.zeros_like(parents)
            if default is None
            else jnp.broadcast_to(jnp.asarray(default, parents.dtype), parents.shape)
        )
        return jnp.where(archive.n_occupied > 0, parents, fallback)


def unpack_ask(out, name: str = "ask"):
    """``(state, solutions, ask_info)`` from what an :meth:`EmitterKernel.ask`
    returned (``ask_info`` an empty dict when it returned two values).

    Raises:
        TypeError: ``out`` is not a tuple of two or three values.
    """
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise TypeError(
            f"EmitterKernel.{name} must return (state, solutions) or "
            f"(state, solutions, ask_info), got {type(out).__name__}"
            + (f" of length {len(out)}" if isinstance(out, tuple) else "")
        )
    state, solutions = out[0], out[1]
    ask_info = out[2] if len(out) == 3 else {}
    if ask_info is None:
        ask_info = {}
    return state, jnp.asarray(solutions), ask_info


def feedback_from_batch(data: dict, add_info: dict) -> EmitterFeedback:
    """:class:`EmitterFeedback` (without ``ask_info`` and ``jacobian``) from a
    batch dict (``solution``, ``objective``, ``measures`` and the evaluation's
    other per-row extras) and the archive's add_info (``status``, ``value`` and,
    from a traced tell, ``valid``)."""
    core = ("solution", "objective", "measures")
    status = jnp.asarray(add_info["status"])
    valid = add_info.get("valid")
    if valid is None:
        valid = jnp.ones(status.shape, bool)
    value = add_info.get("value")
    if value is None:  # An archive without values (e.g. a ProximityArchive).
        value = jnp.zeros(status.shape, jnp.result_type(float))
    return EmitterFeedback(
        solution=data["solution"],
        objective=data["objective"],
        measures=data["measures"],
        status=status.astype(jnp.int32),
        value=value,
        valid=valid,
        extras={k: v for k, v in data.items() if k not in core},
        ask_info=None,
        add_info={k: v for k, v in add_info.items() if k not in ("status", "value", "valid")},
    )


def own_rows_batch(feedback: EmitterFeedback) -> dict:
    """:attr:`EmitterFeedback.batch` made of the feedback's own rows."""
    return {
        "solution": feedback.solution,
        "objective": feedback.objective,
        "measures": feedback.measures,
        "status": feedback.status,
        "valid": feedback.valid,
        "extras": feedback.extras,
        "own": jnp.ones(jnp.shape(feedback.status), bool),
    }
