"""One place per cloud (issue 23, item 8): a target is one package registered in one place.

- No table or branch keyed by a cloud name appears in unumctl/ outside the target packages
  (`unumctl/<cloud>/`) and the registry (unumctl/registry.py); checked on the source with
  `ast`, and the checker is shown to catch every kind it looks for.
- Every registered TargetSpec resolves: its parts load and are what the rest of unumctl
  expects of them.
- A third cloud, written as a package of its own in a temporary directory and given one
  registry line, is reached by every consumer: `get_target`, the manifest's `clouds:`, the
  deployment model, the bundle, the history reader, the deploy commands' cloud choice and
  the price table's required keys. Nothing else is edited for it.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from unumctl import registry

ROOT = Path(__file__).resolve().parents[2]


def cloud_tables(root: Path, clouds: list[str]) -> list[str]:
    """`path:line: kind` for every table or branch keyed by a name of `clouds` in the .py
    files of the `unumctl/` package under `root`, the target packages (`unumctl/<cloud>/`)
    and the registry (`unumctl/registry.py`) left out. Kinds:

    - a dict display with a cloud-name key (`{"aws": ...}`), or `dict(aws=...)`;
    - a comparison with a cloud name (`cloud == "gcp"`, `c in ("aws", "gcp")`), which is
      how an if/elif or a conditional expression branches on one;
    - a `case "aws":` of a match statement;
    - an item stored under a cloud name (`TABLE["aws"] = hook`: registration into a table);
    - a tuple, list or set display holding two or more cloud names (an enumeration of them);
    - a class field named after a cloud (`aws: AwsSection | None`: a model with one field a
      cloud).

    Reading a section named after a cloud from data (`prices["aws"]`), a cloud name passed
    as an argument and names inside strings are not tables and are not reported."""
    names = set(clouds)
    pkg = root / "unumctl"
    exempt = {pkg / c for c in clouds}
    out = []

    def cloud_name(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    for path in sorted(pkg.rglob("*.py")):
        if path == pkg / "registry.py" or any(d in path.parents for d in exempt):
            continue
        rel = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            kind = None
            if isinstance(node, ast.Dict) and any(k is not None and cloud_name(k) for k in node.keys):
                kind = "dict keyed by a cloud name"
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"
                  and any(k.arg in names for k in node.keywords)):
                kind = "dict keyed by a cloud name"
            elif isinstance(node, ast.Compare) and any(
                    cloud_name(x) or (isinstance(x, (ast.Tuple, ast.List, ast.Set)) and any(map(cloud_name, x.elts)))
                    for x in [node.left, *node.comparators]):
                kind = "comparison with a cloud name"
            elif isinstance(node, ast.MatchValue) and cloud_name(node.value):
                kind = "match case on a cloud name"
            elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                  and cloud_name(node.slice)):
                kind = "item stored under a cloud name"
            elif (isinstance(node, (ast.Tuple, ast.List, ast.Set))
                  and sum(1 for e in node.elts if cloud_name(e)) >= 2):
                kind = "enumeration of cloud names"
            elif isinstance(node, ast.ClassDef):
                for st in node.body:
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id in names:
                        out.append(f"{rel}:{st.lineno}: class field named after a cloud")
            if kind:
                out.append(f"{rel}:{node.lineno}: {kind}")
    return sorted(set(out))


def test_no_cloud_name_table_outside_the_target_packages_and_the_registry():
    assert cloud_tables(ROOT, registry.names()) == []


def test_checker_finds_every_kind_of_cloud_table(tmp_path):
    """Each kind the checker looks for, injected into a module of a copy of the layout, is
    reported on its line; the same text inside a target package is not; reading a section
    named after a cloud, a cloud name as an argument and docstrings are not reported."""
    pkg = tmp_path / "unumctl"
    (pkg / "aws").mkdir(parents=True)
    bad = textwrap.dedent('''\
        """Mentions aws and gcp in prose: not a table."""
        ENTRY = {"local": 1, "aws": 2}
        HOOKS = dict(gcp=3)
        def f(cloud, prices, get):
            if cloud == "aws":
                return prices["aws"]
            x = 1 if "gcp" != cloud else 2
            if cloud in ("local", "other"):
                return get("gcp")
            match cloud:
                case "gcp":
                    return 3
            HOOKS["aws"] = f
            return x
        CLOUDS = ("aws", "gcp")
        class Clouds:
            aws: int | None = None
            region: str = "x"
        ''')
    (pkg / "bad.py").write_text(bad)
    (pkg / "aws" / "inside.py").write_text(bad)
    (pkg / "registry.py").write_text(bad)
    found = cloud_tables(tmp_path, ["local", "aws", "gcp"])
    assert found == sorted([
        "unumctl/bad.py:2: dict keyed by a cloud name",
        "unumctl/bad.py:3: dict keyed by a cloud name",
        "unumctl/bad.py:5: comparison with a cloud name",
        "unumctl/bad.py:7: comparison with a cloud name",
        "unumctl/bad.py:8: comparison with a cloud name",
        "unumctl/bad.py:11: match case on a cloud name",
        "unumctl/bad.py:13: item stored under a cloud name",
        "unumctl/bad.py:15: enumeration of cloud names",
        "unumctl/bad.py:17: class field named after a cloud",
    ]), found


# --- identifiers of a cloud outside its folder (issue 35 item 1: each target is its folder) ---

# cloud -> the identifier patterns that name it (functions, classes, variables, attributes,
# arguments, keywords, import aliases). Besides these, a shared module may not import a cloud's
# package (`unumctl.aws...`, `runtime.aws...`, `from .aws import ...`) nor hold the cloud's
# name as a string (`"aws"`): it asks the registry. Docstrings and comments are prose.
CLOUD_IDENTIFIERS: dict[str, list[re.Pattern[str]]] = {
    c: [re.compile(rf"(?i)^{c}_\w+"), re.compile(rf"^{c.capitalize()}[A-Z]\w*"), re.compile(rf"(?i)\w_{c}$")]
    for c in ("aws", "gcp")}

# (shared file, cloud) -> the identifiers of that cloud it still holds ("*": all of them)
# because its code has not moved into unumctl/<cloud>/ yet; remove an entry when it has.
NOT_YET_MOVED: dict[tuple[str, str], set[str] | str] = {}

# (shared file, cloud) -> identifiers that name an AWS or Google *service* every target uses,
# not a target, with the reason; kept out of the target folders on purpose.
SHARED_ON_PURPOSE: dict[tuple[str, str], set[str]] = {
    # Step Functions service integrations call AWS APIs from every target (local and serve
    # send them to `integrations.aws_endpoint`; docs/stepfunctions.md "Service integrations")
    ("unumctl/cli.py", "aws"): {"AWS_ENDPOINT_HELP", "aws_endpoint"},
    ("unumctl/deploy/settings.py", "aws"): {"aws_endpoint", "REAL_AWS", "aws"},
    # `unumctl cost` prices Lambda and Step Functions Standard / Express, and Google Cloud
    # Workflows, beside Unum whatever target it ran on (the price table's sections)
    ("unumctl/cost/billing.py", "aws"): {"aws"},
    ("unumctl/cost/stepfunctions.py", "aws"): {"aws"},
    ("unumctl/cost/systems.py", "gcp"): {"gcp"},
}


def _allowed() -> dict[tuple[str, str], set[str] | str]:
    """NOT_YET_MOVED and SHARED_ON_PURPOSE together (identifier sets joined; "*" wins)."""
    out: dict[tuple[str, str], set[str] | str] = dict(NOT_YET_MOVED)
    for k, v in SHARED_ON_PURPOSE.items():
        have = out.get(k, set())
        out[k] = "*" if have == "*" else {*have, *v}
    return out


def _identifiers(tree: ast.AST):
    """(line, text, kind) of every identifier, imported module and string constant of `tree`
    (kind "name", "module" or "string")."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id, "name"
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr, "name"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name, "name"
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg, "name"
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.value.lineno, node.arg, "name"
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, "module"
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or "", "module"
            for a in node.names:
                yield node.lineno, a.asname or a.name, "module"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value, "string"


