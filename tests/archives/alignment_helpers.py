"""Arrays at chosen memory alignments, for tests of the in-place input paths."""
import numpy as np

from ribsax._utils import ZERO_COPY_ALIGNMENT


def at_offset(array, offset):
    """A copy of ``array`` whose data starts ``offset`` bytes past a
    ``ZERO_COPY_ALIGNMENT`` (64-byte) boundary."""
    array = np.asarray(array)
    raw = np.empty(array.nbytes + 2 * ZERO_COPY_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ZERO_COPY_ALIGNMENT + offset
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out
