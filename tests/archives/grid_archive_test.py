"""Tests for GridArchive.

Most behaviours are checked against hand-computed expectations; where pyribs' output
is the reference (error messages, property values, data() layouts, samples), the same
calls are made on ``ribs.archives.GridArchive`` and compared.

Shapes are kept small and shared (dims [10, 20], solution_dim 3, batches of 3) so that
the jitted add kernel compiles only a few times for the whole module.
"""

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import ArchiveDataFrame, GridArchive

DIMS = [10, 20]
RANGES = [(-1, 1), (-2, 2)]


def _kwargs(**kwargs):
    kwargs.setdefault("solution_dim", 3)
    kwargs.setdefault("dims", DIMS)
    kwargs.setdefault("ranges", RANGES)
    return kwargs


def _pair(**kwargs):
    """A ribsax archive and a ribs archive built with the same arguments."""
    kwargs = _kwargs(**kwargs)
    return GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)


def _archive(**kwargs):
    return GridArchive(**_kwargs(**kwargs))


def _cell_measures(cells):
    """Measures at the centre of the given flat cells of the [10, 20] grid."""
    cells = np.asarray(cells)
    i, j = np.unravel_index(cells, DIMS)
    return np.stack([-1 + (i + 0.5) * 0.2, -2 + (j + 0.5) * 0.2], axis=1)


def _batch(objective, cells, solution=None):
    objective = np.asarray(objective, dtype=np.float64)
    if solution is None:
        solution = np.arange(len(objective) * 3, dtype=np.float64).reshape(-1, 3)
    return np.asarray(solution), objective, _cell_measures(cells)


def _assert_same_error(ours, theirs, exc=ValueError):
    with pytest.raises(exc) as ours_err:
        ours()
    with pytest.raises(exc) as theirs_err:
        theirs()
    assert str(ours_err.value) == str(theirs_err.value)
    return str(ours_err.value)


def _assert_data_equal(a, b):
    assert type(a).__name__ == type(b).__name__
    if isinstance(b, pd.DataFrame):
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    elif isinstance(b, (dict, tuple)):
        assert len(a) == len(b)
        keys = list(b) if isinstance(b, dict) else range(len(b))
        if isinstance(b, dict):
            assert list(a) == list(b)
        for key in keys:
            np.testing.assert_array_equal(a[key], b[key])
            assert np.asarray(a[key]).dtype == np.asarray(b[key]).dtype
    else:
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


# =====================================================================================
# Construction and properties.
# =====================================================================================
def test_properties_match_pyribs():
    ours, theirs = _pair(epsilon=1e-5, qd_score_offset=-3.0)
    np.testing.assert_array_equal(ours.dims, theirs.dims)
    assert ours.dims.dtype == np.int32
    assert ours.cells == theirs.cells == 200
    for name in ["lower_bounds", "upper_bounds", "interval_size"]:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype
    assert len(ours.boundaries) == 2
    for a, b in zip(ours.boundaries, theirs.boundaries):
        np.testing.assert_array_equal(a, b)
    for name in ["epsilon", "learning_rate", "threshold_min", "qd_score_offset"]:
        value = getattr(ours, name)
        assert np.ndim(value) == 0, name
        assert value == getattr(theirs, name), name
        assert value.dtype == getattr(theirs, name).dtype, name
    assert (
        ours.field_list
        == theirs.field_list
        == ["solution", "objective", "measures", "threshold", "index"]
    )
    assert ours.dtypes == theirs.dtypes
    assert ours.dtypes["index"] is np.int32
    assert ours.solution_dim == theirs.solution_dim == 3
    assert ours.objective_dim == theirs.objective_dim == ()
    assert ours.measure_dim == theirs.measure_dim == 2
    assert ours.empty and len(ours) == 0


def test_defaults():
    archive = _archive()
    assert archive.learning_rate == 1.0
    assert archive.threshold_min == -np.inf
    assert archive.epsilon == pytest.approx(1e-6)
    assert archive.qd_score_offset == 0.0
    assert archive.dtypes["solution"] == np.float64  # x64 is on in the test suite.


def test_keyword_only():
    with pytest.raises(TypeError):
        GridArchive(3, DIMS, RANGES)


def test_multi_dim_solution():
    archive = _archive(solution_dim=(2, 3))
    assert archive.solution_dim == (2, 3)
    solution = np.arange(18.0).reshape(3, 2, 3)
    archive.add(solution, [1.0, 2.0, 3.0], _cell_measures([0, 1, 2]))
    np.testing.assert_array_equal(archive.data("solution"), solution)
    assert archive.best_elite["solution"].shape == (2, 3)
    with pytest.raises(ValueError, match="cannot convert fields with shape >1D"):
        archive.data(return_type="pandas")