def cloud_identifiers(root: Path, patterns: dict[str, list[re.Pattern[str]]] = CLOUD_IDENTIFIERS,
                      allowed: dict[tuple[str, str], set[str] | str] | None = None) -> list[str]:
    """`path:line: cloud: text` for every identifier naming a cloud of `patterns` (its
    patterns; an import of a module path with the cloud as a component; a string constant
    equal to its name) in the .py files of `root/unumctl/` outside the target packages
    (`unumctl/<cloud>/` of every cloud of `patterns` and `local`) and the registry, less
    `allowed` ((path, cloud) -> identifiers, or "*")."""
    pkg = root / "unumctl"
    exempt = {pkg / c for c in [*patterns, "local"]}
    out = []
    for path in sorted(pkg.rglob("*.py")):
        if path == pkg / "registry.py" or any(d in path.parents for d in exempt):
            continue
        rel = str(path.relative_to(root))
        for line, text, kind in _identifiers(ast.parse(path.read_text(), rel)):
            for cloud, pats in patterns.items():
                if kind == "string":
                    hit = text == cloud
                elif kind == "module":
                    hit = cloud in text.split(".")
                else:
                    hit = any(p.search(text) for p in pats)
                ok = (allowed or {}).get((rel, cloud), set())
                if hit and ok != "*" and text not in ok:
                    out.append(f"{rel}:{line}: {cloud}: {text}")
    return sorted(set(out))


