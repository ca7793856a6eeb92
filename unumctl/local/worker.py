"""A local-target function instance: runs one function's bundle in its own process.

Started by unumctl.local.platform as `python worker.py ADDRESS AUTHKEY BUNDLE_DIR ENV_JSON`;
stdlib only, so that the only `runtime` package it imports is the bundle's own copy (two
functions that both ship `app.py` and a `helpers.py` never see each other's modules).
Protocol over a multiprocessing connection (pickled tuples):
    platform -> worker: ("run", msg_id, payload, attempt) | ("stop",)
    worker -> platform: ("ready", pid) | ("invoke", calls, delay) |
                        ("done", msg_id, status, detail) | ("crash", msg_id, detail)
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main(argv: list[str]) -> int:
    address, authkey_hex, bundle_dir, env_json = argv
    # the bundle's code and runtime copy come first on the import path
    sys.path[:] = [bundle_dir] + [p for p in sys.path if p and os.path.abspath(p) != os.path.dirname(__file__)]
    for name in list(sys.modules):
        if name == "runtime" or name.startswith("runtime."):
            del sys.modules[name]
    from multiprocessing.connection import Client

    conn = Client(address, authkey=bytes.fromhex(authkey_hex))
    try:
        import unum_entry  # the bundle's entry module
        fn = unum_entry.local_function(bundle_dir, json.loads(env_json), conn.send)
    except BaseException as exc:  # report load errors (bad handler, bad IR) and exit
        conn.send(("fatal", os.getpid(), f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return 1
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the platform went away
            return 0
        if msg[0] == "stop":
            return 0
        _, msg_id, payload, attempt = msg
        try:
            out = fn.handle(payload, attempt, msg_id)
            try:
                conn.send(("done", msg_id, out.status, out.detail))
            except OSError:
                return 0
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # InjectedCrash or an infrastructure error: platform retries
            detail = f"{type(exc).__name__}: {exc}"
            if type(exc).__name__ != "InjectedCrash":
                detail += "\n" + traceback.format_exc()
            conn.send(("crash", msg_id, detail))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
