"""ArrayStore: the device-resident storage engine behind every cell archive."""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import host_copy, jax_dtype_supported
from ribsax.archives._archive_data_frame import ArchiveDataFrame
from ribsax.archives._kernels import StoreState, init_store, store_add_jit

__all__ = ["ArrayStore", "committed", "keys_mismatch_error"]

_ADD, _CLEAR = 0, 1


def _normalize_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def keys_mismatch_error(data_keys, store_keys) -> ValueError:
    """The ValueError (pyribs' wording) for data whose fields differ from a store's.

    Args:
        data_keys: ``dict_keys`` of the data passed in.
        store_keys: ``dict_keys`` of the store's fields.
    """
    return ValueError(
        f"`data` has keys {data_keys} but should have the "
        f"same keys as this ArrayStore, i.e., {store_keys}. "
        "This error may occur if the archive has extra_fields but the "
        "fields were not passed to archive.add() or scheduler.tell(). "
        "This can also occur if the archive and result_archive have "
        "different extra_fields."
    )


def is_numpy_namespace(xp) -> bool:
    """Whether ``xp`` is None, ``numpy``, or an array-API wrapper of NumPy (such as
    ``array_api_compat.numpy``, which pyribs uses as its default namespace)."""
    if xp is None or xp is np:
        return True
    name = getattr(xp, "__name__", "")
    return name in ("numpy", "array_api_compat.numpy", "array_api_strict") or (
        name.endswith(".numpy") and name.startswith("array_api_compat")
    )


_PLATFORM_ALIASES = {"cuda": "gpu", "rocm": "gpu"}


def resolve_device(device):
    """A ``jax.Device`` (or None for JAX's default) from pyribs-style ``device``.

    Args:
        device: None, a ``jax.Device``, or a string ``"platform[:ordinal]"`` where the
            platform is a JAX platform (``cpu``, ``gpu``, ``tpu``) or ``cuda``/``rocm``
            (read as ``gpu``).

    Raises:
        ValueError: No JAX device matches the string.
    """
    if device is None or isinstance(device, jax.Device):
        return device
    if isinstance(device, str):
        platform, _, ordinal = device.partition(":")
        platform = _PLATFORM_ALIASES.get(platform.lower(), platform.lower())
        try:
            devices = jax.devices(platform)
            return devices[int(ordinal) if ordinal else 0]
        except (RuntimeError, IndexError, ValueError) as err:
            raise ValueError(f"No JAX device matches device={device!r}.") from err
    raise ValueError(
        f"device must be None, a jax.Device or a string such as 'cpu', got {device!r}."
    )


@partial(jax.jit, static_argnames=("names",))
def _take_rows(fields, indices, names):
    return {name: fields[name][indices] for name in names}


class _HostMirror:
    """Host view of a store, fetching each piece from the device on first use."""

    def __init__(self, store: ArrayStore):
        self._store = store
        self._cache = {}

    def has(self, key) -> bool:
        """Whether ``key`` is already on the host."""
        return key in self._cache

    def __getitem__(self, key):
        if key not in self._cache:
            store = self._store
            if key in ("occupied", "occupied_list", "n_occupied"):
                stamp = np.asarray(jax.device_get(store.state.stamp))
                cells = np.flatnonzero(stamp >= 0).astype(np.int32)
                order = np.lexsort((cells, stamp[cells]))
                self._cache["occupied"] = stamp >= 0
                self._cache["occupied_list"] = cells[order]
                self._cache["n_occupied"] = len(cells)
                store._n_cache = len(cells)
            elif key in store.host_fields:
                self._cache[key] = store.host_fields[key]
            else:
                self._cache[key] = np.asarray(jax.device_get(store.state.fields[key]))
        return self._cache[key]


def committed(state, device=None):
    """``state`` (a pytree) placed on ``device`` (by default the device JAX puts new
    arrays on) and committed to it, as the outputs of the kernels that update it
    are: the kernels then see one kind of argument from the first call on, and
    compile once instead of twice. NumPy leaves are copied first
    (:func:`~ribsax._utils.host_copy`): on CPU, ``device_put`` shares the memory of an
    aligned NumPy array (``may_alias=False`` does not prevent it), and the caller
    may later change that array."""
    if device is None:
        # The default device, found without compiling anything.
        device = next(iter(jax.device_put(np.zeros(())).devices()))
    state = jax.tree.map(
        lambda leaf: host_copy(leaf) if isinstance(leaf, np.ndarray) else leaf, state
    )
    return jax.device_put(state, device)