def test_no_cloud_identifier_outside_its_target():
    """No shared module (outside unumctl/<cloud>/ and the registry) names a cloud in its code:
    no `aws_*` / `Aws*` / `*_aws` identifier, no import of a cloud's package, no "aws" string;
    the only exceptions are the code not moved yet (NOT_YET_MOVED) and the AWS /
    Google services every target uses (SHARED_ON_PURPOSE), each listed with its reason."""
    allowed = _allowed()
    assert cloud_identifiers(ROOT, allowed=allowed) == []


def test_cloud_identifier_checker_catches_each_kind(tmp_path):
    """Each kind the identifier checker looks for, injected into a shared module of a copy of
    the layout, is reported; the same text inside the target package or the registry is not;
    prose in docstrings and comments is not; an allowlisted identifier is not."""
    pkg = tmp_path / "unumctl"
    (pkg / "aws").mkdir(parents=True)
    (pkg / "deploy").mkdir()
    bad = textwrap.dedent('''\
        """aws_x and AwsThing in prose, and "aws" in a sentence: not code."""
        from ..aws.model import build          # an import of the cloud's package
        import runtime.aws.iam                 # and of its runtime adapter
        def aws_x():                           # an aws_ function
            return 1
        class AwsParamsCopy:                   # an Aws* class
            pass
        def f(cloud_aws=None):                 # a *_aws argument
            return cloud_aws or "aws"          # the cloud's name as a string
        kept_aws_endpoint = 1                  # not at the edge of the name: not reported
        ''')
    (pkg / "deploy" / "shared.py").write_text(bad)
    (pkg / "aws" / "inside.py").write_text(bad)
    (pkg / "registry.py").write_text(bad)
    found = cloud_identifiers(tmp_path)
    assert found == sorted([
        "unumctl/deploy/shared.py:2: aws: aws.model",
        "unumctl/deploy/shared.py:3: aws: runtime.aws.iam",
        "unumctl/deploy/shared.py:4: aws: aws_x",
        "unumctl/deploy/shared.py:6: aws: AwsParamsCopy",
        "unumctl/deploy/shared.py:8: aws: cloud_aws",
        "unumctl/deploy/shared.py:9: aws: aws",
        "unumctl/deploy/shared.py:9: aws: cloud_aws",
    ]), found
    assert cloud_identifiers(tmp_path, allowed={("unumctl/deploy/shared.py", "aws"): {"aws_x", "aws"}}) == [
        x for x in found if not x.endswith((": aws_x", ": aws"))]


def test_cloud_identifier_checker_catches_a_function_put_back_into_shared_code(tmp_path):
    """The real tree, copied, with one AWS helper put back into a shared module
    (deploy/names.py gains `def aws_x()`): the checker names that line and nothing else."""
    shutil.copytree(ROOT / "unumctl", tmp_path / "unumctl", ignore=shutil.ignore_patterns("__pycache__"))
    names = tmp_path / "unumctl" / "deploy" / "names.py"
    lines = names.read_text().count("\n")
    names.write_text(names.read_text() + "\n\ndef aws_x(app: str) -> str:\n    return app\n")
    allowed = _allowed()
    assert cloud_identifiers(tmp_path, allowed=allowed) == [f"unumctl/deploy/names.py:{lines + 3}: aws: aws_x"]


