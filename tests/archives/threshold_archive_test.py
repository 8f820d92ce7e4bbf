"""Tests for the add path of ribsax.archives._threshold_archive.ThresholdArchive.

Batches go through a call prepared once per batch size (``_AddCall``): small fields
are copied into staging buffers and the flat kernel is called with arguments built
beforehand; large ones still go through ``InputStaging.put``. These tests check when
such a call is made and reused, and that nothing it keeps goes stale; each compares
the archive with pyribs.
"""
import pickle

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import CategoricalArchive, GridArchive
from ribsax.archives._input_staging import InputStaging
from tests.archives.alignment_helpers import STAGES_INPUTS, at_offset

KWARGS = {"solution_dim": 3, "dims": [4, 5], "ranges": [(-1.0, 1.0), (0.0, 2.0)]}


def _batch(rng, n, dim=3, **extra):
    return {"solution": rng.normal(size=(n, dim)),
            "objective": rng.normal(size=n),
            "measures": rng.uniform([-1.2, -0.2], [1.2, 2.2], size=(n, 2)),
            **{name: rng.normal(size=(n, *shape)) for name, shape in extra.items()}}


def _add_to_both(ours, theirs, data):
    a, b = ours.add(**data), theirs.add(**data)
    np.testing.assert_array_equal(a["status"], b["status"])
    np.testing.assert_array_equal(a["value"], b["value"])


def _assert_same_contents(ours, theirs):
    a, b = ours.data(), theirs.data()
    assert list(a) == list(b)
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    for name, value in theirs.best_elite.items():
        np.testing.assert_array_equal(ours.best_elite[name], value, err_msg=name)
    # Sums in a different order: equal up to rounding.
    rtol = 1e-12 if ours.dtypes["objective"] == np.float64 else 1e-6
    np.testing.assert_allclose(ours.stats.qd_score, theirs.stats.qd_score, rtol=rtol)


def _prepared(archive):
    """batch size -> names of the fields passed on each call (add, not add_single)."""
    # pylint: disable-next = protected-access
    return {batch: [name for name, _ in call.passed]
            for (batch, single), call in archive._add_calls.items() if not single}


def test_batches_of_one_size_share_one_prepared_call():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(0)
    for _ in range(3):
        _add_to_both(ours, theirs, _batch(rng, 7))
    # pylint: disable-next = protected-access
    (call,) = ours._add_calls.values()
    (kernel,) = call.kernels.values()  # Nothing passed: one kernel.
    assert kernel._cache_size() == 1  # pylint: disable = protected-access
    for _ in range(2):
        _add_to_both(ours, theirs, _batch(rng, 7))
    # pylint: disable-next = protected-access
    assert ours._add_calls[(7, False)] is call
    _assert_same_contents(ours, theirs)


def test_add_single_and_add_keep_separate_calls():
    kwargs = {**KWARGS, "learning_rate": 0.5, "threshold_min": 0.0}
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    rng = np.random.default_rng(1)
    for _ in range(3):
        _add_to_both(ours, theirs, _batch(rng, 1))
        row = {name: values[0] for name, values in _batch(rng, 1).items()}
        a, b = ours.add_single(**row), theirs.add_single(**row)
        assert a["status"] == b["status"] and a["value"] == b["value"]
    # pylint: disable-next = protected-access
    assert set(ours._add_calls) == {(1, False), (1, True)}
    _assert_same_contents(ours, theirs)


def test_retessellate_replaces_the_prepared_call():
    """The new grid's index arguments are used, not the ones of the old call."""
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(2)
    for n in (3, 4, 5, 6):  # As many sizes as are kept.
        _add_to_both(ours, theirs, _batch(rng, n))
    # pylint: disable-next = protected-access
    before = ours._add_calls[(6, False)]
    n_elites = len(ours)  # retessellate adds them back in one batch.
    assert n_elites not in (3, 4, 5, 6)
    ours.retessellate([3, 7])
    theirs.retessellate([3, 7])
    for _ in range(2):
        _add_to_both(ours, theirs, _batch(rng, 6))
    # pylint: disable-next = protected-access
    assert ours._add_calls[(6, False)] is not before
    # Re-adding the elites evicted size 3; size 6 was replaced, evicting nothing.
    assert list(_prepared(ours)) == [4, 5, n_elites, 6]
    a, b = ours.data(), theirs.data()
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_missing_field_after_a_prepared_call_raises_as_pyribs():
    kwargs = {**KWARGS, "extra_fields": {"tag": ((2,), np.float64)}}
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    rng = np.random.default_rng(3)
    _add_to_both(ours, theirs, _batch(rng, 5, tag=(2,)))
    data = _batch(rng, 5)  # No "tag"; these objectives beat the elites.
    data["objective"] = np.full(5, 100.0)
    errors = []
    for archive in (ours, theirs):
        with pytest.raises(ValueError) as error:
            archive.add(**data)
        errors.append(str(error.value))
    assert errors[0] == errors[1]
    _add_to_both(ours, theirs, _batch(rng, 5, tag=(2,)))
    _assert_same_contents(ours, theirs)


