"""Evaluation of the brax task humanoid_uni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_humanoid_uni():
    check_task("humanoid_uni", 2)
