"""Tests for the shared helpers in ribsax.visualize._utils."""
import matplotlib
import numpy as np
import pytest
from ribs.visualize._utils import compute_vmin_vmax

from ribsax.visualize._utils import as_colormap, colour_range

CASES = [
    (None, None, []),
    (None, None, [3.0]),
    (None, None, [1.0, 5.0, -2.0]),
    (0.5, None, []),
    (0.5, None, [1.0, 5.0]),
    (9.0, None, [1.0, 5.0]),
    (None, 0.5, []),
    (None, 4.0, [1.0, 5.0]),
    (None, -3.0, [1.0, 5.0]),
    (1.0, 1.0, [1.0, 5.0]),
    (-1.0, 2.0, [1.0, 5.0]),
]


@pytest.mark.parametrize("vmin, vmax, objectives", CASES)
def test_colour_range_matches_pyribs(vmin, vmax, objectives):
    objectives = np.asarray(objectives, dtype=float)
    np.testing.assert_allclose(colour_range(vmin, vmax, objectives),
                               compute_vmin_vmax(vmin, vmax, objectives))


def test_colour_range_rejects_reversed_limits():
    with pytest.raises(ValueError, match=r"^vmax \(1\) must be greater than or "
                       r"equal to vmin \(2\)$"):
        colour_range(2, 1, np.array([0.0]))


def test_as_colormap():
    assert as_colormap("viridis").name == "viridis"
    listed = as_colormap(["red", "blue"])
    assert isinstance(listed, matplotlib.colors.ListedColormap)
    np.testing.assert_allclose(listed(1.0), [0, 0, 1, 1])
    cmap = matplotlib.colors.ListedColormap(["black"])
    assert as_colormap(cmap) is cmap
