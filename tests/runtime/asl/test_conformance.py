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
# a backstop only: a stuck run ends at the runner's stall limit (unumctl_testing/asl_conformance.py
# STALL_S, no session of a batch finishing); a loaded machine makes a healthy run take minutes
# (706 units: 66 s at load 4, 406 s at load 20)
RUN_LIMIT_S = 1800


@pytest.mark.timeout(RUN_LIMIT_S + 30)
@pytest.mark.skipif(CORPUS is None, reason="ASL conformance corpus (shared/asl-conformance) not found "
                    "next to the repository")
def test_asl_conformance_corpus_passes():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "asl_conformance.py"), str(CORPUS)],
                          capture_output=True, text=True, timeout=RUN_LIMIT_S, cwd=ROOT)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["total"] >= 700, summary["groups"]
    assert summary["failures"] == [], summary["failures"][:10]
    assert summary["groups"]["choice_operators"]["passed"] == summary["groups"]["choice_operators"]["total"]
    assert proc.returncode == 0, proc.stdout[-2000:]


@pytest.mark.timeout(RUN_LIMIT_S + 30)
@pytest.mark.skipif(JSONATA_CORPUS is None, reason="ASL JSONata conformance corpus "
                    "(shared/asl-conformance-jsonata) not found next to the repository")
def test_asl_jsonata_conformance_corpus_passes():
    """JSONata and variables: every case passes on the local target (also checking the
    QueryEvaluationError state/field/expression), and in the interpreter, which also
    reports and checks the `assigned_variables` trace."""
    for extra in ([], ["--executor", "inline"]):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "asl_conformance.py"),
                               str(JSONATA_CORPUS), *extra],
                              capture_output=True, text=True, timeout=RUN_LIMIT_S // 2, cwd=ROOT)
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


class _Platform:
    """A platform whose sessions finish at given times of a virtual clock (the local
    platform's wait_result/result pair, as unumctl_testing/asl_conformance.py uses it)."""

    def __init__(self, finish: dict[str, float]):
        self.finish, self.now = finish, 0.0

    def result(self, session):
        return {"status": "SUCCEEDED", "v": session} if self.finish[session] <= self.now else None

    def wait_result(self, session, timeout):
        if self.finish[session] <= self.now + timeout:
            self.now = max(self.now, self.finish[session])
            return self.result(session)
        self.now += timeout
        raise TimeoutError(session)


def test_a_batch_that_keeps_finishing_is_waited_for_past_any_fixed_deadline():
    """Five sessions finishing 100 s apart (a loaded machine): every one gets its result with
    a stall limit of 150 s, though the last ends at 500 s (past the 300 s batch deadline
    that timed out choice-operator units under load)."""
    from unumctl_testing.asl_conformance import wait_results

    plat = _Platform({f"s{i}": 100.0 * i for i in range(1, 6)})
    got = wait_results(plat, {f"u{i}": f"s{i}" for i in range(1, 6)}, stall=150, clock=lambda: plat.now)
    assert got == {f"u{i}": {"status": "SUCCEEDED", "v": f"s{i}"} for i in range(1, 6)}
    assert plat.now == 500


def test_a_stuck_batch_times_out_its_unfinished_units_after_the_stall_limit():
    from unumctl_testing.asl_conformance import wait_results

    plat = _Platform({"a": 10.0, "b": 20.0, "stuck": float("inf")})
    got = wait_results(plat, {"ua": "a", "stuck": "stuck", "ub": "b"}, stall=30, clock=lambda: plat.now)
    assert got == {"ua": {"status": "SUCCEEDED", "v": "a"}, "ub": {"status": "SUCCEEDED", "v": "b"},
                   "stuck": None}
    assert 50 <= plat.now <= 51
