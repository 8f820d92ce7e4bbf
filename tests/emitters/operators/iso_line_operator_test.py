"""Tests for IsoLineOperator."""

import numpy as np
import ribs.emitters.operators as ribs_ops

from ribsax.emitters.operators import IsoLineOperator, _get_op


def test_parent_type_and_name():
    assert (
        IsoLineOperator(0.1, 0.2).parent_type == ribs_ops.IsoLineOperator(0.1, 0.2).parent_type == 2
    )
    assert _get_op("isoline") is IsoLineOperator


def test_shape_matches_ribs():
    parents = np.random.default_rng(0).normal(size=(2, 6, 4))
    ours = IsoLineOperator(0.1, 0.2, seed=0).ask(parents)
    theirs = ribs_ops.IsoLineOperator(0.1, 0.2, seed=0).ask(parents)
    assert ours.shape == theirs.shape == (6, 4)
    assert ours.dtype == theirs.dtype


def test_zero_iso_lies_on_line():
    rng = np.random.default_rng(1)
    parents = rng.normal(size=(2, 50, 3))
    out = IsoLineOperator(0.0, 1.0, seed=2).ask(parents)
    direction = parents[1] - parents[0]
    t = np.sum((out - parents[0]) * direction, axis=1) / np.sum(direction**2, axis=1)
    np.testing.assert_allclose(out, parents[0] + t[:, None] * direction, atol=1e-12)
    assert np.std(t) > 0.5


def test_zero_sigmas_return_first_parents():
    parents = np.random.default_rng(2).normal(size=(2, 5, 3))
    np.testing.assert_array_equal(IsoLineOperator(0.0, 0.0).ask(parents), parents[0])


def test_identical_parents_only_iso_noise():
    parents = np.zeros((2, 4000, 2))
    out = IsoLineOperator(0.3, 5.0, seed=4).ask(parents)
    assert abs(out.std() - 0.3) < 0.02


def test_multidimensional():
    assert IsoLineOperator(0.1, 0.1).ask(np.zeros((2, 3, 2, 2))).shape == (3, 2, 2)
