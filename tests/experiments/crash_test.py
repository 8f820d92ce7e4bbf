"""A run killed with SIGKILL (mid-run, or while writing a checkpoint) resumes to
the archive and metrics of an uninterrupted run (subprocesses)."""

import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from ribsax.experiments import Checkpointer, Experiment
from tests.child_env import REPO, child_env
from tests.experiments.experiment_test import assert_same_run

# Synchronous checkpoints, so that the checkpoint of iteration 3 is complete when
# the child dies at iteration 5 (a background write might still be in flight).
OVERRIDES = [
    "budget.iterations=8",
    "checkpoint.every_iterations=3",
    "logging.snapshot_every=4",
    "emitters.0.batch_size=30",
    "fused_chunk=3",
    "checkpoint.background=false",
]

# The child runs the config and kills itself with SIGKILL at the chosen point.
CHILD = textwrap.dedent("""
    import os, signal, sys
    import jax
    jax.config.update("jax_enable_x64", True)  # As the test process (conftest).
    from ribsax.experiments import Experiment
    from ribsax.schedulers import Scheduler
    logdir, loop, where, background = sys.argv[1:5]
    overrides = [*sys.argv[5:], f"checkpoint.background={background}"]

    def kill():
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "mid_run":
        # Die inside iteration 5 (after the checkpoint of iteration 3).
        calls = {"n": 0}
        method = "run" if loop == "fused" else "tell"
        original = getattr(Scheduler, method)
        def dying(self, *args, **kwargs):
            calls["n"] += 1
            if calls["n"] == (2 if loop == "fused" else 5):
                kill()
            return original(self, *args, **kwargs)
        setattr(Scheduler, method, dying)
    else:
        # Die in orbax's commit of checkpoint 6: its files are written into the
        # temporary directory but the final rename has not happened. (orbax
        # internals: the atomic rename of AtomicRenameTemporaryPath.)
        from orbax.checkpoint._src.path import async_path
        rename = async_path.rename
        async def dying_rename(src, dst):
            if os.path.basename(str(dst)) == "6":
                kill()
            return await rename(src, dst)
        async_path.rename = dying_rename
    Experiment("sphere_map_elites_test", [*overrides, f"loop={loop}"],
               logdir=logdir, quiet=True).run()
""")


def _run_child(logdir, loop, where, background="false"):
    env = child_env()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(logdir), loop, where, background, *OVERRIDES],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]


@pytest.fixture(scope="module", params=["ask_tell", "fused"])
def uninterrupted(request, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("uninterrupted") / "run"
    experiment = Experiment(
        "sphere_map_elites_test", [*OVERRIDES, f"loop={request.param}"], logdir=logdir, quiet=True
    )
    experiment.run()
    return request.param, experiment


def test_sigkill_mid_run_then_resume_equals_uninterrupted(uninterrupted, tmp_path):
    loop, expected = uninterrupted
    logdir = tmp_path / "run"
    _run_child(logdir, loop, "mid_run")
    assert Checkpointer(logdir / "checkpoints").steps == [3]
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 3
    resumed.run()
    assert_same_run(expected, resumed)
    pd.testing.assert_frame_equal(
        pd.read_csv(logdir / "metrics.csv").drop(columns="elapsed_s"),
        expected.metrics.drop(columns="elapsed_s"),
    )


# The checkpoint write does not depend on the loop; it does on orbax's mode.
@pytest.mark.parametrize("uninterrupted", ["ask_tell"], indirect=True)
@pytest.mark.parametrize("background", ["false", pytest.param("true", marks=pytest.mark.slow)])
def test_kill_during_checkpoint_write_keeps_the_previous_one(uninterrupted, tmp_path, background):
    loop, expected = uninterrupted
    logdir = tmp_path / "run"
    _run_child(logdir, loop, "checkpoint_write", background)
    leftovers = [p.name for p in (logdir / "checkpoints").iterdir()]
    assert any(name.startswith("6") and name != "6" for name in leftovers), leftovers
    assert Checkpointer(logdir / "checkpoints").steps == [3]
    resumed = Experiment.resume(logdir, quiet=True)
    assert resumed.iteration == 3
    resumed.run()
    assert_same_run(expected, resumed)
    assert Checkpointer(logdir / "checkpoints").steps == [3, 6, 8]
