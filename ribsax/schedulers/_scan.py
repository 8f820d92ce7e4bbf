"""The fused loop: ask -> evaluate -> tell compiled into one ``jax.lax.scan``.

A scheduler whose archives and emitters all have pure kernels (see the "fused loop"
protocol in :mod:`ribsax.emitters._emitter_base` and the loop seam of
:class:`~ribsax.archives._threshold_archive.ThresholdArchive`) can run many
iterations without returning to Python.
:class:`~ribsax.schedulers._loop_plan.LoopPlan` describes such a scheduler
statically;
:func:`~ribsax.schedulers._carry.loop_carry` collects its state into one pytree;
:func:`scan_iterations` is the pure function that runs ``iterations`` steps on a
carry, so it can be jitted, lowered ahead of time, or ``jax.vmap``-ed over
independent runs (:func:`ribsax.run_trials`); and
:func:`~ribsax.schedulers._carry.install_carry` writes a carry back into the
objects, which then behave exactly as after the equivalent Python ask/tell loop.

Per iteration ``i``, with ``k = fold_in(key, i)`` (:func:`iteration_keys`) and the
phase keys of :func:`phase_key`:

1. DQD emitters only: ``ask_dqd`` kernels, ``evaluate_dqd(solutions, fold_in(k,
   1))``, archive add(s), ``tell_dqd`` kernels;
2. ``ask`` kernels (fused groups vmapped), ``evaluate(solutions, fold_in(k, 0))``,
   archive add (and result-archive add), ``tell`` kernels;
3. the result archive's statistics are recorded.

The ask/tell loop of ``Scheduler.run(..., fused=False)`` and of the experiments
derives its evaluation keys with the same functions.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from ribsax.archives._archive_stats import STAT_NAMES
from ribsax.archives._threshold_archive import loop_stats
from ribsax.schedulers._bandit_rule import active_rows, spread_rows
from ribsax.schedulers._emitter_steps import emitter_evaluations
from ribsax.schedulers._evaluation import evaluate_batch, extra_evaluations
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._steps import ask_step, tell_step_rows

__all__ = ["METRIC_NAMES", "iteration_keys", "phase_key", "scan_iterations"]

#: Metrics recorded after every iteration (pyribs' ``ArchiveStats`` fields).
METRIC_NAMES = STAT_NAMES


def iteration_keys(key, start, iterations: int):
    """``fold_in(key, i)`` for ``i`` in ``[start, start + iterations)``."""
    return _iteration_keys(key, jnp.asarray(start, jnp.uint32), iterations)


@partial(jax.jit, static_argnums=(2,))
def _iteration_keys(key, start, iterations):
    steps = start + jnp.arange(iterations, dtype=jnp.uint32)
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(steps)


def phase_key(iteration_key, dqd: bool):
    """The evaluation key of one phase of an iteration: ``fold_in(iteration_key,
    1)`` for the DQD phase, ``fold_in(iteration_key, 0)`` for the ask phase
    (``iteration_key``: the iteration's key of :func:`iteration_keys`)."""
    return jax.random.fold_in(iteration_key, 1 if dqd else 0)


def scan_iterations(plan: LoopPlan, carry, keys, n_valid=None, insertions=False):
    """Runs up to ``len(keys)`` iterations on ``carry`` (pure; jit/vmap it freely).

    Args:
        plan: Static :class:`LoopPlan`.
        carry: From :func:`~ribsax.schedulers._carry.loop_carry`.
        keys: ``[chunk]`` PRNG keys, one per iteration (:func:`iteration_keys`).
        n_valid: Optional int32 scalar: only the first ``n_valid`` iterations run
            (a while loop); the others leave the carry untouched and cost nothing.
            This lets one compiled chunk serve any number of iterations.
        insertions: Also return, per iteration, every evaluated solution's
            ``status`` in the result archive (the archive when there is none; 0
            for skipped iterations), ``objective`` and ``measures``: the DQD
            phase's rows first, then the ask phase's.

    Returns:
        ``(carry, metrics)`` where ``metrics`` maps each name of
        :data:`METRIC_NAMES` to a ``[chunk]`` array (statistics of the result
        archive, or of the archive when there is none, after each iteration; rows
        past ``n_valid`` are meaningless); ``non_finite`` (rows of the iteration
        whose evaluation was not finite, kept out of the archives),
        ``first_non_finite`` (the first such row, DQD phase's rows first, or -1)
        and ``evaluations`` (rows evaluated plus the evaluations the emitters
        report having made themselves) to ``[chunk]`` int32 arrays; and, with
        ``insertions``, ``status``, ``objective`` and ``measures`` to ``[chunk,
        rows, ...]`` arrays.
    """

    def metrics_of(carry):
        archive, result = carry[0], carry[1]
        return loop_stats(result if result is not None else archive)

    def phase(carry, key, dqd):
        carry, solutions = ask_step(plan, carry, dqd)
        bandit = carry[3]
        layout = plan.dqd_layout if dqd else plan.layout
        if bandit is None:
            data, jacobian = evaluate_batch(plan, solutions, key, dqd)
            evaluated = jnp.asarray(layout.total, jnp.int32)
        else:
            # Only the active emitters' rows are evaluated (as in the ask/tell
            # loop, where the caller sees only those).
            rows = active_rows(plan, bandit.active)
            data, jacobian = evaluate_batch(plan, solutions[rows], key, dqd)
            # Spread back over the pool's rows; the solutions are the pool's own
            # (inactive rows are never added, and their emitters keep their states).
            data = {
                name: solutions
                if name == "solution"
                else jax.tree.map(lambda v: spread_rows(rows, v, solutions.shape[0]), value)
                for name, value in data.items()
            }
            evaluated = jnp.sum(jnp.where(bandit.active, layout.sizes, 0)).astype(jnp.int32)
        evaluated += extra_evaluations(jnp, data)
        carry, _, status, finite = tell_step_rows(plan, carry, data, jacobian, dqd)
        return carry, {
            "status": status,
            "objective": data["objective"],
            "measures": data["measures"],
            "finite": finite,
            "evaluated": evaluated,
        }

    def iteration(carry, key):
        told = []
        spent_before = emitter_evaluations(plan, carry[2])
        if plan.has_dqd:
            carry, dqd_told = phase(carry, phase_key(key, True), True)
            told.append(dqd_told)
        carry, ask_told = phase(carry, phase_key(key, False), False)
        told.append(ask_told)
        out = metrics_of(carry)
        finite = jnp.concatenate([t["finite"] for t in told])
        out["non_finite"] = jnp.sum(~finite).astype(jnp.int32)
        out["first_non_finite"] = jnp.where(jnp.all(finite), -1, jnp.argmin(finite)).astype(
            jnp.int32
        )
        out["evaluations"] = (
            sum(t["evaluated"] for t in told) + emitter_evaluations(plan, carry[2]) - spent_before
        )
        if insertions:
            out = {
                **out,
                **{
                    name: jnp.concatenate([t[name] for t in told])
                    for name in ("status", "objective", "measures")
                },
            }
        return carry, out

    if n_valid is None:
        return jax.lax.scan(iteration, carry, keys)

    # A while loop rather than a scan with a conditional around each iteration: a
    # conditional's outputs are new buffers on XLA:CPU, so the whole carry (the
    # archive's store, every emitter state) would be copied on every iteration.
    out_shape = jax.eval_shape(iteration, carry, keys[0])[1]
    outs = jax.tree.map(lambda s: jnp.zeros((keys.shape[0],) + s.shape, s.dtype), out_shape)

    def body(state):
        i, carry, outs = state
        carry, out = iteration(carry, keys[i])
        return i + 1, carry, jax.tree.map(lambda buf, o: buf.at[i].set(o), outs, out)

    _, carry, outs = jax.lax.while_loop(
        lambda state: state[0] < n_valid, body, (jnp.zeros((), jnp.int32), carry, outs)
    )
    return carry, outs