def test_scalar_solution():
    archive = _archive(solution_dim=())
    archive.add(np.array([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0], _cell_measures([0, 1, 2]))
    np.testing.assert_array_equal(archive.data("solution"), [1.0, 2.0, 3.0])
    assert list(archive.data(return_type="pandas").columns)[0] == "solution"


def test_dims_ranges_length_mismatch():
    msg = _assert_same_error(
        lambda: GridArchive(solution_dim=3, dims=[10, 20], ranges=[(-1, 1)]),
        lambda: ribs.archives.GridArchive(solution_dim=3, dims=[10, 20], ranges=[(-1, 1)]),
    )
    assert msg == "dims (length 2) and ranges (length 1) must be the same length"


def test_threshold_min_without_learning_rate():
    msg = _assert_same_error(
        lambda: _archive(threshold_min=0.0),
        lambda: ribs.archives.GridArchive(**_kwargs(threshold_min=0.0)),
    )
    assert msg.startswith("threshold_min was set without setting learning_rate.")


def test_learning_rate_without_threshold_min():
    msg = _assert_same_error(
        lambda: _archive(learning_rate=0.5),
        lambda: ribs.archives.GridArchive(**_kwargs(learning_rate=0.5)),
    )
    assert msg == "threshold_min can only be -np.inf if learning_rate is 1.0"


def test_cma_mae_settings_stored():
    archive = _archive(learning_rate=0.1, threshold_min=-1.0, dtype=np.float32)
    assert archive.learning_rate == np.float32(0.1)
    assert archive.learning_rate.dtype == np.float32
    assert archive.threshold_min == -1.0
    assert archive.threshold_min.dtype == np.float32


# ----------------------------------------------------------------------- dtypes
@pytest.mark.parametrize(
    "dtype, expected",
    [
        ("f", np.float32),
        ("d", np.float64),
        (np.float32, np.float32),
        (np.float64, np.float64),
        (None, np.float64),
    ],
)
def test_dtype_shortcut(dtype, expected):
    archive = _archive(dtype=dtype)
    for field in ["solution", "objective", "measures", "threshold"]:
        assert archive.dtypes[field] == expected
    assert archive.dtypes["index"] is np.int32
    result = archive.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]))
    assert result["value"].dtype == expected
    assert archive.data("objective").dtype == expected


def test_individual_dtypes():
    ours, theirs = _pair(solution_dtype=np.float32, measures_dtype="f")
    assert ours.dtypes == theirs.dtypes
    assert ours.dtypes["solution"] == np.float32
    assert ours.dtypes["objective"] == np.float64
    assert ours.dtypes["measures"] == np.float32
    assert ours.dtypes["threshold"] == np.float64
    assert ours.lower_bounds.dtype == np.float32


def test_objective_dtype_sets_threshold_dtype():
    archive = _archive(objective_dtype=np.float32)
    assert archive.dtypes["threshold"] == np.float32
    assert archive.dtypes["solution"] == np.float64


@pytest.mark.parametrize("individual", ["solution_dtype", "objective_dtype", "measures_dtype"])
def test_dtype_and_individual_dtypes_conflict(individual):
    kwargs = {"dtype": np.float32, individual: np.float32}
    msg = _assert_same_error(
        lambda: _archive(**kwargs), lambda: ribs.archives.GridArchive(**_kwargs(**kwargs))
    )
    assert msg.startswith("dtype cannot be used at the same time as ")


def test_dict_dtype_rejected():
    kwargs = {"dtype": {"solution": np.float32, "objective": np.float32, "measures": np.float32}}
    msg = _assert_same_error(
        lambda: _archive(**kwargs), lambda: ribs.archives.GridArchive(**_kwargs(**kwargs))
    )
    assert msg.startswith("Passing a dict as `dtype` is deprecated in pyribs 0.9.0.")


def test_object_solutions():
    archive = _archive(solution_dim=(), solution_dtype=object)
    assert archive.dtypes["solution"] == np.dtype(object)
    solution = np.array(["alpha", "beta", "gamma"], dtype=object)
    archive.add(solution, [1.0, 2.0, 3.0], _cell_measures([5, 4, 5]))
    data = archive.data()
    assert data["solution"].dtype == object
    assert list(data["solution"]) == ["beta", "gamma"]
    assert archive.best_elite["solution"] == "gamma"
    occupied, retrieved = archive.retrieve(_cell_measures([5, 7]))
    np.testing.assert_array_equal(occupied, [True, False])
    assert retrieved["solution"][0] == "gamma"
    assert retrieved["solution"][1] is None
    archive.add_single("delta", 10.0, _cell_measures([4])[0])
    assert list(archive.data("solution")) == ["delta", "gamma"]
    assert archive.best_elite["solution"] == "delta"
    assert [e["solution"] for e in archive] == ["delta", "gamma"]
    sample = archive.sample_elites(4)
    assert set(sample["solution"]) <= {"delta", "gamma"}


# ----------------------------------------------------------------- extra fields
@pytest.mark.parametrize("name", ["solution", "objective", "measures", "threshold", "index"])
def test_reserved_extra_fields(name):
    kwargs = {"extra_fields": {name: ((), np.float32)}}
    with pytest.raises(ValueError) as err:
        _archive(**kwargs)
    assert str(err.value).startswith("The following names are not allowed in extra_fields: ")
    assert eval(str(err.value).split(": ", 1)[1]) == {
        "solution",
        "objective",
        "measures",
        "threshold",
        "index",
    }


def test_extra_field_not_identifier():
    kwargs = {"extra_fields": {"bad name": ((), np.float32)}}
    msg = _assert_same_error(
        lambda: _archive(**kwargs), lambda: ribs.archives.GridArchive(**_kwargs(**kwargs))
    )
    assert msg == "Field names must be valid identifiers: `bad name`"


EXTRA = {"foo": ((), np.int32), "bar": ((2,), np.float32)}


def _extra_values(offset=0):
    return {
        "foo": np.arange(3, dtype=np.int32) + offset,
        "bar": np.arange(6, dtype=np.float32).reshape(3, 2) + offset,
    }


