"""`unumctl apply/destroy --cloud gcp` against a fake `terraform` executable (UNUMCTL_TERRAFORM):
the real TerraformRunner (unumctl/terraform.py) and GcpTarget run; only the binary at the
boundary is replaced, because the google provider cannot be installed here. The fake answers
init/plan/show/output/state and plays a script of apply outcomes, printing an error the way
Terraform prints a provider error with -no-color (plain diagnostics, detail wrapped).

- an apply failing once with a documented propagation error is planned and applied again,
  with one line saying why, after the backoff (unumctl/gcp/propagation.py);
- another error, or a mix, is not retried; a propagation error that persists gives up after
  propagation.ATTEMPTS;
- destroy keeps the Firestore database and records it; the next apply renders an import block
  for it and forgets the record once applied; destroy --delete-data turns delete protection
  off (a targeted apply with the two variables) and destroys; "Database already exists"
  without a record is one line naming the fix (unumctl/gcp/adopt.py).
"""

from __future__ import annotations

import json
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from unumctl.targets import TargetError, get_target

from unumctl_testing.apps import make_app

pytest.importorskip("python_terraform", reason="python-terraform not installed (pip install -e '.[gcp]')")

DATABASE = "unum-retry-app-dev-europe-west1"  # the app's database: unum-<app>-<stage>-<region> (unumctl/gcp/names.py)
DB = "module.datastore.google_firestore_database.this[0]"

FAKE = r'''
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
state = Path(os.environ["FAKE_TF_STATE"])
s = json.loads(state.read_text())
s["calls"].append(args)
cwd = Path.cwd()
code = 0
if args[0] == "plan":
    out = next(a.split("=", 1)[1] for a in args if a.startswith("-out="))
    (cwd / out).write_text("plan")
    print("Plan: 1 to add, 0 to change, 0 to destroy.")
    code = 2
elif args[0] == "show":
    print(json.dumps({"resource_changes": [{"address": "module.fn_A.google_pubsub_topic.this", "mode": "managed",
                                            "change": {"actions": ["create"]}}]}))
elif args[0] == "apply":
    outcome = s["applies"].pop(0) if s["applies"] else "ok"
    if outcome == "ok":
        if "-destroy" in args:
            s["resources"] = []
        else:
            s["resources"] = sorted(set(s["resources"]) | {"module.fn_A.google_pubsub_topic.this", s["db"]})
        (cwd / "terraform.tfstate").write_text("{}")
        print("Apply complete!")
    else:
        sys.stderr.write(outcome)
        code = 1
elif args[0] == "output":
    print(json.dumps({"bucket": {"value": "unum-a-1234abcd"}}))
elif args[0] == "state":
    print("\n".join(s["resources"]))
state.write_text(json.dumps(s))
sys.exit(code)
'''


def _diag(summary: str) -> str:
    """A provider error as Terraform prints it with -no-color: `Error: <summary>`, the
    resource, and the text wrapped at 78 columns as in a non-terminal."""
    body = textwrap.fill(summary, 78)
    return (f"\nError: {body}\n\n  with module.fn_A.google_cloudfunctions2_function.this,\n"
            "  on modules/gcp-unum-function/main.tf line 29, in resource \"google_cloudfunctions2_function\" \"this\":\n"
            "  29: resource \"google_cloudfunctions2_function\" \"this\" {\n\n")


EVENTARC = _diag('Error creating function: googleapi: Error 400: Validation failed for trigger '
                 'projects/p/locations/europe-west1/triggers/a-a-123: Invalid resource state for "": Permission '
                 'denied while using the Eventarc Service Agent. If you recently started to use Eventarc, it may '
                 'take a few minutes before all necessary permissions are propagated to the Service Agent. '
                 'Otherwise, verify that it has Eventarc Service Agent role.')
DENIED = _diag("Error creating Topic: googleapi: Error 403: The caller does not have permission")
CONFLICT = _diag("Error creating Database: googleapi: Error 409: Database already exists. Please use another "
                 "database_id")


