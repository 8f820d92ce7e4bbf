"""Tests for helpers of ribsax._utils not covered through the archives."""
import jax
import numpy as np

from ribsax._utils import to_device
from tests.compile_counter import count_compilations


def test_to_device_copies_host_data_without_compiling():
    with count_compilations() as compiled:
        for shape in [(3,), (5, 7), (11, 2, 3)]:
            host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
            out = to_device(host, np.float32)
            assert isinstance(out, jax.Array) and out.dtype == np.float32
            np.testing.assert_array_equal(np.asarray(out), host.astype(np.float32))
            host[...] = -1  # The device copy does not follow the host array.
            assert np.asarray(out).reshape(-1)[0] == 0.0
    assert compiled.count == 0


def test_to_device_returns_device_arrays_of_the_dtype_as_they_are():
    array = jax.numpy.ones(4, np.float32)
    assert to_device(array) is array
    assert to_device(array, np.float32) is array
    assert to_device([1, 2]).dtype == np.int64