def test_extra_fields_stored():
    ours, theirs = _pair(extra_fields=EXTRA)
    assert (
        ours.field_list
        == theirs.field_list
        == ["solution", "objective", "measures", "threshold", "foo", "bar", "index"]
    )
    assert ours.dtypes == theirs.dtypes
    for archive in (ours, theirs):
        archive.add(*_batch([1.0, 2.0, 3.0], [4, 2, 4]), **_extra_values())
    _assert_data_equal(ours.data(), theirs.data())
    _assert_data_equal(ours.data(return_type="pandas"), theirs.data(return_type="pandas"))
    assert list(ours.data(return_type="pandas").columns)[-4:] == ["foo", "bar_0", "bar_1", "index"]
    assert ours.best_elite["foo"] == 2
    np.testing.assert_array_equal(ours.best_elite["bar"], [4, 5])
    ours.add_single(np.zeros(3), 5.0, _cell_measures([2])[0], foo=7, bar=[8.0, 9.0])
    _, elite = ours.retrieve_single(_cell_measures([2])[0])
    assert elite["foo"] == 7
    np.testing.assert_array_equal(elite["bar"], [8, 9])


def test_missing_extra_field_only_fails_on_insertion():
    archive = _archive(extra_fields=EXTRA)
    archive.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]), **_extra_values())
    # Nothing here beats the elites, so the missing fields are never needed.
    result = archive.add(*_batch([0.5, 2.0, -1.0], [0, 1, 2]))
    np.testing.assert_array_equal(result["status"], [0, 0, 0])
    np.testing.assert_allclose(result["value"], [-0.5, 0.0, -4.0])
    assert len(archive) == 3
    result = archive.add_single(np.zeros(3), 0.0, _cell_measures([0])[0])
    assert result["status"] == 0 and result["value"] == -1.0
    # As soon as one solution would be inserted, the missing fields are an error.
    with pytest.raises(
        ValueError,
        match=r"^`data` has keys .* but should have the "
        r"same keys as this ArrayStore",
    ):
        archive.add(*_batch([0.5, 2.5, -1.0], [0, 1, 2]))
    with pytest.raises(
        ValueError,
        match=r"^`data` has keys .* but should have the "
        r"same keys as this ArrayStore",
    ):
        archive.add_single(np.zeros(3), 10.0, _cell_measures([0])[0])
    with pytest.raises(ValueError, match="^`data` has keys"):
        archive.add(*_batch([0.5, 2.5, -1.0], [0, 1, 2]), foo=np.zeros(3, np.int32))
    # The failed calls did not modify the archive.
    np.testing.assert_array_equal(archive.data("objective"), [1.0, 2.0, 3.0])
    assert archive.stats.qd_score == 6.0


def test_unknown_field_fails_on_insertion():
    archive = _archive()
    result = archive.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]))
    assert (result["status"] == 2).all()
    # Not inserted: unknown fields are ignored.
    result = archive.add(*_batch([0.0, 0.0, 0.0], [0, 1, 2]), mystery=np.zeros(3))
    np.testing.assert_array_equal(result["status"], [0, 0, 0])
    with pytest.raises(ValueError, match="^`data` has keys"):
        archive.add(*_batch([5.0, 0.0, 0.0], [0, 1, 2]), mystery=np.zeros(3))


# =====================================================================================
# add: statuses and values against the pre-call archive.
# =====================================================================================
def test_add_statuses_and_values():
    archive = _archive()
    result = archive.add(*_batch([1.0, -2.0, 3.0], [10, 20, 30]))
    assert result["status"].dtype == np.int32
    assert result["value"].dtype == np.float64
    np.testing.assert_array_equal(result["status"], [2, 2, 2])
    np.testing.assert_array_equal(result["value"], [1.0, -2.0, 3.0])
    # Improve, equal (not added, strict >), worse (not added).
    result = archive.add(*_batch([1.5, -2.0, 1.0], [10, 20, 30]))
    np.testing.assert_array_equal(result["status"], [1, 0, 0])
    np.testing.assert_allclose(result["value"], [0.5, 0.0, -2.0])
    np.testing.assert_array_equal(archive.data("objective"), [1.5, -2.0, 3.0])


def test_same_empty_cell_both_new():
    archive = _archive()
    result = archive.add(*_batch([1.0, 2.0, 0.5], [7, 7, 7]))
    np.testing.assert_array_equal(result["status"], [2, 2, 2])
    np.testing.assert_array_equal(result["value"], [1.0, 2.0, 0.5])
    assert len(archive) == 1
    _, elite = archive.retrieve_single(_cell_measures([7])[0])
    assert elite["objective"] == 2.0
    np.testing.assert_array_equal(elite["solution"], [3.0, 4.0, 5.0])


def test_same_occupied_cell_statuses_against_pre_call_archive():
    archive = _archive()
    archive.add(*_batch([1.0, 1.0, 1.0], [7, 8, 9]))
    result = archive.add(*_batch([3.0, 2.0, 0.0], [7, 7, 7]))
    np.testing.assert_array_equal(result["status"], [1, 1, 0])
    np.testing.assert_array_equal(result["value"], [2.0, 1.0, -1.0])
    _, elite = archive.retrieve_single(_cell_measures([7])[0])
    assert elite["objective"] == 3.0
    np.testing.assert_array_equal(elite["solution"], [0.0, 1.0, 2.0])


@pytest.mark.parametrize("occupied_before", [False, True])
def test_ties_go_to_first_in_batch(occupied_before):
    archive = _archive()
    if occupied_before:
        archive.add(*_batch([0.0, 0.0, 0.0], [3, 4, 5]))
    solution = np.array([[1.0, 1, 1], [2, 2, 2], [3, 3, 3]])
    result = archive.add(*_batch([5.0, 7.0, 7.0], [3, 3, 3], solution=solution))
    np.testing.assert_array_equal(result["status"], [1, 1, 1] if occupied_before else [2, 2, 2])
    _, elite = archive.retrieve_single(_cell_measures([3])[0])
    np.testing.assert_array_equal(elite["solution"], [2.0, 2.0, 2.0])
    assert elite["threshold"] == 7.0


