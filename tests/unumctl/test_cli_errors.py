"""The CLI on bad input and at its edges (unumctl/cli.py, cliopts.py, runfunction.py,
failure.py): global options after the subcommand, `--cloud` from the manifest, data and files
not UTF-8, retry and expression fields, `validate`'s handler checks (isolated, no network, a
timeout), `run-function`, `--debug` tracebacks, errors capped and pointing at the user's
source."""

from __future__ import annotations

import json
import re
import time

import pytest
import yaml

from unumctl.cliopts import deploy_cloud, hoist_global_options

from unumctl_testing.apps import make_app
from tests.unumctl.test_cli import cli, cli_process, one_error


@pytest.fixture
def app(tmp_path):
    root = make_app(tmp_path / "app", "friction-app", {
        "First": ({"Start": True, "Next": {"Name": "Second"}}, "def handler(e, c):\n    return e + 1\n"),
        "Second": ({}, "def handler(e, c):\n    return e * 10\n")})
    (tmp_path / "in.json").write_text("4")
    return root


def _manifest(app) -> dict:
    return yaml.safe_load((app / "unumctl.yaml").read_text())


def _write_manifest(app, doc: dict) -> None:
    (app / "unumctl.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


# ---------------------------------------------------------------- global options, --version
def test_global_options_after_the_subcommand(app, tmp_path):
    assert hoist_global_options(["plan", "a", "--region", "eu-west-1", "--debug"], {"plan"}) == \
        ["--region", "eu-west-1", "--debug", "plan", "a"]
    assert hoist_global_options(["--debug", "plan", "a", "--region=x"], {"plan"}) == \
        ["--debug", "--region=x", "plan", "a"]
    assert hoist_global_options(["plan", "a", "--", "--debug"], {"plan"}) == ["plan", "a", "--", "--debug"]
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "nope.json"), "--debug")
    assert code == 2 and any("Traceback" in ln for ln in err)
    code, out, err = cli("validate", str(app), "--region", "eu-west-1", "--profile", "p")
    assert code == 0, err


def test_version():
    from unumctl import __version__
    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"unumctl {__version__}"


# ---------------------------------------------------------------- deployment commands' cloud
@pytest.mark.parametrize("command", ["plan", "apply", "destroy", "outputs", "status"])
def test_deploy_commands_need_a_cloud(app, command):
    code, out, err = cli(command, str(app))
    assert code == 2 and out == ""
    assert "pass --cloud aws|gcp" in one_error(err)
    code, _, err = cli(command, str(app), "--cloud", "local")
    assert code == 2 and "not available for --cloud local; pass --cloud aws|gcp" in one_error(err)


def test_deploy_cloud_from_the_manifest():
    from unumctl.deploy.settings import Clouds

    c = Clouds.model_validate
    assert deploy_cloud(None, c({"aws": {}}), "plan") == "aws"
    assert deploy_cloud(None, c({"gcp": {"project": "p"}}), "plan") == "gcp"
    assert deploy_cloud("aws", c({"gcp": {}}), "plan") == "aws"
    with pytest.raises(ValueError, match="names clouds aws and gcp; pass --cloud aws"):
        deploy_cloud(None, c({"aws": {}, "gcp": {}}), "plan")
    with pytest.raises(ValueError, match="needs a cloud: pass --cloud aws"):
        deploy_cloud(None, c({}), "status")


def test_deploy_cloud_taken_from_the_manifest_cli(app):
    doc = _manifest(app)
    doc["clouds"] = {"aws": {"region": "eu-west-1"}}
    _write_manifest(app, doc)
    # outputs on aws before any apply: the aws target answers, not "--cloud local"
    code, _, err = cli("outputs", str(app))
    assert code == 2 and "is not deployed on aws yet" in one_error(err)


# ---------------------------------------------------------------- bad input
def test_data_naming_a_directory(app, tmp_path):
    code, out, err = cli("invoke", str(app), "--data", str(tmp_path))
    assert code == 2 and out == "" and len(err) == 1
    assert f"--data: {tmp_path} is a directory" in one_error(err)


