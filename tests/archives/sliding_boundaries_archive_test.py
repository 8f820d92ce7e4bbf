"""Tests for SlidingBoundariesArchive.

The reference is pyribs' ``ribs.archives.SlidingBoundariesArchive``: both archives are
fed identical random batches (cells hit several times, tied objectives, measures
outside the initial ranges, float32 and float64, batches straddling remaps) and every
output is compared exactly, including the order of ``data()`` rows and the boundaries
after each remap. A few hand-computed cases pin down the remap rule and its quirks.
"""

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import SlidingBoundariesArchive
from ribsax.archives._sliding_boundaries_archive import sequential_map_elites

DIMS = [4, 5]
RANGES = [(-1, 1), (0, 2)]


def _kwargs(**kwargs):
    kwargs.setdefault("solution_dim", 3)
    kwargs.setdefault("dims", DIMS)
    kwargs.setdefault("ranges", RANGES)
    return kwargs


def _pair(**kwargs):
    """A ribsax archive and a ribs archive built with the same arguments."""
    kwargs = _kwargs(**kwargs)
    return (SlidingBoundariesArchive(**kwargs), ribs.archives.SlidingBoundariesArchive(**kwargs))


def _random_batch(rng, size, solution_dim=3, integer_objectives=False, scale=1.5):
    solution = rng.normal(size=(size, *np.atleast_1d(solution_dim)))
    if integer_objectives:
        objective = rng.integers(-2, 3, size=size).astype(np.float64)
    else:
        objective = rng.normal(size=size)
    measures = rng.normal(size=(size, 2)) * scale + [0.0, 1.0]
    return solution, objective, measures


def _assert_same_error(ours, theirs, exc=ValueError):
    with pytest.raises(exc) as ours_err:
        ours()
    with pytest.raises(exc) as theirs_err:
        theirs()
    assert str(ours_err.value) == str(theirs_err.value)
    return str(ours_err.value)


def _assert_dict_equal(a, b):
    assert list(a) == list(b)
    for key in b:
        np.testing.assert_array_equal(a[key], b[key])
        assert np.asarray(a[key]).dtype == np.asarray(b[key]).dtype, key


def _assert_stats_equal(a, b):
    for name in ["num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        x, y = getattr(a, name), getattr(b, name)
        if y is None:
            assert x is None, name
            continue
        assert x == y, name
        assert np.asarray(x).dtype == np.asarray(y).dtype, name
        assert type(x) is type(y), name
    assert isinstance(a.num_elites, int)


def _assert_archives_equal(ours, theirs):
    _assert_dict_equal(ours.data(), theirs.data())
    _assert_stats_equal(ours.stats, theirs.stats)
    assert len(ours) == len(theirs)
    assert ours.empty == theirs.empty
    for a, b in zip(ours.boundaries, theirs.boundaries):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    for name in ["lower_bounds", "upper_bounds", "interval_size"]:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype
    if theirs.best_elite is None:
        assert ours.best_elite is None
    else:
        _assert_dict_equal(ours.best_elite, theirs.best_elite)


def _assert_retrieve_equal(ours, theirs, measures):
    ours_occ, ours_data = ours.retrieve(measures)
    theirs_occ, theirs_data = theirs.retrieve(measures)
    np.testing.assert_array_equal(ours_occ, theirs_occ)
    _assert_dict_equal(ours_data, theirs_data)


# =====================================================================================
# Construction and properties.
# =====================================================================================
def test_properties_match_pyribs():
    ours, theirs = _pair(epsilon=1e-4, qd_score_offset=-1.0, remap_frequency=7, buffer_capacity=30)
    np.testing.assert_array_equal(ours.dims, theirs.dims)
    assert ours.dims.dtype == theirs.dims.dtype
    assert ours.cells == theirs.cells == 20
    for name in ["epsilon", "qd_score_offset"]:
        value = getattr(ours, name)
        assert np.ndim(value) == 0
        assert value == getattr(theirs, name)
        assert value.dtype == getattr(theirs, name).dtype
    assert ours.remap_frequency == theirs.remap_frequency == 7
    assert ours.buffer_capacity == theirs.buffer_capacity == 30
    assert ours.field_list == theirs.field_list == ["solution", "objective", "measures", "index"]
    assert ours.dtypes == theirs.dtypes
    assert ours.solution_dim == theirs.solution_dim == 3
    assert ours.measure_dim == theirs.measure_dim == 2
    assert ours.objective_dim == ()
    _assert_archives_equal(ours, theirs)


def test_defaults():
    archive = SlidingBoundariesArchive(**_kwargs())
    assert archive.remap_frequency == 100
    assert archive.buffer_capacity == 1000
    assert archive.epsilon == pytest.approx(1e-6)
    assert archive.qd_score_offset == 0.0
    assert archive.dtypes["measures"] == np.float64
    assert [len(b) for b in archive.boundaries] == [5, 6]


def test_dims_ranges_length_mismatch():
    kwargs = _kwargs(ranges=[(-1, 1)])
    _assert_same_error(
        lambda: SlidingBoundariesArchive(**kwargs),
        lambda: ribs.archives.SlidingBoundariesArchive(**kwargs),
    )


@pytest.mark.parametrize("name", ["solution", "objective", "measures", "index"])
def test_reserved_extra_fields(name):
    kwargs = _kwargs(extra_fields={name: ((), np.float64)})
    with pytest.raises(ValueError) as err:
        SlidingBoundariesArchive(**kwargs)
    # The set is printed, so its order is arbitrary; compare its contents.
    prefix, names = str(err.value).split(": ", 1)
    assert prefix == "The following names are not allowed in extra_fields"
    assert eval(names) == {"solution", "objective", "measures", "index"}
    with pytest.raises(ValueError, match="^The following names are not allowed"):
        ribs.archives.SlidingBoundariesArchive(**kwargs)


def test_threshold_is_not_reserved():
    archive = SlidingBoundariesArchive(**_kwargs(extra_fields={"threshold": ((), np.float64)}))
    assert archive.field_list == ["solution", "objective", "measures", "threshold", "index"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": np.float32, "solution_dtype": np.float32},
        {"dtype": {"solution": np.float32}},
    ],
)
def test_dtype_errors(kwargs):
    kwargs = _kwargs(**kwargs)
    _assert_same_error(
        lambda: SlidingBoundariesArchive(**kwargs),
        lambda: ribs.archives.SlidingBoundariesArchive(**kwargs),
    )


