"""The durations record of docs/testing.md, from a pytest JUnit XML report.

    python tools/suite_durations.py REPORT.xml [--docs docs/testing.md] [--top 30] [--note TEXT]
        [--record docs/test-durations.json] [--replace]

REPORT.xml is what `pytest --junitxml=REPORT.xml` writes (`make durations` runs the whole suite
that way). Each <testcase>'s `time` is the test's setup, call and teardown in seconds (pytest's
junit_duration_report = total), so the first test on a session fixture (moto_server, the GCP
emulators) carries that fixture's start. The tier of each test is the `tier` property
tests/conftest.py records (mark_tiers); a report written without it counts its tests as tier
"-".

The record replaces what stands between the BEGIN and END lines of the docs page: one line on
the run (tests, seconds, per tier; --note, e.g. the machine and its `uptime` load), the
slowest test files and the slowest tests. Every test's seconds go to --record, a JSON file
({"note": ..., "tests": {"tests/x.py::name[param]": seconds}}) from which tests/conftest.py
puts a test of SLOW_SECONDS or more in the slow tier. The tests of the old record that the
report does not have are kept (a report of the fast tier alone must not empty the slow tier's
part), unless --replace (`make durations`: a run of the whole suite, so that renamed tests
drop out). Exits 2 with one line when the report cannot be read
or the page has no BEGIN/END lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- durations: BEGIN (tools/suite_durations.py writes this part) -->"
END = "<!-- durations: END -->"


@dataclass(frozen=True)
class Case:
    """One test of the report: its file (relative to the repository), its name in that file
    (Class::name[param]), its total seconds and its tier ("fast", "slow" or "-")."""
    file: str
    name: str
    seconds: float
    tier: str
    outcome: str


def _file_of(classname: str, root: Path) -> tuple[str, list[str]]:
    """Splits a JUnit classname (tests.aws.test_x.TestClass) into the test file that exists
    under `root` (tests/aws/test_x.py) and the class path left over (["TestClass"])."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        candidate = Path(*parts[:n]).with_suffix(".py")
        if (root / candidate).is_file():
            return candidate.as_posix(), parts[n:]
    return "/".join(parts) + ".py", []


def read_report(report: Path, root: Path = ROOT) -> list[Case]:
    """Every <testcase> of a pytest JUnit XML report as a Case. Raises ValueError naming the
    file when it is not such a report."""
    try:
        tree = ET.parse(report)
    except (OSError, ET.ParseError) as exc:
        raise ValueError(f"{report}: not a readable JUnit XML report ({exc}); write one with "
                         "pytest --junitxml") from None
    cases = []
    for tc in tree.iter("testcase"):
        if tc.get("classname") == "pytest" and tc.get("name") == "internal":
            continue
        file, classes = _file_of(tc.get("classname", ""), root)
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if tc.find(tag) is not None:
                outcome = tag
                break
        cases.append(Case(file=file, name="::".join([*classes, tc.get("name", "")]),
                          seconds=float(tc.get("time", "0") or 0), tier=props.get("tier") or "-",
                          outcome=outcome))
    if not cases:
        raise ValueError(f"{report}: no <testcase> in the report")
    return cases


def record(cases: list[Case], top: int = 30, note: str = "") -> str:
    """The Markdown of the record: a summary line, the `top` slowest files (tests, seconds,
    tier counts) and the `top` slowest tests."""
    total = sum(c.seconds for c in cases)
    tiers: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        tiers[c.tier].append(c)
    per_tier = ", ".join(f"{t}: {len(cs)} tests, {sum(c.seconds for c in cs):.0f} s"
                         for t, cs in sorted(tiers.items()))
    outcomes: dict[str, int] = defaultdict(int)
    for c in cases:
        outcomes[c.outcome] += 1
    lines = [f"Recorded: {len(cases)} tests, {total:.0f} s of test time ({per_tier}; "
             + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) + ")."]
    if note:
        lines.append(note)
    by_file: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_file[c.file].append(c)
    lines += ["", f"The {min(top, len(by_file))} slowest files:", "",
              "| file | tests | seconds | slow tier |", "|---|---|---|---|"]
    for file, cs in sorted(by_file.items(), key=lambda kv: -sum(c.seconds for c in kv[1]))[:top]:
        slow = sum(1 for c in cs if c.tier == "slow") if any(c.tier != "-" for c in cs) else "-"
        lines.append(f"| {file} | {len(cs)} | {sum(c.seconds for c in cs):.1f} | {slow} |")
    lines += ["", f"The {min(top, len(cases))} slowest tests:", "",
              "| test | seconds | tier |", "|---|---|---|"]
    for c in sorted(cases, key=lambda c: -c.seconds)[:top]:
        name = c.name.replace("|", "\\|")
        lines.append(f"| {c.file}::{name} | {c.seconds:.1f} | {c.tier} |")
    return "\n".join(lines)


def write_record(docs: Path, text: str) -> None:
    """Replaces what stands between BEGIN and END in `docs` with `text`. Raises ValueError
    when the page lacks either line."""
    page = docs.read_text()
    if BEGIN not in page or END not in page or page.index(BEGIN) > page.index(END):
        raise ValueError(f"{docs}: no '{BEGIN}' ... '{END}' lines to write the record between")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    docs.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def write_json(path: Path, cases: list[Case], note: str = "", replace: bool = False) -> None:
    """Writes every case's seconds (rounded to 0.01 s) by test id, sorted, one per line, over
    the old record's tests (all of them dropped when `replace`, or when there is no readable
    old record)."""
    tests: dict[str, float] = {}
    if not replace and path.exists():
        try:
            tests.update(json.loads(path.read_text())["tests"])
        except (ValueError, KeyError, TypeError):
            pass  # an unreadable old record is replaced
    tests.update({f"{c.file}::{c.name}": round(c.seconds, 2) for c in cases})
    path.write_text(json.dumps({"note": note, "tests": dict(sorted(tests.items()))}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", type=Path, help="pytest --junitxml report")
    ap.add_argument("--docs", type=Path, default=ROOT / "docs" / "testing.md")
    ap.add_argument("--top", type=int, default=30, help="how many files and tests to list")
    ap.add_argument("--note", default="", help="a line on the run (machine, load, selection)")
    ap.add_argument("--record", type=Path, default=ROOT / "docs" / "test-durations.json",
                    help="where every test's seconds go (the tiers of tests/conftest.py read it)")
    ap.add_argument("--replace", action="store_true",
                    help="drop the old record's tests that the report does not have")
    args = ap.parse_args(argv)
    try:
        cases = read_report(args.report)
        write_record(args.docs, record(cases, args.top, args.note))
        write_json(args.record, cases, args.note, args.replace)
    except ValueError as exc:
        print(f"suite_durations: {exc}", file=sys.stderr)
        return 2
    print(f"suite_durations: wrote the record in {args.docs} and {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
