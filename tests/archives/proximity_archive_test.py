"""ProximityArchive: differential tests against ribs.archives.ProximityArchive."""

import ast
import pickle
import re

import jax
import numpy as np
import pytest
from ribs.archives import ProximityArchive as RibsProximityArchive
from scipy.spatial import KDTree

from ribsax.archives import ProximityArchive, _knn
from tests.compile_counter import count_compilations

STATS_FIELDS = ("num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean")


#: Both neighbour searches, for the tests that must hold with either.
SEARCHES = pytest.mark.parametrize("nearest_neighbors", ["scipy_kd_tree", "jax"])


def both(nearest_neighbors="scipy_kd_tree", **kwargs):
    """A ribsax archive (with ``nearest_neighbors``) and a pyribs one with the same
    arguments."""
    kwargs = {
        "solution_dim": 3,
        "measure_dim": 2,
        "k_neighbors": 3,
        "novelty_threshold": 0.5,
        **kwargs,
    }
    return (
        ProximityArchive(nearest_neighbors=nearest_neighbors, **kwargs),
        RibsProximityArchive(**kwargs),
    )


def batch(rng, n, solution_dim=3, measure_dim=2, high=3.0):
    return (
        rng.normal(size=(n, solution_dim)),
        rng.normal(size=n),
        rng.uniform(0, high, size=(n, measure_dim)),
    )


def assert_same_info(ours, theirs, rtol=1e-12):
    assert ours.keys() == theirs.keys()
    for name, expected in theirs.items():
        assert ours[name].dtype == expected.dtype, name
        np.testing.assert_allclose(ours[name], expected, rtol=rtol, err_msg=name)


def assert_same_state(ours, theirs):
    assert len(ours) == len(theirs)
    assert ours.capacity == theirs.capacity
    assert ours.cells == theirs.cells
    ours_data, their_data = ours.data(), theirs.data()
    assert ours_data.keys() == their_data.keys()
    for name, expected in their_data.items():
        np.testing.assert_array_equal(ours_data[name], expected, err_msg=name)
    for name in STATS_FIELDS:
        got, expected = getattr(ours.stats, name), getattr(theirs.stats, name)
        if expected is None:
            assert got is None, name
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=name)
            assert np.asarray(got).dtype == np.asarray(expected).dtype, name
    assert type(ours.stats.num_elites) is int
    if theirs.best_elite is None:
        assert ours.best_elite is None
    else:
        assert ours.best_elite.keys() == theirs.best_elite.keys()
        for name, expected in theirs.best_elite.items():
            np.testing.assert_array_equal(ours.best_elite[name], expected)


@SEARCHES
@pytest.mark.parametrize("local_competition", [False, True])
@pytest.mark.parametrize("k_neighbors", [1, 40])
def test_add_sequence_matches_ribs(nearest_neighbors, local_competition, k_neighbors):
    """Novelty, statuses, values, local competition, data, capacity growth and stats
    over several batches, from an empty archive of capacity 2."""
    # Capacity 2 grows at every batch (a compilation each): one case suffices.
    initial = 2 if k_neighbors == 40 else 128
    ours, theirs = both(
        nearest_neighbors,
        local_competition=local_competition,
        k_neighbors=k_neighbors,
        initial_capacity=initial,
    )
    rng = np.random.default_rng(k_neighbors)
    capacities = []
    for _ in range(4):
        data = batch(rng, 30)
        assert_same_info(ours.add(*data), theirs.add(*data))
        assert_same_state(ours, theirs)
        capacities.append(ours.capacity)
    if initial == 2:  # 2 -> 32 in one add (several doublings), then more growth.
        assert capacities[0] == 32 and capacities[-1] > capacities[0]


