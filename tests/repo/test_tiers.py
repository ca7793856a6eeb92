"""The two tiers of the suite (tests/conftest.py mark_tiers), the durations record
(tools/suite_durations.py) and docs/testing.md, which lists both: a test on a slow fixture, a
slow marker or a slow file is deselected by `make check`'s `-m "not slow"`; the page's lists of
markers and of slow fixtures, markers and files are the ones pyproject.toml and conftest.py
declare; every marker a test uses is declared; `make test` selects by no marker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests import conftest
from tools import suite_durations

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "testing.md"


def _declared_markers() -> dict[str, str]:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return dict(m.split(":", 1) for m in ini["markers"])


def _table(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table under `heading` in docs/testing.md."""
    page = DOCS.read_text()
    assert f"\n{heading}\n" in page, f"docs/testing.md has no '{heading}' section"
    rows = []
    for line in page.split(f"\n{heading}\n", 1)[1].splitlines():
        if line.startswith("## "):
            break
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[1:]  # the header row


def _ticked(cell: str) -> str:
    m = re.fullmatch(r"`([^`]+)`", cell)
    assert m, f"docs/testing.md: {cell!r} is not one `name`"
    return m.group(1)


def test_the_docs_marker_table_is_the_declared_markers():
    documented = {_ticked(row[0]) for row in _table("## Markers")}
    assert documented == set(_declared_markers())


def test_every_marker_the_tests_use_is_declared_and_every_declared_one_is_used(request):
    declared = set(_declared_markers())
    builtin = {line.split(":", 1)[0].split("(", 1)[0] for line in request.config.getini("markers")} - declared
    builtin |= {"parametrize", "usefixtures", "filterwarnings", "skip", "skipif", "xfail", "timeout"}
    used: dict[str, str] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__).resolve():
            continue  # this file's small suite uses markers of its own
        for name in re.findall(r"pytest\.mark\.(\w+)", path.read_text()):
            used.setdefault(name, path.relative_to(ROOT).as_posix())
    undeclared = {n: f for n, f in used.items() if n not in declared | builtin}
    assert not undeclared, f"markers used but not declared in pyproject.toml: {undeclared}"
    assert declared <= set(used), f"declared but never used: {declared - set(used)}"


def test_the_docs_slow_tier_table_is_conftests():
    rows = {(row[0], _ticked(row[1])) for row in _table("## The slow tier")}
    want = ({("fixture", n) for n in conftest.SLOW_FIXTURES}
            | {("marker", n) for n in conftest.SLOW_MARKERS}
            | {("file", n) for n in conftest.SLOW_MODULES})
    assert rows == want


def test_every_slow_fixture_and_file_exists():
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    for name in conftest.SLOW_FIXTURES:
        assert re.search(rf"^def {name}\(", sources, re.M), f"SLOW_FIXTURES: no fixture {name}"
    for rel in conftest.SLOW_MODULES:
        assert (ROOT / rel).is_file(), f"SLOW_MODULES: no file {rel}"


def _recipe(target: str) -> str:
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{target}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert m, f"Makefile has no {target} target"
    return m.group(1)


def test_make_check_is_lint_and_the_fast_tier_and_make_test_selects_by_no_marker():
    head = re.search(r"^check:([^\n]*)", (ROOT / "Makefile").read_text(), re.M)
    assert head and "lint" in head.group(1).split()
    assert '-m "not slow"' in _recipe("check")
    assert not re.search(r"pytest\b.*\s-m\s", _recipe("test")), _recipe("test")
    page = DOCS.read_text()
    assert '-m "not slow"' in page and "make check" in page and "make test" in page


CONFTEST = '''
from pathlib import Path

import pytest

import tests.conftest as tiers

tiers.ROOT = Path(__file__).resolve().parent
tiers.SLOW_MODULES = {"test_by_file.py": "a subprocess platform"}
tiers.DURATIONS = tiers.ROOT / "durations.json"


def pytest_configure(config):
    for m in ("slow", "campaign", "aws_long"):
        config.addinivalue_line("markers", m)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    tiers.mark_tiers(items)


@pytest.fixture
def moto_url():
    return "moto"


@pytest.fixture
def moto_env(moto_url):
    return moto_url
'''

TESTS = '''
import pytest


def test_plain():
    pass


def test_on_moto(moto_url):
    pass


def test_through_a_fixture(moto_env):
    pass


@pytest.mark.campaign
def test_campaign():
    pass


@pytest.mark.slow
def test_by_hand():
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_recorded(n):
    pass
'''

RECORD = {"tests": {"test_mod.py::test_recorded[1]": 0.2, "test_mod.py::test_recorded[2]": 3.5}}


