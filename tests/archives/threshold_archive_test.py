"""The add path of Grid, CVT and Categorical archives (ThresholdArchive): pyribs'
results through one compiled insertion kernel per batch size, compiled once."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import CategoricalArchive, CVTArchive, GridArchive
from tests.compile_counter import count_compilations

KWARGS = {"solution_dim": 3, "dims": [4, 5], "ranges": [(-1.0, 1.0), (0.0, 2.0)]}


def _batch(rng, n, dim=3, **extra):
    return {
        "solution": rng.normal(size=(n, dim)),
        "objective": rng.normal(size=n),
        "measures": rng.uniform([-1.2, -0.2], [1.2, 2.2], size=(n, 2)),
        **{name: rng.normal(size=(n, *shape)) for name, shape in extra.items()},
    }


def _add_to_both(ours, theirs, data):
    a, b = ours.add(**data), theirs.add(**data)
    np.testing.assert_array_equal(a["status"], b["status"])
    np.testing.assert_array_equal(a["value"], b["value"])


def _assert_same_contents(ours, theirs):
    a, b = ours.data(), theirs.data()
    assert list(a) == list(b)
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    for name, value in theirs.best_elite.items():
        np.testing.assert_array_equal(ours.best_elite[name], value, err_msg=name)
    # Sums in a different order: equal up to rounding.
    rtol = 1e-12 if ours.dtypes["objective"] == np.float64 else 1e-6
    np.testing.assert_allclose(ours.stats.qd_score, theirs.stats.qd_score, rtol=rtol)


def test_batches_of_one_size_compile_once():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(0)
    _add_to_both(ours, theirs, _batch(rng, 7))
    with count_compilations() as compiled:
        for _ in range(4):
            _add_to_both(ours, theirs, _batch(rng, 7))
        _assert_same_contents(ours, theirs)
    assert compiled.count == 0


def test_add_single_and_add_interleaved_match_ribs():
    kwargs = {**KWARGS, "learning_rate": 0.5, "threshold_min": 0.0}
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    rng = np.random.default_rng(1)
    for _ in range(3):
        _add_to_both(ours, theirs, _batch(rng, 1))
        row = {name: values[0] for name, values in _batch(rng, 1).items()}
        a, b = ours.add_single(**row), theirs.add_single(**row)
        assert a["status"] == b["status"] and a["value"] == b["value"]
    _assert_same_contents(ours, theirs)


def test_adds_after_retessellate_use_the_new_grid():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(2)
    for n in (3, 4, 5, 6):
        _add_to_both(ours, theirs, _batch(rng, n))
    ours.retessellate([3, 7])
    theirs.retessellate([3, 7])
    for _ in range(2):
        _add_to_both(ours, theirs, _batch(rng, 6))
    a, b = ours.data(), theirs.data()
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_missing_field_raises_as_pyribs_and_leaves_the_archive_usable():
    kwargs = {**KWARGS, "extra_fields": {"tag": ((2,), np.float64)}}
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    rng = np.random.default_rng(3)
    _add_to_both(ours, theirs, _batch(rng, 5, tag=(2,)))
    data = _batch(rng, 5)  # No "tag"; these objectives beat the elites.
    data["objective"] = np.full(5, 100.0)
    errors = []
    for archive in (ours, theirs):
        with pytest.raises(ValueError) as error:
            archive.add(**data)
        errors.append(str(error.value))
    assert errors[0] == errors[1]
    _add_to_both(ours, theirs, _batch(rng, 5, tag=(2,)))
    _assert_same_contents(ours, theirs)


def test_host_indexed_archive_matches_ribs():
    kwargs = {"solution_dim": 2, "categories": [["a", "b"], ["c", "d", "e"]]}
    ours = CategoricalArchive(**kwargs)
    theirs = ribs.archives.CategoricalArchive(**kwargs)
    rng = np.random.default_rng(6)
    for _ in range(2):
        data = {
            "solution": rng.normal(size=(4, 2)),
            "objective": rng.normal(size=4),
            "measures": np.array([["a", "c"], ["b", "e"], ["a", "c"], ["b", "d"]], dtype=object),
        }
        _add_to_both(ours, theirs, data)
    _assert_same_contents(ours, theirs)


def test_pickled_archive_adds_the_same_after():
    ours, theirs = GridArchive(**KWARGS), ribs.archives.GridArchive(**KWARGS)
    rng = np.random.default_rng(7)
    _add_to_both(ours, theirs, _batch(rng, 8))
    restored = pickle.loads(pickle.dumps(ours))
    _assert_same_contents(restored, theirs)
    data = _batch(rng, 8)
    _add_to_both(restored, theirs, data)
    ours.add(**data)
    _assert_same_contents(restored, theirs)
    _assert_same_contents(ours, theirs)


def _archive(kind, dtype, dim=20):
    ranges = [(-1.0, 1.0), (-1.0, 1.0)]
    if kind == "grid":
        return GridArchive(solution_dim=dim, dims=[100, 100], ranges=ranges, dtype=dtype)
    centroids = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 2))
    return CVTArchive(solution_dim=dim, centroids=centroids, ranges=ranges, dtype=dtype)


@pytest.mark.parametrize("kind", ["grid", "cvt"])
@pytest.mark.parametrize("batch", [540, 10_000])
def test_add_only_loop_compiles_nothing_after_the_first_add(kind, batch):
    """40 adds of float64 NumPy batches (fresh arrays each time, so their memory
    layout varies; every fourth a float32 copy or a strided view) into an archive
    that fills up: one compilation, at the first add."""
    archive = _archive(kind, np.float64)
    rng = np.random.default_rng(5)
    counts = []
    with count_compilations() as compiled:
        for step in range(40):
            solution = rng.normal(size=(batch, 20))
            measures = rng.uniform(-1, 1, size=(batch, 2))
            objective = -np.sum(solution**2, axis=1) + 0.1 * step
            if step % 4 == 1:
                solution = solution.astype(np.float32)
            elif step % 4 == 3:
                solution = np.repeat(solution, 2, axis=0)[::2]
            archive.add(solution, objective, measures)
            counts.append(compiled.count)
    assert counts[0] >= 1
    assert counts[-1] == counts[0], counts
    assert archive.stats.coverage > 0.05


_X64_OFF_SCRIPT = textwrap.dedent(r"""
    import json, sys
    import numpy as np
    from ribsax.archives import CVTArchive, GridArchive
    sys.path.insert(0, ".")
    from tests.compile_counter import count_compilations
    out = {}
    centroids = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 2))
    for kind in ("grid", "cvt"):
        for batch in (540, 10_000):
            if kind == "grid":
                archive = GridArchive(solution_dim=20, dims=[100, 100],
                                      ranges=[(-1, 1), (-1, 1)])
            else:
                archive = CVTArchive(solution_dim=20, centroids=centroids,
                                     ranges=[(-1, 1), (-1, 1)])
            rng = np.random.default_rng(1)
            counts = []
            with count_compilations() as compiled:
                for step in range(40):
                    solution = rng.normal(size=(batch, 20))
                    archive.add(solution, -np.sum(solution**2, axis=1),
                                rng.uniform(-1, 1, size=(batch, 2)))
                    counts.append(compiled.count)
            out[f"{kind}_{batch}"] = [counts[0], counts[-1],
                                      str(archive.dtypes["solution"])]
    print(json.dumps(out))
""")


def test_add_only_loop_compiles_once_without_x64():
    """ribsax's float32 default, fed float64 NumPy batches (x64 off, in a fresh
    process): one compilation per archive and batch size."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", _X64_OFF_SCRIPT],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for case, (first, last, dtype) in out.items():
        assert dtype == "float32", case
        assert first >= 1 and last == first, (case, first, last)
