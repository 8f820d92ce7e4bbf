"""Tests for the variation kernels (GaussianKernel, IsoLineKernel, ...) and the
parts of the emitter protocol they use: ``EmitterKernel.draws``, kernels without
``tell``, ``JaxEmitter``'s ``init_args`` and ``initial_solutions``."""

import jax
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import (
    GaussianEmitter,
    GaussianKernel,
    GeneticAlgorithmKernel,
    IsoLineEmitter,
    IsoLineKernel,
    JaxEmitter,
)
from ribsax.emitters._emitter_base import archive_device_view
from ribsax.emitters.operators import gaussian_variation
from ribsax.schedulers import Scheduler
from ribsax.tasks import sphere
from tests.emitters.emitter_helpers import fill

DIM = 4


def grid():
    return GridArchive(solution_dim=DIM, dims=(8, 8), ranges=[(-2, 2)] * 2, seed=0)


def _kernel_args(archive, batch_size=6):
    return {
        "batch_size": batch_size,
        "solution_shape": (DIM,),
        "dtype": np.dtype(archive.dtypes["solution"]),
    }


def test_kernels_are_hashable_configurations():
    archive = grid()
    a, b = GaussianKernel(**_kernel_args(archive)), GaussianKernel(**_kernel_args(archive))
    assert a == b and hash(a) == hash(b)
    assert a != IsoLineKernel(**_kernel_args(archive))
    assert a != GeneticAlgorithmKernel(
        operator=gaussian_variation, parent_type=1, **_kernel_args(archive)
    )
    assert GaussianKernel(**_kernel_args(archive, 7)) != a


@pytest.mark.parametrize(
    "emitter_cls,kernel_cls,params",
    [
        (GaussianEmitter, GaussianKernel, {"sigma": 0.3}),
        (IsoLineEmitter, IsoLineKernel, {"iso_sigma": 0.1, "line_sigma": 0.3}),
    ],
)
def test_emitter_is_its_kernel_in_a_jax_emitter(emitter_cls, kernel_cls, params):
    """The pyribs-style emitter and a JaxEmitter of its kernel, given the same
    seed and values, ask the same solutions (empty archive, then elites)."""
    archive = grid()
    x0 = np.full(DIM, 0.5)
    emitter = emitter_cls(archive, x0=x0, batch_size=6, seed=3, bounds=[(-1, 1)] * DIM, **params)
    dtype = archive.dtypes["solution"]
    kernel = kernel_cls(**_kernel_args(archive))
    twin = JaxEmitter(
        archive,
        kernel,
        seed=3,
        init_args={
            "x0": x0,
            "params": tuple(np.asarray(p, dtype) for p in params.values()),
            "lower_bounds": np.full(DIM, -1.0),
            "upper_bounds": np.full(DIM, 1.0),
        },
    )
    assert emitter.kernel == kernel
    np.testing.assert_array_equal(emitter.ask(), twin.ask())
    fill(archive, 20)
    first = emitter.ask()
    np.testing.assert_array_equal(first, twin.ask())
    assert first.min() >= -1 and first.max() <= 1


@pytest.mark.parametrize("kernel_cls", [GaussianKernel, IsoLineKernel])
def test_draws_made_ahead_give_the_same_ask(kernel_cls):
    archive = grid()
    fill(archive, 20)
    kernel = kernel_cls(**_kernel_args(archive))
    assert kernel.has_draws and not kernel.has_tell
    emitter = JaxEmitter(archive, kernel, seed=1, init_args={"params": (0.2,) * kernel.parent_type})
    view = archive_device_view(archive)
    key = jax.random.key(5)
    state = emitter.kernel_state
    _, drawn = kernel.ask(state, view, key)
    _, ahead = kernel.ask(state, view, key, draws=kernel.draws(key))
    np.testing.assert_array_equal(drawn, ahead)
    _, other = kernel.ask(state, view, jax.random.key(6))
    assert not np.array_equal(drawn, other)


def test_kernel_without_tell_is_not_told():
    archive = grid()
    emitter = JaxEmitter(
        archive, GaussianKernel(**_kernel_args(archive)), seed=2, init_args={"params": (0.2,)}
    )
    solutions = emitter.ask()
    before = np.asarray(jax.random.key_data(emitter.state.key))
    objective, measures = np.ones(len(solutions)), solutions[:, :2]
    emitter.tell(solutions, objective, measures, archive.add(solutions, objective, measures))
    np.testing.assert_array_equal(jax.random.key_data(emitter.state.key), before)


def test_initial_solutions_of_a_jax_emitter():
    """Returned while the archive is empty (the kernel does not run and the
    schedulers take the Python path), then the kernel asks; a scheduler runs it
    in the ask/tell loop and then in the fused loop."""
    archive = grid()
    initial = np.linspace(-1, 1, 3 * DIM).reshape(3, DIM)
    emitter = JaxEmitter(
        archive,
        GaussianKernel(**_kernel_args(archive)),
        seed=4,
        init_args={"params": (0.1,)},
        initial_solutions=initial,
    )
    np.testing.assert_array_equal(emitter.initial_solutions, initial)
    assert not emitter.kernel_ready()
    key_before = np.asarray(jax.random.key_data(emitter.state.key))
    np.testing.assert_array_equal(emitter.ask(), initial)
    np.testing.assert_array_equal(jax.random.key_data(emitter.state.key), key_before)

    scheduler = Scheduler(archive, [emitter])
    task = sphere(DIM)
    solutions = scheduler.ask()
    np.testing.assert_array_equal(solutions, initial)
    objective, measures, _ = task.evaluate(solutions, jax.random.key(0))
    scheduler.tell(np.asarray(objective), np.asarray(measures))
    assert emitter.kernel_ready()
    solutions = scheduler.ask()
    assert solutions.shape == (6, DIM)
    objective, measures, _ = task.evaluate(solutions, jax.random.key(1))
    scheduler.tell(np.asarray(objective), np.asarray(measures))
    scheduler.run(task, 3, seed=0)
    assert archive.stats.num_elites > 3
