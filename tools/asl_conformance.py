"""ASL conformance runner: run every case of a corpus directory on the local target.

Usage: python tools/asl_conformance.py DIR [--json] [--group G] [--case SUBSTR] [--batch N]
                                           [--executor local|inline] [--fuse] [-v]

DIR has the layout of shared/asl-conformance (see its README.md): `index.json` (optional;
without it every directory holding a definition.json is a case), `_stubs/<name>.py`,
`<group>/<case>/{definition,input,expected,case}.json` and
`choice_operators/<Op>/{definition.json,cases.jsonl,case.json}`.

Each case is compiled by unumctl's Step Functions front-end into an app whose functions
are the case's stubs (the Lambda ARN's last segment names the stub) and run on the local
target (LocalRunner: worker processes, SQLite datastore; the executor is
unumctl_testing/asl_conformance.py). To amortise worker start-up,
cases are packed into batches: one app holds the functions of many cases (prefixed per
case) and one LocalRunner runs them all concurrently. Wait states and Retry intervals use
a virtual clock (UNUM_ASL_VIRTUAL_CLOCK=1 in the workers; the execution start time is
`execution_start_time` of case.json when given).

`--fuse` (issue 25) applies to every batch app the maximal plan: every fusible chain of
compiled Task functions fused (unumctl.tuning.colocate.fusible_chains; docs/fusion.md
"Compiled Step Functions"); a fused plan never changes what a workflow computes, so every
non-excluded unit must still pass. It also prints how many units had a fused group and how
many groups were fused (`make conformance-plans` runs both corpora so).

`--executor inline` runs the ASL interpreter in this process instead (a debugging aid; it
does not exercise compilation or the engine). It also checks the optional
`assigned_variables` trace (README rule 7), which only the in-process interpreter reports;
both executors check the optional `query_evaluation_error` state/field/expression (rule 6).

Prints pass/total per group and, as its last line, a JSON object
{"passed": N, "total": M, "groups": {group: {"passed": n, "total": m}}, "excluded": {...},
 "failures": [...]} (with --json also "cases": every unit with its outcome).
Exit status 0 when every non-excluded unit passed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from jsonpath_ng import Fields, Index, Root  # noqa: E402
from jsonpath_ng.ext import parse as jp_parse  # noqa: E402

# Cases we do not claim to pass, with the reason (see docs/stepfunctions.md).
EXCLUSIONS: dict[str, str] = {}


@dataclass
class Unit:
    """One execution to check: a case, or one line of a choice operator's cases.jsonl."""

    uid: str
    group: str
    definition: dict[str, Any]
    input: Any
    expected: dict[str, Any]
    meta: dict[str, Any]
    stubs: list[str] = field(default_factory=list)
    fused: list[list[str]] = field(default_factory=list)  # --fuse: the fused groups of its machine
    result: dict[str, Any] | None = None
    ok: bool = False
    reason: str = ""


# ---------------------------------------------------------------------------- loading
def load_units(corpus: Path, group: str | None = None, case: str | None = None) -> list[Unit]:
    """Read the corpus into Units (ordered by path)."""
    index = corpus / "index.json"
    if index.exists():
        entries = json.loads(index.read_text())["cases"]
        dirs = [(e["group"], corpus / e["path"]) for e in entries]
    else:
        dirs = sorted((p.parent.parent.name, p.parent) for p in corpus.glob("*/*/definition.json"))
    units: list[Unit] = []
    for grp, d in dirs:
        if group and grp != group:
            continue
        if case and case not in d.name:
            continue
        meta = json.loads((d / "case.json").read_text()) if (d / "case.json").exists() else {}
        definition = json.loads((d / "definition.json").read_text())
        stubs = list(meta.get("stubs", []))
        if (d / "cases.jsonl").exists():
            for i, line in enumerate((d / "cases.jsonl").read_text().splitlines()):
                if not line.strip():
                    continue
                rec = json.loads(line)
                units.append(Unit(f"{grp}/{d.name}#{i}", grp, rec.get("definition", definition),
                                  rec.get("input", {}), rec["expected"], meta, stubs))
        else:
            inp = json.loads((d / "input.json").read_text()) if (d / "input.json").exists() else {}
            units.append(Unit(f"{grp}/{d.name}", grp, definition, inp,
                              json.loads((d / "expected.json").read_text()), meta, stubs))
    return units


