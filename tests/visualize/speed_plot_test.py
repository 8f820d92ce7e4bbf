"""Tests for ribsax.visualize.speed_plot (ribsax addition)."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer

from ribsax.visualize import speed_plot
from tests.visualize.plot_helpers import new_axes


def bar_widths(ax):
    return [p.get_width() for p in ax.patches]


def test_single_series_of_ratios():
    fig, ax = new_axes()
    out = speed_plot(
        {"map_elites": 3.0, "cma_me": [10.0, 12.0, 20.0]},
        ax,
        reference=1,
        log=True,
        xlabel="ribsax / pyribs",
    )
    fig.canvas.draw()
    assert out is ax
    np.testing.assert_allclose(bar_widths(ax), [3.0, 12.0])  # Median of repeats.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["map_elites", "cma_me"]
    assert ax.yaxis_inverted()  # First configuration on top.
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "ribsax / pyribs"
    assert ax.get_ylabel() == "configuration"
    (reference,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    np.testing.assert_allclose(reference.get_xdata(), [1, 1])
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["3", "12"]
    assert ax.get_legend() is None


def test_whiskers_span_min_to_max():
    _, ax = new_axes()
    speed_plot({"a": [1.0, 2.0, 4.0]}, ax, annotate=False)
    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    errorbar = bars.errorbar
    assert errorbar is not None
    segments = errorbar.lines[2][0].get_segments()
    np.testing.assert_allclose(segments[0][:, 0], [1.0, 4.0])
    assert not ax.texts


def test_grouped_series_from_dataframe():
    df = pd.DataFrame(
        {"ribsax": [1000.0, 200.0], "pyribs": [330.0, 23.0]}, index=["map_elites", "cma_me"]
    )
    _, ax = new_axes()
    speed_plot(df, ax, xlabel="iterations / s", colors=["C0", "C1"])
    np.testing.assert_allclose(bar_widths(ax), [1000, 200, 330, 23])
    ys = [p.get_y() + p.get_height() / 2 for p in ax.patches]
    assert ys[0] < ys[2]  # ribsax above pyribs within a group (before inversion).
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ribsax", "pyribs"]


def test_series_input():
    _, ax = new_axes()
    speed_plot(pd.Series({"x": 2.0, "y": 5.0}), ax)
    np.testing.assert_allclose(bar_widths(ax), [2.0, 5.0])
    assert ax.get_xlabel() == "speed"


@pytest.mark.parametrize(
    "speeds, kwargs, error, match",
    [
        ({}, {}, TypeError, "non-empty"),
        ([1, 2], {}, TypeError, "non-empty"),
        ({"a": []}, {}, ValueError, "finite"),
        ({"a": np.nan}, {}, ValueError, "finite"),
        ({"a": 0.0}, {"log": True}, ValueError, "positive"),
    ],
)
def test_bad_input(speeds, kwargs, error, match):
    _, ax = new_axes()
    with pytest.raises(error, match=match):
        speed_plot(speeds, ax, **kwargs)
