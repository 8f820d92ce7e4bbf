"""Tests for ribsax._tracing: pass-through outputs and in-place member loops."""

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._tracing import forwarded_leaves, update_members


def _fn(state, extra):
    return {
        "kept": state["a"],
        "computed": state["b"] + 1.0,
        "extra": extra,
        "constant": jnp.zeros(3),
    }


def test_forwarded_leaves_names_inputs_returned_unchanged():
    state = {"a": jnp.ones(2), "b": jnp.ones(4)}
    forwarded, out_shape = forwarded_leaves(_fn, state, jnp.arange(5.0))
    # Output leaves in key order: computed, constant, extra, kept. Input leaves:
    # state["a"] (0), state["b"] (1), extra (2).
    assert forwarded == [None, None, 2, 0]
    assert out_shape["computed"].shape == (4,)
    assert out_shape["constant"].shape == (3,)
    assert out_shape["kept"].dtype == jnp.ones(2).dtype


def test_forwarded_leaves_on_tracers_and_shape_structs():
    structs = (
        {
            "a": jax.ShapeDtypeStruct((2,), jnp.float32),
            "b": jax.ShapeDtypeStruct((4,), jnp.float32),
        },
        jax.ShapeDtypeStruct((5,), jnp.float32),
    )
    assert forwarded_leaves(_fn, *structs)[0] == [None, None, 2, 0]

    seen = []

    @jax.jit
    def traced(a, b):
        seen.append(forwarded_leaves(lambda x, y: (y, x * 2, x), a, b)[0])
        return a

    np.testing.assert_array_equal(traced(jnp.ones(3), jnp.zeros(3)), np.ones(3))
    assert seen == [[1, None, 0]]


def test_update_members_visits_the_listed_members_only():
    stacked = {"count": jnp.arange(4.0), "fixed": jnp.arange(8.0).reshape(4, 2)}

    def bump(member):
        return {**member, "count": member["count"] + 10.0}, member["fixed"] * 2.0

    mask = jnp.array([True, False, True, False])
    new, outs = jax.jit(lambda s: update_members(bump, mask, s, keep_axis=False))(stacked)
    np.testing.assert_array_equal(new["count"], [10.0, 1.0, 12.0, 3.0])
    np.testing.assert_array_equal(new["fixed"], stacked["fixed"])
    np.testing.assert_array_equal(outs, [[0.0, 2.0], [0.0, 0.0], [8.0, 10.0], [0.0, 0.0]])


def test_update_members_with_member_axis_and_inputs():
    stacked = jnp.zeros((3, 2))

    def add(member, inputs):
        assert member.shape == (1, 2) and inputs.shape == (1,)
        return member + inputs[:, None], inputs * 3.0

    new, outs = update_members(
        add, jnp.ones(3, bool), stacked, jnp.array([1.0, 2.0, 3.0]), keep_axis=True
    )
    np.testing.assert_array_equal(new, [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(outs, [3.0, 6.0, 9.0])
