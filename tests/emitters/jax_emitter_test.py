"""Tests for the emitter protocol: an EmitterKernel written here, in user code,
runs through JaxEmitter in the ask/tell loop, the fused loop, ribsax.functional,
run_trials and under jax.vmap, with equal results."""

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import functional as F
from ribsax import run_trials
from ribsax.archives import GridArchive
from ribsax.emitters import ArchiveView, EmitterBase, EmitterKernel, GaussianEmitter, JaxEmitter
from ribsax.schedulers import BanditScheduler, Scheduler
from ribsax.tasks import sphere
from tests.emitters.emitter_helpers import assert_same_archives, assert_same_states

DIM = 4
TASK = sphere(DIM)
BATCH = 6


@dataclasses.dataclass(frozen=True)
class NoisyParents(EmitterKernel):
    """Gaussian mutation of uniformly sampled elites whose step size adapts: it
    grows when the last batch added solutions, shrinks otherwise. Its ask attaches
    each row's noise scale, which its tell reads back; it also counts what it was
    told, and pretends to spend ``probes`` evaluations of its own per tell."""

    batch_size: int = BATCH
    sigma0: float = 0.3
    probes: int = 0

    def init(self, key, archive):
        assert isinstance(archive, ArchiveView)
        dtype = archive.solution.dtype
        return {
            "sigma": jnp.asarray(self.sigma0, dtype),
            "tells": jnp.zeros((), jnp.int32),
            "added": jnp.zeros((), jnp.int32),
            "invalid": jnp.zeros((), jnp.int32),
            "info_sum": jnp.zeros((), dtype),
            "bonus_sum": jnp.zeros((), dtype),
            "spent": jnp.zeros((), jnp.int32),
        }

    def ask(self, state, archive, key):
        k_parents, k_noise = jax.random.split(key)
        parents = self.sample_parents(k_parents, archive, self.batch_size)
        scale = state["sigma"] * (1.0 + jnp.arange(self.batch_size, dtype=parents.dtype) / 10)
        noise = jax.random.normal(k_noise, parents.shape, parents.dtype)
        return state, parents + scale[:, None] * noise, {"scale": scale}

    def tell(self, state, archive, key, feedback):
        added = jnp.sum((feedback.status > 0) & feedback.valid)
        factor = jnp.where(added > 0, 1.1, 0.9).astype(state["sigma"].dtype)
        bonus = feedback.extras.get("bonus")
        bonus_sum = jnp.zeros((), state["sigma"].dtype) if bonus is None else jnp.sum(bonus)
        return {
            "sigma": state["sigma"] * factor,
            "tells": state["tells"] + 1,
            "added": state["added"] + added.astype(jnp.int32),
            "invalid": state["invalid"] + jnp.sum(~feedback.valid).astype(jnp.int32),
            "info_sum": state["info_sum"] + jnp.sum(feedback.ask_info["scale"]),
            "bonus_sum": state["bonus_sum"] + bonus_sum,
            "spent": state["spent"] + self.probes,
        }

    def evaluations(self, state):
        return state["spent"]


@dataclasses.dataclass(frozen=True)
class GradientSteps(EmitterKernel):
    """A DQD kernel: one solution whose objective gradient it follows (ask_dqd /
    tell_dqd), then a batch of small perturbations of it (ask)."""

    lr: float = 0.05

    def init(self, key, archive):
        return {
            "x": jnp.full((DIM,), 1.0, archive.solution.dtype),
            "grad": jnp.zeros((DIM,), archive.solution.dtype),
        }

    def ask_dqd(self, state, archive, key):
        return state, state["x"][None]

    def tell_dqd(self, state, archive, key, feedback):
        return {**state, "grad": feedback.jacobian[0, 0]}

    def ask(self, state, archive, key):
        x = state["x"] + self.lr * state["grad"]
        noise = 0.01 * jax.random.normal(key, (3, DIM), x.dtype)
        return {**state, "x": x}, x[None] + noise


@dataclasses.dataclass(frozen=True)
class BatchReader(NoisyParents):
    """Counts the rows of the whole batch its tell receives, the valid ones, and
    sums the task's ``bonus`` extra over them."""

    def init(self, key, archive):
        return {
            **super().init(key, archive),
            "batch_rows": jnp.zeros((), jnp.int32),
            "batch_valid": jnp.zeros((), jnp.int32),
        }

    def tell(self, state, archive, key, feedback):
        batch = feedback.batch
        bonus = batch["extras"].get("bonus")
        bonus_sum = (
            jnp.zeros((), state["sigma"].dtype)
            if bonus is None
            else jnp.sum(jnp.where(batch["valid"], bonus, 0))
        )
        return {
            **state,
            "tells": state["tells"] + 1,
            "batch_rows": state["batch_rows"] + batch["status"].shape[0],
            "batch_valid": state["batch_valid"] + jnp.sum(batch["valid"]).astype(jnp.int32),
            "bonus_sum": state["bonus_sum"] + bonus_sum,
        }


