"""Tests for ArrayStore (with differential checks against ribs.archives.ArrayStore)."""

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import ArchiveDataFrame, ArrayStore, GridArchive

CAPACITY = 10

FIELD_DESC = {
    "objective": ((), np.float32),
    "measures": ((2,), np.float32),
}


def _store(cls=ArrayStore, capacity=CAPACITY, field_desc=None):
    return cls(field_desc=FIELD_DESC if field_desc is None else field_desc, capacity=capacity)


def _data(n, start=0.0):
    objective = np.arange(n, dtype=np.float32) + start
    measures = np.stack([objective, -objective], axis=1)
    return {"objective": objective, "measures": measures}


@pytest.fixture
def store():
    return _store()


@pytest.fixture
def filled():
    """Store with indices 3, 5, 7 (first occupation order 3, 5, 7)."""
    s = _store()
    s.add([3, 5, 7], _data(3, start=1.0))
    return s


# ------------------------------------------------------------ construction
def test_init_properties(store):
    assert store.capacity == CAPACITY
    assert len(store) == 0
    assert store.field_list == ["objective", "measures"]
    assert store.field_list_with_index == ["objective", "measures", "index"]
    assert store.field_desc == {"objective": ((), np.float32), "measures": ((2,), np.float32)}
    assert store.dtypes == {"objective": np.float32, "measures": np.float32}
    assert store.dtypes_with_index == {
        "objective": np.float32,
        "measures": np.float32,
        "index": np.int32,
    }
    assert store.dtypes_with_index["index"] is np.int32
    np.testing.assert_array_equal(store.occupied, np.zeros(CAPACITY, dtype=bool))
    assert store.occupied_list.shape == (0,)
    assert store.occupied_list.dtype == np.int32


def test_int_shape_normalised_to_tuple():
    store = ArrayStore({"solution": (3, np.float64), "grid": ((2, 2), np.float64)}, 4)
    assert store.field_desc["solution"] == ((3,), np.float64)
    assert store.field_desc["grid"] == ((2, 2), np.float64)


def test_field_desc_matches_pyribs():
    desc = {"a": (3, np.float32), "b": ((), np.int32), "c": ((2, 2), np.float64)}
    ours = ArrayStore(desc, 5)
    theirs = ribs.archives.ArrayStore(desc, 5)
    assert ours.field_desc == theirs.field_desc
    assert ours.dtypes == theirs.dtypes
    assert ours.field_list_with_index == theirs.field_list_with_index


def test_index_is_reserved():
    with pytest.raises(ValueError, match="^`index` is a reserved field name.$"):
        ArrayStore({"index": ((), np.int32)}, CAPACITY)


@pytest.mark.parametrize("name", ["a b", "1abc", "foo-bar", ""])
def test_field_names_must_be_identifiers(name):
    with pytest.raises(ValueError) as err:
        ArrayStore({name: ((), np.float32)}, CAPACITY)
    assert str(err.value) == f"Field names must be valid identifiers: `{name}`"


def test_xp_numpy_accepted():
    store = ArrayStore(FIELD_DESC, CAPACITY, xp=np)
    store.add([1], _data(1))
    assert len(store) == 1


def test_xp_and_device_as_pyribs_passes_them():
    """pyribs passes the array-API namespace of NumPy and a device string."""
    array_api_compat = pytest.importorskip("array_api_compat")
    xp = array_api_compat.array_namespace(np.empty(0))
    device = array_api_compat.device(np.empty(0))  # "cpu"
    store = ArrayStore(FIELD_DESC, CAPACITY, xp=xp, device=device)
    store.add([1], _data(1))
    occupied, data = store.retrieve([1])
    assert occupied.tolist() == [True]
    assert isinstance(data["objective"], np.ndarray)
    cpu = jax.devices("cpu")[0]
    assert store.state.fields["objective"].devices() == {cpu}


def test_device_accepts_jax_device():
    cpu = jax.devices("cpu")[0]
    store = ArrayStore(FIELD_DESC, CAPACITY, device=cpu)
    assert store.state.fields["objective"].devices() == {cpu}


@pytest.mark.parametrize("device", ["nodevice", "cpu:99", 3.5])
def test_bad_device_rejected(device):
    with pytest.raises(ValueError):
        ArrayStore(FIELD_DESC, CAPACITY, device=device)


def test_non_numpy_xp_rejected():
    with pytest.raises(ValueError, match="xp must be None, numpy"):
        ArrayStore(FIELD_DESC, CAPACITY, xp=jnp)


def test_read_only_views(filled):
    with pytest.raises(ValueError):
        filled.occupied[0] = True
    with pytest.raises(ValueError):
        filled.occupied_list[0] = 1


