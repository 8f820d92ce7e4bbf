"""The metrics of a run are the same numbers whether the run is fused or not.

``Scheduler.run`` records the archive statistics after every iteration: the fused
loop computes them in the compiled scan, the ask/tell loop (``fused=False``) reads
``archive.stats``. Both come from one function, so the same run gives identical
metric values, NaN ``obj_max`` / ``obj_mean`` of an empty archive included.
"""

import numpy as np
import pandas as pd
import pytest

from ribsax import functional as F
from ribsax.archives import GridArchive
from ribsax.archives._archive_stats import STAT_NAMES, stats_metrics
from ribsax.emitters import GaussianEmitter
from ribsax.schedulers import Scheduler
from ribsax.tasks import sphere
from tests.backend import assert_same_statistic

DIM = 4
TASK = sphere(DIM)


def map_elites(dtype=np.float64, **archive_kwargs):
    """MAP-Elites on the sphere; ``archive_kwargs`` go to the GridArchive."""
    archive = GridArchive(
        solution_dim=DIM,
        dims=(10, 10),
        ranges=TASK.measure_ranges,
        dtype=dtype,
        seed=5,
        **archive_kwargs,
    )
    emitter = GaussianEmitter(archive, sigma=0.5, x0=np.zeros(DIM), batch_size=12, seed=2)
    return Scheduler(archive, [emitter])


def run_both(build, iterations):
    fused, python = build(), build()
    r_fused = fused.run(TASK, iterations, seed=9)
    r_python = python.run(TASK, iterations, seed=9, fused=False)
    assert r_fused.fused and not r_python.fused
    return (fused, r_fused.metrics), (python, r_python.metrics)


def assert_identical(a: pd.DataFrame, b: pd.DataFrame):
    """Same columns, the statistics among them, and bit-identical values on the
    CPU (NaN where the other has NaN)."""
    assert list(a.columns) == list(b.columns)
    assert set(STAT_NAMES) <= set(a.columns)
    for name in a.columns:
        assert_same_statistic(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)


# 15 iterations: enough for XLA's rewrites (a division by the cell count turned into
# a multiplication by its reciprocal) to have been 1 ulp off NumPy in each case.
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"qd_score_offset": -3.3}, {"qd_score_offset": -3.3, "dtype": np.float32}],
    ids=["no_offset", "offset", "float32"],
)
def test_fused_and_ask_tell_metrics_are_identical(kwargs):
    (fused, a), (python, b) = run_both(lambda: map_elites(**kwargs), 15)
    assert_identical(a, b)
    # A non-trivial run: the archive fills up over the iterations.
    assert a["num_elites"].iloc[-1] > a["num_elites"].iloc[0] > 0
    assert np.isfinite(a["obj_max"]).all() and np.isfinite(a["obj_mean"]).all()
    # The last row is the archive's own stats, exactly.
    final = stats_metrics(python.archive.stats)
    assert final == stats_metrics(fused.archive.stats)
    for name in STAT_NAMES:
        assert a[name].iloc[-1] == final[name], name


@pytest.mark.filterwarnings("ignore:`archive` was empty")
def test_metrics_of_an_archive_that_stays_empty():
    # No sphere objective (in [0, 100]) reaches the threshold: nothing is inserted.
    (_, a), (python, b) = run_both(lambda: map_elites(threshold_min=1000.0, learning_rate=1.0), 3)
    assert_identical(a, b)
    assert python.archive.empty
    assert (a["num_elites"] == 0).all()
    for name in ("coverage", "qd_score", "norm_qd_score"):
        assert (a[name] == 0).all(), name
    assert a["obj_max"].isna().all() and a["obj_mean"].isna().all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fresh_archive_metrics_from_both_paths(dtype):
    scheduler = map_elites(dtype=dtype, qd_score_offset=-1.0)
    _, state = F.init(scheduler)
    traced = {name: np.asarray(value) for name, value in F.loop_stats(state.carry[0]).items()}
    stats = scheduler.archive.stats
    assert stats.obj_max is None and stats.obj_mean is None  # pyribs' convention.
    host = stats_metrics(stats)
    assert host["num_elites"] == traced["num_elites"] == 0
    for name in ("coverage", "qd_score", "norm_qd_score"):
        assert host[name] == traced[name] == 0, name
        assert traced[name].dtype == dtype, name
    for name in ("obj_max", "obj_mean"):
        assert np.isnan(host[name]) and np.isnan(traced[name]), name
        assert traced[name].dtype == dtype, name
