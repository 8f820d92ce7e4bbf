"""Arrays at chosen memory alignments, for tests of callers' array layouts."""

import numpy as np


def at_offset(array, offset):
    """A copy of ``array`` whose data starts ``offset`` bytes past a 64-byte
    boundary."""
    array = np.asarray(array)
    raw = np.empty(offset + array.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out
