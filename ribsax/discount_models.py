"""Discount models for Discount Model Search (DMS), in JAX and optax.

Counterpart of ``ribs.discount_models`` (which uses PyTorch): :class:`MLP` is a
small multilayer perceptron whose parameters are a JAX pytree, and
:class:`DiscountModelManager` trains it with an optax optimizer and evaluates it,
with the same arguments and normalisations as pyribs.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.archives._array_store import resolve_device

__all__ = ["MLP", "DiscountModelManager", "ReLU"]

_NORMALIZATIONS = (None, "zero_one", "negative_one_one")


class MLP:
    """A multilayer perceptron: linear layers with an activation between them.

    Args:
        layer_specs: ``[(in, out)]`` or ``[(in, out, bias)]`` per linear layer.
        activation: The activation between layers: a function such as
            ``jax.nn.relu``, or a class whose instances are such functions (the
            pyribs/torch style, e.g. ``ribsax.discount_models.ReLU``).
        seed: Seed of the initial parameters (ribsax extension). Weights and biases
            are drawn uniformly from ``[-1/sqrt(in), 1/sqrt(in)]``, torch's default
            for linear layers.
    """

    def __init__(self, layer_specs, activation, *, seed=None):
        self._activation = activation() if isinstance(activation, type) else activation
        key = jax.random.key(0 if seed is None else int(seed))
        params = []
        for spec in layer_specs:
            fan_in, fan_out = int(spec[0]), int(spec[1])
            bias = bool(spec[2]) if len(spec) > 2 else True
            key, w_key, b_key = jax.random.split(key, 3)
            bound = 1.0 / math.sqrt(fan_in)
            weight = jax.random.uniform(w_key, (fan_in, fan_out), jnp.float32, -bound, bound)
            params.append(
                {
                    "w": weight,
                    "b": jax.random.uniform(b_key, (fan_out,), jnp.float32, -bound, bound)
                    if bias
                    else None,
                }
            )
        self.params = params
        self.grads = None

    def apply(self, params, x):
        """Output of the network with ``params`` (pure; used inside jitted code)."""
        for i, layer in enumerate(params):
            x = x @ layer["w"]
            if layer["b"] is not None:
                x = x + layer["b"]
            if i < len(params) - 1:
                x = self._activation(x)
        return x

    def forward(self, x):
        """Output of the network for ``x`` (``(batch, in)`` -> ``(batch, out)``)."""
        return self.apply(self.params, jnp.asarray(x, jnp.float32))

    __call__ = forward

    def _leaves(self, tree):
        return [leaf for leaf in jax.tree.leaves(tree) if leaf is not None]

    def num_params(self) -> int:
        """Number of scalar parameters."""
        return int(sum(leaf.size for leaf in self._leaves(self.params)))

    def serialize(self) -> np.ndarray:
        """The parameters as one 1-D float32 NumPy array."""
        return np.concatenate([np.ravel(np.asarray(leaf)) for leaf in self._leaves(self.params)])

    def deserialize(self, array):
        """Loads parameters from :meth:`serialize`'s layout; returns ``self``."""
        array = np.asarray(array, dtype=np.float32)
        leaves, treedef = jax.tree.flatten(self.params)
        out, pos = [], 0
        for leaf in leaves:
            out.append(jnp.asarray(array[pos : pos + leaf.size].reshape(leaf.shape)))
            pos += leaf.size
        self.params = jax.tree.unflatten(treedef, out)
        return self

    def gradient(self) -> np.ndarray:
        """The gradient of the last training step, flattened like :meth:`serialize`.

        Raises:
            RuntimeError: No training step has been taken yet.
        """
        if self.grads is None:
            raise RuntimeError("No gradient has been computed yet.")
        return np.concatenate([np.ravel(np.asarray(leaf)) for leaf in self._leaves(self.grads)])


