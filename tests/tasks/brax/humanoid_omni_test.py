"""Evaluation of the brax task humanoid_omni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_humanoid_omni():
    check_task("humanoid_omni", 2)
