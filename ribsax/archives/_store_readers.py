"""Read-side methods shared by every archive that keeps its elites in an ArrayStore."""

from __future__ import annotations

import numpy as np

from ribsax._utils import (
    check_batch_shape,
    check_finite,
    parse_all_dtypes,
    validate_single,
)
from ribsax.archives._array_store import ArrayStore

__all__ = ["StoreReadersMixin", "fill_sentinel_values", "check_reserved_fields", "elite_store"]


def check_reserved_fields(reserved, extra_fields):
    """pyribs' error for extra fields that use a reserved name.

    Raises:
        ValueError: ``extra_fields`` (None or a dict) uses a name in ``reserved``.
    """
    if reserved & (extra_fields or {}).keys():
        raise ValueError(f"The following names are not allowed in extra_fields: {reserved}")


def elite_store(
    archive, extra_fields, capacity, dtype, solution_dtype, objective_dtype, measures_dtype
):
    """The :class:`ArrayStore` of an unstructured archive's elites.

    Fields ``solution``, ``objective`` and ``measures`` (pyribs' dtype rules), then
    ``extra_fields``.

    Args:
        archive: The archive (its ``solution_dim`` and ``measure_dim`` are read).
        extra_fields: None or ``{name: (shape, dtype)}``.
        capacity: Number of rows.
        dtype, solution_dtype, objective_dtype, measures_dtype: As in the archives.

    Returns:
        The store.

    Raises:
        ValueError: Conflicting dtype arguments.
    """
    extra_fields = extra_fields or {}
    solution_dtype, objective_dtype, measures_dtype = parse_all_dtypes(
        dtype, solution_dtype, objective_dtype, measures_dtype
    )
    return ArrayStore(
        field_desc={
            "solution": (archive.solution_dim, solution_dtype),
            "objective": ((), objective_dtype),
            "measures": (archive.measure_dim, measures_dtype),
            **extra_fields,
        },
        capacity=int(capacity),
    )


def fill_sentinel_values(occupied, data: dict) -> dict:
    """Replaces unoccupied entries with sentinels: NaN, -1 (index), 0 (ints), None.

    Args:
        occupied: bool[batch].
        data: name -> array[batch, ...] (modified in place and returned).

    Returns:
        ``data``.
    """
    unoccupied = ~np.asarray(occupied)
    for name, arr in data.items():
        if name == "index":
            arr[unoccupied] = -1
        elif np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.complexfloating):
            arr[unoccupied] = np.nan
        elif arr.dtype == object:
            arr[unoccupied] = None
        else:
            arr[unoccupied] = 0
    return data


class StoreReadersMixin:
    """``store``, ``field_list``, ``dtypes``, ``empty``, ``len``, iteration,
    ``index_of_single``, ``retrieve``, ``retrieve_single``, ``data`` and
    ``sample_elites``, all read from the archive's store; and
    :meth:`_checked_measures`, the validation that starts every ``index_of``.

    The host class provides ``_store`` (an :class:`ArrayStore`), ``_rng`` (a NumPy
    generator) and ``index_of``.
    """

    @property
    def store(self):
        """The archive's :class:`ArrayStore` (its ``state`` is the device pytree that
        kernels such as emitters and the fused loop read)."""
        return self._store

    @property
    def field_list(self):
        """Names of the stored fields, ``index`` last."""
        return self._store.field_list_with_index

    @property
    def dtypes(self):
        """``{field: dtype}``, including ``"index": np.int32``."""
        return self._store.dtypes_with_index

    @property
    def empty(self) -> bool:
        """Whether the archive holds no elite."""
        return len(self._store) == 0

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self):
        return iter(self._store)

    def _checked_measures(self, measures):
        """Converts a batch of measures to the measures dtype and validates it.

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        measures = np.asarray(measures, dtype=self.dtypes["measures"])
        check_batch_shape(measures, "measures", self.measure_dim, "measure_dim")
        check_finite(measures, "measures")
        return measures

    def index_of_single(self, measures):
        """Cell index of one measure vector (see ``index_of``).

        Raises:
            ValueError: ``measures`` has the wrong shape or non-finite values.
        """
        measures = validate_single(self, {"measures": measures})["measures"]
        return self.index_of(measures[None])[0]

    def retrieve(self, measures):
        """Elites in the cells of a batch of measures.

        Returns:
            ``(occupied bool[batch], data dict)``; unoccupied entries hold sentinels
            (NaN for floats, -1 for index, 0 for other ints, None for objects).

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        occupied, data = self._store.retrieve(self.index_of(measures))
        fill_sentinel_values(occupied, data)
        return occupied, data

    def retrieve_single(self, measures):
        """Single-measure :meth:`retrieve`; returns ``(bool, dict of scalars)``.

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        measures = validate_single(self, {"measures": measures})["measures"]
        occupied, data = self.retrieve(measures[None])
        return occupied[0], {name: arr[0] for name, arr in data.items()}

    def data(self, fields=None, return_type=None):
        """Archive contents in order of first occupation.

        Args:
            fields: None (all fields, ``index`` last), a field name, or a list.
            return_type: None, ``"dict"``, ``"tuple"`` or ``"pandas"``.

        Returns:
            See :meth:`ArrayStore.retrieve`.
        """
        return self._store.data(fields, return_type)

    def sample_elites(self, n, replace=True):
        """Uniformly samples ``n`` elites (positions drawn with the archive's rng).

        Raises:
            IndexError: The archive is empty.
            ValueError: ``replace=False`` and ``n`` exceeds the number of elites.
        """
        if self.empty:
            raise IndexError("No elements in archive.")
        if not replace and n > len(self._store):
            raise ValueError(
                "Cannot take a larger sample than the number of elites "
                "in the archive when 'replace=False'"
            )
        positions = self._rng.choice(len(self._store), size=n, replace=replace)
        _, elites = self._store.retrieve(self._store.occupied_list[positions])
        return elites
