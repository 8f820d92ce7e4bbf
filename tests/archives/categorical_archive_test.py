"""Tests for CategoricalArchive.

pyribs' ``ribs.archives.CategoricalArchive`` is the reference: the same calls are made
on both archives (same categories, same random batches) and every output is compared.
Shapes are small and shared (3 x 4 categories, solution_dim 3) so the jitted add
kernel compiles only a few times.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import AddStatus, CategoricalArchive

CATEGORIES = [["A", "B", "C"], ["One", "Two", "Three", "Four"]]


def _kwargs(**kwargs):
    kwargs.setdefault("solution_dim", 3)
    kwargs.setdefault("categories", CATEGORIES)
    return kwargs


def _pair(**kwargs):
    """A ribsax archive and a ribs archive built with the same arguments."""
    kwargs = _kwargs(**kwargs)
    return CategoricalArchive(**kwargs), ribs.archives.CategoricalArchive(**kwargs)


def _random_batch(rng, size, integer_objectives=True, categories=CATEGORIES):
    """A batch with repeated cells and (optionally) tied objectives."""
    solution = rng.normal(size=(size, 3))
    if integer_objectives:
        objective = rng.integers(-3, 4, size=size).astype(np.float64)
    else:
        objective = rng.normal(size=size)
    measures = np.empty((size, len(categories)), dtype=object)
    for i, dim_categories in enumerate(categories):
        measures[:, i] = [dim_categories[k] for k in rng.integers(0, len(dim_categories), size)]
    return solution, objective, measures


def _assert_same_error(ours, theirs, exc=ValueError):
    with pytest.raises(exc) as ours_err:
        ours()
    with pytest.raises(exc) as theirs_err:
        theirs()
    assert str(ours_err.value) == str(theirs_err.value)
    return str(ours_err.value)


def _assert_dict_equal(a, b, approx=()):
    """Same keys, dtypes and values; keys in ``approx`` only to float rounding."""
    assert list(a) == list(b)
    for key in b:
        if key in approx:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-6, atol=1e-12)
        else:
            np.testing.assert_array_equal(a[key], b[key])
        assert np.asarray(a[key]).dtype == np.asarray(b[key]).dtype, key


def _assert_stats_equal(a, b):
    for name in ["num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        x, y = getattr(a, name), getattr(b, name)
        if y is None:
            assert x is None, name
            continue
        np.testing.assert_allclose(x, y, rtol=1e-6)
        assert np.asarray(x).dtype == np.asarray(y).dtype, name
    assert isinstance(a.num_elites, int)


def _assert_archives_equal(ours, theirs, approx=()):
    _assert_dict_equal(ours.data(), theirs.data(), approx)
    _assert_stats_equal(ours.stats, theirs.stats)
    assert len(ours) == len(theirs)
    if theirs.best_elite is None:
        assert ours.best_elite is None
    else:
        _assert_dict_equal(ours.best_elite, theirs.best_elite, approx)


# =====================================================================================
# Construction and properties.
# =====================================================================================
def test_properties_match_pyribs():
    ours, theirs = _pair(qd_score_offset=-2.0)
    assert ours.categories == theirs.categories == CATEGORIES
    np.testing.assert_array_equal(ours.dims, theirs.dims)
    assert ours.dims.dtype == theirs.dims.dtype == np.int32
    assert ours.cells == theirs.cells == 12
    for name in ["learning_rate", "threshold_min", "qd_score_offset"]:
        value = getattr(ours, name)
        assert np.ndim(value) == 0
        assert value == getattr(theirs, name)
        assert value.dtype == getattr(theirs, name).dtype
    assert (
        ours.field_list
        == theirs.field_list
        == ["solution", "objective", "measures", "threshold", "index"]
    )
    assert ours.dtypes == theirs.dtypes
    assert ours.dtypes["measures"] == np.dtype(object)
    assert ours.solution_dim == theirs.solution_dim == 3
    assert ours.measure_dim == theirs.measure_dim == 2
    assert ours.objective_dim == ()
    assert ours.empty and len(ours) == 0
    assert ours.best_elite is None
    _assert_stats_equal(ours.stats, theirs.stats)


def test_categories_accepts_any_collection():
    archive = CategoricalArchive(solution_dim=2, categories=(("x", "y"), range(3)))
    assert archive.categories == [["x", "y"], [0, 1, 2]]
    np.testing.assert_array_equal(archive.dims, [2, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_sets_solution_and_objective_only(dtype):
    ours, theirs = _pair(dtype=dtype)
    assert ours.dtypes == theirs.dtypes
    assert ours.dtypes["solution"] == dtype
    assert ours.dtypes["threshold"] == dtype
    assert ours.dtypes["measures"] == np.dtype(object)


def test_individual_dtypes():
    ours, theirs = _pair(
        solution_dtype=np.float32, objective_dtype=np.float64, measures_dtype=np.int64
    )
    assert ours.dtypes == theirs.dtypes


@pytest.mark.parametrize("individual", ["solution_dtype", "objective_dtype", "measures_dtype"])
def test_dtype_conflict(individual):
    kwargs = _kwargs(dtype=np.float32, **{individual: np.float32})
    msg = _assert_same_error(
        lambda: CategoricalArchive(**kwargs), lambda: ribs.archives.CategoricalArchive(**kwargs)
    )
    assert msg.startswith("dtype cannot be used at the same time as")


def test_dict_dtype_rejected():
    kwargs = _kwargs(dtype={"solution": np.float32})
    _assert_same_error(
        lambda: CategoricalArchive(**kwargs), lambda: ribs.archives.CategoricalArchive(**kwargs)
    )


@pytest.mark.parametrize("name", ["solution", "objective", "measures", "threshold", "index"])
def test_reserved_extra_fields(name):
    kwargs = _kwargs(extra_fields={name: ((), np.float64)})
    with pytest.raises(ValueError) as err:
        CategoricalArchive(**kwargs)
    # The set is printed, so its order is arbitrary; compare its contents.
    prefix, names = str(err.value).split(": ", 1)
    assert prefix == "The following names are not allowed in extra_fields"
    assert eval(names) == {"solution", "objective", "measures", "threshold", "index"}
    with pytest.raises(ValueError, match="^The following names are not allowed"):
        ribs.archives.CategoricalArchive(**kwargs)


def test_threshold_min_without_learning_rate():
    kwargs = _kwargs(threshold_min=0.0)
    _assert_same_error(
        lambda: CategoricalArchive(**kwargs), lambda: ribs.archives.CategoricalArchive(**kwargs)
    )


def test_learning_rate_without_threshold_min():
    kwargs = _kwargs(learning_rate=0.5)
    _assert_same_error(
        lambda: CategoricalArchive(**kwargs), lambda: ribs.archives.CategoricalArchive(**kwargs)
    )


def test_keyword_only():
    with pytest.raises(TypeError):
        CategoricalArchive(3, CATEGORIES)


# =====================================================================================
# Indexing.
# =====================================================================================
def test_index_of_matches_pyribs():
    ours, theirs = _pair()
    _, _, measures = _random_batch(np.random.default_rng(0), 50)
    result = ours.index_of(measures)
    np.testing.assert_array_equal(result, theirs.index_of(measures))
    assert result.dtype == np.int32
    # C order: ("B", "Three") is grid (1, 2) -> 1 * 4 + 2.
    assert ours.index_of([["B", "Three"]])[0] == 6
    assert ours.index_of_single(["C", "Four"]) == theirs.index_of_single(["C", "Four"])


def test_index_of_unknown_category_raises_key_error_like_pyribs():
    ours, theirs = _pair()
    # Row-major order reports "q" (pyribs' loop); a column-wise scan would find "zz".
    measures = [["A", "q"], ["zz", "One"]]
    with pytest.raises(KeyError) as ours_err:
        ours.index_of(measures)
    with pytest.raises(KeyError) as theirs_err:
        theirs.index_of(measures)
    assert ours_err.value.args == theirs_err.value.args == ("q",)
    with pytest.raises(KeyError):
        ours.add([[0.0, 0.0, 0.0]], [1.0], [["D", "One"]])
    with pytest.raises(KeyError):
        ours.retrieve([["A", "Five"]])
    assert ours.empty


def test_index_of_shape_errors():
    ours, theirs = _pair()
    _assert_same_error(
        lambda: ours.index_of([["A", "One", "x"]]), lambda: theirs.index_of([["A", "One", "x"]])
    )
    _assert_same_error(lambda: ours.index_of_single(["A"]), lambda: theirs.index_of_single(["A"]))


def test_grid_int_index_conversions():
    ours, theirs = _pair()
    grid = np.array([[0, 0], [2, 3], [1, 2]])
    np.testing.assert_array_equal(ours.grid_to_int_index(grid), theirs.grid_to_int_index(grid))
    ints = np.arange(12)
    converted = ours.int_to_grid_index(ints)
    np.testing.assert_array_equal(converted, theirs.int_to_grid_index(ints))
    np.testing.assert_array_equal(ours.grid_to_int_index(converted), ints)
    _assert_same_error(
        lambda: ours.int_to_grid_index([[1]]), lambda: theirs.int_to_grid_index([[1]])
    )
    _assert_same_error(
        lambda: ours.grid_to_int_index([1, 2]), lambda: theirs.grid_to_int_index([1, 2])
    )


def test_numeric_categories():
    categories = [[10, 20, 30], [-1, 1]]
    ours, theirs = _pair(categories=categories, measures_dtype=np.int64)
    rng = np.random.default_rng(3)
    for _ in range(3):
        batch = _random_batch(rng, 8, categories=categories)
        _assert_dict_equal(ours.add(*batch), theirs.add(*batch))
    _assert_archives_equal(ours, theirs)
    assert ours.data("measures").dtype == np.int64


# =====================================================================================
# Insertion: differential tests against pyribs.
# =====================================================================================
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cma_mae", [False, True])
def test_add_matches_pyribs(dtype, cma_mae):
    settings = {"learning_rate": 0.3, "threshold_min": -1.0} if cma_mae else {}
    # The batch CMA-MAE threshold rule may differ from NumPy in the last bit.
    approx = ("value", "threshold") if cma_mae else ()
    ours, theirs = _pair(dtype=dtype, qd_score_offset=-4.0, **settings)
    rng = np.random.default_rng(1)
    for step in range(6):
        batch = _random_batch(rng, 10, integer_objectives=step % 2 == 0)
        ours_info, theirs_info = ours.add(*batch), theirs.add(*batch)
        _assert_dict_equal(ours_info, theirs_info, approx)
        _assert_archives_equal(ours, theirs, approx)
    _, _, measures = _random_batch(rng, 20)
    ours_occ, ours_data = ours.retrieve(measures)
    theirs_occ, theirs_data = theirs.retrieve(measures)
    np.testing.assert_array_equal(ours_occ, theirs_occ)
    _assert_dict_equal(ours_data, theirs_data, approx)


@pytest.mark.parametrize("cma_mae", [False, True])
def test_add_single_matches_pyribs(cma_mae):
    settings = {"learning_rate": 0.5, "threshold_min": 0.0} if cma_mae else {}
    ours, theirs = _pair(**settings)
    rng = np.random.default_rng(2)
    solution, objective, measures = _random_batch(rng, 25)
    for args in zip(solution, objective, measures):
        ours_info, theirs_info = ours.add_single(*args), theirs.add_single(*args)
        assert ours_info["status"] == theirs_info["status"]
        assert isinstance(ours_info["status"], np.int32)
        assert ours_info["value"] == theirs_info["value"]
        assert ours_info["value"].dtype == theirs_info["value"].dtype
    _assert_archives_equal(ours, theirs)


def test_statuses_and_values_by_hand():
    archive = CategoricalArchive(**_kwargs())
    result = archive.add(
        np.zeros((4, 3)),
        [1.0, 2.0, 0.5, 3.0],
        [["A", "One"], ["A", "One"], ["B", "Two"], ["C", "Four"]],
    )
    np.testing.assert_array_equal(result["status"], [2, 2, 2, 2])
    np.testing.assert_array_equal(result["value"], [1.0, 2.0, 0.5, 3.0])
    np.testing.assert_array_equal(archive.data("index"), [0, 5, 11])
    np.testing.assert_array_equal(archive.data("objective"), [2.0, 0.5, 3.0])
    result = archive.add(np.zeros((2, 3)), [1.5, 4.0], [["A", "One"], ["B", "Two"]])
    assert [AddStatus(s) for s in result["status"]] == [
        AddStatus.NOT_ADDED,
        AddStatus.IMPROVE_EXISTING,
    ]
    np.testing.assert_array_equal(result["value"], [-0.5, 3.5])


def test_extra_fields_match_pyribs():
    extra = {"tag": ((), np.int32), "vec": ((2,), np.float32)}
    ours, theirs = _pair(extra_fields=extra)
    rng = np.random.default_rng(4)
    for _ in range(3):
        batch = _random_batch(rng, 6)
        fields = {"tag": rng.integers(0, 9, 6), "vec": rng.normal(size=(6, 2))}
        _assert_dict_equal(ours.add(*batch, **fields), theirs.add(*batch, **fields))
    _assert_archives_equal(ours, theirs)
    # Missing fields are only an error when something gets inserted (as in pyribs).
    low = (np.zeros((1, 3)), [-100.0], [["A", "One"]])
    _assert_dict_equal(ours.add(*low), theirs.add(*low))
    high = (np.zeros((1, 3)), [100.0], [["A", "One"]])
    for archive in (ours, theirs):
        with pytest.raises(
            ValueError, match="^`data` has keys .* but should have the same keys as this ArrayStore"
        ):
            archive.add(*high)


def test_add_validation_errors_match_pyribs():
    ours, theirs = _pair()
    bad_calls = [
        (np.zeros((2, 4)), [1.0, 2.0], [["A", "One"], ["B", "Two"]]),
        (np.zeros((2, 3)), [1.0], [["A", "One"], ["B", "Two"]]),
        (np.zeros((2, 3)), [1.0, np.nan], [["A", "One"], ["B", "Two"]]),
        (np.zeros((2, 3)), [1.0, 2.0], [["A"], ["B"]]),
    ]
    for args in bad_calls:
        _assert_same_error(lambda args=args: ours.add(*args), lambda args=args: theirs.add(*args))
    _assert_same_error(
        lambda: ours.add_single(np.zeros(3), 1.0, ["A"]),
        lambda: theirs.add_single(np.zeros(3), 1.0, ["A"]),
    )
    for archive in (ours, theirs):
        with pytest.raises(ValueError, match="objective must be finite"):
            archive.add_single(np.zeros(3), np.inf, ["A", "One"])


def test_add_empty_batch():
    # pyribs 0.12 raises from grid_to_int_index on an empty batch; ribsax accepts it.
    archive = CategoricalArchive(**_kwargs())
    result = archive.add(np.zeros((0, 3)), np.zeros(0), np.zeros((0, 2), dtype=object))
    assert result["status"].shape == (0,) and result["value"].shape == (0,)
    assert archive.empty


# =====================================================================================
# Reading.
# =====================================================================================
def _filled_pair(**kwargs):
    ours, theirs = _pair(**kwargs)
    batch = _random_batch(np.random.default_rng(5), 12)
    ours.add(*batch)
    theirs.add(*batch)
    return ours, theirs


def test_retrieve_sentinels():
    ours, theirs = _filled_pair()
    measures = [[a, b] for a in CATEGORIES[0] for b in CATEGORIES[1]]
    ours_occ, ours_data = ours.retrieve(measures)
    theirs_occ, theirs_data = theirs.retrieve(measures)
    np.testing.assert_array_equal(ours_occ, theirs_occ)
    assert not ours_occ.all()
    _assert_dict_equal(ours_data, theirs_data)
    empty = ~ours_occ
    assert all(m is None for m in ours_data["measures"][empty].ravel())
    assert np.isnan(ours_data["objective"][empty]).all()
    assert (ours_data["index"][empty] == -1).all()


def test_retrieve_single():
    ours, theirs = _filled_pair()
    for measures in (["A", "One"], ["C", "Two"]):
        ours_occ, ours_data = ours.retrieve_single(measures)
        theirs_occ, theirs_data = theirs.retrieve_single(measures)
        assert ours_occ == theirs_occ
        _assert_dict_equal(ours_data, theirs_data)
    _assert_same_error(lambda: ours.retrieve_single(["A"]), lambda: theirs.retrieve_single(["A"]))


@pytest.mark.parametrize("return_type", ["dict", "tuple", "pandas"])
def test_data_matches_pyribs(return_type):
    ours, theirs = _filled_pair()
    a, b = ours.data(return_type=return_type), theirs.data(return_type=return_type)
    if return_type == "pandas":
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
        assert list(a.columns)[3:6] == ["objective", "measures_0", "measures_1"]
    elif return_type == "tuple":
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    else:
        _assert_dict_equal(a, b)
    np.testing.assert_array_equal(ours.data("measures"), theirs.data("measures"))


@pytest.mark.parametrize("replace", [True, False])
def test_sample_elites_matches_pyribs(replace):
    ours, theirs = _filled_pair(seed=11)
    _assert_dict_equal(
        ours.sample_elites(4, replace=replace), theirs.sample_elites(4, replace=replace)
    )


def test_sample_elites_errors():
    ours, theirs = _pair()
    _assert_same_error(lambda: ours.sample_elites(1), lambda: theirs.sample_elites(1), IndexError)
    ours, theirs = _filled_pair()
    _assert_same_error(
        lambda: ours.sample_elites(100, replace=False),
        lambda: theirs.sample_elites(100, replace=False),
    )


def test_iteration_and_clear():
    ours, theirs = _filled_pair()
    for a, b in zip(ours, theirs):
        assert list(a) == list(b)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
    with pytest.raises(RuntimeError):
        for _ in ours:
            ours.add([[0.0, 0.0, 0.0]], [100.0], [["A", "One"]])
    ours.clear()
    assert ours.empty and ours.best_elite is None and ours.stats.obj_max is None
    assert ours.add([[0.0, 0.0, 0.0]], [-7.0], [["A", "One"]])["status"][0] == 2


def test_pickle_round_trip():
    ours, _ = _filled_pair(seed=3)
    clone = pickle.loads(pickle.dumps(ours))
    _assert_dict_equal(clone.data(), ours.data())
    assert clone.stats == ours.stats
    _assert_dict_equal(clone.best_elite, ours.best_elite)
    batch = _random_batch(np.random.default_rng(6), 5)
    _assert_dict_equal(clone.add(*batch), ours.add(*batch))
    _assert_dict_equal(clone.data(), ours.data())
    _assert_dict_equal(clone.sample_elites(3), ours.sample_elites(3))
    assert clone.index_of([["C", "Four"]])[0] == 11
