"""Tests for the CMA-MAE threshold updates of GridArchive (batch and single rules).

Batch rule (Fontaine 2023, appendix): the k insertable solutions of a cell move its
threshold t to ``(1 - lr)^k t + mean(f) (1 - (1 - lr)^k)``, which equals the closed form
``lr * sum(f) * geom(1 - lr, k) / k + t (1 - lr)^k`` with
``geom(r, k) = 1 + r + ... + r^(k-1)``.
Single rule: ``t <- t (1 - lr) + f lr``.
"""

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import GridArchive

BATCH = 10  # Fixed batch size: one compile of the add kernel per dtype.
CELL_A = [0.5]  # Measures of the cell under test.
CELL_B = [1.5]  # Filler cell.


def _archive(learning_rate, threshold_min, dtype=np.float64, cls=GridArchive):
    return cls(
        solution_dim=1,
        dims=[2],
        ranges=[(0, 2)],
        learning_rate=learning_rate,
        threshold_min=threshold_min,
        dtype=dtype,
    )


def _padded(objectives, threshold_min):
    """k objectives for cell A padded with non-insertable fillers in cell B."""
    objectives = np.asarray(objectives, dtype=np.float64)
    k = len(objectives)
    filler = np.full(BATCH - k, threshold_min - 1.0)
    objective = np.concatenate([objectives, filler])
    measures = np.array([CELL_A] * k + [CELL_B] * (BATCH - k))
    solution = np.arange(BATCH, dtype=np.float64)[:, None]
    return solution, objective, measures


def _threshold(archive, measures=CELL_A):
    occupied, elite = archive.retrieve_single(measures)
    assert occupied
    return elite["threshold"]