@pytest.mark.parametrize(
    "kwargs", [{"dtype": np.float32}, {"solution_dtype": np.float32, "measures_dtype": np.float32}]
)
def test_dtypes_match_pyribs(kwargs):
    ours, theirs = _pair(**kwargs)
    assert ours.dtypes == theirs.dtypes
    _assert_archives_equal(ours, theirs)


def test_keyword_only():
    with pytest.raises(TypeError):
        SlidingBoundariesArchive(3, DIMS, RANGES)


# =====================================================================================
# Indexing.
# =====================================================================================
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_index_of_matches_pyribs(dtype):
    ours, theirs = _pair(dtype=dtype)
    _, _, measures = _random_batch(np.random.default_rng(0), 200, scale=2.0)
    measures = np.concatenate([measures, [[-1, 0], [1, 2], [0, 1], [0.5, 0.4]]])
    result = ours.index_of(measures)
    np.testing.assert_array_equal(result, theirs.index_of(measures))
    assert result.dtype == np.int32
    assert ours.index_of_single([1, 2]) == theirs.index_of_single([1, 2]) == 19


def test_index_of_errors():
    ours, theirs = _pair()
    _assert_same_error(lambda: ours.index_of([[1, 2, 3]]), lambda: theirs.index_of([[1, 2, 3]]))
    _assert_same_error(lambda: ours.index_of([[np.nan, 0]]), lambda: theirs.index_of([[np.nan, 0]]))
    _assert_same_error(lambda: ours.index_of_single([1]), lambda: theirs.index_of_single([1]))
    _assert_same_error(
        lambda: ours.index_of_single([np.inf, 1]), lambda: theirs.index_of_single([np.inf, 1])
    )


def test_grid_int_index_conversions():
    ours, theirs = _pair()
    ints = np.arange(20)
    grid = ours.int_to_grid_index(ints)
    np.testing.assert_array_equal(grid, theirs.int_to_grid_index(ints))
    np.testing.assert_array_equal(ours.grid_to_int_index(grid), theirs.grid_to_int_index(grid))
    np.testing.assert_array_equal(ours.grid_to_int_index(grid), ints)


