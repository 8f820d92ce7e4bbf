"""Tests for GaussianOperator."""

import numpy as np
import pytest
import ribs.emitters.operators as ribs_ops

from ribsax.emitters.operators import GaussianOperator, OperatorBase, _get_op


def test_parent_type_and_base():
    op = GaussianOperator(sigma=0.1, seed=0)
    assert op.parent_type == ribs_ops.GaussianOperator(0.1).parent_type == 1
    assert isinstance(op, OperatorBase)


def test_ask_shape_dtype_and_scale():
    parents = np.ones((2000, 5), dtype=np.float32)
    out = GaussianOperator(sigma=0.5, seed=0).ask(parents)
    assert out.shape == parents.shape and out.dtype == np.float32
    assert abs((out - 1).std() - 0.5) < 0.03


def test_zero_sigma_returns_parents_and_per_dim_sigma():
    parents = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(GaussianOperator(0.0).ask(parents), parents)
    out = GaussianOperator([0.0, 1.0, 0.0], seed=1).ask(parents)
    np.testing.assert_array_equal(out[:, [0, 2]], parents[:, [0, 2]])
    assert np.all(out[:, 1] != parents[:, 1])


def test_seeded_and_stream_advances():
    parents = np.zeros((3, 4))
    first, second = GaussianOperator(1.0, seed=3), GaussianOperator(1.0, seed=3)
    a = first.ask(parents)
    np.testing.assert_array_equal(a, second.ask(parents))
    assert not np.array_equal(a, first.ask(parents))


def test_multidimensional_parents():
    assert GaussianOperator(0.1).ask(np.zeros((3, 2, 2))).shape == (3, 2, 2)


@pytest.mark.parametrize(
    "name,msg",
    [
        ("foo", "`foo` is not the full or abbreviated name of a valid operator"),
        (1, "`1` is not a string"),
    ],
)
def test_get_op_errors_match_ribs(name, msg):
    with pytest.raises(ValueError, match=msg):
        ribs_ops._get_op(name)
    with pytest.raises(ValueError, match=msg):
        _get_op(name)


def test_get_op_names():
    assert _get_op("gaussian") is GaussianOperator
