"""Tests for the sphere example CLI (tiny runs)."""

import json

import numpy as np
import pytest

from ribsax.archives import CVTArchive, DensityArchive, GridArchive, ProximityArchive
from ribsax.emitters import (
    EvolutionStrategyEmitter,
    GaussianEmitter,
    GradientArborescenceEmitter,
    GradientOperatorEmitter,
    IsoLineEmitter,
)
from ribsax.examples import sphere as example
from ribsax.schedulers import BanditScheduler, Scheduler


def test_sphere_function_values():
    solutions = np.array([[2.048] * 4, [-5.12] * 4, [10.0, 0, 0, -10.0]])
    objective, measures = example.sphere(solutions)
    np.testing.assert_allclose(objective[:2], [100.0, 0.0])
    np.testing.assert_allclose(measures[0], [2 * 2.048, 2 * 2.048])
    # Coordinates outside the domain fold to 5.12 / x.
    np.testing.assert_allclose(measures[2], [0.512, -0.512])


@pytest.mark.parametrize(
    "name,archive_cls,scheduler_cls,emitters",
    [
        ("map_elites", GridArchive, Scheduler, {GaussianEmitter: 1}),
        ("line_cvt_map_elites", CVTArchive, Scheduler, {IsoLineEmitter: 1}),
        (
            "me_map_elites",
            GridArchive,
            BanditScheduler,
            {EvolutionStrategyEmitter: 45, IsoLineEmitter: 15},
        ),
        ("cma_me_mixed", GridArchive, Scheduler, {EvolutionStrategyEmitter: 15}),
    ],
)
def test_configurations(name, archive_cls, scheduler_cls, emitters):
    scheduler = example.create_scheduler(name, dim=4, grid_dims=(5, 5), seed=0)
    assert isinstance(scheduler, scheduler_cls)
    assert isinstance(scheduler.archive, archive_cls)
    pool = scheduler.emitter_pool if scheduler_cls is BanditScheduler else scheduler.emitters
    counts = {}
    for emitter in pool:
        counts[type(emitter)] = counts.get(type(emitter), 0) + 1
    assert counts == emitters
    assert sum(e.batch_size for e in pool[:15]) == 540


@pytest.mark.parametrize(
    "name,ranker,selection,restart,threshold,lc",
    [
        ("ns_cma", "NoveltyRanker", "mu", "basic", 0.037 * 512, False),
        ("nslc", "NSLCRanker", "filter", "no_improvement", 0.037 * 100, True),
        (
            "nslc_cma_imp",
            "TwoStageImprovementRanker",
            "filter",
            "no_improvement",
            0.037 * 100,
            True,
        ),
    ],
)
def test_novelty_configurations(name, ranker, selection, restart, threshold, lc):
    """pyribs' novelty-search settings, and a few iterations of each."""
    scheduler = example.create_scheduler(name, dim=4, grid_dims=(5, 5), seed=0)
    archive = scheduler.archive
    assert isinstance(archive, ProximityArchive)
    assert isinstance(scheduler.result_archive, GridArchive)
    assert archive.k_neighbors == 15 and archive.local_competition is lc
    assert archive.novelty_threshold == np.float64(threshold)
    assert len(scheduler.emitters) == 15
    emitter = scheduler.emitters[0]
    assert type(emitter.ranker).__name__ == ranker
    assert (emitter.batch_size, emitter._selection_rule, emitter._restart_rule) == (
        36,
        selection,
        restart,
    )
    if name == "ns_cma":  # Running (compilation) is slow; one config suffices here.
        for _ in range(2):
            solutions = scheduler.ask()
            scheduler.tell(*example.sphere(solutions))
        assert len(archive) > 0 and not scheduler.result_archive.empty


@pytest.mark.parametrize("name,method", [("dds", "kde"), ("dds_kde_sklearn", "kde_sklearn")])
def test_density_descent_configurations(name, method):
    """pyribs' DDS settings: emitters on the result archive; a few iterations."""
    scheduler = example.create_scheduler(name, dim=4, grid_dims=(5, 5), seed=0)
    archive = scheduler.archive
    assert isinstance(archive, DensityArchive)
    assert (archive._density_method, archive._bandwidth, len(archive._buffer)) == (
        method,
        25.6,
        10000,
    )
    assert len(scheduler.emitters) == 15
    emitter = scheduler.emitters[0]
    assert emitter.archive is scheduler.result_archive
    assert type(emitter.ranker).__name__ == "DensityRanker"
    assert emitter._selection_rule == "mu" and emitter._restart_rule == "basic"
    if name == "dds":  # One run suffices (compilation is the cost).
        solutions = scheduler.ask()
        scheduler.tell(*example.sphere(solutions))
        assert len(archive.buffer) == 540 and not scheduler.result_archive.empty


