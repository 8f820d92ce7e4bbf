"""Tests for ArchiveDataFrame."""

import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import ArchiveDataFrame, GridArchive


def _columns():
    rng = np.random.default_rng(42)
    return {
        "solution_0": rng.normal(size=5),
        "solution_1": rng.normal(size=5),
        "solution_2": rng.normal(size=5),
        "objective": rng.normal(size=5),
        "measures_0": rng.normal(size=5),
        "measures_1": rng.normal(size=5),
        "threshold": rng.normal(size=5),
        "index": np.arange(5, dtype=np.int32),
        "my_field": np.arange(5) * 2.0,  # Underscore without a digit suffix.
        "a_1_2": np.arange(5) * 3.0,  # Vector field named "a_1".
    }


@pytest.fixture
def df():
    return ArchiveDataFrame(_columns())


def test_is_dataframe(df):
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 5


@pytest.mark.parametrize(
    "slicer",
    [
        lambda d: d.iloc[1:3],
        lambda d: d[d["objective"] > -100],
        lambda d: d[["objective", "index"]],
        lambda d: d.head(2),
        lambda d: d.sort_values("objective"),
    ],
)
def test_slicing_keeps_type(df, slicer):
    assert isinstance(slicer(df), ArchiveDataFrame)


def test_get_field_scalar(df):
    cols = _columns()
    objective = df.get_field("objective")
    assert objective.shape == (5,)
    np.testing.assert_array_equal(objective, cols["objective"])
    assert df.get_field("index").dtype == np.int32
    np.testing.assert_array_equal(df.get_field("my_field"), cols["my_field"])


def test_get_field_vector(df):
    cols = _columns()
    solution = df.get_field("solution")
    assert solution.shape == (5, 3)
    np.testing.assert_array_equal(
        solution, np.stack([cols[f"solution_{i}"] for i in range(3)], axis=1)
    )
    np.testing.assert_array_equal(df.get_field("measures")[:, 1], cols["measures_1"])


def test_get_field_returns_copy(df):
    objective = df.get_field("objective")
    objective[:] = 0
    solution = df.get_field("solution")
    solution[:] = 0
    assert np.all(df["objective"].to_numpy() != 0)
    assert np.all(df["solution_0"].to_numpy() != 0)


@pytest.mark.parametrize("field", ["mystery", "solution_", "measure"])
def test_get_field_missing(df, field):
    with pytest.raises(KeyError, match=f"Field '{field}' was not found."):
        df.get_field(field)


def test_iterelites(df):
    cols = _columns()
    elites = list(df.iterelites())
    assert len(elites) == 5
    assert list(elites[0]) == [
        "solution",
        "objective",
        "measures",
        "threshold",
        "index",
        "my_field",
        "a_1",
    ]
    for i, elite in enumerate(elites):
        np.testing.assert_array_equal(
            elite["solution"], [cols[f"solution_{j}"][i] for j in range(3)]
        )
        assert elite["objective"] == cols["objective"][i]
        assert elite["index"] == i
        assert elite["my_field"] == cols["my_field"][i]
        np.testing.assert_array_equal(elite["a_1"], [cols["a_1_2"][i]])


def test_iterelites_matches_pyribs(df):
    ours = list(df.iterelites())
    theirs = list(ribs.archives.ArchiveDataFrame(_columns()).iterelites())
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert list(a) == list(b)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])


def test_iterelites_empty():
    assert not list(ArchiveDataFrame({"objective": np.zeros(0)}).iterelites())


def test_from_archive_data():
    archive = GridArchive(solution_dim=3, dims=[4, 4], ranges=[(0, 1), (0, 1)])
    archive.add(
        np.arange(12.0).reshape(4, 3),
        np.array([1.0, 2.0, 3.0, 4.0]),
        np.array([[0.1, 0.1], [0.9, 0.9], [0.1, 0.9], [0.6, 0.4]]),
    )
    df = archive.data(return_type="pandas")
    assert isinstance(df, ArchiveDataFrame)
    data = archive.data()
    for field in ["solution", "objective", "measures", "threshold", "index"]:
        np.testing.assert_array_equal(df.get_field(field), data[field])
    elites = list(df.iterelites())
    assert [int(e["index"]) for e in elites] == list(data["index"])
    np.testing.assert_array_equal(elites[1]["solution"], data["solution"][1])


def test_round_trip_through_csv(df, tmp_path):
    path = tmp_path / "archive.csv"
    df.to_csv(path, index=False)
    loaded = ArchiveDataFrame(pd.read_csv(path))
    np.testing.assert_allclose(loaded.get_field("solution"), df.get_field("solution"))
