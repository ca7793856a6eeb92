"""Nothing of the user's machine leaks into a deployment (issue 11, item 7): manifest values
reach Terraform as inert literals, requirements are specifiers only (never pip options, paths
or URLs), bundles leave out secrets, virtual environments and Terraform state and refuse links
and code directories outside the app, and yes/no settings are booleans, not strings."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from unumctl.deploy.models import Deployment
from unumctl.deploy.appgraph import build
from unumctl.build import KEY_SCAN_BYTES, build_function, code_files, holds_private_key, scan_code
from unumctl.cli import app as cli
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl.aws.render import render_main
from unumctl.render.hcl import hcl_value

from unumctl_testing.apps import make_app

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")

ECHO = "def handler(event, context):\n    return event\n"
# closes the string and the block, then declares a resource whose provisioner runs on apply
INJECTION = ('x"\n  }\n}\nresource "terraform_data" "pwn" {\n  provisioner "local-exec" {\n'
             '    command = "touch /tmp/pwned"\n  }\n}\nterraform {\n  backend "local" {\n    path = "y')
TEMPLATE_INJECTION = '${file("/etc/passwd")}%{ if true }t%{ endif }\\u0041\b\x7f'


def _app(tmp_path: Path, **manifest_extra) -> Path:
    root = make_app(tmp_path / "app", "leak-app", {"One": ({"Start": True}, ECHO)})
    mpath = root / "unumctl.yaml"
    doc = yaml.safe_load(mpath.read_text())
    for key, value in manifest_extra.items():
        if key == "function":
            doc["functions"]["One"].update(value)
        else:
            doc[key] = value
    mpath.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _deployment(tmp_path: Path) -> Deployment:
    """The AWS model of a one-function app with placeholder archives under `tmp_path`."""
    dep = build(load_app(_app(tmp_path / "model")), "aws")
    for f in dep.all_functions:
        f.archive.path, f.archive.sha256 = tmp_path / f"{f.unum_name}.zip", "0" * 64
    return dep


# --- 1. manifest values rendered into .tf ------------------------------------------------

@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform binary not on PATH")
@pytest.mark.parametrize("value", [INJECTION, TEMPLATE_INJECTION, "plain", "é ☃ \t tab", ""])
def test_hcl_literal_evaluates_to_the_same_string_in_terraform(value, tmp_path):
    """Terraform's own parser reads hcl_value(s) back as exactly s: no interpolation
    (`${file(...)}` is not called), no directive, no escape of the block."""
    proc = subprocess.run(["terraform", "console"], input=f"base64encode({hcl_value(value)})\n",
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert base64.b64decode(json.loads(proc.stdout.strip())).decode() == value


def test_backend_value_injection_renders_inert(tmp_path):
    text = render_main(_deployment(tmp_path), tmp_path,
                       {"type": "local", "config": {"path": INJECTION, "workspace_dir": TEMPLATE_INJECTION}})
    doc = hcl2.loads(text)
    assert "resource" not in doc and "terraform_data" not in json.dumps(sorted(doc))
    backends = [b for t in doc["terraform"] for b in t.get("backend", [])]
    # python-hcl2 8 keeps a label's quotes, older versions drop them
    assert len(backends) == 1 and {k.strip('"') for k in backends[0]} - {"__is_block__"} == {"local"}
    assert "$${file(" in text and "%%{ if" in text and "${file(" not in text.replace("$${", "")


@pytest.mark.parametrize("backend, field", [
    ({"type": 'local" {}\n}\nresource "terraform_data" "x" {\n  input = "'}, "clouds.aws.backend.type"),
    ({"type": "shell"}, "clouds.aws.backend.type"),
    ({"type": "s3", "config": {'bucket = "b"\n}\nresource "terraform_data" "x" {\n  input': "v"}},
     "clouds.aws.backend.config"),
    ({"type": "s3", "config": {"bucket": float("nan")}}, "clouds.aws.backend.config.bucket"),
    ({"type": "s3", "extra": 1}, "clouds.aws.backend"),
])
def test_backend_type_and_keys_must_be_known_identifiers(backend, field, tmp_path):
    root = _app(tmp_path, clouds={"aws": {"backend": backend}})
    with pytest.raises(AppError) as err:
        load_app(root)  # the typed clouds.aws section (unumctl/deploy/settings.py)
    msg = str(err.value)
    assert f"unumctl.yaml: {field}" in msg and "\n" not in msg


def test_render_main_refuses_a_non_identifier_backend_key_itself(tmp_path):
    with pytest.raises(ValueError, match="not an identifier"):
        render_main(_deployment(tmp_path), tmp_path, {"type": "s3", "config": {"a b": "c"}})


def test_gcp_string_settings_render_inert(tmp_path):
    from unumctl.pipeline import deployment
    from unumctl.gcp.render import render

    # the database id is checked against Firestore's id rule when the manifest loads
    with pytest.raises(AppError) as err:
        load_app(_app(tmp_path / "db", clouds={"gcp": {"database": INJECTION}}))
    assert "clouds.gcp.database" in str(err.value) and "\n" not in str(err.value)
    app = load_app(_app(tmp_path, clouds={"gcp": {"database_location": INJECTION}}))
    d, _ = render(app, deployment(app, "gcp", project=TEMPLATE_INJECTION, region="europe-west1"))
    text = (d / "main.tf").read_text()
    doc = hcl2.loads(text)
    assert "resource" not in doc or all("terraform_data" not in r for r in doc["resource"])
    assert "terraform_data" in text  # it is there, as a string
    assert "${file(" not in text.replace("$${", "")


# --- 2. requirements ----------------------------------------------------------------------

@pytest.mark.parametrize("entry", ["--no-binary=:all:", "-e .", "./evilpkg", "/tmp/evilpkg",
                                   "evil @ file:///tmp/evilpkg", "git+https://example.org/x.git",
                                   "evil.tar.gz", "-r other.txt"])
def test_requirements_refuse_options_paths_and_urls(entry, tmp_path):
    root = _app(tmp_path, function={"requirements": ["requests>=2.31", entry]})
    with pytest.raises(AppError) as err:
        load_app(root)
    msg = str(err.value)
    assert "functions.One.requirements" in msg and repr(entry[:60]) in msg and "\n" not in msg


def test_requirement_specifiers_are_accepted(tmp_path):
    reqs = ["requests>=2.31", "numpy[extra]==1.26.*; python_version >= '3.10'", "Pillow"]
    assert load_app(_app(tmp_path, function={"requirements": reqs})).manifest.functions["One"].requirements == reqs


def test_pip_never_runs_a_local_setup_py(tmp_path, monkeypatch):
    """The reported leak: `--no-binary=:all:` plus a local path made pip run that package's
    setup.py on the build host. The installer refuses before pip starts."""
    from unumctl.aws.package import PackagingError, install_requirements

    pkg = tmp_path / "evilpkg"
    pkg.mkdir()
    marker = tmp_path / "ran"
    (pkg / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n"
                                  "from setuptools import setup\nsetup(name='evilpkg')\n")
    monkeypatch.setenv("UNUMCTL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(PackagingError, match="pip option"):
        install_requirements(["--no-binary=:all:", str(pkg)], "x86_64")
    with pytest.raises(PackagingError, match="not a requirement specifier"):
        install_requirements([str(pkg)], "x86_64")
    assert not marker.exists()


def test_gcp_code_requirements_file_is_checked(tmp_path):
    from unumctl.gcp.bundle import merged_requirements

    root = _app(tmp_path)
    (root / "functions/one/requirements.txt").write_text("# deps\nrequests\n\n-e ../../evil\n")
    with pytest.raises(AppError, match=r"requirements.txt: line 4: '-e \.\./\.\./evil' is a pip option"):
        merged_requirements(load_app(root), "One")


# --- 3. bundles ---------------------------------------------------------------------------

SECRETS = [".env", ".env.production", ".venv/lib/python3.12/site-packages/x.py", ".aws/credentials",
           "id_rsa", "id_ed25519.pub", "terraform.tfstate", "terraform.tfstate.backup",
           ".terraform/providers/x", "sub/.env", "sub/server.pem", ".git/config", "__pycache__/a.pyc",
           "myenv/pyvenv.cfg", "myenv/lib/site.py"]


def _code_with_secrets(tmp_path: Path) -> tuple[Path, Path]:
    root = _app(tmp_path)
    code = root / "functions/one"
    for rel in SECRETS + ["sub/helper.py", ".env.example", "data/big.bin", "data/keep.txt"]:
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text("secret" if rel in SECRETS else "ok")
    return root, code


def test_default_ignore_keeps_secrets_out_of_every_bundle(tmp_path):
    root, _ = _code_with_secrets(tmp_path)
    app = load_app(root)
    names = {rel for rel, _ in code_files(app, "One")}
    assert names == {"app.py", "sub/helper.py", "data/big.bin", "data/keep.txt"}  # .env.* too
    import zipfile
    for cloud in ("local", "gcp", "aws"):
        art = build_function(app, "One", cloud, tmp_path / f"out-{cloud}")
        with zipfile.ZipFile(art.path) as zf:
            held = set(zf.namelist())
        assert not held & set(SECRETS), cloud


def test_unumignore_adds_patterns_and_can_reinclude(tmp_path):
    root, code = _code_with_secrets(tmp_path)
    (code / ".unumignore").write_text("# big test data\ndata/*.bin\n!.env.example\n!sub/server.pem\n")
    names = {rel for rel, _ in code_files(load_app(root), "One")}
    assert names == {"app.py", "sub/helper.py", "data/keep.txt", ".env.example", "sub/server.pem"}


def test_links_inside_the_app_are_followed_links_outside_refused(tmp_path):
    root = _app(tmp_path)
    code = root / "functions/one"
    (root / "shared.py").write_text("X = 1\n")
    os.symlink(root / "shared.py", code / "shared.py")
    os.symlink(code, code / "loop")  # a link back up is not walked twice
    app = load_app(root)
    assert {rel for rel, _ in code_files(app, "One")} == {"app.py", "shared.py"}
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "config").write_text("secret")
    os.symlink(outside / "config", code / "settings.ini")
    with pytest.raises(AppError) as err:
        code_files(app, "One")
    assert "functions.One.code" in str(err.value) and "settings.ini" in str(err.value)
    assert "outside the app" in str(err.value)
    (code / ".unumignore").write_text("settings.ini\n")
    assert {rel for rel, _ in code_files(load_app(root), "One")} == {"app.py", "shared.py"}


def test_link_to_an_outside_directory_is_refused(tmp_path):
    root = _app(tmp_path)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "notes.txt").write_text("secret")
    os.symlink(home, root / "functions/one/home")
    with pytest.raises(AppError, match="outside the app"):
        code_files(load_app(root), "One")


def test_code_outside_the_app_is_refused_unless_shared(tmp_path):
    root = _app(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root / "functions/one", elsewhere)
    for code, needle in ((str(elsewhere), "is absolute"), ("../elsewhere", "is outside the app")):
        r = _app(tmp_path, function={"code": code})
        with pytest.raises(AppError) as err:
            load_app(r)
        assert "functions.One.code" in str(err.value) and needle in str(err.value)
    r = _app(tmp_path, function={"code": "../elsewhere"}, shared_code=["../elsewhere"])
    assert {rel for rel, _ in code_files(load_app(r), "One")} == {"app.py"}


def test_build_list_prints_what_each_bundle_holds(tmp_path):
    root, _ = _code_with_secrets(tmp_path)
    res = CliRunner().invoke(cli, ["build", str(root), "--cloud", "local", "--list"])
    assert res.exit_code == 0, res.output
    rows = [ln.split("\t") for ln in res.stdout.splitlines()]
    paths = {r[1] for r in rows}
    assert {"app.py", "sub/helper.py", "unum_ir.json", "runtime/engine.py"} <= paths
    assert not paths & set(SECRETS)
    assert all(r[0] == "One" and int(r[2]) >= 0 for r in rows)
    assert ["One", "app.py", str(len(ECHO))] in rows
    assert not (root / ".unum" / "build").exists()  # listing builds nothing


# credential files the default list missed before issue 23 (AWS shared credentials, Google
# service-account keys, database passwords, shell history, Terraform/Docker CLI configs)
CREDENTIAL_FILES = ["credentials", "sub/credentials", "credentials.json", "service-account.json",
                    "conf/deploy-key.json", ".pgpass", ".bash_history", ".terraformrc", ".dockercfg",
                    "application_default_credentials.json"]


@pytest.mark.parametrize("rel", CREDENTIAL_FILES)
def test_credential_files_are_left_out(rel, tmp_path):
    root = _app(tmp_path)
    f = root / "functions/one" / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("aws_secret_access_key = not-a-real-key\n")
    files, left = scan_code(load_app(root), "One")
    assert {r for r, _ in files} == {"app.py"}
    why = {x.path: x.reason for x in left}
    assert why[rel].startswith("default ignore pattern"), why
    art = build_function(load_app(root), "One", "aws", tmp_path / "out")
    import zipfile
    assert rel not in zipfile.ZipFile(art.path).namelist()


# a private key in a file whose name says nothing: each format's first line (no real key material)
PRIVATE_KEYS = {
    "settings.txt": "x = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
    "deploy": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    "conf/gcp.json": json.dumps({"type": "service_account", "private_key":
                                 "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"}),
    "tls/ec.txt": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n",
    "enc.txt": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkq\n",
    "signing.asc": "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n",
    "putty.txt": "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
}
NOT_KEYS = {
    "public.txt": "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----\n",
    "ca.crt": "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----\n",
    "notes.md": "rotate the private key every 90 days (BEGIN PRIVATE KEY in docs)\n",
}


def test_files_holding_a_private_key_are_left_out_by_content(tmp_path):
    root = _app(tmp_path)
    code = root / "functions/one"
    for rel, text in {**PRIVATE_KEYS, **NOT_KEYS}.items():
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text(text)
    files, left = scan_code(load_app(root), "One")
    assert {r for r, _ in files} == {"app.py", *NOT_KEYS}
    why = {x.path: x.reason for x in left}
    assert set(why) == set(PRIVATE_KEYS), why
    assert why["settings.txt"].startswith("holds a private key (-----BEGIN RSA PRIVATE KEY-----)")
    assert "'!settings.txt' in .unumignore" in why["settings.txt"]
    import zipfile
    held = set(zipfile.ZipFile(build_function(load_app(root), "One", "gcp", tmp_path / "out").path).namelist())
    assert not held & set(PRIVATE_KEYS) and set(NOT_KEYS) <= held
    # a deliberate `!name` in .unumignore puts one back (and only that one)
    (code / ".unumignore").write_text("!tls/ec.txt\n")
    assert {r for r, _ in code_files(load_app(root), "One")} == {"app.py", "tls/ec.txt", *NOT_KEYS}


def test_private_key_scan_reads_a_bounded_prefix(tmp_path):
    """The scan reads at most KEY_SCAN_BYTES: a marker inside them is found, one after them is
    not (the documented bound; docs/security.md)."""
    marker = b"-----BEGIN PRIVATE KEY-----\n"
    near, far = tmp_path / "near.bin", tmp_path / "far.bin"
    near.write_bytes(b"\0" * (KEY_SCAN_BYTES - len(marker)) + marker)
    far.write_bytes(b"\0" * KEY_SCAN_BYTES + marker)
    assert holds_private_key(near) == "-----BEGIN PRIVATE KEY-----"
    assert holds_private_key(far) is None


def test_build_list_says_what_was_left_out_and_why(tmp_path):
    root, code = _code_with_secrets(tmp_path)
    (code / ".unumignore").write_text("# big test data\ndata/*.bin\n")
    (code / "key.txt").write_text(PRIVATE_KEYS["settings.txt"])
    (code / ".pgpass").write_text("db:5432:*:app:pw\n")
    res = CliRunner().invoke(cli, ["build", str(root), "--cloud", "aws", "--list"])
    assert res.exit_code == 0, res.output
    held = {ln.split("\t")[1] for ln in res.stdout.splitlines()}
    rows = [ln.split("\t") for ln in res.stderr.splitlines() if ln.startswith("left out\t")]
    why = {r[2]: r[3] for r in rows}
    assert all(r[1] == "One" and len(r) == 4 for r in rows)
    assert why["data/big.bin"] == ".unumignore line 2: 'data/*.bin'"
    assert why[".env"] == "default ignore pattern '.env'"
    assert why[".env.production"] == "default ignore pattern '.env.*'"
    assert why[".pgpass"] == "default ignore pattern '.pgpass'"
    assert why[".venv/"] == "default ignore pattern '.venv/'"
    assert why["myenv/"] == "a virtual environment (holds pyvenv.cfg)"
    assert why["key.txt"].startswith("holds a private key (-----BEGIN RSA PRIVATE KEY-----)")
    assert not held & set(why) and "app.py" in held


# --- 4. booleans --------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["no", "false", "yes", 0, 1])
def test_point_in_time_recovery_string_is_an_error(value, tmp_path):
    root = _app(tmp_path, clouds={"aws": {"point_in_time_recovery": value}})
    with pytest.raises(AppError, match="clouds.aws.point_in_time_recovery: .* must be true or false"):
        load_app(root)


def test_point_in_time_recovery_boolean_renders(tmp_path):
    dep = _deployment(tmp_path)
    dep.point_in_time_recovery = True
    assert "point_in_time_recovery = true" in render_main(dep, tmp_path)
    dep.point_in_time_recovery = False
    assert "point_in_time_recovery = false" in render_main(dep, tmp_path)


def test_gcp_create_database_string_is_an_error(tmp_path):
    root = _app(tmp_path, clouds={"gcp": {"create_database": "no"}})
    with pytest.raises(AppError, match="clouds.gcp.create_database: 'no' must be true or false"):
        load_app(root)


def test_validate_command_names_the_bad_boolean(tmp_path):
    for cloud, key in (("aws", "s3_use_path_style"), ("gcp", "create_database")):
        root = _app(tmp_path / cloud, clouds={cloud: {key: "no"}})
        res = CliRunner().invoke(cli, ["validate", str(root)])
        assert res.exit_code == 2 and f"clouds.{cloud}.{key}: 'no' must be true or false" in res.output


def test_a_remote_state_is_keyed_by_region_and_stage():
    """Two regions or stages of one app never share a remote state: the backend setting that
    names the state gets <region>/<stage> before its last part (unumctl/aws/render.py)."""
    from unumctl.aws.render import keyed_backend_config
    s3 = {"type": "s3", "config": {"bucket": "b", "key": "unum/wordcount.tfstate"}}
    keys = {keyed_backend_config(s3, r, st)["key"] for r in ("us-east-1", "us-west-2") for st in ("dev", "prod")}
    assert keys == {"unum/us-east-1/dev/wordcount.tfstate", "unum/us-east-1/prod/wordcount.tfstate",
                    "unum/us-west-2/dev/wordcount.tfstate", "unum/us-west-2/prod/wordcount.tfstate"}
    assert keyed_backend_config({"type": "gcs", "config": {"prefix": "tf"}}, "us-east-1", "dev")["prefix"] == \
        "us-east-1/dev/tf"
    assert s3["config"]["key"] == "unum/wordcount.tfstate"  # the manifest's value is not changed
    with pytest.raises(ValueError, match="keys the state per region and stage only for"):
        keyed_backend_config({"type": "pg", "config": {}}, "us-east-1", "dev")


def test_render_main_writes_the_keyed_remote_state(tmp_path):
    dep = _deployment(tmp_path)
    dep.region, dep.stage = "eu-west-1", "prod"
    text = render_main(dep, tmp_path, {"type": "s3", "config": {"key": "unum/app.tfstate"}})
    assert 'key = "unum/eu-west-1/prod/app.tfstate"' in text
