"""ArchiveDataFrame: a pandas DataFrame with archive-aware accessors."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["ArchiveDataFrame"]

_VECTOR_COLUMN = re.compile(r"^(.*)_(\d+)$")


class ArchiveDataFrame(pd.DataFrame):
    """DataFrame returned by ``archive.data(return_type="pandas")``.

    Scalar fields are single columns (``objective``); vector fields are split into
    ``name_0 .. name_{k-1}``. Slicing keeps the type.
    """

    @property
    def _constructor(self):
        return ArchiveDataFrame

    def get_field(self, field: str) -> np.ndarray:
        """Returns a field as a NumPy array (1D for scalars, 2D for vectors).

        Args:
            field: Field name, e.g. ``"objective"`` or ``"solution"``.

        Returns:
            A copy of the data.

        Raises:
            KeyError: No column belongs to ``field``.
        """
        if field in self:
            return self[field].to_numpy(copy=True)
        pattern = re.compile(f"^{re.escape(field)}_\\d+$")
        columns = [c for c in self.columns if isinstance(c, str) and pattern.match(c)]
        if not columns:
            raise KeyError(f"Field '{field}' was not found.")
        return self[columns].to_numpy(copy=True)

    def iterelites(self):
        """Yields one dict per row, keyed by field name.

        Yields:
            ``{field: value}`` with vector fields gathered into arrays.
        """
        names = []
        for column in self.columns:
            match = _VECTOR_COLUMN.match(column) if isinstance(column, str) else None
            name = match.group(1) if match else column
            if name not in names:
                names.append(name)
        arrays = {name: self.get_field(name) for name in names}
        for i in range(len(self)):
            yield {name: arr[i] for name, arr in arrays.items()}
