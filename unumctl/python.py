"""The Python front-end: an app whose manifest says `workflow: {python: FILE:NAME}` is
compiled from its `@workflow` function NAME in FILE (runtime/flow.py, docs/python.md) into
Unum IR, once, when the app is loaded.

Compiling imports FILE (its directory first on `sys.path`, no bytecode written: loading
writes nothing, tests/test_loading_writes_nothing.py) and traces the workflow body over
symbolic values (runtime.flow.trace). Each recorded function's manifest entry comes from
its `@step`: code = FILE's directory, handler = `<module>.<function>`.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from runtime import flow
from runtime.errors import IRError
from runtime.ir import Workflow, build_workflow, load_function

__all__ = ["compile_workflow"]

def _import(path: Path, code_dir: Path, mpath: Path, field: str) -> Any:
    """The module at `path`, imported with `code_dir` first on sys.path (so its sibling
    modules import as they will in the bundle), without writing bytecode; the modules it
    brought in from `code_dir` are dropped from sys.modules again afterwards (two apps may
    both have a `flow.py`)."""
    root = os.path.normcase(str(code_dir.resolve())) + os.sep
    saved = {k: m for k, m in sys.modules.items()
             if os.path.normcase(str(getattr(m, "__file__", "") or "")).startswith(root)
             or k == path.stem}
    for k in saved:
        del sys.modules[k]
    before = set(sys.modules)
    old_path, old_bytecode = list(sys.path), sys.dont_write_bytecode
    sys.path.insert(0, str(code_dir.resolve()))
    sys.dont_write_bytecode = True
    try:
        with flow.importing():
            return importlib.import_module(path.stem)
    except flow.FlowError as exc:
        raise IRError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: name the user's line
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if os.path.normcase(str(Path(f.filename).resolve())).startswith(root)]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else str(path)
        raise IRError(f"{where}: importing {mpath.parent.name}'s {field} failed: "
                      f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]) from None
    finally:
        sys.path[:] = old_path
        sys.dont_write_bytecode = old_bytecode
        for k in set(sys.modules) - before:
            del sys.modules[k]
        sys.modules.update(saved)


def compile_workflow(root: Path, file: str, name: str, mpath: Path) -> tuple[Workflow, dict[str, Any]]:
    """Compile the `@workflow` function `name` of `root/file` (the manifest's
    `workflow.python`, already parsed) into (Workflow, functions): `functions` maps each
    traced step call's IR Name to (its manifest fields, `FILE:LINE` of its @step): code =
    FILE's directory, handler `<module>.<function>`, memory, timeout, requirements from
    `@step`. Writes nothing. Raises IRError: `FILE:LINE: ...` for what cannot compile
    (runtime.flow), or naming the manifest field."""
    field = "workflow.python"
    path = root / file
    if not path.is_file():
        raise IRError(f"{mpath}: {field}: {path} does not exist; give FILE:NAME of a .py file of the app")
    if path.stem in sys.stdlib_module_names or path.stem in ("runtime", "unumctl"):
        raise IRError(f"{mpath}: {field}: {file}: the module name {path.stem!r} is taken by Python's or "
                      "unumctl's own modules (the bundle would import those); rename the file, e.g. flow.py")
    code_dir = path.parent
    module = _import(path, code_dir, mpath, field)
    wf = getattr(module, name, None)
    if not isinstance(wf, flow.Workflow):
        found = f" ({type(wf).__name__} found)" if wf is not None else ""
        raise IRError(f"{mpath}: {field}: {file} has no @workflow function {name!r}{found}; decorate it with @workflow")
    try:
        traced = flow.trace(wf, str(code_dir))
    except flow.FlowError as exc:
        raise IRError(str(exc)) from None
    code = code_dir.relative_to(root).as_posix() or "."
    functions: dict[str, Any] = {}
    nodes = []
    for doc, node in traced:
        st = node.step
        module_name = st.fn.__module__
        mod_file = Path(code_dir, *module_name.split(".")).with_suffix(".py")
        if not mod_file.exists() and not (code_dir / module_name.replace(".", "/") / "__init__.py").exists():
            raise IRError(f"{st.site}: step {st.name} is defined outside {code}/ (module {module_name}); "
                          "define steps in the workflow file's directory")
        functions[node.name] = ({"code": code, "handler": f"{module_name}.{st.fn.__name__}", "memory": st.memory,
                                 "timeout": st.timeout, "requirements": st.requirements}, st.site)
        nodes.append((load_function(doc, node.site), node.site))
    return build_workflow(nodes), functions
