"""The continuous normalizing flow behind ``DensityArchive(density_method="cnf")``.

A free-form continuous flow (FFJORD, Grathwohl et al. 2018) in JAX: an MLP vector
field ``f(t, x)`` carries a measure vector ``x`` at ``t = 0`` to ``z`` at ``t = 1``,
where ``z`` is scored under a standard normal, and the log density of ``x`` is
``log N(z) + int_0^1 tr(df/dx) dt`` with the exact trace (measure spaces are small).
The ODE is integrated by a fixed number of classical Runge-Kutta (RK4) steps, so that
fitting differentiates straight through the solver and every call has one compiled
shape. Fitting takes Adam steps (optax) on mini-batches drawn with replacement from
the archive's buffer; all of it runs as one jitted program per call.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from ribsax.archives._array_store import committed, resolve_device

__all__ = ["CNFDensityEstimator"]

#: ``cnf_kwargs`` keys and their defaults. ``hidden_features``, ``freqs`` and
#: ``exact`` have the meaning of zuko's ``CNF`` (pyribs' default network is two
#: hidden layers of 64); ``steps`` is the number of RK4 steps over ``t`` in [0, 1].
CNF_DEFAULTS = {
    "hidden_features": (64, 64),
    "freqs": 3,
    "activation": nn.elu,
    "steps": 10,
    "exact": True,
}


#: Adam whose learning rate is part of its state, so that flows with any learning
#: rate share one compiled fit.
_ADAM = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)


def _torch_like_bias_init(fan_in):
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) biases, as torch's ``nn.Linear``."""
    bound = 1.0 / math.sqrt(fan_in)

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


class _VectorField(nn.Module):
    """``f(t, x)``: an MLP over ``[cos(k pi t), sin(k pi t)]_{k=1..freqs}`` and ``x``."""

    features: int
    hidden: tuple
    freqs: int
    activation: callable

    @nn.compact
    def __call__(self, t, x):
        angles = jnp.arange(1, self.freqs + 1, dtype=x.dtype) * jnp.pi * t
        h = jnp.concatenate([jnp.cos(angles), jnp.sin(angles), x], axis=-1)
        widths = (*self.hidden, self.features)
        for layer, width in enumerate(widths):
            fan_in = h.shape[-1]
            h = nn.Dense(
                width,
                kernel_init=nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform"),
                bias_init=_torch_like_bias_init(fan_in),
            )(h)
            if layer < len(widths) - 1:
                h = self.activation(h)
        return h


def _parse_cnf_kwargs(cnf_kwargs):
    """The CNF options from ``cnf_kwargs`` merged into :data:`CNF_DEFAULTS`.

    Raises:
        ValueError: ``features`` is given (it is the measure dimension), or an option
            has a bad value.
        TypeError: An option that this flow does not have.
    """
    user = dict(cnf_kwargs or {})
    if "features" in user:
        raise ValueError(
            "`features` cannot be provided in cnf_kwargs; it is set automatically from measure_dim."
        )
    unknown = sorted(set(user) - set(CNF_DEFAULTS))
    if unknown:
        raise TypeError(
            f"cnf_kwargs has unsupported keys {unknown}; ribsax's flow takes "
            f"{sorted(CNF_DEFAULTS)} (it integrates with a fixed number of RK4 "
            "`steps` instead of zuko's adaptive solver tolerances `atol`/`rtol`)."
        )
    options = {**CNF_DEFAULTS, **user}
    hidden = options["hidden_features"]
    if isinstance(hidden, (int, np.integer)):
        hidden = (int(hidden),)
    hidden = tuple(int(h) for h in hidden)
    if any(h <= 0 for h in hidden):
        raise ValueError(
            f"cnf_kwargs['hidden_features'] must be positive widths, "
            f"got {options['hidden_features']!r}."
        )
    options["hidden_features"] = hidden
    for name in ("freqs", "steps"):
        if int(options[name]) != options[name] or options[name] < (name == "steps"):
            raise ValueError(
                f"cnf_kwargs[{name!r}] must be an integer >= "
                f"{int(name == 'steps')}, got {options[name]!r}."
            )
        options[name] = int(options[name])
    if options["exact"] is not True:
        raise ValueError(
            "cnf_kwargs['exact'] must be True: ribsax computes the exact "
            "trace of the flow's Jacobian (the stochastic estimate is "
            "not implemented)."
        )
    if not callable(options["activation"]):
        raise TypeError(
            f"cnf_kwargs['activation'] must be a callable on JAX arrays, "
            f"got {options['activation']!r}."
        )
    return options


