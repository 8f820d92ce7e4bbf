"""Evaluation of the brax task walker2d_uni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_walker2d_uni():
    check_task("walker2d_uni", 2)
