"""Tests for ribsax.archives._field_table (packed store fields)."""
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives._field_table import (PACK_WIDTH_LIMIT, FieldTable, RowSplit,
                                          ShiftedRows, shifted_pad, table_layout)

CAPACITY = 6
SHAPES = {"solution": (PACK_WIDTH_LIMIT + 1,), "objective": (), "measures": (2,),
          "threshold": (), "count": (), "grid": (2, 2)}
DTYPES = {"solution": np.float32, "objective": np.float32, "measures": np.float32,
          "threshold": np.float32, "count": np.int32, "grid": np.float32}


def _rows(rng, n):
    return {name: rng.normal(size=(n, *shape)).astype(DTYPES[name])
            for name, shape in SHAPES.items()}


def test_layout_packs_small_fields_of_one_dtype():
    layout = table_layout(SHAPES, DTYPES)
    slots = {slot.name: slot for slot in layout.slots}
    assert [s.name for s in layout.slots] == list(SHAPES)
    # Wide field and the only small int32 field are alone.
    assert slots["solution"].alone and slots["count"].alone
    packed = ["objective", "measures", "threshold", "grid"]
    assert len({slots[n].block for n in packed}) == 1
    assert not any(slots[n].alone for n in packed)
    assert [slots[n].start for n in packed] == [0, 1, 3, 4]
    assert len(layout.block_dtypes) == 3
    table = FieldTable.zeros(CAPACITY, SHAPES, DTYPES)
    assert [n for n in SHAPES if table.has_own_block(n)] == ["solution", "count"]


def test_fields_read_back_what_was_written_and_keep_the_rest():
    """write_rows against a dict-of-arrays reference, with dropped and partial rows."""
    rng = np.random.default_rng(0)
    table = FieldTable.zeros(CAPACITY, SHAPES, DTYPES)
    reference = {n: np.zeros((CAPACITY, *s), DTYPES[n]) for n, s in SHAPES.items()}
    write = jax.jit(lambda t, target, data: t.write_rows(target, data))
    for step in range(4):
        rows = _rows(rng, 4)
        target = np.array([step % CAPACITY, 5, CAPACITY, CAPACITY + 3], np.int32)
        if step == 2:  # Only some fields: the others keep their values.
            rows = {"measures": rows["measures"], "solution": rows["solution"]}
        table = write(table, target, rows)
        for i, cell in enumerate(target):
            if cell < CAPACITY:
                for name, value in rows.items():
                    reference[name][cell] = value[i]
        assert list(table) == list(SHAPES) and len(table) == len(SHAPES)
        for name in SHAPES:
            got = np.asarray(table[name])
            assert got.dtype == DTYPES[name] and got.shape == reference[name].shape
            np.testing.assert_array_equal(got, reference[name])
            assert table.field_spec(name) == (SHAPES[name], np.dtype(DTYPES[name]))
    assert "objective" in table and "index" not in table


def test_pytree_pickle_device_get_and_map_blocks():
    rng = np.random.default_rng(1)
    table = FieldTable.zeros(CAPACITY, SHAPES, DTYPES).write_rows(
        jnp.arange(3, dtype=jnp.int32), _rows(rng, 3))
    leaves, treedef = jax.tree.flatten(table)
    assert len(leaves) == 3
    rebuilt = jax.tree.unflatten(treedef, leaves)
    host = jax.device_get(table)
    restored = pickle.loads(pickle.dumps(host))
    grown = table.map_blocks(lambda b: jnp.pad(b, [(0, 2)] + [(0, 0)] * (b.ndim - 1)))
    for name in SHAPES:
        expected = np.asarray(table[name])
        for other in (rebuilt, host, restored):
            assert isinstance(other[name], np.ndarray) == (other is not rebuilt)
            np.testing.assert_array_equal(np.asarray(other[name]), expected)
        np.testing.assert_array_equal(np.asarray(grown[name])[:CAPACITY], expected)
        assert grown[name].shape[0] == CAPACITY + 2


