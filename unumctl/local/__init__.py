"""The embedded default target `local`: bundles run in worker processes on this machine."""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path
from typing import Any

from runtime.engine import Options
from runtime.faults import FaultSpec

from ..build import state_dir
from ..deploy.appgraph import build, package
from ..deploy.models import Deployment
from ..deploy.settings import REAL_AWS
from ..manifest import App
from .platform import FunctionLimits, LocalPlatform, SessionExistsError, extract_bundles

__all__ = ["LocalRunner", "SessionExistsError", "hold_runner_lock", "runner_alive"]

# in the state directory: every process running a local platform for the app (invoke, resume,
# serve, send-task-*) holds a shared flock(2) on it while it runs, and the kernel drops the lock
# when that process ends however it ends (Ctrl-C, kill -9)
RUNNER_LOCK = "runners.lock"


def hold_runner_lock(state: Path) -> int:
    """Take a shared lock on `state`/RUNNER_LOCK and return its file descriptor (the lock is
    held until every descriptor sharing it, e.g. a child's inherited copy, is closed)."""
    fd = os.open(state / RUNNER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def runner_alive(state: Path) -> bool:
    """Whether some process is running a local platform on `state` (holds RUNNER_LOCK): when
    none is, a session without a result is stopped (its invoke was interrupted), not running."""
    try:
        fd = os.open(state / RUNNER_LOCK, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class LocalRunner:
    """Build an app for `local` and run sessions on a LocalPlatform (a context manager).

    The platform runs the app's deployment model (unumctl/deploy/, target "local"): its
    functions, their archives, `timeout` (s) and `memory` (MB) enforced, the delivery
    attempts and history level; the store lives in the state directory under the model's
    names.
    `faults`: FaultSpec or None; `state`: state directory (default `<app>/.unum/local`);
    other keywords go to LocalPlatform. The workers get the manifest's `integrations:`
    settings (endpoint, mock configuration) as environment variables."""

    def __init__(self, app: App, faults: FaultSpec | None = None, state: Path | None = None,
                 **platform_options: Any):
        self.app = app
        self.faults = faults
        self.state = (state or state_dir(app) / "local").resolve()
        self.platform_options = platform_options
        self.platform: LocalPlatform | None = None
        self._lock: int | None = None
        self.deployment: Deployment | None = None  # the model, set on __enter__
        self.emulator: Any = None  # the embedded AWS emulator, when started

    def __enter__(self) -> "LocalRunner":
        self.deployment = dep = package(self.app, build(self.app, "local"))
        self.state.mkdir(mode=0o700, parents=True, exist_ok=True)  # holds unum.db (0600) and outputs
        dest = self.state / "bundles"
        dest.mkdir(parents=True, exist_ok=True)
        bundles = extract_bundles({f.unum_name: f.zip_path for f in dep.functions}, dest)
        limits = {f.unum_name: FunctionLimits(f.timeout, f.memory) for f in dep.functions}
        sources = {fn: str((self.app.root / spec.code).resolve())
                   for fn, spec in self.app.manifest.functions.items() if spec.code}
        options = {"limits": limits, "history": dep.history, "sources": sources,
                   "extra_env": self._integrations_env(),
                   "retention": Options.from_mapping(self.app.runtime_options()).retention,
                   **self.platform_options}
        try:
            self._lock = hold_runner_lock(self.state)
            self.platform = LocalPlatform(self.state, bundles, faults=self.faults,
                                          max_attempts=dep.max_delivery_attempts, **options)
            self.platform.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _integrations_env(self) -> dict[str, str]:
        """The workers' environment for the app's service integrations: the manifest's
        `integrations:` settings; when the machine has integration Tasks and names no
        endpoint (nor boto3's AWS_ENDPOINT_URL, nor a mock configuration), the embedded
        emulator (unumctl.local.emulator), started here and stopped with the platform.
        `aws_endpoint: aws` uses boto3's own configuration (real AWS)."""
        from runtime.asl.integrations import inline_tasks
        integ = self.app.manifest.integrations.resolved()
        env = integ.environment(self.app.root)
        if integ.mock_config:  # a bad file is one line now, not a failure in every worker
            from runtime.asl.mocks import load as load_mocks
            load_mocks(env["UNUM_SFN_MOCK_CONFIG"])
        if integ.aws_endpoint == REAL_AWS:
            env.pop("UNUM_AWS_ENDPOINT", None)
            return env
        if integ.aws_endpoint or integ.mock_config or os.environ.get("AWS_ENDPOINT_URL"):
            return env
        wrappers = [f.wrapper for f in self.app.workflow.functions.values()
                    if isinstance(f.wrapper, dict) and f.wrapper.get("Kind") == "asl"]
        if not wrappers or not inline_tasks(wrappers[0].get("Definition") or {}):
            return env
        from .emulator import DUMMY_CREDENTIALS, EmbeddedAws
        self.emulator = EmbeddedAws(self.state)
        env.update(DUMMY_CREDENTIALS)
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = os.environ.get("AWS_REGION") or "us-east-1"
        env["UNUM_AWS_ENDPOINT"] = self.emulator.start()
        return env

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.platform is not None:
                self.platform.close()
            if self.emulator is not None:
                self.emulator.stop()
                self.emulator = None
        finally:
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None

    def start(self, value: Any, session: str | None = None) -> str:
        """Start (or, for an existing `session` with the same input, resume) a session of the
        entry function with `value`; returns the session id. Raises SessionExistsError when
        `session` exists with a different input, PlatformError for a bad session id."""
        assert self.platform is not None and self.deployment is not None
        session = session or str(uuid.uuid4())
        self.platform.start_session(self.deployment.entry_name, session, value)
        return session

    def run(self, value: Any, session: str | None = None, timeout: float = 600.0) -> dict[str, Any]:
        """Start a session, wait for its result item, then (at most 5 s) for its executions
        still running (platform.wait_drained): their history is then complete."""
        assert self.platform is not None
        session = self.start(value, session)
        item = self.platform.wait_result(session, timeout)
        self.platform.wait_drained(session)
        return item

    def resume(self, session: str, timeout: float = 600.0) -> dict[str, Any]:
        """Finish a session started earlier (e.g. by a killed `unumctl invoke`) and return its
        result item. Raises KeyError when the session was never started in this state."""
        assert self.platform is not None
        self.platform.resume_session(session)
        item = self.platform.wait_result(session, timeout)
        self.platform.wait_drained(session)
        return item