# ------------------------------------------------------------ add
def test_add_and_occupied(filled):
    assert len(filled) == 3
    expected = np.zeros(CAPACITY, dtype=bool)
    expected[[3, 5, 7]] = True
    np.testing.assert_array_equal(filled.occupied, expected)
    np.testing.assert_array_equal(filled.occupied_list, [3, 5, 7])


def test_new_indices_in_one_add_are_sorted(store):
    store.add([8, 1, 4], _data(3))
    np.testing.assert_array_equal(store.occupied_list, [1, 4, 8])
    # Order of first occupation across calls: old entries first, then sorted new ones.
    store.add([9, 0, 4], _data(3, start=10.0))
    np.testing.assert_array_equal(store.occupied_list, [1, 4, 8, 0, 9])
    np.testing.assert_array_equal(store.data("objective"), [1, 12, 0, 11, 10])


def test_duplicate_indices_last_write_wins(store):
    store.add(
        [2, 6, 2, 2],
        {
            "objective": np.array([1, 2, 3, 4], np.float32),
            "measures": np.arange(8, dtype=np.float32).reshape(4, 2),
        },
    )
    assert len(store) == 2
    np.testing.assert_array_equal(store.occupied_list, [2, 6])
    _, data = store.retrieve([2, 6])
    np.testing.assert_array_equal(data["objective"], [4, 2])
    np.testing.assert_array_equal(data["measures"], [[6, 7], [2, 3]])


def test_overwrite_existing(filled):
    filled.add([5], {"objective": [100.0], "measures": [[1.0, 1.0]]})
    assert len(filled) == 3
    np.testing.assert_array_equal(filled.occupied_list, [3, 5, 7])
    np.testing.assert_array_equal(filled.data("objective"), [1, 100, 3])


def test_add_casts_to_field_dtype(store):
    store.add([0], {"objective": np.array([1.5], np.float64), "measures": [[1, 2]]})
    assert store.data("objective").dtype == np.float32
    assert store.data("measures").dtype == np.float32


def test_add_empty_is_noop(filled):
    filled.add([], {})
    assert len(filled) == 3


def test_add_wrong_length(store):
    with pytest.raises(ValueError) as err:
        store.add([0, 1], {"objective": np.zeros(3), "measures": np.zeros((2, 2))})
    assert str(err.value) == (
        "In `data`, the array for `objective` has length 3 but should be the same "
        "length as indices (2)"
    )


@pytest.mark.parametrize(
    "data",
    [
        {"objective": np.zeros(1)},  # Missing field.
        {"objective": np.zeros(1), "measures": np.zeros((1, 2)), "extra": np.zeros(1)},
    ],
)
def test_add_wrong_keys(store, data):
    with pytest.raises(
        ValueError,
        match=r"^`data` has keys .* but should have the same keys as this "
        r"ArrayStore, i\.e\., .*This error may occur if the archive has "
        r"extra_fields but the fields were not passed to archive\.add\(\)"
        r" or scheduler\.tell\(\)\. This can also occur if the archive "
        r"and result_archive have different extra_fields\.$",
    ):
        store.add([0], data)
    assert len(store) == 0


# ------------------------------------------------------------ retrieve / data
def test_retrieve_default(filled):
    occupied, data = filled.retrieve([5, 0, 3])
    np.testing.assert_array_equal(occupied, [True, False, True])
    assert list(data) == ["objective", "measures", "index"]
    np.testing.assert_array_equal(data["objective"][[0, 2]], [2, 1])
    np.testing.assert_array_equal(data["measures"][[0, 2]], [[2, -2], [1, -1]])
    np.testing.assert_array_equal(data["index"], [5, 0, 3])
    assert data["index"].dtype == np.int32
    assert data["objective"].dtype == np.float32


def test_retrieve_returns_copies(filled):
    _, data = filled.retrieve([3])
    data["objective"][0] = 1000
    data["index"][0] = 9
    np.testing.assert_array_equal(filled.retrieve([3])[1]["objective"], [1])
    all_data = filled.data()
    all_data["measures"][:] = 0
    np.testing.assert_array_equal(filled.data("measures")[0], [1, -1])


def test_retrieve_index_anywhere(filled):
    _, data = filled.retrieve([7, 3], fields=["index", "objective"])
    assert list(data) == ["index", "objective"]
    np.testing.assert_array_equal(data["index"], [7, 3])
    np.testing.assert_array_equal(data["objective"], [3, 1])