@pytest.mark.parametrize("n", [0, 3])
def test_stacked_tables_read_per_run(n):
    """Blocks with a leading run axis (stacked states) slice the right columns."""
    rng = np.random.default_rng(2)
    tables = [FieldTable.zeros(CAPACITY, SHAPES, DTYPES).write_rows(
        jnp.arange(n, dtype=jnp.int32), _rows(rng, n)) for _ in range(2)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *tables)
    for name in SHAPES:
        for run, table in enumerate(tables):
            np.testing.assert_array_equal(np.asarray(stacked[name][run]),
                                          np.asarray(table[name]))


def _split(rows, start, head_rows):
    """``rows`` as a RowSplit with ``head_rows`` head rows starting at ``start``."""
    n_tail = len(rows) - head_rows
    head = np.concatenate([rows[:start], rows[start + n_tail:]])
    return RowSplit(rows[start:start + n_tail], head, np.int32(start))


@pytest.mark.parametrize("head_rows", [1, 4])
def test_row_split_positions_and_joined(head_rows):
    rows = np.arange(9 * 2, dtype=np.float32).reshape(9, 2)
    for start in range(head_rows + 1):
        split = _split(rows, start, head_rows)
        tail_rows, head_rows_at = split.positions()
        np.testing.assert_array_equal(rows[np.asarray(tail_rows)], split.tail)
        np.testing.assert_array_equal(rows[np.asarray(head_rows_at)], split.head)
        np.testing.assert_array_equal(split.joined(), rows)


def test_write_rows_with_row_splits_equals_whole_arrays():
    """Split fields (alone and packed blocks, every start, one compiled function)
    write exactly what the whole arrays write, dropped rows included."""
    rng = np.random.default_rng(3)
    batch, head_rows = 9, 4
    capacity = CAPACITY + batch
    base = FieldTable.zeros(capacity, SHAPES, DTYPES).map_blocks(
        lambda b: jnp.asarray(rng.normal(size=b.shape).astype(b.dtype)))
    write = jax.jit(lambda table, target, data: table.write_rows(target, data))
    traces = []
    for start in range(head_rows):
        data = _rows(rng, batch)
        target = rng.permutation(capacity)[:batch].astype(np.int32)
        target[rng.random(batch) < 0.3] = capacity  # Dropped rows.
        expected = write(base, target, data)
        # "solution" has a block of its own; "measures" is packed with others.
        split = dict(data, solution=_split(data["solution"], start, head_rows),
                     measures=_split(data["measures"], start, head_rows))
        got = write(base, target, split)
        traces.append(write._cache_size())  # pylint: disable = protected-access
        for name in SHAPES:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert traces[-1] == traces[0]  # The start is a traced argument.


def _shifted(rows, offset):
    """``rows`` as a ShiftedRows whose flat view starts ``offset`` values in."""
    flat = rows.reshape(-1)[offset:offset + rows.size - shifted_pad(rows.dtype)]
    return ShiftedRows(flat, rows[[0, -1]], np.int32(offset))


@pytest.mark.parametrize("dtype, shape", [(np.float32, (4, 5)), (np.float32, (16,)),
                                          (np.float64, (8,)), (np.float64, (3, 7))])
def test_shifted_rows_take_and_joined(dtype, shape):
    """Every row, the first and last included, comes back whole for every offset."""
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(7, *shape)).astype(dtype)
    pick = np.array([6, 0, 3, 1, 6, 5, 0, 2], dtype=np.int32)
    for offset in range(shifted_pad(dtype)):
        shifted = _shifted(rows, offset)
        assert shifted.batch == 7 and shifted.width == int(np.prod(shape))
        np.testing.assert_array_equal(shifted.joined(), rows, err_msg=str(offset))
        np.testing.assert_array_equal(shifted.take(jnp.asarray(pick)), rows[pick],
                                      err_msg=str(offset))


