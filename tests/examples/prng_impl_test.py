"""Smoke tests for benchmarks/prng_impl.py (implementation names, one tiny run)."""

import pytest

from ribsax._philox import PHILOX4X32
from tests.examples._benchmarks import load_benchmark

prng_impl = load_benchmark("prng_impl")


def test_impl_names():
    assert prng_impl.impl_object(prng_impl.OURS) is PHILOX4X32
    assert prng_impl.impl_object("threefry2x32") == "threefry2x32"


def test_unknown_impl_is_a_usage_error():
    with pytest.raises(SystemExit):
        prng_impl.main(["--impls", "no_such_prng", "--configs", "map_elites"])


def test_tiny_run_prints_both_loops(capsys):
    import ribsax._utils

    before = ribsax._utils.KERNEL_PRNG_IMPL
    assert (
        prng_impl.main(
            [
                "--configs",
                "map_elites",
                "--iterations",
                "1",
                "--rounds",
                "1",
                "--warmup",
                "1",
                "--repeats",
                "1",
                "--dtype",
                "float32",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| map_elites | threefry2x32 |" in out
    assert f"| map_elites | {prng_impl.OURS} |" in out
    assert "| normal 540x100 |" in out
    assert ribsax._utils.KERNEL_PRNG_IMPL is before  # restored after the run
