"""The Step Functions front-end: an app whose manifest says `workflow: {stepfunctions: FILE}`
is compiled from Amazon States Language into Unum IR (see unumctl.asl.compiler and
docs/stepfunctions.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runtime.errors import IRError
from runtime.ir import Workflow

from ..safefile import UnsafeFileError, load_json, load_yaml, read_bounded
from .compiler import Compiled, compile_definition, to_workflow
from .validate import AslValidationError, validate

# the `code` of a synthesized function: a name only, no directory of the app (is_synthesized)
SYNTH_DIR = ".unum/asl-synth"
SYNTH_MODULE = "unum_asl_synth"
SYNTH_CODE = ('"""Handler of functions synthesized by the Step Functions compiler: they run only\n'
              'ASL states (Pass, Choice, joins), so the user handler is never called."""\n\n\n'
              'def handler(event, context):\n'
              '    raise RuntimeError("synthesized ASL function: no user code")\n')

__all__ = ["compile_app", "compile_definition", "is_synthesized", "load_definition", "resolver",
           "synth_entries", "validate", "AslValidationError", "Compiled", "DISTRIBUTED_HOST_MEMORY",
           "MAX_FUNCTION_TIMEOUT", "SYNTH_CODE", "SYNTH_DIR", "SYNTH_MODULE"]


def load_definition(path: Path) -> Any:
    """Read a state machine from JSON (`.json`, `.asl.json`) or YAML through unumctl/safefile.py
    (a regular file of at most safefile.MAX_BYTES, nesting and YAML aliases bounded); IRError
    naming the file."""
    try:
        text = read_bounded(path).decode("utf-8-sig")
    except UnsafeFileError as exc:
        raise IRError(str(exc)) from None
    except OSError as exc:
        raise IRError(f"{path}: cannot read the state machine: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise IRError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        return load_json(text) if path.suffix == ".json" else load_yaml(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0]
        raise IRError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {first}") from None


def resolver(functions: dict[str, Any]):
    """Map a Lambda name (last ARN segment or function name) to a manifest function: exact
    key, then case-insensitive with '-'/'_' ignored, then the code directory's name."""
    def norm(s: str) -> str:
        return s.replace("-", "").replace("_", "").lower()

    def resolve(name: str) -> str | None:
        if name in functions:
            return name
        for key in functions:
            if norm(key) == norm(name):
                return key
        for key, spec in functions.items():
            code = getattr(spec, "code", None) or (spec.get("code") if isinstance(spec, dict) else None)
            if code and norm(Path(code).name) == norm(name):
                return key
        return None
    return resolve


TIMEOUT_MARGIN = 10   # seconds a Task's function runs beyond its TimeoutSeconds (egress, commit)
MAX_FUNCTION_TIMEOUT = 900  # Lambda's maximum (and the manifest's)


def task_function_timeout(definition: Any, wrapper: dict[str, Any]) -> int | None:
    """The function timeout (s) a compiled Task function needs for its Task's TimeoutSeconds:
    TimeoutSeconds + TIMEOUT_MARGIN (the maximum, 900 s, for TimeoutSecondsPath), capped at
    900 s; None for a Task without TimeoutSeconds or a callback Task (its function only makes
    the Lambda call; the wait holds no function). docs/stepfunctions.md "Timeouts,
    heartbeats and callbacks"."""
    from runtime.asl.machine import WAIT_FOR_TOKEN, scope_states
    task = wrapper.get("Task")
    if not task:
        return None
    try:
        st = scope_states(definition, wrapper.get("Scope", ""))[task]
    except (KeyError, IndexError, TypeError):
        return None
    if str(st.get("Resource", "")).endswith(WAIT_FOR_TOKEN):
        return None
    if "TimeoutSecondsPath" in st:
        return MAX_FUNCTION_TIMEOUT
    t = st.get("TimeoutSeconds")
    if isinstance(t, int) and not isinstance(t, bool) and t > 0:
        return min(MAX_FUNCTION_TIMEOUT, t + TIMEOUT_MARGIN)
    return None


# a synthesized function that fans out or joins a Distributed Map holds its whole item list
# (or every child's result and the ResultWriter's files): measured on local, about 5 MB per
# 1,000 items of {"n": i} (bench/dmap_scale.py: 483 MiB at 100,000), so 128 MB ends near
# 25,000 items
DISTRIBUTED_HOST_MEMORY = 2048  # MB (Lambda allows 128..10240)


def hosts_distributed_map(definition: dict[str, Any], node: dict[str, Any]) -> bool:
    """True when compiled function `node` (its IR mapping) starts a Distributed Map's
    fan-out (a Map edge for it) or is its join."""
    from runtime.asl.distributed import is_distributed
    from runtime.asl.machine import scope_states
    w = node.get("Wrapper") or {}
    scope = w.get("Scope", "")
    if w.get("Join") and is_distributed(scope_states(definition, scope)[w["Join"]]):
        return True
    routes = {f"$route == '{label}'": key for key, label in (w.get("Labels") or {}).items()}
    for e in node.get("Next") or []:
        key = routes.get(e.get("Conditional"))
        if e.get("Type") == "Map" and key and key.startswith("m|"):
            _, sc, state = key.split("|", 2)
            if is_distributed(scope_states(definition, sc)[state]):
                return True
    return False


def is_synthesized(spec: Any) -> bool:
    """Whether function spec `spec` (unumctl.manifest.FunctionSpec) is one the compiler
    synthesized (`compile_app`): no user code, the stub handler SYNTH_CODE, which
    unumctl/build.py writes into its bundle (`synth_entries`), never into the app."""
    return spec.code == SYNTH_DIR and spec.handler == f"{SYNTH_MODULE}.handler"


def synth_entries() -> list[tuple[str, bytes]]:
    """What a synthesized function's bundle holds in place of a code directory: the stub
    module SYNTH_CODE at the archive's top, as (archive path, bytes)."""
    return [(f"{SYNTH_MODULE}.py", SYNTH_CODE.encode())]


def compile_app(root: Path, manifest, mpath: Path) -> tuple[Workflow, dict[str, Any]]:
    """Compile `manifest.workflow.stepfunctions` into (Workflow, functions): `functions` is
    the new `manifest.functions`, one FunctionSpec per compiled function (Task functions take
    a copy of the spec of the Lambda they name, their timeout raised for the Task's
    TimeoutSeconds; synthesized ones the stub handler, `is_synthesized`). Writes nothing and
    leaves `manifest` as it was: the stub is written into the bundles (unumctl/build.py).

    Raises IRError (AslValidationError) naming the file, state and field."""
    from ..manifest import FunctionSpec
    path = root / manifest.workflow.stepfunctions
    if not path.exists():
        raise IRError(f"{mpath}: workflow.stepfunctions: {path} does not exist")
    definition = load_definition(path)
    functions = dict(manifest.functions)
    compiled = compile_definition(definition, resolver(functions), sorted(functions),
                                  source=str(path), machine=manifest.app)
    new: dict[str, Any] = {}
    for name, lam in compiled.code.items():
        if lam is None:
            memory = DISTRIBUTED_HOST_MEMORY if hosts_distributed_map(definition, compiled.nodes[name]) else 128
            new[name] = FunctionSpec(code=SYNTH_DIR, handler=f"{SYNTH_MODULE}.handler", memory=memory)
        else:
            spec = functions[lam].model_copy()
            need = task_function_timeout(definition, compiled.nodes[name]["Wrapper"])
            if need is not None and need > spec.timeout:
                spec.timeout = need
            new[name] = spec
    return to_workflow(compiled, str(path)), new
