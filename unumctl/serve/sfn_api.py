"""The Step Functions API (AWS JSON 1.0 protocol) of `unumctl serve`, as a WSGI app (werkzeug).

Source: the AWS Step Functions API reference (each operation's request and response
members and errors) and the AWS JSON 1.0 protocol: `POST /` with
`X-Amz-Target: AWSStepFunctions.<Operation>` and `Content-Type: application/x-amz-json-1.0`,
a JSON object in and out; an error is HTTP 400 with `{"__type": NAME, "message": TEXT}`
(unumctl/serve/shapes.py). Timestamps are Unix seconds (JSON numbers).

No request is authenticated: the Authorization header (SigV4) is ignored, any credentials
work; the server binds 127.0.0.1 only (docs/local-service.md). What a web page could send
is refused before any operation runs: a request whose `Host` is not the address bound
(`127.0.0.1:PORT` or `localhost:PORT`: a DNS-rebinding page reaches 127.0.0.1 under its own
name) or that carries an `Origin` header (browsers send it; SDKs and the AWS CLI never do)
gets HTTP 403 AccessDeniedException, as LocalStack refuses foreign origins. A body over
MAX_REQUEST_BYTES is HTTP 413 before it is read; a body that is not a JSON object, or is
nested too deep to parse, is HTTP 400 SerializationException.

Operations: CreateStateMachine, DescribeStateMachine, ListStateMachines, DeleteStateMachine,
UpdateStateMachine, ValidateStateMachineDefinition, DescribeStateMachineForExecution,
TagResource, UntagResource, ListTagsForResource, StartExecution, StartSyncExecution,
DescribeExecution, ListExecutions, StopExecution, RedriveExecution (runtime/redrive.py),
GetExecutionHistory, SendTaskSuccess,
SendTaskFailure, SendTaskHeartbeat, ListMapRuns and DescribeMapRun (the Distributed Maps an
execution ran, read from its history: unumctl/serve/map_runs.py), TestState (one state run
by the interpreter: unumctl/serve/teststate.py). Any other
target is UnknownOperationException.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from typing import Any, Callable

from werkzeug.wrappers import Request, Response

from .service import Machine, Service, required_execution
from .shapes import CONTENT_TYPE, TARGET_PREFIX, SfnError, json_text, page, parse_json_field, required
from .teststate import run_test_state
from .triggers import TriggerHost
from .validation import diagnostics

__all__ = ["MAX_REQUEST_BYTES", "SfnApi"]

TEST_MACHINE = "TestState"  # the machine of TestState's $$.Execution.Id
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
# Step Functions service quotas, "Maximum request size: 1 MB per request. This is the total
# data size per Step Functions API request, including the request header and all other
# associated request data." (docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html)
MAX_REQUEST_BYTES = 1024 * 1024


def _machine_shape(svc: Service, m: Machine) -> dict[str, Any]:
    return {"stateMachineArn": svc.arns.machine(m.name), "name": m.name, "type": m.type,
            "creationDate": m.created}


def _execution_fields(svc: Service, m: Machine, name: str, desc: dict[str, Any]) -> dict[str, Any]:
    """DescribeExecution's members from HistoryReader.describe."""
    out: dict[str, Any] = {"executionArn": svc.arns.execution(m.name, name),
                           "stateMachineArn": svc.arns.machine(m.name), "name": name,
                           "status": desc["status"], "startDate": desc.get("start") or 0}
    if desc.get("input") is not None:
        out["input"] = json_text(desc["input"])
        out["inputDetails"] = {"included": True}
    if desc["status"] != "RUNNING":
        out["stopDate"] = desc.get("end") or desc.get("start") or 0
    if desc["status"] == "SUCCEEDED":
        out["output"] = json_text(desc.get("output"))
        out["outputDetails"] = {"included": True}
    elif desc["status"] != "RUNNING":
        out["error"] = desc.get("error") or ""
        out["cause"] = desc.get("cause") or ""
    return out


