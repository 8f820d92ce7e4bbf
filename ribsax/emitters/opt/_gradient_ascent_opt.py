"""Plain gradient ascent as a pure JAX kernel, with pyribs' shell."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ribsax.emitters.opt._gradient_opt_base import GradOptKernels, KernelGradientOpt

__all__ = [
    "GradientAscentOpt",
    "GradientAscentConfig",
    "GradientAscentState",
    "GRADIENT_ASCENT_KERNELS",
]


@dataclasses.dataclass(frozen=True)
class GradientAscentConfig:
    """Static learning rate (hashable)."""

    lr: float


class GradientAscentState(NamedTuple):
    """Gradient-ascent state: the point ``theta``."""

    theta: jax.Array


def init(config: GradientAscentConfig, theta0) -> GradientAscentState:
    """Starts at ``theta0``."""
    del config
    return GradientAscentState(theta=jnp.asarray(theta0))


def step(config: GradientAscentConfig, state: GradientAscentState, gradient) -> GradientAscentState:
    """``theta += lr * gradient``."""
    dtype = state.theta.dtype
    theta = state.theta + config.lr * jnp.asarray(gradient, dtype)
    return GradientAscentState(theta=theta.astype(dtype))


#: The functional core of gradient ascent.
GRADIENT_ASCENT_KERNELS = GradOptKernels(init=init, step=step)


class GradientAscentOpt(KernelGradientOpt):
    """Vanilla gradient ascent: ``theta += lr * gradient``.

    Args:
        theta0: Initial solution. 1D array.
        lr: Learning rate.
    """

    kernels = GRADIENT_ASCENT_KERNELS

    def __init__(self, theta0, lr) -> None:
        self._lr = lr
        self._config = GradientAscentConfig(float(lr))
        self._state = None
        self.reset(theta0)
