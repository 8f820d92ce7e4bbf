"""Arrays at chosen memory alignments, for tests of the in-place input paths."""
import numpy as np

from ribsax._utils import aligned_empty
from tests.backend import ON_CPU

#: InputStaging copies and reads arrays in place only for CPU devices; on others (a
#: GPU) ``put`` hands the arrays to JAX as they are, so nothing is split or shifted.
STAGES_INPUTS = ON_CPU


def at_offset(array, offset):
    """A copy of ``array`` whose data starts ``offset`` bytes past a
    ``ZERO_COPY_ALIGNMENT`` (64-byte) boundary."""
    array = np.asarray(array)
    raw = aligned_empty((offset + array.nbytes,), np.uint8)
    out = raw[offset:].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out
