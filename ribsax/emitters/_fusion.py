"""Emitter fusion: running emitters with identical static configuration as one kernel.

pyribs users typically hand a scheduler many copies of the same emitter (e.g. 15
:class:`~ribsax.emitters.EvolutionStrategyEmitter` of batch 36). Run one by one, each
costs a kernel dispatch (or several) per ``ask`` and ``tell``. Here, emitters whose
:attr:`~ribsax.emitters.EmitterBase.fusion_key` match form an :class:`EmitterGroup`:
their state pytrees are stacked along a new leading axis, and the scheduler's step
functions (:mod:`ribsax.schedulers._emitter_steps`) run each group's ``ask`` and
``tell`` kernels ``jax.vmap``-ed over the stack.

Every emitter stays addressable: its ``state`` property reads (and writes) its slice
of the stack, so ``emitter.ask()`` called directly, or any property derived from the
state, behaves exactly as if the emitter were alone. Because each member keeps its
own PRNG key inside the stack, fused and one-by-one runs draw the same numbers.
"""

from __future__ import annotations

import contextlib
import contextvars

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.emitters.opt._evolution_strategy_base import (
    single_threaded_blas as blas_single_thread,  # The name the scheduler steps use.
)

__all__ = [
    "TRIAL_AXIS",
    "trial_axis",
    "any_across_trials",
    "trial_axis_active",
    "blas_single_thread",
    "EmitterGroup",
    "group_emitters",
    "stack_states",
    "unstack_state",
]


#: Name of the ``jax.vmap`` axis over independent runs (``ribsax.run_trials``).
TRIAL_AXIS = "ribsax_trials"
_TRIAL_AXIS_ACTIVE = contextvars.ContextVar("ribsax_trial_axis", default=None)


@contextlib.contextmanager
def trial_axis(name=TRIAL_AXIS):
    """Context (active while tracing) telling kernels that they run under
    ``jax.vmap(..., axis_name=name)`` over independent trials."""
    token = _TRIAL_AXIS_ACTIVE.set(name)
    try:
        yield
    finally:
        _TRIAL_AXIS_ACTIVE.reset(token)


def trial_axis_active() -> bool:
    """Whether kernels are being traced under :func:`trial_axis`."""
    return _TRIAL_AXIS_ACTIVE.get() is not None


def any_across_trials(flag):
    """``flag`` (a traced bool scalar), or-ed over the trial axis when tracing
    under :func:`trial_axis`.

    A ``lax.cond`` whose predicate differs between vmapped trials runs both branches
    for every trial; or-ing the predicate over the trials keeps it a real
    conditional (the branch then has to select per trial itself).
    """
    name = _TRIAL_AXIS_ACTIVE.get()
    if name is None:
        return flag
    return jax.lax.psum(flag.astype(jnp.int32), name) > 0


def stack_states(states):
    """Stacks a list of identically-structured pytrees along a new axis 0, in one
    compiled program per structure (stacking leaf by leaf compiles one small program
    per leaf shape)."""
    return _stack_jit(tuple(states))


@jax.jit
def _stack_jit(states):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def unstack_state(stacked, index: int):
    """Returns member ``index`` of a stacked pytree."""
    return jax.tree.map(lambda leaf: leaf[index], stacked)


def _mask_select(mask, new, old):
    """Keeps ``old`` for members where ``mask`` is False (``mask`` is bool[stack]).

    A leaf that ``new`` shares with ``old`` (the same array or tracer) is returned
    as it is, so that conditionals built around the result can drop it from their
    outputs (see :mod:`ribsax._tracing`)."""

    def select(a, b):
        if a is b:
            return a
        return jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(select, new, old)


class EmitterGroup:
    """Emitters of one fusion key, with their states stacked on the device.

    Creating a group moves the members' states into the stack; :meth:`release`
    gives each member its own state back.

    Args:
        emitters: Two or more emitters with the same ``fusion_key``.
    """

    def __init__(self, emitters):
        self.emitters = list(emitters)
        first = self.emitters[0]
        self.cls = type(first)
        self.config = first.fusion_config
        self.key = first.fusion_key
        for emitter in self.emitters:
            emitter._detach()
        self._stacked = stack_states([e.state for e in self.emitters])
        self._members_cache = {}
        for idx, emitter in enumerate(self.emitters):
            emitter._fused_group = self
            emitter._fused_index = idx

    def __len__(self):
        return len(self.emitters)

    @property
    def valid(self) -> bool:
        """Whether every member still belongs to this group."""
        return all(e._fused_group is self for e in self.emitters)

    @property
    def stacked_state(self):
        """The stacked state pytree (leading axis = member)."""
        return self._stacked

    @stacked_state.setter
    def stacked_state(self, stacked):
        self._stacked = stacked
        self._members_cache.clear()

    # -------------------------------------------------------------- members
    def member_state(self, index: int):
        """State of member ``index`` (a fresh slice of the stack)."""
        cached = self._members_cache.get(index)
        if cached is None:
            cached = unstack_state(self._stacked, index)
            self._members_cache[index] = cached
        return cached

    def set_member_state(self, index: int, state) -> None:
        """Writes ``state`` into slot ``index`` of the stack."""
        self._stacked = jax.tree.map(lambda a, b: a.at[index].set(b), self._stacked, state)
        self._members_cache.clear()

    def host_leaf(self, getter):
        """NumPy copy of one stacked leaf, ``getter(stacked_state)``, cached until
        the next update (one transfer for all members)."""
        cache_key = ("host", getter)
        cached = self._members_cache.get(cache_key)
        if cached is None:
            cached = np.asarray(getter(self._stacked))
            self._members_cache[cache_key] = cached
        return cached

    def release(self) -> None:
        """Gives every member that still belongs here its own state back."""
        for emitter in self.emitters:
            if emitter._fused_group is self:
                emitter._detach()


def group_emitters(emitters, min_size: int = 2):
    """Forms fusion groups among ``emitters``.

    Emitters whose ``fusion_key`` is None, or that share a key with fewer than
    ``min_size - 1`` others, stay ungrouped.

    Args:
        emitters: Sequence of emitters.
        min_size: Smallest group worth fusing.

    Returns:
        ``(groups, membership)`` where ``groups`` is a list of
        :class:`EmitterGroup` and ``membership[i]`` is ``(group, slot)`` for emitter
        ``i`` or None.
    """
    by_key = {}
    for idx, emitter in enumerate(emitters):
        key = getattr(emitter, "fusion_key", None)
        if key is None:
            continue
        by_key.setdefault(key, []).append(idx)
    membership = [None] * len(emitters)
    groups = []
    for indices in by_key.values():
        if len(indices) < min_size:
            continue
        group = EmitterGroup([emitters[i] for i in indices])
        groups.append(group)
        for slot, idx in enumerate(indices):
            membership[idx] = (group, slot)
    return groups, membership
