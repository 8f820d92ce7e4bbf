"""Smoke tests for benchmarks/call_floor.py (usage errors, one tiny run)."""

import re

import pytest

from tests.examples._benchmarks import load_benchmark

call_floor = load_benchmark("call_floor")


def test_unknown_configuration_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        call_floor.main(["--configs", "map_elites,cma_me_imp"])
    assert "'cma_me_imp' is not one of" in capsys.readouterr().err


def test_tiny_dqd_run_prints_four_loops(capsys):
    assert call_floor.main(["--configs", "omg_mega", "--iterations", "2", "--rounds", "1"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    numbers = [float(x) for x in re.findall(r"[0-9]+\.[0-9]+", row)]
    assert row.startswith("| omg_mega |")
    # pyribs, then ribsax, structure and structure + tells, each with its ratio:
    # all positive, ratios consistent (up to the rounding of the printed times).
    assert len(numbers) == 7 and min(numbers) > 0
    for time_at in (1, 3, 5):
        assert numbers[time_at + 1] == pytest.approx(
            numbers[0] / numbers[time_at], rel=0.05, abs=0.02
        )


def test_bandit_configuration_has_no_structure_with_tells(capsys):
    assert (
        call_floor.main(["--configs", "me_map_elites", "--iterations", "1", "--rounds", "1"]) == 0
    )
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row.startswith("| me_map_elites |") and row.rstrip(" |").endswith("n/a")
