"""Evaluation of the brax task ant_omni (one compilation, tiny episodes)."""

from tests.tasks.brax._helpers import check_task


def test_ant_omni():
    check_task("ant_omni", 2)