def test_data_file_not_utf8(app, tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes('"caf\xe9"'.encode("latin-1"))
    code, _, err = cli("invoke", str(app), "--data", str(bad))
    assert code == 2 and f"--data: {bad}: not UTF-8" in one_error(err)


def test_manifest_not_utf8(app):
    path = app / "unumctl.yaml"
    path.write_bytes(path.read_bytes() + "# caf\xe9\n".encode("latin-1"))
    code, _, err = cli("validate", str(app))
    assert code == 2 and f"{path}: not UTF-8" in one_error(err)


def test_workers_zero(app, tmp_path):
    t0 = time.monotonic()
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--workers", "0")
    assert code == 2 and "--workers: 0 must be at least 1" in one_error(err)
    assert time.monotonic() - t0 < 60


# ---------------------------------------------------------------- IR and manifest fields
def _retry_app(tmp_path, retry):
    return make_app(tmp_path / "retry", "retry-app", {
        "Only": ({"Start": True, "Retry": retry}, "def handler(e, c):\n    raise ValueError('no')\n")})


def test_retry_interval_negative(tmp_path):
    app = _retry_app(tmp_path, {"MaxAttempts": 2, "IntervalSeconds": -1})
    code, _, err = cli("validate", str(app))
    assert code == 2 and len(err) == 1
    assert "Only.yaml: Retry.IntervalSeconds: -1 must be >= 0" in one_error(err)


def test_retry_error_equals_string(tmp_path):
    app = _retry_app(tmp_path, {"MaxAttempts": 2, "ErrorEquals": "ValueError"})
    code, _, err = cli("validate", str(app))
    assert code == 2
    assert "Retry.ErrorEquals: 'ValueError' must be a list of error names, e.g. [ValueError]" in one_error(err)


def test_retry_fields_checked():
    from runtime.errors import IRError
    from runtime.ir import load_function
    ok = load_function({"Name": "A", "Retry": {"MaxAttempts": 2, "IntervalSeconds": 0, "ErrorEquals": ["E"]}}, "a")
    assert ok.retry.max_attempts == 2 and ok.retry.error_equals == ("E",)
    for bad, field in [({"MaxAttempts": 1.5}, "MaxAttempts"), ({"MaxAttempts": "2"}, "MaxAttempts"),
                       ({"BackoffRate": 0.5}, "BackoffRate"), ({"ErrorEquals": [1]}, "ErrorEquals"),
                       ({"Interval": 1}, "Interval"), ({"IntervalSeconds": float("nan")}, "IntervalSeconds")]:
        with pytest.raises(IRError, match=f"a: Retry.{field}"):
            load_function({"Name": "A", "Retry": bad}, "a")


def test_bad_expression_error_is_short(tmp_path):
    huge = "$out > " + " + ".join(["1"] * 200_000) + " +"
    app = make_app(tmp_path / "expr", "expr-app", {
        "A": ({"Start": True, "Next": {"Name": "B", "Conditional": huge}}, "def handler(e, c):\n    return e\n"),
        "B": ({}, "def handler(e, c):\n    return e\n")})
    code, _, err = cli("validate", str(app))
    assert code == 2
    line = one_error(err)
    assert "bad expression" in line and len(line) < 600 and f"({len(huge)} characters)" in line


def test_log_retention_days_names_the_field(tmp_path):
    from unumctl.pipeline import deployment
    from unumctl.manifest import AppError
    from unumctl.pipeline import load as load_app
    app = make_app(tmp_path / "aws", "aws-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    doc = _manifest(app)
    doc["clouds"] = {"aws": {"log_retention_days": "x"}}
    _write_manifest(app, doc)
    with pytest.raises(AppError, match=r"unumctl.yaml: clouds.aws.log_retention_days: 'x' must be an integer"):
        deployment(load_app(app), "aws")
    doc["clouds"] = {"aws": {"log_retention_days": 8}}
    _write_manifest(app, doc)
    with pytest.raises(AppError, match=r"clouds.aws.log_retention_days: 8 is not one of CloudWatch's values"):
        deployment(load_app(app), "aws")
    code, _, err = cli("validate", str(app))  # validate says so too, without building
    assert code == 2 and "clouds.aws.log_retention_days: 8 is not one of CloudWatch's values" in one_error(err)
    doc["clouds"] = {"aws": {"log_retention_days": 30}}
    _write_manifest(app, doc)
    assert deployment(load_app(app), "aws").params.log_retention_days == 30


# ---------------------------------------------------------------- validate imports the code
def test_validate_missing_handler(app):
    (app / "functions" / "second" / "app.py").write_text("def handle(e, c):\n    return e\n")
    code, _, err = cli("validate", str(app))
    assert code == 2
    line = one_error(err)
    assert "functions.Second.handler: 'app.handler'" in line and "has no attribute 'handler'" in line


def test_validate_handler_not_callable(app):
    (app / "functions" / "second" / "app.py").write_text("handler = 42\n")
    code, _, err = cli("validate", str(app))
    assert code == 2 and "'handler' is a int, not a function" in one_error(err)


def test_validate_syntax_error_names_file_and_line(app):
    path = app / "functions" / "second" / "app.py"
    path.write_text("def handler(e, c):\n    return e +\n")
    code, _, err = cli("validate", str(app))
    assert code == 2 and f"{path.resolve()}:2: syntax error" in one_error(err)


def test_validate_import_error_and_isolation(app, tmp_path):
    path = app / "functions" / "second" / "app.py"
    path.write_text("import no_such_module_xyz\ndef handler(e, c):\n    return e\n")
    code, _, err = cli("validate", str(app))
    assert code == 2 and f"{path.resolve()}:1: ModuleNotFoundError" in one_error(err)
    # a requirement that is not installed here: a note, not an error
    doc = _manifest(app)
    doc["functions"]["Second"]["requirements"] = ["no-such-module-xyz==1.0"]
    _write_manifest(app, doc)
    code, _, err = cli("validate", str(app))
    assert code == 0 and any("not checked: no_such_module_xyz" in ln for ln in err), err


def test_validate_no_network_and_timeout(app):
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    path = app / "functions" / "second" / "app.py"
    path.write_text("import socket\nsocket.create_connection(('127.0.0.1', %d))\n"
                    "def handler(e, c):\n    return e\n" % port)
    try:
        code, _, err = cli("validate", str(app))
        assert code == 2 and "network access is disabled during unumctl validate" in one_error(err)
        srv.settimeout(0.2)
        with pytest.raises(OSError):
            srv.accept()  # nobody connected
    finally:
        srv.close()
    from unumctl.check import check_function
    from unumctl.pipeline import load as load_app
    path.write_text("while True:\n    pass\n")
    f = check_function(load_app(app), "Second", timeout=2)
    assert not f.ok and "did not finish in 2 s" in f.message


def test_validate_prints_go_to_stderr_not_answer(app):
    (app / "functions" / "second" / "app.py").write_text("print('hello', flush=True)\ndef handler(e, c):\n    return e\n")
    code, out, err = cli("validate", str(app))
    assert code == 0 and out == ""


# ---------------------------------------------------------------- run-function
def test_run_function_prints_the_return_value(app, tmp_path):
    (app / "functions" / "second" / "app.py").write_text(
        "def handler(e, c):\n    print('working on', e, c.function, c.instance)\n    return {'x': e * 10}\n")
    code, out, err = cli_process("run-function", str(app), "Second", "--event", str(tmp_path / "in.json"))
    assert code == 0 and json.loads(out) == {"x": 40}
    assert "working on 4 Second Second" in err
    # no session ran: nothing under .unum/local
    assert not (app / ".unum" / "local").exists()


def test_run_function_user_exception(app, tmp_path):
    path = app / "functions" / "second" / "app.py"
    path.write_text("def handler(e, c):\n    raise KeyError('sensor-7')\n")
    code, out, err = cli_process("run-function", str(app), "Second", "--event", str(tmp_path / "in.json"))
    assert code == 1 and out == ""
    assert one_error(err) == "unumctl: Second: KeyError: 'sensor-7'"
    assert any(str(path) in ln and "line 2" in ln for ln in err)  # the user's file, not a bundle


def test_run_function_bad_input(app, tmp_path):
    code, _, err = cli("run-function", str(app), "Nope", "--event", str(tmp_path / "in.json"))
    assert code == 2 and "FUNCTION: no function 'Nope' (functions: First, Second)" in one_error(err)
    code, _, err = cli("run-function", str(app), "Second", "--event", str(tmp_path / "missing.json"))
    assert code == 2 and "--event:" in one_error(err)


def test_run_function_timeout_and_non_json(app, tmp_path):
    path = app / "functions" / "second" / "app.py"
    path.write_text("import time\ndef handler(e, c):\n    time.sleep(30)\n")
    code, _, err = cli("run-function", str(app), "Second", "--event", str(tmp_path / "in.json"), "--timeout", "1")
    assert code == 1 and "Second: Unum.Timeout: the handler ran past 1 s" in one_error(err)
    path.write_text("import datetime\ndef handler(e, c):\n    return datetime.date(2026, 1, 1)\n")
    code, _, err = cli("run-function", str(app), "Second", "--event", str(tmp_path / "in.json"))
    assert code == 1 and "Second: TypeError: Object of type date is not JSON serializable" in one_error(err)


# ---------------------------------------------------------------- user exceptions: traceback, user paths
def test_debug_shows_user_traceback(app, tmp_path):
    path = app / "functions" / "second" / "app.py"
    path.write_text("def helper(e):\n    raise KeyError('sensor-7')\n\ndef handler(e, c):\n    return helper(e)\n")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"))
    assert code == 1 and not any("Traceback" in ln for ln in err)
    assert one_error(err).endswith(f"KeyError: 'sensor-7' (at {path}:2)")
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--debug")
    assert code == 1
    text = "\n".join(err)
    assert "Traceback (most recent call last):" in text
    assert f'File "{path}", line 5, in handler' in text and f'File "{path}", line 2, in helper' in text
    assert ".unum/local/dev/bundles" not in text.split("Traceback", 1)[1]


def test_step_functions_error_points_at_user_source(tmp_path):
    from unumctl_testing.apps import make_sfn_app, sfn_task
    root = make_sfn_app(tmp_path / "sfn", {"StartAt": "Boom", "States": {"Boom": sfn_task("Boom")}},
                        {"Boom": "def handler(e, c):\n    raise ValueError('bad reading')\n"})
    (tmp_path / "in.json").write_text("{}")
    code, _, err = cli("invoke", str(root), "--data", str(tmp_path / "in.json"), "--debug")
    assert code == 1
    line = one_error(err)
    user = root / "functions" / "boom" / "app.py"
    assert line.endswith(f"failed in Boom: ValueError: bad reading (at {user}:2)"), line
    assert "errorMessage" not in line and ".unum/" not in line
    text = "\n".join(err)
    assert f'File "{user}", line 2, in handler' in text


def test_failure_explain_truncated_lambda_cause():
    from unumctl.failure import explain
    cause = json.dumps({"errorMessage": "x" * 10, "errorType": "E",
                        "stackTrace": ['  File "/nowhere/app.py", line 3, in handler\n    boom()']})
    msg, where, trace = explain({"cause": cause[:-5], "error": "E"})
    assert msg == "x" * 10 and where == "/nowhere/app.py:3" and len(trace) == 1


# ---------------------------------------------------------------- --no-wait leaves no input copy
def test_no_wait_leaves_no_input_copy(app, tmp_path):
    import subprocess
    import sys
    big = [{"k": "x" * 100, "i": i} for i in range(3000)]  # > inline payload size: a blob
    (tmp_path / "big.json").write_text(json.dumps(big))
    (app / "functions" / "first" / "app.py").write_text("def handler(e, c):\n    return len(e)\n")
    code, out, _ = cli("invoke", str(app), "--data", str(tmp_path / "big.json"), "--no-wait")
    sessions = [out.strip()]
    assert code == 0
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(app), "--data", "-", "--no-wait"],
                          input="[1, 2]", capture_output=True, text=True, timeout=120)
    sessions.append(proc.stdout.strip())
    for session in sessions:
        for _ in range(300):
            code, out, _ = cli("result", str(app), session)
            if code != 3:
                break
            time.sleep(0.1)
        assert code == 0
    assert [json.loads(cli("result", str(app), s)[1]) for s in sessions] == [30000, 20]
    state = app / ".unum" / "local" / "dev"
    allowed = {"unum.db", "unum.db-wal", "unum.db-shm", "unum.db-wlock", "runners.lock", "versions", "blobs"} | {f"{s}.log" for s in sessions}
    leftovers = sorted(p.name for p in state.iterdir() if p.name not in allowed)
    assert leftovers == [], leftovers
    blobs = state / "blobs"
    assert not blobs.exists() or not any(p.suffix == ".json" for p in blobs.rglob("*"))


