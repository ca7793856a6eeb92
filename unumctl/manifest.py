"""The app manifest (`unumctl.yaml`) and loading an app: manifest + workflow IR.

Shape: docs/ir.md. Validation errors are AppError with one line naming the file, the field
and the fix, e.g. `examples/x/unumctl.yaml: functions.Split.memory: must be >= 128`.
"""

from __future__ import annotations

import difflib

import json
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runtime.ir import Workflow, build_workflow, load_function

from .deploy.settings import Clouds, IntegrationsSection
from .deploy.stage import DEFAULT_STAGE, stage_problem
from .safefile import UnsafeFileError, load_json, load_yaml, read_bounded

__all__ = ["App", "AppError", "FunctionSpec", "MANIFEST", "Manifest", "RuntimeSpec", "WorkflowSpec",
           "check_app_name", "check_requirement", "code_roots", "load_manifest", "app_root",
           "check_workflow_source", "checked_app", "load_ir_dir", "parse_python_spec", "step_function_spec"]

MANIFEST = "unumctl.yaml"


class AppError(Exception):
    """Bad app input (manifest, IR, files). The message is one line naming file and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


_ARCHIVES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz")


def check_requirement(entry: str) -> str:
    """`entry` when it is a PEP 508 requirement specifier without a URL (`name[extras]
    version; marker`, e.g. `requests>=2.31`), parsed with `packaging.requirements.Requirement`.

    Raises ValueError (a one-line reason naming the entry) for anything pip would read as an
    option (`--no-binary=:all:`, `-e`), a local path or archive (`./pkg`, `/tmp/x.tar.gz`) or a
    URL (`pkg @ https://...`, `git+https://...`): those make pip build code from the user's
    machine or from an arbitrary place on the build host."""
    text = entry.strip()
    if text.startswith("-"):
        raise ValueError(f"{entry[:60]!r} is a pip option; give a requirement such as 'requests>=2.31'")
    try:
        req = Requirement(text)
    except InvalidRequirement:
        raise ValueError(f"{entry[:60]!r} is not a requirement specifier (name, extras, version, "
                         "marker), e.g. 'requests>=2.31'; paths and URLs are not accepted") from None
    if req.url:
        raise ValueError(f"{entry[:60]!r} names a URL; give a name and version from the package index")
    if req.name.lower().endswith(_ARCHIVES):  # pip reads `x.tar.gz` as a local file when one exists
        raise ValueError(f"{entry[:60]!r} looks like a local archive; give a name and version from "
                         "the package index")
    return text


class FunctionSpec(_Model):
    """One function: its code directory, handler and resources."""

    code: str = Field(description="directory relative to the app (inside it or a shared_code one)")
    handler: str = "app.handler"
    memory: int = Field(128, ge=128, le=10240, description="MB")
    timeout: int = Field(60, ge=1, le=900, description="seconds")
    requirements: list[str] = Field(default_factory=list)
    # a function whose Next is a Map: how many items the Map fans out to at the scale the app
    # is meant for (`unumctl tune` shows a fusion that runs them one after another at this width)
    expected_width: int | None = Field(None, ge=1, le=10_000_000, description="items per Map fan-out")

    @field_validator("requirements")
    @classmethod
    def _requirements(cls, v: list[str]) -> list[str]:
        return [check_requirement(r) for r in v]

    @field_validator("handler")
    @classmethod
    def _handler(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", v):
            raise ValueError("must be 'module.function', e.g. app.handler")
        return v


_PYTHON_SPEC_RE = re.compile(r"(?P<file>[^:]+\.py):(?P<name>[A-Za-z_]\w*)")


def parse_python_spec(spec: str) -> tuple[str, str]:
    """(FILE, NAME) of a manifest `workflow.python` value `FILE:NAME` (FILE a relative
    `.py` path inside the app, NAME a Python identifier); ValueError saying the form."""
    m = _PYTHON_SPEC_RE.fullmatch(spec.strip())
    if not m:
        raise ValueError(f"{spec!r:.80} must be FILE:NAME, e.g. workflow/flow.py:main "
                         "(a .py file of the app and its @workflow function)")
    file = m["file"]
    if Path(file).is_absolute() or ".." in Path(file).parts:
        raise ValueError(f"{file!r:.80} must be a path relative to the app directory, inside it")
    return file, m["name"]


class WorkflowSpec(_Model):
    """Where the workflow comes from: a directory of IR files, a Step Functions file, or a
    Python `@workflow` function (`FILE:NAME`, unumctl/python.py; docs/python.md)."""

    ir: str | None = None
    stepfunctions: str | None = None
    python: str | None = None
    # the Step Functions workflow type (CreateStateMachine `type`): what `unumctl serve`
    # hosts the app as and what `unumctl cost` compares it with
    type: Literal["STANDARD", "EXPRESS"] = "STANDARD"

    @field_validator("python")
    @classmethod
    def _python(cls, v: str | None) -> str | None:
        if v is not None:
            parse_python_spec(v)
        return v


class RuntimeSpec(_Model):
    """Runtime options carried into every bundle (see runtime.engine.Options)."""

    checkpoint: bool = True
    # None: the target's default (`default_gc`: its TargetSpec's `gc_default`, else "safe";
    # docs/protocol.md "GC modes" gives the trade-off per mode and per cloud)
    gc: Literal["safe", "eager", "none"] | None = None
    # the result must outlive the longest platform redelivery (Pub/Sub: 7 days); the engine
    # keeps it at least that long whatever is set here (runtime/session.py)
    result_retention_seconds: int = Field(8 * 86400, ge=60)
    # margin after the session timeout before a live session's items expire
    intermediate_retention_seconds: int = Field(86400, ge=60)
    session_timeout_seconds: int = Field(7 * 86400, ge=1, le=366 * 86400)
    max_transitions: int = Field(25_000, ge=1, le=10_000_000)
    max_delivery_attempts: int = Field(3, ge=1, le=10)
    # execution history (docs/observability.md): full | session-only | off
    history: Literal["full", "session-only", "off"] = "full"
    # a failed session keeps its state for `unumctl redrive` / RedriveExecution (runtime/redrive.py)
    redrive: bool = False

    @field_validator("history", mode="before")
    @classmethod
    def _history_off(cls, v: Any) -> Any:
        """YAML 1.1 reads an unquoted `history: off` as the boolean false: that means "off"."""
        return "off" if v is False else v


APP_NAME_RE = re.compile(r"[a-z][a-z0-9-]{2,39}")


def check_app_name(name: str) -> str:
    """`name` when it is a valid app name (the manifest's `app`; also the prefix of every
    cloud resource name); ValueError saying the rule otherwise."""
    if not APP_NAME_RE.fullmatch(name):
        raise ValueError("must be 3-40 characters of a-z, 0-9 and '-', starting with a letter")
    return name


class Manifest(_Model):
    """The whole manifest."""

    version: int = 1
    app: str
    workflow: WorkflowSpec
    runtime: RuntimeSpec = Field(default_factory=RuntimeSpec)
    # empty for a Python workflow (its @step functions are the functions)
    functions: dict[str, FunctionSpec] = Field(default_factory=dict)
    # typed per-cloud settings (unumctl/deploy/settings.py)
    clouds: Clouds = Field(default_factory=Clouds)
    # directories outside the app that `functions.*.code` may point into (relative paths)
    shared_code: list[str] = Field(default_factory=list)
    # where local/serve send Step Functions service integrations; mocked responses (settings.py)
    integrations: IntegrationsSection = Field(default_factory=IntegrationsSection)
    # the deployment `--stage` addresses when not given (deploy/stage.py; None: DEFAULT_STAGE)
    stage: str | None = None
    # event sources that start sessions: name -> trigger, as written; unumctl/triggers.py
    # validates them when the app loads (pipeline.load), the parsed list is `App.triggers`
    triggers: dict[str, Any] = Field(default_factory=dict)

    @field_validator("stage", mode="before")
    @classmethod
    def _stage(cls, v: Any) -> Any:
        problem = None if v is None else stage_problem(v)
        if problem:
            raise ValueError(f"{problem}; e.g. stage: prod (or leave it out for the default, {DEFAULT_STAGE})")
        return v

    @field_validator("shared_code")
    @classmethod
    def _shared_code(cls, v: list[str]) -> list[str]:
        for d in v:
            if Path(d).is_absolute() or not d.strip():
                raise ValueError(f"{d!r} must be a path relative to the app directory")
        return v

    @field_validator("app")
    @classmethod
    def _app(cls, v: str) -> str:
        return check_app_name(v)

    @field_validator("version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != 1:
            raise ValueError("only manifest version 1 is supported")
        return v


@dataclass
class App:
    """A loaded, validated app."""

    root: Path
    manifest: Manifest
    workflow: Workflow
    # the manifest's triggers parsed (unumctl.triggers.Trigger, in the manifest's order)
    triggers: list[Any] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.manifest.app

    def runtime_options(self, cloud: str | None = None) -> dict[str, Any]:
        """The `runtime:` options a bundle for `cloud` carries (runtime.engine.Options): the
        manifest's, with an unset `gc` resolved to `cloud`'s default (`default_gc`)."""
        opts = self.manifest.runtime.model_dump()
        if opts.get("gc") is None:
            opts["gc"] = default_gc(cloud)
        return opts


def default_gc(cloud: str | None) -> str:
    """The GC mode (runtime.gc) of an app that does not set one, on target `cloud`: its
    TargetSpec `gc_default` (unumctl/registry.py); "safe" for no cloud or one that is not
    registered. Costs and invariants behind each default: docs/protocol.md "GC modes"."""
    from . import registry
    if not cloud or cloud not in registry.names():
        return "safe"
    return registry.spec(cloud).gc_default


def code_roots(root: Path, manifest: Manifest) -> list[Path]:
    """The resolved directories code may come from: the app directory `root` and the
    manifest's `shared_code` directories. Bundles follow links only into these (build.py)."""
    return [root.resolve()] + [(root / d).resolve() for d in manifest.shared_code]


