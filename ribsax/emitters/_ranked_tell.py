"""Host side of the ranked evolution-strategy ``tell``: the restart rules and the
ranker's start, shared by EvolutionStrategyEmitter and
GradientArborescenceEmitter, and the tell-kernel inputs, the kernel-mode and
object-mode ``tell`` and the fusion bookkeeping of GradientArborescenceEmitter."""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np

from ribsax._utils import kernel_key, to_device, validate_batch
from ribsax.emitters import rankers as _rankers
from ribsax.emitters._dqd_common import TELL_BEFORE_MSG
from ribsax.emitters._emitter_base import (
    ArchiveView,
    archive_device_view,
    validate_add_info,
)
from ribsax.emitters._fusion import run_tell

__all__ = [
    "RankedTellMixin",
    "ranked_tell_inputs",
    "restart_rule_fires",
    "setup_ranker",
    "sibling_seed",
]


def restart_rule_fires(restart_rule, itrs, new_sols):
    """pyribs' rule-based restart check (works on host ints and traced values).

    Args:
        restart_rule: ``"no_improvement"``, ``"basic"`` or an int ``k``.
        itrs: Number of tells so far.
        new_sols: Number of solutions the last tell added to the archive.

    Returns:
        Whether the rule asks for a restart.

    Raises:
        ValueError: ``restart_rule`` is invalid.
    """
    if isinstance(restart_rule, numbers.Integral):
        return itrs % restart_rule == 0
    if restart_rule == "no_improvement":
        return new_sols == 0
    if restart_rule == "basic":
        return False
    raise ValueError(f"Invalid restart_rule {restart_rule}")


def _value_or_zeros(ranker_config, add_info, objective, xp):
    """``add_info["value"]``, or zeros where the archive returns no value (e.g. a
    ProximityArchive without local competition) and the ranker does not read it.

    Raises:
        KeyError: The ranker reads ``value`` and the archive returned none (as the
            pyribs ranker does).
    """
    if "value" in add_info:
        return add_info["value"]
    if "value" in _rankers.required_fields(ranker_config):
        raise KeyError("value")
    return xp.zeros(xp.shape(objective), xp.asarray(objective).dtype)


def ranked_tell_inputs(
    ranker_config, data, add_info, allow_restart, xp=jnp, data_fields=("objective", "measures")
) -> dict:
    """Inputs of a ranking tell kernel, for the traced loops (``xp=jnp``) and the
    host's ``tell`` (``xp=np``).

    Args:
        ranker_config: The ranker's config (gives its extra fields).
        data: The batch (``objective``, ``measures`` and extra fields).
        add_info: The archive's add info.
        allow_restart: Whether the kernel may restart on its own.
        xp: ``jax.numpy`` or ``numpy``.
        data_fields: Entries of ``data`` passed as they are.

    Returns:
        Dict of the ``data_fields``, ``status`` (int32), ``value``,
        ``allow_restart`` and the ranker's extra fields (from ``add_info``, else
        from ``data``).
    """
    inputs = {name: data[name] for name in data_fields}
    inputs["status"] = xp.asarray(add_info["status"]).astype(xp.int32)
    inputs["value"] = xp.asarray(_value_or_zeros(ranker_config, add_info, data["objective"], xp))
    inputs["allow_restart"] = xp.asarray(allow_restart)
    for name in _rankers.required_fields(ranker_config):
        if name not in inputs:
            inputs[name] = xp.asarray(add_info[name] if name in add_info else data[name])
    return inputs


def sibling_seed(seed, tag: int):
    """A SeedSequence with ``seed``'s entropy and ``tag`` appended to its spawn
    key: a stream independent of ``seed``'s and of its children's, made without
    spawning from ``seed``."""
    return np.random.SeedSequence(
        seed.entropy, spawn_key=(*seed.spawn_key, tag), pool_size=seed.pool_size
    )