def test_ir_and_state_machine_files_not_utf8(app, tmp_path):
    ir = app / "ir" / "Second.yaml"
    ir.write_bytes(ir.read_bytes() + "# caf\xe9\n".encode("latin-1"))
    code, _, err = cli("validate", str(app))
    assert code == 2 and f"{ir}: not UTF-8" in one_error(err)
    from unumctl_testing.apps import make_sfn_app, sfn_task
    root = make_sfn_app(tmp_path / "sfn", {"StartAt": "A", "States": {"A": sfn_task("A")}},
                        {"A": "def handler(e, c):\n    return e\n"})
    sm = root / "statemachine.json"
    sm.write_bytes(sm.read_bytes().replace(b'"StartAt"', b'"Comment": "caf\xe9", "StartAt"'))
    code, _, err = cli("validate", str(root))
    assert code == 2 and f"{sm}: not UTF-8" in one_error(err)


def test_error_lines_are_capped(app, tmp_path):
    """Whatever a check repeats, the error stays one line of at most ~1000 characters."""
    doc = _manifest(app)
    doc["functions"]["Second"]["code"] = "functions/" + "/".join(["x" * 200] * 10)
    _write_manifest(app, doc)
    code, _, err = cli("validate", str(app))
    line = one_error(err)
    assert code == 2 and len(line) < 1100 and "characters)" in line
    # a path component longer than the file system allows: no traceback either
    doc["functions"]["Second"]["code"] = "functions/" + "x" * 5000
    _write_manifest(app, doc)
    code, _, err = cli("validate", str(app))
    assert code == 2 and len(err) == 1 and "functions.Second.code:" in one_error(err)


