"""Plots of archives (needs matplotlib: ``pip install ribsax[visualize]``).

Like :mod:`ribs.visualize`, this module is not imported by ``import ribsax``; import
it explicitly. The functions draw on the current pyplot Axes unless ``ax`` is given,
and work with any object on a matplotlib Figure (no GUI backend needed).

.. autosummary::

    cvt_archive_heatmap
    grid_archive_heatmap
"""
from ribsax.visualize._cvt_archive_heatmap import cvt_archive_heatmap
from ribsax.visualize._grid_archive_heatmap import grid_archive_heatmap

__all__ = [
    "cvt_archive_heatmap",
    "grid_archive_heatmap",
]