def _read_structured(path: Path) -> Any:
    """A manifest or IR file parsed (JSON by its suffix, else YAML) through unumctl/safefile.py:
    a regular file of at most safefile.MAX_BYTES, nesting and YAML aliases bounded. AppError
    (one line naming the file) otherwise."""
    try:
        text = read_bounded(path).decode("utf-8-sig")
    except UnsafeFileError as exc:
        raise AppError(str(exc)) from None
    except OSError as exc:
        raise AppError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise AppError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        if path.suffix == ".json":
            return load_json(text)
        return load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise AppError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}{where}: {first}") from None


def load_manifest(root: Path) -> Manifest:
    """Read and validate `<root>/unumctl.yaml`; raises AppError."""
    path = root / MANIFEST
    if not path.exists():
        raise AppError(f"{root}: no {MANIFEST} here; an app directory needs one (see docs/ir.md)")
    doc = _read_structured(path)
    if not isinstance(doc, dict):
        raise AppError(f"{path}: expected a mapping with app, workflow and functions")
    try:
        return Manifest.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown key first: a misspelled key also makes the key it meant "required"
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        parts = [str(x) for x in err["loc"]]
        if parts[-1:] == ["[key]"]:  # a bad mapping key: name the mapping
            parts = parts[:-2]
        loc = ".".join(parts) or "(top)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = unknown_key_message(str(err["loc"][-1]), valid_keys(Manifest, err["loc"][:-1]))
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise AppError(f"{path}: {loc}: {msg}{more}") from None


