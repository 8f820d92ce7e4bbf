"""The functional core: ribsax's pure kernels and the fused loop as plain functions.

Every object in ribsax is a shell around a state pytree and pure, jittable kernels
(``DESIGN.md`` §1). This module gathers what a JAX user needs to drive a whole QD
run functionally, e.g. to ``jax.vmap`` it over seeds *or hyperparameters* held in
the states (emitter sigmas, archive learning rates, ...), or to embed it in a larger
jitted program:

.. code-block:: python

    import jax, jax.numpy as jnp
    from ribsax import functional as F

    schedulers = [make_scheduler(sigma) for sigma in (0.1, 0.3, 0.5)]
    functions = F.as_evaluation_functions(task)
    plans = [F.LoopPlan(s, functions) for s in schedulers]
    carry = F.stack([F.loop_carry(s, p) for s, p in zip(schedulers, plans)])
    keys = jax.vmap(lambda k: F.iteration_keys(k, 0, 100))(
        jnp.stack([jax.random.key(i) for i in range(3)]))
    run = jax.jit(jax.vmap(lambda c, k: F.scan_iterations(plans[0], c, k)))
    carry, metrics = run(carry, keys)   # metrics[name]: [3, 100]
    for i, (s, p) in enumerate(zip(schedulers, plans)):
        F.install_carry(s, p, F.unstack(carry, i), 100)

(:func:`ribsax.run_trials` does exactly this for seeds.) The plan of one scheduler
serves all of them when their static configuration (classes, shapes, batch sizes,
ranker kinds, ...) is equal; values such as ``sigma`` live in the states.

Contents:

* the loop: :class:`LoopPlan`, :func:`loop_carry`, :func:`scan_iterations`,
  :func:`install_carry`, :func:`iteration_keys`, :func:`as_evaluation_functions`,
  :data:`METRIC_NAMES`;
* archive kernels: :func:`loop_add` (pyribs' batch insertion with CMA-MAE
  thresholds and the monotone best elite), :func:`loop_view`, :func:`loop_stats`,
  :func:`threshold_add`, :func:`grid_index`, :func:`sample_occupied`;
* pytree helpers: :func:`stack`, :func:`unstack`.

Emitter kernels are reached through the classes (``type(emitter)._ask_kernel`` and
friends, see :class:`ribsax.emitters.EmitterBase`), optimizer kernels through
``emitter.opt.kernels``.
"""
from ribsax.archives._kernels import grid_index, sample_occupied, threshold_add
from ribsax.archives._threshold_archive import loop_add, loop_stats, loop_view
from ribsax.emitters._fusion import stack_states as stack
from ribsax.emitters._fusion import unstack_state as unstack
from ribsax.schedulers._fused_loop import (
    METRIC_NAMES,
    LoopPlan,
    as_evaluation_functions,
    install_carry,
    iteration_keys,
    loop_carry,
    scan_iterations,
)

__all__ = [
    "LoopPlan",
    "loop_carry",
    "scan_iterations",
    "install_carry",
    "iteration_keys",
    "as_evaluation_functions",
    "METRIC_NAMES",
    "loop_add",
    "loop_view",
    "loop_stats",
    "threshold_add",
    "grid_index",
    "sample_occupied",
    "stack",
    "unstack",
]