def test_local_competition_replaces_neighbour_with_best_of_batch():
    """Several non-novel solutions beat the same neighbour: the best one (the first
    of equal ones) replaces it; statuses are 1 for all of them."""
    ours, theirs = both(local_competition=True, novelty_threshold=10.0, k_neighbors=1)
    first = (np.zeros((1, 3)), np.array([0.0]), np.array([[1.0, 1.0]]))
    for archive in (ours, theirs):
        archive.add(*first)
    solution = np.arange(12.0).reshape(4, 3)
    objective = np.array([2.0, 5.0, 5.0, -1.0])
    measures = np.array([[1.1, 1.0], [0.9, 1.0], [1.0, 1.2], [1.0, 1.0]])
    info = ours.add(solution, objective, measures)
    assert_same_info(info, theirs.add(solution, objective, measures))
    assert info["status"].tolist() == [1, 1, 1, 0]
    assert_same_state(ours, theirs)
    np.testing.assert_array_equal(ours.data("solution"), solution[[1]])


def test_non_novel_losers_not_written():
    """pyribs 0.10 wrote non-novel, non-improving solutions when others in the batch
    were novel (fixed in 0.11); ribsax writes only status > 0."""
    ours, theirs = both(local_competition=True, novelty_threshold=1.0, k_neighbors=1)
    for archive in (ours, theirs):
        archive.add(np.zeros((1, 3)), [5.0], [[0.0, 0.0]])
    solution = np.ones((2, 3))
    info = ours.add(solution, [1.0, 1.0], [[0.1, 0.0], [5.0, 5.0]])
    assert_same_info(info, theirs.add(solution, [1.0, 1.0], [[0.1, 0.0], [5.0, 5.0]]))
    assert info["status"].tolist() == [0, 2]
    assert_same_state(ours, theirs)
    assert ours.data("objective").tolist() == [5.0, 1.0]


@SEARCHES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("local_competition", [False, True])
def test_dtypes_match_ribs(nearest_neighbors, dtype, local_competition):
    ours, theirs = both(nearest_neighbors, dtype=dtype, local_competition=local_competition)
    rng = np.random.default_rng(1)
    for _ in range(3):
        data = batch(rng, 10)
        assert_same_info(ours.add(*data), theirs.add(*data), rtol=1e-6)
        assert_same_state(ours, theirs)
    assert ours.novelty_threshold.dtype == theirs.novelty_threshold.dtype
    assert ours.novelty_threshold == theirs.novelty_threshold
    assert ours.qd_score_offset.dtype == theirs.qd_score_offset.dtype
    assert ours.dtypes == theirs.dtypes
    assert ours.field_list == theirs.field_list


def test_empty_batches_match_ribs():
    for lc in (False, True):
        ours, theirs = both(local_competition=lc)
        empty = (np.zeros((0, 3)), np.zeros(0), np.zeros((0, 2)))
        assert_same_info(ours.add(*empty), theirs.add(*empty))
        data = batch(np.random.default_rng(0), 4)
        ours.add(*data)
        theirs.add(*data)
        assert_same_info(ours.add(*empty), theirs.add(*empty))


def test_objective_none_means_zeros():
    ours, theirs = both()
    rng = np.random.default_rng(2)
    solution, _, measures = batch(rng, 8)
    assert_same_info(ours.add(solution, None, measures), theirs.add(solution, None, measures))
    assert_same_state(ours, theirs)
    assert ours.add_single(solution[0], None, [9.0, 9.0])["status"].tolist() == [2]


def test_add_single_matches_ribs():
    for lc in (False, True):
        ours, theirs = both(local_competition=lc, k_neighbors=2)
        rng = np.random.default_rng(3)
        for solution, objective, measures in zip(*batch(rng, 12)):
            assert_same_info(
                ours.add_single(solution, objective, measures),
                theirs.add_single(solution, objective, measures),
            )
        assert_same_state(ours, theirs)


@SEARCHES
def test_threshold_decay_matches_ribs(nearest_neighbors):
    kwargs = {
        "threshold_decay_rate": 0.5,
        "threshold_decay_itrs": 2,
        "threshold_decay_min": 0.1,
        "novelty_threshold": 2.0,
    }
    ours, theirs = both(nearest_neighbors, **kwargs)
    rng = np.random.default_rng(4)
    thresholds = []
    for i in range(10):
        # Mostly the same few points, so most calls append nothing.
        data = batch(rng, 5, high=0.01 if i % 4 else 10.0)
        assert_same_info(ours.add(*data), theirs.add(*data))
        assert ours.novelty_threshold == theirs.novelty_threshold
        assert ours.novelty_threshold.dtype == theirs.novelty_threshold.dtype
        thresholds.append(float(ours.novelty_threshold))
    assert_same_state(ours, theirs)
    assert thresholds[-1] < 2.0 and min(thresholds) >= 0.1