class CNFDensityEstimator:
    """Fits and evaluates the flow of ``DensityArchive(density_method="cnf")``.

    The flow starts untrained; :meth:`log_density` returns zeros until :meth:`fit`
    has run once on a buffer of at least ``min_buffer_size`` rows.

    Args:
        measure_dim: Dimension of the measure space.
        lr: Adam learning rate.
        train_steps: Adam steps per :meth:`fit`.
        batch_size: Rows per step, drawn with replacement from the buffer (fewer
            when the buffer holds fewer rows).
        min_buffer_size: :meth:`fit` does nothing below this many rows.
        device: Where the flow lives (``"cpu"``, ``"gpu"``, ``"cuda"``, a
            ``jax.Device``, ...).
        seed: Seed of the initial weights and of the mini-batch draws.
        cnf_kwargs: Options of :data:`CNF_DEFAULTS`.
    """

    def __init__(
        self, *, measure_dim, lr, train_steps, batch_size, min_buffer_size, device, seed, cnf_kwargs
    ):
        options = _parse_cnf_kwargs(cnf_kwargs)
        for name, value, low in (
            ("cnf_train_steps", train_steps, 0),
            ("cnf_batch_size", batch_size, 1),
            ("cnf_min_buffer_size", min_buffer_size, 0),
        ):
            if int(value) != value or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
        if not lr > 0:
            raise ValueError(f"cnf_lr must be positive, got {lr!r}.")
        self._device = resolve_device(device)
        self._train_steps = int(train_steps)
        self._batch_size = int(batch_size)
        self._min_buffer_size = int(min_buffer_size)
        self._steps = options["steps"]
        self._field = _VectorField(
            features=int(measure_dim),
            hidden=options["hidden_features"],
            freqs=options["freqs"],
            activation=options["activation"],
        )
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        init_key, self._key = jax.random.split(jax.random.key(int(seed)))
        params = self._field.init(
            init_key, jnp.zeros((), jnp.float32), jnp.zeros((int(measure_dim),), jnp.float32)
        )
        self._params = committed(params, self._device)
        opt_state = _ADAM.init(params)
        opt_state.hyperparams["learning_rate"] = jnp.asarray(lr, jnp.float32)
        self._opt_state = committed(opt_state, self._device)
        self._key = committed(self._key, self._device)
        self._fitted = False

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` has trained the flow at least once."""
        return self._fitted

    def fit(self, buffer, n):
        """Takes ``train_steps`` Adam steps on the negative log likelihood of
        mini-batches drawn from the first ``n`` rows of ``buffer``; does nothing
        when ``n`` is below ``min_buffer_size`` (or 0).

        Args:
            buffer: ``(rows, measure_dim)`` array; rows from ``n`` on are ignored,
                so the archive's whole fixed-size buffer keeps one compiled shape.
            n: Number of valid rows.
        """
        if n < self._min_buffer_size or n == 0 or self._train_steps == 0:
            return
        data = committed(np.asarray(buffer, np.float32), self._device)
        self._params, self._opt_state, self._key = _fit(
            self._field,
            self._steps,
            self._train_steps,
            self._batch_size,
            self._params,
            self._opt_state,
            self._key,
            data,
            jnp.int32(n),
        )
        self._fitted = True

    def log_density(self, measures):
        """Log density of the flow at ``measures`` (float64 NumPy array); zeros
        before the first fit."""
        measures = np.asarray(measures, np.float32)
        if not self._fitted or len(measures) == 0:
            return np.zeros(len(measures), dtype=np.float64)
        values = _log_density(
            self._field, self._steps, self._params, committed(measures, self._device)
        )
        return np.asarray(values).astype(np.float64)


def _log_density_one(field, steps, params, x):
    """``log p(x)`` of one measure vector: RK4 from ``t = 0`` to ``1`` on
    ``(x, int tr df/dx)``, then the standard normal at the end point."""

    def dynamics(t, state):
        y, _ = state
        velocity = lambda v: field.apply(params, t, v)  # noqa: E731
        jac = jax.jacfwd(velocity)(y)
        return velocity(y), jnp.trace(jac)

    dt = 1.0 / steps

    def rk4(state, i):
        t = i * dt
        k1 = dynamics(t, state)
        k2 = dynamics(t + dt / 2, jax.tree.map(lambda s, k: s + dt / 2 * k, state, k1))
        k3 = dynamics(t + dt / 2, jax.tree.map(lambda s, k: s + dt / 2 * k, state, k2))
        k4 = dynamics(t + dt, jax.tree.map(lambda s, k: s + dt * k, state, k3))
        step = jax.tree.map(lambda a, b, c, d: (a + 2 * b + 2 * c + d) * dt / 6, k1, k2, k3, k4)
        return jax.tree.map(jnp.add, state, step), None

    (z, log_det), _ = jax.lax.scan(
        rk4, (x, jnp.zeros((), x.dtype)), jnp.arange(steps, dtype=x.dtype)
    )
    base = -0.5 * jnp.sum(z * z) - 0.5 * x.shape[-1] * jnp.log(2 * jnp.pi)
    return base + log_det


def _log_densities(field, steps, params, measures):
    """:func:`_log_density_one` of each row of ``measures``."""
    return jax.vmap(lambda x: _log_density_one(field, steps, params, x))(measures)


_log_density = jax.jit(_log_densities, static_argnums=(0, 1))


@partial(jax.jit, static_argnums=(0, 1, 2, 3), donate_argnums=(4, 5, 6))
def _fit(field, steps, train_steps, batch_size, params, opt_state, key, buffer, n):
    """``train_steps`` Adam steps; each draws ``batch_size`` row indices in
    ``[0, n)`` and averages the loss over the first ``min(batch_size, n)``."""
    weights = (jnp.arange(batch_size) < jnp.minimum(batch_size, n)).astype(jnp.float32)
    weights = weights / jnp.sum(weights)

    def loss_fn(p, batch):
        return -jnp.sum(weights * _log_densities(field, steps, p, batch))

    def step(carry, _):
        p, o, k = carry
        k, draw = jax.random.split(k)
        rows = buffer[jax.random.randint(draw, (batch_size,), 0, n)]
        grads = jax.grad(loss_fn)(p, rows)
        updates, o = _ADAM.update(grads, o, p)
        return (optax.apply_updates(p, updates), o, k), None

    (params, opt_state, key), _ = jax.lax.scan(
        step, (params, opt_state, key), None, length=train_steps
    )
    return params, opt_state, key
