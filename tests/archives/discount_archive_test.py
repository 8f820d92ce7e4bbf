"""DiscountArchive: differential tests against ribs.archives.DiscountArchive, with
one deterministic stand-in discount model shared by both libraries."""

import numpy as np
import pytest
import ribs.archives

import ribsax.archives


class StubManager:
    """Discount = sum of the measures; training records its inputs."""

    def __init__(self):
        self.calls = []

    def inference(self, measures):
        return np.sum(np.asarray(measures), axis=1).astype(np.float32)

    def training_loop(self, measures, targets):
        self.calls.append((np.array(measures), np.array(targets)))
        return [0.5, 0.25]


def make(lib, kind, **kwargs):
    if kind == "grid":
        result = lib.archives.GridArchive(solution_dim=3, dims=[4, 5], ranges=[(-1, 1), (0, 2)])
    else:
        centroids = np.random.default_rng(0).uniform([-1, 0], [1, 2], size=(15, 2))
        result = lib.archives.CVTArchive(
            solution_dim=3, centroids=centroids, ranges=[(-1, 1), (0, 2)]
        )
    rng = np.random.default_rng(1)
    result.add(
        rng.normal(size=(6, 3)), rng.normal(size=6), rng.uniform([-1, 0], [1, 2], size=(6, 2))
    )
    manager = StubManager()
    archive = lib.archives.DiscountArchive(
        solution_dim=3,
        measure_dim=2,
        learning_rate=0.1,
        threshold_min=0.0,
        discount_model_manager=manager,
        result_archive=result,
        init_train_points=7,
        empty_points=4,
        seed=3,
        **kwargs,
    )
    return archive, manager


@pytest.mark.parametrize("kind", ["grid", "cvt"])
def test_add_and_training_data_match_ribs(kind):
    (ours, our_manager), (theirs, their_manager) = (make(ribsax, kind), make(ribs, kind))
    for archive in (ours, theirs):
        init = archive.init_discount_model()
        assert init["epochs"] == 2 and init["solution_measures"].shape == (0, 2)
    rng = np.random.default_rng(2)
    data = (rng.normal(size=(8, 3)), rng.normal(size=8), rng.uniform([-1, 0], [1, 2], size=(8, 2)))
    info, ref = ours.add(*data), theirs.add(*data)
    for name in ("status", "value", "discount"):
        np.testing.assert_allclose(info[name], ref[name], rtol=1e-6)
        assert info[name].dtype == ref[name].dtype
    out, ref_out = ours.train_discount_model(), theirs.train_discount_model()
    for name in ("solution_measures", "solution_targets", "empty_measures", "losses"):
        np.testing.assert_allclose(out[name], ref_out[name], rtol=1e-6)
    assert len(our_manager.calls) == len(their_manager.calls) == 2
    for (m, t), (rm, rt) in zip(our_manager.calls, their_manager.calls):
        np.testing.assert_allclose(m, rm, rtol=1e-6)
        np.testing.assert_allclose(t, rt, rtol=1e-6)


def test_properties_and_errors_match_ribs():
    (ours, _), (theirs, _) = make(ribsax, "grid"), make(ribs, "grid")
    assert ours.empty is theirs.empty is False
    assert ours.dtypes.keys() == theirs.dtypes.keys()
    for name in ("learning_rate", "threshold_min", "init_train_points", "empty_points"):
        assert getattr(ours, name) == getattr(theirs, name)
        assert np.asarray(getattr(ours, name)).dtype == np.asarray(getattr(theirs, name)).dtype
    for lib in (ribsax, ribs):
        result = lib.archives.GridArchive(solution_dim=3, dims=[2, 2], ranges=[(0, 1), (0, 1)])
        base = {
            "solution_dim": 3,
            "measure_dim": 2,
            "learning_rate": 0.1,
            "discount_model_manager": StubManager(),
            "init_train_points": 1,
            "empty_points": 1,
        }
        with pytest.raises(ValueError, match="threshold_min must be a finite value"):
            lib.archives.DiscountArchive(threshold_min=-np.inf, result_archive=result, **base)
        with pytest.raises(ValueError, match="must be a GridArchive or CVTArchive"):
            lib.archives.DiscountArchive(threshold_min=0.0, result_archive=object(), **base)
