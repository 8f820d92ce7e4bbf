"""Smoke tests for benchmarks/fused_roofline.py (byte model, attribution, usage
errors, one tiny run of both configurations)."""

import json

import pytest

from tests.examples._benchmarks import load_benchmark

fused_roofline = load_benchmark("fused_roofline")


def test_byte_model_terms():
    # B = 8, D = 3, C = 5, m = 2, s = 4: at most min(B, C) = 5 winning rows.
    terms = fused_roofline.byte_model(8, 3, 5, measure_dim=2, itemsize=4, index_bytes=40)
    assert terms == {
        "ask_parents": 8 * 3 * 4 + 8 * 4,
        "ask_offspring": 8 * 3 * 4,
        "eval_read": 8 * 3 * 4,
        "eval_write": 8 * 3 * 4,
        "add_rows": 8 * 3 * 4 + 8 * 8,
        "add_cells": 2 * 5 * 12 + 40,
        "add_winners": 5 * 3 * 4 + 5 * 7 * 4,
        "metrics": 5 * 8,
    }
    # The H200 case: about 89 MB, i.e. about 18.5 microseconds at 4.8 TB/s.
    total = sum(fused_roofline.byte_model(65_536, 100, 10_000).values())
    assert 85e6 < total < 95e6
    assert fused_roofline.roofline_ms(total, 4800) == pytest.approx(total / 4.8e9)


def test_attribution_adds_up():
    ms = {"ask": 0.5, "evaluate": 0.2, "add": 0.4, "metrics": 0.11, "loop": 0.1}
    parts = fused_roofline.attribute(ms, 1.0)
    assert parts["ask"]["net_ms"] == pytest.approx(0.4)
    assert parts["loop"]["net_ms"] == pytest.approx(0.1)
    assert parts["rest"]["net_ms"] == pytest.approx(1.0 - 0.4 - 0.1 - 0.3 - 0.01 - 0.1)
    assert sum(p["share"] for p in parts.values()) == pytest.approx(1.0)


def test_unknown_configuration_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        fused_roofline.main(["--configs", "grid,sliding"])
    assert "unknown configuration 'sliding'" in capsys.readouterr().err


def test_tiny_run_writes_json(tmp_path, capsys):
    path = tmp_path / "roofline.json"
    assert (
        fused_roofline.main(
            [
                "--batch",
                "64",
                "--dim",
                "4",
                "--iterations",
                "3",
                "--rounds",
                "1",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| config | batch | dim |" in out and "| (c) archive add |" in out
    results = json.loads(path.read_text())["results"]
    assert [r["config"] for r in results] == ["grid", "cvt"]
    for r in results:
        assert (r["batch"], r["dim"], r["cells"]) == (64, 4, 10_000)
        assert r["recompiles_after_warmup"] == 0
        assert r["ms_per_iter"] > 0 and r["roofline_ms"] > 0 and r["ratio"] > 0
        assert r["compile_s"] > 0
        assert set(r["bytes"]) == {
            "ask_parents",
            "ask_offspring",
            "eval_read",
            "eval_write",
            "add_rows",
            "add_cells",
            "add_winners",
            "metrics",
        }
        assert r["bytes_total"] == sum(r["bytes"].values())
        assert r["roofline_ms"] == pytest.approx(r["bytes_total"] / 4.8e9)
        assert set(r["components"]) == {"ask", "evaluate", "add", "metrics", "loop", "rest"}
        for name in ("ask", "evaluate", "add", "metrics", "loop"):
            assert r["components"][name]["ms"] > 0
        assert sum(p["share"] for p in r["components"].values()) == pytest.approx(1)
        assert 0 < r["measured_inserted_rows"] <= r["max_inserted_rows"] == 64
