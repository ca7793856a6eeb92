"""One emulated Lambda execution environment (used by unumctl/aws/emulate/local_lambda.py).

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

__all__ = ["main"]


class Context:
    """The subset of Lambda's context object Unum and typical handlers use."""

    def __init__(self, deadline_ms: float, request_id: str | None = None):
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        # moto's default account; the region the emulator gives the function
        self.invoked_function_arn = (f"arn:aws:lambda:{os.environ.get('AWS_REGION', 'us-east-1')}:"
                                     f"123456789012:function:{self.function_name}")
        self.aws_request_id = request_id or str(uuid.uuid4())
        self._deadline = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline - time.time() * 1000))


def _write_sizes(name: str, params: dict) -> list[int]:
    """Bytes of each item a DynamoDB write request writes (one entry per billed item).
    PutItem: the item; UpdateItem/DeleteItem: key + the expression values (the stored item's
    size is not known before the call: a lower bound); BatchWriteItem and TransactWriteItems:
    one entry per member."""
    from runtime.aws.datastore import item_bytes  # the bundle's runtime (on sys.path in main)

    def update(p: dict) -> int:
        return item_bytes(p.get("Key", {})) + item_bytes(p.get("ExpressionAttributeValues", {}))
    if name == "PutItem":
        return [item_bytes(params["Item"])]
    if name in ("UpdateItem", "DeleteItem"):
        return [update(params)]
    if name == "BatchWriteItem":
        return [item_bytes(r["PutRequest"]["Item"]) if "PutRequest" in r else item_bytes(r["DeleteRequest"]["Key"])
                for reqs in params.get("RequestItems", {}).values() for r in reqs]
    if name == "TransactWriteItems":
        out = []
        for m in params.get("TransactItems", []):
            (kind, body), = m.items()
            out.append(item_bytes(body["Item"]) if kind == "Put" else update(body))
        return out
    return []


def _read_sizes(name: str, params: dict, parsed: dict) -> list[int]:
    """Bytes read per billed read (one entry per requested item; a Query is one entry with
    the sum of the items it returned, as DynamoDB rounds a Query's total)."""
    from runtime.aws.datastore import item_bytes

    if name == "GetItem":
        return [item_bytes(parsed.get("Item", {}))]
    if name == "BatchGetItem":
        sizes = [item_bytes(it) for items in parsed.get("Responses", {}).values() for it in items]
        keys = sum(len(v["Keys"]) for v in params.get("RequestItems", {}).values())
        unprocessed = sum(len(v.get("Keys", [])) for v in parsed.get("UnprocessedKeys", {}).values())
        return sizes + [0] * max(0, keys - unprocessed - len(sizes))  # a key not found: 0 bytes
    if name == "TransactGetItems":
        return [item_bytes(r.get("Item", {})) for r in parsed.get("Responses", [])]
    if name == "Query":
        return [sum(item_bytes(it) for it in parsed.get("Items", []))]
    return []


def _count_calls(out_dir: str) -> None:
    """Benchmarks and `unumctl cost` only (UNUM_COUNT_CALLS=<dir>): count AWS API calls with
    botocore hooks registered on every botocore session this process creates:
    `provide-client-params` (the call's API parameters: once per API call) counts per operation
    `service:Op` the calls and `service:Op#items` the items each call touches, and for
    DynamoDB writes `dynamodb:Op#bytes` the size of each item written; `after-call` adds the
    size of each item a DynamoDB read returned (unumctl/cost/billing.py turns the sizes into
    request units). Written to <dir>/<pid>.json at exit. While file <dir>/PAUSED exists
    nothing is counted (unumctl/cost/measure.py creates it for its warm-up sessions, so
    that their calls are not billed).

    (Before 2026-11-23 the counter hooked `before-call`, whose `params` is the serialized
    request, so `BatchGetItem#items` was always 0.)"""
    import atexit
    import botocore.session

    counts: dict[str, int] = {}
    sizes: dict[str, list[int]] = {}
    paused = os.path.join(out_dir, "PAUSED")

    def before(params, model, context=None, **_):
        if os.path.exists(paused):
            return
        service = model.service_model.service_name
        op = f"{service}:{model.name}"
        counts[op] = counts.get(op, 0) + 1
        items = 1
        if model.name == "BatchGetItem":
            items = sum(len(v["Keys"]) for v in params.get("RequestItems", {}).values())
        elif model.name in ("BatchWriteItem", "TransactWriteItems"):
            items = len(_write_sizes(model.name, params))
        counts[op + "#items"] = counts.get(op + "#items", 0) + items
        if service == "dynamodb":
            if context is not None:
                context["unum_params"] = params
            if w := _write_sizes(model.name, params):
                sizes.setdefault(op + "#bytes", []).extend(w)

    def after(model, parsed, context=None, **_):
        if model.service_model.service_name != "dynamodb" or not isinstance(parsed, dict) or "Error" in parsed:
            return
        if "unum_params" not in (context or {}):
            return  # not counted (warm-up)
        if r := _read_sizes(model.name, (context or {}).get("unum_params", {}), parsed):
            sizes.setdefault(f"dynamodb:{model.name}#bytes", []).extend(r)

    original = botocore.session.Session.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        self.register("provide-client-params", before)
        self.register("after-call", after)

    botocore.session.Session.__init__ = init
    atexit.register(lambda: open(os.path.join(out_dir, f"{os.getpid()}.json"), "w").write(
        json.dumps({**counts, **sizes})))


