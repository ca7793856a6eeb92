"""The CLI's messages to a newcomer (unumctl/cli.py, unumctl/cliopts.py): "did you mean" that never
suggests a destructive command, one-line usage errors, the closest valid manifest key, handler
checks before anything starts, help text, cost text, and a session stopped by Ctrl-C shown with
its resume command."""

from __future__ import annotations

import pytest

from unumctl.cliopts import suggest_commands

from tests.unumctl.test_cli import cli, cli_process, one_error


# ---------------------------------------------------------------- "Did you mean", usage errors
def test_unknown_command_never_suggests_a_destructive_one():
    code, out, err = cli("deploy", "examples/wordcount")
    assert code == 2 and out == ""
    line = one_error(err)
    assert "'deploy'" in line and "'apply'" in line and "destroy" not in line, line
    assert len(err) == 1, err  # one line, no box
    commands = ["apply", "destroy", "history", "invoke", "plan"]
    assert suggest_commands("deploy", commands) == ["apply"]
    assert suggest_commands("destory", commands)[0] == "destroy"  # a typo of its own name


@pytest.mark.parametrize("args, words", [
    (("invoke", "examples/wordcount"), ["unumctl: invoke: Missing option '--data'"]),
    (("nosuchcommand",), ["nosuchcommand"]),
    (("validate", "examples/wordcount", "--nosuch"), ["--nosuch"]),
])
def test_usage_errors_are_one_line(args, words):
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert len(err) == 1, err
    assert all(w in one_error(err) for w in words), err


# ---------------------------------------------------------------- unknown manifest keys
@pytest.mark.parametrize("old, new, where, meant", [
    ("\nfunctions:", "\nfucntions:", "fucntions", "functions"),
    ("memory:", "memroy:", "functions.Split.memroy", "memory"),
    ("\n  aws: {}", "\n  aws: {regoin: eu-west-1}", "clouds.aws.regoin", "region"),
])
def test_unknown_manifest_key_names_the_closest_valid_one(tmp_path, old, new, where, meant):
    import shutil

    from unumctl.manifest import AppError
    from unumctl.pipeline import load as load_app
    root = shutil.copytree("examples/wordcount", tmp_path / "app")
    text = (root / "unumctl.yaml").read_text()
    assert old in text
    (root / "unumctl.yaml").write_text(text.replace(old, new, 1))
    with pytest.raises(AppError) as exc:
        load_app(root)
    msg = str(exc.value)
    assert f"{where}: unknown key; did you mean {meant!r}?" in msg, msg


# ---------------------------------------------------------------- invoke checks handlers first
def test_invoke_refuses_a_handler_typo_before_starting(tmp_path):
    import shutil
    root = shutil.copytree("examples/wordcount", tmp_path / "app")
    text = (root / "unumctl.yaml").read_text()
    assert text.count("handler: app.handler") >= 1
    (root / "unumctl.yaml").write_text(text.replace("handler: app.handler", "handler: app.handlr", 1))
    code, out, err = cli("invoke", str(root), "--data", str(root / "input.json"), "--session", "typo-1")
    assert code == 2 and out == ""
    assert "'app.handlr'" in one_error(err) and "defines no 'handlr'" in one_error(err), err
    code, out, err = cli("sessions", str(root), "--json")
    assert "typo-1" not in out  # no session was created


@pytest.mark.parametrize("source,handler,problem", [
    ("def handler(e, c):\n    return e\n", "app.handler", None),
    ("import os\nif os.name:\n    def handler(e, c):\n        return e\n", "app.handler", None),
    ("try:\n    from fast import handler\nexcept ImportError:\n    handler = print\n", "app.handler", None),
    ("from helpers import *\n", "app.handler", None),  # may bind it: left to the run
    ("def __getattr__(name):\n    return print\n", "app.handler", None),
    ("def handle(e, c):\n    return e\n", "app.handler", "defines no 'handler'"),
    ("def handler(e, c)\n", "app.handler", None),  # a syntax error: the run reports FILE:LINE
])
def test_static_handler_check_runs_no_user_code(tmp_path, source, handler, problem):
    """invoke's check reads and parses the handler module (unumctl/check.py); it never runs
    it, and it only refuses when the name is certainly not bound."""
    from unumctl_testing.apps import make_app
    from unumctl.check import static_handler_problem
    from unumctl.pipeline import load as load_app
    root = make_app(tmp_path / "a", "static-check", {"First": ({"Start": True}, "raise SystemExit('ran')\n" + source)})
    text = (root / "unumctl.yaml").read_text()
    (root / "unumctl.yaml").write_text(text.replace("handler: app.handler", f"handler: {handler}"))
    app = load_app(root)
    got = static_handler_problem(app, "First")
    assert (got is None) if problem is None else (problem in got and "functions.First.handler" in got), got


# ---------------------------------------------------------------- result of an unknown session, a file as APP
def test_result_of_an_unknown_session_says_it_does_not_exist(tmp_path):
    import shutil
    root = shutil.copytree("examples/wordcount", tmp_path / "app")
    code, out, err = cli("invoke", str(root), "--data", str(root / "input.json"), "--session", "known-1")
    assert code == 0, err
    code, out, err = cli("result", str(root), "nosuch")
    assert code == 2 and out == ""
    assert "no session nosuch" in one_error(err) and "no result yet" not in one_error(err)
    code, out, err = cli("result", str(root), "known-1")
    assert code == 0 and out.strip()


def test_a_file_given_as_app_is_refused(tmp_path):
    import shutil
    root = shutil.copytree("examples/wordcount", tmp_path / "app")
    code, out, err = cli("validate", str(root / "input.json"))
    assert code == 2 and "input.json: is a file; give the app directory" in one_error(err), err
    code, out, err = cli("validate", str(root / "unumctl.yaml"))  # the manifest itself still names the app
    assert code == 0, err