@dataclasses.dataclass(frozen=True)
class OwnRowsReader(NoisyParents):
    """Finds its own rows in the whole batch (``batch["own"]``) and counts the
    tells where they are exactly its feedback's rows, in order."""

    def init(self, key, archive):
        return {
            **super().init(key, archive),
            "own_rows": jnp.zeros((), jnp.int32),
            "own_match": jnp.zeros((), jnp.int32),
        }

    def tell(self, state, archive, key, feedback):
        batch = feedback.batch
        own = batch["own"]
        # The i-th own row of the batch must be the i-th row of the feedback.
        rank = jnp.clip(jnp.cumsum(own) - 1, 0, self.batch_size - 1)
        same = jnp.all(batch["solution"] == feedback.solution[rank], axis=1)
        match = (jnp.sum(own) == self.batch_size) & jnp.all(jnp.where(own, same, True))
        return {
            **state,
            "tells": state["tells"] + 1,
            "own_rows": state["own_rows"] + jnp.sum(own).astype(jnp.int32),
            "own_match": state["own_match"] + match.astype(jnp.int32),
        }


def grid():
    return GridArchive(solution_dim=DIM, dims=(6, 6), ranges=TASK.measure_ranges, seed=3)


def scheduler_of(kernels, seed=0):
    archive = grid()
    emitters = [JaxEmitter(archive, k, seed=seed + i) for i, k in enumerate(kernels)]
    return Scheduler(archive, emitters)


KERNELS = [NoisyParents(), NoisyParents(), NoisyParents(sigma0=0.1, batch_size=4)]


def test_ask_tell_fused_and_functional_loops_agree():
    iterations = 8
    fused = scheduler_of(KERNELS)
    result = fused.run(TASK, iterations, seed=5)
    python = scheduler_of(KERNELS)
    python.run(TASK, iterations, seed=5, fused=False)
    assert_same_archives(fused.archive, python.archive)
    for ef, ep in zip(fused.emitters, python.emitters):
        assert_same_states(ef.state, ep.state)
        assert int(ef.kernel_state["tells"]) == iterations

    # The functional core, driven by hand with the same evaluation keys.
    scheduler = scheduler_of(KERNELS)
    config, state = F.init(scheduler)
    base = jax.random.key_data(fused._run_key)
    keys = F.iteration_keys(jax.random.wrap_key_data(base), 0, iterations)
    for key in keys:
        state, solutions = F.ask(config, state)
        objective, measures, _ = TASK.evaluate(solutions, jax.random.fold_in(key, 0))
        state, _ = F.tell(config, state, objective, measures)
    F.install(scheduler, config, state, iterations)
    assert_same_archives(fused.archive, scheduler.archive)
    for ef, es in zip(fused.emitters, scheduler.emitters):
        assert_same_states(ef.state, es.state)

    # The scale each ask attached came back to the tell of the same rows.
    first = fused.emitters[0].kernel_state
    assert float(first["info_sum"]) > BATCH * 0.1 * iterations * 0.5
    assert list(result.metrics["evaluations"]) == [
        (2 * BATCH + 4) * (i + 1) for i in range(iterations)
    ]


def test_vmap_over_seeds_equals_separate_runs():
    def make(seed):
        return scheduler_of([NoisyParents(), NoisyParents()], seed=seed)

    trials = run_trials(make, TASK, iterations=5, seeds=[0, 1], vectorize=True)
    for seed, vmapped in zip([0, 1], trials.schedulers):
        alone = make(seed)
        alone.run(TASK, 5, seed=seed)
        assert_same_archives(vmapped.archive, alone.archive)
        for ev, ea in zip(vmapped.emitters, alone.emitters):
            assert_same_states(ev.state, ea.state)
    # Different seeds gave different runs.
    assert not np.array_equal(
        trials.schedulers[0].archive.data("solution"), trials.schedulers[1].archive.data("solution")
    )


