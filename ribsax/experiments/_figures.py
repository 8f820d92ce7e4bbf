"""Figures written to files: the archive heatmap of run directories and examples.

Shared by :class:`~ribsax.experiments.RunDirectory` (snapshots) and the example
scripts (:mod:`ribsax.examples`), which import it from here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

__all__ = ["write_heatmap"]


def write_heatmap(
    archive, path: Path, title=None, labels=("measure 0", "measure 1"), **heatmap_kwargs
) -> bool:
    """Saves a heatmap of ``archive`` as a PNG:
    :func:`ribsax.visualize.cvt_archive_heatmap` for archives with centroids,
    :func:`ribsax.visualize.grid_archive_heatmap` otherwise.

    Args:
        archive: A 1D or 2D grid archive, or a 2D CVT archive.
        path: Where to write the PNG.
        title: Title of the Axes (None: no title).
        labels: x label, then (2D only) y label.
        **heatmap_kwargs: Passed to the heatmap function (e.g. ``vmin``).

    Returns:
        True, or False (with a warning) when matplotlib is not installed.
    """
    try:
        # matplotlib and ribsax.visualize (which imports it): the visualize extra.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from ribsax.visualize import cvt_archive_heatmap, grid_archive_heatmap
    except ImportError:
        warnings.warn(
            f"matplotlib is not installed, so {Path(path).name} was not "
            "written; install it with `pip install ribsax[visualize]`."
        )
        return False
    fig = Figure(figsize=(8, 6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    heatmap = cvt_archive_heatmap if hasattr(archive, "centroids") else grid_archive_heatmap
    heatmap(archive, ax, **heatmap_kwargs)
    if title is not None:
        ax.set_title(title)
    ax.set_xlabel(labels[0])
    if archive.measure_dim == 2:
        ax.set_ylabel(labels[1])
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return True
