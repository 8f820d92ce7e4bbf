"""Tests for helpers of ribsax._utils not covered through the archives."""
import numpy as np
import pytest

from ribsax._utils import ZERO_COPY_ALIGNMENT, aligned_empty


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.bool_])
@pytest.mark.parametrize("shape", [(0,), (3,), (5, 7), (2, 3, 4)])
def test_aligned_empty(shape, dtype):
    arrays = [aligned_empty(shape, dtype) for _ in range(8)]
    for array in arrays:
        assert array.shape == shape and array.dtype == dtype
        assert array.flags.c_contiguous and array.flags.writeable
        if array.size:  # NumPy gives empty arrays a placeholder address.
            assert array.ctypes.data % ZERO_COPY_ALIGNMENT == 0
    arrays[0][...] = 1
    arrays[1][...] = 0
    assert np.all(arrays[0] == 1)


def test_aligned_empty_rejects_object_dtype():
    with pytest.raises(TypeError, match="numeric dtype"):
        aligned_empty((2,), object)
