"""Output helpers shared by the example scripts (versions, metrics CSV, heatmap)."""
from __future__ import annotations

import csv
import platform
import warnings
from pathlib import Path

import jax
import numpy as np

__all__ = ["library_versions", "metrics_row", "write_metrics_csv", "write_heatmap"]


def library_versions() -> dict:
    """Versions of ribsax, JAX, NumPy and Python, and JAX's default backend."""
    import ribsax  # pylint: disable=import-outside-toplevel
    return {"ribsax": ribsax.__version__, "jax": jax.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "backend": jax.default_backend()}


def metrics_row(iteration, stats, elapsed_s) -> dict:
    """One metrics row (the examples' ``METRIC_FIELDS``) from an ``ArchiveStats``."""
    return {
        "iteration": iteration,
        "qd_score": float(stats.qd_score),
        "coverage": float(stats.coverage),
        "obj_max": float(stats.obj_max),
        "obj_mean": float(stats.obj_mean),
        "num_elites": int(stats.num_elites),
        "elapsed_s": elapsed_s,
    }


def write_metrics_csv(path: Path, fieldnames, rows) -> None:
    """Writes ``rows`` (dicts keyed by ``fieldnames``) as a CSV with a header."""
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)


def write_heatmap(archive, path: Path, title=None, labels=("measure 0", "measure 1"),
                  **heatmap_kwargs) -> bool:
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
        # pylint: disable=import-outside-toplevel
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from ribsax.visualize import cvt_archive_heatmap, grid_archive_heatmap
    except ImportError:
        warnings.warn(f"matplotlib is not installed, so {Path(path).name} was not "
                      "written; install it with `pip install ribsax[visualize]`.")
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
