"""CI runs the shared ASL conformance corpora (shared/asl-conformance and
shared/asl-conformance-jsonata, next to the repo) on the local target through
tools/asl_conformance.py; every non-excluded unit must pass."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CANDIDATES = [ROOT.parent / "shared" / "asl-conformance", Path("/work/shared/asl-conformance")]
CORPUS = next((p for p in CANDIDATES if (p / "index.json").exists()), None)
JSONATA_CANDIDATES = [ROOT.parent / "shared" / "asl-conformance-jsonata",
                      Path("/work/shared/asl-conformance-jsonata")]
JSONATA_CORPUS = next((p for p in JSONATA_CANDIDATES if (p / "index.json").exists()), None)


@pytest.mark.timeout(600)
@pytest.mark.skipif(CORPUS is None, reason="ASL conformance corpus (shared/asl-conformance) not found "
                    "next to the repository")
def test_asl_conformance_corpus_passes():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "asl_conformance.py"), str(CORPUS)],
                          capture_output=True, text=True, timeout=590, cwd=ROOT)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["total"] >= 700, summary["groups"]
    assert summary["failures"] == [], summary["failures"][:10]
    assert summary["groups"]["choice_operators"]["passed"] == summary["groups"]["choice_operators"]["total"]
    assert proc.returncode == 0, proc.stdout[-2000:]


@pytest.mark.timeout(600)
@pytest.mark.skipif(JSONATA_CORPUS is None, reason="ASL JSONata conformance corpus "
                    "(shared/asl-conformance-jsonata) not found next to the repository")
def test_asl_jsonata_conformance_corpus_passes():
    """JSONata and variables: every case passes on the local target (also checking the
    QueryEvaluationError state/field/expression), and in the interpreter, which also
    reports and checks the `assigned_variables` trace."""
    for extra in ([], ["--executor", "inline"]):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "asl_conformance.py"),
                               str(JSONATA_CORPUS), *extra],
                              capture_output=True, text=True, timeout=290, cwd=ROOT)
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert summary["total"] >= 100, summary["groups"]
        assert summary["failures"] == [], (extra, summary["failures"][:10])
        assert summary["passed"] + len(summary["excluded"]) == summary["total"]
        assert proc.returncode == 0, proc.stdout[-2000:]


def test_runner_works_on_another_directory_with_the_layout(tmp_path):
    """The runner needs only the layout (no index.json): a two-case corpus of our own, one
    passing and one whose expected result is deliberately wrong."""
    (tmp_path / "_stubs").mkdir()
    (tmp_path / "_stubs" / "double.py").write_text("def handler(event, context):\n    return event * 2\n")
    arn = "arn:aws:lambda:us-east-1:000000000000:function:double"
    sm = {"StartAt": "D", "States": {"D": {"Type": "Task", "Resource": arn, "End": True}}}
    for name, want in (("ok", 42), ("wrong", 41)):
        d = tmp_path / "mine" / name
        d.mkdir(parents=True)
        (d / "definition.json").write_text(json.dumps(sm))
        (d / "input.json").write_text("21")
        (d / "expected.json").write_text(json.dumps({"status": "SUCCEEDED", "output": want}))
        (d / "case.json").write_text(json.dumps({"stubs": ["double"], "flags": []}))
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "asl_conformance.py"), str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["passed"] == 1 and summary["total"] == 2
    assert summary["groups"] == {"mine": {"passed": 1, "total": 2}}
    assert [f["case"] for f in summary["failures"]] == ["mine/wrong"]
    assert proc.returncode == 1
