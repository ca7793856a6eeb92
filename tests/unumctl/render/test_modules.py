"""The Terraform modules in terraform/modules/ meet the registry standard (issue 11 item 4):
every variable has a description and a type, every output a description, versions.tf sets
minimum versions, README tables match the .tf files, each module has an example that calls
it. The checker is tools/tf_module_docs.py; these tests also show it fails on a broken copy.
The validation blocks mirror unumctl's own checks (the same bounds, read from the Python).
GCP examples: there is no google provider offline, so they are `terraform fmt -check`ed and
checked against the module's variables here; AWS examples are `terraform validate`d in
tests/aws/test_terraform_modules_aws.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")

from tools.tf_module_docs import (
    MODULES_DIR,
    _unquote,
    main,
    module_dirs,
    parse_module,
    problems,
    render_readme,
)

MODULES = module_dirs()
EXAMPLES = sorted(p for m in MODULES for p in (m / "examples").glob("*/main.tf"))


def test_all_four_modules_found():
    assert [m.name for m in MODULES] == ["aws-unum-datastore", "aws-unum-function",
                                         "gcp-unum-datastore", "gcp-unum-function"]


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_module_meets_registry_standard(module):
    assert problems(module) == []


@pytest.fixture
def broken(tmp_path):
    """A copy of aws-unum-function (meets the standard) to break in one way per test."""
    dst = tmp_path / "aws-unum-function"
    shutil.copytree(MODULES_DIR / "aws-unum-function", dst)
    assert problems(dst) == []
    return dst


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_fails_without_variable_description(broken):
    _edit(broken / "variables.tf", '  description = "Memory of the function in MB (Lambda: 128-10240)."\n', "")
    found = problems(broken)
    assert any("variable 'memory_size' has no description" in p for p in found), found
    assert main(["--check", str(broken)]) == 1


def test_fails_without_variable_type(broken):
    _edit(broken / "variables.tf", "  type        = map(string)\n", "")
    found = problems(broken)
    assert any("variable 'environment' has no type" in p for p in found), found


def test_fails_without_output_description(broken):
    _edit(broken / "outputs.tf", '  description = "Name of the Lambda function."\n', "")
    assert any("output 'function_name' has no description" in p for p in problems(broken))


def test_fails_without_versions_tf(broken):
    (broken / "versions.tf").unlink()
    assert any("no versions.tf" in p for p in problems(broken))


def test_fails_without_minimum_provider_version(broken):
    _edit(broken / "versions.tf", '      version = ">= 5.100"\n', "")
    assert any("provider 'aws' has no minimum version" in p for p in problems(broken))


def test_fails_without_readme(broken):
    (broken / "README.md").unlink()
    assert any("README.md: missing" in p for p in problems(broken))


def test_fails_when_readme_tables_are_stale(broken):
    (broken / "variables.tf").write_text((broken / "variables.tf").read_text() + (
        '\nvariable "extra" {\n  description = "New input."\n  type        = string\n}\n'))
    found = problems(broken)
    assert any("tables out of date" in p for p in found), found
    # the generator brings the README up to date again, keeping the hand-written text
    assert main([str(broken)]) == 0
    text = (broken / "README.md").read_text()
    assert "| extra | New input. | `string` | n/a | yes |" in text
    assert text.startswith("# aws-unum-function\n\nOne Unum function on AWS Lambda")
    assert problems(broken) == []


def test_fails_without_example_calling_the_module(broken):
    _edit(broken / "examples/basic/main.tf", 'source = "../.."', 'source = "../../elsewhere"')
    assert any("does not call the module" in p for p in problems(broken))
    shutil.rmtree(broken / "examples")
    assert any("no examples/<name>/main.tf" in p for p in problems(broken))


def test_readme_tables_cover_every_variable_and_output():
    for m in MODULES:
        mod = parse_module(m)
        text = (m / "README.md").read_text()
        for name in list(mod["variables"]) + list(mod["outputs"]):
            assert re.search(rf"^\| {re.escape(name)} \|", text, re.MULTILINE), (m.name, name)
        assert render_readme(m, text) == text


# --- validation blocks mirror the Python checks -------------------------------------------

def _validations(module: str, variable: str) -> list[str]:
    body = parse_module(MODULES_DIR / module)["variables"][variable]
    return [v["condition"] for v in body.get("validation", [])]


def _bounds(condition: str, var: str) -> tuple[int, int]:
    lo = re.search(rf"var\.{var} >= (\d+)", condition)
    hi = re.search(rf"var\.{var} <= (\d+)", condition)
    assert lo and hi, condition
    return int(lo.group(1)), int(hi.group(1))


def test_lambda_memory_and_timeout_bounds_match_the_manifest():
    from unumctl.manifest import FunctionSpec

    def field_bounds(name):
        meta = FunctionSpec.model_fields[name].metadata
        return (next(m.ge for m in meta if hasattr(m, "ge")), next(m.le for m in meta if hasattr(m, "le")))

    (mem,) = _validations("aws-unum-function", "memory_size")
    assert _bounds(mem, "memory_size") == field_bounds("memory") == (128, 10240)
    (tmo,) = _validations("aws-unum-function", "timeout")
    assert _bounds(tmo, "timeout") == field_bounds("timeout") == (1, 900)


def _contains_list(condition: str) -> list[str]:
    m = re.search(r"contains\(\[([^\]]*)\]", condition)
    assert m, condition
    return [x.strip().strip('"') for x in m.group(1).split(",")]


def test_lambda_enumerations_match_unumctl():
    from unumctl.aws.settings import LOG_RETENTION_DAYS
    from unumctl.aws.package import PLATFORMS

    (ret,) = _validations("aws-unum-function", "log_retention_days")
    assert [int(x) for x in _contains_list(ret)] == list(LOG_RETENTION_DAYS)
    (arch,) = _validations("aws-unum-function", "architecture")
    assert sorted(_contains_list(arch)) == sorted(PLATFORMS)
    (retries,) = _validations("aws-unum-function", "maximum_retry_attempts")
    assert _contains_list(retries) == ["0", "1", "2"]  # model.py: "must be 0, 1 or 2"


def test_every_bounded_number_has_a_validation():
    for m in MODULES:
        for name, body in parse_module(m)["variables"].items():
            if body["type"] == "number":
                assert body.get("validation"), f"{m.name}: number variable {name} has no validation"


# --- examples: fmt and a static check of the module call (GCP: no provider offline) -------

@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform binary not on PATH")
@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_module_and_examples_fmt_check(module):
    res = subprocess.run(["terraform", "fmt", "-check", "-recursive", "-list=true", "-no-color"],
                         cwd=module, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0 and not res.stdout.strip(), res.stdout + res.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.parent.parent.parent.name)
def test_example_module_calls_match_the_module_variables(example):
    """Every argument an example passes is a variable of the called module and every variable
    without a default is passed (what `terraform validate` would report; the GCP examples
    cannot be validated offline)."""
    doc = _unquote(hcl2.loads(example.read_text()))
    calls = [(name, body) for m in doc.get("module", []) for name, body in m.items()]
    assert calls
    for name, body in calls:
        mod = parse_module((example.parent / body["source"]).resolve())
        args = set(body) - {"source", "version", "providers", "depends_on", "count", "for_each"}
        assert args <= set(mod["variables"]), (name, args - set(mod["variables"]))
        required = {v for v, b in mod["variables"].items() if "default" not in b}
        assert required <= args, (name, required - args)


def test_rendered_gcp_root_copies_only_the_module_files(tmp_path):
    """README.md and examples/ stay in the repository: a deployment holds the .tf files."""
    pytest.importorskip("functions_framework", reason="gcp extras not installed")
    from unumctl_testing.apps import copy_example, example_dirs
    from unumctl.pipeline import deployment
    from unumctl.gcp.render import render
    from unumctl.pipeline import load as load_app

    app = load_app(copy_example(example_dirs()[0], tmp_path / "app"))
    d, _ = render(app, deployment(app, "gcp", project="demo-project", region="europe-west1"))
    for name in ("gcp-unum-datastore", "gcp-unum-function"):
        copied = sorted(p.name for p in (d / "modules" / name).iterdir())
        assert copied == sorted(p.name for p in (MODULES_DIR / name).glob("*.tf"))


def test_fails_on_unparseable_files(broken):
    (broken / "examples/basic/main.tf").write_text('module "x" {\n  source = "../.."\n')
    assert any("examples/basic/main.tf: not valid HCL" in p for p in problems(broken))
    (broken / "variables.tf").write_text('variable "x" {\n')
    found = problems(broken)
    assert len(found) == 1 and "variables.tf: not valid HCL" in found[0], found
