"""Tests for the shared helpers in ribsax.visualize._utils."""

import pathlib
import subprocess
import sys

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
    np.testing.assert_allclose(
        colour_range(vmin, vmax, objectives), compute_vmin_vmax(vmin, vmax, objectives)
    )


def test_colour_range_rejects_reversed_limits():
    with pytest.raises(
        ValueError,
        match=r"^vmax \(1\) must be greater than or "
        r"equal to vmin \(2\)$",
    ):
        colour_range(2, 1, np.array([0.0]))


def test_as_colormap():
    assert as_colormap("viridis").name == "viridis"
    listed = as_colormap(["red", "blue"])
    assert isinstance(listed, matplotlib.colors.ListedColormap)
    np.testing.assert_allclose(listed(1.0), [0, 0, 1, 1])
    cmap = matplotlib.colors.ListedColormap(["black"])
    assert as_colormap(cmap) is cmap


def test_import_ribsax_does_not_import_matplotlib():
    code = (
        "import sys, ribsax, ribsax.archives, ribsax.emitters, "
        "ribsax.schedulers, ribsax.tasks; print('matplotlib' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=pathlib.Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "False"
