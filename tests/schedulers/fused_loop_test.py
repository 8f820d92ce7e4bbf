"""Tests for the fused loop (``Scheduler.run``): equivalence with the ask/tell loop,
run continuation, metrics, and the errors for what cannot run fused."""

import pickle
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from ribsax.archives import (
    CategoricalArchive,
    CVTArchive,
    GridArchive,
    SlidingBoundariesArchive,
)
from ribsax.emitters import (
    EmitterBase,
    EvolutionStrategyEmitter,
    GaussianEmitter,
    IsoLineEmitter,
)
from ribsax.schedulers import RunResult, Scheduler
from ribsax.tasks import sphere
from tests.backend import CPU_EXACT_FUSED_CMA

DIM = 6
TASK = sphere(DIM)
RANGES = TASK.measure_ranges


def grid(**kwargs):
    return GridArchive(solution_dim=DIM, dims=(8, 8), ranges=RANGES, seed=3, **kwargs)


def gaussian_scheduler(archive=None, batch=16, seed=1):
    archive = grid() if archive is None else archive
    return Scheduler(
        archive,
        [GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=batch, seed=seed)],
    )


def es(archive, seed, ranker="2imp", **kwargs):
    kwargs.setdefault("batch_size", 8)
    return EvolutionStrategyEmitter(
        archive, x0=np.zeros(DIM), sigma0=0.5, ranker=ranker, seed=seed, **kwargs
    )


def cma_mae_scheduler():
    archive = grid(learning_rate=0.1, threshold_min=0.0)
    result = grid()
    emitters = [
        es(archive, seed=10 + i, ranker="imp", selection_rule="mu", restart_rule=4)
        for i in range(3)
    ]
    return Scheduler(archive, emitters, result_archive=result)


def mixed_scheduler():
    """Two fusion groups interleaved with an ungrouped emitter: the unit order is
    not the emitter order."""
    archive = grid()
    emitters = [
        es(archive, 20),
        GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=5, seed=2),
        es(archive, 21, ranker="2rd"),
        es(archive, 22),
        es(archive, 23, ranker="2rd"),
    ]
    return Scheduler(archive, emitters)


def cvt_scheduler():
    archive = CVTArchive(solution_dim=DIM, centroids=40, ranges=RANGES, seed=5, samples=2000)
    return Scheduler(
        archive,
        [
            IsoLineEmitter(
                archive, iso_sigma=0.2, line_sigma=0.3, x0=np.zeros(DIM), batch_size=12, seed=4
            )
        ],
    )


def assert_same_archive(a, b):
    da, db = a.data(), b.data()
    assert set(da) == set(db)
    np.testing.assert_array_equal(da["index"], db["index"])
    for name in da:
        np.testing.assert_allclose(da[name], db[name], rtol=1e-12, atol=1e-12, err_msg=name)
    assert (a.best_elite is None) == (b.best_elite is None)
    if a.best_elite is not None:
        assert a.best_elite["index"] == b.best_elite["index"]
        np.testing.assert_allclose(a.best_elite["objective"], b.best_elite["objective"], rtol=1e-12)
    sa, sb = a.stats, b.stats
    assert sa.num_elites == sb.num_elites
    np.testing.assert_allclose(sa.qd_score, sb.qd_score, rtol=1e-12)


def assert_same_metrics(ma, mb):
    assert list(ma.columns) == list(mb.columns)
    np.testing.assert_array_equal(ma["iteration"], mb["iteration"])
    np.testing.assert_array_equal(ma["num_elites"], mb["num_elites"])
    for col in ma.columns[2:]:
        np.testing.assert_allclose(ma[col], mb[col], rtol=1e-12, err_msg=col)