@SEARCHES
@pytest.mark.parametrize("lc_objective", [False, True])
def test_compute_novelty_matches_ribs(nearest_neighbors, lc_objective):
    ours, theirs = both(nearest_neighbors, k_neighbors=4)
    rng = np.random.default_rng(5)
    query = rng.uniform(0, 3, size=(7, 2))
    objective = rng.normal(size=7) if lc_objective else None
    for _ in range(2):  # Empty archive, then a filled one.
        got = ours.compute_novelty(query, objective)
        expected = theirs.compute_novelty(query, objective)
        if not lc_objective:
            got, expected = (got,), (expected,)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-12)
        data = batch(rng, 30)
        ours.add(*data)
        theirs.add(*data)


@SEARCHES
def test_index_of_and_retrieve_match_ribs(nearest_neighbors):
    ours, theirs = both(nearest_neighbors)
    rng = np.random.default_rng(6)
    data = batch(rng, 30)
    ours.add(*data)
    theirs.add(*data)
    query = rng.uniform(-1, 4, size=(9, 2))
    indices = ours.index_of(query)
    assert indices.dtype == np.int32
    np.testing.assert_array_equal(indices, theirs.index_of(query))
    assert ours.index_of_single(query[0]) == theirs.index_of_single(query[0])
    occupied, found = ours.retrieve(query)
    ref_occupied, ref_found = theirs.retrieve(query)
    np.testing.assert_array_equal(occupied, ref_occupied)
    for name, expected in ref_found.items():
        np.testing.assert_array_equal(found[name], expected)
    single = ours.retrieve_single(query[1])
    assert single[0] and single[1]["index"] == theirs.retrieve_single(query[1])[1]["index"]


def test_errors_match_ribs():
    def message(cls, exc, **kwargs):
        with pytest.raises(exc) as err:
            cls(
                **{
                    "solution_dim": 3,
                    "measure_dim": 2,
                    "k_neighbors": 3,
                    "novelty_threshold": 0.5,
                    **kwargs,
                }
            )
        text = str(err.value)
        if text.endswith("}"):  # A set of names, whose order may vary.
            prefix, names = text.split(": ", 1)
            return prefix, ast.literal_eval(names)
        return text

    for kwargs in [
        {"initial_capacity": 0},
        {"threshold_decay_rate": 0.0},
        {"threshold_decay_rate": 1.5},
        {"threshold_decay_rate": 0.5, "threshold_decay_itrs": 0},
        {"threshold_decay_rate": 0.5, "threshold_decay_min": -1.0},
        {"ckdtree_kwargs": {}},
        {"kdtree_kwargs": {"leafsize": 0}},
        {"extra_fields": {"measures": ((), np.float64)}},
        {"dtype": np.float32, "solution_dtype": np.float32},
    ]:
        assert message(ProximityArchive, ValueError, **kwargs) == message(
            RibsProximityArchive, ValueError, **kwargs
        ), kwargs

    for kwargs in [{"kdtree_kwargs": {"leaf_size": 4}}]:  # Not a KDTree argument.
        assert message(ProximityArchive, TypeError, **kwargs) == message(
            RibsProximityArchive, TypeError, **kwargs
        ), kwargs
    with pytest.raises(
        ValueError,
        match="nearest_neighbors must be one of 'scipy_kd_tree', 'jax', got 'brute_force'",
    ):
        ProximityArchive(
            solution_dim=3,
            measure_dim=2,
            k_neighbors=3,
            novelty_threshold=0.5,
            nearest_neighbors="brute_force",
        )

    ours, theirs = both(local_competition=True)
    for archive in (ours, theirs):
        with pytest.raises(RuntimeError) as err:
            archive.index_of([[0.0, 0.0]])
        assert "There were no solutions in the archive." in str(err.value)
    errors = []
    for archive in (ours, theirs):
        row = []
        for call in (
            lambda a: a.add(np.zeros((1, 3)), None, np.zeros((1, 2))),
            lambda a: a.add_single(np.zeros(3), None, np.zeros(2)),
            lambda a: a.add(np.zeros((1, 3)), [0.0], np.zeros((1, 3))),
            lambda a: a.add(np.zeros((1, 3)), [np.inf], np.zeros((1, 2))),
            lambda a: a.add(np.zeros((1, 2)), [0.0], np.zeros((1, 2))),
        ):
            with pytest.raises(ValueError) as err:
                call(archive)
            row.append(str(err.value))
        errors.append(row)
    assert errors[0] == errors[1]
    assert "objective must be passed in to add()." in errors[0][0]
    assert "objective must be passed in to add_single()." in errors[0][1]


