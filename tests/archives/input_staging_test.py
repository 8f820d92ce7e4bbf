"""Tests for ribsax.archives._input_staging.InputStaging."""
import os
import threading

import jax
import numpy as np
import pytest

from ribsax._utils import ZERO_COPY_ALIGNMENT, aligned_empty
from ribsax.archives import GridArchive
from ribsax.archives._field_table import RowSplit, ShiftedRows
from ribsax.archives._input_staging import InputStaging, _shifted_offset
from tests.archives.alignment_helpers import at_offset

FIELDS = (("solution", np.dtype(np.float32)), ("objective", np.dtype(np.float32)))


def _data(rng, n, dtype=np.float64):
    return {"solution": rng.normal(size=(n, 3)).astype(dtype),
            "objective": rng.normal(size=n).astype(dtype)}


def test_put_copies_into_device_arrays_and_converts_dtype():
    staging = InputStaging(jax.devices("cpu")[0])
    data = _data(np.random.default_rng(0), 5)
    out = staging.put(data, FIELDS)
    for name, dtype in FIELDS:
        assert isinstance(out[name], jax.Array)
        assert out[name].dtype == dtype
        np.testing.assert_array_equal(np.asarray(out[name]), data[name].astype(dtype))


def test_buffers_are_reused_per_shape_and_overwritten():
    staging = InputStaging(jax.devices("cpu")[0])
    rng = np.random.default_rng(1)
    first = staging.put(_data(rng, 4), FIELDS)["solution"]
    later = _data(rng, 4)
    second = staging.put(later, FIELDS)["solution"]
    assert second is first
    np.testing.assert_array_equal(np.asarray(second), later["solution"].astype(np.float32))
    other = staging.put(_data(rng, 6), FIELDS)["solution"]
    assert other is not first and other.shape == (6, 3)


def test_number_of_buffers_is_bounded():
    staging = InputStaging(jax.devices("cpu")[0])
    rng = np.random.default_rng(2)
    for n in range(1, 3 * InputStaging.max_buffers):
        staging.put(_data(rng, n), FIELDS)
    # pylint: disable-next = protected-access
    assert len(staging._buffers) <= InputStaging.max_buffers


def test_empty_batches_and_disabled_staging_pass_numpy_through():
    rng = np.random.default_rng(3)
    empty = InputStaging(jax.devices("cpu")[0]).put(_data(rng, 0), FIELDS)
    assert all(isinstance(a, np.ndarray) and len(a) == 0 for a in empty.values())
    data = _data(rng, 3)
    out = InputStaging(None).put(data, FIELDS)
    for name, dtype in FIELDS:
        assert isinstance(out[name], np.ndarray) and out[name].dtype == dtype
        np.testing.assert_array_equal(out[name], data[name].astype(dtype))


def test_staged_buffers_are_the_ones_put_copies_into():
    staging = InputStaging(jax.devices("cpu")[0])
    rng = np.random.default_rng(6)
    buffers = staging.staged_buffers([("solution", np.dtype(np.float32), (3,)),
                                      ("objective", np.dtype(np.float32), ())], 5)
    assert [b.device_array.shape for b in buffers] == [(5, 3), (5,)]
    data = _data(rng, 5)
    out = staging.put(data, FIELDS)
    for (name, _), buffer in zip(FIELDS, buffers):
        assert out[name] is buffer.device_array
    # Filling the host views as put does is what the kernel reads.
    later = _data(rng, 5)
    for (name, _), buffer in zip(FIELDS, buffers):
        np.copyto(buffer.host_view, later[name], casting="unsafe")
        np.testing.assert_array_equal(np.asarray(buffer.device_array),
                                      later[name].astype(np.float32))


def test_staged_buffers_only_where_put_always_copies():
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    fields = [("solution", np.dtype(np.float32), (3,)),
              ("objective", np.dtype(np.float32), (1,))]
    # 85 rows: 1020 and 340 bytes; 86 rows: the solutions take 1032 and may pass.
    assert [b is not None for b in staging.staged_buffers(fields, 85)] == [True, True]
    assert [b is not None for b in staging.staged_buffers(fields, 86)] == [False, True]
    assert staging.staged_buffers(fields, 0) == (None, None)  # put passes NumPy.
    assert InputStaging(None).staged_buffers(fields, 4) == (None, None)  # Not CPU.


