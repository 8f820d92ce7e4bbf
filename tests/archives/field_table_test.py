"""Tests for ribsax.archives._field_table (packed store fields)."""
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives._field_table import PACK_WIDTH_LIMIT, FieldTable, table_layout

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
