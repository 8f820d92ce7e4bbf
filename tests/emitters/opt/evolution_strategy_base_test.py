"""Tests for the shared ES machinery: vmapped kernels, name lookup, helpers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.emitters.opt import (
    AdamOpt,
    CMAEvolutionStrategy,
    EvolutionStrategyBase,
    GradientAscentOpt,
    LMMAEvolutionStrategy,
    OpenAIEvolutionStrategy,
    SeparableCMAEvolutionStrategy,
    _get_es,
    _get_grad_opt,
)
from ribsax.emitters.opt._evolution_strategy_base import (
    flat_fitness,
    parent_weights,
    resample_in_bounds,
    single_threaded_blas,
)
from tests.backend import CPU_EXACT_FUSED_CMA

ES_CLASSES = [
    CMAEvolutionStrategy,
    SeparableCMAEvolutionStrategy,
    LMMAEvolutionStrategy,
    OpenAIEvolutionStrategy,
]
DIM = 6


def tree_equal(a, b, atol=0.0):
    leaves_a = jax.tree.leaves(a)
    leaves_b = jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=atol)


def stack(trees):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def member(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


@pytest.mark.parametrize(
    "klass",
    [
        pytest.param(k, marks=CPU_EXACT_FUSED_CMA) if k is CMAEvolutionStrategy else k
        for k in ES_CLASSES
    ],
    ids=lambda k: k.__name__,
)
def test_vmapped_kernels_match_object_api(klass):
    """``jax.vmap`` of the raw ``ask`` / ``tell`` / ``check_stop`` kernels (CMA-ES'
    lazy decomposition under a batched ``lax.cond``) gives what three separate
    objects give."""
    objs = [klass(0.5, DIM, batch_size=6, seed=i) for i in range(3)]
    for i, es in enumerate(objs):
        es.reset(np.full(DIM, float(i)))
    kernels, config = objs[0].kernels, objs[0].config
    lb, ub = objs[0].device_bounds
    vask = jax.jit(
        jax.vmap(kernels.ask, in_axes=(None, 0, None, None, None)), static_argnums=(0, 4)
    )
    vtell = jax.jit(jax.vmap(kernels.tell, in_axes=(None, 0, 0, 0, 0)), static_argnums=(0,))
    vstop = jax.jit(jax.vmap(kernels.check_stop, in_axes=(None, 0, 0)), static_argnums=(0,))
    stacked = stack([es.state for es in objs])
    # 6 iterations of 6 evaluations cross CMA-ES' lazy gap (~6.9 evaluations) twice.
    for it in range(6):
        stacked, solutions = vask(config, stacked, lb, ub, None)
        objective = -np.sum(np.asarray(solutions) ** 2, axis=-1)
        indices = np.flip(np.argsort(objective, axis=-1), axis=-1)
        parents = np.array([it % 3, 1 + it % 2, 3])
        stacked = vtell(
            config, stacked, jnp.asarray(indices), jnp.asarray(objective), jnp.asarray(parents)
        )
        sorted_values = np.take_along_axis(objective, indices, axis=-1)
        stops = vstop(config, stacked, jnp.asarray(sorted_values))
        for i, es in enumerate(objs):
            np.testing.assert_allclose(es.ask(), solutions[i], rtol=1e-13, atol=1e-13)
            es.tell(indices[i], objective[i], int(parents[i]))
            assert es.check_stop(sorted_values[i]) == bool(stops[i])
    if klass is CMAEvolutionStrategy:
        assert objs[2].cov.updated_eval > 0
    for i, es in enumerate(objs):
        tree_equal(member(stacked, i), es.state, atol=1e-12)


@pytest.mark.parametrize(
    "name,klass",
    [
        ("cma_es", CMAEvolutionStrategy),
        ("CMAEvolutionStrategy", CMAEvolutionStrategy),
        ("sep_cma_es", SeparableCMAEvolutionStrategy),
        ("SeparableCMAEvolutionStrategy", SeparableCMAEvolutionStrategy),
        ("lm_ma_es", LMMAEvolutionStrategy),
        ("LMMAEvolutionStrategy", LMMAEvolutionStrategy),
        ("openai_es", OpenAIEvolutionStrategy),
        ("OpenAIEvolutionStrategy", OpenAIEvolutionStrategy),
    ],
)
def test_get_es_by_name(name, klass):
    es = _get_es(name, sigma0=1.0, solution_dim=10, batch_size=4, seed=0)
    assert type(es) is klass
    assert es.batch_size == 4


def test_get_es_errors():
    with pytest.raises(
        ValueError, match="`foo` is not the full or abbreviated name of a valid evolution strategy"
    ):
        _get_es("foo", sigma0=1.0, solution_dim=3)
    with pytest.raises(ValueError, match="did not return an instance of EvolutionStrategyBase"):
        _get_es(lambda **kwargs: object(), sigma0=1.0, solution_dim=3)
    with pytest.raises(ValueError, match="is neither a callable nor a string"):
        _get_es(3, sigma0=1.0, solution_dim=3)
    es = _get_es(CMAEvolutionStrategy, sigma0=1.0, solution_dim=3)
    assert isinstance(es, EvolutionStrategyBase)


def test_get_grad_opt():
    assert isinstance(_get_grad_opt("adam", theta0=np.zeros(2), lr=0.1), AdamOpt)
    assert isinstance(_get_grad_opt("AdamOpt", theta0=np.zeros(2)), AdamOpt)
    assert isinstance(
        _get_grad_opt("gradient_ascent", theta0=np.zeros(2), lr=0.1), GradientAscentOpt
    )
    assert isinstance(
        _get_grad_opt("GradientAscentOpt", theta0=np.zeros(2), lr=1), GradientAscentOpt
    )
    with pytest.raises(
        ValueError, match="`bar` is not the full or abbreviated name of a valid gradient optimizer"
    ):
        _get_grad_opt("bar", theta0=np.zeros(2))
    with pytest.raises(ValueError, match="did not return an instance of GradientOptBase"):
        _get_grad_opt(lambda **kwargs: 1, theta0=np.zeros(2))
    with pytest.raises(ValueError, match="is neither a callable nor a string"):
        _get_grad_opt(None, theta0=np.zeros(2))


@pytest.mark.parametrize("num_parents", [1, 2, 5, 8])
def test_parent_weights_match_ribs_formula(num_parents):
    weights, mueff = parent_weights(jnp.asarray(num_parents), 8, np.float64)
    expected = np.log(num_parents + 0.5) - np.log(np.arange(1, num_parents + 1))
    expected = expected / expected.sum()
    np.testing.assert_allclose(weights[:num_parents], expected, rtol=1e-14)
    np.testing.assert_array_equal(weights[num_parents:], 0)
    assert float(mueff) == pytest.approx(1 / np.sum(expected**2), rel=1e-13)


def test_flat_fitness():
    assert bool(flat_fitness(jnp.asarray([1.0, 3.0, 1.0])))
    assert not bool(flat_fitness(jnp.asarray([1.0, 3.0, 1.1])))
    assert not bool(flat_fitness(jnp.asarray([1.0])))
    assert bool(flat_fitness(jnp.asarray([[1, 2], [0, 0], [1, 2]])))
    assert not bool(flat_fitness(jnp.asarray([[1.0, 2.0], [1.0, 2.1]])))


def test_resample_in_bounds_replaces_only_bad_rows():
    def draw(key):
        z = jax.random.normal(key, (500, 2))
        return z, {"z": z}

    lower, upper = jnp.asarray([-1.0, -jnp.inf]), jnp.asarray([1.0, jnp.inf])
    solutions, aux, rounds = jax.jit(lambda k: resample_in_bounds(k, draw, lower, upper, 1000))(
        jax.random.key(0)
    )
    assert int(rounds) > 1
    np.testing.assert_array_equal(solutions, aux["z"])
    assert np.all(np.abs(np.asarray(solutions[:, 0])) <= 1)
    # The accepted first coordinates follow the truncated normal (std ~0.54).
    assert float(jnp.std(solutions[:, 0])) == pytest.approx(0.54, abs=0.05)


@pytest.mark.parametrize("klass", ES_CLASSES, ids=lambda k: k.__name__)
def test_pickle_round_trip_continues_identically(klass):
    import pickle

    es = klass(0.5, DIM, batch_size=6, seed=11)
    es.reset(np.zeros(DIM))
    solutions = es.ask()
    objective = -np.sum(solutions**2, axis=1)
    es.tell(np.flip(np.argsort(objective)), None, 3)
    clone = pickle.loads(pickle.dumps(es))
    np.testing.assert_array_equal(clone.ask(), es.ask())
    assert clone.config == es.config


def test_default_dtype_without_x64_is_float32():
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from ribsax.emitters.opt import CMAEvolutionStrategy\n"
        "es = CMAEvolutionStrategy(0.5, 4, seed=0)\n"
        "es.reset(np.zeros(4))\n"
        "x = es.ask()\n"
        "es.tell(np.arange(len(x)), None, 2)\n"
        "assert x.dtype == np.float32 and es.mean.dtype == np.float32\n"
        "try:\n"
        "    CMAEvolutionStrategy(0.5, 4, dtype=np.float64)\n"
        "except ValueError as e:\n"
        "    assert 'requires JAX 64-bit mode' in str(e)\n"
        "else:\n"
        "    raise AssertionError('float64 accepted without x64')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_single_threaded_blas_limits_blas_threads():
    from threadpoolctl import threadpool_info

    with single_threaded_blas():
        infos = [info for info in threadpool_info() if info["user_api"] == "blas"]
        assert infos and all(info["num_threads"] == 1 for info in infos)


def test_resample_in_bounds_without_bounds_is_one_round_with_same_numbers():
    def draw(key):
        z = jax.random.normal(key, (50, 3))
        return z, {"z": z}

    inf = jnp.full(3, jnp.inf)
    key = jax.random.key(4)
    bounded = resample_in_bounds(key, draw, -inf, inf, 10)
    unbounded = resample_in_bounds(key, draw, None, None, 10)
    tree_equal(bounded, unbounded)
    assert int(unbounded[2]) == 1


@pytest.mark.parametrize("klass", ES_CLASSES, ids=lambda k: k.__name__)
def test_sample_with_none_bounds_equals_infinite_bounds(klass):
    es = klass(0.5, DIM, batch_size=6, seed=3)
    es.reset(np.zeros(DIM))
    kernels, config = es.kernels, es.config
    inf = jnp.full(DIM, jnp.inf)
    state_inf, sols_inf = jax.jit(lambda s: kernels.ask(config, s, -inf, inf))(es.state)
    state_none, sols_none = jax.jit(lambda s: kernels.ask(config, s, None, None))(es.state)
    np.testing.assert_array_equal(sols_inf, sols_none)
    tree_equal(state_inf, state_none)
