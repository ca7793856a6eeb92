"""`unumctl validate`'s code check: import each function's handler module in an isolated
subprocess and check that the handler exists and is callable.

The subprocess runs `python -I` (no PYTHONPATH, no user site) with the function's code
directory first on sys.path and the `runtime` package after it (as in a bundle), with the
network disabled (socket connections and name lookups raise OSError) and a timeout, so a
module that connects somewhere or loops at import cannot hang or reach out from `validate`.
Nothing is imported into the CLI's own process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import runtime

from .manifest import MANIFEST, App

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
    spec = app.manifest.functions[name]
    mpath = app.root / MANIFEST
    code_dir = (app.root / spec.code).resolve()
    module, _, attr = spec.handler.rpartition(".")
    field = f"functions.{name}.handler"
    cmd = [sys.executable, "-I", "-c", _CHILD, str(code_dir),
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
