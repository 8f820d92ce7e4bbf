"""Plots of archives and runs (needs matplotlib: ``pip install ribsax[visualize]``).

Like :mod:`ribs.visualize`, this module is not imported by ``import ribsax``; import
it explicitly. The functions draw on the current pyplot Axes unless ``ax`` is given,
and work with any object on a matplotlib Figure (no GUI backend needed).

pyribs' plotting functions (its nine archive plots and the two QDax-repertoire
plots) keep their signatures, argument checks and error
messages. ribsax differs in three documented ways:

* every function returns the Axes it drew on (pyribs returns None from most;
  :func:`aggregate_cdf` returns its two patches, as in pyribs), so calls can be
  chained or inspected;
* axes that have no label yet are labelled (``measure_0``, ``measure_1``,
  ``objective``...) and colour bars are labelled ``"objective"`` unless
  ``cbar_kwargs`` gives a ``label``; labels you set before or after win;
* :func:`archive_ecdf` draws with matplotlib alone instead of seaborn.

Two ribsax plots have no pyribs counterpart: :func:`qd_metric_curves` (QD score,
coverage or best objective over a run, mean and band over seeds, from
:class:`~ribsax.schedulers.RunResult` / :class:`~ribsax.schedulers.TrialsResult`)
and :func:`speed_plot` (throughputs or speed-up ratios per configuration, for
benchmark reports).

.. autosummary::

    grid_archive_heatmap
    cvt_archive_heatmap
    sliding_boundaries_archive_heatmap
    proximity_archive_plot
    cvt_archive_3d_plot
    parallel_axes_plot
    archive_histogram
    archive_ecdf
    aggregate_cdf
    qdax_repertoire_heatmap
    qdax_repertoire_3d_plot
    qd_metric_curves
    speed_plot
"""

from ribsax.visualize._aggregate_cdf import aggregate_cdf
from ribsax.visualize._archive_ecdf import archive_ecdf
from ribsax.visualize._archive_histogram import archive_histogram
from ribsax.visualize._cvt_archive_3d_plot import cvt_archive_3d_plot
from ribsax.visualize._cvt_archive_heatmap import cvt_archive_heatmap
from ribsax.visualize._grid_archive_heatmap import grid_archive_heatmap
from ribsax.visualize._parallel_axes_plot import parallel_axes_plot
from ribsax.visualize._proximity_archive_plot import proximity_archive_plot
from ribsax.visualize._qd_metric_curves import qd_metric_curves
from ribsax.visualize._qdax_repertoire import qdax_repertoire_3d_plot, qdax_repertoire_heatmap
from ribsax.visualize._sliding_boundaries_archive_heatmap import (
    sliding_boundaries_archive_heatmap,
)
from ribsax.visualize._speed_plot import speed_plot

__all__ = [
    "aggregate_cdf",
    "archive_ecdf",
    "archive_histogram",
    "cvt_archive_3d_plot",
    "cvt_archive_heatmap",
    "grid_archive_heatmap",
    "parallel_axes_plot",
    "proximity_archive_plot",
    "qd_metric_curves",
    "qdax_repertoire_3d_plot",
    "qdax_repertoire_heatmap",
    "sliding_boundaries_archive_heatmap",
    "speed_plot",
]
