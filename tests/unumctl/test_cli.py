"""The `unumctl` CLI: results on stdout, one-line errors on stderr with exit codes, and a
re-run after fixing the cause succeeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import yaml

from unumctl_testing.apps import EXAMPLES, ROOT, make_app

ECHO = "def handler(event, context):\n    return event\n"


def cli(*args: str, cwd: Path = ROOT) -> tuple[int, str, list[str]]:
    """`unumctl ARGS` in `cwd`, run in this process (typer.testing.CliRunner: the CLI's own
    parsing, commands, output and exit status; a local invoke's functions still run in
    worker processes): (exit status, stdout, the non-blank lines of stderr). An exception
    that escapes the command is reported as the interpreter reports it, its traceback on
    stderr and status 1. The interpreter start and `import unumctl.cli` of a child process
    (about a second of CPU each) are what it saves, over the suite's many calls;
    `cli_process` runs a real `python -m unumctl.cli`."""
    from typer.testing import CliRunner

    from unumctl.cli import app as unumctl_app

    old, env = os.getcwd(), dict(os.environ)
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(unumctl_app, list(args), prog_name="unumctl")
    finally:  # what a command exports (--aws-endpoint, emulate's variables) ends with it, as in a child
        os.chdir(old)
        os.environ.clear()
        os.environ.update(env)
    stderr = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        assert r.exc_info is not None
        stderr += "".join(traceback.format_exception(*r.exc_info))
    return r.exit_code, r.stdout, [ln for ln in stderr.splitlines() if ln.strip()]


def cli_process(*args: str, cwd: Path = ROOT) -> tuple[int, str, list[str]]:
    """As `cli`, in a child process `python -m unumctl.cli ARGS`: for what only a process
    shows, e.g. the lines its worker processes and user handlers write to the stderr and
    stdout they inherit (CliRunner captures this process's sys.stdout/sys.stderr only)."""
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout, [ln for ln in proc.stderr.splitlines() if ln.strip()]


def one_error(lines: list[str]) -> str:
    errors = [ln for ln in lines if ln.startswith("unumctl: ")]
    assert len(errors) == 1, lines
    return errors[0]


@pytest.fixture
def app(tmp_path):
    root = make_app(tmp_path / "app", "cli-app", {
        "First": ({"Start": True, "Next": {"Name": "Second"}}, "def handler(e, c):\n    return e + 1\n"),
        "Second": ({}, "def handler(e, c):\n    return e * 10\n")})
    (tmp_path / "in.json").write_text("4")
    return root


def test_invoke_prints_result_json(app, tmp_path):
    code, out, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 0 and json.loads(out) == 50
    assert any(ln.startswith("session ") for ln in err)


def test_wordcount_main_job_equals_direct_count():
    import collections
    import re
    code, out, _ = cli("invoke", "examples/wordcount", "--data", "examples/wordcount/input.json")
    text = (EXAMPLES / "wordcount" / "asyoulik.txt").read_text()
    assert code == 0
    assert json.loads(out) == dict(collections.Counter(re.findall(r"[a-z]+", text.lower())))


def test_missing_and_malformed_input_file(app, tmp_path):
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json: no such file" in one_error(err)
    (tmp_path / "bad.json").write_text("{oops")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "bad.json"))
    assert code == 2 and "bad.json: not valid JSON" in one_error(err)


def test_malformed_ir_then_fix(app, tmp_path):
    ir = app / "ir" / "First.yaml"
    good = ir.read_text()
    ir.write_text("Name: First\nStart: true\nNext:\n  Name: Second\n  Type: Mapp\n")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    msg = one_error(err)
    assert code == 2 and "First.yaml: Next[0]: Type: 'Mapp' must be one of" in msg
    ir.write_text("Name: First\nStart: true\nNext: [Name: Second\n")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 2 and "First.yaml: not valid YAML" in one_error(err)
    ir.write_text(good)
    code, out, _ = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 0 and json.loads(out) == 50