def stub_names(corpus: Path) -> list[str]:
    return sorted(p.stem for p in (corpus / "_stubs").glob("*.py"))


# ---------------------------------------------------------------------------- comparison
def _steps(path: str) -> list[Any]:
    steps: list[Any] = []

    def flat(node):
        if isinstance(node, Root):
            return
        left, right = getattr(node, "left", None), getattr(node, "right", None)
        if left is not None and right is not None:
            flat(left)
            flat(right)
        elif isinstance(node, Fields):
            steps.append(node.fields[0])
        elif isinstance(node, Index):  # jsonpath-ng >= 1.6 keeps `indices`
            steps.append(node.index if hasattr(node, "index") else node.indices[0])
        else:
            raise ValueError(f"unsupported normalised path {path!r}")

    flat(jp_parse(path))
    return steps


def _pop(doc: Any, steps: list[Any]) -> bool:
    """Delete the value at `steps`; False when it does not exist."""
    cur = doc
    for s in steps[:-1]:
        if isinstance(s, str) and isinstance(cur, dict) and s in cur:
            cur = cur[s]
        elif isinstance(s, int) and isinstance(cur, list) and -len(cur) <= s < len(cur):
            cur = cur[s]
        else:
            return False
    last = steps[-1]
    if isinstance(last, str) and isinstance(cur, dict) and last in cur:
        del cur[last]
        return True
    if isinstance(last, int) and isinstance(cur, list) and -len(cur) <= last < len(cur):
        cur[last] = None  # keep positions of the other elements
        return True
    return False


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """Apply the corpus comparison rules; returns '' on a match, else the reason."""
    if actual.get("status") != expected["status"]:
        return (f"status {actual.get('status')} != {expected['status']}"
                f" (error={actual.get('error')!r} cause={str(actual.get('cause'))[:300]!r})")
    if expected["status"] == "SUCCEEDED":
        exp = {"output": json.loads(json.dumps(expected.get("output")))}
        act = {"output": json.loads(json.dumps(actual.get("output")))}
        for path in expected.get("normalised_fields", []):
            steps = _steps(path)
            if not _pop(act, steps):
                return f"normalised field {path} missing in actual output {json.dumps(actual.get('output'))[:300]}"
            _pop(exp, steps)
        if not _equal(exp["output"], act["output"]):
            return (f"output {json.dumps(actual.get('output'), sort_keys=True)[:400]} != expected "
                    f"{json.dumps(expected.get('output'), sort_keys=True)[:400]}")
        for path, want in (expected.get("lambda_error_causes") or {}).items():
            got = _read_steps(actual, _steps(path))
            try:
                got = json.loads(got)
            except (TypeError, ValueError):
                return f"{path}: not a Lambda error cause: {got!r}"
            if got.get("errorType") != want["errorType"] or got.get("errorMessage") != want["errorMessage"]:
                return f"{path}: cause {got} != {want}"
        return ""
    if actual.get("error") != expected.get("error"):
        return f"error {actual.get('error')!r} != {expected.get('error')!r} (cause {str(actual.get('cause'))[:200]!r})"
    qe = compare_query_error(expected, actual)
    if qe:
        return qe
    check = expected.get("cause_check", "none")
    if check == "exact" and actual.get("cause") != expected.get("cause"):
        return f"cause {actual.get('cause')!r} != {expected.get('cause')!r}"
    if check == "lambda_error":
        try:
            cause = json.loads(actual.get("cause") or "")
        except ValueError:
            return f"cause is not JSON: {actual.get('cause')!r}"
        want = expected.get("cause_lambda_error", {})
        if cause.get("errorType") != want.get("errorType") or cause.get("errorMessage") != want.get("errorMessage"):
            return f"cause {cause} != {want}"
    return ""


