"""bench/compare.py, the benchmarks' regression guard: it passes the committed baseline
against itself, fails (exit 1, the metric named) on a regression injected into a copy past
the tolerance, and on a missing metric; within the tolerance it passes. And bench/run_all.py
reads every JSON value a step prints, one line or indented."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


compare = _module("compare")
run_all = _module("run_all")
BASELINE = json.loads((ROOT / "bench" / "baseline.json").read_text())


def _run(tmp_path: Path, result: dict, *extra: str) -> int:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    return compare.main([str(path), "--baseline", str(ROOT / "bench" / "baseline.json"), *extra])


def test_the_baseline_states_its_machine_load_and_has_timed_and_counted_metrics():
    m = BASELINE["machine"]
    assert len(m["loadavg_start"]) == 3 and len(m["loadavg_end"]) == 3 and m["cpus"] >= 1
    assert "chain_safe_over_floor" in BASELINE["metrics"]
    assert any(k.startswith("ops.") for k in BASELINE["metrics"])


def test_the_baseline_against_itself_passes(tmp_path, capsys):
    assert _run(tmp_path, BASELINE) == 0
    out = capsys.readouterr().out
    assert f"no regression in {len(BASELINE['metrics'])} metrics" in out
    assert str(BASELINE["machine"]["loadavg_start"]) in out  # the load is printed


@pytest.mark.parametrize("factor, code", [(1.4, 0), (1.6, 1)])
def test_an_injected_regression_fails_past_the_tolerance(tmp_path, capsys, factor, code):
    result = copy.deepcopy(BASELINE)
    result["metrics"]["chain_safe_over_floor"] *= factor
    assert _run(tmp_path, result) == code  # default tolerance 0.5
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("chain_safe_over_floor"))
    assert line.endswith("REGRESSION") == bool(code), line


def test_a_smaller_tolerance_catches_a_smaller_regression_and_a_missing_metric_fails(tmp_path, capsys):
    result = copy.deepcopy(BASELINE)
    name = next(k for k in result["metrics"] if k.startswith("ops."))
    result["metrics"][name] += 0.5 * result["metrics"][name] or 1
    assert _run(tmp_path, result, "--tolerance", "0.1") == 1
    result = copy.deepcopy(BASELINE)
    del result["metrics"]["chain_safe_over_floor"]
    assert _run(tmp_path, result) == 1
    assert "MISSING" in capsys.readouterr().out


def test_an_unreadable_result_is_one_line(tmp_path, capsys):
    (tmp_path / "result.json").write_text("{not json")
    assert compare.main([str(tmp_path / "result.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "result.json: cannot read a bench result" in err[0]


def test_run_all_reads_every_json_value_a_step_prints():
    text = 'heading\n{"a": 1}\n$ text [not json\n{\n  "b": {"c": [1, 2]}\n}\n[3]\n'
    assert run_all.json_values(text) == [{"a": 1}, {"b": {"c": [1, 2]}}, [3]]