def _model_of(tp: Any) -> Any:
    """`tp` without an Optional/Union wrapper: the BaseModel or dict member of a Union."""
    if get_origin(tp) in (Union, types.UnionType):
        for arg in get_args(tp):
            if (isinstance(arg, type) and issubclass(arg, BaseModel)) or get_origin(arg) is dict:
                return arg
    return tp


def _typed(tp: Any) -> Any:
    """The model that validates `tp`: its `typed_model()` when it builds one at run time
    (deploy.settings.Clouds, from the target registry), else `tp`."""
    return tp.typed_model() if isinstance(tp, type) and hasattr(tp, "typed_model") else tp


def valid_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the mapping at `loc` (a pydantic error location below `model`, e.g.
    ("functions", "Split")) accepts: the field names of the model found there, [] when
    `loc` does not lead to a model."""
    tp: Any = model
    for part in loc:
        tp = _typed(_model_of(tp))
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return []
    tp = _typed(_model_of(tp))
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def unknown_key_message(key: str, valid: list[str]) -> str:
    """One line for an unknown manifest key: the closest valid key (difflib) when there is
    one, and the valid keys, e.g. "unknown key; did you mean 'memory'? (valid keys: ...)"."""
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key{hint} (valid keys: {', '.join(valid)})" if valid else "unknown key"


def step_function_spec(name: str, fields: dict[str, Any], where: str) -> FunctionSpec:
    """The FunctionSpec of a Python workflow's step `name` from its `@step` fields
    (unumctl/python.py); AppError `<where>: @step <name>: <field>: <reason>` (where: the
    step's FILE:LINE) for a value the manifest would refuse."""
    try:
        return FunctionSpec.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise AppError(f"{where}: @step {name}: {'.'.join(str(x) for x in err['loc'])}: "
                       f"{err['msg'].removeprefix('Value error, ')}") from None


def app_root(path: str | Path) -> Path:
    """The app directory `path` names (the directory, or the parent of its unumctl.yaml).
    AppError for another file or a missing directory."""
    root = Path(path)
    if root.is_file():
        if root.name != MANIFEST:
            raise AppError(f"{root}: is a file; give the app directory (holding {MANIFEST}), "
                           f"e.g. {root.parent}")
        root = root.parent
    if not root.exists():
        raise AppError(f"{root}: no such app directory")
    return root


def check_workflow_source(manifest: Manifest, mpath: Path) -> None:
    """AppError unless the manifest names exactly one of workflow.ir / workflow.stepfunctions
    / workflow.python."""
    wf = manifest.workflow
    if sum(x is not None for x in (wf.ir, wf.stepfunctions, wf.python)) != 1:
        raise AppError(f"{mpath}: workflow: give exactly one of 'ir' (a directory of IR files), "
                       "'stepfunctions' (a state machine file) or 'python' (FILE:NAME of a @workflow)")


def checked_app(root: Path, manifest: Manifest, workflow: Workflow, synthesized: frozenset[str] = frozenset()) -> App:
    """The App of `manifest` (its functions as the front end made them) and `workflow`,
    after checking every function's code directory and handler module on disk, except the
    `synthesized` ones (the Step Functions compiler's, which have no user code: their stub
    handler is written into their bundles, unumctl/build.py). AppError naming the field."""
    mpath = root / MANIFEST
    for name, spec in manifest.functions.items():
        if name not in workflow.functions:
            raise AppError(f"{mpath}: functions.{name}: not in the workflow "
                           f"(workflow functions: {', '.join(sorted(workflow.functions))})")
        if name in synthesized:
            continue
        code = root / spec.code
        if Path(spec.code).is_absolute():
            raise AppError(f"{mpath}: functions.{name}.code: {spec.code!r} is absolute; give a "
                           "directory relative to the app")
        roots = code_roots(root, manifest)
        if not any(code.resolve().is_relative_to(r) for r in roots):
            raise AppError(f"{mpath}: functions.{name}.code: {spec.code!r} is outside the app; move "
                           "the code into the app or list its directory under shared_code")
        try:
            is_dir = code.is_dir()
            module = spec.handler.rpartition(".")[0].replace(".", "/")
            has_module = (code / f"{module}.py").exists() or (code / module / "__init__.py").exists()
        except OSError as exc:  # e.g. a path component longer than the file system allows
            raise AppError(f"{mpath}: functions.{name}.code: {str(code)[:100]}...: {exc.strerror}") from None
        if not is_dir:
            raise AppError(f"{mpath}: functions.{name}.code: directory {code} does not exist")
        if not has_module:
            raise AppError(f"{mpath}: functions.{name}.handler: {spec.handler!r} needs "
                           f"{code / (module + '.py')}")
    missing = sorted(set(workflow.functions) - set(manifest.functions))
    if missing:
        raise AppError(f"{mpath}: functions: no entry for {', '.join(missing)} "
                       "(every workflow function needs code and handler)")
    return App(root, manifest, workflow)


def load_ir_dir(irdir: Path, mpath: Path) -> Workflow:
    """The Workflow of the hand-written IR files (.yaml, .yml, .json) in `irdir`; AppError /
    IRError naming the file."""
    if not irdir.is_dir():
        raise AppError(f"{mpath}: workflow.ir: directory {irdir} does not exist")
    files = sorted(p for p in irdir.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    if not files:
        raise AppError(f"{mpath}: workflow.ir: {irdir} has no .yaml/.json IR files")
    nodes = []
    for f in files:
        node = load_function(_read_structured(f), str(f))
        nodes.append((node, str(f)))
    return build_workflow(nodes)
