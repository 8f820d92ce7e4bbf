"""Provides GradientOptBase and the shell shared by the kernel-backed optimizers.

Like the evolution strategies, each gradient optimizer is a functional core (a
hashable config, a state ``NamedTuple`` and pure ``init(config, theta0)`` /
``step(config, state, gradient)`` functions gathered in :class:`GradOptKernels`) plus
a pyribs-compatible object shell. The optimizers perform gradient **ascent**.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import default_float_dtype, to_device
from ribsax.emitters.opt._kernel_shell import config_property, state_property

__all__ = ["GradientOptBase", "GradOptKernels"]


class GradOptKernels(NamedTuple):
    """The pure functions of one gradient optimizer.

    Attributes:
        init: ``init(config, theta0) -> state``.
        step: ``step(config, state, gradient) -> state`` (ascent).
    """

    init: Callable
    step: Callable


class GradientOptBase(ABC):
    r"""Base class for gradient-based optimizers (gradient **ascent**).

    The optimizer keeps a solution point :math:`\theta` (:attr:`theta`), moves it with
    :meth:`step` given a gradient, and can be moved elsewhere with :meth:`reset`.
    Constructors may take more arguments, but always accept ``theta0`` and ``lr``.

    Args:
        theta0: Initial solution. 1D array.
        lr: Learning rate for the update.
    """

    def __init__(self, theta0, lr) -> None:
        pass

    @property
    @abstractmethod
    def theta(self):
        """The current solution point."""

    @abstractmethod
    def reset(self, theta0) -> None:
        """Resets the solution point to a new value.

        Args:
            theta0: The new solution point. 1D array.
        """

    @abstractmethod
    def step(self, gradient) -> None:
        """Ascends the solution based on the given gradient.

        Args:
            gradient: The (estimated) gradient at the current point. 1D array.
        """


def as_float_array(theta0):
    """``theta0`` as a device array, keeping float dtypes and giving integer input
    the default float dtype (an integer point could not move)."""
    theta0 = np.asarray(theta0)
    if not np.issubdtype(theta0.dtype, np.floating):
        theta0 = theta0.astype(default_float_dtype())
    return to_device(theta0)


class KernelGradientOpt(GradientOptBase):
    """Shared shell of the kernel-backed optimizers (not public API).

    Subclasses set ``kernels`` and ``self._config`` before calling :meth:`reset`.
    """

    kernels: GradOptKernels = None

    config = config_property()
    state = state_property("The state pytree (settable).")

    @property
    def theta(self):
        """The current solution point (NumPy array)."""
        return np.asarray(self._state.theta)

    def reset(self, theta0) -> None:
        self._state = _init_jit(self.kernels, self._config, as_float_array(theta0))

    def step(self, gradient) -> None:
        gradient = jnp.asarray(gradient, dtype=self._state.theta.dtype)
        self._state = _step_jit(self.kernels, self._config, self._state, gradient)


@partial(jax.jit, static_argnums=(0, 1))
def _init_jit(kernels, config, theta0):
    return kernels.init(config, theta0)


@partial(jax.jit, static_argnums=(0, 1))
def _step_jit(kernels, config, state, gradient):
    return kernels.step(config, state, gradient)