@pytest.mark.parametrize("batches", [[7, 7, 7], [7, 3, 7, 1]])
def test_archive_keeps_its_copy_when_the_caller_reuses_arrays(batches):
    """add() copies each batch: rewriting the caller's arrays (or the staging
    buffers, by the next add) never changes what an earlier add stored."""
    archive = GridArchive(solution_dim=3, dims=[10], ranges=[(0, 1)], dtype=np.float32)
    rng = np.random.default_rng(4)
    expected = {}
    solution = np.empty((max(batches), 3), np.float32)
    for step, n in enumerate(batches):
        solution[:n] = rng.normal(size=(n, 3))
        measures = ((np.arange(n) + 0.5) / 10 + step / 100)[:, None].astype(np.float32)
        objective = np.full(n, step + 1.0, np.float32)
        archive.add(solution[:n], objective, measures)
        for row, cell in zip(solution[:n], archive.index_of(measures)):
            expected[int(cell)] = row.copy()
        solution[:] = np.nan  # The caller reuses its buffer.
    data = archive.data()
    assert len(data["index"]) == len(expected)
    for cell, row in zip(data["index"], data["solution"]):
        np.testing.assert_array_equal(row, expected[int(cell)])


def test_large_copies_are_split_over_two_threads_and_exact():
    staging = InputStaging(jax.devices("cpu")[0])
    staging.parallel_copy_bytes = 1024
    rng = np.random.default_rng(5)
    for n in (1, 2, 301):  # One row cannot be split; odd sizes split unevenly.
        data = _data(rng, n)
        data["solution"] = rng.normal(size=(n, 300))
        fields = (("solution", np.dtype(np.float32)), ("objective", np.dtype(np.float32)))
        out = staging.put(data, fields)
        np.testing.assert_array_equal(np.asarray(out["solution"]),
                                      data["solution"].astype(np.float32))
    if (os.cpu_count() or 1) > 1:
        assert any(t.name.startswith("ribsax-copy") for t in threading.enumerate())


def test_large_aligned_arrays_are_passed_without_a_copy():
    """Only large, aligned, contiguous arrays of the kernel dtype skip the staging."""
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    rng = np.random.default_rng(6)
    aligned = aligned_empty((64, 8), np.float32)
    aligned[...] = rng.normal(size=(64, 8))
    misaligned = at_offset(aligned, 16)
    wide = aligned_empty((64, 16), np.float32)
    wide[...] = rng.normal(size=(64, 16))
    small = aligned_empty((4, 8), np.float32)
    other = aligned_empty((64, 8), np.float64)
    other[...] = rng.normal(size=(64, 8))  # Not garbage, which may overflow float32.
    cases = {
        "aligned": (aligned, True),
        "misaligned": (misaligned, False),
        "strided": (wide[:, ::2], False),
        "other dtype": (other, False),
        "small": (small, False),
    }
    for name, (array, passed) in cases.items():
        out = staging.put({"solution": array}, [("solution", np.dtype(np.float32))])
        assert (out["solution"] is array) == passed, name
        np.testing.assert_array_equal(np.asarray(out["solution"]),
                                      array.astype(np.float32), err_msg=name)


@pytest.mark.parametrize("dtype, width, offset, start, head_rows", [
    (np.float32, 100, 16, 3, 4),  # 400-byte rows: row 3 starts aligned.
    (np.float32, 100, 48, 1, 4),
    (np.float32, 7, 4, 9, 16),  # 28-byte rows: 4 + 9 * 28 = 256; period 16 rows.
    (np.float64, 3, 40, 1, 8),
])
def test_misaligned_row_fields_are_split_at_an_aligned_row(dtype, width, offset, start,
                                                           head_rows):
    """The tail is a view of the caller's rows from the first aligned row on; the
    head holds a copy of the rest, in batch order."""
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    rng = np.random.default_rng(8)
    array = at_offset(rng.normal(size=(300, width)).astype(dtype), offset)
    out = staging.put({"solution": array}, [("solution", np.dtype(dtype))],
                      row_fields={"solution"})["solution"]
    assert isinstance(out, RowSplit)
    assert int(out.start) == start and out.head.shape == (head_rows, width)
    assert out.tail.ctypes.data % ZERO_COPY_ALIGNMENT == 0
    assert np.shares_memory(out.tail, array) and len(out.tail) == 300 - head_rows
    np.testing.assert_array_equal(np.asarray(out.joined()), array)


def test_row_split_only_where_it_applies():
    """Fields not named in row_fields, small arrays, other dtypes, strided arrays,
    batches no longer than the head and row sizes whose boundaries are never
    aligned are staged as before; aligned arrays are passed as they are."""
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    rng = np.random.default_rng(9)
    f32 = np.dtype(np.float32)
    rows = rng.normal(size=(300, 100)).astype(np.float32)
    cases = {
        # (array, kernel dtype, in row_fields): expected kind of output
        "not a row field": ((at_offset(rows, 16), f32, False), "staged"),
        "small": ((at_offset(rows[:2], 16), f32, True), "staged"),
        "other dtype": ((at_offset(rows.astype(np.float64), 16), f32, True), "staged"),
        "strided": ((at_offset(np.repeat(rows, 2, axis=1), 16)[:, ::2], f32, True),
                    "staged"),
        "short batch": ((at_offset(np.repeat(rows[:4], 200, axis=1), 16), f32, True),
                        "staged"),
        # 800-byte rows 16 bytes past alignment: every row starts 16 or 48 past it.
        "never aligned": ((at_offset(rows.astype(np.float64), 16),
                           np.dtype(np.float64), True), "staged"),
        "aligned": ((at_offset(rows, 0), f32, True), "as is"),
        "split": ((at_offset(rows, 16), f32, True), "split"),
    }
    for name, ((array, dtype, is_row_field), kind) in cases.items():
        out = staging.put({"solution": array}, [("solution", dtype)],
                          row_fields={"solution"} if is_row_field else ())["solution"]
        got = ("split" if isinstance(out, RowSplit) else
               "as is" if out is array else "staged")
        assert got == kind, name
        whole = out.joined() if isinstance(out, RowSplit) else out
        np.testing.assert_array_equal(np.asarray(whole), array.astype(dtype),
                                      err_msg=name)