def test_add_accepts_lists():
    archive = _archive()
    result = archive.add([[0.0, 0.0, 0.0]] * 3, [1, 2, 3], _cell_measures([0, 1, 2]).tolist())
    np.testing.assert_array_equal(result["status"], [2, 2, 2])
    assert archive.data("objective").dtype == np.float64


def test_add_nothing_inserted_leaves_archive():
    archive = _archive()
    archive.add(*_batch([5.0, 5.0, 5.0], [1, 2, 3]))
    before = archive.data()
    archive.add(*_batch([1.0, 2.0, 3.0], [1, 2, 3]))
    _assert_data_equal(archive.data(), before)


def test_add_empty_batch():
    ours, theirs = _filled_pair()
    iterator = iter(ours)
    next(iterator)
    empty = (np.zeros((0, 3)), np.zeros(0), np.zeros((0, 2)))
    result = ours.add(*empty)
    _assert_data_equal(result, theirs.add(*empty))
    assert result["status"].shape == (0,) and result["status"].dtype == np.int32
    next(iterator)  # Nothing was inserted, so iteration goes on.
    assert dataclasses.astuple(ours.stats) == dataclasses.astuple(theirs.stats)
    occupied, data = ours.retrieve(np.zeros((0, 2)))
    assert occupied.shape == (0,) and data["solution"].shape == (0, 3)


BAD_BATCHES = {
    "solution_shape": lambda: (np.zeros((3, 2)), np.zeros(3), np.zeros((3, 2))),
    "objective_none": lambda: (np.zeros((3, 3)), None, np.zeros((3, 2))),
    "objective_2d": lambda: (np.zeros((3, 3)), np.zeros((3, 1)), np.zeros((3, 2))),
    "objective_len": lambda: (np.zeros((3, 3)), np.zeros(2), np.zeros((3, 2))),
    "objective_nan": lambda: (np.zeros((3, 3)), [0.0, np.nan, 0.0], np.zeros((3, 2))),
    "objective_inf": lambda: (np.zeros((3, 3)), [0.0, np.inf, 0.0], np.zeros((3, 2))),
    "measures_shape": lambda: (np.zeros((3, 3)), np.zeros(3), np.zeros((3, 3))),
    "measures_len": lambda: (np.zeros((3, 3)), np.zeros(3), np.zeros((2, 2))),
    "measures_inf": lambda: (np.zeros((3, 3)), np.zeros(3), [[0, 0], [0, -np.inf], [0, 0]]),
}


@pytest.mark.parametrize("case", list(BAD_BATCHES))
def test_add_validation_errors(case):
    ours, theirs = _pair()
    _assert_same_error(
        lambda: ours.add(*BAD_BATCHES[case]()), lambda: theirs.add(*BAD_BATCHES[case]())
    )
    assert ours.empty


def test_add_validation_error_messages():
    archive = _archive()
    with pytest.raises(ValueError) as err:
        archive.add(np.zeros((1, 2)), np.zeros(1), np.zeros((1, 2)))
    assert str(err.value) == (
        "Expected solution to be an array with shape (batch_size, 3) (i.e. shape "
        "(batch_size, solution_dim)) but it had shape (1, 2)."
    )
    with pytest.raises(ValueError) as err:
        archive.add(np.zeros((1, 3)), np.zeros(2), np.zeros((1, 2)))
    assert str(err.value) == (
        "objective does not match the batch dimension of solution -- since solution "
        "has shape (1, ..), objective should have shape (1,), but it has shape (2,)."
    )
    with pytest.raises(ValueError, match=r"^All elements of objective must be finite"):
        archive.add(np.zeros((1, 3)), [np.nan], np.zeros((1, 2)))
    with pytest.raises(ValueError, match="^objective cannot be None$"):
        archive.add(np.zeros((1, 3)), None, np.zeros((1, 2)))


def test_extra_field_batch_length_error():
    ours, theirs = _pair(extra_fields={"foo": ((), np.float64)})
    _assert_same_error(
        lambda: ours.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]), foo=np.zeros(2)),
        lambda: theirs.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]), foo=np.zeros(2)),
    )


# =====================================================================================
# add_single.
# =====================================================================================
def test_add_single_statuses_and_values():
    archive = _archive()
    measures = _cell_measures([12])[0]
    result = archive.add_single([1.0, 2.0, 3.0], -1.5, measures)
    assert isinstance(result["status"], np.int32)
    assert result["status"] == 2
    assert result["value"] == -1.5  # New cell: value is the objective.
    assert np.ndim(result["value"]) == 0 and result["value"].dtype == np.float64
    result = archive.add_single([4.0, 5.0, 6.0], 2.0, measures)
    assert result["status"] == 1 and result["value"] == 3.5
    result = archive.add_single([7.0, 8.0, 9.0], 2.0, measures)
    assert result["status"] == 0 and result["value"] == 0.0
    result = archive.add_single([7.0, 8.0, 9.0], 1.0, measures)
    assert result["status"] == 0 and result["value"] == -1.0
    _, elite = archive.retrieve_single(measures)
    np.testing.assert_array_equal(elite["solution"], [4.0, 5.0, 6.0])
    assert elite["threshold"] == 2.0
    assert len(archive) == 1