def test_retrieve_str_field_returns_array(filled):
    occupied, arr = filled.retrieve([7, 3], "measures")
    np.testing.assert_array_equal(occupied, [True, True])
    assert isinstance(arr, np.ndarray)
    np.testing.assert_array_equal(arr, [[3, -3], [1, -1]])
    _, index = filled.retrieve([7, 3], "index")
    np.testing.assert_array_equal(index, [7, 3])


def test_retrieve_unknown_field(filled):
    with pytest.raises(ValueError, match="^`foo` is not a field in this ArrayStore.$"):
        filled.retrieve([3], ["objective", "foo"])
    with pytest.raises(ValueError, match="^`foo` is not a field in this ArrayStore.$"):
        filled.data("foo")


def test_retrieve_invalid_return_type(filled):
    with pytest.raises(ValueError, match="^Invalid return_type foo.$"):
        filled.retrieve([3], return_type="foo")
    with pytest.raises(ValueError, match="^Invalid return_type foo.$"):
        filled.data(["objective"], return_type="foo")


def test_data_dict_duplicates_collapse(filled):
    data = filled.data(["objective", "objective", "index"], return_type="dict")
    assert list(data) == ["objective", "index"]


def test_data_tuple(filled):
    objective, measures, index = filled.data(return_type="tuple")
    np.testing.assert_array_equal(objective, [1, 2, 3])
    np.testing.assert_array_equal(measures, [[1, -1], [2, -2], [3, -3]])
    np.testing.assert_array_equal(index, [3, 5, 7])
    dup = filled.data(["objective", "objective"], return_type="tuple")
    assert isinstance(dup, tuple) and len(dup) == 2
    np.testing.assert_array_equal(dup[0], dup[1])


@pytest.mark.parametrize("return_type", [None, "dict", "tuple", "pandas"])
def test_data_str_field_return_types(filled, return_type):
    """pyribs 0.12: return_type is honoured for a str field (None -> bare array)."""
    out = filled.data("objective", return_type=return_type)
    if return_type is None:
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, [1, 2, 3])
    elif return_type == "dict":
        assert list(out) == ["objective"]
        np.testing.assert_array_equal(out["objective"], [1, 2, 3])
    elif return_type == "tuple":
        assert isinstance(out, tuple) and len(out) == 1
        np.testing.assert_array_equal(out[0], [1, 2, 3])
    else:
        assert isinstance(out, ArchiveDataFrame)
        assert list(out.columns) == ["objective"]
        np.testing.assert_array_equal(out["objective"], [1, 2, 3])