def test_object_ask_and_tell_with_fields():
    archive = grid()
    emitter = JaxEmitter(archive, NoisyParents(), seed=1)
    assert emitter.batch_size == BATCH
    solutions = emitter.ask()
    assert solutions.shape == (BATCH, DIM) and solutions.dtype == np.float64
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    add_info = archive.add(solutions, np.asarray(objective), np.asarray(measures))
    emitter.tell(solutions, objective, measures, add_info, bonus=np.full(BATCH, 0.5))
    state = emitter.kernel_state
    assert int(state["tells"]) == 1
    assert int(state["added"]) == int(np.sum(add_info["status"] > 0))
    np.testing.assert_allclose(float(state["bonus_sum"]), 0.5 * BATCH)
    with pytest.raises(ValueError, match="measures"):
        emitter.tell(solutions, objective, np.full((BATCH, 2), np.inf), add_info)


def test_own_ask_and_tell_update_the_state_in_place():
    """The state is donated to the emitter's ask and tell: its buffers are reused
    for the new state (a replay buffer is not copied per call)."""
    archive = grid()
    emitter = JaxEmitter(archive, NoisyParents(), seed=0)
    before = emitter.kernel_state["info_sum"]
    solutions = emitter.ask()
    assert before.is_deleted()
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    add_info = archive.add(solutions, np.asarray(objective), np.asarray(measures))
    before = emitter.kernel_state["tells"]
    emitter.tell(solutions, objective, measures, add_info)
    assert before.is_deleted() and int(emitter.kernel_state["tells"]) == 1


def test_task_extras_reach_tell_in_the_fused_loop():
    def evaluate(solutions, key):
        objective, measures, _ = TASK.evaluate(solutions, key)
        return objective, measures, {"bonus": jnp.ones(solutions.shape[0])}

    scheduler = scheduler_of([NoisyParents()])
    scheduler.run(evaluate, 4, seed=0)
    np.testing.assert_allclose(float(scheduler.emitters[0].kernel_state["bonus_sum"]), 4 * BATCH)


def test_tell_sees_the_whole_batch_in_every_loop():
    def evaluate(solutions, key):
        objective, measures, _ = TASK.evaluate(solutions, key)
        measures = measures.at[0].set(jnp.nan)  # row 0: not valid
        return objective, measures, {"bonus": jnp.ones(solutions.shape[0])}

    def make():
        archive = grid()
        emitters = [
            JaxEmitter(archive, BatchReader(), seed=0),
            GaussianEmitter(archive, sigma=0.2, x0=np.zeros(DIM), batch_size=5, seed=1),
            JaxEmitter(archive, BatchReader(batch_size=3), seed=2),
        ]
        return Scheduler(archive, emitters)

    total = BATCH + 5 + 3
    fused = make()
    fused.run(evaluate, 3, seed=0)
    for emitter in (fused.emitters[0], fused.emitters[2]):
        state = emitter.kernel_state
        assert int(state["batch_rows"]) == 3 * total
        assert int(state["batch_valid"]) == 3 * (total - 1)
        np.testing.assert_allclose(float(state["bonus_sum"]), 3 * (total - 1))

    # Scheduler.ask/tell hands the whole batch too (no invalid rows there).
    scheduler = make()
    solutions = scheduler.ask()
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    scheduler.tell(np.asarray(objective), np.asarray(measures))
    assert int(scheduler.emitters[2].kernel_state["batch_rows"]) == total

    # Told on its own, an emitter's batch is its own rows.
    archive = grid()
    emitter = JaxEmitter(archive, BatchReader(), seed=0)
    solutions = emitter.ask()
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    emitter.tell(
        solutions,
        objective,
        measures,
        archive.add(solutions, np.asarray(objective), np.asarray(measures)),
    )
    assert int(emitter.kernel_state["batch_rows"]) == BATCH


