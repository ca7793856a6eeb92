"""Which Lambda function version each invocation of a session runs (docs/versions.md, "On AWS").

An app version on AWS is one published version of every function (Lambda's own versions:
a published version's code and configuration are immutable, Lambda developer guide "Manage
Lambda function versions", https://docs.aws.amazon.com/lambda/latest/dg/configuration-versions.html).
Its record is an item of the app's table, partition VERSIONS, sort key the version id
(runtime/payload.py VersionId): {"functions": {IR function name: version number},
"deployed_at": Unix s}, written by the deploy before the stage alias is moved to it
(unumctl/aws/versions.py). Every function of the version has the version id in its
environment (ENV_APP_VERSION), so a running function knows the version it belongs to.

A session is pinned once, by the first of its executions that invokes another function (the
entry, started through the stage alias): item (`#pins/<shard>`, session) = {"version",
"functions"} created if absent, so a concurrent or later execution reads the first pin. The
pin is copied with the function map, so a session keeps running once its version's record is
gone. The same write adds the session to the version's roster, partition `#version/<id>`
(what unumctl/aws/versions.py counts: a version with a rostered session that can still run
is kept). Every continuation is then invoked with `Qualifier` = the pinned version number
of its function (Invoke, https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html:
"Qualifier – Specify a version or alias to invoke a published version of the function";
without one Lambda runs `$LATEST`).

A process without a version (the error handler, the CLI's redrive and send-task-* resumes)
reads pins but never creates one; an unpinned session is then invoked through the stage
alias (`default`), which is where its first execution was started.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from typing import Any

from ..errors import UnumError
from ..ports import Datastore
from . import ENV_ALIAS, ENV_APP_VERSION, ENV_RESULT_RETENTION
from .history import index_partition

__all__ = ["PIN_PREFIX", "ROSTER_PREFIX", "VERSIONS", "SessionPins", "pin_partition", "roster_partition"]

VERSIONS = "#versions"          # partition of the app versions' records
PIN_PREFIX = "#pins/"           # + the session-index shard of the session
ROSTER_PREFIX = "#version/"     # + version id: the sessions pinned to it
DEFAULT_RETENTION = 8 * 86400   # s a pin is kept without runtime.result_retention_seconds
_CACHE = 4096                   # pins one process keeps (an LRU of sessions)


def pin_partition(session: str) -> str:
    """The partition of `session`'s pin: `#pins/<shard>`, the shard of its session record
    (runtime/aws/history.py index_partition), so pins spread as session records do."""
    return PIN_PREFIX + index_partition(session).rsplit("/", 1)[-1]


def roster_partition(version: str) -> str:
    """The partition listing the sessions pinned to app version `version`."""
    return ROSTER_PREFIX + version


class SessionPins:
    """The qualifier of each invocation of a session. `ds`: the app's table; `version`: the
    app version this process belongs to (None: never pins, only reads); `default`: the
    qualifier of an unpinned session's invocation (the stage alias, or None for `$LATEST`);
    `retention`: s a pin and its roster entry are kept (the result's retention). Thread-safe.
    Raises UnumError when this process's version has no record (deployed without
    `unumctl apply`), or a pin names no version of the function invoked."""

    def __init__(self, ds: Datastore, version: str | None, default: str | None = None,
                 retention: float = DEFAULT_RETENTION):
        self.ds, self.version, self.default, self.retention = ds, version, default, retention
        self._pins: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._own: dict[str, str] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, ds: Datastore) -> "SessionPins | None":
        """The pins of a deployed function (ENV_APP_VERSION, ENV_ALIAS, ENV_RESULT_RETENTION
        from its environment); None for an app deployed without versions (every invocation
        unqualified, as before)."""
        version, alias = os.environ.get(ENV_APP_VERSION) or None, os.environ.get(ENV_ALIAS) or None
        if version is None and alias is None:
            return None
        return cls(ds, version, alias, float(os.environ.get(ENV_RESULT_RETENTION) or DEFAULT_RETENTION))

    def qualifier(self, session: str, function: str) -> str | None:
        """The version number (or alias) to invoke `function` of `session` with; None: unqualified."""
        with self._lock:
            pin = self._pins.get(session)
            if pin is not None:
                self._pins.move_to_end(session)
        if pin is None:
            pin = self._pin(session)
        if pin is None:
            return self.default
        if function not in pin:
            raise UnumError(f"session {session} is pinned to a version without function {function}")
        return pin[function]

    def _pin(self, session: str) -> dict[str, str] | None:
        stored = self.ds.get(pin_partition(session), session)
        if stored is None and self.version is not None:
            now = time.time()
            item = {"version": self.version, "functions": self._own_functions(), "at": now}
            won, stored = self.ds.create_if_absent(pin_partition(session), session, item, now + self.retention)
            if won:
                self.ds.put(roster_partition(self.version), session, {"at": now}, now + self.retention)
        if stored is None:
            return None
        pin = {str(k): str(v) for k, v in dict(stored.get("functions") or {}).items()}
        with self._lock:
            self._pins[session] = pin
            while len(self._pins) > _CACHE:
                self._pins.popitem(last=False)
        return pin

    def _own_functions(self) -> dict[str, str]:
        if self._own is None:
            assert self.version is not None
            rec: Any = self.ds.get(VERSIONS, self.version)
            if rec is None:
                raise UnumError(f"app version {self.version} has no record in the table (partition {VERSIONS}); "
                                "deploy the app with `unumctl apply --cloud aws`, which writes it")
            self._own = {str(k): str(v) for k, v in rec["functions"].items()}
        return self._own
