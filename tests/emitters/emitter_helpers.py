"""Helpers shared by the emitter and scheduler tests."""
import re

import numpy as np
import pytest
import ribs.archives

import ribsax.archives


def assert_same_error(ribs_call, ribsax_call):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        ribs_call()
    with pytest.raises(type(expected.value), match=f"^{re.escape(str(expected.value))}$"):
        ribsax_call()


def grid_pair(solution_dim=3, dims=(10, 10), ranges=((-1, 1), (-1, 1)), **kwargs):
    """A ribs GridArchive and a ribsax GridArchive with the same settings."""
    return (
        ribs.archives.GridArchive(solution_dim=solution_dim, dims=dims, ranges=ranges,
                                  **kwargs),
        ribsax.archives.GridArchive(solution_dim=solution_dim, dims=dims,
                                    ranges=ranges, **kwargs),
    )


def fill(archive, n=20, seed=0, objective=None):
    """Adds ``n`` random solutions (measures = first two entries) and returns them."""
    rng = np.random.default_rng(seed)
    shape = archive.solution_dim
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    solutions = rng.uniform(-1, 1, size=(n, *shape))
    flat = solutions.reshape(n, -1)
    obj = -np.sum(flat**2, axis=1) if objective is None else objective
    archive.add(solutions, obj, flat[:, :2])
    return solutions