# =====================================================================================
# Insertion: differential tests against pyribs.
# =====================================================================================
SCENARIOS = [
    # (remap_frequency, buffer_capacity, batch sizes)
    (10, 25, [3, 7, 1, 12, 30, 4, 10]),  # batches straddle remaps
    (4, 3, [5, 9, 2, 6]),  # buffer smaller than the remap period
    (50, 200, [20, 20, 20]),  # no remap in the first calls
    (7, 1000, [13, 13, 13, 13, 13]),  # buffer never full
    (3, 8, [40, 2, 1]),  # many remaps in one call
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scenario", range(len(SCENARIOS)))
def test_add_matches_pyribs(dtype, scenario):
    remap_frequency, buffer_capacity, sizes = SCENARIOS[scenario]
    ours, theirs = _pair(
        dtype=dtype,
        qd_score_offset=-2.0,
        remap_frequency=remap_frequency,
        buffer_capacity=buffer_capacity,
    )
    rng = np.random.default_rng(100 + scenario)
    for step, size in enumerate(sizes):
        batch = _random_batch(rng, size, integer_objectives=step % 2 == 0)
        ours_info, theirs_info = ours.add(*batch), theirs.add(*batch)
        _assert_dict_equal(ours_info, theirs_info)
        _assert_archives_equal(ours, theirs)
        _assert_retrieve_equal(ours, theirs, _random_batch(rng, 8)[2])


def test_add_single_matches_pyribs():
    ours, theirs = _pair(remap_frequency=6, buffer_capacity=10)
    rng = np.random.default_rng(7)
    for step in range(4):
        solution, objective, measures = _random_batch(rng, 5, integer_objectives=True)
        if step % 2:
            _assert_dict_equal(
                ours.add(solution, objective, measures), theirs.add(solution, objective, measures)
            )
            continue
        for args in zip(solution, objective, measures):
            ours_info, theirs_info = ours.add_single(*args), theirs.add_single(*args)
            assert ours_info["status"] == theirs_info["status"]
            assert isinstance(ours_info["status"], np.int32)
            assert ours_info["value"] == theirs_info["value"]
            assert type(ours_info["value"]) is type(theirs_info["value"])
        _assert_archives_equal(ours, theirs)
    _assert_archives_equal(ours, theirs)


def test_extra_fields_and_multi_dim_solutions_match_pyribs():
    extra = {"tag": ((), np.int32), "vec": ((2,), np.float32)}
    ours, theirs = _pair(
        solution_dim=(2, 2), extra_fields=extra, remap_frequency=5, buffer_capacity=9
    )
    rng = np.random.default_rng(8)
    for size in [4, 6, 3]:
        batch = _random_batch(rng, size, solution_dim=(2, 2))
        fields = {"tag": rng.integers(0, 9, size), "vec": rng.normal(size=(size, 2))}
        _assert_dict_equal(ours.add(*batch, **fields), theirs.add(*batch, **fields))
        _assert_archives_equal(ours, theirs)
    assert ours.data("vec").dtype == np.float32


def test_missing_extra_field():
    ours, theirs = _pair(extra_fields={"tag": ((), np.int32)})
    batch = (np.zeros((1, 3)), [1.0], [[0.0, 0.0]])
    # Same message as pyribs (raised by its ArrayStore on the first insertion).
    _assert_same_error(lambda: ours.add(*batch), lambda: theirs.add(*batch))
    _assert_same_error(
        lambda: ours.add(*batch, tag=[1], other=[2]), lambda: theirs.add(*batch, tag=[1], other=[2])
    )
    # Nothing was buffered or inserted.
    assert ours.empty
    assert ours.add(*batch, tag=[3])["status"][0] == 2


def test_add_validation_errors_match_pyribs():
    ours, theirs = _pair()
    bad_calls = [
        (np.zeros((2, 4)), [1.0, 2.0], np.zeros((2, 2))),
        (np.zeros((2, 3)), [1.0], np.zeros((2, 2))),
        (np.zeros((2, 3)), [1.0, np.nan], np.zeros((2, 2))),
        (np.zeros((2, 3)), [1.0, 2.0], np.zeros((2, 3))),
        (np.zeros((2, 3)), [1.0, 2.0], [[0.0, np.inf], [0.0, 0.0]]),
    ]
    for args in bad_calls:
        _assert_same_error(lambda args=args: ours.add(*args), lambda args=args: theirs.add(*args))
    _assert_same_error(
        lambda: ours.add_single(np.zeros(3), 1.0, [0.0]),
        lambda: theirs.add_single(np.zeros(3), 1.0, [0.0]),
    )
    _assert_same_error(
        lambda: ours.add_single(np.zeros(2), 1.0, [0.0, 0.0]),
        lambda: theirs.add_single(np.zeros(2), 1.0, [0.0, 0.0]),
    )
    assert ours.empty


def test_add_is_sequential():
    archive = SlidingBoundariesArchive(**_kwargs())
    result = archive.add(np.zeros((4, 3)), [1.0, 3.0, 2.0, 3.0], np.zeros((4, 2)))
    # Unlike GridArchive, later solutions see the earlier ones of the same batch.
    np.testing.assert_array_equal(result["status"], [2, 1, 0, 0])
    np.testing.assert_array_equal(result["value"], [1.0, 2.0, -1.0, 0.0])
    assert len(archive) == 1
    assert archive.data("objective")[0] == 3.0
    assert archive.stats.qd_score == 3.0


def test_add_empty_batch():
    # pyribs 0.12 returns {} here; ribsax returns empty arrays.
    archive = SlidingBoundariesArchive(**_kwargs(dtype=np.float32))
    result = archive.add(np.zeros((0, 3)), np.zeros(0), np.zeros((0, 2)))
    assert result["status"].shape == (0,) and result["status"].dtype == np.int32
    assert result["value"].shape == (0,) and result["value"].dtype == np.float32
    assert archive.empty


# =====================================================================================
# Remapping, by hand.
# =====================================================================================
def test_remap_boundaries_by_hand():
    archive = SlidingBoundariesArchive(
        solution_dim=1, dims=[4], ranges=[(0, 10)], remap_frequency=8, buffer_capacity=8
    )
    measures = np.array([[7.0], [1.0], [3.0], [2.0], [9.0], [4.0], [8.0], [5.0]])
    archive.add(np.zeros((7, 1)), np.arange(7.0), measures[:7])
    np.testing.assert_array_equal(archive.boundaries[0], [0, 2.5, 5, 7.5, 10])
    archive.add_single([0.0], 7.0, measures[7])
    # Sorted buffer [1 2 3 4 5 7 8 9]; boundary j = sorted[j * 8 // 4], last = max.
    np.testing.assert_array_equal(archive.boundaries[0], [1, 3, 5, 8, 9])
    np.testing.assert_array_equal(archive.lower_bounds, [1.0])
    np.testing.assert_array_equal(archive.upper_bounds, [9.0])
    np.testing.assert_array_equal(archive.interval_size, [8.0])
    # Cells after the remap (bounds were still [0, 10] while re-adding).
    np.testing.assert_array_equal(archive.index_of(measures), [2, 0, 1, 0, 3, 1, 3, 2])


def test_remap_uses_stale_bounds_quirk():
    # Measures far outside the initial range: during the remap the measures are
    # still clipped to the old upper bound, so everything collapses into cell 0.
    ours, theirs = _pair(
        solution_dim=1, dims=[4], ranges=[(0, 1)], remap_frequency=4, buffer_capacity=10
    )
    batch = (np.zeros((4, 1)), [1.0, 2.0, 3.0, 4.0], [[5.0], [5.1], [5.2], [5.3]])
    ours_info, theirs_info = ours.add(*batch), theirs.add(*batch)
    _assert_dict_equal(ours_info, theirs_info)
    np.testing.assert_array_equal(ours_info["status"], [2, 1, 1, 1])
    np.testing.assert_array_equal(ours_info["value"], [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ours.data("index"), [0])
    np.testing.assert_array_equal(ours.boundaries[0], [5.0, 5.1, 5.2, 5.3, 5.3])
    np.testing.assert_array_equal(ours.lower_bounds, [5.0])
    _assert_archives_equal(ours, theirs)


def test_single_solution_remap():
    # pyribs 0.12 crashes in np.concatenate when the buffer holds one solution at a
    # remap; ribsax re-adds it. Hand-computed with pyribs' rules.
    archive = SlidingBoundariesArchive(
        solution_dim=1, dims=[2], ranges=[(0, 1)], remap_frequency=1, buffer_capacity=1
    )
    first = archive.add_single([0.0], 1.0, [0.3])
    assert (first["status"], first["value"]) == (2, 1.0)
    np.testing.assert_array_equal(archive.boundaries[0], [0.3, 0.3, 0.3])
    np.testing.assert_array_equal(archive.data("index"), [1])
    second = archive.add_single([0.0], 0.5, [0.9])
    # The elite (clipped to the stale bounds [0.3, 0.3]) moves to cell 0, where it
    # beats the new solution.
    assert (second["status"], second["value"]) == (0, -0.5)
    np.testing.assert_array_equal(archive.data("index"), [0])
    np.testing.assert_array_equal(archive.data("objective"), [1.0])


def test_sequential_map_elites_kernel_matches_loop():
    rng = np.random.default_rng(9)
    for _ in range(20):
        cells = rng.integers(0, 6, size=int(rng.integers(1, 30)))
        objective = rng.integers(-3, 4, size=len(cells)).astype(np.float64)
        occupied = rng.random(6) < 0.5
        elite = rng.integers(-3, 4, size=6).astype(np.float64)
        out = sequential_map_elites(cells, objective, occupied, elite)
        occ, cur_obj, winner, order = occupied.copy(), elite.copy(), {}, []
        for i, (cell, obj) in enumerate(zip(cells, objective)):
            cur = cur_obj[cell] if occ[cell] else 0.0
            assert out["cur"][i] == cur
            if not occ[cell] or obj > cur_obj[cell]:
                assert out["status"][i] == (1 if occ[cell] else 2)
                if not occ[cell]:
                    order.append(cell)
                occ[cell], cur_obj[cell], winner[cell] = True, obj, i
            else:
                assert out["status"][i] == 0
        assert sorted(out["winners"]) == sorted(winner.values())
        np.testing.assert_array_equal(out["new_order"], order)


# =====================================================================================
# Reading, stats, iteration, pickling.
# =====================================================================================
def _filled_pair(**kwargs):
    kwargs.setdefault("remap_frequency", 9)
    kwargs.setdefault("buffer_capacity", 12)
    ours, theirs = _pair(**kwargs)
    batch = _random_batch(np.random.default_rng(5), 22)
    ours.add(*batch)
    theirs.add(*batch)
    return ours, theirs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stats_dtypes(dtype):
    ours, theirs = _filled_pair(dtype=dtype, qd_score_offset=-1.5)
    _assert_stats_equal(ours.stats, theirs.stats)
    for name in ["coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        assert np.asarray(getattr(ours.stats, name)).dtype == dtype


def test_retrieve_single_matches_pyribs():
    ours, theirs = _filled_pair()
    for measures in ([0.0, 1.0], [5.0, -5.0], ours.data("measures")[0]):
        ours_occ, ours_data = ours.retrieve_single(measures)
        theirs_occ, theirs_data = theirs.retrieve_single(measures)
        assert ours_occ == theirs_occ
        _assert_dict_equal(ours_data, theirs_data)
    _assert_same_error(lambda: ours.retrieve_single([0.0]), lambda: theirs.retrieve_single([0.0]))
    _assert_same_error(
        lambda: ours.retrieve_single([np.nan, 0.0]), lambda: theirs.retrieve_single([np.nan, 0.0])
    )
    _assert_same_error(
        lambda: ours.retrieve([[np.nan, 0.0]]), lambda: theirs.retrieve([[np.nan, 0.0]])
    )


def test_retrieve_sentinels():
    archive = SlidingBoundariesArchive(**_kwargs(extra_fields={"tag": ((), np.int32)}))
    archive.add([[1.0, 2.0, 3.0]], [1.0], [[-1.0, 0.0]], tag=[4])
    occupied, data = archive.retrieve([[-1.0, 0.0], [1.0, 2.0]])
    np.testing.assert_array_equal(occupied, [True, False])
    np.testing.assert_array_equal(data["index"], [0, -1])
    np.testing.assert_array_equal(data["tag"], [4, 0])
    assert np.isnan(data["objective"][1]) and np.isnan(data["solution"][1]).all()


@pytest.mark.parametrize("return_type", ["dict", "tuple", "pandas"])
def test_data_matches_pyribs(return_type):
    ours, theirs = _filled_pair()
    a, b = ours.data(return_type=return_type), theirs.data(return_type=return_type)
    if return_type == "pandas":
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    elif return_type == "tuple":
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    else:
        _assert_dict_equal(a, b)
    np.testing.assert_array_equal(ours.data("objective"), theirs.data("objective"))


@pytest.mark.parametrize("replace", [True, False])
def test_sample_elites_matches_pyribs(replace):
    ours, theirs = _filled_pair(seed=3)
    _assert_dict_equal(
        ours.sample_elites(4, replace=replace), theirs.sample_elites(4, replace=replace)
    )


def test_sample_elites_errors():
    ours, theirs = _pair()
    _assert_same_error(lambda: ours.sample_elites(1), lambda: theirs.sample_elites(1), IndexError)
    ours, theirs = _filled_pair()
    _assert_same_error(
        lambda: ours.sample_elites(1000, replace=False),
        lambda: theirs.sample_elites(1000, replace=False),
    )


def test_iteration():
    ours, theirs = _filled_pair()
    entries = list(ours)
    assert len(entries) == len(theirs)
    for a, b in zip(entries, theirs):
        assert list(a) == list(b) and list(a)[0] == "index"
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])


def test_mutation_during_iteration():
    ours, _ = _filled_pair(remap_frequency=1000)
    with pytest.raises(RuntimeError, match="^ArrayStore was modified with add"):
        for _ in ours:
            ours.add(np.zeros((1, 3)), [100.0], [[0.0, 1.0]])
    with pytest.raises(RuntimeError):
        for _ in ours:
            ours.clear()
    ours, _ = _filled_pair(remap_frequency=1000)
    seen = []
    for elite in ours:
        # Inserts nothing and does not remap, so the iteration goes on.
        ours.add(np.zeros((1, 3)), [-100.0], [ours.data("measures")[0]])
        seen.append(int(elite["index"]))
    np.testing.assert_array_equal(seen, ours.data("index"))


def test_clear_keeps_buffer_and_counter():
    ours, theirs = _filled_pair()
    ours.clear()
    theirs.clear()
    _assert_archives_equal(ours, theirs)
    assert ours.empty and ours.best_elite is None
    rng = np.random.default_rng(12)
    for size in [5, 11]:
        batch = _random_batch(rng, size)
        _assert_dict_equal(ours.add(*batch), theirs.add(*batch))
        _assert_archives_equal(ours, theirs)


def test_pickle_round_trip():
    ours, theirs = _pair(
        seed=2, extra_fields={"tag": ((), np.int32)}, remap_frequency=9, buffer_capacity=12
    )
    batch = _random_batch(np.random.default_rng(5), 22)
    ours.add(*batch, tag=np.arange(22))
    theirs.add(*batch, tag=np.arange(22))
    clone = pickle.loads(pickle.dumps(ours))
    _assert_archives_equal(clone, theirs)
    rng = np.random.default_rng(13)
    for size in [4, 9]:
        batch = _random_batch(rng, size)
        tag = rng.integers(0, 5, size)
        info = clone.add(*batch, tag=tag)
        _assert_dict_equal(info, ours.add(*batch, tag=tag))
        _assert_dict_equal(info, theirs.add(*batch, tag=tag))
        _assert_archives_equal(clone, theirs)
        _assert_archives_equal(ours, theirs)
    _assert_dict_equal(clone.sample_elites(3), theirs.sample_elites(3))


def test_without_x64_matches_pyribs_float32():
    # JAX x64 is a process-wide switch, so this runs in a fresh interpreter.
    script = """
import numpy as np
import ribs.archives
from ribsax.archives import SlidingBoundariesArchive
kwargs = dict(solution_dim=2, dims=[3, 3], ranges=[(0, 1), (0, 1)], remap_frequency=5)
ours = SlidingBoundariesArchive(**kwargs)
theirs = ribs.archives.SlidingBoundariesArchive(**kwargs, dtype=np.float32)
assert ours.dtypes == theirs.dtypes
rng = np.random.default_rng(0)
batch = rng.normal(size=(12, 2)), rng.normal(size=12), rng.uniform(size=(12, 2))
a, b = ours.add(*batch), theirs.add(*batch)
assert (a["status"] == b["status"]).all() and (a["value"] == b["value"]).all()
assert a["value"].dtype == np.float32
for key, value in theirs.data().items():
    assert (ours.data(key) == value).all(), key
for name in ["num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max",
             "obj_mean"]:
    x, y = getattr(ours.stats, name), getattr(theirs.stats, name)
    assert x == y and np.asarray(x).dtype == np.asarray(y).dtype, name
try:
    SlidingBoundariesArchive(**kwargs, dtype=np.float64)
except ValueError as err:
    assert "requires JAX 64-bit mode" in str(err)
else:
    raise AssertionError("float64 without x64 was accepted")
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
