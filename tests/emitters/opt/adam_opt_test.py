"""Tests for AdamOpt and GradientAscentOpt (differential against pyribs)."""

import numpy as np
import pytest
import ribs.emitters.opt as ribs_opt

from ribsax.emitters.opt import AdamOpt, GradientAscentOpt, GradientOptBase


@pytest.mark.parametrize(
    "kwargs", [{}, dict(lr=0.1, beta1=0.8, beta2=0.99, epsilon=1e-6, l2_coeff=0.05)]
)
def test_adam_matches_ribs(kwargs):
    rng = np.random.default_rng(0)
    theta0 = rng.normal(size=6)
    opt = AdamOpt(theta0, **kwargs)
    ref = ribs_opt.AdamOpt(theta0.copy(), **kwargs)
    for _ in range(15):
        gradient = rng.normal(size=6)
        opt.step(gradient)
        ref.step(gradient)
        np.testing.assert_allclose(opt.theta, ref.theta, rtol=1e-12, atol=1e-14)
    opt.reset(np.zeros(6))
    ref.reset(np.zeros(6))
    gradient = rng.normal(size=6)
    opt.step(gradient)
    ref.step(gradient)
    np.testing.assert_allclose(opt.theta, ref.theta, rtol=1e-12)
    assert int(opt.state.t) == 1


def test_adam_private_attributes():
    opt = AdamOpt(np.zeros(3), lr=0.5, beta1=0.1, beta2=0.2, epsilon=0.3, l2_coeff=0.4)
    assert (opt._lr, opt._beta1, opt._beta2, opt._epsilon, opt._l2_coeff) == (
        0.5,
        0.1,
        0.2,
        0.3,
        0.4,
    )
    assert isinstance(opt, GradientOptBase)


def test_adam_ascends():
    opt = AdamOpt(np.zeros(2), lr=0.1)
    opt.step(np.array([1.0, -1.0]))
    assert opt.theta[0] > 0 > opt.theta[1]


def test_gradient_ascent_matches_ribs():
    rng = np.random.default_rng(1)
    theta0 = rng.normal(size=4)
    opt = GradientAscentOpt(theta0, lr=0.3)
    ref = ribs_opt.GradientAscentOpt(theta0.copy(), lr=0.3)
    for _ in range(5):
        gradient = rng.normal(size=4)
        opt.step(gradient)
        ref.step(gradient)
    np.testing.assert_allclose(opt.theta, ref.theta, rtol=1e-14)
    opt.reset([1, 2])
    assert opt.theta.dtype.kind == "f"
    np.testing.assert_array_equal(opt.theta, [1.0, 2.0])
    opt.step([1.0, 1.0])
    np.testing.assert_allclose(opt.theta, [1.3, 2.3])
    assert opt._lr == 0.3


def test_theta0_is_copied():
    theta0 = np.zeros(3)
    opt = GradientAscentOpt(theta0, lr=1.0)
    opt.step(np.ones(3))
    np.testing.assert_array_equal(theta0, 0)