def test_add_single_cma_mae_rule():
    """t <- t (1 - lr) + f lr, with t = threshold_min for a new cell."""
    archive = _archive(learning_rate=0.25, threshold_min=1.0)
    measures = _cell_measures([40])[0]
    result = archive.add_single(np.zeros(3), 0.5, measures)
    assert result["status"] == 0 and result["value"] == -0.5
    assert archive.empty
    result = archive.add_single(np.zeros(3), 5.0, measures)
    assert result["status"] == 2 and result["value"] == 4.0
    _, elite = archive.retrieve_single(measures)
    assert elite["threshold"] == pytest.approx(1.0 * 0.75 + 5.0 * 0.25)
    result = archive.add_single(np.ones(3), 3.0, measures)  # 3 > 2 -> improve.
    assert result["status"] == 1 and result["value"] == pytest.approx(1.0)
    _, elite = archive.retrieve_single(measures)
    assert elite["objective"] == 3.0  # Non-elitist: replaced the 5.
    assert elite["threshold"] == pytest.approx(2.0 * 0.75 + 3.0 * 0.25)


def test_add_single_validation_errors():
    ours, theirs = _pair()
    cases = [
        (np.zeros(2), 0.0, np.zeros(2)),
        (np.zeros(3), np.nan, np.zeros(2)),
        (np.zeros(3), None, np.zeros(2)),
        (np.zeros(3), 0.0, np.zeros(3)),
        (np.zeros(3), 0.0, [0.0, np.inf]),
    ]
    for case in cases:
        _assert_same_error(lambda c=case: ours.add_single(*c), lambda c=case: theirs.add_single(*c))
    with pytest.raises(ValueError) as err:
        ours.add_single(np.zeros(3), 0.0, np.zeros(3))
    assert str(err.value) == (
        "Expected measures to be an array with shape (2,) (i.e. "
        "shape (measure_dim,)) but it had shape (3,)."
    )
    # pyribs converts the objective to a 0-d array before its finiteness check, and
    # np.isscalar() is False for 0-d arrays, so add_single reports the batch wording.
    with pytest.raises(ValueError) as err:
        ours.add_single(np.zeros(3), np.inf, np.zeros(2))
    assert str(err.value) == (
        "All elements of objective must be finite (infinity and NaN values are not supported)."
    )


def test_add_single_matches_batch_with_default_learning_rate():
    batch_archive, single_archive = _archive(), _archive()
    rng = np.random.default_rng(3)
    for _ in range(4):
        solution, objective, measures = _batch(rng.normal(size=3), rng.integers(0, 4, size=3))
        batch_result = batch_archive.add(solution[:1], objective[:1], measures[:1])
        single_result = single_archive.add_single(solution[0], objective[0], measures[0])
        assert batch_result["status"][0] == single_result["status"]
        assert batch_result["value"][0] == single_result["value"]
    _assert_data_equal(batch_archive.data(), single_archive.data())


# =====================================================================================
# data(), retrieve, sample_elites, iteration, clear.
# =====================================================================================
def _filled_pair(**kwargs):
    ours, theirs = _pair(**kwargs)
    for archive in (ours, theirs):
        archive.add(*_batch([1.0, 2.0, 3.0], [150, 4, 77]))
        archive.add(*_batch([4.0, 0.5, 6.0], [4, 9, 150]))
        archive.add(*_batch([7.0, 8.0, -1.0], [0, 199, 9]))
    return ours, theirs


def test_data_first_insertion_order():
    ours, _ = _filled_pair()
    # New cells within one add are ordered by cell; across adds, by first occupation.
    np.testing.assert_array_equal(ours.data("index"), [4, 77, 150, 9, 0, 199])
    np.testing.assert_array_equal(ours.data("objective"), [4.0, 3.0, 6.0, 0.5, 7.0, 8.0])


@pytest.mark.parametrize(
    "fields",
    [None, "objective", "measures", ["objective", "index"], ["index", "measures", "measures"], []],
)
@pytest.mark.parametrize("return_type", [None, "dict", "tuple", "pandas"])
def test_data_matches_pyribs(fields, return_type):
    ours, theirs = _filled_pair()
    _assert_data_equal(
        ours.data(fields, return_type=return_type), theirs.data(fields, return_type=return_type)
    )


def test_data_str_field_0_12_rules():
    ours, _ = _filled_pair()
    objective = ours.data("objective")
    assert isinstance(objective, np.ndarray) and objective.shape == (6,)
    as_dict = ours.data("objective", return_type="dict")
    assert list(as_dict) == ["objective"]
    as_tuple = ours.data("objective", return_type="tuple")
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 1
    as_df = ours.data("measures", return_type="pandas")
    assert isinstance(as_df, ArchiveDataFrame)
    assert list(as_df.columns) == ["measures_0", "measures_1"]