def test_unknown_function_then_fix(app, tmp_path):
    ir = app / "ir" / "First.yaml"
    good = ir.read_text()
    ir.write_text(good.replace("Second", "Secnod"))
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 2 and "unknown target function 'Secnod'" in one_error(err)
    ir.write_text(good)
    assert cli("invoke", str(app), "--data", str(tmp_path / "in.json"))[0] == 0


def test_malformed_manifest(app, tmp_path):
    m = app / "unumctl.yaml"
    doc = yaml.safe_load(m.read_text())
    doc["functions"]["First"]["memory"] = 64
    m.write_text(yaml.safe_dump(doc))
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 2 and "unumctl.yaml: functions.First.memory: Input should be greater than or equal to 128" in one_error(err)
    doc["functions"]["First"]["memory"] = 256
    doc["functions"]["Third"] = {"code": "functions/first"}
    m.write_text(yaml.safe_dump(doc))
    code, _, err = cli("validate", str(app))
    assert code == 2 and "functions.Third: not in the workflow" in one_error(err)


def test_user_exception_and_non_json_then_fix(app, tmp_path):
    code_file = app / "functions" / "second" / "app.py"
    code_file.write_text("def handler(e, c):\n    raise KeyError('sensor-7')\n")
    code, out, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 1 and out == ""
    assert "failed in Second: KeyError: 'sensor-7'" in one_error(err)
    code_file.write_text("import datetime\ndef handler(e, c):\n    return datetime.date(2026, 1, e)\n")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 1 and "TypeError: Second returned a value that is not JSON-serializable (date)" in one_error(err)
    code_file.write_text("def handler(e, c):\n    return e * 10\n")
    code, out, _ = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 0 and json.loads(out) == 50


def test_debug_shows_traceback(app, tmp_path):
    code, _, err = cli("--debug", "invoke", str(app), "--data", str(tmp_path / "nope.json"))
    assert code == 2 and any("Traceback" in ln for ln in err)


def test_no_wait_then_result(app, tmp_path):
    code, out, _ = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--no-wait")
    session = out.strip()
    assert code == 0 and len(session) == 36
    import time
    for _ in range(200):
        code, out, _ = cli("result", str(app), session)
        if code != 3:
            break
        time.sleep(0.1)
    assert code == 0 and json.loads(out) == 50


def test_graph_mermaid_and_dot():
    code, out, _ = cli("graph", "examples/text-processing")
    assert code == 0 and out.startswith("flowchart TD")
    from tests.graph_text import dot_edges, mermaid_edges
    assert '(["Ingest"])' in out and any(s == "ShortenUrl" and a == "-.->" for s, a, _, _ in mermaid_edges(out))
    code, out, _ = cli("graph", "examples/wordcount", "--format", "dot")
    assert code == 0 and any((s, d, e["style"]) == ("Split", "Mapper", "bold") for s, d, e in dot_edges(out))


def test_faults_flag_is_validated(app, tmp_path):
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--faults", "crsh=0.1")
    assert code == 2 and "faults: unknown key 'crsh'" in one_error(err)
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--faults", "kill=0.2")
    assert code == 2 and "kill is injected by the emulated Lambda" in one_error(err)
    code, out, _ = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--faults", "seed=3,crash=0.3,duplicate=0.3")
    assert code == 0 and json.loads(out) == 50


def test_cli_helper_leaves_no_exported_variable_behind(monkeypatch, tmp_path):
    """A command that exports a variable (`invoke --aws-endpoint` sets UNUM_AWS_ENDPOINT before
    it loads the app) ends with its environment, as a child process would: a later test's
    in-process command must not inherit it."""
    monkeypatch.delenv("UNUM_AWS_ENDPOINT", raising=False)
    (tmp_path / "in.json").write_text("{}")
    code, _, err = cli("invoke", str(tmp_path / "no-app"), "--data", str(tmp_path / "in.json"),
                       "--aws-endpoint", "http://127.0.0.1:9")
    assert code != 0 and err
    assert "UNUM_AWS_ENDPOINT" not in os.environ
