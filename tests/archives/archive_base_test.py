"""Tests for ArchiveBase: the default interface raises NotImplementedError."""

import numpy as np
import pytest

from ribsax.archives import ArchiveBase, GridArchive


class _Bare(ArchiveBase):
    """Subclass that implements nothing beyond the constructor."""


@pytest.fixture
def bare():
    return _Bare(solution_dim=3, objective_dim=(), measure_dim=2)


def test_is_base_of_grid_archive():
    archive = GridArchive(solution_dim=2, dims=[2], ranges=[(0, 1)])
    assert isinstance(archive, ArchiveBase)


def test_dims(bare):
    assert bare.solution_dim == 3
    assert bare.objective_dim == ()
    assert bare.measure_dim == 2


def test_tuple_solution_dim():
    archive = _Bare(solution_dim=(2, 4), objective_dim=(), measure_dim=1)
    assert archive.solution_dim == (2, 4)
    scalar = _Bare(solution_dim=(), objective_dim=(), measure_dim=1)
    assert scalar.solution_dim == ()


def test_keyword_only():
    with pytest.raises(TypeError):
        _Bare(3, (), 2)


@pytest.mark.parametrize("name", ["field_list", "dtypes", "stats", "empty"])
def test_properties_not_implemented(bare, name):
    with pytest.raises(
        NotImplementedError, match=f"^`{name}` has not been implemented in this archive$"
    ):
        getattr(bare, name)


@pytest.mark.parametrize(
    "name, call",
    [
        ("__len__", len),
        ("__iter__", iter),
        ("add", lambda a: a.add(np.zeros((1, 3)), np.zeros(1), np.zeros((1, 2)))),
        ("add_single", lambda a: a.add_single(np.zeros(3), 0.0, np.zeros(2))),
        ("clear", lambda a: a.clear()),
        ("retrieve", lambda a: a.retrieve(np.zeros((1, 2)))),
        ("retrieve_single", lambda a: a.retrieve_single(np.zeros(2))),
        ("data", lambda a: a.data()),
        ("sample_elites", lambda a: a.sample_elites(1)),
    ],
)
def test_methods_not_implemented(bare, name, call):
    with pytest.raises(
        NotImplementedError, match=f"^`{name}` has not been implemented in this archive$"
    ):
        call(bare)


def test_data_default_return_type_is_none():
    # pyribs 0.12: the default return_type is None (resolved by the type of fields).
    import inspect

    params = inspect.signature(ArchiveBase.data).parameters
    assert params["fields"].default is None
    assert params["return_type"].default is None
    assert inspect.signature(ArchiveBase.sample_elites).parameters["replace"].default is True