def test_data_default_is_dict_with_index_last():
    ours, _ = _filled_pair()
    data = ours.data()
    assert list(data) == ["solution", "objective", "measures", "threshold", "index"]
    assert data["index"].dtype == np.int32
    assert data["solution"].shape == (6, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pandas_columns_and_dtypes(dtype):
    archive = _archive(dtype=dtype)
    archive.add(*_batch([1.0, 2.0, 3.0], [0, 1, 2]))
    df = archive.data(return_type="pandas")
    assert isinstance(df, ArchiveDataFrame)
    assert list(df.columns) == [
        "solution_0",
        "solution_1",
        "solution_2",
        "objective",
        "measures_0",
        "measures_1",
        "threshold",
        "index",
    ]
    for column in df.columns[:-1]:
        assert df[column].dtype == dtype, column
    assert df["index"].dtype == np.int32


def test_data_errors():
    ours, theirs = _filled_pair()
    _assert_same_error(lambda: ours.data("foo"), lambda: theirs.data("foo"))
    _assert_same_error(lambda: ours.data(return_type="foo"), lambda: theirs.data(return_type="foo"))


def test_data_returns_copies():
    ours, _ = _filled_pair()
    data = ours.data()
    data["objective"][:] = -100
    assert ours.data("objective").max() == 8.0


def test_retrieve_and_sentinels():
    archive = _archive(extra_fields={"count": ((), np.int32), "tag": ((), object)})
    archive.add(
        *_batch([1.0, 2.0, 3.0], [0, 1, 2]),
        count=np.array([5, 6, 7], np.int32),
        tag=np.array(["a", "b", "c"], dtype=object),
    )
    occupied, data = archive.retrieve(_cell_measures([2, 100, 0]))
    np.testing.assert_array_equal(occupied, [True, False, True])
    assert list(data) == ["solution", "objective", "measures", "threshold", "count", "tag", "index"]
    np.testing.assert_array_equal(data["index"], [2, -1, 0])
    np.testing.assert_array_equal(data["objective"][[0, 2]], [3.0, 1.0])
    for field in ["solution", "objective", "measures", "threshold"]:
        assert np.all(np.isnan(data[field][1])), field
        assert not np.any(np.isnan(data[field][[0, 2]])), field
    np.testing.assert_array_equal(data["count"], [7, 0, 5])
    assert list(data["tag"]) == ["c", None, "a"]


def test_retrieve_matches_pyribs():
    ours, theirs = _filled_pair()
    measures = _cell_measures([0, 1, 4, 150, 199, 198])
    occ_a, a = ours.retrieve(measures)
    occ_b, b = theirs.retrieve(measures)
    np.testing.assert_array_equal(occ_a, occ_b)
    assert occ_a.dtype == bool
    _assert_data_equal(a, b)


def test_retrieve_single():
    ours, theirs = _filled_pair()
    for cell in [77, 78]:
        measures = _cell_measures([cell])[0]
        occ_a, a = ours.retrieve_single(measures)
        occ_b, b = theirs.retrieve_single(measures)
        assert isinstance(occ_a, (bool, np.bool_))
        assert occ_a == occ_b == (cell == 77)
        assert list(a) == list(b)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
            assert np.shape(a[key]) == np.shape(b[key])
    _, elite = ours.retrieve_single(_cell_measures([77])[0])
    assert elite["objective"] == 3.0 and elite["index"] == 77


def test_retrieve_errors():
    ours, theirs = _filled_pair()
    for bad in [np.zeros((2, 3)), np.zeros(2), [[0.0, np.nan]]]:
        _assert_same_error(lambda b=bad: ours.retrieve(b), lambda b=bad: theirs.retrieve(b))
    for bad in [np.zeros(3), np.zeros((1, 2)), [np.inf, 0.0]]:
        _assert_same_error(
            lambda b=bad: ours.retrieve_single(b), lambda b=bad: theirs.retrieve_single(b)
        )


def test_sample_elites_empty():
    ours, theirs = _pair()
    msg = _assert_same_error(
        lambda: ours.sample_elites(1), lambda: theirs.sample_elites(1), exc=IndexError
    )
    assert msg == "No elements in archive."


def test_sample_elites_too_many_without_replacement():
    ours, theirs = _filled_pair()
    msg = _assert_same_error(
        lambda: ours.sample_elites(7, replace=False), lambda: theirs.sample_elites(7, replace=False)
    )
    assert msg.startswith("Cannot take a larger sample than the number of elites in the archive ")


@pytest.mark.parametrize("replace", [True, False])
def test_sample_elites_matches_pyribs_with_same_seed(replace):
    ours, theirs = _filled_pair(seed=42)
    for n in [6, 3, 1]:
        a = ours.sample_elites(n, replace=replace)
        b = theirs.sample_elites(n, replace=replace)
        _assert_data_equal(a, b)
    if not replace:
        sample = ours.sample_elites(6, replace=False)
        assert sorted(sample["index"]) == sorted(ours.data("index"))


def test_sample_elites_with_replacement_can_exceed_len():
    ours, _ = _filled_pair(seed=1)
    sample = ours.sample_elites(50)
    assert list(sample) == ["solution", "objective", "measures", "threshold", "index"]
    assert sample["solution"].shape == (50, 3)
    assert set(sample["index"]) <= set(ours.data("index"))
    occupied, data = ours.retrieve(sample["measures"])
    assert occupied.all()
    np.testing.assert_array_equal(data["objective"], sample["objective"])


def test_sample_elites_seed_reproducible():
    a, _ = _filled_pair(seed=7)
    b, _ = _filled_pair(seed=7)
    _assert_data_equal(a.sample_elites(10), b.sample_elites(10))


def test_iteration():
    ours, theirs = _filled_pair()
    ours_entries, theirs_entries = list(ours), list(theirs)
    assert len(ours_entries) == 6
    for a, b in zip(ours_entries, theirs_entries):
        assert list(a) == list(b)
        assert list(a)[0] == "index"
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])


def test_add_during_iteration_raises():
    ours, _ = _filled_pair()
    with pytest.raises(RuntimeError, match="^ArrayStore was modified with add"):
        for _ in ours:
            ours.add(*_batch([100.0, 100.0, 100.0], [0, 1, 2]))


def test_add_single_during_iteration_raises():
    ours, _ = _filled_pair()
    with pytest.raises(RuntimeError):
        for _ in ours:
            ours.add_single(np.zeros(3), 100.0, _cell_measures([0])[0])


def test_clear_during_iteration_raises():
    ours, _ = _filled_pair()
    with pytest.raises(RuntimeError):
        for _ in ours:
            ours.clear()


def test_add_inserting_nothing_does_not_break_iteration():
    ours, _ = _filled_pair()
    seen = []
    for elite in ours:
        result = ours.add(*_batch([-10.0, -10.0, -10.0], [4, 77, 150]))
        assert not result["status"].any()
        ours.add_single(np.zeros(3), -10.0, _cell_measures([4])[0])
        seen.append(int(elite["index"]))
    assert seen == [4, 77, 150, 9, 0, 199]


