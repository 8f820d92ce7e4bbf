"""Differential tests: ribsax.archives.GridArchive against ribs.archives.GridArchive.

Both archives receive the same seeded streams of batches, built to hit the hard cases:
several solutions in one cell, equal objectives (ties and objectives equal to the
current elite/threshold), measures outside the ranges and exactly on cell boundaries,
MAP-Elites and CMA-MAE settings, float32 and float64, multi-dimensional solutions and
extra fields, interleaved add_single calls and a clear. After every call the add
results, data() (same row order), stats, best_elite, retrieve results and samples from
sample_elites (same seed) must agree.

Shapes are small and fixed (12 cells, batches of 8) so that each configuration
compiles the add kernel once.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
import ribs.archives

from ribsax.archives import GridArchive

DIMS = [4, 3]
RANGES = [(-1.0, 1.0), (0.0, 3.0)]
BATCH = 8
STEPS = 10

CMA_SETTINGS = {
    "map_elites": {},
    "cma_mae_lr0.1": {"learning_rate": 0.1, "threshold_min": -1.0},
    "cma_mae_lr0.5": {"learning_rate": 0.5, "threshold_min": 0.0},
    "cma_mae_lr1": {"learning_rate": 1.0, "threshold_min": 0.5},
}

VARIANTS = {
    "flat": {"solution_dim": 3},
    "multidim_extra": {
        "solution_dim": (2, 2),
        "extra_fields": {"foo": ((), np.int32), "bar": ((2,), np.float32)},
    },
}


def _tolerance(dtype):
    return 1e-5 if dtype == np.float32 else 1e-12


def _make_pair(dtype, settings, variant, seed):
    kwargs = dict(
        dims=DIMS,
        ranges=RANGES,
        dtype=dtype,
        seed=seed,
        **CMA_SETTINGS[settings],
        **VARIANTS[variant],
    )
    return GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)


def _measures(rng, n, archive):
    """Measures mixing interior points, boundaries, out-of-range values and repeats."""
    lower = np.array([r[0] for r in RANGES])
    upper = np.array([r[1] for r in RANGES])
    kind = rng.integers(0, 4, size=n)
    measures = rng.uniform(lower, upper, size=(n, 2))
    # Exactly on cell boundaries (including both range ends).
    for d in range(2):
        edges = archive.boundaries[d]
        on_edge = kind == 1
        measures[on_edge, d] = rng.choice(edges, size=on_edge.sum())
    # Out of range: clipped to the edge cells.
    out = kind == 2
    measures[out] = rng.uniform(lower - 2, upper + 2, size=(out.sum(), 2))
    # Repeats of earlier rows put several solutions in one cell.
    for i in np.nonzero(kind == 3)[0]:
        if i > 0:
            measures[i] = measures[rng.integers(0, i)]
    return measures


def _objectives(rng, n, ours):
    """Coarse objectives (ties), some equal to existing elites' objectives/thresholds."""
    objective = np.round(rng.normal(1.0, 2.0, size=n) * 2) / 2
    if len(ours) > 0:
        data = ours.data()
        pool = np.concatenate([data["objective"], data["threshold"]])
        reuse = rng.random(n) < 0.25
        objective[reuse] = rng.choice(pool, size=reuse.sum())
    return objective


def _extras(rng, n, variant, single=False):
    if variant != "multidim_extra":
        return {}
    extras = {
        "foo": rng.integers(-5, 5, size=n).astype(np.int32),
        "bar": rng.normal(size=(n, 2)).astype(np.float32),
    }
    if single:
        return {name: arr[0] for name, arr in extras.items()}
    return extras