def test_write_rows_with_shifted_rows_equals_whole_arrays():
    """Shifted fields (a block of their own, gathered into every cell, and a packed
    one, joined) write exactly what the whole arrays write, dropped rows included,
    for every offset with one compiled function."""
    rng = np.random.default_rng(5)
    shapes = {"solution": (PACK_WIDTH_LIMIT + 1,), "objective": (), "measures": (2,),
              "threshold": (), "vec": (PACK_WIDTH_LIMIT,)}
    dtypes = dict.fromkeys(shapes, np.float32)
    batch, capacity = 9, 12
    base = FieldTable.zeros(capacity, shapes, dtypes).map_blocks(
        lambda b: jnp.asarray(rng.normal(size=b.shape).astype(b.dtype)))
    assert base.has_own_block("solution") and not base.has_own_block("vec")
    write = jax.jit(lambda table, target, data: table.write_rows(target, data))
    traces = []
    for offset in range(shifted_pad(np.float32)):
        data = {name: rng.normal(size=(batch, *shape)).astype(np.float32)
                for name, shape in shapes.items()}
        target = rng.permutation(capacity)[:batch].astype(np.int32)
        target[rng.random(batch) < 0.3] = capacity  # Dropped rows.
        expected = write(base, target, data)
        shifted = dict(data, solution=_shifted(data["solution"], offset),
                       vec=_shifted(data["vec"], offset))
        got = write(base, target, shifted)
        traces.append(write._cache_size())  # pylint: disable = protected-access
        for name in shapes:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert traces[-1] == traces[0]  # The offset is a traced argument.


def _cell_rows(target, capacity, batch):
    """The writes of ``target`` seen from the cells (``batch`` where none)."""
    cell_rows = np.full(capacity, batch, np.int32)
    kept = target < capacity
    cell_rows[target[kept]] = np.flatnonzero(kept)
    return cell_rows


@pytest.mark.parametrize("form", ["array", "row_split", "shifted"])
def test_write_rows_by_cells_equals_the_scatter(form):
    """With ``cell_rows``, a field's own block is rewritten cell by cell from the
    batch (packed blocks are scattered, also when given only some fields): the same
    table as the row scatters, for whole, split and shifted fields."""
    rng = np.random.default_rng(11)
    batch = 9
    capacity = CAPACITY + batch
    base = FieldTable.zeros(capacity, SHAPES, DTYPES).map_blocks(
        lambda b: jnp.asarray(rng.normal(size=b.shape).astype(b.dtype)))
    scatter = jax.jit(lambda table, target, data: table.write_rows(target, data))
    by_cells = jax.jit(lambda table, target, data, cell_rows: table.write_rows(
        target, data, cell_rows))
    wrap = {"array": lambda rows: rows,
            "row_split": lambda rows: _split(rows, 2, 4),
            "shifted": lambda rows: _shifted(rows, 3)}[form]
    for step in range(3):
        data = _rows(rng, batch)
        if step == 2:
            del data["threshold"]  # Its packed block is then written by the scatter.
        target = rng.permutation(capacity)[:batch].astype(np.int32)
        target[rng.random(batch) < 0.3] = capacity  # Dropped rows.
        expected = scatter(base, target, data)
        formed = dict(data, solution=wrap(data["solution"]))
        if form != "shifted":  # Shifted rows need 64-byte rows: solution only.
            formed["measures"] = wrap(data["measures"])
        cell_rows = _cell_rows(target, capacity, batch)
        got = by_cells(base, target, formed, cell_rows)
        for name in SHAPES:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
        assert not np.array_equal(got["solution"], base["solution"])
    # The solution block is written without a scatter; the packed ones with theirs.
    scatters = [str(jax.make_jaxpr(fn)(*args)).count("scatter")
                for fn, args in ((scatter, (base, target, formed)),
                                 (by_cells, (base, target, formed, cell_rows)))]
    assert scatters[1] < scatters[0]