def _call_params(name: str, params: dict) -> dict:
    """The resources an API call names (for _record_calls): DynamoDB tables, the S3 bucket
    and object keys, the Lambda function; and an integration Task's SNS topic, SQS queue,
    state machine, execution or event buses."""
    out: dict = {}
    if "TableName" in params:
        out["table"] = params["TableName"]
    if "RequestItems" in params:
        out["tables"] = sorted(params["RequestItems"])
    if "TransactItems" in params:
        out["tables"] = sorted({body.get("TableName") for m in params["TransactItems"] for body in m.values()})
    if "Bucket" in params:
        out["bucket"] = params["Bucket"]
        keys = [params["Key"]] if "Key" in params else []
        keys += [o["Key"] for o in params.get("Delete", {}).get("Objects", [])]
        out["keys"] = keys
    if "FunctionName" in params:
        out["function"] = params["FunctionName"] + (f":{params['Qualifier']}" if params.get("Qualifier") else "")
    # the resources of Step Functions integration Tasks (runtime/asl/integrations)
    if params.get("TopicArn") or params.get("TargetArn"):
        out["topic"] = params.get("TopicArn") or params.get("TargetArn")
    if "QueueUrl" in params:
        out["queue"] = params["QueueUrl"]
    if "stateMachineArn" in params:
        out["machine"] = params["stateMachineArn"]
    if "executionArn" in params:
        out["execution"] = params["executionArn"]
    if name == "PutEvents":
        out["buses"] = sorted({e.get("EventBusName") or "default" for e in params.get("Entries", [])})
    return out


def _record_calls(out_dir: str) -> None:
    """Tests only (UNUM_RECORD_CALLS=<dir>): append one JSON line per AWS API call this
    process makes to <dir>/calls-<pid>.jsonl: {"function", "key" (the access key id it signs
    with: which role), "op" ("service:Operation"),
    "params" (the resources it names, _call_params), "status" (HTTP), "error" (code or
    null)}, from botocore's `provide-client-params` and `after-call` hooks on every botocore
    session (unumctl_testing/aws/iam.py checks them against the role's policy)."""
    import botocore.session
    import threading

    path = os.path.join(out_dir, f"calls-{os.getpid()}.jsonl")
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
    lock = threading.Lock()

    def before(params, model, context=None, **_):
        if context is not None:
            context["unum_call"] = {"function": function, "key": os.environ.get("AWS_ACCESS_KEY_ID"),
                                    "params": _call_params(model.name, params),
                                    "op": f"{model.service_model.service_name}:{model.name}"}

    def after(http_response, parsed, model, context=None, **_):
        rec = (context or {}).get("unum_call")
        if rec is None:
            return
        rec["status"] = getattr(http_response, "status_code", None)
        rec["error"] = (parsed or {}).get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        with lock, open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")

    original = botocore.session.Session.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        self.register("provide-client-params", before)
        self.register("after-call", after)

    botocore.session.Session.__init__ = init


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
    if os.environ.get("UNUM_RECORD_CALLS"):
        _record_calls(os.environ["UNUM_RECORD_CALLS"])
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
    except BaseException as exc:  # noqa: BLE001 - a load error is reported to the front, as Lambda's init error
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
        except Exception as exc:  # noqa: BLE001 - the handler's error is the invocation's result, as on Lambda
            traceback.print_exc()
            out = {"id": req["id"], "ok": False, "errorType": type(exc).__name__,
                   "errorMessage": str(exc)}
        ms = (time.perf_counter() - t0) * 1000
        out["ms"] = ms  # the handler's duration (Lambda's REPORT Duration)
        sys.stdout.flush()
        sys.stderr.write(f"END RequestId: {rid}\nREPORT RequestId: {rid}\tDuration: {ms:.2f} ms\t"
                         f"Billed Duration: {max(1, int(ms + 0.999))} ms\tMemory Size: "
                         f"{ctx.memory_limit_in_mb} MB\tMax Memory Used: {_max_rss_mb()} MB\n")
        sys.stderr.flush()
        proto.write(json.dumps(out, default=str) + "\n")
    return 0


if __name__ == "__main__":
    import signal

    # the emulator ends a worker by closing its stdin (or SIGKILL); a terminal's Ctrl-C, which
    # reaches the whole process group of `unumctl emulate aws`, must not kill it mid-request
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(main(sys.argv[1:]))