def test_extra_fields_and_missing_fields():
    fields = {"metadata": ((), np.int32), "vec": ((2,), np.float64)}
    ours, theirs = both(extra_fields=fields, novelty_threshold=5.0)
    rng = np.random.default_rng(7)
    data = batch(rng, 6)
    extra = {"metadata": np.arange(6), "vec": rng.normal(size=(6, 2))}
    assert_same_info(ours.add(*data, **extra), theirs.add(*data, **extra))
    assert_same_state(ours, theirs)
    far = (np.zeros((1, 3)), [0.0], [[50.0, 50.0]])
    for archive in (ours, theirs):
        with pytest.raises(ValueError, match=re.escape("`data` has keys")):
            archive.add(*far)
    # Nothing is inserted: no error, as in pyribs.
    near = (np.zeros((1, 3)), [0.0], data[2][:1])
    assert_same_info(ours.add(*near), theirs.add(*near))


@SEARCHES
def test_clear_sample_and_iterate(nearest_neighbors):
    ours, theirs = both(nearest_neighbors, seed=3)
    for archive in (ours, theirs):
        with pytest.raises(IndexError):
            archive.sample_elites(1)
    data = batch(np.random.default_rng(8), 10)
    ours.add(*data)
    theirs.add(*data)
    np.testing.assert_array_equal(ours.sample_elites(5)["index"], theirs.sample_elites(5)["index"])
    with pytest.raises(ValueError, match="Cannot take a larger sample"):
        ours.sample_elites(len(ours) + 1, replace=False)
    assert [e["index"] for e in ours] == [e["index"] for e in theirs]
    ours.clear()
    theirs.clear()
    assert ours.empty and len(ours) == 0 and ours.best_elite is None
    assert_same_state(ours, theirs)
    assert_same_info(ours.add(*data), theirs.add(*data))
    assert_same_state(ours, theirs)


def test_pickle_round_trip():
    archive, _ = both(local_competition=True)
    rng = np.random.default_rng(9)
    archive.add(*batch(rng, 10))
    copy = pickle.loads(pickle.dumps(archive))
    data = batch(rng, 10)
    assert_same_info(copy.add(*data), archive.add(*data))
    np.testing.assert_array_equal(copy.data("objective"), archive.data("objective"))


@SEARCHES
def test_add_does_not_compile_again(nearest_neighbors):
    archive, _ = both(nearest_neighbors, local_competition=True, initial_capacity=1024)
    rng = np.random.default_rng(10)
    archive.add(*batch(rng, 16))
    archive.add(*batch(rng, 16))
    archive.compute_novelty(rng.uniform(size=(16, 2)))
    with count_compilations() as compiled:
        for _ in range(3):
            archive.add(*batch(rng, 16))
            archive.compute_novelty(rng.uniform(size=(16, 2)))
    assert compiled.count == 0