def _pytest(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiers")
    (d / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (d / "test_mod.py").write_text(textwrap.dedent(TESTS))
    (d / "test_by_file.py").write_text("def test_in_a_slow_file():\n    pass\n")
    (d / "durations.json").write_text(json.dumps(RECORD))
    return d


def test_the_fast_tier_leaves_out_slow_fixtures_markers_files_and_recorded_tests(tiny_suite):
    assert conftest.SLOW_SECONDS < 3.5 and conftest.SLOW_SECONDS > 0.2  # RECORD's two sides
    proc = _pytest(["--collect-only", "-m", "not slow"], tiny_suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids == ["test_mod.py::test_plain", "test_mod.py::test_recorded[1]"], proc.stdout
    full = _pytest(["--collect-only"], tiny_suite)
    assert len([line for line in full.stdout.splitlines() if "::" in line]) == 8, full.stdout


def test_the_durations_record_from_a_junit_report(tiny_suite, tmp_path):
    report = tmp_path / "report.xml"
    proc = _pytest([f"--junitxml={report}"], tiny_suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {c.name: c for c in suite_durations.read_report(report, root=tiny_suite)}
    assert {n: c.tier for n, c in cases.items()} == {
        "test_plain": "fast", "test_on_moto": "slow", "test_through_a_fixture": "slow",
        "test_campaign": "slow", "test_by_hand": "slow", "test_in_a_slow_file": "slow",
        "test_recorded[1]": "fast", "test_recorded[2]": "slow"}
    assert cases["test_in_a_slow_file"].file == "test_by_file.py"
    page = tmp_path / "testing.md"
    page.write_text(f"# Testing\n\n{suite_durations.BEGIN}\nold\n{suite_durations.END}\n\nafter\n")
    out = tmp_path / "durations.json"
    assert suite_durations.main([str(report), "--docs", str(page), "--note", "on a test",
                                 "--record", str(out)]) == 0
    text = page.read_text()
    assert "old" not in text and text.endswith(f"{suite_durations.END}\n\nafter\n")
    assert "Recorded: 8 tests" in text and "fast: 2 tests" in text and "slow: 6 tests" in text
    assert "| test_by_file.py::test_in_a_slow_file |" in text and "on a test" in text
    ids = set(json.loads(out.read_text())["tests"])  # the ids pytest selects by
    assert "test_mod.py::test_recorded[2]" in ids and "test_by_file.py::test_in_a_slow_file" in ids
    assert len(ids) == 8
    # a report of the fast tier alone keeps the old record's slow tests; --replace drops them
    fast = tmp_path / "fast.xml"
    assert _pytest([f"--junitxml={fast}", "-m", "not slow"], tiny_suite).returncode == 0
    assert suite_durations.main([str(fast), "--docs", str(page), "--record", str(out)]) == 0
    assert set(json.loads(out.read_text())["tests"]) == ids
    assert suite_durations.main([str(fast), "--docs", str(page), "--record", str(out), "--replace"]) == 0
    assert set(json.loads(out.read_text())["tests"]) == {"test_mod.py::test_plain", "test_mod.py::test_recorded[1]"}


def test_the_durations_tool_says_what_is_wrong_in_one_line(tmp_path, capsys):
    page = tmp_path / "testing.md"
    page.write_text("# Testing\n")
    out = ["--record", str(tmp_path / "d.json")]
    assert suite_durations.main([str(tmp_path / "missing.xml"), "--docs", str(page), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing.xml" in err and "--junitxml" in err
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase classname="t" name="a" time="1"/>'
                      '</testsuite></testsuites>')
    assert suite_durations.main([str(report), "--docs", str(page), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "testing.md" in err and "BEGIN" in err


def test_the_docs_page_has_a_durations_record_and_states_the_threshold():
    assert f"{conftest.SLOW_SECONDS:g} s" in DOCS.read_text()
    assert conftest.recorded(conftest.DURATIONS), "docs/test-durations.json: no record (make durations)"
    page = DOCS.read_text()
    assert suite_durations.BEGIN in page and suite_durations.END in page
    record = page.split(suite_durations.BEGIN, 1)[1].split(suite_durations.END, 1)[0]
    assert "Recorded:" in record and "| test | seconds | tier |" in record


LONG_CONFTEST = '''
from pathlib import Path

import tests.conftest as tiers

tiers.ROOT = Path(__file__).resolve().parent
tiers.DURATIONS = tiers.ROOT / "durations.json"
pytest_collection_modifyitems = tiers.pytest_collection_modifyitems


def pytest_addoption(parser):
    tiers._long_addoption(parser)


def pytest_configure(config):
    for m in ("slow", "aws_long", "gcp_long"):
        config.addinivalue_line("markers", m)
'''

LONG_TESTS = '''
import pytest


def test_plain():
    pass


@pytest.mark.aws_long
def test_aws():
    pass


@pytest.mark.parametrize("n", [pytest.param(1, marks=pytest.mark.gcp_long), 2])
def test_gcp(n):
    pass
'''


def test_long_runs_are_deselected_unless_their_option_is_given(tmp_path):
    """tests/conftest.py LONG_MARKERS: `aws_long` needs --aws-all-examples, `gcp_long`
    --gcp-all-examples (deselected, not skipped, without them)."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(LONG_CONFTEST))
    (tmp_path / "test_long.py").write_text(textwrap.dedent(LONG_TESTS))
    (tmp_path / "durations.json").write_text(json.dumps({"tests": {}}))
    base = ["test_long.py::test_plain", "test_long.py::test_gcp[2]"]
    for args, extra in (([], []), (["--aws-all-examples"], ["test_long.py::test_aws"]),
                        (["--gcp-all-examples"], ["test_long.py::test_gcp[1]"])):
        proc = _pytest(["--collect-only", *args], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert sorted(line for line in proc.stdout.splitlines() if "::" in line) == sorted(base + extra), proc.stdout