def test_dms_configuration_and_cli(tmp_path):
    """pyribs' DMS settings, and the CLI loop that trains the discount model."""
    from ribsax.archives import DiscountArchive

    scheduler = example.create_scheduler("dms", dim=4, grid_dims=(5, 5), seed=0)
    archive = scheduler.archive
    assert isinstance(archive, DiscountArchive)
    assert (
        archive.learning_rate,
        archive.threshold_min,
        archive.init_train_points,
        archive.empty_points,
    ) == (0.1, 0, 1000, 100)
    manager = archive.discount_model_manager
    assert (manager.train_epochs, manager.train_cutoff_loss, manager.train_batch_size) == (
        5,
        0.05,
        32,
    )
    assert manager.model.num_params() == 2 * 128 + 128 + 128 * 128 + 128 + 129
    assert scheduler.emitters[0].archive is scheduler.result_archive
    code = example.main(
        [
            "dms",
            "--dim",
            "4",
            "--itrs",
            "2",
            "--grid_dims",
            "5",
            "5",
            "--log_freq",
            "1",
            "--seed",
            "1",
            "--outdir",
            str(tmp_path),
            "--no-verbose",
        ]
    )
    assert code == 0
    metrics = json.loads((tmp_path / "dms_metrics.json").read_text())
    assert metrics["summary"]["coverage"] > 0


def test_cma_mae_settings():
    scheduler = example.create_scheduler(
        "cma_mae", dim=4, grid_dims=(5, 5), learning_rate=0.05, es="sep_cma_es"
    )
    assert scheduler.result_archive is not scheduler.archive
    assert scheduler.archive.learning_rate == 0.05
    assert scheduler.archive.threshold_min == 0
    assert type(scheduler.emitters[0].opt).__name__ == "SeparableCMAEvolutionStrategy"


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="Unknown algorithm"):
        example.create_scheduler("foo")


@pytest.mark.parametrize("name", ["cma_mae", "line_map_elites"])
def test_cli_writes_outputs(tmp_path, name):
    code = example.main(
        [
            name,
            "--dim",
            "4",
            "--itrs",
            "3",
            "--grid_dims",
            "6",
            "6",
            "--log_freq",
            "2",
            "--seed",
            "1",
            "--outdir",
            str(tmp_path),
            "--no-verbose",
        ]
    )
    assert code == 0
    metrics = json.loads((tmp_path / f"{name}_metrics.json").read_text())
    assert metrics["QD Score"]["x"] == [0, 2, 3]
    assert metrics["summary"]["coverage"] > 0
    assert (tmp_path / f"{name}_metrics.csv").read_text().startswith("iteration,")
    archive_csv = (tmp_path / f"{name}_archive.csv").read_text().splitlines()
    assert archive_csv[0].split(",")[1:4] == ["solution_0", "solution_1", "solution_2"]
    assert len(archive_csv) - 1 == round(metrics["summary"]["coverage"] * 36)
    assert (tmp_path / f"{name}_heatmap.png").stat().st_size > 0


@pytest.mark.parametrize(
    "name,emitter_cls,count,bs,bs_dqd",
    [
        ("og_map_elites", GradientOperatorEmitter, 1, 270, 270),
        ("omg_mega", GradientOperatorEmitter, 1, 270, 270),
        ("cma_mega", GradientArborescenceEmitter, 15, 35, 1),
        ("cma_mega_adam", GradientArborescenceEmitter, 15, 35, 1),
        ("cma_maega", GradientArborescenceEmitter, 15, 35, 1),
    ],
)
def test_dqd_configurations(name, emitter_cls, count, bs, bs_dqd):
    scheduler = example.create_scheduler(name, dim=4, grid_dims=(5, 5), seed=0)
    assert example.CONFIG[name]["dqd"]
    emitters = scheduler.emitters
    assert len(emitters) == count
    assert all(type(e) is emitter_cls for e in emitters)
    assert all(e.batch_size == bs and e.batch_size_dqd == bs_dqd for e in emitters)
    assert sum(e.batch_size + e.batch_size_dqd for e in emitters) == 540
    assert (scheduler.result_archive is not scheduler.archive) == (name == "cma_maega")