def test_tell_finds_its_own_rows_in_the_batch():
    def make():
        archive = grid()
        kernels = [OwnRowsReader(), OwnRowsReader(), OwnRowsReader(batch_size=3)]
        emitters = [JaxEmitter(archive, k, seed=i) for i, k in enumerate(kernels)]
        return Scheduler(archive, emitters)

    def check(scheduler, tells):
        for emitter in scheduler.emitters:
            state = emitter.kernel_state
            assert int(state["tells"]) == tells
            assert int(state["own_match"]) == tells
            assert int(state["own_rows"]) == tells * emitter.batch_size

    fused = make()
    assert fused.fusion_groups == [[0, 1]]
    fused.run(TASK, 2, seed=0)
    check(fused, 2)
    python = make()
    python.run(TASK, 2, seed=0, fused=False)  # Scheduler.ask/tell
    check(python, 2)
    config, state = F.init(fused)
    state, solutions = F.ask(config, state)
    objective, measures, _ = TASK.evaluate(solutions, jax.random.key(1))
    state, _ = F.tell(config, state, objective, measures)
    F.install(fused, config, state)
    check(fused, 3)

    # Told on its own, all of its batch is its own.
    emitter = python.emitters[2]
    solutions = emitter.ask()
    objective, measures, _ = TASK.evaluate(jnp.asarray(solutions), jax.random.key(0))
    add_info = emitter.archive.add(solutions, np.asarray(objective), np.asarray(measures))
    emitter.tell(solutions, objective, measures, add_info)
    assert int(emitter.kernel_state["own_match"]) == 3


def test_task_extras_reach_tell_in_the_ask_tell_loops():
    """Scheduler.tell(..., extras=) hands per-row data (arrays or records of them)
    to the emitters only; Scheduler.run(fused=False) passes the task's extras."""

    class Pair(NamedTuple):
        bonus: Any
        other: Any

    def evaluate(solutions, key):
        objective, measures, _ = TASK.evaluate(solutions, key)
        n = solutions.shape[0]
        return (
            objective,
            measures,
            {"bonus": jnp.ones(n), "pair": Pair(jnp.ones(n), jnp.zeros((n, 2, 3)))},
        )

    python = scheduler_of([NoisyParents()])
    python.run(evaluate, 4, seed=0, fused=False)
    fused = scheduler_of([NoisyParents()])
    fused.run(evaluate, 4, seed=0)
    assert_same_archives(fused.archive, python.archive)
    assert_same_states(fused.emitters[0].state, python.emitters[0].state)
    np.testing.assert_allclose(float(python.emitters[0].kernel_state["bonus_sum"]), 4 * BATCH)

    # A pyribs-style emitter receives the extras as keyword arguments.
    archive = grid()
    received = {}

    class Recorder(EmitterBase):
        def ask(self):
            return np.zeros((3, DIM))

        def tell(self, solution, objective, measures, add_info, **fields):
            received.update(fields)

    scheduler = Scheduler(
        archive,
        [Recorder(archive, solution_dim=DIM, bounds=None, lower_bounds=None, upper_bounds=None)],
    )
    solutions = scheduler.ask()
    objective, measures, extras = evaluate(jnp.asarray(solutions), jax.random.key(0))
    scheduler.tell(np.asarray(objective), np.asarray(measures), extras=extras)
    assert set(received) == {"bonus", "pair"}
    assert received["pair"].other.shape == (3, 2, 3)
    assert "pair" not in archive.field_list

    for bad, match in (
        (["bonus"], "extras must be a dict"),
        ({"measures": np.ones(3)}, "extras cannot hold"),
        ({"bonus": np.ones(4)}, "extras\\['bonus'\\] should have length 3"),
        ({"bonus": Pair(np.ones(3), np.ones(2))}, "should have length 3"),
    ):
        scheduler.ask()
        with pytest.raises(ValueError, match=match):
            scheduler.tell(np.asarray(objective), np.asarray(measures), extras=bad)


def test_bandit_batch_marks_inactive_rows_invalid():
    archive = grid()
    emitters = [JaxEmitter(archive, BatchReader(), seed=i) for i in range(4)]
    scheduler = BanditScheduler(archive, emitters, num_active=2)
    scheduler.run(TASK, 4, seed=1)
    for emitter in scheduler.emitter_pool:
        state = emitter.kernel_state
        # Each tell saw the pool's rows, of which the two active emitters' valid.
        assert int(state["batch_valid"]) == int(state["tells"]) * 2 * BATCH


@dataclasses.dataclass(frozen=True)
class ElitesReader(NoisyParents):
    """Records the sum of the elites' objectives and measures its tell sees."""

    def init(self, key, archive):
        return {
            **super().init(key, archive),
            "objective_sum": jnp.zeros((), archive.objective.dtype),
            "measures_sum": jnp.zeros((), archive.measures.dtype),
        }

    def tell(self, state, archive, key, feedback):
        state = super().tell(state, archive, key, feedback)
        occupied = jnp.arange(archive.order.shape[0]) < archive.n_occupied
        cells = archive.order
        return {
            **state,
            "objective_sum": jnp.sum(jnp.where(occupied, archive.objective[cells], 0)),
            "measures_sum": jnp.sum(jnp.where(occupied[:, None], archive.measures[cells], 0)),
        }


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "ask_tell"])
def test_kernels_read_the_elites_objectives_and_measures(fused):
    scheduler = scheduler_of([ElitesReader()])
    scheduler.run(TASK, 4, seed=0, fused=fused)
    data = scheduler.archive.data()
    state = scheduler.emitters[0].kernel_state
    np.testing.assert_allclose(float(state["objective_sum"]), np.sum(data["objective"]), rtol=1e-9)
    np.testing.assert_allclose(float(state["measures_sum"]), np.sum(data["measures"]), rtol=1e-9)


