"""A local-target function instance: runs one function's bundle in its own process.

Started by unumctl.local.platform as `python worker.py ADDRESS AUTHKEY BUNDLE_DIR ENV_JSON`;
stdlib only, so that the only `runtime` package it imports is the bundle's own copy (two
functions that both ship `app.py` and a `helpers.py` never see each other's modules).

Before importing the bundle, the worker
- asks the kernel to SIGKILL it when the platform thread that started it dies (Linux
  PR_SET_PDEATHSIG), so a killed `unumctl invoke` leaves no orphan worker;
- ignores SIGINT (a Ctrl-C reaches the whole process group; the platform stops its workers);
- limits its address space (RLIMIT_AS) to ENV_JSON["memory_mb"] + ["headroom_mb"] MB when
  memory_mb is set: the function's manifest `memory` plus room for the interpreter.
A MemoryError then ends the instance like Lambda's out-of-memory exit ("exit" message).

Protocol over a multiprocessing connection (pickled tuples):
    platform -> worker: ("run", msg_id, payload, attempt, queue_id, ack) | ("stop",)
                        (ack: the worker deletes the queue row itself when the execution completes)
    worker -> platform: ("ready", pid) | ("fatal", pid, error, traceback) |
                        ("invoke", [(queue_id, function, payload), ...], delay) |
                        ("done", msg_id, status, detail, acked, ended, notices) |
                        ("crash", msg_id, detail) |
                        ("fault", msg_id, kill point)  # then it SIGKILLs itself (runtime.faults)
    (acked: the row was deleted by the execution; ended: the session's result was written or
    seen; notices: [([(queue_id, function, payload), ...], delay), ...], what the execution
    queued, sent with "done" so that one message ends an execution)
                        ("exit", msg_id, detail)   # then the worker exits (out of memory)
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import traceback

__all__ = ["main"]

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent_pid and os.getppid() != parent_pid:  # the platform died before prctl
        os._exit(1)


def _limit_memory(memory_mb: int, headroom_mb: int) -> None:
    import resource

    limit = (memory_mb + headroom_mb) * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemory"


def user_paths(text: str, bundle_dir: str, source_dir: str) -> str:
    """`text` (a runtime log line, e.g. a Step Functions cause with Lambda's stackTrace) with
    each path into this worker's bundle copy (`bundle_dir/REL`) replaced by the user's file
    `source_dir/REL` when that exists; the bundled runtime (runtime/, unum_*) is left alone.
    The CLI's failure line does the same from the bundle path alone (unumctl/failure.py)."""
    if bundle_dir not in text:
        return text

    def sub(m: "re.Match[str]") -> str:
        rel = m.group(1)
        if rel.startswith(("runtime/", "unum_")):
            return m.group(0)
        path = os.path.join(source_dir, rel)
        return path if os.path.exists(path) else m.group(0)
    # a path ends at a quote, comma or space, or before `:LINE` (the engine's `(at FILE:LINE)`)
    return re.sub(re.escape(bundle_dir.rstrip("/")) + r"/([^\s\"'\\,]+?)(?=:\d|[\s\"'\\,]|$)", sub, text)


def main(argv: list[str]) -> int:
    address, authkey_hex, bundle_dir, env_json = argv
    env = json.loads(env_json)
    _die_with_parent(int(env.get("parent_pid") or 0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the bundle's code and runtime copy come first on the import path
    sys.path[:] = [bundle_dir] + [p for p in sys.path if p and os.path.abspath(p) != os.path.dirname(__file__)]
    for name in list(sys.modules):
        if name == "runtime" or name.startswith("runtime."):
            del sys.modules[name]
    from multiprocessing.connection import Client

    conn = Client(address, authkey=bytes.fromhex(authkey_hex))
    memory_mb = env.get("memory_mb")
    try:
        if memory_mb:
            _limit_memory(int(memory_mb), int(env.get("headroom_mb", 64)))
        import unum_entry  # the bundle's entry module
        fn = unum_entry.local_function(bundle_dir, env, conn.send)
        if env.get("source") and callable(getattr(getattr(fn, "engine", None), "log", None)):
            log = fn.engine.log
            fn.engine.log = lambda msg: log(user_paths(msg, bundle_dir, env["source"]))
    except BaseException as exc:  # noqa: BLE001 - report load errors (bad handler, bad IR) and exit
        conn.send(("fatal", os.getpid(), f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return 1
    if hasattr(fn, "coalesce"):
        fn.coalesce = True
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the platform went away
            return 0
        if msg[0] == "stop":
            return 0
        _, msg_id, payload, attempt, queue_id, ack = msg
        try:
            out = fn.handle(payload, attempt, msg_id, queue_id, ack) if ack else \
                fn.handle(payload, attempt, msg_id, queue_id)
            try:
                conn.send(("done", msg_id, out.status, out.detail, bool(ack and getattr(fn, "acked", False)),
                           bool(getattr(fn, "ended", True)), getattr(fn, "notices", [])))
            except OSError:
                return 0
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - InjectedCrash or an infrastructure error: platform retries
            if _out_of_memory(exc):
                exc = None  # type: ignore[assignment]  # drop the frames holding the memory
                try:
                    for notice, delay in getattr(fn, "notices", []):
                        conn.send(("invoke", notice, delay))
                    limit = f"its memory limit of {memory_mb} MB" if memory_mb else "the available memory"
                    conn.send(("exit", msg_id, f"Runtime.OutOfMemory: the function exceeded {limit}; "
                                               "runtime exited"))
                finally:
                    os._exit(137)
            detail = f"{type(exc).__name__}: {exc}"
            if type(exc).__name__ != "InjectedCrash":
                detail += "\n" + traceback.format_exc()
            for notice, delay in getattr(fn, "notices", []):
                conn.send(("invoke", notice, delay))
            conn.send(("crash", msg_id, detail))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
