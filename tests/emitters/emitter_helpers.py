"""Helpers shared by the emitter and scheduler tests."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import ribs.archives
import ribs.emitters

import ribsax.archives
import ribsax.emitters
from ribsax.archives._threshold_archive import loop_add, loop_view
from ribsax.emitters._emitter_kernel import feedback_from_batch
from ribsax.emitters._jax_emitter import _ask as run_kernel_ask
from ribsax.emitters._jax_emitter import _tell as run_kernel_tell


def assert_same_error(ribs_call, ribsax_call):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        ribs_call()
    with pytest.raises(type(expected.value), match=f"^{re.escape(str(expected.value))}$"):
        ribsax_call()


def grid_pair(solution_dim=3, dims=(10, 10), ranges=((-1, 1), (-1, 1)), **kwargs):
    """A ribs GridArchive and a ribsax GridArchive with the same settings."""
    return (
        ribs.archives.GridArchive(solution_dim=solution_dim, dims=dims, ranges=ranges, **kwargs),
        ribsax.archives.GridArchive(solution_dim=solution_dim, dims=dims, ranges=ranges, **kwargs),
    )


def fill(archive, n=20, seed=0, objective=None):
    """Adds ``n`` random solutions (measures = first two entries) and returns them."""
    rng = np.random.default_rng(seed)
    shape = archive.solution_dim
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    solutions = rng.uniform(-1, 1, size=(n, *shape))
    flat = solutions.reshape(n, -1)
    obj = -np.sum(flat**2, axis=1) if objective is None else objective
    archive.add(solutions, obj, flat[:, :2])
    return solutions


def emitter_pair(name, kwargs, defaults=None, solution_dim=3, **archive_kwargs):
    """Constructors of pyribs' and ribsax's emitter class ``name`` on twin grid
    archives (see :func:`grid_pair`); ``kwargs`` override ``defaults``."""
    ribs_archive, archive = grid_pair(solution_dim=solution_dim, **archive_kwargs)
    kwargs = {**(defaults or {}), **kwargs}
    return (
        lambda: getattr(ribs.emitters, name)(ribs_archive, **kwargs),
        lambda: getattr(ribsax.emitters, name)(archive, **kwargs),
    )


def run_pure_dqd(emitter, evaluate, iterations):
    """Runs ``iterations`` rounds of ask_dqd -> tell_dqd -> ask -> tell (tell only
    for kernels with a ``tell``) of ``emitter``'s kernel in one jitted function,
    as a :class:`~ribsax.emitters.JaxEmitter` runs it (its state and keys), with
    the archive adds through the fused-loop seam, starting from the current
    emitter and archive states (left untouched).

    ``evaluate(solutions) -> (objective, measures, jacobian)`` must be traceable.

    Returns:
        ``(state, loop_state, solutions)``: the final kernel state and archive loop
        state, and the concatenated solutions of every ``ask``.
    """
    kernel = emitter.kernel
    spec = emitter.archive._loop_spec()

    def feedback(data, info, jacobian=None):
        return feedback_from_batch(data, info)._replace(jacobian=jacobian)

    @jax.jit
    def iteration(state, arch):
        state, sol = run_kernel_ask(kernel, state, loop_view(arch), dqd=True)
        obj, meas, jac = evaluate(sol)
        data = {"solution": sol, "objective": obj, "measures": meas}
        arch, info = loop_add(spec, arch, data)
        state, _ = run_kernel_tell(
            kernel, state, feedback(data, info, jac), loop_view(arch), dqd=True
        )
        state, sol = run_kernel_ask(kernel, state, loop_view(arch))
        obj, meas, _ = evaluate(sol)
        data = {"solution": sol, "objective": obj, "measures": meas}
        arch, info = loop_add(spec, arch, data)
        if kernel.has_tell:
            state, _ = run_kernel_tell(kernel, state, feedback(data, info), loop_view(arch))
        return state, arch, sol

    state = jax.tree.map(jnp.copy, emitter.state)
    arch = emitter.archive._loop_state()
    solutions = []
    for _ in range(iterations):
        state, arch, sol = iteration(state, arch)
        solutions.append(np.asarray(sol))
    return state.inner, arch, np.concatenate(solutions)


def run_object_dqd(emitter, evaluate, iterations):
    """The rounds of :func:`run_pure_dqd` through the object API (archive adds with
    ``add``); returns the concatenated solutions of every ``ask``."""
    solutions = []
    for _ in range(iterations):
        sol = emitter.ask_dqd()
        obj, meas, jac = (np.asarray(x) for x in evaluate(jnp.asarray(sol)))
        info = emitter.archive.add(sol, obj, meas)
        emitter.tell_dqd(sol, obj, meas, jac, info)
        sol = emitter.ask()
        obj, meas, _ = (np.asarray(x) for x in evaluate(jnp.asarray(sol)))
        info = emitter.archive.add(sol, obj, meas)
        emitter.tell(sol, obj, meas, info)
        solutions.append(sol)
    return np.concatenate(solutions)


def assert_same_archives(a, b):
    """Two archives hold the same cells, solutions, objectives and measures."""
    da, db = a.data(), b.data()
    np.testing.assert_array_equal(da["index"], db["index"])
    for name in ("solution", "objective", "measures"):
        np.testing.assert_allclose(da[name], db[name], rtol=1e-9, atol=1e-12)


def assert_same_states(a, b):
    """Two state pytrees are equal leaf by leaf (PRNG keys by their data)."""
    for la, lb in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        if jnp.issubdtype(la.dtype, jax.dtypes.prng_key):
            la, lb = jax.random.key_data(la), jax.random.key_data(lb)
        np.testing.assert_allclose(np.asarray(la), np.asarray(lb), rtol=1e-9, atol=1e-12)