# ---------------------------------------------------------------- a failing Step Functions app
def test_failing_step_functions_app_is_one_line_at_the_users_source(tmp_path):
    from unumctl_testing.apps import make_sfn_app, sfn_task
    root = make_sfn_app(tmp_path / "app", {"StartAt": "A", "States": {"A": sfn_task("A")}},
                        {"A": "def handler(e, c):\n    x = 1\n    raise ValueError('boom ' + 'x' * 150)\n"})
    (tmp_path / "in.json").write_text("{}")
    code, out, err = cli_process("invoke", str(root), "--data", str(tmp_path / "in.json"), "--session", "sf-1")
    assert code == 1
    src = str(root / "functions" / "a" / "app.py")
    assert one_error(err).endswith(f"(at {src}:3)")
    assert not any("errorMessage" in ln or ".unum/local/dev/bundles" in ln for ln in err), err
    assert f"[A] A: ValueError: boom {'x' * 150} (at {src}:3)" in err, err  # the runtime's log line
    code, out, err = cli_process("history", str(root), "sf-1")
    failed = [ln for ln in out.splitlines() if " failed " in ln]
    assert len(failed) == 1 and failed[0].endswith(f"(at {src}:3)"), failed
    assert "errorMessage" not in failed[0]


# ---------------------------------------------------------------- logs of several sessions
def test_logs_without_session_label_each_line_with_its_session(tmp_path):
    from unumctl_testing.apps import make_app
    root = make_app(tmp_path / "app", "logs-app", {
        "First": ({"Start": True}, "def handler(e, c):\n    print('hello', e)\n    return e\n")})
    (tmp_path / "in.json").write_text("4")
    for s in ("log-a", "log-b"):
        assert cli("invoke", str(root), "--data", str(tmp_path / "in.json"), "--session", s)[0] == 0
    code, out, err = cli("logs", str(root))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2, (out, err)
    assert sorted(ln.split()[0] for ln in lines) == ["[log-a", "[log-b"], lines
    code, out, err = cli("logs", str(root), "--session", "log-a")  # one session: no label needed
    assert out.startswith("[First ") and "log-a" not in out, out


# ---------------------------------------------------------------- --help text
def test_help_keeps_brackets_and_shows_no_bool_metavar():
    code, out, _ = cli("plan", "--help")
    assert code == 0 and "replace: [address]}" in " ".join(out.split()), out
    for command in ("invoke", "apply", "sessions"):
        code, out, _ = cli(command, "--help")
        assert code == 0 and "--help" in out and "<bool>" not in out, out
    code, out, _ = cli("--help")
    assert "--debug" in out and "<bool>" not in out


# ---------------------------------------------------------------- cost report text
def test_cost_text_has_no_scientific_notation_and_a_dollar_column_header(tmp_path):
    import re

    from unumctl.cost import report

    from tests.unumctl.cost.test_billing import aws_measurement, prices
    r = report.build(aws_measurement(), prices(tmp_path), None)
    text = report.render(r)
    rows = [ln for ln in text.splitlines() if ln.startswith("  ")]
    assert rows and not [ln for ln in rows if re.search(r"\d[eE][+-]?\d", ln)], rows
    headers = [ln for ln in rows if ln.split()[:1] == ["group"]]
    assert len(headers) == len(r["systems"]) == 4 and all(h.rstrip().endswith("$/M") for h in headers), headers
    assert report.quantity(1.5e-06) == "0.0000015" and report.quantity(1234567.0) == "1234570"


# ---------------------------------------------------------------- validate of a state machine
def test_validate_of_a_state_machine_names_its_start_state_not_a_synthesized_function():
    code, out, err = cli("validate", "examples/orders-sfn")
    assert code == 0, err
    assert err == ["orders-sfn: state machine statemachine.json starts at state CheckInput, "
                   "3 Lambda functions (5 compiled functions): OK"], err
    assert "Start" not in err[0].replace("starts", "")  # the synthesized entry function


# ---------------------------------------------------------------- sessions whose invoke was stopped
def test_a_session_stopped_by_ctrl_c_is_shown_stopped_with_the_resume_command(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    from unumctl_testing.apps import make_app
    from tests.unumctl.test_cli import ROOT
    root = make_app(tmp_path / "app", "stopped-app", {
        "First": ({"Start": True}, "import time\ndef handler(e, c):\n    time.sleep(60)\n    return e\n")})
    (tmp_path / "in.json").write_text("1")
    proc = subprocess.Popen([sys.executable, "-m", "unumctl.cli", "invoke", str(root), "--data",
                             str(tmp_path / "in.json"), "--session", "cc-1"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:  # running: shown RUNNING while its invoke runs it
            code, out, _ = cli("sessions", str(root), "--json")
            rows = json.loads(out) if code == 0 else []
            if rows and rows[0]["status"] == "RUNNING":
                break
            assert time.monotonic() < deadline and proc.poll() is None, (code, out)
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(30) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
    code, out, _ = cli("sessions", str(root), "--json")
    (row,) = json.loads(out)
    assert row["status"] == "STOPPED" and row["duration"] is None, row
    assert row["resume"] == f"unumctl resume {root} cc-1"
    code, out, _ = cli("sessions", str(root))
    assert "STOPPED" in out and f"resume: unumctl resume {root} cc-1" in out, out
    code, out, _ = cli("describe", str(root), "cc-1")
    assert "status:     STOPPED" in out and f"unumctl resume {root} cc-1" in out, out
