"""Compile once: for a fixed configuration and batch shape, nothing compiles again
after the first iteration of the ask/tell loop or the first fused run.

Compilations are counted with :func:`tests.compile_counter.count_compilations`
(JAX's monitoring event for each lowering of a jitted function, which fires
whether or not the persistent compilation cache then supplies the executable).
"""

import numpy as np
import pytest

from ribsax.examples.sphere import CONFIG, create_scheduler, sphere, sphere_jacobian
from ribsax.tasks import sphere as sphere_task
from tests.compile_counter import count_compilations


def test_counter_sees_compilations():
    import jax
    import jax.numpy as jnp

    x = jnp.arange(7.0)
    with count_compilations() as counter:
        jax.jit(lambda x: x * 3 + 1)(x)
    assert counter.count == 1


DIM = 10
GRID = (10, 10)


def _iteration(scheduler, dqd):
    if dqd:
        solutions = scheduler.ask_dqd()
        objective, measures, jacobian = sphere_jacobian(solutions)
        scheduler.tell_dqd(objective, measures, jacobian)
    solutions = scheduler.ask()
    objective, measures = sphere(solutions)[:2]
    scheduler.tell(objective, measures)


#: The sphere configurations whose archive has a fixed number of cells (pyribs'
#: 13, the DQD ones, CMA-ME basic and the 1000-D Rastrigin). A ProximityArchive
#: grows its store, and each new size is a new shape:
#: test_growing_novelty_archive_compiles_little bounds those compilations.
FIXED_CAPACITY = [
    name for name, spec in CONFIG.items() if spec["archive"][0] in ("GridArchive", "CVTArchive")
]


def test_fixed_capacity_configurations_include_the_issue_ones():
    assert {
        "map_elites",
        "line_map_elites",
        "cvt_map_elites",
        "line_cvt_map_elites",
        "me_map_elites",
        "cma_me_imp",
        "cma_me_imp_mu",
        "cma_me_rd",
        "cma_me_rd_mu",
        "cma_me_opt",
        "cma_me_mixed",
        "cma_mae",
        "og_map_elites",
        "omg_mega",
        "cma_mega",
        "cma_mega_adam",
        "cma_maega",
    } <= set(FIXED_CAPACITY)


@pytest.mark.parametrize("name", FIXED_CAPACITY)
def test_ask_tell_compiles_nothing_after_the_first_iteration(name):
    scheduler = create_scheduler(name, dim=DIM, grid_dims=GRID, seed=3)
    dqd = bool(CONFIG[name].get("dqd"))
    _iteration(scheduler, dqd)
    with count_compilations() as counter:
        for _ in range(39):
            _iteration(scheduler, dqd)
    assert counter.count == 0, f"compiled after the first iteration: {counter.names}"
    assert scheduler.archive.stats.num_elites > 0


@pytest.mark.parametrize(
    "name", ["map_elites", "line_map_elites", "og_map_elites", "omg_mega", "cma_me_imp", "cma_mega"]
)
def test_building_a_scheduler_compiles_no_eager_operation(name):
    """Archives and emitters build their first states from host data without
    compiling anything (``jnp.asarray``/``jnp.zeros`` of host data would compile a
    program per shape): only kernels compile, here the ES and gradient-optimizer
    initialisations and the stacking of fused members' states."""
    import jax

    jax.clear_caches()
    with count_compilations() as counter:
        create_scheduler(name, dim=DIM, grid_dims=GRID, seed=3)
    kernels = ("jit(_init_jit)", "jit(_stack_jit)")
    eager = [n for n in counter.names if n not in kernels]
    assert eager == [], eager
    assert counter.count <= 3, counter.names


@pytest.mark.parametrize("name", ["map_elites", "cma_mae"])
def test_fused_runs_compile_nothing_after_the_first(name):
    scheduler = create_scheduler(name, dim=DIM, grid_dims=GRID, seed=3)
    task = sphere_task(DIM)
    first = scheduler.run(task, 5)
    assert first.compile_time > 0
    with count_compilations() as counter:
        results = [scheduler.run(task, 5) for _ in range(7)]
    assert counter.count == 0, f"compiled after the first run: {counter.names}"
    assert all(r.compile_time == 0 for r in results)
    assert np.isfinite(results[-1].metrics["qd_score"].iloc[-1])


def test_growing_novelty_archive_compiles_little():
    """A novelty search whose archive keeps growing: ProximityArchive's store grows
    its rows fourfold, so its write kernel compiles for fewer sizes than the
    capacity takes (which doubles as in pyribs), and the ES's ask step never
    compiles again (it does not read the archive)."""
    from ribsax.archives import ProximityArchive
    from ribsax.emitters import EvolutionStrategyEmitter
    from ribsax.schedulers import Scheduler

    archive = ProximityArchive(
        solution_dim=4, measure_dim=2, k_neighbors=3, novelty_threshold=0.0, initial_capacity=8
    )
    emitters = [
        EvolutionStrategyEmitter(
            archive, x0=np.zeros(4), sigma0=1.0, ranker="nov", batch_size=4, seed=s
        )
        for s in range(2)
    ]
    scheduler = Scheduler(archive, emitters)
    capacities, compiled = [], []  # compiled: after the first iteration
    for itr in range(24):  # 8 new entries per iteration.
        with count_compilations() as counter:
            solutions = scheduler.ask()
            scheduler.tell(np.zeros(len(solutions)), solutions[:, :2])
        capacities.append(archive.capacity)
        if itr > 0:
            compiled.extend(counter.names)
    assert len(archive) == 192 and capacities[-1] == 256
    doublings = sum(b > a for a, b in zip(capacities, capacities[1:]))
    writes = sum("_write_store" in name for name in compiled)
    assert doublings == 5 and writes == 3, (capacities, compiled)  # 32, 128, 512 rows
    assert not any("_ask_without_dqd" in name for name in compiled)
