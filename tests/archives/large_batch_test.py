"""Large batches (solution payload > 1 MiB) match pyribs, with few or most rows
winning."""
import numpy as np
import pytest
import ribs.archives

from ribsax.archives import CVTArchive, GridArchive
from ribsax.archives._input_staging import InputStaging
from tests.archives.alignment_helpers import STAGES_INPUTS, at_offset


def _record_calls(monkeypatch, method, attribute):
    """Wraps ``InputStaging.<method>``; returns the list of ``(name, value)`` it
    records per call, value being ``attribute`` of the result (None when None)."""
    wrapped = getattr(InputStaging, method)
    calls = []

    def spy(self, name, array, address):
        out = wrapped(self, name, array, address)
        calls.append((name, None if out is None else int(getattr(out, attribute))))
        return out

    monkeypatch.setattr(InputStaging, method, spy)
    return calls


def _compiled_kernels(archive):
    """Number of add kernels compiled for ``archive`` so far."""
    # pylint: disable-next = protected-access
    return sum(kernel._cache_size() for kernel in archive._kernels.values())


def _add_to_both(ours, theirs, data, objective, measures):
    """Adds a batch with extra fields ``wide`` and ``tag`` to both archives, checks
    statuses and values agree, then overwrites the caller's arrays (as a caller
    reusing them would)."""
    a = ours.add(data["solution"], objective, measures, wide=data["wide"],
                 tag=data["tag"])
    b = theirs.add(data["solution"], objective, measures, wide=data["wide"],
                   tag=data["tag"])
    np.testing.assert_array_equal(a["status"], b["status"])
    np.testing.assert_array_equal(a["value"], b["value"])
    for values in data.values():
        values[:] = np.nan