def test_clear():
    ours, _ = _filled_pair()
    ours.clear()
    assert ours.empty and len(ours) == 0
    assert not list(ours)
    assert ours.data("objective").shape == (0,)
    occupied, _ = ours.retrieve(_cell_measures([4]))
    assert not occupied[0]
    result = ours.add(*_batch([-5.0, 1.0, 2.0], [4, 5, 6]))
    np.testing.assert_array_equal(result["status"], [2, 2, 2])
    np.testing.assert_array_equal(result["value"], [-5.0, 1.0, 2.0])
    np.testing.assert_array_equal(ours.data("index"), [4, 5, 6])


def test_len_and_empty():
    ours, _ = _filled_pair()
    assert len(ours) == 6 and not ours.empty


# =====================================================================================
# Indexing.
# =====================================================================================
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_go_to_correct_bin(dtype):
    archive = GridArchive(solution_dim=1, dims=[10], ranges=[(0, 0.1)], dtype=dtype)
    values = [0.00, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]
    for expected, value in enumerate(values):
        assert archive.index_of_single([value]) == expected, value
    np.testing.assert_array_equal(archive.index_of(np.array(values)[:, None]), np.arange(10))
    assert archive.index_of_single([0.1]) == 9
    assert archive.index_of_single([0.11]) == 9
    assert archive.index_of_single([-0.01]) == 0


def test_index_of_2d_example():
    archive = _archive()
    index = archive.index_of([[0.25, 0.25]])
    np.testing.assert_array_equal(index, [131])
    assert index.dtype == np.int32
    np.testing.assert_array_equal(archive.int_to_grid_index(index), [[6, 11]])
    assert archive.index_of_single([0.25, 0.25]) == 131


def test_index_of_clips_and_bounds():
    archive = _archive()
    measures = [[-1, -2], [1, 2], [-5, 10], [0.999, 1.999], [-1.5, 0.0], [1e9, -1e9]]
    expected = archive.grid_to_int_index([[0, 0], [9, 19], [0, 19], [9, 19], [0, 10], [9, 0]])
    np.testing.assert_array_equal(archive.index_of(measures), expected)


def test_index_of_matches_pyribs_random():
    rng = np.random.default_rng(0)
    for dtype in [np.float32, np.float64]:
        ours, theirs = _pair(dtype=dtype)
        measures = np.concatenate(
            [
                rng.uniform(-1.5, 1.5, size=(200, 2)) * [1, 2],
                # Exact cell boundaries are the hard cases.
                np.stack(
                    np.meshgrid(np.linspace(-1, 1, 11), np.linspace(-2, 2, 21)), axis=-1
                ).reshape(-1, 2),
            ]
        ).astype(dtype)
        np.testing.assert_array_equal(ours.index_of(measures), theirs.index_of(measures))


def test_index_of_errors():
    ours, theirs = _pair()
    for bad in [np.zeros((2, 3)), np.zeros(2), [[np.nan, 0.0]]]:
        _assert_same_error(lambda b=bad: ours.index_of(b), lambda b=bad: theirs.index_of(b))
    for bad in [np.zeros(3), [[0.0, 0.0]], [np.inf, 0.0]]:
        _assert_same_error(
            lambda b=bad: ours.index_of_single(b), lambda b=bad: theirs.index_of_single(b)
        )


def test_grid_int_index_round_trip():
    archive = _archive()
    grid = np.array([[0, 0], [6, 11], [9, 19], [3, 0]])
    ints = archive.grid_to_int_index(grid)
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, [0, 131, 199, 60])
    back = archive.int_to_grid_index(ints)
    assert back.dtype == np.int32
    np.testing.assert_array_equal(back, grid)
    np.testing.assert_array_equal(archive.int_to_grid_index([0, 199]), [[0, 0], [9, 19]])


def test_grid_int_index_errors():
    ours, theirs = _pair()
    msg = _assert_same_error(
        lambda: ours.grid_to_int_index([0, 1]), lambda: theirs.grid_to_int_index([0, 1])
    )
    assert msg.startswith("Expected grid_indices to be an array with shape")
    msg = _assert_same_error(
        lambda: ours.int_to_grid_index([[0, 1]]), lambda: theirs.int_to_grid_index([[0, 1]])
    )
    assert msg == "Expected int_indices to be a 1D array but it had shape (1, 2)."


def test_boundaries_locate_cells():
    archive = _archive()
    measures = np.array([[0.25, -1.3]])
    grid = archive.int_to_grid_index(archive.index_of(measures))[0]
    for dim in range(2):
        lower = archive.boundaries[dim][grid[dim]]
        upper = archive.boundaries[dim][grid[dim] + 1]
        assert lower <= measures[0, dim] < upper


# =====================================================================================
# retessellate.
# =====================================================================================
def test_retessellate_requires_unit_learning_rate():
    kwargs = {"learning_rate": 0.5, "threshold_min": 0.0}
    ours, theirs = _pair(**kwargs)
    msg = _assert_same_error(lambda: ours.retessellate([5, 5]), lambda: theirs.retessellate([5, 5]))
    assert msg == "Cannot retessellate an archive with learning rate not equal to 1."


def test_retessellate_dims_length():
    ours, theirs = _pair()
    msg = _assert_same_error(lambda: ours.retessellate([5]), lambda: theirs.retessellate([5]))
    assert msg == (
        "The measure space dimensionality indicated in `new_dims` is 1, but "
        "this archive has a measure space dimensionality of 2."
    )


