"""Behaviour with JAX 64-bit mode disabled (JAX's default).

The test suite enables x64 in tests/conftest.py, so these checks run in a fresh Python
subprocess (``sys.executable``) where x64 stays off. The subprocess runs one script
that records the outcome of every check in a JSON dict; each test below asserts on its
part. Expected behaviour: default dtypes are float32, an explicit
float64 request raises a clear ValueError (never a silent downcast), and archives work
in float32 exactly like pyribs with ``dtype=np.float32``.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(r"""
    import json, traceback
    import numpy as np
    import jax
    import ribs.archives
    from ribsax.archives import ArrayStore, GridArchive

    out = {}

    def check(name):
        def deco(fn):
            try:
                out[name] = {"ok": True, "result": fn()}
            except Exception as e:  # Recorded, asserted on by the parent test.
                out[name] = {"ok": False, "type": type(e).__name__, "msg": str(e),
                             "tb": traceback.format_exc()}
            return fn
        return deco

    @check("x64")
    def _():
        return bool(jax.config.jax_enable_x64)

    @check("default_dtypes")
    def _():
        archive = GridArchive(solution_dim=2, dims=[4], ranges=[(0, 1)])
        return {k: np.dtype(v).name for k, v in archive.dtypes.items()}

    def _float64_error(kwargs):
        try:
            GridArchive(solution_dim=2, dims=[4], ranges=[(0, 1)], **kwargs)
        except ValueError as e:
            return str(e)
        return None

    for key, kwargs in {
        "dtype_float64": {"dtype": np.float64},
        "dtype_d": {"dtype": "d"},
        "solution_float64": {"solution_dtype": np.float64},
        "objective_float64": {"objective_dtype": np.float64},
        "measures_float64": {"measures_dtype": np.float64},
    }.items():
        out["err_" + key] = _float64_error(kwargs)

    @check("float32_explicit_ok")
    def _():
        a = GridArchive(solution_dim=2, dims=[4], ranges=[(0, 1)], dtype="f")
        return {k: np.dtype(v).name for k, v in a.dtypes.items()}

    @check("archive_works")
    def _():
        archive = GridArchive(solution_dim=3, dims=[10, 20], ranges=[(-1, 1), (-2, 2)],
                              seed=3)
        res = archive.add(np.ones((4, 3)), [1.0, 2.0, 3.0, 0.5],
                          [[0.25, 0.25], [0.25, 0.25], [-0.9, 1.9], [0.9, -1.9]])
        single = archive.add_single(np.zeros(3), 10.0, [0.25, 0.25])
        stats = archive.stats
        occ, ret = archive.retrieve([[0.25, 0.25], [0.0, 0.0]])
        best = archive.best_elite
        sample = archive.sample_elites(3)
        df = archive.data(return_type="pandas")
        return {
            "status": res["status"].tolist(),
            "value": res["value"].tolist(),
            "value_dtype": res["value"].dtype.name,
            "single_status": int(single["status"]),
            "single_value": float(single["value"]),
            "index_131": int(archive.index_of_single([0.25, 0.25])),
            "len": len(archive),
            "num_elites_type": type(stats.num_elites).__name__,
            "stat_dtypes": [np.asarray(getattr(stats, n)).dtype.name for n in
                            ["coverage", "qd_score", "norm_qd_score", "obj_max",
                             "obj_mean"]],
            "qd_score": float(stats.qd_score),
            "obj_max": float(stats.obj_max),
            "occupied": occ.tolist(),
            "retrieved_objective": [None if np.isnan(x) else float(x)
                                    for x in ret["objective"]],
            "best_objective": float(best["objective"]),
            "best_dtype": np.asarray(best["solution"]).dtype.name,
            "sample_dtype": sample["solution"].dtype.name,
            "pandas_dtypes": [str(t) for t in df.dtypes],
            "data_index": archive.data("index").tolist(),
        }

    @check("cma_mae_example")
    def _():
        archive = GridArchive(solution_dim=1, dims=[2], ranges=[(0, 2)],
                              learning_rate=0.1, threshold_min=-1.0)
        res = archive.add(np.zeros((6, 1)), [0.0, 1.0, 2.0, 10.0, 100.0, -10.0],
                          [[0.5]] * 3 + [[1.5]] * 3)
        return {"status": res["status"].tolist(), "value": res["value"].tolist(),
                "threshold": archive.data("threshold").tolist(),
                "threshold_dtype": archive.data("threshold").dtype.name}

    @check("bins")
    def _():
        archive = GridArchive(solution_dim=1, dims=[10], ranges=[(0, 0.1)])
        values = [0.00, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1,
                  0.11, -0.01]
        return [int(archive.index_of_single([v])) for v in values]

    @check("matches_ribs_float32")
    def _():
        rng = np.random.default_rng(0)
        kwargs = dict(solution_dim=2, dims=[5, 4], ranges=[(-1, 1), (0, 2)], seed=9)
        ours = GridArchive(**kwargs)
        theirs = ribs.archives.GridArchive(dtype=np.float32, **kwargs)
        mismatches = []
        for step in range(8):
            sol = rng.normal(size=(6, 2))
            obj = np.round(rng.normal(size=6) * 2) / 2
            meas = rng.uniform([-1.2, -0.2], [1.2, 2.2], size=(6, 2))
            a, b = ours.add(sol, obj, meas), theirs.add(sol, obj, meas)
            if not np.array_equal(a["status"], b["status"]):
                mismatches.append(("status", step))
            if not np.allclose(a["value"], b["value"], rtol=1e-6):
                mismatches.append(("value", step))
            if not np.array_equal(ours.data("index"), theirs.data("index")):
                mismatches.append(("data", step))
            if not np.allclose(ours.stats.qd_score, theirs.stats.qd_score, rtol=1e-5):
                mismatches.append(("qd_score", step))
        if not np.array_equal(ours.sample_elites(5)["index"],
                              theirs.sample_elites(5)["index"]):
            mismatches.append(("sample", -1))
        grid = np.stack(np.meshgrid(ours.boundaries[0], ours.boundaries[1]),
                        axis=-1).reshape(-1, 2).astype(np.float32)
        if not np.array_equal(ours.index_of(grid), theirs.index_of(grid)):
            mismatches.append(("boundary_index", -1))
        return mismatches

    @check("traced_stats_equal_archive_stats")
    def _():
        # The fused loop's statistics (jax.numpy, float32 arithmetic without x64)
        # against the archive objects' (NumPy, pyribs' float64 coverage division).
        import jax.numpy as jnp
        from ribsax.archives._archive_stats import (STAT_NAMES, stats_metrics,
                                                    stats_values, summary_stats)
        rng = np.random.default_rng(1)
        cells, offset = 999, np.float32(-3.7)
        n = rng.integers(0, cells + 1, size=300).astype(np.int32)
        n[0] = 0
        total = (rng.normal(size=300) * 1000).astype(np.float32) * (n > 0)
        best = (rng.normal(size=300) * 100).astype(np.float32)
        traced = jax.device_get(jax.jit(jax.vmap(
            lambda c, t, b: stats_values(c, cells, t, offset, b, dtype=np.float32,
                                         xp=jnp)))(n, total, best))
        differ = []
        for i in range(len(n)):
            host = stats_metrics(summary_stats(int(n[i]), cells, total[i], offset,
                                               best[i] if n[i] else None,
                                               np.float32))
            for name in STAT_NAMES:
                if not np.array_equal(traced[name][i], host[name], equal_nan=True):
                    differ.append((name, int(n[i])))
        return {"differ": differ[:10], "empty_nan": bool(
            np.isnan(traced["obj_max"][0]) and np.isnan(traced["obj_mean"][0])),
                "dtype": traced["coverage"].dtype.name}

    @check("array_store_float64_no_downcast")
    def _():
        store = ArrayStore({"x": ((), np.float64), "y": ((2,), np.float32)}, 4)
        value = 1.0 + 2.0 ** -40  # Not representable in float32.
        store.add([1], {"x": np.array([value]), "y": np.ones((1, 2), np.float32)})
        data = store.data()
        return {"dtype": data["x"].dtype.name, "exact": bool(data["x"][0] == value),
                "y_dtype": data["y"].dtype.name}

    print("RESULT" + json.dumps(out))