@pytest.mark.parametrize(
    "build",
    [
        gaussian_scheduler,
        cvt_scheduler,
        cma_mae_scheduler,
        pytest.param(mixed_scheduler, marks=CPU_EXACT_FUSED_CMA),
    ],
    ids=["gaussian_grid", "isoline_cvt", "cma_mae_group", "mixed_order"],
)
def test_fused_equals_ask_tell_loop(build):
    fused, python = build(), build()
    r_fused = fused.run(TASK, 12, seed=7)
    r_python = python.run(TASK, 12, seed=7, fused=False)
    assert r_fused.fused and not r_python.fused
    assert_same_metrics(r_fused.metrics, r_python.metrics)
    assert_same_archive(fused.archive, python.archive)
    assert_same_archive(fused.result_archive, python.result_archive)
    for ef, ep in zip(fused.emitters, python.emitters):
        leaves_f = jax.tree.leaves(ef.state)
        leaves_p = jax.tree.leaves(ep.state)
        for lf, lp in zip(leaves_f, leaves_p):
            if jnp.issubdtype(lf.dtype, jax.dtypes.prng_key):
                lf, lp = jax.random.key_data(lf), jax.random.key_data(lp)
            np.testing.assert_allclose(np.asarray(lf), np.asarray(lp), rtol=1e-9, atol=1e-12)
        if isinstance(ef, EvolutionStrategyEmitter):
            assert ef.itrs == ep.itrs == 12
            assert ef.restarts == ep.restarts
    # The objects keep working with the ask/tell API after a fused run.
    sols_f, sols_p = fused.ask(), python.ask()
    np.testing.assert_allclose(sols_f, sols_p, rtol=1e-9, atol=1e-12)


def test_restarts_happen_in_fused_loop():
    scheduler = cma_mae_scheduler()
    scheduler.run(TASK, 9, seed=0)
    # restart_rule=4: every 4 tells.
    assert [e.restarts for e in scheduler.emitters] == [2, 2, 2]


def test_runs_continue_each_other():
    one, two = gaussian_scheduler(), gaussian_scheduler()
    r_one = one.run(TASK, 10, seed=2)
    first = two.run(TASK, 4, seed=2)
    second = two.run(TASK, 6)
    assert list(first.metrics["iteration"]) == [1, 2, 3, 4]
    assert list(second.metrics["iteration"]) == list(range(5, 11))
    assert_same_archive(one.archive, two.archive)
    assert_same_metrics(r_one.metrics.iloc[4:].reset_index(drop=True), second.metrics)


def test_seed_reproducible_and_reset():
    a, b = gaussian_scheduler(), gaussian_scheduler(seed=1)
    a.run(TASK, 5, seed=11)
    b.run(TASK, 5, seed=11)
    assert_same_archive(a.archive, b.archive)


def test_metrics_every_and_result_fields():
    scheduler = gaussian_scheduler()
    result = scheduler.run(TASK, 10, seed=0, metrics_every=4)
    assert isinstance(result, RunResult)
    assert isinstance(result.metrics, pd.DataFrame)
    assert list(result.metrics["iteration"]) == [4, 8, 10]
    assert list(result.metrics.columns) == [
        "iteration",
        "num_elites",
        "coverage",
        "qd_score",
        "norm_qd_score",
        "obj_max",
        "obj_mean",
        "evaluations",
        "non_finite",
    ]
    assert list(result.metrics["evaluations"]) == [4 * 16, 8 * 16, 10 * 16]
    assert list(result.metrics["non_finite"]) == [0, 0, 0]
    stats = scheduler.archive.stats
    final = result.final
    assert final["num_elites"] == stats.num_elites
    np.testing.assert_allclose(final["qd_score"], stats.qd_score, rtol=1e-12)
    np.testing.assert_allclose(final["obj_max"], stats.obj_max)
    np.testing.assert_allclose(final["obj_mean"], stats.obj_mean, rtol=1e-12)
    assert result.iterations == 10
    assert result.run_time > 0 and result.iterations_per_second > 0


def test_compiled_loop_is_reused():
    gaussian_scheduler().run(TASK, 3, seed=0)
    again = gaussian_scheduler().run(TASK, 3, seed=1)
    assert again.compile_time == 0.0


