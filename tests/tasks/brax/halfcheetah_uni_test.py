"""Evaluation of the brax task halfcheetah_uni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_halfcheetah_uni():
    check_task("halfcheetah_uni", 2)