_QEE_STATE = re.compile(r"An error occurred while executing the state '(?P<state>.*?)' "
                        r"\(entered at the event id #\d+\)\. (?P<rest>.*)", re.S)
_QEE_EXPR = "' specified for the field '"


def parse_query_error(cause: str) -> dict[str, str] | None:
    """Split an AWS-worded States.QueryEvaluationError cause into state, field, expression
    and problem (see the JSONata corpus README); None when it is not worded like AWS."""
    m = _QEE_STATE.match(cause or "")
    if not m:
        return None
    out = {"state": m.group("state")}
    rest = m.group("rest")
    head = "The JSONata expression '"
    if rest.startswith(head) and _QEE_EXPR in rest:
        expr, _, tail = rest[len(head):].rpartition(_QEE_EXPR)
        field, _, problem = tail.partition("' ")
        out.update(expression=expr, field=field, problem=problem)
    elif rest.startswith("The Timestamp field"):
        out.update(field="Timestamp", problem=rest)
    else:
        out["problem"] = rest
    return out


def compare_query_error(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """README rule 6: state, field and expression of a QueryEvaluationError cause."""
    want = expected.get("query_evaluation_error")
    if not want or actual.get("error") != "States.QueryEvaluationError":
        return ""
    got = parse_query_error(actual.get("cause") or "")
    if got is None:
        return f"QueryEvaluationError cause not worded like AWS: {actual.get('cause')!r}"
    for k in ("state", "field", "expression"):
        if k in want and got.get(k) != want[k]:
            return f"QueryEvaluationError {k} {got.get(k)!r} != {want[k]!r} (cause {actual.get('cause')!r})"
    return ""


def compare_assigned(expected: dict[str, Any], trace: list[tuple[str, Any]]) -> str:
    """README rule 7: the (state, variables) entries assigned, as a multiset, after deleting
    `assigned_variables.normalised_fields` from both sides."""
    want = expected.get("assigned_variables")
    if not want:
        return ""
    exp = {"assigned_variables": {"trace": json.loads(json.dumps(want.get("trace", [])))}}
    act = {"assigned_variables": {"trace": [{"state": s, "variables": json.loads(json.dumps(v))}
                                            for s, v in trace]}}
    for path in want.get("normalised_fields", []):
        steps = _steps(path)
        _pop(exp, steps)
        _pop(act, steps)
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    a = sorted(map(key, act["assigned_variables"]["trace"]))
    e = sorted(map(key, exp["assigned_variables"]["trace"]))
    if a != e:
        return f"assigned variables {a[:4]} != expected {e[:4]}"
    return ""


def _read_steps(doc, steps):
    for s in steps:
        try:
            doc = doc[s]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


# ---------------------------------------------------------------------------- executors
def _start_time(unit: Unit) -> float | None:
    t = unit.meta.get("execution_start_time")
    if not t:
        return None
    return _dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def run_inline(units: list[Unit], corpus: Path) -> None:
    """Debug executor: the ASL interpreter in this process, stubs imported directly."""
    from runtime.asl.errors import AslError
    from runtime.asl.machine import Machine, lambda_cause
    stubs = {}
    for name in stub_names(corpus):
        spec = importlib.util.spec_from_file_location(f"stub_{name}", corpus / "_stubs" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        stubs[name] = mod.handler
    for u in units:
        now = [_start_time(u) or time.time()]

        def invoke(fn, event):
            name = str(fn).rsplit(":", 1)[-1]
            if name not in stubs:
                raise AslError("Lambda.ResourceNotFoundException", f"Function not found: {fn}:$LATEST")
            try:
                return stubs[name](event, None)
            except Exception as exc:
                import traceback
                raise AslError(type(exc).__name__, lambda_cause(type(exc).__name__, str(exc),
                               traceback.format_exception(exc))) from None

        def sleep(s):
            now[0] += s

        m = Machine(u.definition, {"Id": "x", "Name": "x", "StartTime": "x", "Input": u.input,
                                   "StateMachine": {"Id": "sm", "Name": "sm"}},
                    clock=lambda: now[0], sleep=sleep, start_time=now[0])
        m.assign_log = []
        try:
            out = m.run_inline("", u.definition["StartAt"], u.input, invoke)
            u.result = {"status": "SUCCEEDED", "output": out}
        except AslError as err:
            u.result = {"status": "FAILED", "error": err.error, "cause": err.cause}
        except Exception as exc:  # a bug of ours: report, keep going
            u.result = {"status": "CRASHED", "error": type(exc).__name__, "cause": str(exc)}
        u.result["assigned"] = m.assign_log


# ---------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--json", action="store_true", help="include every unit's outcome in the JSON line")
    ap.add_argument("--group")
    ap.add_argument("--case", help="only cases whose directory name contains this text")
    ap.add_argument("--batch", type=int, default=400, help="units per LocalRunner (one app each)")
    ap.add_argument("--executor", choices=("local", "inline"), default="local")
    ap.add_argument("--fuse", action="store_true",
                    help="fuse every fusible chain of compiled Task functions (issue 25 plans)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = ap.parse_args(argv)
    corpus = args.dir.resolve()
    if not corpus.is_dir():
        print(f"asl_conformance: {corpus}: no such directory", file=sys.stderr)
        return 2
    units = load_units(corpus, args.group, args.case)
    t0 = time.monotonic()
    if args.fuse and args.executor != "local":
        print("asl_conformance: --fuse runs compiled apps: use --executor local", file=sys.stderr)
        return 2
    if args.executor == "inline":
        run_inline(units, corpus)
    else:
        from unumctl_testing.asl_conformance import run_local as _run_local
        _run_local(units, corpus, batch=args.batch, fuse=args.fuse)
    groups: dict[str, dict[str, int]] = {}
    failures = []
    excluded: dict[str, str] = {}
    for u in units:
        g = groups.setdefault(u.group, {"passed": 0, "total": 0})
        g["total"] += 1
        u.reason = compare(u.expected, u.result or {"status": "NO RESULT"})
        if not u.reason and u.result is not None and "assigned" in u.result:
            u.reason = compare_assigned(u.expected, u.result["assigned"])
        u.ok = not u.reason
        if u.ok:
            g["passed"] += 1
        else:
            base = u.uid.split("#")[0]
            if base in EXCLUSIONS or u.uid in EXCLUSIONS:
                excluded[u.uid] = EXCLUSIONS.get(u.uid, EXCLUSIONS.get(base, ""))
            else:
                failures.append({"case": u.uid, "reason": u.reason})
    for name in sorted(groups):
        print(f"{name:24s} {groups[name]['passed']:4d}/{groups[name]['total']}")
    if args.verbose:
        for f in failures:
            print(f"FAIL {f['case']}: {f['reason']}")
    passed = sum(g["passed"] for g in groups.values())
    print(f"{'TOTAL':24s} {passed:4d}/{len(units)}  ({time.monotonic() - t0:.1f} s, "
          f"{len(failures)} unexpected failure(s), {len(excluded)} excluded)")
    out: dict[str, Any] = {"passed": passed, "total": len(units), "groups": groups,
                           "excluded": excluded, "failures": failures}
    if args.fuse:  # units sharing a definition share its groups: count definitions once
        fused = {json.dumps(u.definition, sort_keys=True): u.fused for u in units}
        out["fused"] = {"units_with_group": sum(1 for u in units if u.fused),
                        "definitions_with_group": sum(1 for g in fused.values() if g),
                        "groups": sum(len(g) for g in fused.values()),
                        "co_located": sum(len(x) - 1 for g in fused.values() for x in g)}
        print(f"fused: {out['fused']['units_with_group']} unit(s) with a fused group, "
              f"{out['fused']['groups']} group(s) in {out['fused']['definitions_with_group']} definition(s), "
              f"{out['fused']['co_located']} function(s) run in place")
        if args.json:
            out["fused"]["units"] = {u.uid: u.fused for u in units if u.fused}
    if args.json:
        out["cases"] = [{"case": u.uid, "ok": u.ok, "reason": u.reason} for u in units]
    print(json.dumps(out, sort_keys=True))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