def test_callable_evaluate_with_extra_fields():
    archive = grid(extra_fields={"norm": ((), np.float64)})
    scheduler = Scheduler(
        archive, [GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=10, seed=0)]
    )

    def evaluate(solutions, key):
        objective, measures, _ = TASK.evaluate(solutions, key)
        return objective, measures, {"norm": jnp.linalg.norm(solutions, axis=1)}

    scheduler.run(evaluate, 5, seed=0)
    data = archive.data()
    np.testing.assert_allclose(data["norm"], np.linalg.norm(data["solution"], axis=1), rtol=1e-12)


def test_missing_extra_field_raises():
    archive = grid(extra_fields={"norm": ((), np.float64)})
    scheduler = gaussian_scheduler(archive)
    with pytest.raises(ValueError, match="extra field 'norm'"):
        scheduler.run(lambda s, k: TASK.evaluate(s, k)[:2], 2, seed=0)


def test_pickle_after_run_continues_identically():
    scheduler = gaussian_scheduler()
    scheduler.run(TASK, 4, seed=3)
    clone = pickle.loads(pickle.dumps(scheduler))
    scheduler.run(TASK, 3)
    clone.run(TASK, 3)
    assert_same_archive(scheduler.archive, clone.archive)


def test_initial_solutions_pending_then_fused():
    archive = grid()
    emitter = GaussianEmitter(
        archive, sigma=0.5, initial_solutions=np.zeros((4, DIM)), batch_size=10, seed=0
    )
    scheduler = Scheduler(archive, [emitter])
    with pytest.raises(ValueError, match="Emitter 0 .* cannot run in the fused loop"):
        scheduler.run(TASK, 2, seed=0)
    scheduler.run(TASK, 1, seed=0, fused=False)  # Consumes initial_solutions.
    scheduler.run(TASK, 2)
    assert len(archive) > 0


class PlainEmitter(EmitterBase):
    """A user-defined emitter without kernels."""

    def __init__(self, archive):
        super().__init__(
            archive, solution_dim=DIM, bounds=None, lower_bounds=None, upper_bounds=None
        )

    def ask(self):
        return np.zeros((3, DIM))


def test_errors():
    scheduler = gaussian_scheduler()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="iterations must be a positive int"):
            scheduler.run(TASK, bad)
    with pytest.raises(ValueError, match="metrics_every must be a positive int"):
        scheduler.run(TASK, 2, metrics_every=0)
    with pytest.raises(TypeError, match="evaluate must be"):
        scheduler.run(42, 2)
    with pytest.raises(TypeError, match=r"evaluate must return \(objective, measures"):
        scheduler.run(lambda s, k: (TASK.evaluate(s, k)[0],), 2)

    scheduler.ask()
    with pytest.raises(RuntimeError, match="run cannot be called immediately after ask"):
        scheduler.run(TASK, 2)

    archive = grid()
    single = Scheduler(
        archive,
        [GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=4)],
        add_mode="single",
    )
    with pytest.raises(ValueError, match="add_mode='batch' only"):
        single.run(TASK, 2)

    custom = Scheduler(archive, [PlainEmitter(archive)])
    with pytest.raises(ValueError, match=r"Emitter 0 \(PlainEmitter\) cannot run"):
        custom.run(TASK, 2)
    custom.run(TASK, 2, fused=False)  # The ask/tell loop takes any emitter.
    assert len(archive) > 0


@pytest.mark.parametrize(
    "make_archive",
    [
        lambda: SlidingBoundariesArchive(solution_dim=DIM, dims=(4, 4), ranges=RANGES),
        lambda: CategoricalArchive(solution_dim=DIM, categories=[["a", "b"], ["c"]]),
    ],
    ids=["sliding", "categorical"],
)
def test_host_indexed_archives_are_rejected(make_archive):
    archive = make_archive()
    scheduler = Scheduler(
        archive, [GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=4)]
    )
    with pytest.raises(ValueError, match="cannot run in the fused loop|fused-loop"):
        scheduler.run(TASK, 2)


def test_emitter_reading_other_archive_is_rejected():
    archive, other = grid(), grid()
    scheduler = Scheduler(
        archive, [GaussianEmitter(other, sigma=0.5, x0=np.zeros(DIM), batch_size=4)]
    )
    with pytest.raises(ValueError, match="reads another archive"):
        scheduler.run(TASK, 2)