def test_dqd_emitter_settings():
    cma_mega = example.create_scheduler("cma_mega", dim=4, grid_dims=(5, 5))
    grad = cma_mega.emitters[0].grad_opt
    assert type(grad).__name__ == "GradientAscentOpt"
    assert float(cma_mega.emitters[0].opt.sigma) == 10.0
    adam = example.create_scheduler("cma_mega_adam", dim=4, grid_dims=(5, 5))
    assert type(adam.emitters[0].grad_opt).__name__ == "AdamOpt"
    assert adam.emitters[0].grad_opt.config.lr == 0.002
    maega = example.create_scheduler("cma_maega", dim=4, grid_dims=(5, 5))
    assert maega.archive.learning_rate == 0.01 and maega.archive.threshold_min == 0
    assert type(maega.emitters[0].ranker).__name__ == "ImprovementRanker"
    assert example.CONFIG["rastrigin_cma_mega"]["dim"] == 1000


def test_sphere_jacobian_matches_pyribs_gradients():
    from ribsax.tasks import sphere as sphere_task

    x = np.random.default_rng(0).uniform(-8, 8, size=(5, 6))
    objective, measures, jacobian = example.sphere_jacobian(x)
    ref = sphere_task(6, pyribs_objective_grad=True).evaluate_with_jacobian(x)
    np.testing.assert_allclose(objective, ref[0], rtol=1e-12)
    np.testing.assert_allclose(measures, ref[1], rtol=1e-12)
    np.testing.assert_allclose(jacobian, ref[2], rtol=1e-12)
    np.testing.assert_allclose(jacobian[:, 0], -2 * (x - 2.048))


def test_rastrigin_jacobian_matches_task():
    from ribsax.tasks import rastrigin_projection

    x = np.random.default_rng(1).uniform(-7, 7, size=(4, 10))
    objective, measures, jacobian = example.rastrigin_jacobian(x)
    ref = rastrigin_projection(10).evaluate_with_jacobian(x)
    np.testing.assert_allclose(objective, ref[0], rtol=1e-10)
    np.testing.assert_allclose(measures, ref[1], rtol=1e-12)
    np.testing.assert_allclose(jacobian[:, 1:], ref[2][:, 1:], rtol=1e-12)
    # Objective row: the unnormalised gradient, parallel to the task's.
    cos = (
        np.sum(jacobian[:, 0] * ref[2][:, 0], 1)
        / np.linalg.norm(jacobian[:, 0], axis=1)
        / np.linalg.norm(ref[2][:, 0], axis=1)
    )
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    "name,extra", [("cma_mega", []), ("omg_mega", []), ("cma_maega", ["--function", "rastrigin"])]
)
def test_dqd_cli_runs(tmp_path, name, extra):
    code = example.main(
        [
            name,
            "--dim",
            "4",
            "--itrs",
            "3",
            "--grid_dims",
            "6",
            "6",
            "--log_freq",
            "3",
            "--seed",
            "1",
            "--outdir",
            str(tmp_path),
            "--no-verbose",
            "--no-save_archive",
            *extra,
        ]
    )
    assert code == 0
    summary = json.loads((tmp_path / f"{name}_metrics.json").read_text())["summary"]
    assert summary["coverage"] > 0
    assert summary["function"] == (extra[1] if extra else "sphere")


def test_cli_fused_matches_python_loop(tmp_path):
    args = [
        "line_map_elites",
        "--dim",
        "4",
        "--itrs",
        "5",
        "--grid_dims",
        "6",
        "6",
        "--log_freq",
        "2",
        "--seed",
        "3",
        "--no-verbose",
        "--no-save_archive",
    ]
    assert example.main(args + ["--outdir", str(tmp_path / "fused"), "--fused"]) == 0
    fused = json.loads((tmp_path / "fused" / "line_map_elites_metrics.json").read_text())
    assert fused["QD Score"]["x"] == [0, 2, 4, 5]
    assert fused["summary"]["coverage"] > 0
    assert example.main(args + ["--outdir", str(tmp_path / "python")]) == 0
    python = json.loads((tmp_path / "python" / "line_map_elites_metrics.json").read_text())
    assert python["QD Score"]["x"] == fused["QD Score"]["x"]
    np.testing.assert_allclose(fused["QD Score"]["y"], python["QD Score"]["y"], rtol=1e-9)
    np.testing.assert_allclose(fused["Archive Coverage"]["y"], python["Archive Coverage"]["y"])
    with pytest.raises(ValueError, match="sphere function only"):
        example.run(
            "line_map_elites",
            dim=4,
            itrs=2,
            grid_dims=(6, 6),
            function="rastrigin",
            outdir=str(tmp_path / "r"),
            verbose=False,
            save_archive=False,
            fused=True,
        )
