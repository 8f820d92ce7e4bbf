"""DensityArchive: differential tests against ribs.archives.DensityArchive."""
import numpy as np
import pytest
from ribs.archives import DensityArchive as RibsDensityArchive

from ribsax.archives import DensityArchive


def both(**kwargs):
    kwargs = {"measure_dim": 2, "buffer_size": 30, "bandwidth": 0.7, "seed": 5,
              **kwargs}
    return DensityArchive(**kwargs), RibsDensityArchive(**kwargs)


@pytest.mark.parametrize("method,kwargs", [
    ("kde", {}), ("kde_sklearn", {"sklearn_kwargs": {"kernel": "gaussian"}})])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_densities_and_reservoir_match_ribs(method, kwargs, dtype):
    """Densities before each update and the buffer (filling, then reservoir sampling
    with pyribs' draws and quirks) over many batches."""
    ours, theirs = both(density_method=method, dtype=dtype, **kwargs)
    rng = np.random.default_rng(0)
    for size in (0, 7, 20, 13, 40, 40, 40):
        measures = rng.uniform(-2, 2, size=(size, 2))
        info = ours.add(None, None, measures)
        ref = theirs.add(None, None, measures)
        np.testing.assert_array_equal(info["status"], ref["status"])
        assert info["status"].dtype == ref["status"].dtype
        np.testing.assert_allclose(info["density"], ref["density"],
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)
        assert info["density"].dtype == ref["density"].dtype
        np.testing.assert_array_equal(ours.buffer, theirs.buffer)
    assert len(ours.buffer) == 30
    query = rng.uniform(-2, 2, size=(5, 2))
    np.testing.assert_allclose(ours.compute_density(query),
                               theirs.compute_density(query), rtol=1e-5)


def test_interface_matches_ribs():
    ours, theirs = both()
    assert ours.empty is theirs.empty is False
    assert ours.solution_dim == theirs.solution_dim == 0
    with pytest.raises(ValueError):
        ours.buffer[:] = 0  # pylint: disable = unsupported-assignment-operation
    for archive in (ours, theirs):
        with pytest.raises(NotImplementedError):
            len(archive)
        with pytest.raises(NotImplementedError):
            _ = archive.stats
    for bad in (np.zeros((2, 3)), np.array([[np.nan, 0.0]])):
        errors = []
        for archive in (ours, theirs):
            with pytest.raises(ValueError) as err:
                archive.add(None, None, bad)
            errors.append(str(err.value))
        assert errors[0] == errors[1]


def test_unknown_and_unimplemented_methods():
    errors = []
    for cls in (DensityArchive, RibsDensityArchive):
        with pytest.raises(ValueError) as err:
            cls(measure_dim=2, density_method="histogram")
        errors.append(str(err.value))
    assert errors[0] == errors[1] == "Unknown density_method 'histogram'"
    with pytest.raises(NotImplementedError, match="cnf"):
        DensityArchive(measure_dim=2, density_method="cnf")