@pytest.fixture
def fake(tmp_path, monkeypatch, emulators):
    """(app, state dict reader, set_applies): the fake terraform on UNUMCTL_TERRAFORM; the
    deployment's database is the Firestore emulator's (where apply records each version,
    unumctl/gcp/versions.py)."""
    exe = tmp_path / "terraform"
    exe.write_text(f"#!{sys.executable}\n{FAKE}")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    st = tmp_path / "fake-state.json"
    st.write_text(json.dumps({"calls": [], "applies": [], "resources": [], "db": DB}))
    monkeypatch.setenv("UNUMCTL_TERRAFORM", str(exe))
    monkeypatch.setenv("FAKE_TF_STATE", str(st))
    monkeypatch.delenv("UNUMCTL_TF_PLUGIN_MIRROR", raising=False)
    # no Google credentials exist here (and none may be used); the check is outside what is tested
    monkeypatch.setattr("unumctl.gcp.target._credentials_available", lambda: True)
    slept: list[float] = []
    monkeypatch.setattr("unumctl.gcp.propagation._sleep", slept.append)
    app_dir = make_app(tmp_path / "app", "retry-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})

    class Fake:
        app = app_dir
        sleeps = slept

        @staticmethod
        def state() -> dict:
            return json.loads(st.read_text())

        @staticmethod
        def script(*outcomes: str) -> None:
            s = json.loads(st.read_text())
            s["applies"] = list(outcomes)
            st.write_text(json.dumps(s))

        @staticmethod
        def applies() -> list[list[str]]:
            return [c for c in json.loads(st.read_text())["calls"] if c[0] == "apply"]

        @staticmethod
        def target(**options):
            from unumctl.pipeline import load as load_app
            return get_target("gcp", load_app(app_dir), project="demo-project", region="europe-west1", **options)

    return Fake


@pytest.mark.slow  # a render and several terraform processes each
def test_apply_retries_a_propagation_error_once_and_says_why(fake, capsys):
    fake.script(EVENTARC, "ok")
    result = fake.target().apply(yes=True)
    assert len(fake.applies()) == 2 and fake.sleeps == [60.0]
    assert result["retries"] == [{"attempt": 1, "errors": ["eventarc-service-agent"], "waited_s": 60.0}]
    assert result["add"] == 1 and result["outputs"] == {"bucket": "unum-a-1234abcd"}
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "retrying in" in ln)
    assert "attempt 1 of 3 failed while waiting for the Eventarc service agent's permissions" in line
    assert "terraform-provider-google/issues/25294" in line and line.endswith("retrying in 60 s")


@pytest.mark.slow  # a render and several terraform processes each
def test_apply_does_not_retry_another_error(fake, capsys):
    fake.script(DENIED)
    with pytest.raises(TargetError, match=r"terraform apply failed .*Error 403: The caller does not have"):
        fake.target().apply(yes=True)
    assert len(fake.applies()) == 1 and fake.sleeps == []
    assert "retrying" not in capsys.readouterr().err


@pytest.mark.slow  # a render and several terraform processes each
def test_apply_does_not_retry_a_propagation_error_beside_another_error(fake):
    fake.script(EVENTARC + DENIED)
    with pytest.raises(TargetError):
        fake.target().apply(yes=True)
    assert len(fake.applies()) == 1 and fake.sleeps == []


@pytest.mark.slow  # a render and several terraform processes each
def test_apply_gives_up_after_the_last_attempt(fake, capsys):
    fake.script(EVENTARC, EVENTARC, EVENTARC, "ok")
    with pytest.raises(TargetError, match="Validation failed for trigger"):
        fake.target().apply(yes=True)
    assert len(fake.applies()) == 3 and fake.sleeps == [60.0, 180.0]
    assert "attempt 3 of 3 failed again while waiting for the Eventarc service agent's permissions; giving up" \
        in capsys.readouterr().err


@pytest.mark.slow  # a render and several terraform processes each
def test_destroy_keeps_the_database_and_the_next_apply_adopts_it(fake, capsys):
    t = fake.target()
    t.apply(yes=True)
    workdir = Path(t.apply(yes=True)["workdir"])
    assert "import {" not in (workdir / "main.tf").read_text()
    done = fake.target().destroy(yes=True)
    assert done["database"] == {"id": "projects/demo-project/databases/" + DATABASE, "kept": True}
    assert DB in done["destroyed"]
    rec = json.loads((workdir / "abandoned-database.json").read_text())
    assert rec == {"project": "demo-project", "database": DATABASE,
                   "id": "projects/demo-project/databases/" + DATABASE}
    assert f"kept the Firestore database {DATABASE}" in capsys.readouterr().err
    # the next apply imports it (no 409) and then forgets the record
    result = fake.target().apply(yes=True)
    assert result["adopted"] == "projects/demo-project/databases/" + DATABASE
    text = (workdir / "main.tf").read_text()
    assert 'import {\n  to = module.datastore.google_firestore_database.this[0]\n' \
           f'  id = "projects/demo-project/databases/{DATABASE}"\n}}' in text
    assert not (workdir / "abandoned-database.json").exists()
    assert "adopting the Firestore database" in capsys.readouterr().err
    from unumctl.gcp.target import _offline_checks
    assert len(_offline_checks(workdir)) == 2  # the render with the import passes schema and dependency checks
    fake.target().apply(yes=True)
    assert "import {" not in (workdir / "main.tf").read_text()


