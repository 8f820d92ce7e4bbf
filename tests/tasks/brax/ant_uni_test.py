"""Evaluation of the brax task ant_uni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_ant_uni():
    check_task("ant_uni", 4)