def _retessellation_pair():
    kwargs = {"solution_dim": 1, "dims": [4, 4], "ranges": [(0, 1), (0, 1)]}
    ours = GridArchive(**kwargs)
    theirs = ribs.archives.GridArchive(**kwargs)
    for archive in (ours, theirs):
        # Elites 1 and 2 are in different cells of the 4x4 grid but in the same cell
        # of a 2x2 grid.
        archive.add([[1.0], [2.0], [3.0]], [1.0, 2.0, 3.0], [[0.1, 0.1], [0.3, 0.1], [0.9, 0.9]])
    return ours, theirs


def test_retessellate_qd_score_fix():
    """ribsax rebuilds the stats; pyribs 0.12 double-counts the re-added elites.

    Elites {1, 2, 3} retessellated to a 2x2 grid leave {2, 3}. pyribs keeps its running
    objective sum (6) and adds the re-inserted objectives (5) on top, reporting
    qd_score=11 and obj_mean=5.5. ribsax deliberately reports the true values, 5 and
    2.5 (documented in GridArchive.retessellate).
    """
    ours, theirs = _retessellation_pair()
    ours.retessellate([2, 2])
    theirs.retessellate([2, 2])
    # Same elites and layout as pyribs...
    np.testing.assert_array_equal(ours.dims, [2, 2])
    assert ours.cells == theirs.cells == 4
    _assert_data_equal(ours.data(), theirs.data())
    for a, b in zip(ours.boundaries, theirs.boundaries):
        np.testing.assert_array_equal(a, b)
    # ...but correct stats, where pyribs' are inflated.
    assert theirs.stats.qd_score == 11.0 and theirs.stats.obj_mean == 5.5
    stats = ours.stats
    assert stats.num_elites == 2
    assert stats.qd_score == 5.0
    assert stats.obj_mean == 2.5
    assert stats.obj_max == 3.0
    assert stats.coverage == 0.5
    assert stats.norm_qd_score == 1.25
    assert ours.best_elite["objective"] == 3.0
    assert ours.best_elite["index"] == 3


def test_retessellate_finer_and_keep_adding():
    ours, theirs = _retessellation_pair()
    ours.retessellate([8, 6])
    theirs.retessellate([8, 6])
    _assert_data_equal(ours.data(), theirs.data())
    assert ours.stats.qd_score == 6.0
    measures = [[0.99, 0.99], [0.5, 0.5], [0.1, 0.1]]
    result_a = ours.add([[4.0], [5.0], [6.0]], [4.0, 5.0, 0.5], measures)
    result_b = theirs.add([[4.0], [5.0], [6.0]], [4.0, 5.0, 0.5], measures)
    _assert_data_equal(result_a, result_b)
    _assert_data_equal(ours.data(), theirs.data())
    np.testing.assert_array_equal(ours.index_of(measures), theirs.index_of(measures))


def test_retessellate_empty():
    archive = _archive()
    archive.retessellate([3, 3])
    assert archive.cells == 9 and archive.empty
    assert archive.stats.num_elites == 0


# =====================================================================================
# Pickling.
# =====================================================================================
def test_pickle_round_trip():
    ours, _ = _filled_pair(seed=5, extra_fields=None)
    clone = pickle.loads(pickle.dumps(ours))
    _assert_data_equal(clone.data(), ours.data())
    assert clone.stats == ours.stats
    for key, value in ours.best_elite.items():
        np.testing.assert_array_equal(clone.best_elite[key], value)
    np.testing.assert_array_equal(clone.dims, ours.dims)
    # Both keep working identically (including the sampling rng).
    batch = _batch([10.0, 0.1, 20.0], [4, 5, 199])
    _assert_data_equal(clone.add(*batch), ours.add(*batch))
    _assert_data_equal(clone.data(), ours.data())
    assert clone.stats == ours.stats
    _assert_data_equal(clone.sample_elites(5), ours.sample_elites(5))
    result = clone.add_single(np.zeros(3), 30.0, _cell_measures([5])[0])
    assert result["status"] == 1
    assert clone.best_elite["objective"] == 30.0
    assert ours.best_elite["objective"] == 20.0
    clone.clear()
    assert clone.empty and len(ours) == 7


@pytest.mark.parametrize("bad", ["objective", "measures"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [2, 60])
def test_non_finite_native_arrays_raise_and_leave_the_archive_unchanged(bad, value, dtype, rows):
    """Arrays already in the archive's dtypes skip the host finiteness check (the
    kernel detects it): same error as pyribs, and nothing is written. 60 rows into
    200 cells take the kernel's pass over the cells for the stamps."""
    ours, theirs = _pair(dtype=dtype)
    first = [a.astype(dtype) for a in _batch([1.0, 2.0], [3, 4])]
    ours.add(*first)
    theirs.add(*first)
    cells = np.random.default_rng(rows).integers(0, 200, rows)
    cells[:2] = [3, 7]
    solution, objective, measures = [a.astype(dtype) for a in _batch(5.0 + np.arange(rows), cells)]
    if bad == "objective":
        objective[rows // 2] = value
    else:
        measures[rows - 1, 1] = value
    _assert_same_error(
        lambda: ours.add(solution, objective, measures),
        lambda: theirs.add(solution, objective, measures),
    )
    a, b = ours.data(), theirs.data()
    assert list(a) == list(b)
    for key in b:
        np.testing.assert_array_equal(a[key], b[key])
    for name in ("num_elites", "coverage", "qd_score", "obj_max", "obj_mean"):
        np.testing.assert_allclose(getattr(ours.stats, name), getattr(theirs.stats, name))
    again = [a.astype(dtype) for a in _batch([7.0, 0.5], [3, 8])]
    np.testing.assert_array_equal(ours.add(*again)["status"], theirs.add(*again)["status"])
    np.testing.assert_array_equal(ours.data("index"), theirs.data("index"))
