"""Large batches (solution payload > 1 MiB) match pyribs, with few or most rows
winning."""
import numpy as np
import pytest
import ribs.archives

from ribsax._utils import aligned_empty
from ribsax.archives import CVTArchive, GridArchive


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("kind", ["grid", "cvt", "fine_grid"])
def test_large_batch_matches_ribs(kind, aligned):
    """Few winners for grid/cvt; most rows winning for fine_grid. Aligned solutions
    are read by the kernel in place (no staging copy); the caller then overwrites
    them, which must not change the archive."""
    rng = np.random.default_rng(7)
    batch, dim = 1500, 100  # 1500 * 100 * 8 bytes = 1.2 MB > 1 MiB.
    if kind in ("grid", "fine_grid"):
        dims = [8, 8] if kind == "grid" else [200, 200]
        kwargs = dict(solution_dim=dim, dims=dims, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    else:
        centroids = rng.uniform(-1, 1, size=(50, 2))
        kwargs = dict(solution_dim=dim, centroids=centroids, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = CVTArchive(**kwargs), ribs.archives.CVTArchive(**kwargs)
    for step in range(3):
        solution = rng.normal(size=(batch, dim))
        if aligned:
            solution = _aligned_copy(solution)
        objective = rng.normal(size=batch) + step
        measures = rng.uniform(-1.2, 1.2, size=(batch, 2))
        a = ours.add(solution, objective, measures)
        b = theirs.add(solution, objective, measures)
        np.testing.assert_array_equal(a["status"], b["status"])
        np.testing.assert_allclose(a["value"], b["value"])
        solution[:] = np.nan  # The caller reuses its array.
    da, db = ours.data(), theirs.data()
    for name in db:
        np.testing.assert_array_equal(da[name], db[name], err_msg=name)
    np.testing.assert_array_equal(ours.best_elite["solution"], theirs.best_elite["solution"])



def _aligned_copy(array):
    out = aligned_empty(array.shape, array.dtype)
    out[...] = array
    return out
