"""The embedded default target `local`: bundles run in worker processes on this machine."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from runtime.local.faults import FaultSpec

from ..build import build_app, state_dir
from ..manifest import App
from .platform import LocalPlatform, extract_bundles


class LocalRunner:
    """Build an app for `local` and run sessions on a LocalPlatform (a context manager).

    `faults`: FaultSpec or None; other keywords go to LocalPlatform."""

    def __init__(self, app: App, faults: FaultSpec | None = None, state: Path | None = None,
                 **platform_options: Any):
        self.app = app
        self.faults = faults
        self.state = (state or state_dir(app) / "local").resolve()
        self.platform_options = platform_options
        self.platform: LocalPlatform | None = None

    def __enter__(self) -> "LocalRunner":
        artifacts = build_app(self.app, "local")
        dest = self.state / "bundles"
        dest.mkdir(parents=True, exist_ok=True)
        bundles = extract_bundles({fn: a.path for fn, a in artifacts.items()}, dest)
        self.platform = LocalPlatform(self.state, bundles, faults=self.faults,
                                      max_attempts=self.app.manifest.runtime.max_delivery_attempts,
                                      **self.platform_options)
        self.platform.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.platform is not None:
            self.platform.close()

    def start(self, value: Any, session: str | None = None) -> str:
        """Invoke the entry function with `value`; returns the session id."""
        assert self.platform is not None
        session = session or str(uuid.uuid4())
        self.platform.invoke(self.app.workflow.entry.name,
                             {"Session": session, "Data": {"Source": "http", "Value": value}})
        return session

    def run(self, value: Any, session: str | None = None, timeout: float = 600.0) -> dict[str, Any]:
        """Start a session and wait for its result item."""
        assert self.platform is not None
        return self.platform.wait_result(self.start(value, session), timeout)
