"""Large batches, in any memory layout, match pyribs and compile one kernel."""

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import CVTArchive, GridArchive
from tests.archives.alignment_helpers import at_offset
from tests.compile_counter import count_compilations


def _assert_same_contents(ours, theirs, names=("solution",)):
    da, db = ours.data(), theirs.data()
    for name in db:
        np.testing.assert_array_equal(da[name], db[name], err_msg=name)
    for name in names:
        np.testing.assert_array_equal(ours.best_elite[name], theirs.best_elite[name])


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("kind", ["grid", "cvt", "fine_grid"])
def test_large_batch_matches_ribs(kind, aligned):
    """Few winners for grid/cvt; most rows winning for fine_grid. The caller then
    overwrites its arrays, which must not change the archive."""
    rng = np.random.default_rng(7)
    batch, dim = 1500, 100
    if kind in ("grid", "fine_grid"):
        dims = [8, 8] if kind == "grid" else [200, 200]
        kwargs = dict(solution_dim=dim, dims=dims, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    else:
        centroids = rng.uniform(-1, 1, size=(50, 2))
        kwargs = dict(solution_dim=dim, centroids=centroids, ranges=[(-1, 1), (-1, 1)])
        ours, theirs = CVTArchive(**kwargs), ribs.archives.CVTArchive(**kwargs)
    for step in range(3):
        solution = rng.normal(size=(batch, dim))
        if aligned:
            solution = at_offset(solution, 0)
        objective = rng.normal(size=batch) + step
        measures = rng.uniform(-1.2, 1.2, size=(batch, 2))
        a = ours.add(solution, objective, measures)
        b = theirs.add(solution, objective, measures)
        np.testing.assert_array_equal(a["status"], b["status"])
        np.testing.assert_allclose(a["value"], b["value"])
        solution[:] = np.nan  # The caller reuses its array.
    _assert_same_contents(ours, theirs)


@pytest.mark.parametrize(
    "dtype, dims", [(np.float32, [12, 12]), (np.float64, [20, 20]), (np.float64, [40, 40])]
)
def test_batches_at_any_offset_match_ribs_and_compile_once(dtype, dims):
    """Batches (with a wide and a small extra field) at byte offsets that change
    from call to call, as strided views, or in another dtype, give pyribs' statuses,
    values and contents; after the first add nothing compiles again."""
    rng = np.random.default_rng(11)
    batch, dim = 600, 100
    extra = {"wide": ((20,), dtype), "tag": ((2,), dtype)}
    kwargs = dict(
        solution_dim=dim, dims=dims, ranges=[(-1, 1), (-1, 1)], extra_fields=extra, dtype=dtype
    )
    ours, theirs = GridArchive(**kwargs), ribs.archives.GridArchive(**kwargs)
    layouts = [16, 48, 8, 40, 0, "strided", "other_dtype", 16]
    with count_compilations() as compiled:
        for step, layout in enumerate(layouts):
            data = {
                "solution": rng.normal(size=(batch, dim)),
                "wide": rng.normal(size=(batch, 20)),
                "tag": rng.normal(size=(batch, 2)),
            }
            data = {name: values.astype(dtype) for name, values in data.items()}
            if layout == "strided":
                data = {name: np.repeat(values, 2, axis=0)[::2] for name, values in data.items()}
            elif layout == "other_dtype":
                other = np.float32 if dtype == np.float64 else np.float64
                data = {name: values.astype(other) for name, values in data.items()}
            else:
                data = {name: at_offset(values, layout) for name, values in data.items()}
            objective = rng.normal(size=batch).astype(dtype) + (step if step != 4 else -2)
            measures = rng.uniform(-1.2, 1.2, size=(batch, 2)).astype(dtype)
            a = ours.add(data["solution"], objective, measures, wide=data["wide"], tag=data["tag"])
            b = theirs.add(
                data["solution"], objective, measures, wide=data["wide"], tag=data["tag"]
            )
            np.testing.assert_array_equal(a["status"], b["status"])
            np.testing.assert_array_equal(a["value"], b["value"])
            for values in data.values():
                values[:] = np.nan
            if step == 0:
                first = compiled.count
    assert compiled.count == first
    _assert_same_contents(ours, theirs, names=("solution", "wide", "tag"))