@pytest.mark.parametrize(
    "n, capacity, dim",
    [
        (0, 40, 3),
        (3, 40, 3),
        (5, 40, 3),
        (70, 200, 3),
        (130, 200, 3),
        (200, 200, 3),
        (3, 200, 20),
        (130, 200, 20),
    ],
)
def test_knn_across_blocks(monkeypatch, n, capacity, dim):
    """Blocked, grouped search (blocks of 64, the last one overlapping, groups of 4)
    equals a KD-tree, also with fewer valid rows than k and in the matmul form."""
    monkeypatch.setattr(_knn, "BLOCK", 64)
    monkeypatch.setattr(_knn, "GROUP", 4)
    rng = np.random.default_rng(n)
    points = rng.normal(size=(capacity, dim))
    queries = rng.normal(size=(11, dim))
    k = 5
    dist, idx = jax.jit(_knn.knn, static_argnames="k")(queries, points, n, k=k)
    dist, idx = np.asarray(dist), np.asarray(idx)
    k_eff = min(n, k)
    if n:
        ref_dist, ref_idx = KDTree(points[:n]).query(queries, k=k_eff)
        ref_dist = ref_dist.reshape(11, k_eff)
        np.testing.assert_allclose(dist[:, :k_eff], ref_dist, rtol=1e-12)
        np.testing.assert_array_equal(idx[:, :k_eff], ref_idx.reshape(11, k_eff))
    assert np.all(np.isinf(dist[:, k_eff:])) and np.all(idx[:, k_eff:] == -1)


def test_knn_high_dimensional_uses_exact_distances():
    rng = np.random.default_rng(11)
    points = rng.normal(size=(50, 20)) + 1e3  # Far from the origin: cancellation.
    queries = points[:4] + 1e-4
    dist, idx = _knn.knn(queries, points, 50, 2)
    ref_dist, ref_idx = KDTree(points).query(queries, k=2)
    np.testing.assert_array_equal(np.asarray(idx), ref_idx)
    np.testing.assert_allclose(np.asarray(dist), ref_dist, rtol=1e-9)


def test_fused_loop_refuses_proximity_archive():
    """The archive has no fused-loop kernels; Scheduler.run says so."""
    from ribsax.emitters import EvolutionStrategyEmitter
    from ribsax.schedulers import Scheduler
    from ribsax.tasks import sphere

    archive, _ = both()
    scheduler = Scheduler(
        archive,
        [EvolutionStrategyEmitter(archive, x0=np.zeros(3), sigma0=0.5, ranker="nov", batch_size=4)],
    )
    with pytest.raises(ValueError, match="no fused-loop kernels"):
        scheduler.run(sphere, 2)


def _drifting_batches(rng, n_batches, size, measure_dim):
    """Batches whose measures spread outwards and then crowd one small region: the
    archive grows past several capacities, queries land far from every entry, and
    buckets overflow."""
    out = []
    for i in range(n_batches):
        scale = 0.2 * (i + 1) if i < n_batches - 3 else 0.01
        out.append(
            (
                rng.normal(size=(size, 3)),
                rng.normal(size=size),
                rng.normal(scale=scale, size=(size, measure_dim)),
            )
        )
    return out


@pytest.mark.parametrize("measure_dim, local_competition", [(1, True), (2, False), (3, True)])
def test_bucket_grid_run_matches_ribs(measure_dim, local_competition):
    """A long run through the bucket grid (growth, rebuilds, replacements that move
    entries between cells, queries far from the archive) matches pyribs."""
    ours, theirs = both(
        "jax",
        measure_dim=measure_dim,
        k_neighbors=15,
        novelty_threshold=0.05,
        local_competition=local_competition,
    )
    rng = np.random.default_rng(20 + measure_dim)
    for data in _drifting_batches(rng, 12, 150, measure_dim):
        assert_same_info(ours.add(*data), theirs.add(*data))
        assert_same_state(ours, theirs)
    probe = rng.normal(scale=2.0, size=(50, measure_dim))
    np.testing.assert_allclose(
        ours.compute_novelty(probe), theirs.compute_novelty(probe), rtol=1e-12
    )
    np.testing.assert_array_equal(ours.index_of(probe), theirs.index_of(probe))


@SEARCHES
def test_crowded_measures_match_ribs(nearest_neighbors):
    """Hundreds of identical measures (no cell width can spread them over the
    buckets) still give pyribs' novelty."""
    ours, theirs = both(nearest_neighbors, k_neighbors=15, novelty_threshold=0.0)
    rng = np.random.default_rng(21)
    for _ in range(3):
        solution, objective, measures = batch(rng, 200)
        measures[:150] = 1.0
        assert_same_info(
            ours.add(solution, objective, measures), theirs.add(solution, objective, measures)
        )
    probe = np.concatenate([np.ones((5, 2)), rng.uniform(0, 3, size=(20, 2))])
    np.testing.assert_allclose(
        ours.compute_novelty(probe), theirs.compute_novelty(probe), rtol=1e-12
    )