class DiscountModelManager:
    """Trains and evaluates a discount model (pyribs' arguments, optax optimizer).

    Measures and targets are optionally normalised (``"zero_one"``: ``(x - low) /
    (high - low)``; ``"negative_one_one"``: twice that minus one) and the model
    predicts the normalised discount. :meth:`training_loop` runs up to
    ``train_epochs`` epochs of shuffled mini-batches of ``train_batch_size`` with
    the mean squared error, stopping after the first epoch whose mean loss is at most
    ``train_cutoff_loss``. Everything runs in float32, as in pyribs.

    Deliberate difference: pyribs' :meth:`inference` keeps only the last chunk when
    ``batch_size`` is smaller than the number of measures; here every chunk is kept.

    Args:
        model: An :class:`MLP` (or any object with ``params``, ``apply`` and a
            ``grads`` attribute).
        optimizer: An optax ``GradientTransformation`` (e.g. ``optax.adam(1e-3)``).
        device: None, a ``jax.Device`` or a platform string (``"cpu"``).
        train_epochs: Maximum number of epochs per :meth:`training_loop`.
        train_cutoff_loss: Stop once an epoch's loss is at most this.
        train_batch_size: Mini-batch size.
        normalize_measures: None, ``"zero_one"`` or ``"negative_one_one"``.
        measures_low, measures_high: Bounds of the measures (needed to normalise).
        normalize_discount: None, ``"zero_one"`` or ``"negative_one_one"``.
        discount_low, discount_high: Bounds of the discount (needed to normalise).
        seed: Seed of the mini-batch shuffling (ribsax extension).

    Raises:
        ValueError: A normalisation without its bounds.
    """

    def __init__(
        self,
        model,
        optimizer,
        device,
        *,
        train_epochs,
        train_cutoff_loss,
        train_batch_size,
        normalize_measures=None,
        measures_low=None,
        measures_high=None,
        normalize_discount=None,
        discount_low=None,
        discount_high=None,
        seed=None,
    ):
        self.model = model
        self.optimizer = optimizer
        self.device = resolve_device(device)
        self.train_epochs = int(train_epochs)
        self.train_cutoff_loss = float(train_cutoff_loss)
        self.train_batch_size = int(train_batch_size)
        if normalize_measures is not None and (measures_low is None or measures_high is None):
            raise ValueError(
                "If normalize_measures is not None, measures_low and "
                "measures_high must be passed in."
            )
        if normalize_discount is not None and (discount_low is None or discount_high is None):
            raise ValueError(
                "If normalize_discount is not None, discount_low and "
                "discount_high must be passed in."
            )
        self.normalize_measures = normalize_measures
        self.measures_low = self._bound(measures_low, normalize_measures)
        self.measures_high = self._bound(measures_high, normalize_measures)
        self.normalize_discount = normalize_discount
        self.discount_low = self._bound(discount_low, normalize_discount)
        self.discount_high = self._bound(discount_high, normalize_discount)
        self.opt_state = optimizer.init(model.params)
        self._rng = np.random.default_rng(seed)
        self._step = jax.jit(self._train_step)

    @staticmethod
    def _bound(value, normalize):
        return None if normalize is None else np.asarray(value, np.float32)

    @staticmethod
    def _normalize(x, normalize, low, high):
        x = np.asarray(x, np.float32)
        if normalize is None:
            return x
        if normalize == "negative_one_one":
            return 2.0 * (x - low) / (high - low) - 1.0
        if normalize == "zero_one":
            return (x - low) / (high - low)
        raise ValueError(f"Unknown normalization method {normalize}.")

    @staticmethod
    def _unnormalize(x, normalize, low, high):
        if normalize is None:
            return x
        if normalize == "negative_one_one":
            return (x + 1.0) / 2.0 * (high - low) + low
        if normalize == "zero_one":
            return x * (high - low) + low
        raise ValueError(f"Unknown normalization method {normalize}.")

    def _train_step(self, params, opt_state, measures, targets, weight):
        """One optimizer step on a padded mini-batch (``weight`` 0 on padding)."""
        import optax

        def loss_fn(p):
            err = self.model.apply(p, measures)[:, 0] - targets
            return jnp.sum(weight * err * err) / jnp.sum(weight)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, grads

    def training_loop(self, measures, targets) -> list:
        """Trains on ``(measures, targets)``; returns the mean loss of each epoch."""
        x = self._normalize(
            measures, self.normalize_measures, self.measures_low, self.measures_high
        )
        y = self._normalize(targets, self.normalize_discount, self.discount_low, self.discount_high)
        n, size = len(x), self.train_batch_size
        losses = []
        for _ in range(self.train_epochs):
            order = self._rng.permutation(n)
            total = 0.0
            for start in range(0, n, size):
                rows = order[start : start + size]
                count = len(rows)
                padded = np.zeros(size, np.int64)
                padded[:count] = rows
                weight = np.zeros(size, np.float32)
                weight[:count] = 1.0
                params, self.opt_state, loss, grads = self._step(
                    self.model.params,
                    self.opt_state,
                    jnp.asarray(x[padded]),
                    jnp.asarray(y[padded]),
                    jnp.asarray(weight),
                )
                self.model.params, self.model.grads = params, grads
                total += float(loss) * count
            epoch_loss = total / n if n else 0.0
            losses.append(epoch_loss)
            if epoch_loss <= self.train_cutoff_loss:
                break
        return losses

    def inference(self, measures, batch_size=None) -> np.ndarray:
        """Discounts predicted for ``measures`` (1-D float32 NumPy array)."""
        x = self._normalize(
            measures, self.normalize_measures, self.measures_low, self.measures_high
        )
        batch_size = len(x) if batch_size is None else int(batch_size)
        chunks = [
            np.asarray(
                self.model.apply(self.model.params, jnp.asarray(x[start : start + batch_size]))
            )
            for start in range(0, len(x), max(batch_size, 1))
        ]
        out = np.concatenate(chunks) if chunks else np.zeros((0, 1), np.float32)
        out = self._unnormalize(out, self.normalize_discount, self.discount_low, self.discount_high)
        return out[:, 0] if out.ndim == 2 else out


class ReLU:
    """``ReLU()`` is ``jax.nn.relu``, for torch-style ``MLP(specs, ReLU)``."""

    def __call__(self, x):
        return jax.nn.relu(x)