def _assert_close(a, b, rtol, name="", atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, name
    assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(a, b, err_msg=name)


def _assert_dicts_close(a, b, rtol):
    assert list(a) == list(b)
    for key in b:
        _assert_close(a[key], b[key], rtol, key)


def _assert_same_state(ours, theirs, rtol, rng):
    assert len(ours) == len(theirs)
    assert ours.empty == theirs.empty
    # data(): same rows in the same (first-occupation) order.
    _assert_dicts_close(ours.data(), theirs.data(), rtol)
    # Stats.
    a, b = ours.stats, theirs.stats
    assert a.num_elites == b.num_elites and isinstance(a.num_elites, int)
    # Sums may be accumulated in a different order; allow for rounding relative to
    # the magnitude of the summed objectives (the QD score can cancel to ~0).
    scale = 1.0 + float(np.abs(theirs.data("objective")).sum())
    for name in ["coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        x, y = getattr(a, name), getattr(b, name)
        if y is None:
            assert x is None, name
        else:
            _assert_close(x, y, rtol, name, atol=rtol * scale)
    # Best elite.
    if theirs.best_elite is None:
        assert ours.best_elite is None
    else:
        _assert_dicts_close(ours.best_elite, theirs.best_elite, rtol)
    # retrieve on fresh measures (some unoccupied -> sentinels).
    query = _measures(rng, 6, theirs)
    occ_a, ret_a = ours.retrieve(query)
    occ_b, ret_b = theirs.retrieve(query)
    np.testing.assert_array_equal(occ_a, occ_b)
    _assert_dicts_close(ret_a, ret_b, rtol)


def _run_stream(dtype, settings, variant, seed, with_single=True):
    ours, theirs = _make_pair(dtype, settings, variant, seed)
    rtol = _tolerance(dtype)
    rng = np.random.default_rng(seed)
    sol_shape = ours.solution_dim if isinstance(ours.solution_dim, tuple) else (ours.solution_dim,)
    for step in range(STEPS):
        if step == STEPS // 2 + 1:
            ours.clear()
            theirs.clear()
            _assert_same_state(ours, theirs, rtol, rng)
        solution = rng.normal(size=(BATCH, *sol_shape))
        objective = _objectives(rng, BATCH, ours)
        measures = _measures(rng, BATCH, theirs)
        extras = _extras(rng, BATCH, variant)
        a = ours.add(solution, objective, measures, **extras)
        b = theirs.add(solution, objective, measures, **extras)
        np.testing.assert_array_equal(a["status"], b["status"])
        assert a["status"].dtype == b["status"].dtype
        _assert_close(a["value"], b["value"], rtol, "value")
        _assert_same_state(ours, theirs, rtol, rng)

        if with_single and step % 3 == 1:
            s_solution = rng.normal(size=sol_shape)
            s_objective = _objectives(rng, 1, ours)[0]
            s_measures = _measures(rng, 1, theirs)[0]
            s_extras = _extras(rng, 1, variant, single=True)
            a = ours.add_single(s_solution, s_objective, s_measures, **s_extras)
            b = theirs.add_single(s_solution, s_objective, s_measures, **s_extras)
            assert a["status"] == b["status"]
            assert isinstance(a["status"], type(b["status"]))
            _assert_close(a["value"], b["value"], rtol, "single value")
            _assert_same_state(ours, theirs, rtol, rng)

        if not ours.empty and step % 2 == 0:
            for replace in (True, False):
                n = 5 if replace else len(theirs)
                _assert_dicts_close(
                    ours.sample_elites(n, replace=replace),
                    theirs.sample_elites(n, replace=replace),
                    rtol,
                )
    return ours, theirs


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("settings", list(CMA_SETTINGS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_stream(dtype, settings, variant):
    seed = 1000 * list(CMA_SETTINGS).index(settings) + 10 * list(VARIANTS).index(variant)
    ours, theirs = _run_stream(dtype, settings, variant, seed)
    # Final iteration order and contents.
    for a, b in zip(list(ours), list(theirs), strict=True):
        _assert_dicts_close(a, b, _tolerance(dtype))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_more_seeds_map_elites(seed):
    _run_stream(np.float64, "map_elites", "flat", seed, with_single=False)


@pytest.mark.parametrize("seed", [4, 5])
def test_more_seeds_cma_mae(seed):
    _run_stream(np.float32, "cma_mae_lr0.1", "flat", seed, with_single=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pandas_and_return_types(dtype):
    ours, theirs = _run_stream(dtype, "cma_mae_lr0.5", "flat", seed=77, with_single=False)
    df_a = ours.data(return_type="pandas")
    df_b = theirs.data(return_type="pandas")
    assert list(df_a.columns) == list(df_b.columns)
    pd.testing.assert_frame_equal(pd.DataFrame(df_a), pd.DataFrame(df_b), rtol=_tolerance(dtype))
    for fields in ["objective", ["index", "measures"]]:
        for return_type in [None, "dict", "tuple"]:
            a = ours.data(fields, return_type=return_type)
            b = theirs.data(fields, return_type=return_type)
            assert type(a) is type(b)
            if isinstance(b, np.ndarray):
                _assert_close(a, b, _tolerance(dtype))
            elif isinstance(b, dict):
                _assert_dicts_close(a, b, _tolerance(dtype))
            else:
                for x, y in zip(a, b, strict=True):
                    _assert_close(x, y, _tolerance(dtype))


def test_boundary_measures_index_identically():
    """Every cell boundary (and the range ends) maps to the same cell as in pyribs."""
    for dtype in [np.float32, np.float64]:
        ours, theirs = _make_pair(dtype, "map_elites", "flat", 0)
        grid = np.stack(np.meshgrid(ours.boundaries[0], ours.boundaries[1]), axis=-1).reshape(-1, 2)
        np.testing.assert_array_equal(ours.index_of(grid), theirs.index_of(grid))


@pytest.mark.parametrize("settings", ["map_elites", "cma_mae_lr1"])
def test_best_elite_read_only_at_the_end(settings):
    """best_elite agrees with pyribs when it is first read many adds later.

    With MAP-Elites thresholds ribsax records only the best elite's cell and reads
    the entry when asked; the stream keeps improving that cell (and others) before
    the first read, and a pickled copy is read too. With ``learning_rate=1`` and a
    finite ``threshold_min`` a cell can take a lower objective, so the row is copied
    at insertion time; the stream checks both agree with pyribs either way.
    """
    ours, theirs = _make_pair(np.float64, settings, "multidim_extra", seed=5)
    rng = np.random.default_rng(5)
    for step in range(8):
        solution = rng.normal(size=(BATCH, 2, 2))
        # Rising objectives, all in a few cells: the best cell keeps improving.
        objective = rng.normal(size=BATCH) + step
        measures = rng.uniform([-1, 0], [-0.5, 1], size=(BATCH, 2))
        extras = _extras(rng, BATCH, "multidim_extra")
        ours.add(solution, objective, measures, **extras)
        theirs.add(solution, objective, measures, **extras)
        assert ours.stats.obj_max == theirs.stats.obj_max
    restored = pickle.loads(pickle.dumps(ours))
    _assert_dicts_close(restored.best_elite, theirs.best_elite, 1e-12)
    _assert_dicts_close(ours.best_elite, theirs.best_elite, 1e-12)