@pytest.mark.parametrize("n", [0, 4, 300])
def test_bucket_grid_query_equals_brute_force_with_ties(n):
    """On lattice points (many equal distances) the grid returns what the brute force
    returns: the same distances and the lower row first among equal ones."""
    from ribsax.archives import _bucket_index

    rng = np.random.default_rng(n)
    capacity, k = 512, 6
    points = rng.integers(0, 12, size=(capacity, 2)).astype(float)
    queries = np.concatenate(
        [
            rng.integers(0, 12, size=(40, 2)) + 0.5 * rng.integers(0, 2, size=(40, 2)),
            [[100.0, -50.0], [6.0, 1e4]],
        ]
    )
    g, m = _bucket_index.table_shape(capacity, k, 2)
    dist, idx = _knn.knn(queries, points, n, k)
    if n:
        origin, width = _bucket_index.layout(points, n, occupancy=3.0)
        index = _bucket_index.build(points, n, origin, width, g=g, m=64)
        got_dist, got_idx = jax.jit(_bucket_index.query, static_argnames="k")(
            index, queries, points, n, k=k
        )
        np.testing.assert_array_equal(np.asarray(got_idx), np.asarray(idx))
        np.testing.assert_array_equal(np.asarray(got_dist), np.asarray(dist))
    assert np.all(np.asarray(idx)[:, min(n, k) :] == -1)


def test_grid_rebuild_does_not_compile_again(monkeypatch):
    """Rebuilding the grid at the same capacity (a bucket overflowed) reuses the
    compiled kernels, and the adds still match pyribs."""
    from ribsax.archives import _bucket_index

    builds = []
    build = _bucket_index.build

    def counting_build(*args, **kwargs):
        builds.append(1)
        return build(*args, **kwargs)

    monkeypatch.setattr(_bucket_index, "build", counting_build)
    ours, theirs = both(
        "jax", k_neighbors=15, novelty_threshold=0.0, local_competition=True, initial_capacity=4096
    )
    rng = np.random.default_rng(22)
    for _ in range(2):  # The grid is built, then updated by the write kernel.
        spread = batch(rng, 100, high=10.0)
        assert_same_info(ours.add(*spread), theirs.add(*spread))
    assert len(builds) == 1
    with count_compilations() as compiled:
        for _ in range(3):  # 100 new entries per add in a 0.1-wide square.
            data = batch(rng, 100, high=0.1)
            assert_same_info(ours.add(*data), theirs.add(*data))
    assert len(builds) > 1
    assert compiled.count == 0
    assert_same_state(ours, theirs)


@pytest.mark.parametrize("local_competition", [False, True])
def test_kd_tree_ties_are_ribs_ties(local_competition):
    """On lattice measures (many neighbours at equal distances) a KD-tree built with
    scipy's defaults, as pyribs builds it, picks pyribs' neighbours: the same nearest
    rows in index_of, and the same entries replaced under local competition, batch
    after batch."""
    ours, theirs = both(
        k_neighbors=4,
        novelty_threshold=1.5,
        local_competition=local_competition,
        kdtree_kwargs={"balanced_tree": True, "compact_nodes": True},
    )
    assert ours.nearest_neighbors == "scipy_kd_tree"
    rng = np.random.default_rng(23)
    for _ in range(5):
        solution, objective, _ = batch(rng, 40)
        measures = rng.integers(0, 6, size=(40, 2)).astype(float)
        assert_same_info(
            ours.add(solution, objective, measures), theirs.add(solution, objective, measures)
        )
        assert_same_state(ours, theirs)
    probe = rng.integers(0, 6, size=(60, 2)) + 0.5 * rng.integers(0, 2, size=(60, 2))
    np.testing.assert_array_equal(ours.index_of(probe), theirs.index_of(probe))
