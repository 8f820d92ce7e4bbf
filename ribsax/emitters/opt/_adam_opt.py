"""Adam (gradient ascent) as a pure JAX kernel, with pyribs' ``AdamOpt`` shell.

Update (Kingma and Ba 2014, with L2 regularisation, not weight decay), for a
maximisation problem::

    g = -gradient + l2_coeff * theta
    t += 1
    a = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    m = beta1 m + (1 - beta1) g
    v = beta2 v + (1 - beta2) g^2
    theta -= a m / (sqrt(v) + epsilon)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ribsax.emitters.opt._gradient_opt_base import GradOptKernels, KernelGradientOpt

__all__ = ["AdamOpt", "AdamConfig", "AdamState", "ADAM_KERNELS"]


@dataclasses.dataclass(frozen=True)
class AdamConfig:
    """Static hyperparameters of Adam (hashable)."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    l2_coeff: float = 0.0


class AdamState(NamedTuple):
    """Adam state: point ``theta``, moments ``m`` and ``v``, int32 step count ``t``."""

    theta: jax.Array
    m: jax.Array
    v: jax.Array
    t: jax.Array


def init(config: AdamConfig, theta0) -> AdamState:
    """Starts at ``theta0`` with zero moments."""
    del config
    theta0 = jnp.asarray(theta0)
    return AdamState(
        theta=theta0, m=jnp.zeros_like(theta0), v=jnp.zeros_like(theta0), t=jnp.zeros((), jnp.int32)
    )


def step(config: AdamConfig, state: AdamState, gradient) -> AdamState:
    """One Adam ascent step (see module docstring)."""
    dtype = state.theta.dtype
    grad = -jnp.asarray(gradient, dtype) + config.l2_coeff * state.theta
    t = state.t + 1
    tf = t.astype(jnp.result_type(float))
    a = config.lr * jnp.sqrt(1 - config.beta2**tf) / (1 - config.beta1**tf)
    m = config.beta1 * state.m + (1 - config.beta1) * grad
    v = config.beta2 * state.v + (1 - config.beta2) * (grad * grad)
    theta = state.theta + (-a * m / (jnp.sqrt(v) + config.epsilon))
    return AdamState(theta=theta.astype(dtype), m=m.astype(dtype), v=v.astype(dtype), t=t)


#: The functional core of Adam.
ADAM_KERNELS = GradOptKernels(init=init, step=step)


class AdamOpt(KernelGradientOpt):
    """Adam optimizer (ascent).

    See `Kingma and Ba 2014 <https://arxiv.org/pdf/1412.6980.pdf>`_ for the
    hyperparameters. The functional core is ``AdamOpt.kernels`` with
    :class:`AdamConfig` / :class:`AdamState`.

    Args:
        theta0: Initial solution. 1D array.
        lr: Learning rate.
        beta1: Decay rate of the first moment.
        beta2: Decay rate of the second moment.
        epsilon: Numerical-stability constant.
        l2_coeff: L2 regularisation coefficient (added to the negated gradient; this
            is not decoupled weight decay).
    """

    kernels = ADAM_KERNELS

    def __init__(self, theta0, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, l2_coeff=0.0):
        self._lr = lr
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._l2_coeff = l2_coeff
        self._config = AdamConfig(
            float(lr), float(beta1), float(beta2), float(epsilon), float(l2_coeff)
        )
        self._state = None
        self.reset(theta0)