def test_prepared_calls_are_bounded_and_evict_the_oldest():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(4)
    sizes = [1, 2, 3, 4, 5, 6, 2]
    for n in sizes:
        _add_to_both(ours, theirs, _batch(rng, n))
    # pylint: disable-next = protected-access
    assert list(_prepared(ours)) == [4, 5, 6, 2][-GridArchive._max_add_calls:]
    _assert_same_contents(ours, theirs)


def test_fields_staging_may_not_copy_are_passed_on_each_call(monkeypatch):
    """Large fields go through InputStaging.put on every call: copied, read in
    place when aligned, or as a RowSplit, with one kernel per form."""
    monkeypatch.setattr(InputStaging, "pass_through_bytes", 1024)
    prepare = GridArchive._prepare_call  # pylint: disable = protected-access
    sizes = []

    def spy(archive, spec, batch):
        sizes.append(batch)
        return prepare(archive, spec, batch)

    monkeypatch.setattr(GridArchive, "_prepare_call", spy)
    kwargs = {**KWARGS, "solution_dim": 100, "dtype": np.float32,
              "extra_fields": {"tag": ((), np.float32)}}
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    rng = np.random.default_rng(5)
    # 9 x 100 float32 = 3600 bytes, passed; objective, measures and tag are staged.
    # Offset 0 is read in place; 16 as a RowSplit (400-byte rows: row 3 aligns);
    # 8 is copied (no row ever aligns).
    for step, offset in enumerate([16, 0, 8, 16, 0]):
        data = _batch(rng, 9, dim=100, tag=())
        data["solution"] = at_offset(data["solution"].astype(np.float32), offset)
        data["objective"] += step
        _add_to_both(ours, theirs, data)
    # Without staging (not a CPU), every field is passed as it is, in one form.
    passed = ["solution"] if STAGES_INPUTS else ["solution", "objective", "measures", "tag"]
    assert _prepared(ours) == {9: passed}
    # pylint: disable-next = protected-access
    (call,) = ours._add_calls.values()
    assert len(call.kernels) == (3 if STAGES_INPUTS else 1) and () not in call.kernels
    for _ in range(2):  # 2 rows take 800 bytes: everything is staged.
        _add_to_both(ours, theirs, _batch(rng, 2, dim=100, tag=()))
    assert _prepared(ours) == {9: passed, 2: [] if STAGES_INPUTS else passed}
    assert sizes == [9, 2]  # Each size is prepared once.
    _assert_same_contents(ours, theirs)


def test_host_indexed_archives_have_no_prepared_calls():
    kwargs = {"solution_dim": 2, "categories": [["a", "b"], ["c", "d", "e"]]}
    ours = CategoricalArchive(**kwargs)
    theirs = ribs.archives.CategoricalArchive(**kwargs)
    rng = np.random.default_rng(6)
    for _ in range(2):
        data = {"solution": rng.normal(size=(4, 2)), "objective": rng.normal(size=4),
                "measures": np.array([["a", "c"], ["b", "e"], ["a", "c"], ["b", "d"]],
                                     dtype=object)}
        _add_to_both(ours, theirs, data)
    # pylint: disable-next = protected-access
    assert not ours.__dict__.get("_add_calls")
    _assert_same_contents(ours, theirs)


def test_pickling_drops_prepared_calls_and_adds_the_same_after():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(7)
    _add_to_both(ours, theirs, _batch(rng, 8))
    state = ours.__getstate__()
    assert "_add_calls" not in state and "_kernels" not in state
    restored = pickle.loads(pickle.dumps(ours))
    data = _batch(rng, 8)
    _add_to_both(restored, theirs, data)
    ours.add(**data)
    _assert_same_contents(restored, theirs)
    _assert_same_contents(ours, theirs)
