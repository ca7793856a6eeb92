"""moto_server with its requests applied one at a time (for the AWS tests and benchmarks).

moto_server serves requests on threads and its DynamoDB backend applies concurrent
TransactWriteItems without isolation: an `ADD size 1` on a fan-in counter can lose an
update (observed with 10 threads: sizes [8]*10 for 10 adds), after which no add
sees the set complete and the workflow stalls with nothing in flight (seen as the
wordcount example's "no result after 90 s" on a loaded machine: 8 members, counter 7).
DynamoDB serializes writes to an item, so this server holds one lock around each request
(the WSGI app of moto_server, moto.server.main, otherwise unchanged; still threaded, so
keep-alive connections do not block each other).

    python unumctl/emulate/aws/moto_serialized.py -H 127.0.0.1 -p PORT
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


class Serialized:
    """WSGI middleware: one request at a time through `app` (the response body is built
    inside the lock)."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            return list(self.app(environ, start_response))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-H", "--host", default="127.0.0.1")
    ap.add_argument("-p", "--port", type=int, required=True)
    args = ap.parse_args()
    import os
    os.environ.setdefault("MOTO_PORT", str(args.port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialized(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
