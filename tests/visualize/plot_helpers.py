"""Helpers shared by the plotting tests (Agg canvas, archives, differential errors)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.collections
import numpy as np
import pytest
import ribs.archives
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def new_axes(**subplot_kwargs):
    """A Figure with an Agg canvas and one Axes (no pyplot state involved)."""
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(**subplot_kwargs)


def new_figure():
    """A Figure with an Agg canvas and no Axes."""
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig


def fill(archives, measure_dim, n, *, lo=-1.0, hi=1.0, seed=0, solution_dim=3):
    """Adds the same random batch to every archive; returns the batch."""
    rng = np.random.default_rng(seed)
    measures = rng.uniform(lo, hi, size=(n, measure_dim))
    objective = rng.normal(size=n)
    solution = rng.normal(size=(n, solution_dim))
    for archive in archives:
        archive.add(solution, objective, measures)
    return solution, objective, measures


def raised(call):
    """``(type, message)`` of the exception ``call()`` raises."""
    with pytest.raises(Exception) as info:
        call()
    return info.type, str(info.value)


def assert_same_error(ours, theirs):
    """Both calls raise the same exception type with the same message."""
    assert raised(ours) == raised(theirs)


def colorbar_axes(fig, ax):
    """The Axes of the figure other than ``ax`` (the colour bar's)."""
    return [a for a in fig.axes if a is not ax]


def points_of(ax):
    """The one scatter (PathCollection) of ``ax``."""
    (points,) = [c for c in ax.collections if isinstance(c, matplotlib.collections.PathCollection)]
    return points


def grid_pair(dims, n, *, seed=0):
    """A ribsax and a pyribs GridArchive over [-1, 1]^d fed the same batch."""
    from ribsax.archives import GridArchive

    ranges = [(-1, 1)] * len(dims)
    ours = GridArchive(solution_dim=3, dims=dims, ranges=ranges)
    theirs = ribs.archives.GridArchive(solution_dim=3, dims=dims, ranges=ranges)
    fill([ours, theirs], len(dims), n, seed=seed)
    return ours, theirs


class NoDataArchive:
    """An archive whose ``data()`` is not implemented (pyribs' AttributeError)."""

    measure_dim = 2

    def data(self, *args, **kwargs):
        raise NotImplementedError
