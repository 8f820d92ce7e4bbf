"""Tests for ArchiveStats and the stats that GridArchive maintains."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import ribs.archives

from ribsax.archives import ArchiveStats, GridArchive
from ribsax.archives._archive_stats import STAT_NAMES, stats_metrics, stats_values, summary_stats
from tests.backend import assert_same_statistic

# Every test adds batches of 4 so the add kernel compiles once per configuration.


def _grid(dtype=np.float64, **kwargs):
    kwargs.setdefault("solution_dim", 2)
    kwargs.setdefault("dims", [4, 4])
    kwargs.setdefault("ranges", [(0, 4), (0, 4)])
    return GridArchive(dtype=dtype, **kwargs)


def _batch(objective, cells, solution_dim=2):
    """Batch whose i-th solution lands in 2-D cell ``cells[i]`` of a [4, 4] grid."""
    objective = np.asarray(objective, dtype=float)
    measures = np.asarray(cells, dtype=float) + 0.5
    solution = np.tile(objective[:, None], (1, solution_dim))
    return solution, objective, measures


# ---------------------------------------------------------------- dataclass
def test_fields_in_pyribs_order():
    names = [f.name for f in dataclasses.fields(ArchiveStats)]
    assert names == ["num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]
    assert names == [f.name for f in dataclasses.fields(ribs.archives.ArchiveStats)]


def test_dataclass_is_mutable_and_comparable():
    stats = ArchiveStats(
        num_elites=1, coverage=0.5, qd_score=2.0, norm_qd_score=1.0, obj_max=2.0, obj_mean=2.0
    )
    assert stats == ArchiveStats(1, 0.5, 2.0, 1.0, 2.0, 2.0)
    stats.num_elites = 3  # Not frozen, as in pyribs.
    assert stats.num_elites == 3
    assert dataclasses.replace(stats, obj_max=None).obj_max is None


# ---------------------------------------------------------------- archive stats
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_stats(dtype):
    stats = _grid(dtype).stats
    assert stats.num_elites == 0
    assert isinstance(stats.num_elites, int)
    for name in ["coverage", "qd_score", "norm_qd_score"]:
        value = getattr(stats, name)
        assert isinstance(value, np.ndarray) and value.shape == ()
        assert value.dtype == dtype
        assert value == 0
    assert stats.obj_max is None
    assert stats.obj_mean is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stats_dtypes_after_add(dtype):
    archive = _grid(dtype)
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    stats = archive.stats
    assert isinstance(stats.num_elites, int)
    assert stats.num_elites == 4
    for name in ["coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        assert getattr(stats, name).dtype == dtype, name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stats_values(dtype):
    archive = _grid(dtype, qd_score_offset=-1.0)
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (0, 0)]))
    # Cell (0, 0) holds 4.0 (best in batch); elites are {4, 2, 3}.
    stats = archive.stats
    assert stats.num_elites == 3
    assert stats.coverage == pytest.approx(3 / 16)
    assert stats.qd_score == pytest.approx(9.0 + 3 * 1.0)
    assert stats.norm_qd_score == pytest.approx(12.0 / 16)
    assert stats.obj_max == 4.0
    assert stats.obj_mean == pytest.approx(3.0)


def test_qd_score_offset_positive():
    archive = _grid(qd_score_offset=2.5)
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    assert archive.qd_score_offset == 2.5
    assert archive.stats.qd_score == pytest.approx(10.0 - 4 * 2.5)
    assert archive.stats.norm_qd_score == pytest.approx((10.0 - 4 * 2.5) / 16)


def test_objective_sum_is_incremental_on_improvement():
    archive = _grid()
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    # Improve two cells, fail on one, add a new one.
    archive.add(*_batch([5.0, 0.5, 6.0, 7.0], [(0, 0), (0, 1), (1, 1), (2, 2)]))
    assert archive.stats.num_elites == 5
    assert archive.stats.qd_score == pytest.approx(5.0 + 2.0 + 6.0 + 4.0 + 7.0)
    assert archive.stats.obj_mean == pytest.approx(24.0 / 5)
    assert archive.stats.obj_max == 7.0


def test_stats_unchanged_when_nothing_inserted():
    archive = _grid()
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    before = archive.stats
    best = archive.best_elite
    archive.add(*_batch([0.0, 1.0, 2.0, 3.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    assert archive.stats == before
    assert archive.best_elite["objective"] == best["objective"]


def test_stats_after_add_single():
    archive = _grid()
    archive.add_single([0.0, 0.0], 3.0, [0.5, 0.5])
    archive.add_single([0.0, 0.0], 5.0, [0.5, 0.5])  # Improves the same cell.
    archive.add_single([0.0, 0.0], -1.0, [2.5, 2.5])
    stats = archive.stats
    assert stats.num_elites == 2 and isinstance(stats.num_elites, int)
    assert stats.qd_score == pytest.approx(4.0)
    assert stats.obj_max == 5.0
    assert stats.obj_mean == pytest.approx(2.0)


def test_clear_resets_stats_and_best_elite():
    archive = _grid()
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    archive.clear()
    stats = archive.stats
    assert stats.num_elites == 0
    assert stats.obj_max is None and stats.obj_mean is None
    assert stats.qd_score == 0 and stats.coverage == 0
    assert archive.best_elite is None
    # The archive keeps working after a clear.
    archive.add(*_batch([-1.0, -2.0, -3.0, -4.0], [(0, 0), (0, 1), (1, 1), (3, 3)]))
    assert archive.stats.obj_max == -1.0
    assert archive.stats.qd_score == pytest.approx(-10.0)


def test_obj_max_and_best_elite_monotone_in_cma_mae():
    """In a non-elitist archive obj_max/best_elite keep the best ever inserted."""
    archive = _grid(learning_rate=0.5, threshold_min=0.0)
    archive.add(*_batch([10.0, 1.0, 1.0, 1.0], [(0, 0), (1, 1), (2, 2), (3, 3)]))
    assert archive.best_elite["objective"] == 10.0
    assert archive.best_elite["threshold"] == pytest.approx(5.0)
    # Threshold of cell (0, 0) is 5, so objective 6 replaces the elite with 10.
    result = archive.add(*_batch([6.0, 0.5, 0.5, 0.5], [(0, 0), (1, 1), (2, 2), (3, 3)]))
    assert result["status"][0] == 1
    _, current = archive.retrieve_single([0.5, 0.5])
    assert current["objective"] == 6.0
    assert archive.stats.obj_max == 10.0
    assert archive.best_elite["objective"] == 10.0
    assert archive.best_elite["threshold"] == pytest.approx(5.0)
    # The QD score reflects the current elites (6 + 1 + 1 + 1).
    assert archive.stats.qd_score == pytest.approx(9.0)


def test_best_elite_contents():
    archive = _grid(extra_fields={"tag": ((), np.int32)})
    solution, objective, measures = _batch([1.0, 9.0, 3.0, 4.0], [(0, 0), (2, 1), (1, 1), (3, 3)])
    archive.add(solution, objective, measures, tag=np.arange(4, dtype=np.int32))
    best = archive.best_elite
    assert list(best) == ["solution", "objective", "measures", "threshold", "tag", "index"]
    assert best["objective"] == 9.0
    np.testing.assert_array_equal(best["solution"], [9.0, 9.0])
    np.testing.assert_array_equal(best["measures"], [2.5, 1.5])
    assert best["threshold"] == 9.0
    assert best["tag"] == 1
    assert best["index"] == 2 * 4 + 1
    assert best["index"].dtype == np.int32
    assert np.ndim(best["objective"]) == 0


def test_best_elite_none_when_empty():
    assert _grid().best_elite is None


# ---------------------------------------------------------------- one computation
def _summaries(dtype, cells, size=200, seed=0):
    """Random summary numbers of archives with ``cells`` cells (the first empty)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(1, cells + 1, size=size).astype(np.int32)
    n[0] = 0
    objective_sum = (rng.normal(size=size) * 1000).astype(dtype)
    objective_sum[0] = 0
    obj_max = (rng.normal(size=size) * 100).astype(dtype)
    return n, objective_sum, obj_max


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cells", [7, 100, 999])
def test_stats_values_are_the_same_in_numpy_and_jax(dtype, cells):
    """The archive objects' stats (NumPy) and the fused loop's (JAX, vmapped or
    scanned) are bit-identical, NaN for an empty archive's obj_max / obj_mean."""
    n, objective_sum, obj_max = _summaries(dtype, cells)
    offset = np.asarray(-3.7, dtype)

    def traced(count, total, best):
        return stats_values(count, cells, total, offset, best, dtype=dtype, xp=jnp)

    vmapped = jax.device_get(jax.jit(jax.vmap(traced))(n, objective_sum, obj_max))
    scanned = jax.device_get(
        jax.jit(lambda *xs: jax.lax.scan(lambda carry, x: (carry, traced(*x)), 0, xs)[1])(
            n, objective_sum, obj_max
        )
    )
    for i in range(len(n)):
        stats = summary_stats(
            int(n[i]), cells, objective_sum[i], offset, obj_max[i] if n[i] else None, dtype
        )
        host = stats_metrics(stats)
        for name in STAT_NAMES:
            for values in (vmapped, scanned):
                assert values[name][i].dtype == (np.int32 if name == "num_elites" else dtype)
                # Bit-identical on the CPU, and NaN equals NaN.
                assert_same_statistic(values[name][i], host[name], err_msg=f"{name} of row {i}")
    assert np.isnan(vmapped["obj_max"][0]) and np.isnan(vmapped["obj_mean"][0])
    assert np.isfinite(vmapped["obj_max"][1:]).all()