def test_emitter_evaluations_are_counted_in_both_loops():
    kernels = [NoisyParents(probes=10)]
    for fused in (True, False):
        scheduler = scheduler_of(kernels)
        result = scheduler.run(TASK, 3, seed=0, fused=fused)
        assert scheduler.emitters[0].evaluations == 30
        assert list(result.metrics["evaluations"]) == [16, 32, 48]
        # A second run continues the count.
        result = scheduler.run(TASK, 1, fused=fused)
        assert list(result.metrics["evaluations"]) == [64]


def test_dqd_kernel_fused_equals_ask_tell():
    runs = []
    for fused in (True, False):
        scheduler = scheduler_of([GradientSteps()])
        assert scheduler.emitters[0].ask_dqd is not None
        scheduler.run(TASK, 5, seed=2, fused=fused)
        runs.append(scheduler)
    assert_same_archives(runs[0].archive, runs[1].archive)
    assert_same_states(runs[0].emitters[0].state, runs[1].emitters[0].state)
    # The gradient ascent improved the objective of x.
    key = jax.random.key(0)
    start = TASK.evaluate(jnp.ones((1, DIM)), key)[0][0]
    end = TASK.evaluate(runs[0].emitters[0].kernel_state["x"][None], key)[0][0]
    assert float(end) > float(start) + 1e-3


def test_bandit_scheduler_runs_kernel_emitters():
    archive = grid()
    emitters = [JaxEmitter(archive, NoisyParents(), seed=i) for i in range(4)]
    scheduler = BanditScheduler(archive, emitters, num_active=2)
    python_archive = grid()
    python = BanditScheduler(
        python_archive,
        [JaxEmitter(python_archive, NoisyParents(), seed=i) for i in range(4)],
        num_active=2,
    )
    scheduler.run(TASK, 6, seed=1)
    python.run(TASK, 6, seed=1, fused=False)
    assert_same_archives(scheduler.archive, python.archive)
    tells = [int(e.kernel_state["tells"]) for e in scheduler.emitter_pool]
    assert sum(tells) == 2 * 6


def test_non_finite_rows_reach_tell_as_invalid():
    def evaluate(solutions, key):
        objective, measures, _ = TASK.evaluate(solutions, key)
        measures = measures.at[0].set(jnp.inf)
        return objective.at[1].set(jnp.nan), measures

    scheduler = scheduler_of([NoisyParents()])
    result = scheduler.run(evaluate, 3, seed=0)
    assert int(scheduler.emitters[0].kernel_state["invalid"]) == 2 * 3
    assert list(result.metrics["non_finite"]) == [2, 2, 2]


def test_errors():
    archive = grid()
    with pytest.raises(TypeError, match="EmitterKernel"):
        JaxEmitter(archive, object())

    @dataclasses.dataclass  # not frozen: unhashable
    class Mutable(EmitterKernel):
        sigma: float = 0.1

    with pytest.raises(TypeError, match="hashable"):
        JaxEmitter(archive, Mutable())

    @dataclasses.dataclass(frozen=True)
    class WrongShape(NoisyParents):
        def ask(self, state, archive, key):
            return state, jnp.zeros((3, DIM + 1))

    with pytest.raises(ValueError, match="shape"):
        JaxEmitter(archive, WrongShape())

    @dataclasses.dataclass(frozen=True)
    class Promotes(NoisyParents):
        def ask(self, state, archive, key):
            state, solutions, info = super().ask(state, archive, key)
            return {**state, "tells": state["tells"] + 0.5}, solutions, info

    with pytest.raises(ValueError, match="dtypes of the state"):
        JaxEmitter(archive, Promotes())

    @dataclasses.dataclass(frozen=True)
    class NoInit(EmitterKernel):
        pass

    with pytest.raises(NotImplementedError, match="init"):
        JaxEmitter(archive, NoInit())