def setup_ranker(archive, ranker, ranker_seed):
    """Initialises ``ranker``'s kernel state if needed.

    Returns:
        ``(measure_lower, measure_upper, key)``: the archive's measure bounds
        (zeros when it has none) and the restart key, drawn from a sibling of the
        ranker's SeedSequence (same entropy, extra spawn key): independent of the
        ES and ranker streams, without spawning from the user's SeedSequence
        beyond pyribs' ``spawn(2)``.
    """
    mdtype = np.dtype(archive.dtypes["measures"])
    if ranker.state is None:
        ranker.state = ranker.kernels.init(
            ranker.config, kernel_key(ranker_seed), archive.measure_dim, mdtype
        )
    lower = np.asarray(
        getattr(archive, "lower_bounds", np.zeros(archive.measure_dim)), dtype=mdtype
    )
    upper = np.asarray(
        getattr(archive, "upper_bounds", np.zeros(archive.measure_dim)), dtype=mdtype
    )
    restart_seed = sibling_seed(ranker_seed, 0x5EED)
    return to_device(lower), to_device(upper), kernel_key(restart_seed)


def _restarts_leaf(stacked):
    return stacked.restarts


class RankedTellMixin:
    """Shared shell of the emitters whose ``tell`` ranks a batch, tells an
    evolution strategy and restarts it by rule (placed before
    :class:`~ribsax.emitters.EmitterBase` in the bases).

    The emitter sets ``_kernel_mode``, ``_config`` (with ``ranker_config``),
    ``_x0``, ``_ranker_obj``, ``_opt_obj`` and ``_batch_size``, calls
    :meth:`_init_rules`, and provides ``_sync_objects`` (copies its state into the
    optimiser and ranker objects), ``_host_restart`` (jitted restart at an elite
    sampled on the host), ``_device_view_ok`` in kernel mode, and the object-mode
    hooks :meth:`_objects_step` and :meth:`_objects_restart`.
    """

    #: Entries of the data batch that the tell kernel reads, besides the
    #: ranker's extra fields.
    _tell_data_fields = ("objective", "measures")

    # ------------------------------------------------------------ setup
    def _init_rules(self, selection_rule, restart_rule) -> None:
        """Validates and stores the selection and restart rules; zeroes the
        counters.

        Raises:
            ValueError: Invalid ``selection_rule`` or ``restart_rule``.
        """
        if selection_rule not in ["mu", "filter"]:
            raise ValueError(f"Invalid selection_rule {selection_rule}")
        self._selection_rule = selection_rule
        self._restart_rule = restart_rule
        self._restarts = 0
        self._itrs = 0
        restart_rule_fires(self._restart_rule, 0, 0)  # Validates restart_rule.

    def _rule_arrays(self):
        """``(mu_selection, restart_period, restart_no_improvement)`` device
        values of the rules (kept in the kernel state so that emitters differing
        only in their rules share one compiled kernel)."""
        rule = self._restart_rule
        period = int(rule) if isinstance(rule, numbers.Integral) else 0
        return (
            to_device(self._selection_rule == "mu"),
            to_device(period, np.int32),
            to_device(rule == "no_improvement"),
        )

    def _setup_ranker(self, ranker_seed):
        """:func:`setup_ranker` of this emitter's archive and ranker."""
        return setup_ranker(self.archive, self._ranker_obj, ranker_seed)

    # ------------------------------------------------------------ properties
    @property
    def x0(self):
        """Initial mean of the ES (GradientArborescenceEmitter: initial solution
        point)."""
        return self._x0

    @property
    def batch_size(self):
        """Number of solutions per :meth:`ask` (a Python int for built-in ES)."""
        return self._batch_size

    @property
    def opt(self):
        """ribsax extension: the evolution strategy object (over the gradient
        coefficients in GradientArborescenceEmitter), synchronised with the
        emitter's state (see ``_sync_objects``)."""
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
    def restarts(self) -> int:
        """Number of restarts."""
        if not self._kernel_mode:
            return self._restarts
        if self._fused_group is not None:
            return int(self._fused_group.host_leaf(_restarts_leaf)[self._fused_index])
        return int(self.state.restarts)

    @property
    def itrs(self) -> int:
        """Number of calls to :meth:`tell`."""
        return self._itrs

    @property
    def fusion_config(self):
        return self._config

    @property
    def fusion_key(self):
        if not self._kernel_mode or not self._device_view_ok:
            return None
        return (type(self), self._config, id(self.archive))

    # ------------------------------------------------------------ tell
    def _tell_ready(self) -> bool:
        """Whether ``tell`` may run (False: it raises pyribs' RuntimeError)."""
        return True

    def _tell_inputs(self, data, add_info, allow_restart):
        """Kernel inputs from validated host arrays."""
        return ranked_tell_inputs(
            self._config.ranker_config, data, add_info, allow_restart, np, self._tell_data_fields
        )

    @classmethod
    def _step_tell_ready(cls, emitters, data, add_info) -> bool:
        """False (tell each emitter on its own) when the archive is empty (a
        restart must raise pyribs' IndexError), a member's ``tell`` would raise
        (no ``tell_dqd`` yet, no objective, missing ranker fields) or the batch
        fails pyribs' ``validate_batch``."""
        first = emitters[0]
        if first.archive.empty:
            return False
        if not all(emitter._tell_ready() for emitter in emitters):
            return False
        if data.get("objective") is None:
            return False
        batch = len(data["solution"])
        fields = _rankers.required_fields(first.fusion_config.ranker_config)
        if any(
            name not in add_info or np.shape(add_info[name]) != (batch,)
            for name in ("status",) + fields
        ):
            return False
        try:
            validate_batch(first.archive, data)
        except (ValueError, TypeError):
            return False
        return True

    def _ranked_tell(self, solution, objective, measures, add_info, fields):
        """Body of ``tell``: validation, then the tell kernel (kernel mode) or
        :meth:`_tell_objects`.

        Raises:
            ValueError: Invalid data or add_info (pyribs' ``validate_batch``).
            RuntimeError: :meth:`_tell_ready` is False.
            IndexError: A restart is due while the archive is empty.
        """
        data = validate_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
        )
        add_info = validate_add_info(add_info, data["solution"].shape[0])
        if not self._tell_ready():
            raise RuntimeError(TELL_BEFORE_MSG)
        if not self._kernel_mode:
            self._tell_objects(data, add_info)
            return

        # Errors of the ranker's own input checks (e.g. NSLC's KeyError).
        self._ranker_obj._validate(data, add_info)
        self._itrs += 1
        view = archive_device_view(self.archive)
        allow_restart = view is not None and not self.archive.empty
        if view is None:
            # A one-cell empty view; the kernel's restart is then done on the host.
            view = ArchiveView(
                jnp.zeros(1, jnp.int32), jnp.zeros((), jnp.int32), jnp.asarray(self.x0)[None]
            )
        inputs = self._tell_inputs(data, add_info, allow_restart)
        state, restart = run_tell(type(self), self._config, self._kernel_state(view), inputs, view)
        self.state = state
        if not allow_restart and bool(restart):
            # Raises IndexError on an empty archive, as pyribs does.
            new_x0 = self.archive.sample_elites(1)["solution"][0]
            self.state = self._host_restart(self._config, state, jnp.asarray(np.asarray(new_x0)))

    def _tell_objects(self, data, add_info):
        """pyribs' tell through the ES and ranker objects (custom classes)."""
        self._itrs += 1
        new_sols = add_info["status"].astype(bool).sum()
        indices, ranking_values = self._ranker_obj.rank(self, self.archive, data, add_info)
        num_parents = new_sols if self._selection_rule == "filter" else self._batch_size // 2
        self._opt_obj.tell(indices, ranking_values, num_parents)
        self._objects_step(data, indices, num_parents)
        if self._opt_obj.check_stop(ranking_values[indices]) or restart_rule_fires(
            self._restart_rule, self._itrs, new_sols
        ):
            new_x0 = self.archive.sample_elites(1)["solution"][0]
            self._objects_restart(new_x0)
            self._ranker_obj.reset(self, self.archive)
            self._restarts += 1

    def _objects_step(self, data, indices, num_parents) -> None:
        """Object mode: work after the ES's tell (none by default)."""

    def _objects_restart(self, new_x0) -> None:
        """Object mode: restarts the optimisers at ``new_x0`` (the ranker is reset
        afterwards)."""
        raise NotImplementedError
