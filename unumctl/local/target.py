"""The `local` Target: invoke runs the session on a LocalPlatform in this process (or, with
--no-wait, registers it and finishes it in a detached `unumctl resume` whose output goes to a
log file); resume finishes a session whose `unumctl invoke` was killed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runtime.engine import Options
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.faults import FaultSpec
from runtime.local.queue import DurableQueue, SessionExistsError
from runtime.payload import SessionId
from runtime.session import read_result

from ..deploy import names
from ..targets import Target, TargetError, session_id
from ..deploy.statepath import hold_runner_lock
from . import LocalRunner
from .platform import PlatformError


def checked_session(session: str, flag: str = "--session") -> SessionId:
    """`session` parsed into a SessionId (unumctl.targets.session_id: the one validator,
    runtime.payload.SessionId), else TargetError naming `flag` and the fix."""
    return session_id(session, flag)


def fault_spec(faults: str | None) -> FaultSpec | None:
    """The parsed `--faults` spec (runtime/faults.py syntax); TargetError for a bad one or for
    `kill`, which only a platform that runs executions as killable processes injects."""
    try:
        spec = FaultSpec.parse(faults)
    except ValueError as exc:
        raise TargetError(f"--faults: {exc}") from None
    if spec is not None and spec.rates.get("kill"):
        raise TargetError("--faults: kill is injected by the emulated Lambda of the tests only; "
                          "on --cloud local use crash=<p> (or the four crash points) instead")
    return spec


class LocalTarget(Target):
    """Embedded default target: worker processes + SQLite under `<app>/.unum/local/<stage>`."""

    name = "local"

    @property
    def state(self) -> Path:
        """The stage's state directory (unumctl/deploy/statepath.py local_dir)."""
        from ..deploy.statepath import local_dir
        return local_dir(self.app, self.stage)

    def invoke(self, value, wait, timeout, session=None, faults=None):
        """Target.invoke; with --no-wait the session is registered and finished in a
        background `unumctl resume` (`_detach`), unless a live `unumctl serve` hosts the app."""
        fault_spec(faults)
        if faults is not None:
            self.options["faults"] = faults
        if not wait and self._service() is None:
            session = checked_session(session) if session is not None else SessionId.new()
            self._detach(value, session, faults, timeout)
            return session, None
        try:
            return super().invoke(value, wait, timeout, session)
        finally:
            self.close()

    def _service(self) -> dict[str, Any] | None:
        """The record of a live `unumctl serve` hosting the app (unumctl/serve/service.py),
        unless --faults are given (they are injected by this process's platform)."""
        if self.options.get("faults") is not None:
            return None
        from ..serve.service import running_service
        return running_service(self.state)

    def start(self, value, session):
        """Target.start on the local platform of this Target (started on first use, kept
        until `close`), or on a live `unumctl serve` hosting the app (its warm workers run
        it: unumctl/serve/client.py). The session registry (runtime/local/queue.py) is the
        create-if-absent: the same id and input resumes or returns the session."""
        service = self._service()
        if service is not None:
            from ..serve import client
            if not self._told:
                print(f"unumctl: running on unumctl serve at {service['url']}", file=sys.stderr)
                self._told = True
            return client.start(service, value, session)
        runner = self._open()
        assert runner.platform is not None and runner.deployment is not None
        try:
            return runner.platform.start_session(runner.deployment.entry_name, session, value) == "started"
        except SessionExistsError as exc:
            raise TargetError(f"--session: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise TargetError(f"--data: the input is not JSON: {exc}") from None

    def wait(self, session, timeout):
        """Target.wait on the platform of this Target (then, at most 5 s, for the session's
        executions still running: its history is complete), or on the live `unumctl serve`."""
        service = self._service()
        if service is not None:
            from ..serve import client
            return client.wait(service, session, timeout)
        runner = self._open()
        assert runner.platform is not None
        try:
            item = runner.platform.wait_result(session, timeout)
        except TimeoutError as exc:
            raise TargetError(f"{exc}; the session keeps its state: unumctl resume "
                              f"{self.app.root} {session} --timeout SECONDS") from None
        runner.platform.wait_drained(session)
        return item

    _live: LocalRunner | None = None  # the runner `start` and `wait` use, until `close`
    _told = False                      # the "running on unumctl serve" line was printed

    def _open(self) -> LocalRunner:
        """The runner of this Target's sessions (started on first use)."""
        runner = self._live
        if runner is None:
            runner = self._runner(fault_spec(self.options.get("faults")))
            runner.__enter__()
            self._live = runner
        return runner

    def stop(self, session, error="", cause=""):
        """Target.stop on this Target's platform (LocalPlatform.stop_session: the queued
        invocations are dropped too), or StopExecution on the live `unumctl serve`."""
        service = self._service()
        if service is not None:
            from ..serve import client
            client.call(service["url"], "StopExecution", {"executionArn": client.execution_arn(service, session),
                                                          "error": error, "cause": cause})
            item = client.result(service, session)
            assert item is not None
            return item
        runner = self._open()
        assert runner.platform is not None
        try:
            return runner.platform.stop_session(session, error, cause)
        except KeyError:
            raise TargetError(f"SESSION: no session {session} of {self.app.name} on the local target") from None

    def close(self):
        """Stop the platform `start` started (sessions still running keep their state:
        `unumctl resume` finishes them)."""
        runner, self._live = self._live, None
        if runner is not None:
            runner.__exit__(None, None, None)

    def resume(self, session: str, timeout: float, faults: str | None = None) -> dict[str, Any]:
        """Finish session `session` (its queued invocations, or its entry again when nothing is
        queued and there is no result) and return its result item. TargetError when the
        session was never started here or does not finish within `timeout` seconds."""
        checked_session(session, "SESSION")
        spec = fault_spec(faults)
        if self._registered(session) is None:
            raise TargetError(f"SESSION: no session {session} of {self.app.name} on the local target; "
                              f"start one: unumctl invoke {self.app.root} --data FILE --session {session}")
        item = self.result(session)
        if item is not None:
            return item
        with self._runner(spec) as runner:
            try:
                return runner.resume(session, timeout)
            except TimeoutError as exc:
                raise TargetError(f"{exc}; run again with a larger --timeout") from None

    def redrive(self, session, *, wait=True, timeout=600.0, now=None):
        """Target.redrive; the re-invocations are queued durably, then, with `wait`, a
        platform of the app delivers them and the session's result is returned."""
        checked_session(session, "SESSION")
        if self._registered(session) is None:
            raise TargetError(f"SESSION: no session {session} of {self.app.name} on the local target "
                              f"(see: unumctl sessions {self.app.root})")
        from runtime.redrive import NOT_REDRIVABLE
        from .versions import VersionStore
        ds = SqliteDatastore(self.state / names.LOCAL_DATASTORE)
        try:
            gone = VersionStore(ds, self.state).not_redrivable(session)
        finally:
            ds.close()
        if gone is not None:
            raise TargetError(f"{NOT_REDRIVABLE}: {gone}")
        info = super().redrive(session, wait=False, timeout=timeout, now=now)
        if wait:
            with self._runner(None) as runner:
                assert runner.platform is not None
                try:
                    info["result"] = runner.platform.wait_result(session, timeout)
                except TimeoutError as exc:
                    raise TargetError(f"{exc}; the redrive is under way: unumctl result {self.app.root} "
                                      f"{session}") from None
                runner.platform.wait_drained(session)
        return info

    def versions(self, now: float | None = None) -> list[dict[str, Any]]:
        """`unumctl versions APP`: the versions kept for the stage, current first
        (unumctl/local/versions.py VersionStore.listing). TargetError before any local run."""
        from .versions import VersionStore
        db = self.state / names.LOCAL_DATASTORE
        if not db.exists():
            raise TargetError(f"no local runs of {self.app.name} at stage {self.stage} yet; run: unumctl invoke "
                              f"{self.app.root} --data FILE")
        ds = SqliteDatastore(db)
        try:
            return VersionStore(ds, self.state).listing(now)
        finally:
            ds.close()

    def reopen(self, ds, session):
        """Target.reopen; the local history's end record is cleared too (SqliteHistory.reopen)."""
        from runtime.local.history import SqliteHistory
        super().reopen(ds, session)
        SqliteHistory(ds).reopen(session)

    def callback_ports(self):
        """The app's SQLite datastore and a durable-queue invoker whose rows no platform owns
        yet (the next platform that starts delivers them). TargetError before any local run."""
        from runtime.local.entry import QueueInvoker
        db = self.state / names.LOCAL_DATASTORE
        if not db.exists():
            raise TargetError(f"no local runs of {self.app.name} yet; run: unumctl invoke {self.app.root} --data FILE")
        ds = SqliteDatastore(db)
        return ds, QueueInvoker(lambda msg: None, DurableQueue(ds), None)

    def send_task(self, kind, token, *, output=None, error=None, cause=None, wait=True, timeout=600.0):
        """Target.send_task; then, with `wait`, run the app's platform until the session has
        a result (returned) or has nothing left to run now (e.g. it waits for another
        callback, or for a timer: returns None). The claim and the re-invocation are durable
        before this runs anything, so a killed send-task-* loses nothing: `unumctl resume`
        finishes the session."""
        from runtime.asl.callback import CallbackError, Token
        super().send_task(kind, token, output=output, error=error, cause=cause)
        if not wait or kind == "heartbeat":
            return None
        try:
            session = Token.decode(token).session
        except CallbackError as exc:  # (already checked by the send)
            raise TargetError(str(exc)) from None
        with self._runner(None) as runner:
            assert runner.platform is not None
            return runner.platform.wait_settled(session, timeout)

    def _runner(self, spec: FaultSpec | None) -> LocalRunner:
        return LocalRunner(self.app, faults=spec, stage=self.stage, region=self.options.get("region"),
                           workers_per_function=self.options.get("workers", 2))

    def _registered(self, session: str) -> dict[str, Any] | None:
        db = self.state / names.LOCAL_DATASTORE
        if not db.exists():
            return None
        ds = SqliteDatastore(db)
        try:
            return DurableQueue(ds).session(session)
        finally:
            ds.close()

    def _detach(self, value: Any, session: str, faults: str | None, timeout: float) -> None:
        """Register the session and queue its entry (so a reused --session is refused here),
        then finish it in a background `unumctl resume`."""
        state = self.state
        state.mkdir(parents=True, exist_ok=True)
        ds = SqliteDatastore(state / names.LOCAL_DATASTORE)
        try:
            retention = Options.from_mapping(self.app.runtime_options()).retention
            DurableQueue(ds).start_session(session, self.app.workflow.entry.name, value, None,
                                           retention.result_expiry(time.time()))
        except SessionExistsError as exc:
            raise TargetError(f"--session: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise TargetError(f"--data: the input is not JSON: {exc}") from None
        finally:
            ds.close()
        log_path = state / f"{session}.log"  # session was checked: a plain file name
        region = ["--region", self.options["region"]] if self.options.get("region") else []  # a global option
        cmd = [sys.executable, "-m", "unumctl.cli", *region, "resume", str(self.app.root), session,
               "--stage", self.stage, "--timeout", str(timeout)]
        env = dict(os.environ)
        if faults:
            env["UNUM_FAULTS"] = faults
        lock = hold_runner_lock(state)  # inherited: the session is not shown as stopped while
        try:                              # the background resume builds its platform
            with open(log_path, "w") as log:
                subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True, pass_fds=(lock,))
        finally:
            os.close(lock)
        print(f"unumctl: running in the background; log: {log_path}; "
              f"result: unumctl result {self.app.root} {session}"
              f"{' --stage ' + self.stage if self.options.get('stage') else ''}", file=sys.stderr)

    def result(self, session):
        """The session's result item or None; TargetError when nothing ran here yet."""
        checked_session(session, "SESSION")
        db = self.state / names.LOCAL_DATASTORE
        if not db.exists():
            raise TargetError(f"no local runs of {self.app.name} yet; run: unumctl invoke {self.app.root} --data FILE")
        ds = SqliteDatastore(db)
        try:
            return read_result(ds, FileBlobStore(Path(db).parent / names.LOCAL_BLOBS), session)
        finally:
            ds.close()


__all__ = ["LocalTarget", "PlatformError", "checked_session", "fault_spec"]