@pytest.mark.parametrize("dtype, width, offset", [
    (np.float64, 100, 16),  # 800-byte rows: every row starts 16 or 48 bytes past.
    (np.float64, 100, 48),
    (np.float32, 64, 16),  # 256-byte rows: every row starts 16 bytes past.
    (np.float64, 8, 8),  # 64-byte rows, the narrowest; 7 values before alignment.
])
def test_row_fields_that_never_align_are_gathered_in_place(dtype, width, offset):
    """With gather_rows, the flat view starts at the first aligned value of the
    caller's batch and is read in place; the first and last rows are staged."""
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    rng = np.random.default_rng(10)
    array = at_offset(rng.normal(size=(300, width)).astype(dtype), offset)
    out = staging.put({"solution": array}, [("solution", np.dtype(dtype))],
                      row_fields={"solution"}, gather_rows=True)["solution"]
    assert isinstance(out, ShiftedRows)
    itemsize = np.dtype(dtype).itemsize
    assert int(out.offset) == (ZERO_COPY_ALIGNMENT - offset) // itemsize
    assert out.flat.ctypes.data % ZERO_COPY_ALIGNMENT == 0
    assert np.shares_memory(out.flat, array)
    assert out.flat.size == array.size - ZERO_COPY_ALIGNMENT // itemsize
    assert out.ends.shape == (2, width) and out.batch == 300
    np.testing.assert_array_equal(np.asarray(out.joined()), array)


def test_shifted_rows_only_where_they_apply():
    """Without gather_rows, for fields not named in row_fields, where a row split
    or the array itself serves, for values not aligned to their size, rows under
    64 bytes and batches under 3 rows, the earlier paths are taken."""
    staging = InputStaging(jax.devices("cpu")[0])
    staging.pass_through_bytes = 1024
    rng = np.random.default_rng(12)
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    rows = rng.normal(size=(300, 100))
    cases = {
        # (array, kernel dtype, in row_fields, gather_rows): expected kind
        "shifted": ((at_offset(rows, 16), f64, True, True), "shifted"),
        "gather_rows off": ((at_offset(rows, 16), f64, True, False), "staged"),
        "not a row field": ((at_offset(rows, 16), f64, False, True), "staged"),
        "split preferred": ((at_offset(rows.astype(f32), 16), f32, True, True), "split"),
        "aligned": ((at_offset(rows, 0), f64, True, True), "as is"),
        "values not aligned": ((at_offset(rows, 20), f64, True, True), "staged"),
        # 32-byte rows 16 bytes past alignment: no row split either.
        "narrow rows": ((at_offset(np.repeat(rows[:, :4], 4, axis=0), 16), f64, True,
                         True), "staged"),
        "two rows": ((at_offset(np.repeat(rows[:2], 2, axis=1), 16), f64, True, True),
                     "staged"),
    }
    for name, ((array, dtype, is_row_field, gather), kind) in cases.items():
        assert array.nbytes >= staging.pass_through_bytes, name
        out = staging.put({"solution": array}, [("solution", dtype)],
                          row_fields={"solution"} if is_row_field else (),
                          gather_rows=gather)["solution"]
        got = ("shifted" if isinstance(out, ShiftedRows) else
               "split" if isinstance(out, RowSplit) else
               "as is" if out is array else "staged")
        assert got == kind, name
        whole = out.joined() if isinstance(out, (RowSplit, ShiftedRows)) else out
        np.testing.assert_array_equal(np.asarray(whole), array.astype(dtype),
                                      err_msg=name)


def test_shifted_rows_need_int32_positions():
    """Batches with 2**31 - 1 values or more are not gathered (the gather's
    positions are int32)."""
    fits = np.broadcast_to(np.zeros((1, 8)), (2**28 - 1, 8))
    too_big = np.broadcast_to(np.zeros((1, 8)), (2**28, 8))
    assert _shifted_offset(fits, 16) == 6
    assert _shifted_offset(too_big, 16) is None
