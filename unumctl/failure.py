"""How the CLI shows a failed session: one line naming the user's source file, and with
`--debug` the traceback, with paths into the bundle copies under `<app>/.unum/local/<stage>/versions/<id>/`
mapped back to the user's source files.

A failure item is {"status": "FAILED", "instance", "error", "cause", "trace"?} (runtime/
session.py failure_item). For a Step Functions app the cause of a Task's error is Lambda's
JSON ({"errorMessage", "errorType", "stackTrace"}); for an IR app the trace is in "trace".
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["explain", "failure_line", "source_path", "traceback_text"]

# <root>/.unum/local/<stage>/versions/<version id>/<Function>-<16 hex>/<relative path> (the
# stage's state directory, unumctl/deploy/statepath.py; a version's bundles, docs/versions.md;
# `bundles/` instead of `versions/<id>/`: before versions; no stage: before stages)
_BUNDLES = r"\.unum/local/(?:[a-z][a-z0-9]{0,9}/)?(?:bundles|versions/[0-9a-f]{16})/"
_BUNDLE_RE = re.compile(r"(?P<root>[^\s\"']*?)/?" + _BUNDLES + r"(?P<fn>[A-Za-z0-9_]+)-[0-9a-f]{16}/"
                        r"(?P<rel>[^\s\"'\\,]+)")  # a path inside a JSON string ends at \"
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_JSON_FRAME_RE = re.compile(r'File \\"(?P<file>[^"\\]+)\\", line (?P<line>\d+)')  # inside a JSON string
_MESSAGE_RE = re.compile(r'"errorMessage":\s*"(?P<m>(?:[^"\\]|\\.)*)"')


@lru_cache(maxsize=64)
def _code_dirs(root: str) -> dict[str, str]:
    from .manifest import AppError, load_manifest
    try:
        m = load_manifest(Path(root or "."))
    except AppError:
        return {}
    return {name: spec.code for name, spec in m.functions.items()}


def source_path(text: str) -> str:
    """`text` with every path into a local bundle copy replaced by the user's source file
    (`<root>/<functions.F.code>/<relative path>`) when that file exists (for a compiled
    Step Functions state, named after the state: the one function whose file has the same
    bytes as the bundle copy); paths into the
    bundled runtime (runtime/, unum_entry.py) and unknown functions are left alone."""
    def sub(m: re.Match[str]) -> str:
        rel = m.group("rel")
        if rel.startswith("runtime/") or rel.startswith("unum_"):
            return m.group(0)
        dirs = _code_dirs(m.group("root"))
        code = dirs.get(m.group("fn"))
        if code is None:  # a compiled Step Functions state (Task `Broken` runs Lambda `Echo`)
            code = _same_file(Path(m.group(0)), Path(m.group("root") or "."), tuple(dirs.values()), rel)
            if code is None:
                return m.group(0)
        path = Path(m.group("root") or ".") / code / rel
        return os.path.normpath(path) if path.exists() else m.group(0)
    return _BUNDLE_RE.sub(sub, text)


def _same_file(copy: Path, root: Path, codes: tuple[str, ...], rel: str) -> str | None:
    """The one code directory among `codes` whose `rel` has the same bytes as the bundle
    `copy`, else None (no copy left, or no or several matches)."""
    try:
        data = copy.read_bytes()
    except OSError:
        return None
    found = set()
    for code in codes:
        try:
            if (root / code / rel).read_bytes() == data:
                found.add(code)
        except OSError:
            continue
    return found.pop() if len(found) == 1 else None


def _user_frame(path: str) -> bool:
    return re.search(_BUNDLES, path) is None and "/runtime/" not in path and not path.startswith("<")


def explain(item: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(message, where, traceback frames) of a failure item: the message is the error's first
    line (Lambda's errorMessage for a Step Functions cause); `where` is `FILE:LINE` of the
    innermost frame in the user's code ('' when none); the frames (possibly none) have the
    bundle paths mapped to the user's files and only the user's frames when there are any."""
    cause = str(item.get("cause") or "")
    trace: list[str] = [str(t) for t in item.get("trace") or []]
    message = cause.splitlines()[0] if cause else ""
    if cause.lstrip().startswith("{") and "errorMessage" in cause:
        try:
            doc = json.loads(cause)
            message = str(doc.get("errorMessage", ""))
            trace = trace or [str(t) for t in doc.get("stackTrace") or []]
        except json.JSONDecodeError:  # cut at 4000 characters: take what is there
            m = _MESSAGE_RE.search(cause)
            message = json.loads(f'"{m.group("m")}"') if m else message
            trace = trace or [f'  File "{f.group("file")}", line {f.group("line")}'
                              for f in _JSON_FRAME_RE.finditer(cause)]
    trace = [source_path(t) for t in trace if t.startswith("  File")]
    where = ""
    user = []
    for t in trace:
        f = _FRAME_RE.search(t)
        if f and _user_frame(f.group("file")):
            where = f"{f.group('file')}:{f.group('line')}"
            user.append(t)
    message = message.splitlines()[0] if message else ""
    return message, where, user or trace


def failure_line(session: str, item: dict[str, Any]) -> str:
    """The one-line error for a failed session:
    `session S failed in INSTANCE: ERROR: MESSAGE (at FILE:LINE)`; for a Step Functions app,
    `session S failed in state STATE (INSTANCE): ...`, STATE the ASL state that failed
    (the item's `state`, runtime.session.failure_item) when it is not INSTANCE's function."""
    message, where, _ = explain(item)
    at = f" (at {where})" if where else ""
    from runtime.session import failed_where
    place = failed_where(str(item.get("instance")), item.get("state"))
    return f"session {session} failed in {place}: {item.get('error')}: {message}{at}"


def traceback_text(item: dict[str, Any]) -> str:
    """The failure's traceback for `--debug` (user paths), or '' when the item has none."""
    message, _, trace = explain(item)
    if not trace:
        return ""
    body = "".join(t if t.endswith("\n") else t + "\n" for t in trace)
    return f"Traceback (most recent call last):\n{body}{item.get('error')}: {message}"
