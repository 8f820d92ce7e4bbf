"""Tests for ribsax.functional: a whole run vmapped over hyperparameters."""

import jax
import jax.numpy as jnp
import numpy as np

import ribsax
from ribsax import functional as F
from ribsax.archives import GridArchive
from ribsax.emitters import GaussianEmitter
from ribsax.examples.sphere import create_scheduler
from ribsax.schedulers import Scheduler
from ribsax.tasks import sphere
from tests.schedulers.fused_loop_test import assert_same_archive

DIM = 5
TASK = sphere(DIM)
SIGMAS = (0.05, 0.3, 1.0)


def make(sigma, learning_rate=None):
    kwargs = {} if learning_rate is None else {"learning_rate": learning_rate, "threshold_min": 0.0}
    archive = GridArchive(
        solution_dim=DIM, dims=(6, 6), ranges=TASK.measure_ranges, seed=1, **kwargs
    )
    return Scheduler(
        archive, [GaussianEmitter(archive, sigma=sigma, x0=np.zeros(DIM), batch_size=12, seed=2)]
    )


def test_vmap_whole_run_over_hyperparameters():
    schedulers = [make(s, lr) for s, lr in zip(SIGMAS, (0.1, 0.5, 1.0))]
    functions = F.as_evaluation_functions(TASK)
    plans = [F.LoopPlan(s, functions) for s in schedulers]
    carry = F.stack([F.loop_carry(s, p) for s, p in zip(schedulers, plans)])
    keys = jax.vmap(lambda k: F.iteration_keys(k, 0, 8))(
        jnp.stack([jax.random.key(7)] * len(SIGMAS))
    )
    run = jax.jit(jax.vmap(lambda c, k: F.scan_iterations(plans[0], c, k)))
    carry, metrics = run(carry, keys)
    assert set(metrics) == set(F.METRIC_NAMES) | {"evaluations", "non_finite", "first_non_finite"}
    np.testing.assert_array_equal(metrics["evaluations"], 12)
    np.testing.assert_array_equal(metrics["non_finite"], 0)
    assert metrics["qd_score"].shape == (len(SIGMAS), 8)
    for i, (scheduler, plan) in enumerate(zip(schedulers, plans)):
        F.install_carry(scheduler, plan, F.unstack(carry, i), 8)

    # Each vmapped member equals its own run with the same evaluation keys.
    for i, (sigma, lr) in enumerate(zip(SIGMAS, (0.1, 0.5, 1.0))):
        alone = make(sigma, lr)
        alone_plan = F.LoopPlan(alone, functions)
        alone_carry, alone_metrics = jax.jit(lambda c, k, p=alone_plan: F.scan_iterations(p, c, k))(
            F.loop_carry(alone, alone_plan), F.iteration_keys(jax.random.key(7), 0, 8)
        )
        F.install_carry(alone, alone_plan, alone_carry, 8)
        np.testing.assert_allclose(metrics["qd_score"][i], alone_metrics["qd_score"], rtol=1e-12)
        assert_same_archive(schedulers[i].archive, alone.archive)
    # The hyperparameters mattered.
    assert len({round(float(q), 6) for q in metrics["qd_score"][:, -1]}) == 3


def test_run_trials_sweeps_state_hyperparameters():
    result = ribsax.run_trials(lambda i: make(SIGMAS[i]), TASK, 6, [0, 1, 2])
    for i, sigma in enumerate(SIGMAS):
        alone = make(sigma)
        alone.run(TASK, 6, seed=i)
        assert_same_archive(result.schedulers[i].archive, alone.archive)


def test_archive_kernels_are_exported():
    archive = GridArchive(solution_dim=2, dims=(4, 4), ranges=[(-1, 1)] * 2)
    spec, state = archive._loop_spec(), archive._loop_state()
    data = {
        "solution": jnp.zeros((3, 2)),
        "objective": jnp.array([1.0, 2.0, 0.5]),
        "measures": jnp.array([[0.1, 0.1], [0.1, 0.1], [0.9, -0.9]]),
    }
    state, info = jax.jit(F.loop_add, static_argnums=0)(spec, state, data)
    np.testing.assert_array_equal(info["status"], [2, 2, 2])
    stats = F.loop_stats(state)
    assert int(stats["num_elites"]) == 2
    np.testing.assert_allclose(stats["qd_score"], 2.5)
    np.testing.assert_allclose(stats["obj_max"], 2.0)
    view = F.loop_view(state)
    assert view.solution.shape == (16, 2)


# ---------------------------------------------------------------------------
# init / ask / tell
# ---------------------------------------------------------------------------
def _cma_mae(learning_rate):
    return create_scheduler(
        "cma_mae", dim=6, grid_dims=(5, 5), learning_rate=learning_rate, seed=11
    )


def _jax_sphere(solutions):
    """ribsax.examples.sphere's sphere in JAX (objective and measures)."""
    objective, measures = TASK_6.evaluate(solutions, jax.random.key(0))[:2]
    return objective, measures


TASK_6 = sphere(6)


def _host_leaves(tree):
    """NumPy copies of a pytree's leaves (PRNG keys as their key data)."""
    return [
        np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
        for x in jax.tree.leaves(tree)
    ]


def _functional_run(config, state, iterations):
    for _ in range(iterations):
        state, solutions = F.ask(config, state)
        state, _ = F.tell(config, state, *_jax_sphere(solutions))
    return state


def test_vmap_over_learning_rates_equals_separate_runs():
    rates = (0.01, 0.5)
    configs, states = zip(*(F.init(_cma_mae(lr)) for lr in rates))
    assert configs[0] == configs[1]
    config = configs[0]
    np.testing.assert_allclose([float(s.carry[0].learning_rate) for s in states], rates)

    batched = jax.jit(jax.vmap(lambda s: _functional_run(config, s, 6)))(F.stack(list(states)))
    separate = [jax.jit(lambda s: _functional_run(config, s, 6))(s) for s in states]

    for i, alone in enumerate(separate):
        member = F.unstack(batched, i)
        for got, want in zip(_host_leaves(member.carry), _host_leaves(alone.carry)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # The learning rate mattered.
    thresholds = [np.asarray(s.carry[0].store.fields["threshold"]) for s in separate]
    assert not np.allclose(thresholds[0], thresholds[1])


def test_functional_steps_equal_the_ask_tell_loop():
    """init/ask/tell/install leave the objects as the same ask/tell calls do."""
    functional_scheduler = _cma_mae(0.1)
    config, state = F.init(functional_scheduler)
    state = _functional_run(config, state, 5)
    F.install(functional_scheduler, config, state, 5)

    objects = _cma_mae(0.1)
    for _ in range(5):
        solutions = objects.ask()
        objective, measures = _jax_sphere(jnp.asarray(solutions))
        objects.tell(np.asarray(objective), np.asarray(measures))

    assert_same_archive(functional_scheduler.archive, objects.archive)
    assert_same_archive(functional_scheduler.result_archive, objects.result_archive)
    for a, b in zip(functional_scheduler.emitters, objects.emitters):
        assert a.itrs == b.itrs == 5
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(functional_scheduler.ask(), objects.ask(), rtol=1e-9, atol=1e-12)


def test_functional_tell_returns_add_info_per_solution():
    config, state = F.init(_cma_mae(0.1))
    state, solutions = F.ask(config, state)
    state, add_info = F.tell(config, state, *_jax_sphere(solutions))
    assert add_info["status"].shape == (solutions.shape[0],)
    assert int(jnp.sum(add_info["status"] != 0)) > 0
