"""moto_server with its requests applied one at a time (for the AWS tests and benchmarks).

moto_server serves requests on threads and its DynamoDB backend applies concurrent
TransactWriteItems without isolation: an `ADD size 1` on a fan-in counter can lose an
update (observed with 10 threads: sizes [8]*10 for 10 adds), after which no add
sees the set complete and the workflow stalls with nothing in flight (seen as the
wordcount example's "no result after 90 s" on a loaded machine: 8 members, counter 7).
DynamoDB serializes writes to an item, so this server holds one lock around each request
(the WSGI app of moto_server, moto.server.main, otherwise unchanged; still threaded, so
keep-alive connections do not block each other).

    python unumctl/aws/emulate/moto_serialized.py -H 127.0.0.1 -p PORT [--cert C --key K]

With --cert/--key it serves HTTPS (as `moto_server -c C -k K`).

moto gap worked around here (moto 5.2.5): a bucket policy's statement is applied to object
writes with its conditions evaluated by moto.iam.policy_conditions, which knows
`StringEquals` only and is given no request context, so any condition holds and the
TLS-only statement of terraform/modules/aws-unum-datastore (`Deny s3:*` when
`aws:SecureTransport` is `false`) denies every PutObject, over HTTPS too; a condition that
fails also turns any statement into a Deny. `_tls_condition` adds the `Bool` operator (IAM
User Guide, "IAM JSON policy elements: Condition operators", Boolean condition operators),
gives each statement `aws:SecureTransport` of the request being served (requests are served
one at a time, so one value is enough) and lets a Deny statement whose condition fails not
apply: HTTPS requests pass, plain HTTP ones are denied, as on S3.
"""

from __future__ import annotations

import argparse
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

__all__: list[str] = []


_REQUEST = {"secure": "false"}  # the request being served (one at a time)


def _tls_condition() -> None:
    """Teach moto's policy conditions `Bool` and `aws:SecureTransport` (module docstring)."""
    from moto.iam import access_control, policy_conditions

    def bool_equals(expected, actual: str) -> bool:
        values = expected if isinstance(expected, list) else [expected]
        return str(actual).lower() in [str(v).lower() for v in values]

    policy_conditions.CONDITION_OPERATIONS.setdefault("Bool", bool_equals)  # type: ignore[arg-type]  # moto's table is typed for strings
    statement = access_control.IAMPolicyStatement
    check, permitted = statement._check_conditions, statement.is_action_permitted

    def is_action_permitted(self, action, resource="*", principal=None, incoming_condition_values=None):
        context = {"aws:SecureTransport": _REQUEST["secure"], **(incoming_condition_values or {})}
        if self._statement.get("Effect") == "Deny" and self._statement.get("Condition") \
                and not check(self, context):
            return access_control.PermissionResult.NEUTRAL  # a Deny whose condition fails does not apply
        return permitted(self, action, resource, principal, context)

    statement.is_action_permitted = is_action_permitted  # type: ignore[method-assign]  # the patch itself


class Serialized:
    """WSGI middleware: one request at a time through `app` (the response body is built
    inside the lock)."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            _REQUEST["secure"] = "true" if environ.get("wsgi.url_scheme") == "https" else "false"
            return list(self.app(environ, start_response))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-H", "--host", default="127.0.0.1")
    ap.add_argument("-p", "--port", type=int, required=True)
    ap.add_argument("--cert", help="PEM certificate: serve HTTPS")
    ap.add_argument("--key", help="PEM private key of --cert")
    args = ap.parse_args()
    import os
    os.environ.setdefault("MOTO_PORT", str(args.port))
    _tls_condition()
    app = DomainDispatcherApplication(create_backend_app)
    tls = (args.cert, args.key) if args.cert else None
    run_simple(args.host, args.port, Serialized(app), threaded=True, request_handler=MotoRequestHandler,
               ssl_context=tls)


if __name__ == "__main__":
    main()
