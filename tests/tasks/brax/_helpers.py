"""Shared checks for the brax task tests.

Compiling a brax rollout costs tens of seconds on CPU whatever the episode length,
so each task is compiled once (module-level cache, batch of 4 policies, short
episodes) and every check reuses that compilation.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.tasks import brax as brax_tasks

BATCH = 4
EPISODE_LENGTH = 20


@functools.cache
def task_and_jit(name, **kwargs):
    """The task and its cached jitted evaluate (shared by NumpyEvaluators)."""
    kwargs.setdefault("episode_length", EPISODE_LENGTH)
    task = brax_tasks.create(name, **kwargs)
    return task, task.jit_evaluate


def random_policies(task, seed=0, batch=BATCH, dtype=jnp.float64):
    """Initial policies with extra noise so that behaviours differ clearly."""
    x = task.initial_solutions(batch, jax.random.key(seed), dtype=dtype)
    noise = jax.random.normal(jax.random.key(seed + 1), x.shape, dtype)
    return x + 0.5 * noise


def check_task(name, measure_dim, **kwargs):
    """Shapes, dtypes, ranges, determinism and varying measures of one task."""
    task, evaluate = task_and_jit(name, **kwargs)
    assert task.measure_dim == measure_dim
    assert len(task.measure_ranges) == measure_dim
    assert task.solution_dim == task.policy.num_params
    x = random_policies(task)
    key = jax.random.key(7)
    objective, measures, extras = evaluate(x, key)
    assert objective.shape == (BATCH,) and objective.dtype == jnp.float64
    assert measures.shape == (BATCH, measure_dim) and measures.dtype == jnp.float64
    assert extras["num_steps"].shape == (BATCH,)
    assert np.all(np.isfinite(objective)) and np.all(np.isfinite(measures))
    steps = np.asarray(extras["num_steps"])
    assert np.all((steps >= 1) & (steps <= task.episode_length))
    low = np.array([lo for lo, _ in task.measure_ranges])
    high = np.array([hi for _, hi in task.measure_ranges])
    assert np.all((np.asarray(measures) >= low) & (np.asarray(measures) <= high))
    # Measures vary across random policies in every dimension (no constant or
    # empty descriptor, unlike QDax's ant_uni on brax >= 0.13).
    assert np.all(np.ptp(np.asarray(measures), axis=0) > 0), np.asarray(measures)
    assert np.ptp(np.asarray(objective)) > 0
    # Deterministic resets: the same solutions give the same results for any key.
    # Bit for bit on the CPU. On a GPU, the scatter-adds of brax's contact
    # physics sum in an order that changes from one call to the next, so two calls
    # with the same key already differ in the last digits (relative ~1e-7 over 20
    # steps on an H200).
    if jax.default_backend() == "cpu":
        same, close = (
            np.testing.assert_array_equal,
            functools.partial(np.testing.assert_allclose, rtol=1e-9, atol=1e-9),
        )
    else:
        same = close = functools.partial(np.testing.assert_allclose, rtol=1e-6, atol=1e-5)
    objective2, measures2, _ = evaluate(x, jax.random.key(8))
    same(objective, objective2)
    same(measures, measures2)
    # Rows are independent: a permuted batch gives permuted results.
    perm = np.array([2, 0, 3, 1])
    objective3, measures3, _ = evaluate(x[perm], key)
    close(objective3, objective[perm])
    close(measures3, measures[perm])
    assert task.qd_score_offset == (-brax_tasks.REWARD_OFFSETS[name] * task.episode_length)
    return task, objective, measures, extras
