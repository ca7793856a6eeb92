"""The embedded default target `local`: bundles run in worker processes on this machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

from runtime.engine import Options
from runtime.faults import FaultSpec
from runtime.payload import SessionId

from .. import pipeline
from ..deploy.models import Deployment
from ..deploy.settings import REAL_AWS
from ..deploy.statepath import hold_runner_lock, runner_alive
from ..manifest import App
from .emulator import DUMMY_CREDENTIALS, SharedAws, write_url_file
from .platform import FunctionLimits, LocalPlatform, SessionExistsError, extract_bundles
from .versions import VERSIONS, deployment_version

__all__ = ["LocalRunner", "SessionExistsError", "integrations_env", "uses_aws"]

ENV_AWS_ENDPOINT = "UNUM_AWS_ENDPOINT"  # runtime.asl.integrations.sdk.ENV_AWS_ENDPOINT
NO_ENDPOINT = "none"                    # runtime.asl.integrations.sdk.NO_ENDPOINT
DEFAULT_REGION = "us-east-1"            # runtime.asl.integrations.sdk.DEFAULT_REGION


def uses_aws(wrapper: Any) -> bool:
    """Whether a compiled function (its IR `wrapper`) may call AWS: an ASL function whose
    machine has an integration Task run in place (runtime.asl.integrations.inline_tasks,
    Distributed Map readers included) or a lambda:invoke of a function outside the app (the
    compiler's `External`)."""
    from runtime.asl import wrapper_ir
    w = wrapper_ir.of(wrapper)
    if w is None:
        return False
    from runtime.asl.integrations.registry import inline_tasks
    return bool(w.external) or bool(inline_tasks(w.definition))


def integrations_env(aws_endpoint: str | None, needs: bool, emulator: Callable[[], str],
                     environ: Mapping[str, str] | None = None, region: str | None = None,
                     manifest_region: str | None = None) -> dict[str, str]:
    """Where the AWS calls of a local or served app's Tasks go, and what they sign with: the
    one decision of the local target (the runtime applies it, runtime.asl.integrations.sdk
    settings; docs/local.md "Where service integrations go"). Returns the variables to add to
    the workers' environment.

    `aws_endpoint`: what the user named (`--aws-endpoint` > UNUM_AWS_ENDPOINT > the
    manifest's `integrations.aws_endpoint`): REAL_AWS (`aws`): boto3's own configuration,
    the environment's credentials (the only way to real AWS); a URL: that endpoint. Else
    boto3's AWS_ENDPOINT_URL of `environ` (default os.environ), when set and not ignored
    (AWS_IGNORE_CONFIGURED_ENDPOINT_URLS): boto3's configuration, which sends every service
    there. Else, when the app `needs` AWS (uses_aws), the embedded emulator (`emulator()`
    returns its URL, starting it; raises EmulatorError); else NO_ENDPOINT, so a call is
    refused. Every case but `aws` and boto3's AWS_ENDPOINT_URL signs with placeholder
    credentials (the runtime's explicit keys, and DUMMY_CREDENTIALS in the workers'
    environment: the user's own keys never go to an endpoint that is not AWS) and an
    explicit region: `region` (the global `--region`) > AWS_REGION > AWS_DEFAULT_REGION of
    `environ` > `manifest_region` (the manifest's `clouds.aws.region`) > us-east-1."""
    environ = os.environ if environ is None else environ
    if aws_endpoint == REAL_AWS:
        return {ENV_AWS_ENDPOINT: REAL_AWS}
    boto3_endpoint = environ.get("AWS_ENDPOINT_URL")
    if aws_endpoint is None and boto3_endpoint and \
            environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() != "true":
        return {}
    env = dict(DUMMY_CREDENTIALS)
    env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = region or environ.get("AWS_REGION") or \
        environ.get("AWS_DEFAULT_REGION") or manifest_region or DEFAULT_REGION
    env[ENV_AWS_ENDPOINT] = aws_endpoint or (emulator() if needs else NO_ENDPOINT)
    return env

class LocalRunner:
    """Build an app for `local` and run sessions on a LocalPlatform (a context manager).

    The platform runs the app's deployment model (unumctl/deploy/, target "local"): its
    functions, their archives, `timeout` (s) and `memory` (MB) enforced, the delivery
    attempts and history level; the store lives in the state directory under the model's
    names.
    `faults`: FaultSpec or None; `stage`: the stage run (unumctl/deploy/stage.py; None: the
    manifest's `stage:`, else "dev"); `state`: state directory (default the stage's
    `<app>/.unum/local/<stage>`, unumctl/deploy/statepath.py);
    `aws`: the embedded AWS emulator to use when the app needs one (unumctl.local.emulator
    SharedAws: `serve` passes one for all its machines); None: the runner's own, stopped on
    exit; `region`: the region of a Task's calls to a named endpoint or the emulator (the
    global `--region`; None: the environment's, then the manifest's, integrations_env).
    Other keywords go to LocalPlatform. The workers get the manifest's `integrations:`
    settings (endpoint, mock configuration) as environment variables (integrations_env);
    on the embedded emulator, its `integrations.resources` are created first
    (unumctl/local/resources.py)."""

    def __init__(self, app: App, faults: FaultSpec | None = None, state: Path | None = None,
                 aws: SharedAws | None = None, stage: str | None = None, region: str | None = None,
                 **platform_options: Any):
        from ..deploy.stage import resolve_stage
        from ..deploy.statepath import local_dir
        self.app = app
        self.region = region
        self.faults = faults
        self.stage = resolve_stage(stage, app.manifest.stage)
        self.state = (state or local_dir(app, self.stage)).resolve()
        self.platform_options = platform_options
        self.platform: LocalPlatform | None = None
        self._lock: int | None = None
        self.deployment: Deployment | None = None  # the model, set on __enter__
        self._own_aws = aws is None
        self.emulator: SharedAws = aws if aws is not None else SharedAws()
        self.aws_endpoint: str | None = None  # the UNUM_AWS_ENDPOINT its workers got, set on __enter__
        self._url_file: Path | None = None

    def __enter__(self) -> "LocalRunner":
        self.deployment = dep = pipeline.deployment(self.app, "local", stage=self.stage)
        self.state.mkdir(mode=0o700, parents=True, exist_ok=True)  # holds unum.db (0600) and outputs
        version = deployment_version(dep)
        legacy = self.state / "bundles"  # the copies of the layout before versions: nothing runs them now
        if legacy.is_dir() and not legacy.is_symlink() and not runner_alive(self.state):
            shutil.rmtree(legacy, ignore_errors=True)
        dest = self.state / VERSIONS / version  # kept while a session runs on it (docs/versions.md)
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)
        bundles = extract_bundles({f.unum_name: f.zip_path for f in dep.functions}, dest)
        limits = {f.unum_name: FunctionLimits(f.timeout, f.memory) for f in dep.functions}
        sources = {fn: str((self.app.root / spec.code).resolve())
                   for fn, spec in self.app.manifest.functions.items() if spec.code}
        options = {"limits": limits, "history": dep.history, "sources": sources,
                   "retention": Options.from_mapping(self.app.runtime_options()).retention,
                   **self.platform_options}
        try:
            options["extra_env"] = self._integrations_env()  # may start an emulator: __exit__ stops it
            self._lock = hold_runner_lock(self.state)
            self.platform = LocalPlatform(self.state, bundles, faults=self.faults, version=version,
                                          max_attempts=dep.max_delivery_attempts, **options)
            self.platform.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _integrations_env(self) -> dict[str, str]:
        """The workers' environment for the app's service integrations: the manifest's
        `integrations:` settings and where every AWS call of a Task goes (integrations_env)."""
        integ = self.app.manifest.integrations.resolved()
        env = integ.environment(self.app.root)
        if integ.mock_config:  # a bad file is one line now, not a failure in every worker
            from runtime.asl.mocks import load as load_mocks
            load_mocks(env["UNUM_SFN_MOCK_CONFIG"])
        # a mock configuration answers the Tasks it names; the others, with no endpoint named,
        # are refused (NO_ENDPOINT) rather than started an emulator for
        needs = not integ.mock_config and any(uses_aws(f.wrapper) for f in self.app.workflow.functions.values())
        aws_section = getattr(self.app.manifest.clouds, "aws", None)
        env.update(integrations_env(integ.aws_endpoint, needs, self.emulator.url, region=self.region,
                                    manifest_region=getattr(aws_section, "region", None)))
        self.aws_endpoint = env.get(ENV_AWS_ENDPOINT)
        if needs and integ.aws_endpoint is None and self.aws_endpoint not in (None, NO_ENDPOINT):
            self._url_file = write_url_file(self.state, self.aws_endpoint)  # the embedded emulator's
            from .resources import create
            create(integ.resources, self.aws_endpoint, env["AWS_REGION"])  # the manifest's tables etc.
        return env

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.platform is not None:
                self.platform.close()
            if self._url_file is not None:
                self._url_file.unlink(missing_ok=True)
                self._url_file = None
            if self._own_aws:
                self.emulator.close()
        finally:
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None

    def start(self, value: Any, session: str | None = None) -> SessionId:
        """Start (or, for an existing `session` with the same input, resume) a session of the
        entry function with `value`; returns the session id. Raises SessionExistsError when
        `session` exists with a different input, PlatformError for a bad session id."""
        assert self.platform is not None and self.deployment is not None
        session = SessionId.of(session)
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