@pytest.mark.slow  # a render and several terraform processes each
def test_no_adoption_into_another_project(fake):
    fake.target().apply(yes=True)
    fake.target().destroy(yes=True)
    from unumctl.pipeline import load as load_app
    other = get_target("gcp", load_app(fake.app), project="other-project", region="europe-west1")
    assert other.apply(yes=True)["adopted"] is None


@pytest.mark.slow  # a render and several terraform processes each
def test_destroy_delete_data_turns_delete_protection_off_then_destroys(fake):
    fake.target().apply(yes=True)
    done = fake.target(delete_data=True).destroy(yes=True)
    assert done["database"]["kept"] is False
    flip, destroy = fake.applies()[-2:]
    assert "-var=database_delete_protection=false" in flip and "-var=database_deletion_policy=DELETE" in flip
    assert f"-target={DB}" in flip and "-destroy" not in flip
    assert "-destroy" in destroy and "-var=database_deletion_policy=DELETE" in destroy
    assert not (Path(done["workdir"]) / "abandoned-database.json").exists()


@pytest.mark.slow  # a render and several terraform processes each
def test_destroy_delete_data_needs_the_database_in_the_state(fake):
    fake.target().apply(yes=True)
    fake.target().destroy(yes=True)  # kept: the state no longer holds it
    fake.script()
    with pytest.raises(TargetError, match=r"--delete-data: the state in .* holds no Firestore database; .*"
                                          r"unumctl apply .* --cloud gcp --yes` \(it adopts it\)"):
        fake.target(delete_data=True).destroy(yes=True)


@pytest.mark.slow  # a render and several terraform processes each
def test_existing_database_without_a_record_is_one_line_naming_the_fix(fake):
    fake.script(CONFLICT)
    with pytest.raises(TargetError) as exc:
        fake.target().apply(yes=True)
    msg = str(exc.value)
    assert "\n" not in msg and fake.sleeps == []
    assert msg.startswith(f"the Firestore database {DATABASE} already exists in project demo-project")
    assert "import 'module.datastore.google_firestore_database.this[0]' " \
           "projects/demo-project/databases/" + DATABASE in msg
    assert "clouds.gcp.database" in msg and "clouds.gcp.create_database: false" in msg


@pytest.mark.slow  # imports the aws target
def test_delete_data_refused_where_destroy_deletes_the_data(tmp_path):
    """aws's destroy deletes its table already: the flag is refused in one line, nothing run."""
    from typer.testing import CliRunner

    from unumctl.cli import app as cli

    src = make_app(tmp_path / "app", "aws-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    res = CliRunner().invoke(cli, ["destroy", str(src), "--cloud", "aws", "--delete-data", "--yes"])
    assert res.exit_code == 2
    assert "--delete-data: destroy on --cloud aws deletes the app's data already; drop the flag" in res.output


def test_classify_reads_wrapped_and_lower_case_quotes():
    from unumctl.gcp import propagation

    lower = _diag("Error creating Trigger: googleapi: Error 400: permission denied while using the Eventarc "
                  "Service Agent. If you recently started to use Eventarc, it may take a few minutes before all "
                  "necessary permissions are propagated to the Service Agent. Otherwise, verify that it has "
                  "Eventarc Service Agent role")
    disabled = _diag("Error creating Topic: googleapi: Error 403: Cloud Pub/Sub API has not been used in project 1 "
                     "before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/"
                     "api/pubsub.googleapis.com/overview?project=1 then retry. If you enabled this API recently, "
                     "wait a few minutes for the action to propagate to our systems and retry.")
    assert [p.name for p in propagation.classify(lower + disabled)] == ["eventarc-service-agent", "api-just-enabled"]
    assert propagation.classify("Apply complete!") is None
    assert propagation.classify(DENIED) is None
