"""Run `unumctl serve`: the Service (unumctl/serve/service.py) behind werkzeug's threaded
WSGI server on 127.0.0.1, until SIGINT, SIGTERM or SIGHUP.

Start-up order: every machine's platform is started (queued invocations of a previous run
are claimed), then the port is bound and `http://127.0.0.1:PORT` is printed on stdout (one
line, flushed: the port is the one bound when `--port 0` asks for any free one), then the
service records that `unumctl invoke` reads are written. Stopping: the server stops taking
connections and answers new requests with 503 ServiceUnavailable, the requests in progress
are answered (at most DRAIN_TIMEOUT s: a StartSyncExecution waiting for its execution
included), then every platform closes (busy instances killed, queued invocations released
for the next start), and the process exits 0.

A connection that sends nothing for IDLE_TIMEOUT seconds (no request, or a request's
headers or body stalled) is closed, so idle or slow clients do not hold the server's
threads; a request being answered (a StartSyncExecution waiting) is not idle.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from runtime.asl.arns import STATES_ARN_ENV

from .service import Service
from .sfn_api import SfnApi
from .shapes import Arns
from .triggers import TriggerHost

__all__ = ["make_api_server", "serve"]

HOST = "127.0.0.1"  # never another address (docs/local-service.md)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DRAIN_TIMEOUT = 10.0  # s that requests in progress at a stop signal get to be answered
IDLE_TIMEOUT = 60.0   # s a connection may stay silent (the socket timeout of every read)


def make_api_server(api: SfnApi, port: int, idle_timeout: float = IDLE_TIMEOUT) -> BaseWSGIServer:
    """The threaded werkzeug server of `api` on 127.0.0.1:`port` (0: any free port), its
    connections closed after `idle_timeout` s of silence; `api` accepts only the Host
    names of the port bound (SfnApi.bind). Raises OSError when the port is in use."""
    handler = type("IdleTimeoutHandler", (WSGIRequestHandler,), {"timeout": idle_timeout})
    try:
        server = make_server(HOST, port, api, threaded=True, request_handler=handler)
    except SystemExit:  # werkzeug exits (after saying so) when the address is in use
        raise OSError(f"127.0.0.1:{port} is in use") from None
    api.bind(server.port)
    return server


def serve(apps: list[Path], state: Path, port: int = 8083, region: str | None = None,
          account: str | None = None, workers: int = 2, debug: bool = False,
          faults: str | None = None, stage: str | None = None) -> int:
    """Serve until a stop signal; returns the signal number that stopped it. `faults`: a
    runtime/faults.py spec injected by every machine's platform (tests and bench/serve_load.py);
    `stage`: the hosted apps' stage (Service).
    Raises AppError for a bad APP and OSError when the port cannot be bound."""
    arns = Arns(**{k: v for k, v in (("region", region), ("account", account)) if v})
    os.environ[STATES_ARN_ENV] = arns.prefix  # the workers' $$.Execution.Id (runtime/asl/arns.py)
    stop = threading.Event()
    got: list[int] = []

    def on_signal(signum, frame):
        got.append(signum)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    svc = Service(apps, state, arns, workers, faults=faults, stage=stage)
    try:
        svc.start()
        if not debug:
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
        api = SfnApi(svc, debug)
        server = make_api_server(api, port)
        url = f"http://{HOST}:{server.port}"
        thread = threading.Thread(target=server.serve_forever, name="sfn-api", daemon=True)
        thread.start()
        svc.publish(url)
        triggers = api.triggers = TriggerHost(svc)
        triggers.start()
        print(url, flush=True)
        names = ", ".join(m.name for m in svc.machines()) or "none yet"
        print(f"unumctl: serving the Step Functions API on {url} (state machines: {names}); "
              "Ctrl-C stops", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
        server.shutdown()  # no new connection; requests on open ones get 503 from here on
        thread.join(5)
        cut = api.drain(DRAIN_TIMEOUT)
        triggers.close()
        if cut:
            print(f"unumctl: {cut} request(s) still in progress after {DRAIN_TIMEOUT:g} s are cut",
                  file=sys.stderr)
        print(f"unumctl: stopped by {signal.Signals(got[0]).name}; queued work resumes on the next start",
              file=sys.stderr)
        return got[0]
    finally:
        for s in STOP_SIGNALS:  # a second signal while closing is ignored
            signal.signal(s, signal.SIG_IGN)
        svc.close()
        for s, h in old.items():
            signal.signal(s, h)