def _read_body(req: Request) -> bytes:
    """The request body, at most MAX_REQUEST_BYTES (a Content-Length over it is refused
    before anything is read; a chunked body is read up to one byte past it); SfnError
    ValidationException with HTTP 413 otherwise."""
    too_big = SfnError("ValidationException", f"the request is larger than {MAX_REQUEST_BYTES} bytes "
                       "(Step Functions' maximum request size)", 413)
    length = req.content_length
    if length is not None:
        if length > MAX_REQUEST_BYTES:
            raise too_big
        return req.get_data()
    if not req.environ.get("wsgi.input_terminated"):
        return b""
    data = req.environ["wsgi.input"].read(MAX_REQUEST_BYTES + 1)  # the server's de-chunked stream
    if len(data) > MAX_REQUEST_BYTES:
        raise too_big
    return data


class SfnApi:
    """WSGI application: one Service, the operations below. Handler errors that are not
    SfnError become HTTP 500 `ServiceException` (the traceback goes to stderr with --debug).

    Stopping (server.py): drain() refuses the requests that arrive from then on with HTTP 503
    `ServiceUnavailable` (the SDKs retry it) and waits for those in progress to be answered."""

    def __init__(self, service: Service, debug: bool = False):
        self.svc = service
        self.debug = debug
        self.hosts: frozenset[str] | None = None  # the Host values accepted (bind())
        # the hosted apps' triggers: `/apps/APP/triggers/NAME` (unumctl/serve/triggers.py)
        self.triggers: TriggerHost | None = None
        self._busy = 0                       # requests in progress
        self._closing = False
        self._cond = threading.Condition()
        self.ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "CreateStateMachine": self.create_state_machine,
            "DescribeStateMachine": self.describe_state_machine,
            "ListStateMachines": self.list_state_machines,
            "DeleteStateMachine": self.delete_state_machine,
            "UpdateStateMachine": self.update_state_machine,
            "ValidateStateMachineDefinition": self.validate_state_machine_definition,
            "DescribeStateMachineForExecution": self.describe_state_machine_for_execution,
            "TagResource": self.tag_resource,
            "UntagResource": self.untag_resource,
            "ListTagsForResource": self.list_tags_for_resource,
            "ListMapRuns": self.list_map_runs,
            "DescribeMapRun": self.describe_map_run,
            "StartExecution": self.start_execution,
            "StartSyncExecution": self.start_sync_execution,
            "DescribeExecution": self.describe_execution,
            "ListExecutions": self.list_executions,
            "StopExecution": self.stop_execution,
            "RedriveExecution": self.redrive_execution,
            "GetExecutionHistory": self.get_execution_history,
            "SendTaskSuccess": self.send_task_success,
            "SendTaskFailure": self.send_task_failure,
            "SendTaskHeartbeat": self.send_task_heartbeat,
            "TestState": self.test_state,
        }

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Any:
        with self._cond:
            if self._closing:
                return Response(json.dumps({"__type": "ServiceUnavailable", "message": "unumctl serve is stopping"}),
                                503, content_type=CONTENT_TYPE)(environ, start_response)
            self._busy += 1
        try:
            return self.handle(Request(environ))(environ, start_response)
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def bind(self, port: int) -> None:
        """Accept requests whose Host header names 127.0.0.1 or localhost with `port` (the
        port the server is bound to; without it when it is 80, as HTTP clients send it)."""
        names = ("127.0.0.1", "localhost")
        self.hosts = frozenset([f"{n}:{port}" for n in names] + (list(names) if port == 80 else []))

    def _check_origin(self, req: Request) -> None:
        """SfnError AccessDeniedException (HTTP 403) for a request from a web page: another
        Host (DNS rebinding) or an Origin header."""
        host = req.headers.get("Host", "").strip().lower()
        if self.hosts is not None and host not in self.hosts:
            raise SfnError("AccessDeniedException", f"Host {host[:100]!r} is not this server's address "
                           f"({' or '.join(sorted(self.hosts))}): unumctl serve answers only requests "
                           "to 127.0.0.1 or localhost", 403)
        origin = req.headers.get("Origin")
        if origin is not None:
            raise SfnError("AccessDeniedException", f"requests from a web page (Origin {origin[:100]!r}) "
                           "are refused: use an SDK or the AWS CLI", 403)

    def drain(self, timeout: float) -> int:
        """Refuse new requests (503) and wait up to `timeout` s for those in progress;
        returns how many are still in progress (cut when the process exits)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closing = True
            while self._busy and self._cond.wait(max(0.0, deadline - time.monotonic())):
                pass
            return self._busy

    def handle(self, req: Request) -> Response:
        try:
            self._check_origin(req)
            parts = req.path.strip("/").split("/")
            if self.triggers is not None and len(parts) == 4 and parts[0] == "apps" and parts[2] == "triggers":
                return self.triggers.handle(req, parts[1], parts[3])
            if req.method != "POST":
                raise SfnError("UnknownOperationException", "use POST / with X-Amz-Target: AWSStepFunctions.<Operation>")
            target = req.headers.get("X-Amz-Target", "")
            op = self.ops.get(target[len(TARGET_PREFIX):]) if target.startswith(TARGET_PREFIX) else None
            if op is None:
                raise SfnError("UnknownOperationException", f"unknown operation {target[:100]!r}")
            try:
                body = json.loads(_read_body(req) or b"{}")
            except ValueError:
                raise SfnError("SerializationException", "the request body is not JSON") from None
            except RecursionError:
                raise SfnError("SerializationException", "the request body is nested too deep") from None
            if not isinstance(body, dict):
                raise SfnError("SerializationException", "the request body must be a JSON object")
            return Response(json.dumps(op(body)), 200, content_type=CONTENT_TYPE)
        except SfnError as exc:
            return Response(json.dumps(exc.body()), exc.status, content_type=CONTENT_TYPE)
        except Exception as exc:  # noqa: BLE001  (a bug: report it as AWS would, keep serving)
            if self.debug:
                traceback.print_exc()
            print(f"unumctl: serve: {type(exc).__name__}: {exc}", file=sys.stderr)
            return Response(json.dumps({"__type": "ServiceException", "message": f"{type(exc).__name__}: {exc}"}),
                            500, content_type=CONTENT_TYPE)

    # ------------------------------------------------------------------ state machines
    def create_state_machine(self, body: dict[str, Any]) -> dict[str, Any]:
        m = self.svc.create_machine(required(body, "name"), required(body, "definition"),
                                    required(body, "roleArn"), body.get("type"), body.get("tags"))
        return {"stateMachineArn": self.svc.arns.machine(m.name), "creationDate": m.created}

    def describe_state_machine(self, body: dict[str, Any]) -> dict[str, Any]:
        m = self.svc.machine(required(body, "stateMachineArn"))
        return {**_machine_shape(self.svc, m), "status": "ACTIVE", "definition": m.definition,
                "roleArn": m.role_arn, "revisionId": m.revision_id}

    def update_state_machine(self, body: dict[str, Any]) -> dict[str, Any]:
        """UpdateStateMachine: {updateDate, revisionId} of the machine's current revision
        (a new one unless definition and role are unchanged). `publish` (versions) is not
        served: ValidationException."""
        if body.get("publish"):
            raise SfnError("ValidationException", "publish: state machine versions are not served by unumctl serve")
        m = self.svc.update_machine(required(body, "stateMachineArn"), body.get("definition"), body.get("roleArn"))
        return {"updateDate": m.updated or m.created, "revisionId": m.revision_id}

    def validate_state_machine_definition(self, body: dict[str, Any]) -> dict[str, Any]:
        """ValidateStateMachineDefinition (unumctl/serve/validation.py): {result, diagnostics,
        truncated}; `severity` WARNING also returns warnings (there are none), `maxResults`
        (0-100) cuts the list."""
        definition = required(body, "definition")
        if not isinstance(definition, str):
            raise SfnError("ValidationException", "definition must be a string of ASL JSON")
        if body.get("type") not in (None, "STANDARD", "EXPRESS"):
            raise SfnError("ValidationException", "type must be STANDARD or EXPRESS")
        if body.get("severity") not in (None, "ERROR", "WARNING"):
            raise SfnError("ValidationException", "severity must be ERROR or WARNING")
        limit = body.get("maxResults") or 100
        if not isinstance(limit, int) or not 0 < limit <= 100:
            raise SfnError("ValidationException", "maxResults must be between 1 and 100")
        found = diagnostics(definition, self.svc.function_specs())
        result = "FAIL" if any(d["severity"] == "ERROR" for d in found) else "OK"
        return {"result": result, "diagnostics": found[:limit], "truncated": len(found) > limit}

    def describe_state_machine_for_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        """The revision of the machine an execution runs (or ran) on: its definition, role,
        updateDate (the revision's date; the creation date for the first) and revisionId."""
        m, name = required_execution(self.svc, body)
        self.svc.describe(m, name)  # ExecutionDoesNotExist for an unknown execution
        return {"stateMachineArn": self.svc.arns.machine(m.name), "name": m.name, "definition": m.definition,
                "roleArn": m.role_arn, "updateDate": m.updated or m.created, "revisionId": m.revision_id}

    # ------------------------------------------------------------------ tags
    def tag_resource(self, body: dict[str, Any]) -> dict[str, Any]:
        self.svc.tag(required(body, "resourceArn"), required(body, "tags"))
        return {}

    def untag_resource(self, body: dict[str, Any]) -> dict[str, Any]:
        self.svc.untag(required(body, "resourceArn"), required(body, "tagKeys"))
        return {}

    def list_tags_for_resource(self, body: dict[str, Any]) -> dict[str, Any]:
        tags = self.svc.tags(required(body, "resourceArn"))
        return {"tags": [{"key": k, "value": v} for k, v in tags.items()]}

    # ------------------------------------------------------------------ map runs
    def list_map_runs(self, body: dict[str, Any]) -> dict[str, Any]:
        """ListMapRuns: the Distributed Map runs of an execution (unumctl/serve/map_runs.py),
        oldest first; ExecutionDoesNotExist for an unknown execution."""
        from .map_runs import list_entry
        m, name = required_execution(self.svc, body)
        return page([list_entry(r) for r in self.svc.map_runs(m, name)], body, "mapRuns")

    def describe_map_run(self, body: dict[str, Any]) -> dict[str, Any]:
        """DescribeMapRun: a Map Run's status, dates, thresholds and item counts;
        ResourceNotFound for a Map Run no execution has."""
        from .map_runs import describe
        return describe(self.svc.map_run(required(body, "mapRunArn")))

    def list_state_machines(self, body: dict[str, Any]) -> dict[str, Any]:
        return page([_machine_shape(self.svc, m) for m in self.svc.machines()], body, "stateMachines")

    def delete_state_machine(self, body: dict[str, Any]) -> dict[str, Any]:
        self.svc.delete_machine(required(body, "stateMachineArn"))
        return {}

    # ------------------------------------------------------------------ executions
    def start_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        m = self.svc.machine(required(body, "stateMachineArn"))
        _, arn, start = self.svc.start_execution(m, body.get("name"), body.get("input"))
        return {"executionArn": arn, "startDate": start}

    def start_sync_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        """Accepted for any machine (AWS: Express only); waits up to the service's
        sync_timeout (300 s), then stops the execution with States.Timeout (TIMED_OUT).
        An Express execution is answered with its Express ARN and its name."""
        m = self.svc.machine(required(body, "stateMachineArn"))
        name, arn, _ = self.svc.start_execution(m, body.get("name"), body.get("input"))
        if self.svc.wait(m, name, self.svc.sync_timeout) is None:
            self.svc.stop_execution(m, name, "States.Timeout", "StartSyncExecution waited "
                                    f"{self.svc.sync_timeout:g} s", status="TIMED_OUT")
        out = _execution_fields(self.svc, m, name, self.svc.describe(m, name))
        out["executionArn"], out["name"] = arn, arn.split(":")[-2] if m.type == "EXPRESS" else name
        out.pop("inputDetails", None)
        out.pop("outputDetails", None)
        out["billingDetails"] = {"billedMemoryUsedInMB": 0, "billedDurationInMilliseconds": 0}
        return out

    def describe_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        m, name = required_execution(self.svc, body)
        out = _execution_fields(self.svc, m, name, self.svc.describe(m, name))
        return {**out, **self.svc.redrive_fields(m, name)}

    def list_executions(self, body: dict[str, Any]) -> dict[str, Any]:
        m = self.svc.machine(required(body, "stateMachineArn"))
        if m.type == "EXPRESS":
            raise SfnError("StateMachineTypeNotSupported", f"{m.name} is an EXPRESS state machine: "
                           "ListExecutions lists Standard executions only (Express ones are in the logs)")
        status = body.get("statusFilter")
        if status is not None and status not in STATUSES:
            raise SfnError("ValidationException", f"statusFilter: {str(status)[:40]!r} must be one of "
                           f"{', '.join(STATUSES)}")
        rows = []
        for s in self.svc.sessions(m):
            if status is not None and s["status"] != status:
                continue
            row = {"executionArn": self.svc.arns.execution(m.name, s["session"]),
                   "stateMachineArn": self.svc.arns.machine(m.name), "name": s["session"],
                   "status": s["status"], "startDate": s.get("start") or 0}
            if s["status"] != "RUNNING" and s.get("end"):
                row["stopDate"] = s["end"]
            rows.append(row)
        return page(rows, body, "executions")

    def redrive_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        """RedriveExecution: {redriveDate}; ExecutionNotRedrivable for a SUCCEEDED or RUNNING
        execution, one past its 14 days, or one of an app without runtime.redrive
        (runtime/redrive.py). `clientToken` is accepted and not used."""
        m, name = required_execution(self.svc, body)
        return {"redriveDate": self.svc.redrive_execution(m, name)}

    def stop_execution(self, body: dict[str, Any]) -> dict[str, Any]:
        m, name = required_execution(self.svc, body)
        return {"stopDate": self.svc.stop_execution(m, name, body.get("error"), body.get("cause"))}

    def get_execution_history(self, body: dict[str, Any]) -> dict[str, Any]:
        m, name = required_execution(self.svc, body)
        events = self.svc.history(m, name, body.get("includeExecutionData", True) is not False)
        if body.get("reverseOrder"):
            events.reverse()
        return page(events, body, "events")

    def test_state(self, body: dict[str, Any]) -> dict[str, Any]:
        """TestState: one state run on an input (unumctl/serve/teststate.py)."""
        return run_test_state(body, self.svc.arns.execution(TEST_MACHINE, "test-state"))

    # ------------------------------------------------------------------ callbacks
    def send_task_success(self, body: dict[str, Any]) -> dict[str, Any]:
        output = parse_json_field(required(body, "output"), "output", "InvalidOutput")
        self.svc.send_task("success", required(body, "taskToken"), output=output)
        return {}

    def send_task_failure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.svc.send_task("failure", required(body, "taskToken"), error=body.get("error"), cause=body.get("cause"))
        return {}

    def send_task_heartbeat(self, body: dict[str, Any]) -> dict[str, Any]:
        self.svc.send_task("heartbeat", required(body, "taskToken"))
        return {}