def test_every_registered_target_resolves():
    """Each registered TargetSpec names itself, its parts load, and they are what their
    consumers expect: a Target subclass of that name, a Section subclass, a CloudBilling,
    an entry line importing from the target's own runtime adapter, price keys present in
    the packaged price table."""
    import importlib.util

    from unumctl.cost.billing import CloudBilling
    from unumctl.cost.prices import load_prices
    from unumctl.deploy.settings import Section
    from unumctl.targets import Target

    assert registry.names()[0] == "local" and set(registry.names()) >= {"local", "aws", "gcp"}
    prices = load_prices()
    for name in registry.names():
        s = registry.spec(name)
        assert s.name == name
        cls = registry.part(name, "target")
        assert issubclass(cls, Target) and cls.name == name
        assert callable(registry.part(name, "model")) and callable(registry.part(name, "history"))
        tree = ast.parse(s.entry_line)
        assert [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] == [f"runtime.{name}.entry"]
        assert importlib.util.find_spec(f"runtime.{name}.entry") is not None
        if s.settings is not None:
            assert issubclass(registry.part(name, "settings"), Section)
        if s.bundle_hook is not None:
            assert callable(registry.part(name, "bundle_hook"))
        if s.billing is not None:
            assert isinstance(registry.part(name, "billing"), CloudBilling)
            assert s.price_keys and all(k in prices[name] for k in s.price_keys)
    assert registry.deployable() == ["aws", "gcp"] and registry.priced() == ["aws", "gcp"]
    with pytest.raises(registry.UnknownTarget, match=r"unknown target 'azure' \(known: local, aws, gcp"):
        registry.spec("azure")


# ------------------------------------------------------------------ a third cloud
TOY = {
    "__init__.py": '"""A toy target: one folder, registered by one line."""\n',
    "spec.py": '''
        from unumctl.registry import TargetSpec

        SPEC = TargetSpec(
            name="toycloud",
            target="toycloud_pkg.target:ToyTarget",
            entry_line="from runtime.local.entry import LocalFunction as toy_function\\n",
            model="toycloud_pkg.model:build",
            history="toycloud_pkg.target:ToyReader",
            settings="toycloud_pkg.settings:ToySection",
            bundle_hook="toycloud_pkg.target:bundle_hook",
            price_keys=("toy_request",),
            billing="toycloud_pkg.target:BILLING",
        )
        ''',
    "settings.py": '''
        from typing import ClassVar

        from unumctl.deploy.settings import Section, Str

        class ToySection(Section):
            ENV: ClassVar[dict[str, tuple[str, ...]]] = {"zone": ("TOY_ZONE",)}
            zone: Str = "z0"
        ''',
    "model.py": '''
        from unumctl.deploy.models import BlobStore, Datastore, Deployment, Function

        def build(app, flags):
            s = app.manifest.clouds.section("toycloud").resolved(**flags)
            fns = [Function(n, "toy-" + n, "h", 128, 3, {"ZONE": s.zone}, [])
                   for n in sorted(app.workflow.functions)]
            return Deployment(app=app.name, cloud="toycloud", entry_name=app.workflow.entry.name,
                              max_delivery_attempts=1, result_retention_seconds=60, history="off",
                              functions=fns, datastore=Datastore("toy"), blobs=BlobStore("b/", 1),
                              settings=s)
        ''',
    "target.py": '''
        from unumctl.cost.billing import CloudBilling
        from unumctl.targets import Target

        class ToyTarget(Target):
            name = "toycloud"

            def status(self):
                return {"target": self.name, "zone": self.app.manifest.clouds.section("toycloud").zone}

        class ToyReader:
            def __init__(self, app, **options):
                self.app, self.options = app, options

        def bundle_hook(app, function, settings):
            return [("toy.txt", f"{function} in {settings.zone}".encode())]

        BILLING = CloudBilling(lambda m, prices: ([], []), lambda m, prices: [])
        ''',
    # the module of a target whose extra is not installed
    "nosdk.py": "import toycloud_sdk_not_installed  # noqa: F401\n",
}


