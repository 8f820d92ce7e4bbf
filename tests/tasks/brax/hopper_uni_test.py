"""Evaluation of the brax task hopper_uni, also through the NumPy bridge."""

import numpy as np

from tests.tasks.brax._helpers import BATCH, check_task, random_policies


def test_hopper_uni():
    check_task("hopper_uni", 1)


def test_hopper_uni_numpy_evaluator():
    task, objective, measures, _ = check_task("hopper_uni", 1)  # Cached compile.
    x = np.asarray(random_policies(task))
    evaluator = task.numpy_evaluator(seed=0)
    obj_np, meas_np, extras = evaluator(x)
    assert isinstance(obj_np, np.ndarray) and obj_np.dtype == np.float64
    assert meas_np.shape == (BATCH, 1) and isinstance(extras["num_steps"], np.ndarray)
    np.testing.assert_array_equal(obj_np, objective)
    np.testing.assert_array_equal(meas_np, measures)
    # Each call splits the evaluator's key; resets are deterministic, so the
    # results stay identical.
    np.testing.assert_array_equal(evaluator(x)[0], obj_np)
