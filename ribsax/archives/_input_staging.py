"""Reusable device buffers for handing host batches to the archive add kernel.

On the CPU backend a NumPy argument of a jitted function is read without a copy only
when its data is 64-byte aligned; NumPy's allocator gives 16-byte alignment, so JAX
usually copies a batch into a fresh buffer, through an asynchronous host-to-device
hand-off. Copying the batch ourselves into a buffer that already belongs to a device
array, and passing that array, measured 4-8% faster per ``add`` on the 2-core CPU
(GridArchive, batches of 540 and 10,000, float32 and float64, in one process against
the previous code).

Large arrays (at least :attr:`InputStaging.pass_through_bytes`) that are already
64-byte aligned, C-contiguous and of the kernel's dtype are passed as they are, and
JAX reads them in place: no copy at all. That is the usual case for solutions that
come from ``Scheduler.ask``, which allocates them aligned for this reason. With
aligned 10,000 x 100 solutions it measured 1.18 -> 0.89 ms per ``add`` in float32 and
2.65 -> 1.79 ms in float64 (GridArchive, same process); with every other batch
aligned, 1.38 -> 1.18 ms and 1.89 -> 1.63 ms. Smaller arrays are always staged: at
batch 540 switching between the two argument forms measured slower (150 vs 137 us)
than copying. The caller's array is safe to reuse afterwards because ``_insert``
waits for the kernel before returning.

A large batch field that the kernel only writes to the store (solutions, extra
fields; named in ``put``'s ``row_fields``) and whose first row is misaligned is
usually still read in place: when some row ``start`` among the first few begins on a
64-byte boundary (NumPy's large arrays start 16 bytes past one, so for 100 float32
values per row, 400 bytes, row 3 does), the rows from there on are passed as they
are and only a handful of rows around them are copied (a
:class:`~ribsax.archives._field_table.RowSplit`). Scattering 10,000 such rows of 100
float32 values into a store measured 642 -> 238 us against copying them first.

When no row boundary is ever aligned (100 float64 values per row, 800 bytes, start
16 or 48 bytes past one) and the batch is at least half the archive's capacity
(``put``'s ``gather_rows``), such a field is passed as a
:class:`~ribsax.archives._field_table.ShiftedRows`: one flat view of the batch from
its first aligned value on, read in place, with the first and last rows copied; the
kernel gathers every cell's row out of it. For 10,000 rows into 10,000 cells this
measured 1.59-1.89 -> 1.27-1.49 ms per ``add`` (GridArchive, float64, same process).

Fields that :meth:`InputStaging.put` always copies (under
:attr:`InputStaging.pass_through_bytes`) can skip it:
:meth:`InputStaging.staged_buffers` hands out their buffers once, and
``ThresholdArchive._insert`` copies each later batch of that size straight into them.

Writing into a device array's memory is safe here because of three invariants kept by
:class:`InputStaging` and its only caller (``ThresholdArchive._insert``):

1. the buffers are private: they are created here, passed only as inputs (never
   donated, never returned to users), so no other computation reads them;
2. every kernel call that reads them has finished before they are written again:
   ``_insert`` reads the kernel's packed output (which waits for the whole
   executable) before returning;
3. only CPU devices are staged, whose buffers are host memory; on other backends the
   NumPy arrays are passed as before and JAX transfers them.
"""
from __future__ import annotations

import ctypes
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import jax.numpy as jnp
import numpy as np

from ribsax._utils import ZERO_COPY_ALIGNMENT
from ribsax.archives._field_table import RowSplit, ShiftedRows, shifted_pad

__all__ = ["InputStaging"]

_CORES = os.cpu_count() or 1
_COPY_POOL = (None, None)  # (process id, executor)
_COPY_POOL_LOCK = threading.Lock()


def _copy_pool():
    """One worker thread for splitting large copies (created on first use, and
    again in a forked child, where the parent's thread does not exist)."""
    global _COPY_POOL  # pylint: disable = global-statement
    with _COPY_POOL_LOCK:
        pid, pool = _COPY_POOL
        if pool is None or pid != os.getpid():
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ribsax-copy")
            _COPY_POOL = (os.getpid(), pool)
        return pool


def _copy(destination, source, parallel_bytes):
    """``np.copyto`` (unsafe casting), in two halves on two threads when large.

    A copy of several MiB is limited by one core's memory bandwidth; the second
    half on a worker thread (NumPy releases the GIL while copying) measured
    151 -> 87 us for 4 MB on the 2-core CPU.
    """
    if destination.nbytes < parallel_bytes or len(destination) < 2 or _CORES < 2:
        np.copyto(destination, source, casting="unsafe")
        return
    half = len(destination) // 2
    future = _copy_pool().submit(np.copyto, destination[half:], source[half:],
                                 casting="unsafe")
    try:
        np.copyto(destination[:half], source[:half], casting="unsafe")
    finally:
        future.result()


