"""Output helpers shared by the example scripts (versions, metrics CSV, heatmap).

The heatmap writer is the run directories' one
(:func:`ribsax.experiments._figures.write_heatmap`), re-exported here.
"""

from __future__ import annotations

import csv
import platform
from pathlib import Path

import jax
import numpy as np

import ribsax
from ribsax.experiments._figures import write_heatmap

__all__ = ["library_versions", "metrics_row", "write_metrics_csv", "write_heatmap"]


def library_versions() -> dict:
    """Versions of ribsax, JAX, NumPy and Python, and JAX's default backend."""
    return {
        "ribsax": ribsax.__version__,
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
    }


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
