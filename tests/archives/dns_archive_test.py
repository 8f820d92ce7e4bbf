"""DNSArchive: differential tests against ribs.archives.DNSArchive."""

import ast

import numpy as np
import pytest
from ribs.archives import DNSArchive as RibsDNSArchive

from ribsax.archives import DNSArchive

STATS_FIELDS = ("num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean")


def both(**kwargs):
    kwargs = {"solution_dim": 3, "measure_dim": 2, "capacity": 20, "k_neighbors": 3, **kwargs}
    return DNSArchive(**kwargs), RibsDNSArchive(**kwargs)


def batch(rng, n, solution_dim=3):
    # Distinct objectives and measures: no ties in the scores.
    return (
        rng.normal(size=(n, solution_dim)),
        rng.permutation(n) + rng.uniform(size=n),
        rng.uniform(0, 3, size=(n, 2)),
    )


def assert_same(ours, theirs, info=None, ref_info=None):
    if info is not None:
        assert info.keys() == ref_info.keys()
        np.testing.assert_array_equal(info["status"], ref_info["status"])
        assert info["status"].dtype == ref_info["status"].dtype
        np.testing.assert_allclose(info["dns"], ref_info["dns"], rtol=1e-12)
        assert info["dns"].dtype == ref_info["dns"].dtype
    assert len(ours) == len(theirs) and ours.capacity == theirs.capacity
    assert ours.cells == theirs.cells
    data, ref = ours.data(), theirs.data()
    for name, expected in ref.items():
        np.testing.assert_array_equal(data[name], expected, err_msg=name)
    for name in STATS_FIELDS:
        got, expected = getattr(ours.stats, name), getattr(theirs.stats, name)
        if expected is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=name)
            assert np.asarray(got).dtype == np.asarray(expected).dtype, name


@pytest.mark.parametrize("k_neighbors", [1, 3, 50])
def test_add_sequence_matches_ribs(k_neighbors):
    """Scores, statuses, survivors (and their order), stats: from filling up to a
    full population over several batches."""
    ours, theirs = both(k_neighbors=k_neighbors)
    rng = np.random.default_rng(k_neighbors)
    for size in (8, 9, 15, 15):
        data = batch(rng, size)
        assert_same(ours, theirs, ours.add(*data), theirs.add(*data))


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_compute_dns_matches_ribs(n):
    ours, theirs = both()
    rng = np.random.default_rng(n)
    _, objective, measures = batch(rng, n)
    objective[: n // 2] = 1.0  # Ties count as fitter.
    got, expected = ours.compute_dns(measures, objective), theirs.compute_dns(measures, objective)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got.dtype == expected.dtype


def test_single_objective_none_and_float32():
    ours, theirs = both(dtype=np.float32)
    rng = np.random.default_rng(3)
    for solution, objective, measures in zip(*batch(rng, 6)):
        assert_same(
            ours,
            theirs,
            ours.add_single(solution, objective, measures),
            theirs.add_single(solution, objective, measures),
        )
    solution, _, measures = batch(rng, 4)
    info, ref = ours.add(solution, None, measures), theirs.add(solution, None, measures)
    np.testing.assert_array_equal(info["status"], ref["status"])


def test_index_of_retrieve_and_best_elite():
    ours, theirs = both()
    rng = np.random.default_rng(4)
    data = batch(rng, 12)
    ours.add(*data)
    theirs.add(*data)
    query = rng.uniform(-1, 4, size=(6, 2))
    np.testing.assert_array_equal(ours.index_of(query), theirs.index_of(query))
    _, found = ours.retrieve(query)
    _, ref = theirs.retrieve(query)
    np.testing.assert_array_equal(found["objective"], ref["objective"])
    # Deliberate difference: pyribs 0.12 never sets best_elite.
    assert theirs.best_elite is None
    best = ours.best_elite
    assert best["objective"] == np.max(ours.data("objective"))
    assert ours.data("index")[np.argmax(ours.data("objective"))] == best["index"]


def test_errors_match_ribs():
    def message(cls, **kwargs):
        with pytest.raises(ValueError) as err:
            cls(**{"solution_dim": 3, "measure_dim": 2, "capacity": 5, "k_neighbors": 2, **kwargs})
        text = str(err.value)
        if text.endswith("}"):
            prefix, names = text.split(": ", 1)
            return prefix, ast.literal_eval(names)
        return text

    for kwargs in [{"capacity": 0}, {"extra_fields": {"index": ((), np.int32)}}]:
        assert message(DNSArchive, **kwargs) == message(RibsDNSArchive, **kwargs)
    ours, theirs = both(extra_fields={"tag": ((), np.int32)})
    for archive in (ours, theirs):
        with pytest.raises(RuntimeError, match="`DNSArchive.index_of`"):
            archive.index_of([[0.0, 0.0]])
        archive.add(np.zeros((2, 3)), [0.0, 1.0], [[0.0, 0.0], [1.0, 1.0]], tag=[1, 2])
    errors = []
    for archive in (ours, theirs):
        with pytest.raises(ValueError) as err:
            archive.add(np.zeros((1, 3)), [0.0], [[0.5, 0.5]])
        errors.append(str(err.value))
    assert errors[0] == errors[1]


def test_clear():
    ours, theirs = both()
    data = batch(np.random.default_rng(5), 10)
    for archive in (ours, theirs):
        archive.add(*data)
        archive.clear()
    assert_same(ours, theirs)
    assert ours.best_elite is None
