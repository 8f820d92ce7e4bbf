"""Running a scheduler for many iterations: fused (one ``lax.scan``) or in Python
(:mod:`~ribsax.schedulers._ask_tell_loop`).

:func:`run_scheduler` is the body of :meth:`ribsax.schedulers.Scheduler.run`;
:func:`compiled_scan` compiles (once per configuration) and caches the fused loop,
for one run or ``jax.vmap``-ed over several (see :func:`ribsax.run_trials`).
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ribsax._utils import seed_to_key
from ribsax.archives._array_store import device_of
from ribsax.emitters._fusion import TRIAL_AXIS, blas_single_thread, trial_axis
from ribsax.emitters._placement import on_mesh
from ribsax.schedulers._ask_tell_loop import python_loop
from ribsax.schedulers._carry import carry_off_mesh, carry_on_mesh, install_carry, loop_carry
from ribsax.schedulers._evaluation import as_evaluation_functions
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._run_result import RunResult
from ribsax.schedulers._scan import METRIC_NAMES, iteration_keys, scan_iterations
from ribsax.schedulers._units import unit_uses_lapack
from ribsax.schedulers._validation import check_non_finite, check_positive_int

__all__ = [
    "run_scheduler",
    "compiled_scan",
    "run_chunks",
    "evaluation_devices",
    "metrics_frame",
    "insertions_frame",
    "lapack_context",
    "CHUNK",
]

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 32


def _avals(tree):
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple(
        (np.shape(x), str(getattr(x, "dtype", None) or np.asarray(x).dtype)) for x in leaves
    )


#: Iterations per compiled call of the fused loop. Every run, whatever its length,
#: uses the same executable (shorter tails skip the unused steps), so a
#: configuration compiles once.
CHUNK = 256


def compiled_scan(
    plan: LoopPlan, carry, keys, n_valid, vmapped: bool = False, insertions: bool = False
):
    """The compiled fused loop for ``plan`` and these argument shapes.

    Compiled executables are cached per (plan signature, shapes); the evaluation
    functions are part of the signature by identity.

    Args:
        plan: :class:`~ribsax.schedulers._loop_plan.LoopPlan`.
        carry: Example carry (or stacked carries when ``vmapped``).
        keys: ``[chunk]`` keys (``[trials, chunk]`` when ``vmapped``).
        n_valid: int32 scalar, iterations of the chunk to run.
        vmapped: Whether to ``jax.vmap`` the loop over a leading trial axis of
            ``carry`` and ``keys``.
        insertions: Whether the loop also returns the statuses, objectives and
            measures of the evaluated solutions (see
            :func:`~ribsax.schedulers._scan.scan_iterations`).

    Returns:
        ``(compiled, compile_seconds)``; ``compile_seconds`` is 0 on a cache hit.
    """
    cache_key = (plan.signature, _avals(carry), _avals(keys), vmapped, insertions)
    entry = _CACHE.get(cache_key)
    if entry is not None:
        _CACHE.move_to_end(cache_key)
        return entry[0], 0.0
    fn = partial(scan_iterations, plan, insertions=insertions)
    if vmapped:
        vmapped_fn = jax.vmap(fn, in_axes=(0, 0, None), axis_name=TRIAL_AXIS)

        def fn(*args):
            with trial_axis():  # Kernels may coordinate conditionals over trials.
                return vmapped_fn(*args)

    start = time.perf_counter()
    compiled = jax.jit(fn).lower(carry, keys, n_valid).compile()
    seconds = time.perf_counter() - start
    # The functions are kept alive with the entry so their ids stay unique.
    _CACHE[cache_key] = (compiled, plan.functions)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return compiled, seconds


def evaluation_devices(functions):
    """The devices that a sharded evaluation spreads its batch over (the
    ``shard_devices`` of a function from :func:`ribsax.distributed.shard_task`, or
    of the ``evaluate_fn`` of the task whose bound method it is); None when the
    evaluation is not sharded over several devices."""
    if functions is None:
        return None
    for fn in (functions.evaluate, functions.evaluate_dqd):
        owner = getattr(fn, "__self__", None)
        for candidate in (
            fn,
            getattr(owner, "evaluate_fn", None),
            getattr(owner, "jacobian_fn", None),
        ):
            devices = getattr(candidate, "shard_devices", None)
            if devices is not None and len(devices) > 1:
                return tuple(devices)
    return None


def _placed(tree, devices):
    """``tree`` replicated over ``devices`` (None: committed to the default
    device, where the scheduler objects keep their states)."""
    if devices is None:
        return jax.device_put(tree, jax.devices()[0])
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("batch",))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def _same_layout(tree, shardings):
    """``tree`` with each leaf placed as ``shardings`` say (the next chunk's
    compiled loop takes the carry laid out as the first one was)."""

    def place(x, sharding):
        return x if x.sharding == sharding else jax.device_put(x, sharding)

    return jax.tree.map(place, tree, shardings)


def run_chunks(
    plan: LoopPlan,
    carry,
    base_keys,
    start: int,
    iterations: int,
    vmapped: bool = False,
    insertions: bool = False,
):
    """Runs ``iterations`` iterations in compiled chunks of :data:`CHUNK`.

    Args:
        plan: The loop plan.
        carry: Initial carry (stacked over trials when ``vmapped``).
        base_keys: The base evaluation key (``[trials]`` keys when ``vmapped``).
        start: Index of the first iteration (for the keys).
        iterations: Number of iterations.
        vmapped: Whether the carry and keys have a leading trial axis.
        insertions: Whether ``metrics`` also holds ``status``, ``objective`` and
            ``measures`` of every evaluated solution, ``[iterations, rows, ...]``
            (``[trials, iterations, rows, ...]`` when ``vmapped``).

    Returns:
        ``(carry, metrics, compile_seconds, run_seconds)`` with ``metrics`` as
        NumPy arrays of ``iterations`` rows (``[trials, iterations]`` when
        ``vmapped``).
    """
    chunk = CHUNK
    make_keys = partial(iteration_keys, iterations=chunk)
    if vmapped:
        make_keys = jax.vmap(make_keys, in_axes=(0, None))
    # A sharded evaluation: the state is replicated over its devices for the run.
    devices = evaluation_devices(plan.functions)
    # A kernel spreading its state over a device mesh: the run is on that mesh.
    mesh = plan.mesh
    if mesh is not None:
        archive_leaves = jax.tree.leaves(carry[0])
        home = device_of(archive_leaves[0]) if archive_leaves else None
        carry = carry_on_mesh(plan, carry)
    elif devices is not None:
        carry = _placed(carry, devices)
    compile_time = run_time = 0.0
    pieces = []
    with lapack_context(plan):
        done = 0
        while done < iterations:
            n = min(chunk, iterations - done)
            keys = make_keys(base_keys, start + done)
            n_valid = jnp.asarray(n, jnp.int32)
            if mesh is not None:
                keys, n_valid = on_mesh((keys, n_valid), mesh)
            elif devices is not None:
                keys, n_valid = _placed((keys, n_valid), devices)
            compiled, seconds = compiled_scan(plan, carry, keys, n_valid, vmapped, insertions)
            compile_time += seconds
            begin = time.perf_counter()
            layout = None if mesh is None else jax.tree.map(lambda x: x.sharding, carry)
            carry, metrics = jax.block_until_ready(compiled(carry, keys, n_valid))
            if mesh is not None:
                carry = _same_layout(carry, layout)
            run_time += time.perf_counter() - begin
            axis = 1 if vmapped else 0
            pieces.append(
                {
                    name: np.asarray(value)[(slice(None),) * axis + (slice(n),)]
                    for name, value in metrics.items()
                }
            )
            done += n
    metrics = {name: np.concatenate([p[name] for p in pieces], axis=axis) for name in pieces[0]}
    if mesh is not None:
        carry = carry_off_mesh(plan, carry, home)
    elif devices is not None:
        carry = _placed(carry, None)
    return carry, metrics, compile_time, run_time


def lapack_context(plan: LoopPlan):
    """BLAS limited to one thread when an emitter's kernels call LAPACK (see
    :func:`~ribsax.emitters._fusion.blas_single_thread`)."""
    if any(unit_uses_lapack(u) for u in plan.units):
        return blas_single_thread()
    return contextlib.nullcontext()


def metrics_frame(
    metrics: dict, start: int, metrics_every: int, evaluations_before: int = 0
) -> pd.DataFrame:
    """DataFrame of the recorded iterations (every ``metrics_every``-th and the
    last), with a 1-based ``iteration`` column counted from ``start``, the
    archive statistics, ``evaluations`` (cumulative, counted from
    ``evaluations_before``) and ``non_finite`` (rows of the recorded iteration
    whose evaluation was not finite)."""
    arrays = {name: np.asarray(metrics[name]) for name in METRIC_NAMES}
    n = len(arrays["num_elites"])
    iteration = np.arange(start + 1, start + n + 1)
    keep = iteration % metrics_every == 0
    keep[-1] = True
    frame = pd.DataFrame({"iteration": iteration[keep]})
    for name in METRIC_NAMES:
        frame[name] = arrays[name][keep]
    evaluations = evaluations_before + np.cumsum(np.asarray(metrics["evaluations"], np.int64))
    frame["evaluations"] = evaluations[keep]
    frame["non_finite"] = np.asarray(metrics["non_finite"], np.int64)[keep]
    return frame


def raise_on_non_finite(metrics: dict, start: int) -> None:
    """Raises ValueError naming the first iteration (1-based, counted from
    ``start``) and row whose evaluation was not finite, if any, in the metrics
    of one run (:func:`run_chunks`)."""
    counts = np.asarray(metrics["non_finite"])
    bad = np.flatnonzero(counts > 0)
    if bad.size:
        first = int(bad[0])
        row = int(np.asarray(metrics["first_non_finite"])[first])
        raise ValueError(
            f"The evaluation returned a non-finite objective or measures at iteration "
            f"{start + first + 1}, row {row} ({int(counts.sum())} such rows in "
            f"{bad.size} iterations); these rows were not added to the archive"
        )


def _scheduler_key(scheduler, seed):
    """The base evaluation key: set by ``seed``, else kept from earlier runs."""
    if seed is not None or getattr(scheduler, "_run_key", None) is None:
        scheduler._run_key = seed_to_key(seed)
        scheduler._run_count = 0
    return scheduler._run_key


def insertions_frame(metrics: dict, start: int) -> pd.DataFrame:
    """The inserted solutions (status > 0) among the ``status``, ``objective`` and
    ``measures`` of :func:`run_chunks` (one run): ``iteration`` (1-based, counted
    from ``start``), ``status``, ``objective`` and ``measures_<j>``, in iteration
    and row order."""
    status = np.asarray(metrics["status"])
    iteration, row = np.nonzero(status > 0)
    measures = np.asarray(metrics["measures"])[iteration, row]
    frame = pd.DataFrame(
        {
            "iteration": iteration.astype(np.int64) + start + 1,
            "status": status[iteration, row].astype(np.int64),
            "objective": np.asarray(metrics["objective"])[iteration, row],
        }
    )
    for j in range(measures.shape[1]):
        frame[f"measures_{j}"] = measures[:, j]
    return frame


def run_scheduler(
    scheduler,
    evaluate,
    iterations,
    *,
    jacobian=None,
    metrics_every=1,
    seed=None,
    fused=True,
    history=False,
    non_finite="skip",
) -> RunResult:
    """Body of :meth:`ribsax.schedulers.Scheduler.run` (see there)."""
    iterations = check_positive_int(iterations, "iterations")
    metrics_every = check_positive_int(metrics_every, "metrics_every")
    check_non_finite(non_finite)
    if scheduler._last_called in ["ask", "ask_dqd"]:
        raise RuntimeError("run cannot be called immediately after " + scheduler._last_called)
    functions = as_evaluation_functions(evaluate, jacobian)
    base_key = _scheduler_key(scheduler, seed)
    start = scheduler._run_count

    compile_time = 0.0
    if fused:
        plan = LoopPlan(scheduler, functions)
        carry = loop_carry(scheduler, plan)
        carry, metrics, compile_time, run_time = run_chunks(
            plan, carry, base_key, start, iterations, insertions=history
        )
        install_carry(scheduler, plan, carry)
    else:
        keys = iteration_keys(base_key, start, iterations)
        begin = time.perf_counter()
        metrics = python_loop(scheduler, functions, keys, insertions=history)
        run_time = time.perf_counter() - begin
    scheduler._run_count = start + iterations
    evaluations_before = getattr(scheduler, "_run_evaluations", 0)
    evaluations = int(np.sum(np.asarray(metrics["evaluations"], np.int64)))
    scheduler._run_evaluations = evaluations_before + evaluations
    if non_finite == "raise":
        raise_on_non_finite(metrics, start)
    return RunResult(
        metrics=metrics_frame(metrics, start, metrics_every, evaluations_before),
        iterations=iterations,
        compile_time=compile_time,
        run_time=run_time,
        fused=fused,
        history=insertions_frame(metrics, start) if history else None,
        evaluations=evaluations,
    )
