"""One emulated Lambda execution environment (used by unumctl_testing/aws/local_lambda.py).

Started as `python lambda_worker.py BUNDLE_DIR HANDLER` with the function's environment;
stdlib only, so the only `runtime` package it imports is the bundle's own copy. Reads one
JSON line per invocation on stdin ({"id", "event", "deadline_ms", "request_id"}) and answers
one JSON line ({"id", "ok": true, "result"} or {"id", "ok": false, "errorType",
"errorMessage"}) on the original stdout; the handler's own prints go to stderr, followed by the lines Lambda writes
to a function's log stream when a request ends (`END RequestId: <id>`, `REPORT RequestId:
<id>  Duration: ... ms ...`; Lambda developer guide, "Using CloudWatch Logs with Lambda");
the emulator writes `START RequestId: <id> Version: $LATEST` before it sends the request
(so a request killed before it ran still has it) and forwards the stream to CloudWatch Logs.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import uuid


class Context:
    """The subset of Lambda's context object Unum and typical handlers use."""

    def __init__(self, deadline_ms: float, request_id: str | None = None):
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.aws_request_id = request_id or str(uuid.uuid4())
        self._deadline = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline - time.time() * 1000))


def _count_calls(out_dir: str) -> None:
    """Benchmarks only (UNUM_COUNT_CALLS=<dir>): count AWS API calls with a botocore
    `before-call` event hook registered on every botocore session this process creates,
    with the items each call touches; written to <dir>/<pid>.json at exit."""
    import atexit
    import botocore.session

    counts: dict[str, int] = {}

    def hook(model, params, **_):
        op = f"{model.service_model.service_name}:{model.name}"
        counts[op] = counts.get(op, 0) + 1
        items = 1
        if model.name == "BatchGetItem":
            items = sum(len(v["Keys"]) for v in params.get("RequestItems", {}).values())
        elif model.name == "BatchWriteItem":
            items = sum(len(v) for v in params.get("RequestItems", {}).values())
        counts[op + "#items"] = counts.get(op + "#items", 0) + items

    original = botocore.session.Session.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        self.register("before-call", hook)

    botocore.session.Session.__init__ = init
    atexit.register(lambda: open(os.path.join(out_dir, f"{os.getpid()}.json"), "w").write(json.dumps(counts)))


def _max_rss_mb() -> int:
    try:
        import resource
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    except (ImportError, OSError):
        return 0


def main(argv: list[str]) -> int:
    bundle_dir, handler = argv
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: where a stuck worker is
    if os.environ.get("UNUM_COUNT_CALLS"):
        _count_calls(os.environ["UNUM_COUNT_CALLS"])
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [bundle_dir] + [p for p in sys.path if p and os.path.abspath(p) != here]
    for name in list(sys.modules):
        if name == "runtime" or name.startswith("runtime."):
            del sys.modules[name]
    os.environ["LAMBDA_TASK_ROOT"] = bundle_dir
    mod_name, _, fn_name = handler.rpartition(".")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
        import runtime  # noqa: F401  (must be the bundle's copy)
        if not os.path.abspath(runtime.__file__).startswith(os.path.abspath(bundle_dir)):
            raise ImportError(f"runtime imported from {runtime.__file__}, not from the bundle")
    except BaseException as exc:
        proto.write(json.dumps({"id": None, "fatal": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    proto.write(json.dumps({"id": None, "ready": True}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        ctx = Context(req.get("deadline_ms", time.time() * 1000 + 60000), req.get("request_id"))
        rid = ctx.aws_request_id
        t0 = time.perf_counter()
        try:
            result = fn(req["event"], ctx)
            out = {"id": req["id"], "ok": True, "result": result}
        except Exception as exc:
            traceback.print_exc()
            out = {"id": req["id"], "ok": False, "errorType": type(exc).__name__,
                   "errorMessage": str(exc)}
        ms = (time.perf_counter() - t0) * 1000
        sys.stdout.flush()
        sys.stderr.write(f"END RequestId: {rid}\nREPORT RequestId: {rid}\tDuration: {ms:.2f} ms\t"
                         f"Billed Duration: {max(1, int(ms + 0.999))} ms\tMemory Size: "
                         f"{ctx.memory_limit_in_mb} MB\tMax Memory Used: {_max_rss_mb()} MB\n")
        sys.stderr.flush()
        proto.write(json.dumps(out, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