def _assert_same_contents(ours, theirs):
    """``data()`` and the best elite's solution, wide and tag fields agree."""
    da, db = ours.data(), theirs.data()
    for name in db:
        np.testing.assert_array_equal(da[name], db[name], err_msg=name)
    for name in ("solution", "wide", "tag"):
        np.testing.assert_array_equal(ours.best_elite[name], theirs.best_elite[name])


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("kind", ["grid", "cvt", "fine_grid"])
def test_large_batch_matches_ribs(kind, aligned):
    """Few winners for grid/cvt; most rows winning for fine_grid. Aligned solutions
    are read by the kernel in place (no staging copy); the caller then overwrites
    them, which must not change the archive."""
    rng = np.random.default_rng(7)
    batch, dim = 1500, 100  # 1500 * 100 * 8 bytes = 1.2 MB > 1 MiB.
    if kind in ("grid", "fine_grid"):
        dims = [8, 8] if kind == "grid" else [200, 200]
        kwargs = dict(solution_dim=dim, dims=dims, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    else:
        centroids = rng.uniform(-1, 1, size=(50, 2))
        kwargs = dict(solution_dim=dim, centroids=centroids, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = CVTArchive(**kwargs), ribs.archives.CVTArchive(**kwargs)
    for step in range(3):
        solution = rng.normal(size=(batch, dim))
        if aligned:
            solution = at_offset(solution, 0)
        objective = rng.normal(size=batch) + step
        measures = rng.uniform(-1.2, 1.2, size=(batch, 2))
        a = ours.add(solution, objective, measures)
        b = theirs.add(solution, objective, measures)
        np.testing.assert_array_equal(a["status"], b["status"])
        np.testing.assert_allclose(a["value"], b["value"])
        solution[:] = np.nan  # The caller reuses its array.
    da, db = ours.data(), theirs.data()
    for name in db:
        np.testing.assert_array_equal(da[name], db[name], err_msg=name)
    np.testing.assert_array_equal(ours.best_elite["solution"], theirs.best_elite["solution"])


@pytest.mark.parametrize("dtype, dim", [(np.float32, 100), (np.float64, 101)])
def test_misaligned_batches_read_in_place_match_ribs(monkeypatch, dtype, dim):
    """Batches whose first row is misaligned are passed from their first aligned row
    on (a RowSplit; the aligned row changes from call to call, offset 8 cannot be
    split for 400-byte rows), a wide extra field too (a small one, packed with the
    objective, is staged); the caller then overwrites them. Archive contents match
    pyribs."""
    monkeypatch.setattr(InputStaging, "pass_through_bytes", 4096)
    splits = _record_calls(monkeypatch, "_split", "start")
    rng = np.random.default_rng(11)
    batch = 600
    extra = {"wide": ((20,), dtype), "tag": ((2,), dtype)}
    kwargs = dict(solution_dim=dim, dims=[12, 12], ranges=[(-1, 1), (-1, 1)],
                  extra_fields=extra, dtype=dtype)
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    for step, offset in enumerate([16, 48, 32, 8, 16]):
        data = {"solution": rng.normal(size=(batch, dim)),
                "wide": rng.normal(size=(batch, 20)),
                "tag": rng.normal(size=(batch, 2))}
        data = {name: at_offset(values.astype(dtype), offset)
                for name, values in data.items()}
        objective = rng.normal(size=batch).astype(dtype) + step
        measures = rng.uniform(-1.2, 1.2, size=(batch, 2)).astype(dtype)
        _add_to_both(ours, theirs, data, objective, measures)
    _assert_same_contents(ours, theirs)
    if not STAGES_INPUTS:
        assert not splits
        return
    starts = {start for name, start in splits if name == "solution"}
    assert len(starts - {None}) >= 2  # Several aligned rows, one compiled kernel.
    # Only fields with a block of their own are split ("tag" is packed).
    assert {name for name, start in splits if start is not None} == {"solution", "wide"}


@pytest.mark.parametrize("dims, dense", [([20, 20], True), ([40, 40], False)])
def test_misaligned_rows_that_never_align_match_ribs(monkeypatch, dims, dense):
    """float64 rows of 100 and 20 values (800 and 160 bytes) whose rows never start
    aligned are read in place as ShiftedRows when the batch is at least half the
    capacity (the view's offset changes from call to call; a small field, packed
    with the objective, is staged), and copied otherwise; the caller then
    overwrites its arrays. Archive contents match pyribs, also when few rows win."""
    monkeypatch.setattr(InputStaging, "pass_through_bytes", 4096)
    shifts = _record_calls(monkeypatch, "_shift", "offset")
    rng = np.random.default_rng(13)
    batch, dim = 600, 100
    extra = {"wide": ((20,), np.float64), "tag": ((2,), np.float64)}
    kwargs = dict(solution_dim=dim, dims=dims, ranges=[(-1, 1), (-1, 1)],
                  extra_fields=extra, dtype=np.float64)
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    assert (2 * batch >= ours.cells) == dense
    # Offsets 16, 48, 8 and 40 bytes: 6, 2, 7 and 3 values before alignment.
    compiled = []
    for step, offset in enumerate([16, 48, 8, 40, 16, 0]):
        data = {"solution": rng.normal(size=(batch, dim)),
                "wide": rng.normal(size=(batch, 20)),
                "tag": rng.normal(size=(batch, 2))}
        data = {name: at_offset(values, offset) for name, values in data.items()}
        # Step 4 improves few cells. Objective and measures are always staged.
        objective = at_offset(rng.normal(size=batch) + (step if step != 4 else -2.0), 16)
        measures = at_offset(rng.uniform(-1.2, 1.2, size=(batch, 2)), 16)
        _add_to_both(ours, theirs, data, objective, measures)
        compiled.append(_compiled_kernels(ours))
    _assert_same_contents(ours, theirs)
    assert compiled[3] == compiled[1]  # Offsets 48, 8 and 40 share one kernel.
    if not dense or not STAGES_INPUTS:
        assert not shifts
        return
    offsets = {offset for name, offset in shifts if name == "solution"}
    assert offsets == {6, 2, 7, 3}
    # Only fields with a block of their own are gathered ("tag" is packed).
    assert {name for name, offset in shifts if offset is not None} == {"solution", "wide"}
