"""Smoke tests for benchmarks/sphere.py's CVT configurations."""

import numpy as np
import ribs

import ribsax
from tests.examples._benchmarks import load_benchmark

sphere_benchmark = load_benchmark("sphere")


def test_cvt_configuration_builds_both_libraries_on_the_same_centroids():
    kwargs = {
        "dim": 4,
        "grid_dims": (6, 5),
        "es": None,
        "es_kwargs": None,
        "seed": 3,
        "dtype": np.float64,
    }
    ours = sphere_benchmark.build_scheduler(ribsax, "line_cvt_map_elites", **kwargs)
    theirs = sphere_benchmark.build_scheduler(ribs, "line_cvt_map_elites", **kwargs)
    assert ours.archive.cells == theirs.archive.cells == 30
    np.testing.assert_array_equal(
        np.asarray(ours.archive.centroids), np.asarray(theirs.archive.centroids)
    )
    # The centroids are pyribs' k-means for this seed, not a fixed placeholder.
    reference = ribs.archives.CVTArchive(
        solution_dim=1, centroids=30, ranges=[(-10.24, 10.24)] * 2, seed=3
    )
    np.testing.assert_allclose(np.asarray(ours.archive.centroids), reference.centroids)
    assert type(ours.emitters[0]).__name__ == "IsoLineEmitter"


def test_cvt_configurations_are_accepted():
    cases = sphere_benchmark.expand_configs(["cvt_map_elites", "line_cvt_map_elites"], None)
    assert [label for label, _ in cases] == ["cvt_map_elites", "line_cvt_map_elites"]
    assert all(settings["grid_dims"] == (100, 100) for _, settings in cases)