def bandit_scheduler(reselect="terminated", num_active=2):
    from ribsax.schedulers import BanditScheduler

    archive = grid()
    pool = [es(archive, 30 + i, restart_rule=3 + i) for i in range(3)]
    pool += [
        GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=8, seed=40),
        IsoLineEmitter(archive, x0=np.zeros(DIM), batch_size=8, seed=41),
        es(archive, 34, ranker="2rd"),
    ]
    return BanditScheduler(archive, pool, num_active=num_active, reselect=reselect)


@pytest.mark.parametrize("reselect", ["terminated", "all"])
def test_bandit_fused_equals_ask_tell_loop(reselect):
    fused, python = bandit_scheduler(reselect), bandit_scheduler(reselect)
    r_fused = fused.run(TASK, 14, seed=4)
    r_python = python.run(TASK, 14, seed=4, fused=False)
    assert_same_metrics(r_fused.metrics, r_python.metrics)
    assert_same_archive(fused.archive, python.archive)
    np.testing.assert_array_equal(fused.active, python.active)
    np.testing.assert_array_equal(fused._success, python._success)
    np.testing.assert_array_equal(fused._selection, python._selection)
    np.testing.assert_array_equal(fused._restarts, python._restarts)
    assert fused._selection.sum() > 0 and (fused._selection > 0).sum() >= 3
    for ef, ep in zip(fused.emitter_pool, python.emitter_pool):
        if isinstance(ef, EvolutionStrategyEmitter):
            assert ef.itrs == ep.itrs
            assert ef.restarts == ep.restarts
            np.testing.assert_allclose(ef.mean, ep.mean, rtol=1e-9, atol=1e-12)
    # Continue with the ask/tell API: same selection, same solutions.
    np.testing.assert_allclose(fused.ask(), python.ask(), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fused.active, python.active)


def test_bandit_with_unequal_batch_sizes_fused_equals_ask_tell_loop():
    """Active emitters whose rows number fewer than the largest possible count:
    the ask/tell steps pad them, the fused loop too."""
    from ribsax.schedulers import BanditScheduler

    def make():
        archive = grid()
        pool = [
            es(archive, 70, batch_size=4, restart_rule=3),
            GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=9, seed=71),
            IsoLineEmitter(archive, x0=np.zeros(DIM), batch_size=6, seed=72),
            es(archive, 73, batch_size=10, restart_rule=4),
        ]
        return BanditScheduler(archive, pool, num_active=2)

    fused, python = make(), make()
    r_fused = fused.run(TASK, 12, seed=5)
    r_python = python.run(TASK, 12, seed=5, fused=False)
    assert_same_metrics(r_fused.metrics, r_python.metrics)
    assert_same_archive(fused.archive, python.archive)
    np.testing.assert_array_equal(fused._selection, python._selection)
    # Several active pairs were run, some asking fewer than the 19 rows of the
    # two largest emitters.
    assert (fused._selection > 0).sum() >= 3
    solutions = python.ask()
    assert len(solutions) == sum(
        e.batch_size for e, a in zip(python.emitter_pool, python.active) if a
    )
    np.testing.assert_allclose(solutions, fused.ask(), rtol=1e-9, atol=1e-12)


DQD_TASK = sphere(DIM, pyribs_objective_grad=True)


def cma_mega_scheduler():
    from ribsax.emitters import GradientArborescenceEmitter

    archive = grid(learning_rate=0.1, threshold_min=0.0)
    result = grid()
    emitters = [
        GradientArborescenceEmitter(
            archive,
            x0=np.zeros(DIM),
            sigma0=1.0,
            lr=0.5,
            grad_opt="adam",
            selection_rule="mu",
            restart_rule=5,
            batch_size=6,
            seed=50 + i,
        )
        for i in range(2)
    ]
    return Scheduler(archive, emitters, result_archive=result)


