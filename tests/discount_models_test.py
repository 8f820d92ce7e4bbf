"""ribsax.discount_models: the JAX/optax MLP and DiscountModelManager."""

import jax
import numpy as np
import optax
import pytest

from ribsax.discount_models import MLP, DiscountModelManager, ReLU


def test_mlp_shapes_and_serialization():
    model = MLP([(2, 8), (8, 8), (8, 1, False)], ReLU, seed=0)
    assert model.num_params() == 2 * 8 + 8 + 8 * 8 + 8 + 8
    flat = model.serialize()
    assert flat.shape == (model.num_params(),) and flat.dtype == np.float32
    x = np.random.default_rng(0).normal(size=(5, 2))
    out = np.asarray(model(x))
    other = MLP([(2, 8), (8, 8), (8, 1, False)], jax.nn.relu, seed=1)
    assert not np.allclose(np.asarray(other(x)), out)
    assert other.deserialize(flat) is other
    np.testing.assert_allclose(np.asarray(other(x)), out, rtol=1e-6)
    with pytest.raises(RuntimeError):
        model.gradient()


def manager(**kwargs):
    model = MLP([(2, 32), (32, 1)], ReLU, seed=0)
    return DiscountModelManager(
        model,
        optax.adam(1e-2),
        "cpu",
        train_epochs=kwargs.pop("train_epochs", 60),
        train_cutoff_loss=kwargs.pop("train_cutoff_loss", 0.0),
        train_batch_size=16,
        seed=0,
        **kwargs,
    )


def test_training_fits_a_function_with_normalization():
    rng = np.random.default_rng(0)
    measures = rng.uniform(-10, 10, size=(100, 2))
    targets = 50 + 2 * measures[:, 0]  # Within [30, 70].
    m = manager(
        normalize_measures="negative_one_one",
        measures_low=[-10, -10],
        measures_high=[10, 10],
        normalize_discount="zero_one",
        discount_low=0.0,
        discount_high=100.0,
    )
    before = np.mean((m.inference(measures) - targets) ** 2)
    losses = m.training_loop(measures, targets)
    after = np.mean((m.inference(measures) - targets) ** 2)
    assert len(losses) == 60 and losses[-1] < losses[0] and after < before / 10
    pred = m.inference(measures)
    assert pred.shape == (100,) and pred.dtype == np.float32
    # All chunks are kept (pyribs keeps only the last one).
    np.testing.assert_allclose(m.inference(measures, batch_size=7), pred, rtol=1e-5)
    assert m.model.gradient().shape == (m.model.num_params(),)


def test_cutoff_stops_training():
    m = manager(train_cutoff_loss=1e9)
    assert len(m.training_loop(np.zeros((10, 2)), np.ones(10))) == 1


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"normalize_measures": "zero_one"}, "If normalize_measures is not None,"),
        (
            {"normalize_discount": "zero_one", "discount_low": 0.0},
            "If normalize_discount is not None,",
        ),
    ],
)
def test_missing_bounds_raise_like_pyribs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        manager(**kwargs)
