"""Tests for the sphere example CLI (tiny runs)."""
import json

import numpy as np
import pytest

from ribsax.archives import CVTArchive, GridArchive
from ribsax.emitters import EvolutionStrategyEmitter, GaussianEmitter, IsoLineEmitter
from ribsax.examples import sphere as example
from ribsax.schedulers import BanditScheduler, Scheduler


def test_sphere_function_values():
    solutions = np.array([[2.048] * 4, [-5.12] * 4, [10.0, 0, 0, -10.0]])
    objective, measures = example.sphere(solutions)
    np.testing.assert_allclose(objective[:2], [100.0, 0.0])
    np.testing.assert_allclose(measures[0], [2 * 2.048, 2 * 2.048])
    # Coordinates outside the domain fold to 5.12 / x.
    np.testing.assert_allclose(measures[2], [0.512, -0.512])


@pytest.mark.parametrize("name,archive_cls,scheduler_cls,emitters", [
    ("map_elites", GridArchive, Scheduler, {GaussianEmitter: 1}),
    ("line_cvt_map_elites", CVTArchive, Scheduler, {IsoLineEmitter: 1}),
    ("me_map_elites", GridArchive, BanditScheduler,
     {EvolutionStrategyEmitter: 45, IsoLineEmitter: 15}),
    ("cma_me_mixed", GridArchive, Scheduler, {EvolutionStrategyEmitter: 15}),
])
def test_configurations(name, archive_cls, scheduler_cls, emitters):
    scheduler = example.create_scheduler(name, dim=4, grid_dims=(5, 5), seed=0)
    assert isinstance(scheduler, scheduler_cls)
    assert isinstance(scheduler.archive, archive_cls)
    pool = (scheduler.emitter_pool if scheduler_cls is BanditScheduler
            else scheduler.emitters)
    counts = {}
    for emitter in pool:
        counts[type(emitter)] = counts.get(type(emitter), 0) + 1
    assert counts == emitters
    assert sum(e.batch_size for e in pool[:15]) == 540


def test_cma_mae_settings():
    scheduler = example.create_scheduler("cma_mae", dim=4, grid_dims=(5, 5),
                                         learning_rate=0.05, es="sep_cma_es")
    assert scheduler.result_archive is not scheduler.archive
    assert scheduler.archive.learning_rate == 0.05
    assert scheduler.archive.threshold_min == 0
    assert type(scheduler.emitters[0].opt).__name__ == "SeparableCMAEvolutionStrategy"


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="Unknown algorithm"):
        example.create_scheduler("foo")


@pytest.mark.parametrize("name", ["cma_mae", "line_map_elites"])
def test_cli_writes_outputs(tmp_path, name):
    code = example.main([name, "--dim", "4", "--itrs", "3", "--grid_dims", "6", "6",
                         "--log_freq", "2", "--seed", "1", "--outdir", str(tmp_path),
                         "--no-verbose"])
    assert code == 0
    metrics = json.loads((tmp_path / f"{name}_metrics.json").read_text())
    assert metrics["QD Score"]["x"] == [0, 2, 3]
    assert metrics["summary"]["coverage"] > 0
    assert (tmp_path / f"{name}_metrics.csv").read_text().startswith("iteration,")
    archive_csv = (tmp_path / f"{name}_archive.csv").read_text().splitlines()
    assert archive_csv[0].split(",")[1:4] == ["solution_0", "solution_1", "solution_2"]
    assert len(archive_csv) - 1 == round(metrics["summary"]["coverage"] * 36)
    assert (tmp_path / f"{name}_heatmap.png").stat().st_size > 0