def omg_mega_scheduler(sigma=0.1):
    from ribsax.emitters import GradientOperatorEmitter

    archive = grid()
    emitters = [
        GradientOperatorEmitter(
            archive,
            sigma=sigma,
            sigma_g=1.0,
            x0=np.zeros(DIM),
            measure_gradients=True,
            normalize_grad=True,
            batch_size=10,
            seed=60,
        ),
        GaussianEmitter(archive, sigma=0.3, x0=np.zeros(DIM), batch_size=7, seed=61),
    ]
    return Scheduler(archive, emitters)


@pytest.mark.parametrize(
    "build",
    [cma_mega_scheduler, omg_mega_scheduler, partial(omg_mega_scheduler, sigma=0.0)],
    ids=["cma_maega_group", "omg_mega_and_gaussian", "omg_mega_sigma_0"],
)
def test_dqd_fused_equals_ask_tell_loop(build):
    fused, python = build(), build()
    r_fused = fused.run(DQD_TASK, 12, seed=8)
    r_python = python.run(DQD_TASK, 12, seed=8, fused=False)
    assert_same_metrics(r_fused.metrics, r_python.metrics)
    assert_same_archive(fused.archive, python.archive)
    assert_same_archive(fused.result_archive, python.result_archive)
    for ef, ep in zip(fused.emitters, python.emitters):
        for lf, lp in zip(jax.tree.leaves(ef.state), jax.tree.leaves(ep.state)):
            if jnp.issubdtype(lf.dtype, jax.dtypes.prng_key):
                lf, lp = jax.random.key_data(lf), jax.random.key_data(lp)
            np.testing.assert_allclose(np.asarray(lf), np.asarray(lp), rtol=1e-9, atol=1e-12)
        if hasattr(ef, "restarts"):
            assert ef.restarts == ep.restarts
    np.testing.assert_allclose(fused.ask_dqd(), python.ask_dqd(), rtol=1e-9, atol=1e-12)


def test_dqd_needs_a_jacobian():
    scheduler = omg_mega_scheduler()

    def evaluate(solutions, key):
        return DQD_TASK.evaluate(solutions, key)

    with pytest.raises(ValueError, match="DQD emitters: pass a Task with a Jacobian"):
        scheduler.run(evaluate, 2)
    scheduler.run(evaluate, 2, jacobian=DQD_TASK.evaluate_with_jacobian)
    assert len(scheduler.archive) > 0


def _run_history(build, task, fused):
    scheduler = build()
    result = scheduler.run(task, 9, seed=5, fused=fused, history=True)
    return scheduler, result.history


@pytest.mark.parametrize(
    "build,task",
    [
        (gaussian_scheduler, TASK),
        (cma_mae_scheduler, TASK),
        (bandit_scheduler, TASK),
        (cma_mega_scheduler, DQD_TASK),
    ],
    ids=["gaussian", "cma_mae_result_archive", "bandit", "dqd"],
)
def test_history_from_statuses_equals_ask_tell_loop(build, task):
    fused, fused_history = _run_history(build, task, True)
    python, python_history = _run_history(build, task, False)
    assert list(fused_history.columns) == [
        "iteration",
        "status",
        "objective",
        "measures_0",
        "measures_1",
    ]
    assert len(fused_history) > 0
    assert set(fused_history["status"]) <= {1, 2}
    pd.testing.assert_frame_equal(fused_history, python_history, check_exact=False, rtol=1e-9)
    # Every elite of the result archive is the best insertion into its cell.
    result = fused.result_archive
    cells = result.index_of(fused_history[["measures_0", "measures_1"]].to_numpy())
    best = fused_history.assign(cell=cells).groupby("cell")["objective"].max()
    elites = result.data(return_type="pandas").set_index("index")
    assert sorted(best.index) == sorted(elites.index)
    np.testing.assert_allclose(best.loc[elites.index], elites["objective"], rtol=1e-6)
    # A statistic that can fail: new cells (status 2) count the elites.
    assert (fused_history["status"] == 2).sum() >= result.stats.num_elites


def test_history_is_off_by_default_and_follows_runs():
    scheduler = gaussian_scheduler()
    assert scheduler.run(TASK, 3, seed=1).history is None
    first = scheduler.run(TASK, 4, history=True).history
    assert first["iteration"].between(4, 7).all()
    assert first["iteration"].max() == 7