def test_runtime_log_line_and_history_point_at_user_source(tmp_path):
    """The runtime's own failure log line (`[Boom] Boom: ValueError: {Lambda's JSON cause}`),
    `describe` and `history` show the user's file, not the bundle copy under .unum/."""
    from unumctl_testing.apps import make_sfn_app, sfn_task
    root = make_sfn_app(tmp_path / "sfn", {"StartAt": "Boom", "States": {"Boom": sfn_task("Boom")}},
                        {"Boom": "def handler(e, c):\n    raise ValueError('bad reading')\n"})
    (tmp_path / "in.json").write_text("{}")
    code, _, err = cli_process("invoke", str(root), "--data", str(tmp_path / "in.json"), "--session", "up-1")
    assert code == 1
    user = str(root / "functions" / "boom" / "app.py")
    logged = [ln for ln in err if ln.startswith("[Boom] ")]
    assert len(logged) == 1 and user in logged[0], err
    bundle_user_file = re.compile(r"\.unum/local/dev/versions/[0-9a-f]{16}/Boom-[0-9a-f]{16}/app\.py")
    assert not bundle_user_file.search(logged[0])
    code, out, err = cli_process("describe", str(root), "up-1")
    assert code == 0, err
    assert f"error:      ValueError in Boom: bad reading (at {user}:2)" in out.splitlines()
    for cmd in (["describe", str(root), "up-1", "--json"], ["history", str(root), "up-1", "--json"]):
        code, out, err = cli_process(*cmd)
        assert code == 0 and user in out and not bundle_user_file.search(out), (cmd, out[:500])


def test_unquoted_history_off_in_yaml_means_off(app):
    """`history: off` as docs/observability.md writes it: YAML 1.1 reads the unquoted word
    as false, which the manifest takes as "off" (other values still name the field)."""
    from unumctl.manifest import AppError
    from unumctl.pipeline import load as load_app
    text = (app / "unumctl.yaml").read_text()
    assert "runtime:" not in text  # the fixture's manifest sets no runtime options
    (app / "unumctl.yaml").write_text(text + "runtime:\n  history: off\n")
    assert load_app(app).manifest.runtime.history == "off"
    (app / "unumctl.yaml").write_text(text + "runtime:\n  history: on\n")
    with pytest.raises(AppError, match="runtime.history"):
        load_app(app)