def ensure_committed(state, device=None):
    """``state`` as it is when every leaf is already a committed JAX array (kernel
    outputs are), else :func:`committed` to ``device``.

    A jitted kernel compiles separately for committed and uncommitted arguments, so
    a state created outside jit goes through this before each kernel call: the
    kernel then compiles once, not again at its second call."""
    if all(getattr(leaf, "committed", False) for leaf in jax.tree.leaves(state)):
        return state
    return committed(state, device)


def device_of(array):
    """The device of a single-device JAX array (None for anything else: the
    default device is then used by :func:`committed`)."""
    devices = getattr(array, "devices", None)
    if devices is None:
        return None
    found = devices()
    return next(iter(found)) if len(found) == 1 else None


class ArrayStore:
    """Fixed-capacity storage of fields indexed by cell, mirroring pyribs' ArrayStore.

    Numeric fields live on the default JAX device inside a
    :class:`~ribsax.archives._kernels.StoreState` pytree that jitted kernels update in
    place (donated buffers); its ``fields`` dict holds each as a
    ``(capacity, *shape)`` array. Fields
    whose dtype JAX cannot hold (``object``, strings) are kept as NumPy arrays on the
    host. Reads (``retrieve``,
    ``data``, iteration) go through a host mirror that is refreshed lazily after each
    write, so repeated reads cost one transfer.

    Args:
        field_desc: ``{name: (shape, dtype)}``; ``shape`` is an int or a tuple.
        capacity: Number of entries.
        xp: Accepted for pyribs compatibility: ``None``, ``numpy`` or the array-API
            namespace of NumPy that pyribs passes
            (``array_api_compat.array_namespace(np.empty(0))``). The data itself
            always lives in JAX arrays, and reads return NumPy arrays.
        device: Where the arrays live: ``None`` (JAX's default device), a
            ``jax.Device``, or a platform name with an optional ordinal as pyribs
            and torch write it (``"cpu"``, ``"cuda"``, ``"cuda:0"``, ``"gpu:1"``,
            ``"tpu"``).

    Raises:
        ValueError: A field is named ``index`` or is not a valid identifier, ``xp``
            is not a NumPy namespace, or ``device`` names no available JAX device.
    """

    def __init__(self, field_desc, capacity, xp=None, device=None):
        if not is_numpy_namespace(xp):
            raise ValueError(
                "ribsax's ArrayStore keeps data in JAX arrays; xp must be None, numpy "
                "or the array-API namespace of numpy."
            )
        self._capacity = int(capacity)
        self._device = resolve_device(device)
        self._field_desc = {}
        for name, (shape, dtype) in field_desc.items():
            if name == "index":
                raise ValueError("`index` is a reserved field name.")
            if not name.isidentifier():
                raise ValueError(f"Field names must be valid identifiers: `{name}`")
            self._field_desc[name] = (_normalize_shape(shape), np.dtype(dtype))
        self._device_names = [n for n, (_, d) in self._field_desc.items() if jax_dtype_supported(d)]
        self._host_names = [n for n in self._field_desc if n not in self._device_names]
        self._updates = [0, 0]
        self._reset_storage()

    # ------------------------------------------------------------------ storage
    def _reset_storage(self):
        shapes = {n: self._field_desc[n][0] for n in self._device_names}
        dtypes = {n: self._field_desc[n][1] for n in self._device_names}
        self._state = committed(init_store(self._capacity, shapes, dtypes), self._device)
        self._host_fields = {
            n: np.empty((self._capacity, *self._field_desc[n][0]), dtype=self._field_desc[n][1])
            for n in self._host_names
        }
        self._n_cache = 0
        self._mirror = None

    @property
    def state(self) -> StoreState:
        """The device state pytree (read by kernels; do not mutate)."""
        return self._state

    def _set_state(self, state: StoreState, n_occupied=None, wrote: bool = True):
        """Installs a new state produced by a kernel.

        Args:
            state: New :class:`StoreState`.
            n_occupied: Host int count if known; otherwise read lazily.
            wrote: Whether the store was written to (bumps the add counter that
                iteration checks).
        """
        self._state = state
        self._n_cache = n_occupied
        self._mirror = None
        if wrote:
            self._updates[_ADD] += 1

    @property
    def host_fields(self) -> dict:
        """Host-side (non-JAX dtype) fields, written in place by archives."""
        return self._host_fields

    @property
    def device_field_names(self) -> list:
        """Names of the fields stored on the JAX device."""
        return list(self._device_names)

    def _host(self) -> _HostMirror:
        """Lazy host mirror of the device state, refreshed after each write."""
        if self._mirror is None:
            self._mirror = _HostMirror(self)
        return self._mirror

    def _gather(self, indices, names) -> dict:
        """Host copies of ``names`` at ``indices``.

        Small requests (e.g. ``sample_elites``) are gathered on the device so that
        only the selected rows cross to the host; large ones read the mirror.
        """
        host = self._host()
        small = len(indices) * 8 < self._capacity
        device_names = [n for n in names if n not in self._host_fields and not host.has(n)]
        out = {}
        if small and device_names:
            # Padded to a power of two so that requests of every length share a
            # few compiled gathers (data() of a growing archive asks for a new
            # length at each call).
            count = len(indices)
            padded = np.zeros(max(64, 1 << max(count - 1, 0).bit_length()), np.int32)
            padded[:count] = indices
            gathered = jax.device_get(
                _take_rows(self._state.fields, padded, names=tuple(device_names))
            )
            out.update({n: np.array(v[:count]) for n, v in gathered.items()})
        for name in names:
            if name not in out:
                out[name] = host[name][indices]
        return out

    # ------------------------------------------------------------ properties
    def __len__(self) -> int:
        if self._n_cache is None:
            self._n_cache = int(self._state.n_occupied)
        return self._n_cache

    def __iter__(self):
        # Snapshot the modification counters now, not at the first next().
        return self._iterate(list(self._updates))

    def _iterate(self, updates):
        host = self._host()
        fields = list(self._field_desc)
        for idx in host["occupied_list"]:
            if self._updates != updates:
                raise RuntimeError(
                    "ArrayStore was modified with add() or clear() during iteration."
                )
            entry = {"index": idx}
            for name in fields:
                entry[name] = host[name][idx]
            yield entry
            if self._updates != updates:
                raise RuntimeError(
                    "ArrayStore was modified with add() or clear() during iteration."
                )

    @property
    def capacity(self) -> int:
        """Maximum number of entries."""
        return self._capacity

    @property
    def occupied(self) -> np.ndarray:
        """Read-only bool array of length ``capacity``."""
        arr = self._host()["occupied"].view()
        arr.flags.writeable = False
        return arr

    @property
    def occupied_list(self) -> np.ndarray:
        """Read-only int32 array of occupied indices in order of first occupation."""
        arr = self._host()["occupied_list"].view()
        arr.flags.writeable = False
        return arr

    @property
    def field_desc(self) -> dict:
        """``{name: (shape tuple, dtype)}``."""
        return dict(self._field_desc)

    @property
    def field_list(self) -> list:
        """Field names in definition order."""
        return list(self._field_desc)

    @property
    def field_list_with_index(self) -> list:
        """Field names followed by ``index``."""
        return list(self._field_desc) + ["index"]

    @property
    def dtypes(self) -> dict:
        """``{name: dtype}`` of the fields."""
        return {name: dtype for name, (_, dtype) in self._field_desc.items()}

    @property
    def dtypes_with_index(self) -> dict:
        """:attr:`dtypes` plus ``"index": np.int32`` (a new dict each call)."""
        cached = self.__dict__.get("_dtypes_with_index")
        if cached is None:
            cached = {**self.dtypes, "index": np.int32}
            self._dtypes_with_index = cached
        return dict(cached)

    # --------------------------------------------------------------- reading
    def retrieve(self, indices, fields=None, return_type=None):
        """Reads entries at ``indices``.

        Args:
            indices: 1D array-like of ints.
            fields: None (all fields and ``index``), a str (one field), or a list.
            return_type: None, ``"dict"``, ``"tuple"`` or ``"pandas"``. None means a
                bare array for a str ``fields`` and a dict otherwise.

        Returns:
            ``(occupied, data)``: bool array and copies of the requested data.

        Raises:
            ValueError: Unknown field, unknown return_type, or a >1D field with pandas.
        """
        indices = np.asarray(indices, dtype=np.int32)
        host = self._host()
        occupied = host["occupied"][indices]
        single = isinstance(fields, str)
        if single:
            requested = [fields]
        elif fields is None:
            requested = list(self._field_desc)
        else:
            requested = list(fields)
        gathered = self._gather(
            indices, list(dict.fromkeys(n for n in requested if n in self._field_desc))
        )
        if return_type is None:
            return_type = "single" if single else "dict"
        if single:
            fields = [fields]
        elif fields is None:
            fields = itertools.chain(self._field_desc, ["index"])
        if return_type == "single":
            data = None
        elif return_type in ("dict", "pandas"):
            data = {}
        elif return_type == "tuple":
            data = []
        else:
            raise ValueError(f"Invalid return_type {return_type}.")

        for name in fields:
            if name == "index":
                arr = indices.copy()
            elif name in self._field_desc:
                arr = (
                    gathered[name].copy() if single or return_type == "tuple" else (gathered[name])
                )
            else:
                raise ValueError(f"`{name}` is not a field in this ArrayStore.")
            if return_type == "single":
                data = arr
            elif return_type == "dict":
                data[name] = arr
            elif return_type == "tuple":
                data.append(arr)
            else:
                if arr.ndim == 1:
                    data[name] = arr
                elif arr.ndim == 2:
                    for i in range(arr.shape[1]):
                        data[f"{name}_{i}"] = arr[:, i]
                else:
                    raise ValueError(
                        f"Field `{name}` has shape {arr.shape[1:]} -- "
                        "cannot convert fields with shape >1D to Pandas"
                    )
        if return_type == "tuple":
            data = tuple(data)
        elif return_type == "pandas":
            data = ArchiveDataFrame(data, copy=False)
        return occupied, data

    def data(self, fields=None, return_type=None):
        """All occupied entries in order of first occupation (see :meth:`retrieve`)."""
        return self.retrieve(self.occupied_list, fields, return_type)[1]

    # --------------------------------------------------------------- writing
    def add(self, indices, data) -> None:
        """Writes ``data`` at ``indices``; with duplicate indices the last write wins.

        Args:
            indices: 1D int array-like of length n.
            data: dict with exactly this store's fields, each of length n.

        Raises:
            ValueError: A field has the wrong length or the keys do not match.
        """
        self._updates[_ADD] += 1
        indices = np.asarray(indices, dtype=np.int32)
        if len(indices) == 0:
            return
        for name, arr in data.items():
            if len(arr) != len(indices):
                raise ValueError(
                    f"In `data`, the array for `{name}` has length {len(arr)} but "
                    "should be the same length as indices "
                    f"({len(indices)})"
                )
        if data.keys() != self._field_desc.keys():
            raise keys_mismatch_error(data.keys(), self._field_desc.keys())
        device_data = {
            n: np.asarray(data[n], dtype=self._field_desc[n][1]) for n in self._device_names
        }
        for name in self._host_names:
            self._host_fields[name][indices] = np.asarray(data[name])
        self._state = store_add_jit(self._state, indices, device_data)
        self._n_cache = None
        self._mirror = None

    def clear(self) -> None:
        """Marks every entry unoccupied (field contents are left as they are)."""
        self._state = self._state._replace(
            stamp=jnp.full_like(self._state.stamp, -1),
            n_occupied=jnp.zeros((), jnp.int32),
        )
        self._n_cache = 0
        self._mirror = None
        self._updates[_CLEAR] += 1

    def resize(self, capacity) -> None:
        """Grows the store to ``capacity`` entries, keeping all data.

        Raises:
            ValueError: ``capacity`` is not strictly larger than the current one.
        """
        if capacity <= self._capacity:
            raise ValueError(
                f"New capacity ({capacity}) must be greater than current capacity "
                f"({self._capacity}."
            )
        old_state, old_host = self._state, self._host_fields
        old_capacity = self._capacity
        self._capacity = int(capacity)
        self._reset_storage()
        pad = self._capacity - old_capacity

        def grow(arr, fill=0):
            widths = [(0, pad)] + [(0, 0)] * (arr.ndim - 1)
            return jnp.pad(arr, widths, constant_values=fill)

        self._state = StoreState(
            stamp=grow(old_state.stamp, -1),
            order=grow(old_state.order),
            n_occupied=old_state.n_occupied,
            n_writes=old_state.n_writes,
            fields=jax.tree.map(grow, old_state.fields),
        )
        for name, arr in old_host.items():
            self._host_fields[name][:old_capacity] = arr
        self._n_cache = None

    # -------------------------------------------------------------- pickling
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_state"] = jax.device_get(self._state)
        state["_mirror"] = None
        state["_device"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._state = committed(self._state, None)
