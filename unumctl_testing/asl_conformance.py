"""Local-target executor of tools/asl_conformance.py.

Each unit (a case or a choice-operator line) is compiled by the Step Functions front-end
with its functions prefixed (`c<k>_`); units with identical definitions share functions.
All compiled functions of a batch form ONE app run by ONE LocalRunner, so worker start-up
is paid once per function rather than once per case; the sessions of a batch run
concurrently. Stubs are the corpus's `_stubs/<name>.py` (handler `<name>.handler`); the
Lambda ARN's last segment names the stub. Wait/Retry use the virtual clock
(UNUM_ASL_VIRTUAL_CLOCK=1 in the workers); `execution_start_time` of a case sets the start.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from runtime.asl.wrapper import ENV_VIRTUAL_CLOCK
from runtime.errors import IRError
from runtime.ir import Workflow
from runtime.session import entry_payload

from unumctl.asl import SYNTH_CODE, SYNTH_DIR, SYNTH_MODULE
from unumctl.asl.compiler import compile_definition, to_workflow
from unumctl.manifest import App, FunctionSpec, Manifest, RuntimeSpec, WorkflowSpec


STALL_S = 120.0  # s without any session of a batch finishing: the rest of the batch times out


def _start_time(meta: dict[str, Any]) -> float | None:
    t = meta.get("execution_start_time")
    if not t:
        return None
    return _dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def run_local(units: list, corpus: Path, batch: int = 400, stall: float = STALL_S,
              fuse: bool = False) -> None:
    """Set `unit.result` for every unit ({"status": "SUCCEEDED", "output"} or
    {"status": "FAILED", "error", "cause"}; "COMPILE_ERROR"/"TIMEOUT" on our failures: a
    unit times out only when no session of its batch has finished for `stall` s, see
    wait_results).
    `fuse` (issue 25): apply the maximal plan, every fusible compiled Task chain fused
    (unumctl.tuning.colocate.fusible_chains), and set `unit.fused` to the unit's groups."""
    from unumctl.local import LocalRunner
    stubs = sorted(p.stem for p in (corpus / "_stubs").glob("*.py"))
    os.environ[ENV_VIRTUAL_CLOCK] = "1"
    for start in range(0, len(units), batch):
        chunk = units[start:start + batch]
        root = Path(tempfile.mkdtemp(prefix="asl-conf-"))
        try:
            app, entries = _build_app(chunk, corpus, stubs, root, fuse)
            if app is None:
                continue
            with LocalRunner(app, state=root / "state", quiet=True, workers_per_function=1,
                             max_workers=max(8, 4 * (os.cpu_count() or 2))) as runner:
                plat = runner.platform
                assert plat is not None
                sessions = {}
                for u in chunk:
                    if u.uid not in entries:
                        continue
                    s = str(uuid.uuid4())
                    t0 = _start_time(u.meta)
                    plat.invoke(entries[u.uid], entry_payload(s, u.input, context=None if t0 is None
                                                              else {"AslExec": {"Start": t0}}))
                    sessions[u.uid] = s
                by_uid = {u.uid: u for u in chunk}
                for uid, item in wait_results(plat, sessions, stall).items():
                    unit = by_uid[uid]
                    if item is None:
                        unit.result = {"status": "TIMEOUT", "error": None,
                                       "cause": f"no result, and none in its batch for {stall:.0f} s"}
                    elif item.get("status") == "SUCCEEDED":
                        unit.result = {"status": "SUCCEEDED", "output": item.get("v")}
                    else:
                        unit.result = {"status": item.get("status"), "error": item.get("error"),
                                       "cause": item.get("cause")}
        finally:
            shutil.rmtree(root, ignore_errors=True)


