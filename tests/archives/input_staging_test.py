"""Tests for ribsax.archives._input_staging.InputStaging."""
import os
import threading

import jax
import numpy as np
import pytest

from ribsax._utils import ZERO_COPY_ALIGNMENT, aligned_empty
from ribsax.archives import GridArchive
from ribsax.archives._input_staging import InputStaging

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
    raw = np.empty(aligned.nbytes + ZERO_COPY_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ZERO_COPY_ALIGNMENT + 16  # 16 bytes past alignment.
    misaligned = raw[start:start + aligned.nbytes].view(np.float32).reshape(64, 8)
    misaligned[...] = aligned
    wide = aligned_empty((64, 16), np.float32)
    wide[...] = rng.normal(size=(64, 16))
    small = aligned_empty((4, 8), np.float32)
    cases = {
        "aligned": (aligned, True),
        "misaligned": (misaligned, False),
        "strided": (wide[:, ::2], False),
        "other dtype": (aligned_empty((64, 8), np.float64), False),
        "small": (small, False),
    }
    for name, (array, passed) in cases.items():
        out = staging.put({"solution": array}, [("solution", np.dtype(np.float32))])
        assert (out["solution"] is array) == passed, name
        np.testing.assert_array_equal(np.asarray(out["solution"]),
                                      array.astype(np.float32), err_msg=name)
