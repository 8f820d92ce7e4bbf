"""Smoke tests for benchmarks/call_floor.py (usage errors, one tiny run)."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(_DIR))
_SPEC = importlib.util.spec_from_file_location("call_floor", _DIR / "call_floor.py")
call_floor = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(call_floor)


def test_unknown_configuration_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        call_floor.main(["--configs", "map_elites,cma_me_imp"])
    assert "'cma_me_imp' is not one of" in capsys.readouterr().err


def test_tiny_dqd_run_prints_three_loops(capsys):
    assert call_floor.main(["--configs", "omg_mega", "--iterations", "2",
                            "--rounds", "1"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    numbers = [float(x) for x in re.findall(r"[0-9]+\.[0-9]+", row)]
    assert row.startswith("| omg_mega |")
    # pyribs, ribsax (ratio), structure (ratio): all positive, ratios consistent
    # (up to the rounding of the printed times).
    assert len(numbers) == 5 and min(numbers) > 0
    assert numbers[2] == pytest.approx(numbers[0] / numbers[1], rel=0.05, abs=0.02)
    assert numbers[4] == pytest.approx(numbers[0] / numbers[3], rel=0.05, abs=0.02)
