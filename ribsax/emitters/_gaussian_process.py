"""A small multi-output Gaussian process with a Matérn (ν = 3/2) kernel, in JAX.

This is the surrogate of :class:`~ribsax.emitters.BayesianOptimizationEmitter`. It
reproduces what pyribs 0.12 builds with scikit-learn,
``GaussianProcessRegressor(kernel=Matern(), normalize_y=True, n_targets=t)``:

* one isotropic Matérn kernel with ν = 3/2 and a single length scale ``l`` shared by
  all targets, ``k(r) = (1 + √3 r/l) exp(-√3 r/l)``, no signal variance, and a
  jitter of ``1e-10`` on the diagonal of the training covariance (sklearn's
  ``alpha``);
* targets normalised per column to zero mean and unit (population) standard
  deviation, a zero standard deviation counting as 1;
* ``log l`` chosen by maximising the log marginal likelihood summed over the targets
  with SciPy's L-BFGS-B (``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``),
  started from ``l = 1`` on every fit, within ``[1e-5, 1e5]``, as sklearn does. The
  likelihood and its gradient are one jitted JAX function (the gradient comes from
  autodiff instead of sklearn's closed form, so the optimiser may stop at a length
  scale that differs from sklearn's in the last digits);
* predictive means and standard deviations as sklearn's ``predict(...,
  return_std=True)``: negative variances are clipped to 0, and both are scaled back
  to the targets' units.

The training set is padded to a power of two (at least 8 rows) with masked rows that
add nothing to the likelihood or the predictions, so a growing data set recompiles
the jitted functions only when it crosses a power of two.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np

__all__ = ["GPState", "fit_gp", "gp_state", "gp_predict", "predict", "matern32"]

#: sklearn's default ``alpha`` (jitter added to the training covariance).
JITTER = 1e-10
#: sklearn's default ``length_scale_bounds`` of ``Matern()``.
LENGTH_SCALE_BOUNDS = (1e-5, 1e5)


class GPState(NamedTuple):
    """A fitted Gaussian process (a pytree of arrays).

    Attributes:
        x: ``(m, d)`` training inputs, zero-padded to ``m`` rows.
        mask: ``(m,)`` bool, True for real rows.
        chol: ``(m, m)`` lower Cholesky factor of the training covariance (identity
            on padded rows).
        alpha: ``(m, t)`` ``K⁻¹ y`` for the normalised targets.
        length_scale: Scalar kernel length scale.
        y_mean: ``(t,)`` target means.
        y_std: ``(t,)`` target standard deviations (0 replaced by 1).
    """

    x: jax.Array
    mask: jax.Array
    chol: jax.Array
    alpha: jax.Array
    length_scale: jax.Array
    y_mean: jax.Array
    y_std: jax.Array


def _distances(a, b):
    """Euclidean distances between the rows of ``a`` and ``b`` (with a zero-safe
    square root, so autodiff gives 0 instead of NaN at distance 0)."""
    sq = jnp.sum(a * a, axis=1)[:, None] + jnp.sum(b * b, axis=1)[None, :] - 2.0 * a @ b.T
    sq = jnp.maximum(sq, 0.0)
    positive = sq > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, sq, 1.0)), 0.0)


def matern32(a, b, length_scale):
    """Matérn ν = 3/2 kernel matrix ``(1 + √3 r/l) exp(-√3 r/l)`` between the rows
    of ``a`` and ``b`` (sklearn's ``Matern(length_scale, nu=1.5)``)."""
    scaled = np.sqrt(3.0) * _distances(a / length_scale, b / length_scale)
    return (1.0 + scaled) * jnp.exp(-scaled)


def _train_cov(x, mask, length_scale):
    """Training covariance with jitter; padded rows/columns are the identity."""
    both = mask[:, None] & mask[None, :]
    k = matern32(x, x, length_scale)
    k = k.at[jnp.diag_indices(x.shape[0])].set(1.0)  # r = 0 exactly on the diagonal.
    eye = jnp.eye(x.shape[0], dtype=x.dtype)
    return jnp.where(both, k + JITTER * eye, eye)


@jax.jit
def _neg_log_likelihood(log_length_scale, x, mask, y):
    """Negative log marginal likelihood summed over the targets (sklearn's
    ``log_marginal_likelihood``), +inf where the Cholesky factorisation fails."""
    chol = jnp.linalg.cholesky(_train_cov(x, mask, jnp.exp(log_length_scale)))
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    n = jnp.sum(mask)
    per_target = (
        -0.5 * jnp.einsum("ik,ik->k", y, alpha)
        - jnp.sum(jnp.log(jnp.diag(chol)))
        - n / 2.0 * jnp.log(2.0 * jnp.pi)
    )
    return -jnp.sum(per_target)


_value_and_grad = jax.jit(jax.value_and_grad(_neg_log_likelihood))


@jax.jit
def gp_state(x, mask, y, length_scale, y_mean, y_std):
    """Builds the :class:`GPState` for a fixed length scale (normalised ``y``)."""
    chol = jnp.linalg.cholesky(_train_cov(x, mask, length_scale))
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    return GPState(
        x=x,
        mask=mask,
        chol=chol,
        alpha=alpha,
        length_scale=jnp.asarray(length_scale, x.dtype),
        y_mean=y_mean,
        y_std=y_std,
    )


def _padded_rows(n: int) -> int:
    return max(8, 1 << (int(n) - 1).bit_length())


def fit_gp(x, y, dtype, length_scale=None) -> GPState:
    """Fits the Gaussian process to ``x`` ``(n, d)`` and targets ``y`` ``(n, t)``.

    Args:
        x: Training inputs.
        y: Training targets, one column per output.
        dtype: Floating dtype of the computation.
        length_scale: None (default) optimises the length scale as sklearn does;
            a float fixes it (sklearn's ``optimizer=None``).

    Returns:
        The fitted :class:`GPState`.
    """
    x = np.asarray(x, dtype=dtype)
    y = np.asarray(y, dtype=dtype)
    n = x.shape[0]
    y_mean = np.mean(y, axis=0)
    y_std = np.std(y, axis=0)
    # sklearn's _handle_zeros_in_scale: (near-)zero scales become 1.
    y_std = np.where(y_std < 10 * np.finfo(y_std.dtype).eps, 1.0, y_std).astype(dtype)
    y_norm = (y - y_mean) / y_std

    rows = _padded_rows(n)
    x_pad = np.zeros((rows, x.shape[1]), dtype=dtype)
    x_pad[:n] = x
    y_pad = np.zeros((rows, y.shape[1]), dtype=dtype)
    y_pad[:n] = y_norm
    mask = np.arange(rows) < n
    x_dev, y_dev, mask_dev = jnp.asarray(x_pad), jnp.asarray(y_pad), jnp.asarray(mask)

    if length_scale is None:
        import scipy.optimize

        def objective(theta):
            value, grad = _value_and_grad(jnp.asarray(theta[0], dtype), x_dev, mask_dev, y_dev)
            value, grad = float(value), float(grad)
            if not np.isfinite(value):  # sklearn: -inf likelihood, zero gradient.
                return np.inf, np.zeros(1)
            return value, np.array([grad])

        result = scipy.optimize.minimize(
            objective,
            np.zeros(1),
            method="L-BFGS-B",
            jac=True,
            bounds=[tuple(np.log(LENGTH_SCALE_BOUNDS))],
        )
        length_scale = float(np.exp(result.x[0]))
    return gp_state(
        x_dev,
        mask_dev,
        y_dev,
        jnp.asarray(length_scale, dtype),
        jnp.asarray(y_mean),
        jnp.asarray(y_std),
    )


def predict(state: GPState, xq):
    """Predictive means and standard deviations at ``xq`` ``(q, d)``.

    Returns:
        ``(mean, std)``, each ``(q, t)``, in the targets' units.
    """
    k_trans = matern32(xq, state.x, state.length_scale)
    k_trans = jnp.where(state.mask[None, :], k_trans, 0.0)
    mean = k_trans @ state.alpha
    v = jax.scipy.linalg.solve_triangular(state.chol, k_trans.T, lower=True)
    var = 1.0 - jnp.sum(v * v, axis=0)
    var = jnp.maximum(var, 0.0)
    std = jnp.sqrt(var[:, None] * state.y_std[None, :] ** 2)
    return state.y_std * mean + state.y_mean, std


#: Jitted :func:`predict`.
gp_predict = jax.jit(predict)
