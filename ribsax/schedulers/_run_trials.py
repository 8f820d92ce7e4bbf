"""run_trials: N seeds of one configuration in one compiled, vmapped call."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ribsax._utils import seed_to_key
from ribsax.emitters._fusion import stack_states, unstack_state
from ribsax.schedulers._carry import carry_on_mesh, install_carry, loop_carry
from ribsax.schedulers._evaluation import as_evaluation_functions
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._loop_runner import _avals, raise_on_non_finite, run_chunks
from ribsax.schedulers._scan import METRIC_NAMES
from ribsax.schedulers._trials_result import TrialsResult
from ribsax.schedulers._validation import check_non_finite, check_positive_int

__all__ = ["run_trials"]


def run_trials(
    make_scheduler,
    evaluate,
    iterations,
    seeds,
    *,
    jacobian=None,
    metrics_every=1,
    vectorize=True,
    non_finite="skip",
) -> TrialsResult:
    """Runs one QD configuration for several seeds as a single ``jax.vmap``-ed
    fused loop.

    ``make_scheduler(seed)`` builds one trial (archive, emitters, scheduler), seeding
    every object from ``seed``; the trials must share their static configuration
    (same classes, shapes, batch sizes and settings), so the whole set compiles once
    and runs as one vmapped ``lax.scan``. Trial ``i`` evaluates with the keys that
    ``scheduler.run(evaluate, iterations, seed=seeds[i])`` would use, so each trial
    equals its separate run (up to floating-point reassociation by the compiler).

    Args:
        make_scheduler: ``seed -> Scheduler``.
        evaluate: A :class:`ribsax.tasks.Task` or a traceable ``(solutions, key) ->
            (objective, measures[, extras])`` (see
            :meth:`ribsax.schedulers.Scheduler.run`).
        iterations: Iterations per trial.
        seeds: Sequence of int seeds (one trial each).
        jacobian: Jacobian function for DQD emitters (see ``Scheduler.run``).
        metrics_every: Record metrics every this many iterations (and the last).
        vectorize: True (default): one ``jax.vmap``-ed call for all trials, the
            fast choice on accelerators; the trials must then share their static
            configuration. False: the trials run one after the other, through the
            same compiled executable when their configurations are equal (usually
            faster on a CPU, where vmapping brings no parallelism and batched
            scatters into the archives cost more); trials whose static
            configuration depends on the seed (e.g. CVT archives, whose
            nearest-centroid search is specialised to their centroids) are
            accepted and compile once each.
        non_finite: ``"skip"`` or ``"raise"``, as in
            :meth:`ribsax.schedulers.Scheduler.run`; the error names the trial.

    Returns:
        :class:`~ribsax.schedulers.TrialsResult`; ``.summary()`` gives mean ± std.

    Raises:
        ValueError: No seeds, bad ``iterations``/``metrics_every``/``non_finite``,
            vectorized trials whose configurations differ, a scheduler that cannot
            run fused, or, with ``non_finite="raise"``, a non-finite evaluation.
    """
    iterations = check_positive_int(iterations, "iterations")
    metrics_every = check_positive_int(metrics_every, "metrics_every")
    check_non_finite(non_finite)
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must contain at least one seed")
    functions = as_evaluation_functions(evaluate, jacobian)

    schedulers = [make_scheduler(seed) for seed in seeds]
    plans = [LoopPlan(s, functions) for s in schedulers]
    carries = [loop_carry(s, p) for s, p in zip(schedulers, plans)]
    reference = (plans[0].signature, _avals(carries[0]))
    for i, (plan, carry) in enumerate(zip(plans, carries)):
        if vectorize and (plan.signature, _avals(carry)) != reference:
            raise ValueError(
                f"Trial {i} (seed {seeds[i]}) has another configuration than trial 0; "
                "make_scheduler must build the same archives and emitters for every "
                "seed"
            )
    base_keys = jnp.stack([seed_to_key(seed) for seed in seeds])
    if vectorize:
        # Trials whose emitters shard state over a device mesh: stacked on it.
        carries = [carry_on_mesh(p, c) for p, c in zip(plans, carries)]
        carry, metrics, compile_time, run_time = run_chunks(
            plans[0], stack_states(carries), base_keys, 0, iterations, vmapped=True
        )
        finals = [unstack_state(carry, i) for i in range(len(seeds))]
    else:
        finals, per_trial, compile_time, run_time = [], [], 0.0, 0.0
        for plan, carry, key in zip(plans, carries, base_keys):
            carry, trial_metrics, seconds, run_seconds = run_chunks(plan, carry, key, 0, iterations)
            finals.append(carry)
            per_trial.append(trial_metrics)
            compile_time += seconds
            run_time += run_seconds
        metrics = {name: np.stack([m[name] for m in per_trial]) for name in per_trial[0]}

    for i, (scheduler, plan) in enumerate(zip(schedulers, plans)):
        install_carry(scheduler, plan, finals[i])
        scheduler._run_key = base_keys[i]
        scheduler._run_count = iterations
        scheduler._run_evaluations = int(np.sum(metrics["evaluations"][i]))
    if non_finite == "raise":
        for i, seed in enumerate(seeds):
            try:
                raise_on_non_finite({name: value[i] for name, value in metrics.items()}, 0)
            except ValueError as error:
                raise ValueError(f"Trial {i} (seed {seed}): {error}") from None

    iteration = np.arange(1, iterations + 1)
    keep = iteration % metrics_every == 0
    keep[-1] = True
    frames = []
    for i, seed in enumerate(seeds):
        frame = pd.DataFrame({"trial": i, "seed": seed, "iteration": iteration[keep]})
        for name in METRIC_NAMES:
            frame[name] = metrics[name][i][keep]
        frame["evaluations"] = np.cumsum(np.asarray(metrics["evaluations"][i], np.int64))[keep]
        frame["non_finite"] = np.asarray(metrics["non_finite"][i], np.int64)[keep]
        frames.append(frame)
    return TrialsResult(
        metrics=pd.concat(frames, ignore_index=True),
        schedulers=schedulers,
        seeds=seeds,
        iterations=iterations,
        compile_time=compile_time,
        run_time=run_time,
    )
