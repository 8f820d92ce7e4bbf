"""Mixins shared by the archives that have measure bounds or grid coordinates."""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from ribsax._utils import check_batch_shape, check_is_1d

__all__ = ["MeasureBoundsMixin", "GridIndexMixin", "read_only"]


def read_only(attr, doc):
    """A read-only property returning ``self.<attr>``.

    Args:
        attr: Name of the private attribute.
        doc: Docstring of the property.

    Returns:
        property.
    """
    return property(attrgetter(attr), doc=doc)


class MeasureBoundsMixin:
    """``lower_bounds``, ``upper_bounds`` and ``interval_size`` of the measure space.

    The class sets ``_lower_bounds``, ``_upper_bounds`` and ``_interval_size``.
    """

    lower_bounds = read_only("_lower_bounds", "Lower bound of each measure dimension.")
    upper_bounds = read_only("_upper_bounds", "Upper bound of each measure dimension.")
    interval_size = read_only("_interval_size", "``upper_bounds - lower_bounds``.")


class GridIndexMixin:
    """Conversions between grid coordinates and flat (C order) cell indices.

    The class sets ``_dims``, the number of cells per measure dimension.
    """

    def grid_to_int_index(self, grid_indices):
        """Converts grid coordinates (batch_size, measure_dim) to flat int32 indices.

        Raises:
            ValueError: Wrong shape.
        """
        grid_indices = np.asarray(grid_indices)
        check_batch_shape(grid_indices, "grid_indices", self.measure_dim, "measure_dim")
        return np.ravel_multi_index(grid_indices.T, self._dims).astype(np.int32)

    def int_to_grid_index(self, int_indices):
        """Converts flat indices (batch_size,) to grid coordinates (int32).

        Raises:
            ValueError: ``int_indices`` is not 1D.
        """
        int_indices = np.asarray(int_indices)
        check_is_1d(int_indices, "int_indices")
        return np.asarray(np.unravel_index(int_indices, self._dims), dtype=np.int32).T
