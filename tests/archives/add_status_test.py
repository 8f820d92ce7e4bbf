"""Tests for AddStatus."""

import enum

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import AddStatus


def test_is_int_enum():
    assert issubclass(AddStatus, enum.IntEnum)


def test_members_match_pyribs():
    assert [(m.name, m.value) for m in AddStatus] == [
        (m.name, m.value) for m in ribs.archives.AddStatus
    ]


def test_values():
    assert AddStatus.NOT_ADDED == 0
    assert AddStatus.IMPROVE_EXISTING == 1
    assert AddStatus.NEW == 2


def test_ordering():
    assert AddStatus.NEW > AddStatus.IMPROVE_EXISTING > AddStatus.NOT_ADDED
    assert sorted([AddStatus.NEW, AddStatus.NOT_ADDED, AddStatus.IMPROVE_EXISTING]) == [
        AddStatus.NOT_ADDED,
        AddStatus.IMPROVE_EXISTING,
        AddStatus.NEW,
    ]


def test_truthiness():
    assert bool(AddStatus.NOT_ADDED) is False
    assert bool(AddStatus.IMPROVE_EXISTING) is True
    assert bool(AddStatus.NEW) is True


@pytest.mark.parametrize(
    "code, member", [(0, AddStatus.NOT_ADDED), (1, AddStatus.IMPROVE_EXISTING), (2, AddStatus.NEW)]
)
def test_from_raw_int32_status(code, member):
    # Archives return raw int32 codes; users convert them with AddStatus(s).
    assert AddStatus(np.int32(code)) is member
    assert np.int32(code) == member


def test_invalid_code_raises():
    with pytest.raises(ValueError):
        AddStatus(3)
