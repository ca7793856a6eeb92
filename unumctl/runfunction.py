"""`unumctl run-function APP FUNCTION --event FILE`: run one function's handler on this
machine with an event, as `sam local invoke` does.

The handler runs in a subprocess (`python -I`) from the user's code directory (so tracebacks
name the user's files), with `runtime` importable as in a bundle, the function's manifest
`timeout` enforced, and a `context` of the shape runtime.engine.UserContext gives (session
`local-run`, instance = the function name, no Map index). The return value is written as
JSON on stdout; whatever the function prints goes to stderr. No session, checkpoint or
continuation is involved: only the handler runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import runtime

from .manifest import MANIFEST, App, AppError

__all__ = ["FunctionError", "run_function"]

# runs in the child: argv = code_dir, runtime_parent, module, attribute, function name;
# the event arrives as JSON on stdin; the answer (JSON) goes to the pipe answer_fd
_CHILD = r'''
import json, os, sys, traceback
from dataclasses import dataclass, field
code_dir, runtime_parent, module, attr, name, answer_fd = sys.argv[1:7]
answer = os.fdopen(int(answer_fd), "w")
event = json.loads(sys.stdin.read())
sys.stdout = sys.stderr  # the function's own output goes to stderr
sys.path[:0] = [code_dir, runtime_parent]
os.chdir(code_dir)


@dataclass
class Context:
    session: str = "local-run"
    instance: str = name
    function: str = name
    indexes: list = field(default_factory=list)
    sizes: list = field(default_factory=list)
    iteration: int = 0
    extra: dict = field(default_factory=dict)
    published: dict = field(default_factory=dict)
    index = None
    size = None

    def publish(self, key, value):
        self.published[key] = value


try:
    import importlib
    fn = getattr(importlib.import_module(module), attr)
    value = fn(event, Context())
    text = json.dumps(value)
except BaseException as exc:
    traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)  # not this script's frame
    answer.write(json.dumps({"error": type(exc).__name__, "message": str(exc)[:2000]}))
    answer.flush()
    os._exit(1)
answer.write(json.dumps({"value": text}))
answer.flush()
os._exit(0)
'''


class FunctionError(Exception):
    """The handler raised (or timed out): `error` is the exception type, `message` its text."""

    def __init__(self, function: str, error: str, message: str):
        super().__init__(f"{function}: {error}: {message.splitlines()[0] if message else ''}".rstrip(": "))
        self.error, self.message = error, message


@dataclass
class RunResult:
    """What run_function returns: the handler's return value (JSON-compatible)."""

    value: Any


def run_function(app: App, function: str, event: Any, timeout: float | None = None) -> RunResult:
    """Run `function`'s handler of `app` with `event` in a subprocess (see the module
    docstring); its output goes to this process's stderr as it happens.

    Raises AppError when `function` is not in the app, FunctionError when the handler raises,
    returns something that is not JSON-serializable, or runs past `timeout` seconds (default:
    the function's manifest `timeout`)."""
    specs = app.manifest.functions
    if function not in specs:
        raise AppError(f"{app.root / MANIFEST}: FUNCTION: no function {function!r} "
                       f"(functions: {', '.join(sorted(specs))})")
    spec = specs[function]
    from .asl import is_synthesized
    if is_synthesized(spec):
        raise AppError(f"{app.root / MANIFEST}: FUNCTION: {function} is synthesized by the Step Functions "
                       "compiler (it runs only ASL states, no user code); run a Task's Lambda function instead")
    code_dir = (app.root / spec.code).resolve()
    module, _, attr = spec.handler.rpartition(".")
    limit = float(timeout if timeout is not None else spec.timeout)
    cmd = [sys.executable, "-I", "-c", _CHILD, str(code_dir),
           str(Path(runtime.__file__).resolve().parent.parent), module, attr, function]
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(cmd + [str(w)], stdin=subprocess.PIPE, stdout=2, stderr=2,
                                pass_fds=(w,), cwd=code_dir, text=True)
    finally:
        os.close(w)
    try:
        try:
            proc.communicate(json.dumps(event), timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise FunctionError(function, "Unum.Timeout", f"the handler ran past {limit:g} s "
                                f"(functions.{function}.timeout)") from None
        with os.fdopen(r, "r") as f:
            r = -1
            raw = f.read()
    finally:
        if r != -1:
            os.close(r)
    try:
        ans = json.loads(raw)
    except json.JSONDecodeError:
        raise FunctionError(function, "Runtime.ExitError",
                            f"the function's process ended (exit {proc.returncode}) without an answer") from None
    if "error" in ans:
        raise FunctionError(function, ans["error"], ans.get("message", ""))
    return RunResult(json.loads(ans["value"]))