def wait_results(platform, sessions: dict[str, str], stall: float = STALL_S,
                 clock: Callable[[], float] = time.monotonic) -> dict[str, dict[str, Any] | None]:
    """Wait for the result of every session of `sessions` (unit id -> session id) on
    `platform` (LocalPlatform's `wait_result(session, timeout)`, raising TimeoutError, and
    `result(session)`, None while there is none); returns unit id -> result item, None for
    the units still without one when no session of the batch has finished for `stall` s.

    A batch's sessions run concurrently and finish one after another: on a loaded machine
    the last ones finish minutes after the first, so a deadline for the whole batch times
    out healthy sessions (it did, 13 choice-operator units under load); waiting while the
    batch still makes progress does not, and still ends a run that is stuck."""
    out: dict[str, dict[str, Any] | None] = {}
    pending = dict(sessions)
    progress = clock()
    while pending:
        first = next(iter(pending.values()))
        try:  # woken when an execution that wrote a result completes
            platform.wait_result(first, max(0.01, min(1.0, progress + stall - clock())))
        except TimeoutError:
            pass
        done = {u: item for u, s in pending.items() if (item := platform.result(s)) is not None}
        if done:
            out.update(done)
            for u in done:
                del pending[u]
            progress = clock()
        elif clock() - progress >= stall:
            out.update(dict.fromkeys(pending))
            break
    return out


def _build_app(units: list, corpus: Path, stubs: list[str], root: Path, fuse: bool = False):
    """One app holding the compiled functions of every unit; returns (App, uid -> entry).
    `fuse`: each unit's compiled workflow gets its maximal plan (run_local)."""
    (root / SYNTH_DIR).mkdir(parents=True)
    (root / SYNTH_DIR / f"{SYNTH_MODULE}.py").write_text(SYNTH_CODE)
    for s in stubs:
        d = root / "code" / s
        d.mkdir(parents=True)
        shutil.copy(corpus / "_stubs" / f"{s}.py", d / f"{s}.py")
    functions: dict[str, FunctionSpec] = {}
    merged: dict[str, Any] = {}
    entries: dict[str, str] = {}
    by_def: dict[str, str] = {}
    fused: dict[str, list[list[str]]] = {}  # definition digest -> its fused groups (fuse)
    resolve = lambda name: name if name in stubs else None  # noqa: E731
    for k, u in enumerate(units):
        key = hashlib.sha256(json.dumps(u.definition, sort_keys=True).encode()).hexdigest()
        if key in by_def:
            entries[u.uid] = by_def[key]
            if fuse:
                u.fused = fused.get(key, [])
            continue
        try:
            compiled = compile_definition(u.definition, resolve, stubs, source=u.uid,
                                          prefix=f"c{k}_", machine=f"case{k}")
            wf: Workflow = to_workflow(compiled, u.uid)
        except IRError as exc:
            u.result = {"status": "COMPILE_ERROR", "error": "CompileError", "cause": str(exc)}
            continue
        mine = {name: (FunctionSpec(code=SYNTH_DIR, handler=f"{SYNTH_MODULE}.handler")
                       if lam is None else FunctionSpec(code=f"code/{lam}", handler=f"{lam}.handler"))
                for name, lam in compiled.code.items()}
        if fuse:  # issue 25: every fusible compiled Task chain fused (colocate.fusible_chains)
            from unumctl.tuning.colocate import FusionError, apply_workflow, fusible_chains
            handlers = {n: f.handler for n, f in mine.items()}
            groups = fusible_chains(wf, handlers)
            try:
                wf = apply_workflow(wf, handlers, groups, {}, f"{u.uid} (asl_conformance --fuse)")
            except FusionError as exc:  # the maximal plan refused: the unit fails, the run goes on
                u.result = {"status": "COMPILE_ERROR", "error": "FusionError", "cause": str(exc)}
                continue
            fused[key] = u.fused = groups
        merged.update(wf.functions)
        functions.update(mine)
        by_def[key] = entries[u.uid] = compiled.start
    if not merged:
        return None, entries
    manifest = Manifest(app="asl-conformance", workflow=WorkflowSpec(ir="ir"),
                        runtime=RuntimeSpec(max_delivery_attempts=2), functions=functions)
    return App(root, manifest, Workflow(merged)), entries
