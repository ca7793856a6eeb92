"""Wire meters for the datastore clients: API calls and response sizes, used by the
conformance suite's large-set checks and by bench/set_scale.py.

Both expose `calls` (API calls since `reset()`), `ops` (calls per operation name),
`response_bytes` (one entry per call: the response size in bytes) and `request_bytes`.
"""

from __future__ import annotations


class WireMeter:
    """One boto3 client's API calls, with the raw HTTP request and response body sizes
    (botocore `before-send` / `after-call` events; error responses included). A call
    retried by botocore counts once, with its last response."""

    def __init__(self, client, service: str = "dynamodb"):
        self.reset()
        client.meta.events.register(f"after-call.{service}", self._after)
        client.meta.events.register(f"before-send.{service}", self._send)

    def _send(self, request, **_):
        body = request.body or b""
        self.request_bytes.append(len(body if isinstance(body, bytes) else str(body).encode()))

    def _after(self, http_response, model, **_):
        self.calls += 1
        self.ops[model.name] = self.ops.get(model.name, 0) + 1
        self.response_bytes.append(len(http_response.content or b""))

    def reset(self):
        self.calls = 0
        self.response_bytes: list[int] = []
        self.request_bytes: list[int] = []
        self.ops: dict[str, int] = {}


class ApiMeter:
    """One google.cloud.firestore.Client's RPCs and the serialized size of each request and
    response message (a streamed RPC's messages are summed into one entry), by wrapping the
    client's GAPIC object (`Client._firestore_api`; instrumentation for tests and benches)."""

    RPCS = ("commit", "batch_get_documents", "run_query", "begin_transaction", "rollback",
            "batch_write", "get_document")

    def __init__(self, client):
        self.reset()
        inner = client._firestore_api
        meter = self

        class _Api:
            def __getattr__(self, name):
                attr = getattr(inner, name)
                if name not in ApiMeter.RPCS:
                    return attr

                def call(*a, **k):
                    meter.calls += 1
                    meter.ops[name] = meter.ops.get(name, 0) + 1
                    req = k.get("request", a[0] if a else None)
                    meter.request_bytes.append(_pb_size(req) if req is not None else 0)
                    resp = attr(*a, **k)
                    if name in ("batch_get_documents", "run_query"):
                        return meter._stream(resp)
                    meter.response_bytes.append(_pb_size(resp))
                    return resp
                return call

        client._firestore_api_internal = _Api()

    def _stream(self, resp):
        total = 0
        try:
            for msg in resp:
                total += _pb_size(msg)
                yield msg
        finally:
            self.response_bytes.append(total)

    def reset(self):
        self.calls = 0
        self.response_bytes: list[int] = []
        self.request_bytes: list[int] = []
        self.ops: dict[str, int] = {}


def _pb_size(msg) -> int:
    if isinstance(msg, dict):
        return 0  # a request passed as a dict: size unknown
    pb = type(msg).pb(msg) if hasattr(type(msg), "pb") else msg
    return pb.ByteSize()