@pytest.mark.parametrize("fields", [None, ["measures", "index"], "measures"])
@pytest.mark.parametrize("return_type", [None, "dict", "tuple", "pandas"])
def test_data_matches_pyribs(fields, return_type):
    ours, theirs = _store(), _store(ribs.archives.ArrayStore)
    for s in (ours, theirs):
        s.add([6, 2, 6], _data(3))
        s.add([1, 2], _data(2, start=5.0))
    a = ours.data(fields, return_type=return_type)
    b = theirs.data(fields, return_type=return_type)
    assert type(a).__name__ == type(b).__name__
    if isinstance(b, pd.DataFrame):
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    elif isinstance(b, dict):
        assert list(a) == list(b)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
            assert a[key].dtype == b[key].dtype
    elif isinstance(b, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
    else:
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_pandas_columns_and_dtypes(filled):
    df = filled.data(return_type="pandas")
    assert isinstance(df, ArchiveDataFrame)
    assert list(df.columns) == ["objective", "measures_0", "measures_1", "index"]
    assert df["objective"].dtype == np.float32
    assert df["measures_0"].dtype == np.float32
    assert df["index"].dtype == np.int32
    np.testing.assert_array_equal(df["index"], [3, 5, 7])


def test_pandas_rejects_multidim_fields():
    store = ArrayStore({"grid": ((2, 2), np.float32)}, 3)
    store.add([0], {"grid": np.zeros((1, 2, 2))})
    with pytest.raises(ValueError) as err:
        store.data(return_type="pandas")
    assert str(err.value) == (
        "Field `grid` has shape (2, 2) -- cannot convert fields with shape >1D to Pandas"
    )
    # The other return types work.
    assert store.data("grid").shape == (1, 2, 2)


def test_data_on_empty_store(store):
    data = store.data()
    assert list(data) == ["objective", "measures", "index"]
    assert data["objective"].shape == (0,)
    assert data["measures"].shape == (0, 2)
    assert len(store.data(return_type="pandas")) == 0


# ------------------------------------------------------------ iteration
def test_iteration(store):
    store.add([4, 1], _data(2, start=1.0))
    store.add([0], _data(1, start=7.0))
    entries = list(store)
    assert [list(e) for e in entries] == [["index", "objective", "measures"]] * 3
    assert [int(e["index"]) for e in entries] == [1, 4, 0]
    assert [float(e["objective"]) for e in entries] == [2.0, 1.0, 7.0]
    np.testing.assert_array_equal(entries[2]["measures"], [7, -7])


def test_iteration_empty(store):
    assert not list(store)


@pytest.mark.parametrize(
    "mutation",
    [
        lambda s: s.add([0], _data(1)),
        lambda s: s.add([], {}),  # pyribs counts the call even when nothing is written.
        lambda s: s.clear(),
    ],
)
def test_iteration_detects_mutation(filled, mutation):
    it = iter(filled)
    next(it)
    mutation(filled)
    with pytest.raises(
        RuntimeError,
        match="^ArrayStore was modified with add\\(\\) or clear\\(\\) during iteration.$",
    ):
        next(it)


def test_mutation_after_last_element_detected(filled):
    it = iter(filled)
    for _ in range(len(filled)):
        next(it)
    filled.clear()
    with pytest.raises(RuntimeError):
        next(it)


def test_iterator_created_before_mutation(filled):
    """pyribs' iterator records the store's state when it is created."""
    it = iter(filled)
    filled.add([0], _data(1))
    with pytest.raises(RuntimeError):
        next(it)


def test_iteration_after_mutation_is_fresh(filled):
    list(filled)
    filled.add([0], _data(1, start=50.0))
    assert [int(e["index"]) for e in filled] == [3, 5, 7, 0]


# ------------------------------------------------------------ clear
def test_clear(filled):
    filled.clear()
    assert len(filled) == 0
    assert not filled.occupied.any()
    assert filled.occupied_list.shape == (0,)
    assert filled.data("objective").shape == (0,)
    occupied, _ = filled.retrieve([3, 5])
    np.testing.assert_array_equal(occupied, [False, False])
    filled.add([9, 5], _data(2))
    np.testing.assert_array_equal(filled.occupied_list, [5, 9])
    assert len(filled) == 2


# ------------------------------------------------------------ resize
@pytest.mark.parametrize("capacity", [CAPACITY, CAPACITY - 1])
def test_resize_must_grow(filled, capacity):
    with pytest.raises(ValueError) as err:
        filled.resize(capacity)
    # pyribs' message lacks the closing parenthesis.
    assert str(err.value) == (
        f"New capacity ({capacity}) must be greater than current capacity ({CAPACITY}."
    )


def test_resize_keeps_data(filled):
    filled.resize(2 * CAPACITY)
    assert filled.capacity == 2 * CAPACITY
    assert len(filled) == 3
    assert filled.occupied.shape == (2 * CAPACITY,)
    assert filled.occupied.sum() == 3
    np.testing.assert_array_equal(filled.occupied_list, [3, 5, 7])
    np.testing.assert_array_equal(filled.data("objective"), [1, 2, 3])
    np.testing.assert_array_equal(filled.data("measures"), [[1, -1], [2, -2], [3, -3]])
    filled.add([15, 5], _data(2, start=20.0))
    np.testing.assert_array_equal(filled.occupied_list, [3, 5, 7, 15])
    np.testing.assert_array_equal(filled.data("objective"), [1, 21, 3, 20])


def test_resize_then_clear(filled):
    filled.resize(CAPACITY + 5)
    filled.clear()
    assert len(filled) == 0 and filled.occupied.shape == (CAPACITY + 5,)


# ------------------------------------------------------------ object fields
def test_object_field():
    store = ArrayStore({"name": ((), object), "objective": ((), np.float64)}, 4)
    store.add([2, 0], {"name": np.array(["b", "a"], dtype=object), "objective": [1.0, 2.0]})
    assert store.dtypes["name"] == np.dtype(object)
    data = store.data()
    assert list(data["name"]) == ["a", "b"]
    assert data["name"].dtype == object
    store.add([2], {"name": np.array([{"k": 1}], dtype=object), "objective": [3.0]})
    _, retrieved = store.retrieve([2])
    assert retrieved["name"][0] == {"k": 1}
    assert [e["name"] for e in store] == ["a", {"k": 1}]


# ------------------------------------------------------------ pickling
def test_pickle_round_trip(filled):
    clone = pickle.loads(pickle.dumps(filled))
    assert len(clone) == 3
    np.testing.assert_array_equal(clone.occupied_list, [3, 5, 7])
    np.testing.assert_array_equal(clone.data("objective"), filled.data("objective"))
    assert clone.field_desc == filled.field_desc
    # The clone keeps working and is independent of the original.
    clone.add([0, 3], _data(2, start=30.0))
    np.testing.assert_array_equal(clone.occupied_list, [3, 5, 7, 0])
    np.testing.assert_array_equal(clone.data("objective"), [31, 2, 3, 30])
    np.testing.assert_array_equal(filled.data("objective"), [1, 2, 3])
    assert [int(e["index"]) for e in clone] == [3, 5, 7, 0]


def _all_committed(store):
    return all(leaf.committed for leaf in jax.tree.leaves(store.state))


def test_state_is_committed_from_the_start_and_after_unpickling(store):
    """As the kernels' outputs are, so that they compile once (see _committed)."""
    assert _all_committed(store)
    store.add([1], _data(1))
    assert _all_committed(store)
    assert _all_committed(pickle.loads(pickle.dumps(store)))


# ------------------------------------------------------------ differential
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_operations_match_pyribs(seed):
    rng = np.random.default_rng(seed)
    desc = {"objective": ((), np.float64), "measures": ((2,), np.float32), "count": ((), np.int32)}
    ours = ArrayStore(desc, 16)
    theirs = ribs.archives.ArrayStore(desc, 16)
    for step in range(12):
        if step == 7:
            ours.clear()
            theirs.clear()
            continue
        n = 6  # Fixed batch size keeps the compiled write kernel shared.
        indices = rng.integers(0, 16, size=n)
        data = {
            "objective": rng.normal(size=n),
            "measures": rng.normal(size=(n, 2)).astype(np.float32),
            "count": rng.integers(0, 100, size=n).astype(np.int32),
        }
        ours.add(indices, data)
        theirs.add(indices, data)
        assert len(ours) == len(theirs)
        np.testing.assert_array_equal(ours.occupied, theirs.occupied)
        np.testing.assert_array_equal(ours.occupied_list, theirs.occupied_list)
        a, b = ours.data(), theirs.data()
        assert list(a) == list(b)
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
            assert a[key].dtype == b[key].dtype
        query = rng.integers(0, 16, size=5)
        occ_a, ret_a = ours.retrieve(query)
        occ_b, ret_b = theirs.retrieve(query)
        np.testing.assert_array_equal(occ_a, occ_b)
        for key in ret_b:
            np.testing.assert_array_equal(ret_a[key][occ_b], ret_b[key][occ_b])
        assert [int(e["index"]) for e in ours] == [int(e["index"]) for e in theirs]


def test_committed_places_host_data_without_compiling():
    """Host (NumPy) pytrees reach the device through ``device_put``, committed like
    kernel outputs, with no compilation per shape (as ``jnp.asarray`` has)."""
    from ribsax.archives._array_store import committed
    from tests.compile_counter import count_compilations

    with count_compilations() as compiled:
        for shape in [(3,), (5, 7), (11, 2, 3), (64,), (128, 4)]:
            size = int(np.prod(shape))
            # 64-byte aligned, the case in which device_put on CPU may alias memory.
            buffer = np.empty(size + 8, dtype=np.float64)
            start = (-buffer.ctypes.data % 64) // 8
            host = buffer[start : start + size].reshape(shape)
            assert host.ctypes.data % 64 == 0
            host[...] = np.arange(size).reshape(shape)
            (out,) = committed((host,))
            assert out.committed and out.shape == shape
            np.testing.assert_array_equal(np.asarray(out), host)
            host[...] = -1  # The device copy does not follow the host array.
            assert np.asarray(out).reshape(-1)[0] == 0.0
    assert compiled.count == 0


def test_reading_a_growing_archive_compiles_a_few_gathers_only():
    """``data`` and ``retrieve`` of a few rows gather them on the device; requests
    of every length share gathers padded to powers of two, so reading after each
    add of a growing archive does not compile a gather per length."""
    from tests.compile_counter import count_compilations

    archive = GridArchive(solution_dim=3, dims=[100, 100], ranges=[(-1, 1)] * 2, seed=0)
    rng = np.random.default_rng(0)

    def add():
        archive.add(rng.normal(size=(5, 3)), rng.normal(size=5), rng.uniform(-1, 1, (5, 2)))

    add()
    archive.data(["index", "objective", "measures"])
    with count_compilations() as compiled:
        for _ in range(60):
            add()
            data = archive.data(["index", "objective", "measures"])
            assert len(data["objective"]) == len(archive)
            occupied, elites = archive.retrieve(data["measures"][:7])
            assert occupied.all()
            np.testing.assert_array_equal(elites["objective"], data["objective"][:7])
    assert len(archive) > 256
    # data(): lengths 6..301 fall in the buckets 64, 128, 256 and 512; retrieve():
    # one gather of all fields.
    assert compiled.count <= 5
