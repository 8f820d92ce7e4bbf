"""FieldTable: the fields of a store, with small same-dtype fields packed together.

An archive insertion writes every field of the winning rows. On XLA:CPU each scatter
costs about 5 ns per written row whatever the row width, so writing ``objective``,
``threshold`` and ``measures`` as three scatters of narrow rows cost three times one
scatter of their concatenation (GridArchive, 10,000 cells, 6,350 rows written: about
150 us saved per add). A :class:`FieldTable` therefore keeps each group of small
fields that share a dtype as the columns of one ``(capacity, width)`` block, and
presents the usual mapping ``name -> (capacity, *shape) array`` on top (column slices,
free inside jitted code).
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import ZERO_COPY_ALIGNMENT

__all__ = ["FieldTable", "RowSplit", "ShiftedRows", "table_layout"]

#: Fields with at most this many values per cell are packed with others of their
#: dtype; wider ones (solutions) get a block of their own.
PACK_WIDTH_LIMIT = 16


class RowSplit(NamedTuple):
    """The rows of one batch field, handed to a kernel in two parts.

    A large batch whose first row is not 64-byte aligned would have to be copied
    before a jitted CPU kernel can read it (see
    :mod:`ribsax.archives._input_staging`), but often a later row boundary is
    aligned: ``tail`` is then the caller's rows from ``start`` on, read in place, and
    only the few rows around it travel in ``head``. The batch has
    ``len(tail) + len(head)`` rows:

    * ``tail[i]`` is row ``start + i``;
    * ``head[j]`` is row ``j`` for ``j < start`` and row ``len(tail) + j`` otherwise.

    Only :meth:`FieldTable.write_rows` takes it in place of a ``[batch, ...]`` array.

    Attributes:
        tail: ``[batch - h, ...]`` rows ``start`` to ``start + batch - h - 1``.
        head: ``[h, ...]`` the other ``h`` rows, in batch order.
        start: int32 scalar, ``0 <= start <= h``.
    """

    tail: object
    head: object
    start: object

    @property
    def batch(self) -> int:
        """Number of rows."""
        return self.tail.shape[0] + self.head.shape[0]

    def take(self, rows):
        """``[len(rows), ...]``: the batch rows ``rows`` (int32, in range), read from
        the tail or the head."""
        n_tail, n_head = self.tail.shape[0], self.head.shape[0]
        start = jnp.asarray(self.start, jnp.int32)
        in_tail = (rows >= start) & (rows < start + n_tail)
        from_tail = self.tail[jnp.clip(rows - start, 0, n_tail - 1)]
        head_row = jnp.where(rows < start, rows, rows - n_tail)
        from_head = self.head[jnp.clip(head_row, 0, n_head - 1)]
        dtype = jnp.result_type(self.tail, self.head)
        in_tail = in_tail.reshape(in_tail.shape + (1,) * (from_tail.ndim - 1))
        return jnp.where(in_tail, from_tail.astype(dtype), from_head.astype(dtype))

    def positions(self):
        """``(tail_rows, head_rows)``: the batch row of each tail and head row."""
        n_tail = self.tail.shape[0]
        start = jnp.asarray(self.start, jnp.int32)
        tail_rows = start + jnp.arange(n_tail, dtype=jnp.int32)
        j = jnp.arange(self.head.shape[0], dtype=jnp.int32)
        return tail_rows, jnp.where(j < start, j, n_tail + j)

    def joined(self):
        """The whole ``[batch, ...]`` array (a copy)."""
        tail_rows, head_rows = self.positions()
        rows = jnp.zeros((tail_rows.shape[0] + head_rows.shape[0], *self.tail.shape[1:]),
                         jnp.result_type(self.tail, self.head))
        return rows.at[tail_rows].set(self.tail).at[head_rows].set(self.head)


class ShiftedRows(NamedTuple):
    """The rows of one batch field, read in place from a view that starts mid-row.

    When no row of a large batch starts on a 64-byte boundary (100 float64 values
    per row from NumPy's usual 16 bytes past one: every row starts 16 or 48 bytes
    past a boundary), the batch can still be read without copying it, as one flat
    array starting at the first aligned element. The rows are then read out of it by
    a gather of ``width``-value windows, which only :meth:`FieldTable.write_rows`
    does, writing every cell of the block once (see :func:`_scatter_rows`). The two
    rows the flat view does not hold whole travel in ``ends``.

    With ``width`` values per row, a batch of ``batch`` rows and ``pad`` the number
    of values in 64 bytes (:func:`shifted_pad`):

    * ``flat[j]`` is value ``offset + j`` of the flattened batch, for
      ``j < batch * width - pad`` (a fixed length, so one compiled kernel serves
      every ``offset``);
    * ``ends[0]`` is row 0 and ``ends[1]`` row ``batch - 1``.

    ``width >= pad`` is required (rows of at least 64 bytes), so that every other
    row lies inside ``flat``.

    Attributes:
        flat: ``[batch * width - pad]`` values.
        ends: ``[2, *shape]`` rows 0 and ``batch - 1``.
        offset: int32 scalar, ``0 <= offset < pad``.
    """

    flat: object
    ends: object
    offset: object

    @property
    def width(self) -> int:
        """Values per row."""
        return int(np.prod(self.ends.shape[1:], dtype=np.int64))

    @property
    def batch(self) -> int:
        """Number of rows."""
        return (self.flat.shape[0] + shifted_pad(self.flat.dtype)) // self.width

    def take(self, rows):
        """``[len(rows), *shape]``: the batch rows ``rows`` (int32, in range)."""
        width, last = self.width, self.batch - 1
        starts = rows * width - jnp.asarray(self.offset, jnp.int32)
        windows = jax.lax.gather(
            self.flat, starts[:, None],
            jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                           start_index_map=(0,)),
            slice_sizes=(width,), mode="clip")
        ends = jnp.reshape(self.ends, (2, width)).astype(windows.dtype)
        windows = jnp.where((rows == 0)[:, None], ends[0], windows)
        windows = jnp.where((rows == last)[:, None], ends[1], windows)
        return windows.reshape((rows.shape[0], *self.ends.shape[1:]))

    def joined(self):
        """The whole ``[batch, ...]`` array (a copy)."""
        return self.take(jnp.arange(self.batch, dtype=jnp.int32))


def shifted_pad(dtype) -> int:
    """Number of values of ``dtype`` in :data:`~ribsax._utils.ZERO_COPY_ALIGNMENT`
    bytes: a :class:`ShiftedRows` view holds that many values fewer than the
    batch."""
    return ZERO_COPY_ALIGNMENT // np.dtype(dtype).itemsize


def _whole(rows):
    """``rows`` as one array (joining a :class:`RowSplit` or :class:`ShiftedRows`)."""
    return rows.joined() if isinstance(rows, (RowSplit, ShiftedRows)) else rows


def _select_rows(block, cell_rows, rows):
    """Every cell of ``block`` gets batch row ``cell_rows[cell]`` of ``rows`` (an
    array, :class:`RowSplit` or :class:`ShiftedRows`) where it names one (``<
    batch``) and keeps its value elsewhere: one pass over the block, reading the
    batch by a gather."""
    split = isinstance(rows, (RowSplit, ShiftedRows))
    batch = rows.batch if split else rows.shape[0]
    keep = cell_rows < batch
    source = jnp.minimum(cell_rows, batch - 1)
    picked = (rows.take(source) if split else rows[source]).astype(block.dtype)
    return jnp.where(keep.reshape(keep.shape + (1,) * (block.ndim - 1)), picked, block)


def _scatter_rows(block, target, rows):
    """``block.at[target].set(rows)`` (out-of-range targets dropped); ``rows`` may be
    a :class:`RowSplit`, whose parts are scattered without joining them, or a
    :class:`ShiftedRows`, whose rows are gathered into every cell of the block.

    The gather writes the whole block (each cell gets its new row or keeps its
    value, in one pass that XLA:CPU splits over the cores), so it pays when the
    batch is not much smaller than the block: for 10,000 rows of 100 float64
    values into a 10,000-cell block, 6,300 of them written, it measured 450-545 us
    from a misaligned batch, against 570-585 us for the row scatter from an aligned
    one and about twice that with the copy a misaligned batch needs first.
    """
    if isinstance(rows, ShiftedRows):
        cell_rows = jnp.full((block.shape[0],), rows.batch, jnp.int32).at[target].set(
            jnp.arange(rows.batch, dtype=jnp.int32), mode="drop")
        return _select_rows(block, cell_rows, rows)
    if not isinstance(rows, RowSplit):
        return block.at[target].set(rows.astype(block.dtype), mode="drop")
    n_tail = rows.tail.shape[0]
    tail_target = jax.lax.dynamic_slice(target, (jnp.asarray(rows.start, jnp.int32),),
                                        (n_tail,))
    _, head_rows = rows.positions()
    block = block.at[tail_target].set(rows.tail.astype(block.dtype), mode="drop")
    return block.at[target[head_rows]].set(rows.head.astype(block.dtype), mode="drop")


class _Slot(NamedTuple):
    """Where one field lives: block number, first column, per-cell shape."""

    name: str
    block: int
    start: int
    shape: tuple
    alone: bool  # The block holds only this field, in its own shape.

    @property
    def width(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class _Layout(NamedTuple):
    """Static description of a table (hashable: it is the pytree's aux data)."""

    slots: tuple  # _Slot per field, in field order.
    block_dtypes: tuple  # NumPy dtype name of each block.


def table_layout(field_shapes: dict, field_dtypes: dict) -> _Layout:
    """Chooses the blocks for fields of the given per-cell shapes and dtypes.

    Fields of at most :data:`PACK_WIDTH_LIMIT` values that share a dtype with at least
    one other such field are packed into one block, in field order; every other field
    is stored alone.

    Args:
        field_shapes: name -> per-cell shape tuple.
        field_dtypes: name -> NumPy dtype.

    Returns:
        The layout.
    """
    groups = {}
    for name, shape in field_shapes.items():
        width = int(np.prod(shape, dtype=np.int64))
        if 0 < width <= PACK_WIDTH_LIMIT:
            groups.setdefault(np.dtype(field_dtypes[name]), []).append(name)
    packed = {name: members for members in groups.values() if len(members) > 1
              for name in members}
    slots, block_dtypes, block_of_group, next_col = {}, [], {}, {}
    for name, shape in field_shapes.items():
        dtype = np.dtype(field_dtypes[name])
        shape = tuple(shape)
        if name not in packed:
            slots[name] = _Slot(name, len(block_dtypes), 0, shape, True)
            block_dtypes.append(dtype.name)
            continue
        key = tuple(packed[name])
        if key not in block_of_group:
            block_of_group[key] = len(block_dtypes)
            block_dtypes.append(dtype.name)
            next_col[key] = 0
        slots[name] = _Slot(name, block_of_group[key], next_col[key], shape, False)
        next_col[key] += slots[name].width
    return _Layout(tuple(slots.values()), tuple(block_dtypes))


@functools.lru_cache(maxsize=None)
def _slot_map(layout: _Layout) -> dict:
    """name -> _Slot of a layout (computed once per layout)."""
    return {slot.name: slot for slot in layout.slots}


@jax.tree_util.register_pytree_node_class
class FieldTable(Mapping):
    """Mapping ``name -> (capacity, *shape)`` array over packed blocks (a pytree).

    The leaves are the blocks; the layout is static. Reading a packed field slices
    its columns (a view inside jitted code; an eager copy outside it). Blocks may be
    JAX or NumPy arrays (e.g. after ``jax.device_get``), and may carry leading batch
    axes (stacked states): the capacity axis is the one before the columns.

    Args:
        blocks: Tuple of arrays, one per block of ``layout``.
        layout: From :func:`table_layout`.
    """

    def __init__(self, blocks, layout: _Layout):
        self.blocks = tuple(blocks)
        self.layout = layout

    @property
    def _slots(self) -> dict:
        return _slot_map(self.layout)

    # ------------------------------------------------------------ pytree
    def tree_flatten(self):
        return self.blocks, self.layout

    @classmethod
    def tree_unflatten(cls, layout, blocks):
        # Runs for every kernel output: skip __init__'s conversions.
        table = object.__new__(cls)
        table.blocks = tuple(blocks)
        table.layout = layout
        return table

    def __reduce__(self):
        return (FieldTable, (self.blocks, self.layout))

    # ------------------------------------------------------------ creation
    @classmethod
    def zeros(cls, capacity: int, field_shapes: dict, field_dtypes: dict):
        """A table of zeros with the layout of :func:`table_layout`."""
        layout = table_layout(field_shapes, field_dtypes)
        widths = [0] * len(layout.block_dtypes)
        for slot in layout.slots:
            widths[slot.block] = max(widths[slot.block], slot.start + slot.width)
        blocks = []
        for number, dtype in enumerate(layout.block_dtypes):
            alone = [s for s in layout.slots if s.block == number and s.alone]
            shape = alone[0].shape if alone else (widths[number],)
            blocks.append(jnp.zeros((capacity, *shape), dtype=dtype))
        return cls(blocks, layout)

    # ------------------------------------------------------------ mapping
    def __getitem__(self, name):
        slot = self._slots[name]
        block = self.blocks[slot.block]
        if slot.alone:
            return block
        column = block[..., slot.start:slot.start + slot.width]
        return column.reshape(column.shape[:-1] + slot.shape)

    def __contains__(self, name):
        return name in self._slots

    def __iter__(self):
        return iter(self._slots)

    def __len__(self):
        return len(self._slots)

    def has_own_block(self, name) -> bool:
        """Whether field ``name`` is stored alone in a block (not packed with others);
        such fields are written by one scatter of their rows."""
        return self._slots[name].alone

    def field_spec(self, name):
        """``(per-cell shape, NumPy dtype)`` of field ``name`` (no array work)."""
        slot = self._slots[name]
        return slot.shape, np.dtype(self.layout.block_dtypes[slot.block])

    # ------------------------------------------------------------ updates
    def map_blocks(self, fn) -> "FieldTable":
        """A table whose blocks are ``fn(block)`` (e.g. padding the capacity axis)."""
        return FieldTable(tuple(fn(block) for block in self.blocks), self.layout)

    def write_rows(self, target, data: dict, cell_rows=None) -> "FieldTable":
        """Writes row ``i`` of every field in ``data`` to cell ``target[i]``.

        One scatter per block: the rows of a packed block's fields are concatenated
        first. Out-of-range targets are dropped; targets must be unique among kept
        rows. With ``cell_rows`` (the same writes seen from the cells), a block that
        holds one field alone is instead rewritten in one pass over its cells that
        gathers their rows from the batch. Packed blocks keep the scatter: for
        10,000 rows into 10,000 cells, gathering the four float32 columns of
        objective, measures and threshold into the pass measured 89 us against
        52 us for joining them and scattering.

        Args:
            target: int32[batch] cells (``>= capacity`` to skip a row).
            data: name -> [batch, *shape] array (or :class:`RowSplit` or
                :class:`ShiftedRows`); fields absent (or None) keep their values.
            cell_rows: Optional int32[capacity]: the batch row written to each cell
                (``i`` where ``target[i]`` is the cell), ``>= batch`` for cells not
                written. Pays when the batch is not much smaller than the capacity:
                10,000 rows of 100 float32 values into 10,000 cells (6,300 written)
                measured 171 us against 233 us for the row scatter on the 2-core
                CPU.

        Returns:
            The updated table.
        """
        blocks = list(self.blocks)
        for number, block in enumerate(self.blocks):
            slots = [s for s in self.layout.slots if s.block == number]
            given = [s for s in slots if data.get(s.name) is not None]
            if not given:
                continue
            if cell_rows is not None and slots[0].alone:
                blocks[number] = _select_rows(block, cell_rows, data[slots[0].name])
            elif slots[0].alone:
                blocks[number] = _scatter_rows(block, target, data[slots[0].name])
            elif len(given) == len(slots):
                rows = jnp.concatenate(
                    [jnp.reshape(_whole(data[s.name]).astype(block.dtype), (-1, s.width))
                     for s in slots], axis=1)
                blocks[number] = block.at[target].set(rows, mode="drop")
            else:
                for slot in given:
                    rows = jnp.reshape(_whole(data[slot.name]).astype(block.dtype),
                                       (-1, slot.width))
                    blocks[number] = blocks[number].at[
                        target, slot.start:slot.start + slot.width].set(rows, mode="drop")
        return FieldTable(tuple(blocks), self.layout)