def _large_kernel_array(array, dtype, min_bytes) -> bool:
    """Whether ``array`` is a C-contiguous NumPy array of ``dtype`` with at least
    ``min_bytes`` bytes (JAX reads such an array in place where it is aligned)."""
    # pylint: disable-next = unidiomatic-typecheck
    return (type(array) is np.ndarray and array.nbytes >= min_bytes
            and array.dtype == dtype and array.flags.c_contiguous)


def _aligned_row_split(array, address):
    """``(start, head_rows)`` for passing ``array`` (C-contiguous, data at
    ``address``) as a :class:`RowSplit`, or None when no row boundary is aligned.

    ``start`` is the first row that begins on a :data:`ZERO_COPY_ALIGNMENT` boundary;
    ``head_rows`` is the number of rows after which the boundaries' alignment repeats
    (so ``start < head_rows``), fixed by the row size alone: one compiled kernel
    serves every ``start``.
    """
    if array.ndim == 0:
        return None
    row_bytes = array.strides[0]
    step = math.gcd(row_bytes, ZERO_COPY_ALIGNMENT)
    missing = -address % ZERO_COPY_ALIGNMENT
    if row_bytes == 0 or missing % step:
        return None
    head_rows = ZERO_COPY_ALIGNMENT // step
    if len(array) <= head_rows:
        return None
    # start * row_bytes = missing (mod ALIGNMENT), i.e. start * (row_bytes / step) =
    # missing / step (mod head_rows), where row_bytes / step is invertible.
    start = missing // step * pow(row_bytes // step, -1, head_rows) % head_rows
    return start, head_rows


