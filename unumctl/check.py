"""`unumctl validate`'s code check: import each function's handler module in an isolated
subprocess and check that the handler exists and is callable.

The subprocess runs `python -I` (no PYTHONPATH, no user site) with the function's code
directory first on sys.path and the `runtime` package after it (as in a bundle), with the
network disabled (socket connections and name lookups raise OSError) and a timeout, so a
module that connects somewhere or loops at import cannot hang or reach out from `validate`.
Nothing is imported into the CLI's own process.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import runtime

from .manifest import MANIFEST, App

__all__ = ["check_app", "check_function", "static_handler_problem"]

IMPORT_TIMEOUT = 20.0

# runs in the child: argv = code_dir, runtime_parent, module, attribute
_CHILD = r'''
import json, os, socket, sys, traceback
code_dir, runtime_parent, module, attr = sys.argv[1:5]
out = sys.stdout
sys.stdout = sys.stderr  # the module's own prints must not corrupt the answer

def _no_network(*a, **k):
    raise OSError("network access is disabled during unumctl validate")

socket.socket.connect = _no_network
socket.socket.connect_ex = _no_network
socket.socket.sendto = _no_network
socket.create_connection = _no_network
socket.getaddrinfo = _no_network
sys.path[:0] = [code_dir, runtime_parent]
os.chdir(code_dir)

def where(tb):
    last = None
    for fr in traceback.extract_tb(tb):
        if os.path.abspath(fr.filename).startswith(os.path.abspath(code_dir) + os.sep):
            last = fr
    return (last.filename, last.lineno) if last else (None, None)

try:
    import importlib
    mod = importlib.import_module(module)
except SyntaxError as exc:
    ans = {"kind": "syntax", "error": exc.msg, "file": exc.filename, "line": exc.lineno}
except BaseException as exc:
    f, ln = where(exc.__traceback__)
    ans = {"kind": "import", "error": f"{type(exc).__name__}: {exc}", "file": f, "line": ln,
           "missing": getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None}
else:
    fn = getattr(mod, attr, None)
    f = getattr(mod, "__file__", None)
    if fn is None:
        ans = {"kind": "handler", "error": f"has no attribute {attr!r}", "file": f, "line": None}
    elif not callable(fn):
        ans = {"kind": "handler", "error": f"{attr!r} is a {type(fn).__name__}, not a function",
               "file": f, "line": None}
    else:
        ans = {"kind": "ok", "file": f}
out.write(json.dumps(ans))
out.flush()
os._exit(0)
'''


@dataclass
class Finding:
    """One function's check result: `ok` or an error (`message`, one line naming the file,
    line and field) or a `note` (the handler could not be checked, e.g. a requirement is not
    installed here). `kind`: "handler" when the module imports but has no callable handler."""

    function: str
    ok: bool
    message: str = ""
    note: bool = False
    kind: str = ""


def _requirement_names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;@]", r.strip(), maxsplit=1)[0].lower().replace("-", "_")
            for r in reqs if r.strip()}


def check_function(app: App, name: str, timeout: float = IMPORT_TIMEOUT) -> Finding:
    """Import function `name`'s handler module in an isolated subprocess (see the module
    docstring) and check its handler. Never raises for a problem in the user's code."""
    from .asl import is_synthesized
    spec = app.manifest.functions[name]
    if is_synthesized(spec):  # the Step Functions compiler's: no user code, its handler is never called
        return Finding(name, True)
    mpath = app.root / MANIFEST
    code_dir = (app.root / spec.code).resolve()
    module, _, attr = spec.handler.rpartition(".")
    field = f"functions.{name}.handler"
    # -B: importing writes no __pycache__ into the user's code (validate changes nothing there)
    cmd = [sys.executable, "-I", "-B", "-c", _CHILD, str(code_dir),
           str(Path(runtime.__file__).resolve().parent.parent), module, attr]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=code_dir)
    except subprocess.TimeoutExpired:
        return Finding(name, False, f"{mpath}: {field}: importing {module} did not finish in "
                                    f"{timeout:g} s (does the module do work at import?)")
    try:
        ans = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Finding(name, False, f"{mpath}: {field}: importing {module} ended the process "
                                    f"(exit {proc.returncode}): {tail[:200]}")
    where = ""
    if ans.get("file"):
        where = f"{ans['file']}" + (f":{ans['line']}" if ans.get("line") else "") + ": "
    kind = ans["kind"]
    if kind == "ok":
        return Finding(name, True)
    if kind == "syntax":
        return Finding(name, False, f"{where}syntax error: {ans['error']} ({field} {spec.handler})")
    if kind == "handler":
        return Finding(name, False, f"{mpath}: {field}: {spec.handler!r}: {ans.get('file') or module} "
                                    f"{ans['error']}; define def {attr}(event, context)", kind="handler")
    missing = (ans.get("missing") or "").split(".")[0].lower()
    if missing and missing in _requirement_names(spec.requirements):
        return Finding(name, True, f"{field}: not checked: {missing} (in requirements) is not "
                                   "installed here", note=True)
    return Finding(name, False, f"{where}{ans['error'][:300]} (importing {module} for {field})")


def check_app(app: App, timeout: float = IMPORT_TIMEOUT, parallel: int = 4) -> list[Finding]:
    """check_function for every function of `app` (up to `parallel` subprocesses at a
    time); the findings in manifest order."""
    from concurrent.futures import ThreadPoolExecutor

    names = list(app.manifest.functions)
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(names)))) as pool:
        return list(pool.map(lambda n: check_function(app, n, timeout), names))


def _top_level_names(tree: ast.Module) -> tuple[set[str], bool]:
    """Names a module binds at its top level (defs, classes, assignments, imports, also
    inside top-level if/try/with blocks), and whether it may bind names this cannot see
    (a star import or a module-level __getattr__)."""
    names: set[str] = set()
    opaque = False
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    opaque = True
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
        elif isinstance(node, ast.Expr):
            continue
        if hasattr(ast, "TryStar") and isinstance(node, ast.TryStar):
            stack.extend(node.body)
    return names, opaque or "__getattr__" in names


def static_handler_problem(app: App, name: str) -> str | None:
    """Without running any user code: function `name`'s handler module exists in its code
    directory binds the handler's name at its top level (the manifest's load checked that
    the module file exists). Returns one line naming the
    manifest field and the fix, or None when the handler is (or may be) there; a module this
    cannot read or parse is left to the run, which reports it with FILE:LINE. Cheap enough
    for `invoke` (a read and a parse per function; validate's isolated import does more)."""
    spec = app.manifest.functions[name]
    module, _, attr = spec.handler.rpartition(".")
    code_dir = (app.root / spec.code).resolve()
    base = code_dir.joinpath(*module.split("."))
    path = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
    if path is None:  # the manifest's load checks the module file; anything else: the run
        return None
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    names, opaque = _top_level_names(tree)
    if attr in names or opaque:
        return None
    return (f"{app.root / MANIFEST}: functions.{name}.handler: {spec.handler!r}: {path} defines no "
            f"{attr!r}; define def {attr}(event, context)")