""")


@pytest.fixture(scope="module")
def results():
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["JAX_PLATFORMS"] = env.get("JAX_PLATFORMS", "cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    line = [out for out in proc.stdout.splitlines() if out.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT") :])


def _ok(results, name):
    entry = results[name]
    assert entry["ok"], entry.get("tb")
    return entry["result"]


def test_x64_is_off_in_subprocess(results):
    assert _ok(results, "x64") is False


def test_default_dtype_is_float32(results):
    assert _ok(results, "default_dtypes") == {
        "solution": "float32",
        "objective": "float32",
        "measures": "float32",
        "threshold": "float32",
        "index": "int32",
    }


@pytest.mark.parametrize(
    "key", ["dtype_float64", "dtype_d", "solution_float64", "objective_float64", "measures_float64"]
)
def test_explicit_float64_raises_clear_error(results, key):
    msg = results["err_" + key]
    assert msg is not None, f"{key}: float64 accepted without x64 (silent downcast?)"
    assert "float64" in msg
    assert "64-bit" in msg
    assert "jax_enable_x64" in msg
    assert "float32" in msg  # Suggests the alternative.


def test_explicit_float32_accepted(results):
    assert _ok(results, "float32_explicit_ok")["objective"] == "float32"


def test_archive_works_in_float32(results):
    r = _ok(results, "archive_works")
    assert r["status"] == [2, 2, 2, 2]
    assert r["value"] == [1.0, 2.0, 3.0, 0.5]
    assert r["value_dtype"] == "float32"
    assert r["single_status"] == 1 and r["single_value"] == 8.0
    assert r["index_131"] == 131
    assert r["len"] == 3
    assert r["num_elites_type"] == "int"
    assert r["stat_dtypes"] == ["float32"] * 5
    assert r["qd_score"] == pytest.approx(13.5)
    assert r["obj_max"] == 10.0
    assert r["occupied"] == [True, False]
    assert r["retrieved_objective"] == [10.0, None]
    assert r["best_objective"] == 10.0
    assert r["best_dtype"] == "float32" and r["sample_dtype"] == "float32"
    assert r["pandas_dtypes"] == ["float32"] * 7 + ["int32"]
    assert r["data_index"] == [19, 131, 180]


def test_cma_mae_example_in_float32(results):
    r = _ok(results, "cma_mae_example")
    assert r["status"] == [2, 2, 2, 2, 2, 0]
    assert r["value"] == pytest.approx([1.0, 2.0, 3.0, 11.0, 101.0, -9.0])
    assert r["threshold"] == pytest.approx([-0.458, 9.64], rel=1e-6)
    assert r["threshold_dtype"] == "float32"


def test_values_go_to_correct_bin_float32(results):
    assert _ok(results, "bins") == list(range(10)) + [9, 9, 0]


def test_matches_ribs_float32(results):
    assert _ok(results, "matches_ribs_float32") == []


def test_array_store_keeps_float64_fields(results):
    r = _ok(results, "array_store_float64_no_downcast")
    assert r == {"dtype": "float64", "exact": True, "y_dtype": "float32"}


def test_traced_stats_equal_archive_stats_in_float32(results):
    r = _ok(results, "traced_stats_equal_archive_stats")
    assert r["differ"] == []
    assert r["empty_nan"]
    assert r["dtype"] == "float32"
