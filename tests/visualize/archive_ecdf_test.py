"""Tests for ribsax.visualize.archive_ecdf (oracle: ribs.visualize, via seaborn)."""

import numpy as np
import pytest
import ribs.visualize

from ribsax.visualize import archive_ecdf
from tests.visualize.plot_helpers import (
    NoDataArchive,
    assert_same_error,
    grid_pair,
    new_axes,
)


def archives():
    return grid_pair([10, 10], 100)


@pytest.mark.parametrize(
    "kwargs", [{}, {"stat": "percent"}, {"stat": "count"}, {"complementary": True}]
)
def test_curve_matches_seaborn(kwargs):
    ours, theirs = archives()
    fig, ax = new_axes()
    out = archive_ecdf(ours, ax=ax, **kwargs)
    fig.canvas.draw()
    _, ax2 = new_axes()
    ribs.visualize.archive_ecdf(theirs, ax=ax2, **kwargs)
    assert out is ax
    (ours_line,), (theirs_line,) = ax.get_lines(), ax2.get_lines()
    np.testing.assert_allclose(ours_line.get_xdata(), theirs_line.get_xdata())
    np.testing.assert_allclose(ours_line.get_ydata(), theirs_line.get_ydata())
    assert ours_line.get_drawstyle() == theirs_line.get_drawstyle()
    assert ax.get_ylabel() == ax2.get_ylabel()
    assert ax.get_xlabel() == "objective"


def test_known_values_df_and_plot_kwargs():
    ours, _ = archives()
    df = ours.data(return_type="pandas").iloc[:4].copy()
    df["objective"] = [3.0, 1.0, 2.0, 2.0]
    _, ax = new_axes()
    archive_ecdf(ours, df=df, ax=ax, color="red", linewidth=3)
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [-np.inf, 1, 2, 2, 3])
    np.testing.assert_allclose(line.get_ydata(), [0, 0.25, 0.5, 0.75, 1.0])
    assert line.get_color() == "red" and line.get_linewidth() == 3


def test_errors():
    _, ax = new_axes()
    assert_same_error(
        lambda: archive_ecdf(NoDataArchive(), ax=ax),
        lambda: ribs.visualize.archive_ecdf(NoDataArchive(), ax=ax),
    )
    ours, _ = archives()
    with pytest.raises(ValueError, match="stat must be one of"):
        archive_ecdf(ours, ax=ax, stat="density")