def test_stats_metrics_of_empty_and_filled_archives():
    archive = _grid(qd_score_offset=-1.0)
    empty = stats_metrics(archive.stats)
    assert list(empty) == list(STAT_NAMES)
    assert empty["num_elites"] == 0 and empty["coverage"] == 0
    assert np.isnan(empty["obj_max"]) and np.isnan(empty["obj_mean"])
    archive.add(*_batch([1.0, 2.0, 3.0, 4.0], [(0, 0), (0, 1), (1, 1), (0, 0)]))
    stats = archive.stats
    assert stats_metrics(stats) == dataclasses.asdict(stats)


def test_pyribs_stats_of_a_filled_archive_from_the_shared_function():
    """The types pyribs gives (a NumPy scalar QD score and best objective, 0-d
    arrays for the rest) come out of :func:`summary_stats`."""
    ours = _grid(np.float32, qd_score_offset=-1.0)
    theirs = ribs.archives.GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(0, 4), (0, 4)], dtype=np.float32, qd_score_offset=-1.0
    )
    batch = _batch([1.5, 2.25, 3.0, 4.75], [(0, 0), (0, 1), (1, 1), (0, 0)])
    ours.add(*batch)
    theirs.add(*batch)
    for name in STAT_NAMES:
        a, b = getattr(ours.stats, name), getattr(theirs.stats, name)
        assert type(a) is type(b), name
        assert a == b, name