def _shifted_offset(array, address):
    """Offset (in values) of the first :data:`ZERO_COPY_ALIGNMENT`-aligned value of
    ``array`` (C-contiguous, data at ``address``) for passing it as a
    :class:`ShiftedRows`, or None when that view cannot be made or would not help:
    values not aligned to their size, rows narrower than 64 bytes, fewer than 3 rows
    (the first and last are copied anyway), or more values than int32 indexes."""
    itemsize = array.itemsize
    missing = -address % ZERO_COPY_ALIGNMENT
    if (array.ndim == 0 or ZERO_COPY_ALIGNMENT % itemsize or missing % itemsize
            or len(array) < 3 or array.size >= np.iinfo(np.int32).max
            or array.size // len(array) < shifted_pad(array.dtype)):
        return None
    return missing // itemsize


class _Buffer:
    """One device array with a writable host view of its memory."""

    def __init__(self, shape, dtype, device):
        self.device_array = jnp.zeros(shape, dtype, device=device)
        if self.device_array.dtype != dtype:  # Not representable on the device.
            raise TypeError(f"cannot stage {np.dtype(dtype)} arrays")
        nbytes = self.device_array.nbytes
        raw = (ctypes.c_byte * nbytes).from_address(
            self.device_array.unsafe_buffer_pointer())
        self.host_view = np.frombuffer(raw, dtype=dtype).reshape(shape)


class InputStaging:
    """Copies host batches into private device buffers, reused between calls.

    Args:
        device: JAX device the kernel runs on. Staging is enabled only when it is a
            CPU device; otherwise :meth:`put` returns the NumPy arrays unchanged.
    """

    #: Most buffers kept at once (one per field and batch shape); when a new shape
    #: would exceed it, the oldest buffer is dropped.
    max_buffers = 12

    #: Copies of at least this many bytes are split over two threads.
    parallel_copy_bytes = 1 << 20

    #: Arrays of at least this many bytes that JAX can read in place (see the module
    #: docstring) are passed without a copy.
    pass_through_bytes = 1 << 20

    def __init__(self, device):
        self._enabled = device is not None and device.platform == "cpu"
        self._device = device
        self._buffers = {}

    @classmethod
    def for_array(cls, array) -> "InputStaging":
        """Staging for the device that holds ``array`` (a JAX array)."""
        devices = array.devices()
        return cls(next(iter(devices)) if len(devices) == 1 else None)

    def put(self, data: dict, fields, row_fields=(), gather_rows=False) -> dict:
        """Kernel arguments for ``fields`` of ``data``.

        Args:
            data: name -> NumPy array (batch first).
            fields: Iterable of ``(name, dtype)``.
            row_fields: Names of fields that the kernel only writes to the store
                row by row (through :meth:`FieldTable.write_rows
                <ribsax.archives._field_table.FieldTable.write_rows>`); these may
                be passed as a :class:`RowSplit`.
            gather_rows: Whether ``row_fields`` may also be passed as a
                :class:`ShiftedRows`, whose rows are gathered into every cell of
                the store block: worth it when the batch is at least half the
                archive's capacity.

        Returns:
            name -> array to pass to the kernel: on CPU devices a staged device
            array holding a copy of ``data[name]`` converted to ``dtype``, or
            ``data[name]`` itself when JAX can read it in place (large, aligned,
            contiguous, of ``dtype``), or for ``row_fields`` a :class:`RowSplit`
            of it when a later row boundary is aligned (the rows from there on read
            in place, the others staged), or else with ``gather_rows`` a
            :class:`ShiftedRows` of it (read in place from its first aligned value,
            with its first and last rows staged); otherwise ``np.asarray(data[name],
            dtype=dtype)``. Staged arrays are only valid until the next call of
            :meth:`put`, which overwrites them; the caller must wait for the kernel
            that reads them before calling it again (or before the caller's arrays
            change).
        """
        if not self._enabled:
            return {name: np.asarray(data[name], dtype=dtype) for name, dtype in fields}
        out = {}
        min_bytes = self.pass_through_bytes
        for name, dtype in fields:
            array = data[name]
            if _large_kernel_array(array, dtype, min_bytes):
                address = array.ctypes.data
                if address % ZERO_COPY_ALIGNMENT == 0:
                    out[name] = array
                    continue
                if name in row_fields:
                    split = self._split(name, array, address)
                    if split is None and gather_rows:
                        split = self._shift(name, array, address)
                    if split is not None:
                        out[name] = split
                        continue
            key = (name, np.shape(array), dtype)
            buffer = self._buffer(key)
            if buffer is None:
                out[name] = np.asarray(array, dtype=dtype)
                continue
            _copy(buffer.host_view, np.asarray(array), self.parallel_copy_bytes)
            out[name] = buffer.device_array
        return out

    def staged_buffers(self, fields, batch: int) -> tuple:
        """The buffers that :meth:`put` copies a batch of ``batch`` rows into, for the
        fields that it copies whatever arrays it is given.

        Those are, on CPU devices, the fields that take fewer than
        :attr:`pass_through_bytes` for such a batch in the kernel's dtype (an array
        of another dtype is always copied), of a dtype the device can hold. A caller
        may copy its batches of these fields into the buffers itself
        (``np.copyto(host_view, array, casting="unsafe")``, as :meth:`put` does) and
        pass their device arrays, under the rules of :meth:`put`.

        Args:
            fields: Iterable of ``(name, dtype, shape)``, ``shape`` being that of one
                row.
            batch: Number of rows.

        Returns:
            One entry per field: its buffer (``host_view``, ``device_array``), or None
            where :meth:`put` may pass the field otherwise.
        """
        buffers = []
        for name, dtype, shape in fields:
            full_shape = (batch, *shape)
            nbytes = math.prod(full_shape) * np.dtype(dtype).itemsize
            buffers.append(self._buffer((name, full_shape, dtype))
                           if self._enabled and nbytes < self.pass_through_bytes
                           else None)
        return tuple(buffers)

    def _buffer(self, key):
        """The staging buffer for ``key = (name, shape, dtype)``, created on first use
        (the oldest one is dropped beyond :attr:`max_buffers`), or None for an empty
        shape or a dtype the device cannot hold."""
        buffer = self._buffers.get(key)
        if buffer is not None:
            return buffer
        _, shape, dtype = key
        if not np.prod(shape, dtype=np.int64):
            return None
        buffers = self._buffers
        if len(buffers) >= self.max_buffers:
            del buffers[next(iter(buffers))]  # The oldest one.
        try:
            buffer = buffers[key] = _Buffer(shape, dtype, self._device)
        except TypeError:
            return None
        return buffer

    def _split(self, name, array, address):
        """``array`` (data at ``address``) as a :class:`RowSplit` whose tail JAX reads
        in place, or None."""
        layout = _aligned_row_split(array, address)
        if layout is None:
            return None
        start, head_rows = layout
        n_tail = len(array) - head_rows
        key = (name, (head_rows, *array.shape[1:]), array.dtype)
        buffer = self._buffer(key)
        if buffer is None:
            return None
        head = buffer.host_view
        head[:start] = array[:start]
        head[start:] = array[start + n_tail:]
        return RowSplit(array[start:start + n_tail], buffer.device_array,
                        np.int32(start))

    def _shift(self, name, array, address):
        """``array`` (data at ``address``) as a :class:`ShiftedRows` whose flat view
        JAX reads in place, or None."""
        offset = _shifted_offset(array, address)
        if offset is None:
            return None
        key = (name, (2, *array.shape[1:]), array.dtype)
        buffer = self._buffer(key)
        if buffer is None:
            return None
        ends = buffer.host_view
        ends[0] = array[0]
        ends[1] = array[-1]
        flat = array.reshape(-1)[offset:offset + array.size - shifted_pad(array.dtype)]
        return ShiftedRows(flat, buffer.device_array, np.int32(offset))