@pytest.fixture
def toycloud(tmp_path, monkeypatch):
    """The toy target's package on sys.path and its one registry line; afterwards the
    registry's and the manifest model's caches are emptied so that no other test sees it."""
    from unumctl.deploy.settings import Clouds

    pkg = tmp_path / "pkgs" / "toycloud_pkg"
    pkg.mkdir(parents=True)
    for name, text in TOY.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setitem(registry.TARGETS, "toycloud", "toycloud_pkg.spec")
    Clouds.typed_model.cache_clear()
    yield
    monkeypatch.undo()
    registry._SPECS.pop("toycloud", None)
    for mod in [m for m in sys.modules if m.split(".")[0] == "toycloud_pkg"]:
        del sys.modules[mod]
    Clouds.typed_model.cache_clear()


def test_a_third_cloud_is_one_folder_and_one_registry_line(toycloud, tmp_path):
    from unumctl import observe
    from unumctl.build import bundle_entries
    from unumctl.cliopts import deploy_cloud
    from unumctl.cost.prices import PriceTableError, load_prices
    from unumctl.deploy.appgraph import build
    from unumctl.manifest import AppError
    from unumctl.pipeline import load as load_app
    from unumctl.targets import get_target

    root = shutil.copytree(ROOT / "examples" / "wordcount", tmp_path / "app")
    doc = yaml.safe_load((root / "unumctl.yaml").read_text())
    doc["clouds"] = {"toycloud": {"zone": "z9"}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    app = load_app(root)

    # the manifest's clouds: knows its section, and the deploy commands choose it
    assert app.manifest.clouds.named() == ["toycloud"]
    assert deploy_cloud(None, app.manifest.clouds, "plan") == "toycloud"
    assert get_target("toycloud", app).status() == {"target": "toycloud", "zone": "z9"}
    dep = build(app, "toycloud", zone="z7")  # a flag beats the manifest (the one rule)
    assert dep.cloud == "toycloud" and {f.environment["ZONE"] for f in dep.functions} == {"z7"}
    fn = sorted(app.workflow.functions)[0]
    entries = dict(bundle_entries(app, fn, "toycloud", dep.settings))
    assert entries["unum_entry.py"] == b"from runtime.local.entry import LocalFunction as toy_function\n"
    assert entries["toy.txt"] == f"{fn} in z7".encode()
    r = observe.reader("toycloud", app, region="r1")
    assert type(r).__name__ == "ToyReader" and r.options == {"region": "r1"}
    # the price table must now have its section: the packaged one has none
    with pytest.raises(PriceTableError, match=r"toycloud: missing section"):
        load_prices()

    # a bad value in its section is located like any other manifest field
    doc["clouds"] = {"toycloud": {"zone": 5}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AppError, match=r"unumctl.yaml: clouds.toycloud.zone: '5' must be a string"):
        load_app(root)
    doc["clouds"] = {"toycloud": {"zome": "z1"}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AppError, match=r"clouds.toycloud.zome: unknown key; did you mean 'zone'\?"):
        load_app(root)


def test_a_target_whose_extra_is_missing_is_a_one_line_error(toycloud, monkeypatch):
    """A target whose module cannot be imported (its extra is not installed) fails only
    when it is asked for, with one line naming the extra to install."""
    import dataclasses

    from unumctl.pipeline import load as load_app
    from unumctl.targets import TargetError, get_target

    spec = dataclasses.replace(registry.spec("toycloud"), target="toycloud_pkg.nosdk:ToyTarget")
    monkeypatch.setitem(registry._SPECS, "toycloud", spec)
    app = load_app(ROOT / "examples" / "wordcount")
    with pytest.raises(TargetError) as err:
        get_target("toycloud", app)
    msg = str(err.value)
    assert msg.startswith("--cloud toycloud: this installation has no toycloud target (No module named ")
    from unumctl.install_hint import install_hint
    assert msg.endswith(f"install the extra: {install_hint('toycloud')}") and "\n" not in msg
