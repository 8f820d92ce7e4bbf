"""Tests for ribsax.emitters.rankers (differential against pyribs' rankers)."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ribs.emitters import rankers as ribs_rankers

from ribsax._utils import seed_to_key
from ribsax.emitters import rankers
from ribsax.emitters.rankers import RANKER_KERNELS, RankerConfig, _get_ranker

ARCHIVE = SimpleNamespace(lower_bounds=np.array([-1.0, 0.0]), upper_bounds=np.array([1.0, 10.0]))


def make_batch(seed, batch=12, ties=True):
    """Data and add_info for a batch; ``ties`` makes many values collide."""
    rng = np.random.default_rng(seed)
    if ties:
        value = rng.integers(-2, 3, batch).astype(np.float64)
        objective = rng.integers(0, 4, batch).astype(np.float64)
        novelty = rng.integers(0, 4, batch) / 2.0
        density = rng.integers(0, 3, batch).astype(np.float64)
    else:
        value, objective, novelty, density = rng.normal(size=(4, batch))
    data = {
        "solution": rng.normal(size=(batch, 3)),
        "objective": objective,
        "measures": rng.normal(size=(batch, 2)),
    }
    add_info = {
        "status": rng.integers(0, 3, batch).astype(np.int32),
        "value": value,
        "novelty": novelty,
        "density": density,
        "local_competition": rng.integers(0, 4, batch).astype(np.float64),
    }
    return data, add_info


def rank_both(name, data, add_info, direction=None, **kwargs):
    ours = _get_ranker(name, 0) if not kwargs else getattr(rankers, name)(0, **kwargs)
    ref = (
        ribs_rankers._get_ranker(name, 0)
        if not kwargs
        else getattr(ribs_rankers, name)(0, **kwargs)
    )
    if direction is not None:
        ours.target_measure_dir = direction
        ref.target_measure_dir = direction
    return ours.rank(None, ARCHIVE, data, add_info), ref.rank(None, ARCHIVE, data, add_info)


@pytest.mark.parametrize("name", ["2imp", "2obj", "2rd"])
@pytest.mark.parametrize("seed", range(4))
def test_two_stage_rankers_match_ribs_with_ties(name, seed):
    data, add_info = make_batch(seed)
    if name == "2rd":
        # Integer measures and direction so that projections tie exactly.
        data["measures"] = np.round(data["measures"])
        direction = np.array([1.0, 0.0])
    else:
        direction = None
    (idx, values), (ref_idx, ref_values) = rank_both(name, data, add_info, direction)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(values, ref_values)
    assert values.dtype == ref_values.dtype and values.shape == (12, 2)


@pytest.mark.parametrize("name", ["imp", "obj", "rd", "nov", "density"])
@pytest.mark.parametrize("seed", range(3))
def test_single_key_rankers_match_ribs_without_ties(name, seed):
    data, add_info = make_batch(seed, batch=20, ties=False)
    direction = np.array([0.3, -2.0]) if name == "rd" else None
    (idx, values), (ref_idx, ref_values) = rank_both(name, data, add_info, direction)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(values, ref_values, rtol=1e-15)


@pytest.mark.parametrize(
    "name,source,field",
    [
        ("imp", "add_info", "value"),
        ("obj", "data", "objective"),
        ("nov", "add_info", "novelty"),
        ("density", "add_info", "density"),
    ],
)
@pytest.mark.parametrize("as_list", [False, True])
def test_single_key_rankers_return_values_as_given(name, source, field, as_list):
    """As in pyribs, the ranking values are the caller's input object itself, so
    ``ranking_values == data["objective"]`` compares like with like (lists too)."""
    data, add_info = make_batch(3, batch=6, ties=False)
    given = data if source == "data" else add_info
    if as_list:
        given[field] = given[field].tolist()
    (_, values), (_, ref_values) = rank_both(name, data, add_info)
    assert values is given[field]
    assert ref_values is given[field]


@pytest.mark.parametrize(
    "name,field,descending",
    [
        ("imp", "value", True),
        ("obj", "objective", True),
        ("nov", "novelty", True),
        ("density", "density", False),
    ],
)
def test_single_key_rankers_with_ties(name, field, descending):
    """Same ranked values as pyribs; equal values in the documented order."""
    data, add_info = make_batch(7, batch=16)
    key = data[field] if field == "objective" else add_info[field]
    (idx, _), (ref_idx, _) = rank_both(name, data, add_info)
    np.testing.assert_array_equal(key[idx], key[ref_idx])
    assert sorted(idx) == list(range(16))
    expected = np.argsort(key, kind="stable")
    if descending:
        expected = np.flip(expected)  # Equal values: later index first.
    np.testing.assert_array_equal(idx, expected)


def test_two_stage_improvement_example():
    """A worked example: status [0,2,1,2], value [5,1,3,2] -> [3,1,2,0]."""
    ranker = rankers.TwoStageImprovementRanker()
    idx, values = ranker.rank(
        None, ARCHIVE, {}, {"status": np.array([0, 2, 1, 2]), "value": np.array([5.0, 1, 3, 2])}
    )
    np.testing.assert_array_equal(idx, [3, 1, 2, 0])
    np.testing.assert_array_equal(values, [[0, 5], [2, 1], [1, 3], [2, 2]])


@pytest.mark.parametrize("seed", range(12))
def test_nslc_matches_ribs(seed):
    batch = [6, 12, 20][seed % 3]
    data, add_info = make_batch(100 + seed, batch=batch, ties=seed % 2 == 0)
    (idx, values), (ref_idx, ref_values) = rank_both("nslc", data, add_info)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(values, ref_values)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("source", ["add_info", "data"])
def test_nslc_classic_matches_ribs(seed, source):
    data, add_info = make_batch(200 + seed, batch=14, ties=seed % 2 == 0)
    diversity = np.random.default_rng(seed).integers(0, 3, 14).astype(np.float64)
    (data if source == "data" else add_info)["genotypic_diversity"] = diversity
    (idx, values), (ref_idx, ref_values) = rank_both("nslc_classic", data, add_info)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(values, ref_values)
    assert values.shape == (14, 3)


def test_nslc_diversity_field_prefers_add_info():
    data, add_info = make_batch(3, batch=10)
    add_info["mystery"] = np.arange(10.0)
    data["mystery"] = -np.arange(10.0)
    (idx, values), (ref_idx, ref_values) = rank_both(
        "NSLCRanker", data, add_info, diversity_field="mystery"
    )
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(values[:, 2], np.arange(10.0))
    assert rankers.NSLCRanker(diversity_field="mystery").diversity_field == "mystery"


def test_nslc_errors():
    data, add_info = make_batch(0, batch=5)
    ranker = rankers.NSLCRanker()
    with pytest.raises(KeyError, match="novelty"):
        ranker.rank(None, ARCHIVE, data, {"local_competition": np.zeros(5)})
    with pytest.raises(KeyError, match="local_competition"):
        ranker.rank(None, ARCHIVE, data, {"novelty": np.zeros(5)})
    with pytest.raises(ValueError, match="shape"):
        ranker.rank(None, ARCHIVE, data, {"novelty": np.zeros(5), "local_competition": np.zeros(4)})
    with pytest.raises(KeyError, match="genotypic_diversity"):
        rankers.NSLCClassicRanker().rank(None, ARCHIVE, data, add_info)
    with pytest.raises(KeyError, match="mystery"):
        rankers.NSLCRanker(diversity_field="mystery").rank(None, ARCHIVE, data, add_info)
    add_info["genotypic_diversity"] = np.zeros(4)
    with pytest.raises(ValueError, match="shape"):
        rankers.NSLCClassicRanker().rank(None, ARCHIVE, data, add_info)


@pytest.mark.parametrize("name", ["rd", "2rd"])
def test_random_direction_requires_direction(name):
    data, add_info = make_batch(0)
    ranker = _get_ranker(name, 0)
    assert ranker.target_measure_dir is None
    with pytest.raises(RuntimeError, match="target measure direction not set"):
        ranker.rank(None, ARCHIVE, data, add_info)
    ranker.reset(None, ARCHIVE)
    assert ranker.target_measure_dir.shape == (2,)
    idx, values = ranker.rank(None, ARCHIVE, data, add_info)
    projections = data["measures"] @ ranker.target_measure_dir
    np.testing.assert_allclose(values if name == "rd" else values[:, 1], projections)
    assert sorted(idx) == list(range(12))


def test_random_direction_reset_scales_normal_by_archive_ranges():
    ranker = rankers.RandomDirectionRanker(seed=1)
    ranges = ARCHIVE.upper_bounds - ARCHIVE.lower_bounds
    draws = []
    for _ in range(400):
        ranker.reset(None, ARCHIVE)
        draws.append(ranker.target_measure_dir / ranges)
    draws = np.array(draws)
    assert len(np.unique(draws[:, 0])) == 400  # A new direction every reset.
    np.testing.assert_allclose(draws.mean(axis=0), 0, atol=0.2)
    np.testing.assert_allclose(draws.std(axis=0), 1, atol=0.15)
    # Same seed, same directions.
    other = rankers.RandomDirectionRanker(seed=1)
    other.reset(None, ARCHIVE)
    first = rankers.RandomDirectionRanker(seed=1)
    first.reset(None, ARCHIVE)
    np.testing.assert_array_equal(other.target_measure_dir, first.target_measure_dir)


def test_target_measure_dir_setter():
    ranker = rankers.TwoStageRandomDirectionRanker()
    ranker.target_measure_dir = np.array([0.0, 1.0])
    np.testing.assert_array_equal(ranker.target_measure_dir, [0.0, 1.0])
    ranker.target_measure_dir = None
    assert ranker.target_measure_dir is None


def test_reset_is_noop_for_other_rankers():
    ranker = rankers.ImprovementRanker()
    ranker.reset(None, ARCHIVE)
    data, add_info = make_batch(1, ties=False)
    (idx, _), (ref_idx, _) = (
        ranker.rank(None, ARCHIVE, data, add_info),
        ribs_rankers.ImprovementRanker().rank(None, ARCHIVE, data, add_info),
    )
    np.testing.assert_array_equal(idx, ref_idx)


ALL_NAMES = {
    "density": "DensityRanker",
    "imp": "ImprovementRanker",
    "nov": "NoveltyRanker",
    "nslc": "NSLCRanker",
    "nslc_classic": "NSLCClassicRanker",
    "obj": "ObjectiveRanker",
    "rd": "RandomDirectionRanker",
    "2imp": "TwoStageImprovementRanker",
    "2obj": "TwoStageObjectiveRanker",
    "2rd": "TwoStageRandomDirectionRanker",
}


@pytest.mark.parametrize("abbr,full", ALL_NAMES.items())
def test_get_ranker_names(abbr, full):
    assert type(_get_ranker(abbr, 0)).__name__ == full
    assert type(_get_ranker(full, None)).__name__ == full
    assert isinstance(_get_ranker(full, np.random.SeedSequence(3)), rankers.RankerBase)


def test_get_ranker_errors_and_callables():
    with pytest.raises(
        ValueError, match="`foo` is not the full or abbreviated name of a valid ranker"
    ):
        _get_ranker("foo", 0)
    with pytest.raises(ValueError, match="did not return an instance of RankerBase"):
        _get_ranker(lambda seed: None, 0)
    with pytest.raises(ValueError, match="is neither a callable nor a string"):
        _get_ranker(1.5, 0)
    assert isinstance(_get_ranker(rankers.ObjectiveRanker, 0), rankers.ObjectiveRanker)


def test_custom_numpy_ranker_subclass():
    class Reverse(rankers.RankerBase):
        def rank(self, emitter, archive, data, add_info):
            n = len(data["objective"])
            return np.arange(n)[::-1], self._rng.random(n)

    ranker = _get_ranker(Reverse, 5)
    idx, values = ranker.rank(None, ARCHIVE, {"objective": np.zeros(3)}, {})
    np.testing.assert_array_equal(idx, [2, 1, 0])
    assert values.shape == (3,)
    with pytest.raises(TypeError):
        rankers.RankerBase()


@pytest.mark.parametrize(
    "kind", ["TwoStageImprovementRanker", "NSLCRanker", "TwoStageRandomDirectionRanker"]
)
def test_vmap_matches_separate_calls(kind):
    config = RankerConfig(kind)
    batches = [make_batch(s) for s in range(3)]
    states = [
        RANKER_KERNELS.reset(
            config,
            RANKER_KERNELS.init(config, seed_to_key(s), 2),
            ARCHIVE.lower_bounds,
            ARCHIVE.upper_bounds,
        )
        for s in range(3)
    ]
    fields = rankers.required_fields(config)
    inputs = [{f: jnp.asarray(b[1][f]) for f in fields} for b in batches]
    objective = jnp.stack([jnp.asarray(b[0]["objective"]) for b in batches])
    measures = jnp.stack([jnp.asarray(b[0]["measures"]) for b in batches])
    stacked_states = jax.tree.map(lambda *x: jnp.stack(x), *states)
    stacked_inputs = jax.tree.map(lambda *x: jnp.stack(x), *inputs)
    rank = jax.jit(
        jax.vmap(RANKER_KERNELS.rank, in_axes=(None, 0, None, None, 0, 0, 0)), static_argnums=(0,)
    )
    idx, values = rank(config, stacked_states, None, None, objective, measures, stacked_inputs)
    for i in range(3):
        ref_idx, ref_values = RANKER_KERNELS.rank(
            config, states[i], None, None, objective[i], measures[i], inputs[i]
        )
        np.testing.assert_array_equal(idx[i], ref_idx)
        np.testing.assert_array_equal(values[i], ref_values)
