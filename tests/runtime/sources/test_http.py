"""HTTP events (runtime/sources/http.py): a function URL request (payload format 2.0) gives
one Start keyed by its Idempotency-Key header, else by its request id."""

from __future__ import annotations

import base64

import pytest

from runtime.sources import SourceEventError, starts

WEB = {"name": "web", "type": "http", "auth": "iam", "wait_seconds": 0}


def request(body: str | None, headers: dict | None = None, request_id: str = "id-1", b64: bool = False) -> dict:
    """A Lambda function URL request (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html)."""
    return {"version": "2.0", "routeKey": "$default", "rawPath": "/orders", "rawQueryString": "",
            "headers": headers or {"content-type": "application/json"}, "body": body, "isBase64Encoded": b64,
            "requestContext": {"accountId": "123456789012", "apiId": "<url-id>", "requestId": request_id,
                               "http": {"method": "POST", "path": "/orders", "protocol": "HTTP/1.1"}}}


def test_the_idempotency_key_header_keys_the_session_whatever_its_case():
    a = starts(WEB, request('{"n": 1}', {"Idempotency-Key": "order-1042"}, "id-1"))[0]
    b = starts(WEB, request('{"n": 1}', {"idempotency-key": "order-1042"}, "id-2"))[0]
    assert a.key == b.key == "http:order-1042"
    assert a.input == {"n": 1} and a.context["method"] == "POST" and a.context["path"] == "/orders"


def test_without_the_header_each_request_is_its_own_session():
    a, b = (starts(WEB, request("{}", request_id=r))[0] for r in ("id-1", "id-2"))
    assert (a.key, b.key) == ("http-request:id-1", "http-request:id-2")


def test_a_base64_body_is_decoded():
    (s,) = starts(WEB, request(base64.b64encode(b'[1, 2]').decode(), b64=True))
    assert s.input == [1, 2]


@pytest.mark.parametrize("event, field", [({"body": "{}"}, "headers"), (request(None, request_id=""), "requestId"),
                                          ({**request("{}"), "body": 5}, "body")])
def test_a_request_of_another_shape_is_refused(event, field):
    with pytest.raises(SourceEventError, match=field):
        starts(WEB, event)