def _geom(ratio, k):
    return sum(ratio**i for i in range(k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_worked_example(dtype):
    archive = GridArchive(
        solution_dim=1,
        dims=[2],
        ranges=[(0, 2)],
        learning_rate=0.1,
        threshold_min=-1.0,
        dtype=dtype,
    )
    result = archive.add(
        np.arange(6.0)[:, None], [0.0, 1.0, 2.0, 10.0, 100.0, -10.0], [CELL_A] * 3 + [CELL_B] * 3
    )
    np.testing.assert_array_equal(result["status"], [2, 2, 2, 2, 2, 0])
    np.testing.assert_allclose(result["value"], [1.0, 2.0, 3.0, 11.0, 101.0, -9.0])
    assert result["value"].dtype == dtype
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(_threshold(archive, CELL_A), -0.458, rtol=rtol)
    np.testing.assert_allclose(_threshold(archive, CELL_B), 9.64, rtol=rtol)
    assert _threshold(archive).dtype == dtype
    # The best solution of each cell is stored.
    np.testing.assert_array_equal(archive.data("objective"), [2.0, 100.0])
    np.testing.assert_array_equal(archive.data("solution")[:, 0], [2.0, 4.0])


@pytest.mark.parametrize("learning_rate", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("k", [1, 2, 5, 10])
def test_closed_form_for_k_solutions(learning_rate, k):
    threshold_min = -2.0
    rng = np.random.default_rng(k)
    objectives = rng.uniform(0, 10, size=k)
    archive = _archive(learning_rate, threshold_min)
    result = archive.add(*_padded(objectives, threshold_min))
    np.testing.assert_array_equal(result["status"][:k], 2)
    np.testing.assert_array_equal(result["status"][k:], 0)
    np.testing.assert_allclose(result["value"][:k], objectives - threshold_min)
    ratio = 1 - learning_rate
    expected = learning_rate * objectives.sum() * _geom(ratio, k) / k + threshold_min * ratio**k
    np.testing.assert_allclose(_threshold(archive), expected, rtol=1e-12)
    # Only the best is stored, but every insertable solution counted.
    _, elite = archive.retrieve_single(CELL_A)
    assert elite["objective"] == objectives.max()

    # A second batch starts from the updated threshold.
    t = _threshold(archive)
    objectives2 = t + rng.uniform(0.1, 5, size=k)
    result = archive.add(*_padded(objectives2, threshold_min))
    np.testing.assert_array_equal(result["status"][:k], 1)
    np.testing.assert_allclose(result["value"][:k], objectives2 - t)
    expected = learning_rate * objectives2.sum() * _geom(ratio, k) / k + t * ratio**k
    np.testing.assert_allclose(_threshold(archive), expected, rtol=1e-12)


def test_only_insertable_solutions_count():
    archive = _archive(0.5, 0.0)
    archive.add(*_padded([4.0], 0.0))  # Threshold: 0.5 * 0 + 0.5 * 4 = 2.
    assert _threshold(archive) == 2.0
    result = archive.add(*_padded([1.0, 3.0, 2.0, 5.0], 0.0))
    # 1 and 2 do not exceed the threshold (2 is not > 2), so k = 2 with mean 4.
    np.testing.assert_array_equal(result["status"][:4], [0, 1, 0, 1])
    np.testing.assert_array_equal(result["value"][:4], [-1.0, 1.0, 0.0, 3.0])
    assert _threshold(archive) == pytest.approx(0.25 * 2.0 + 4.0 * 0.75)
    _, elite = archive.retrieve_single(CELL_A)
    assert elite["objective"] == 5.0


def test_non_elitist_replacement():
    """An elite can be replaced by a worse solution that beats the threshold."""
    archive = _archive(0.1, 0.0)
    archive.add(*_padded([10.0], 0.0))  # Threshold 1.0, elite 10.
    result = archive.add(*_padded([2.0], 0.0))
    assert result["status"][0] == 1 and result["value"][0] == pytest.approx(1.0)
    _, elite = archive.retrieve_single(CELL_A)
    assert elite["objective"] == 2.0
    assert elite["threshold"] == pytest.approx(0.9 * 1.0 + 0.1 * 2.0)
    assert archive.stats.obj_max == 10.0
    assert archive.stats.qd_score == pytest.approx(2.0)


def test_learning_rate_one_with_threshold_min_uses_mean():
    """With lr=1 and a finite threshold_min the batch rule gives the mean."""
    archive = _archive(1.0, 0.0)
    archive.add(*_padded([1.0, 5.0, 3.0], 0.0))
    assert _threshold(archive) == pytest.approx(3.0)
    theirs = _archive(1.0, 0.0, cls=ribs.archives.GridArchive)
    theirs.add(*_padded([1.0, 5.0, 3.0], 0.0))
    assert _threshold(theirs) == pytest.approx(3.0)


def test_learning_rate_zero_never_moves_threshold():
    archive = _archive(0.0, 1.0)
    archive.add(*_padded([5.0, 9.0], 1.0))
    assert _threshold(archive) == 1.0
    result = archive.add(*_padded([2.0], 1.0))
    assert result["status"][0] == 1
    assert _threshold(archive) == 1.0
    _, elite = archive.retrieve_single(CELL_A)
    assert elite["objective"] == 2.0


def test_neg_inf_threshold_min_threshold_is_best_objective():
    archive = GridArchive(solution_dim=1, dims=[2], ranges=[(0, 2)])
    archive.add(*_padded([1.0, 7.0, 3.0], -50.0))
    assert _threshold(archive) == 7.0
    _, elite = archive.retrieve_single(CELL_B)
    assert elite["threshold"] == -51.0


def test_single_rule():
    lr, threshold_min = 0.2, -1.0
    archive = _archive(lr, threshold_min)
    t = threshold_min
    for f in [3.0, 0.0, 5.0, 5.0]:
        result = archive.add_single([f], f, CELL_A)
        if f > t:
            assert result["status"] in (1, 2)
            t_new = t * (1 - lr) + f * lr
        else:
            assert result["status"] == 0
            t_new = t
        assert result["value"] == pytest.approx(f - t)
        t = t_new
        assert _threshold(archive) == pytest.approx(t)


def test_single_rule_default_learning_rate_uses_zero_base():
    archive = GridArchive(solution_dim=1, dims=[2], ranges=[(0, 2)])
    result = archive.add_single([0.0], -3.0, CELL_A)
    # New cell: the value is relative to 0 and the threshold is the objective.
    assert result["status"] == 2 and result["value"] == -3.0
    assert _threshold(archive) == -3.0


@pytest.mark.parametrize("k", [1, 3, 6])
def test_single_and_batch_rules_agree_for_equal_objectives(k):
    """k single updates with the same f equal one batch of k copies of f."""
    lr, threshold_min, f = 0.3, 0.5, 4.0
    single = _archive(lr, threshold_min)
    for _ in range(k):
        single.add_single([f], f, CELL_A)
    batch = _archive(lr, threshold_min)
    batch.add(*_padded([f] * k, threshold_min))
    assert _threshold(single) == pytest.approx(_threshold(batch), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "learning_rate, threshold_min", [(0.1, -1.0), (0.5, 0.0), (1.0, -np.inf), (0.01, 2.0)]
)
def test_threshold_sequence_matches_pyribs(dtype, learning_rate, threshold_min):
    ours = _archive(learning_rate, threshold_min, dtype)
    theirs = _archive(learning_rate, threshold_min, dtype, cls=ribs.archives.GridArchive)
    rng = np.random.default_rng(11)
    base = 0.0 if threshold_min == -np.inf else threshold_min
    for _ in range(6):
        objective = base + rng.uniform(-1, 6, size=BATCH)
        measures = rng.uniform(0, 2, size=(BATCH, 1))
        solution = rng.normal(size=(BATCH, 1))
        a = ours.add(solution, objective, measures)
        b = theirs.add(solution, objective, measures)
        np.testing.assert_array_equal(a["status"], b["status"])
        np.testing.assert_allclose(
            a["value"], b["value"], rtol=1e-5 if dtype == np.float32 else 1e-12
        )
        np.testing.assert_allclose(
            ours.data("threshold"),
            theirs.data("threshold"),
            rtol=1e-5 if dtype == np.float32 else 1e-12,
        )
        np.testing.assert_array_equal(ours.data("index"), theirs.data("index"))
        np.testing.assert_array_equal(ours.data("objective"), theirs.data("objective"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("learning_rate", [0.1, 0.37])
def test_thresholds_bit_identical_to_pyribs(dtype, learning_rate):
    """Stored thresholds must equal pyribs' exactly, not just approximately.

    A solution is inserted only if its objective is strictly greater than the
    threshold, so a one-ulp difference flips statuses whenever an objective equals a
    threshold (e.g. an objective re-evaluated from a stored threshold). pyribs computes
    the batch rule with NumPy promotion (float32 ** int64 counts -> float64) and casts
    the result to the threshold dtype once, when storing it.
    """
    ours = _archive(learning_rate, -1.0, dtype)
    theirs = _archive(learning_rate, -1.0, dtype, cls=ribs.archives.GridArchive)
    objectives = [0.3, 1.7, 2.9, 0.1, 5.3]
    for archive in (ours, theirs):
        archive.add(*_padded(objectives, -1.0))
        archive.add(*_padded([7.7, 8.1], -1.0))
        archive.add_single([0.0], 9.3, CELL_A)
    np.testing.assert_array_equal(ours.data("threshold"), theirs.data("threshold"))
    # Consequence: an objective equal to pyribs' threshold is not inserted.
    t = theirs.data("threshold")[0]
    for archive in (ours, theirs):
        result = archive.add(*_padded([t], -1.0))
        assert result["status"][0] == 0
        assert result["value"][0] == 0
