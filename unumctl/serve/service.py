"""`unumctl serve`: one long-running local platform per state machine, behind the Step
Functions API on 127.0.0.1 (unumctl/serve/sfn_api.py).

Each state machine is an app running on its own LocalPlatform (unumctl/local/platform.py:
warm worker processes, at most `workers` per function and 160 in all, the durable queue and
SQLite datastore in the app's state directory), started once when the service starts:

- every APP given on the command line is a machine named after the app (`app:` of its
  unumctl.yaml), an IR app or a Step Functions app alike;
- CreateStateMachine writes an app to `STATE/machines/<app>/` (`<app>`: the app name of
  the machine name, shapes.app_name_of; its ASL definition, a generated unumctl.yaml,
  machine.json with the name, creation date, role, type and revision) and starts it;
  machines created earlier are started again with the service.
- UpdateStateMachine writes and starts the next revision as its own app
  (`STATE/machines/<app of revision N>/`, its own datastore): new executions start there,
  while the executions of earlier revisions finish on theirs (their platforms keep
  running, and the machine's executions are those of all its revisions).

Lambda ARNs of a created machine (the rule, docs/local-service.md): the function name of
a Task's Lambda ARN (the segment after `function:`, or a plain name) names a function of
one of the APPs given to `serve` (a key under `functions:` of its unumctl.yaml, matched as
the Step Functions front-end matches them: exact, then ignoring case, '-' and '_', then the
code directory's name; docs/stepfunctions.md). The first APP that defines a name wins.

An execution is a session whose id is the execution name. Stopping the service (SIGINT,
SIGTERM, or close()) releases every queued invocation in the durable queues, and a SIGKILL
leaves them owned by a dead process: either way the next start of the service (the same
APPs and STATE) claims and finishes them (docs/local.md "The durable invocation queue").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from runtime.asl.integrations.states import take_parent
from runtime.faults import FaultSpec
from runtime.local.queue import SessionExistsError, new_owner, owner_alive
from runtime.session import read_result, session_status

from ..local import LocalRunner
from ..local.emulator import SharedAws
from ..local.platform import PlatformError
from ..manifest import MANIFEST, AppError, App, load_manifest
from ..pipeline import load as load_app
from ..observe.reader import LocalHistoryReader, UnknownSession
from ..safefile import check_private_dir, write_atomic
from .history import sfn_history_events
from .shapes import (Arns, SfnError, app_name_of, check_execution_name, check_machine_name, check_tags,
                     json_text, parse_json_field, required, session_of)

__all__ = ["Machine", "NAMES", "RECORD", "Service", "required_execution", "running_service"]

NAMES = "execution-names.jsonl"  # in an app's local state directory: names that are not their session id
TAGS = "tags.json"             # under STATE: the tags of every machine (TagResource)
RECORD = "serve.json"          # in an app's local state directory: the running service
MACHINES = "machines"          # under STATE: the apps of created state machines
DEFAULT_ROLE = "arn:aws:iam::000000000000:role/unumctl-serve"  # reported only, never used
READERS = 8                    # SQLite reader connections per machine for the API (3 fds each in WAL mode)
SYNC_TIMEOUT = 300.0           # s a StartSyncExecution waits (an Express execution's limit)
_LOCAL_URL = re.compile(r"http://127\.0\.0\.1:[1-9][0-9]{0,4}")  # what serve.json may name


@dataclass
class Machine:
    """A state machine of the service: its `app`, the running `runner`, `created` (Unix s),
    the `definition` text, `role_arn`, `type` (STANDARD|EXPRESS) and whether it came from
    CreateStateMachine (`created_here`, deletable) or from the command line.

    One Machine is one revision: `revision` (1, 2, ...), `revision_id` (the API's
    revisionId), `updated` (Unix s the revision was made: the creation date for revision 1),
    `root` (its directory, for a created machine); the current revision holds the earlier
    ones, newest first, in `older` (their executions finish there)."""

    name: str
    app: App
    runner: LocalRunner
    created: float
    definition: str
    role_arn: str
    type: str
    created_here: bool
    revision: int = 1
    revision_id: str = ""
    updated: float = 0.0
    root: Path | None = None
    older: list["Machine"] = field(default_factory=list)
    readers: list[LocalHistoryReader] = field(default_factory=list)  # idle, for the API's reads
    _names: dict[str, str] | None = field(default=None, repr=False)  # session id -> execution name
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _slots: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(READERS),
                                               repr=False)

    @contextmanager
    def reader(self) -> Iterator[LocalHistoryReader]:
        """A history reader (its own SQLite connection, never the platform's: a read never
        waits behind the dispatcher's writes) taken from the machine's pool of at most
        READERS connections (a request waits for one) and put back."""
        with self._slots:
            with self._lock:
                r = self.readers.pop() if self.readers else None
            if r is None:
                r = LocalHistoryReader(self.app, self.runner.stage)
            try:
                yield r
            finally:
                with self._lock:
                    self.readers.append(r)

    def execution_names(self) -> dict[str, str]:
        """{session id: execution name} of this revision's executions whose name is not their
        session id (shapes.session_of), read once from the NAMES file of its state directory."""
        with self._lock:
            if self._names is None:
                self._names = {}
                try:
                    for line in (self.runner.state / NAMES).read_text().splitlines():
                        try:
                            rec = json.loads(line)
                            self._names[str(rec["session"])] = str(rec["name"])
                        except (ValueError, KeyError, TypeError):
                            continue  # a line cut by a crash: its execution never started
                except OSError:
                    pass
            return self._names

    def remember_name(self, session: str, name: str, arn: str) -> None:
        """Record (durably, before the execution starts) that `session` is execution `name`;
        ExecutionAlreadyExists when `session` is already another execution's (a name equal to
        another's session id, or a hash collision)."""
        names = self.execution_names()
        with self._lock:
            known = names.get(session)
            if known == name or (known is None and session == name):
                return
            if known is not None or session == name:
                raise SfnError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}' (its session id "
                               f"{session} is execution {known!r}'s)")
            fd = os.open(self.runner.state / NAMES, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)  # a planted link is refused, not followed
            with os.fdopen(fd, "a") as f:
                f.write(json.dumps({"session": session, "name": name}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            names[session] = name

    def revisions(self) -> list["Machine"]:
        """This revision and the earlier ones, newest first."""
        return [self, *self.older]

    def close(self) -> None:
        """Stop the platform and close the pooled readers (of this revision only)."""
        self.runner.__exit__(None, None, None)
        with self._lock:
            readers, self.readers = self.readers, []
        for r in readers:
            r.close()


def running_service(state: Path) -> dict[str, Any] | None:
    """The record of a live `unumctl serve` hosting the app whose local state directory is
    `state` ({"url", "machine", "machineArn", "owner"}), or None (none, or its process is gone).
    A record whose url is not `http://127.0.0.1:PORT` (serve binds nothing else) is ignored
    with a one-line warning on stderr: `unumctl invoke` never sends a session elsewhere."""
    path = state / RECORD
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("owner"), str) or not owner_alive(rec["owner"]):
        return None
    url = rec.get("url")
    if not isinstance(url, str) or not _LOCAL_URL.fullmatch(url):
        print(f"unumctl: warning: ignored {path}: its url {str(url)[:100]!r} is not http://127.0.0.1:PORT "
              "(unumctl serve binds 127.0.0.1 only); running without the service (delete the file)",
              file=sys.stderr)
        return None
    return rec


class Service:
    """The machines of one `unumctl serve` and the operations of the API on them.

    `apps`: app directories hosted as machines; `state`: directory of created machines;
    `arns`: region/account of the ARNs; `workers`: processes per function per machine;
    `faults`: a runtime/faults.py spec string injected by every machine's platform (each
    parses its own copy: occurrence counters are per platform), or None. `aws`: the one
    embedded AWS emulator of every machine that needs one (started with the first, stopped
    by close(); unumctl.local.emulator SharedAws). `stage`: the stage of the hosted apps
    (--stage; None: each app's manifest `stage:`, else "dev"): their state is that stage's
    `<app>/.unum/local/<stage>` (unumctl/deploy/statepath.py).
    Methods raise SfnError (the API's error names); start() raises AppError for a bad APP."""

    def __init__(self, apps: list[Path], state: Path, arns: Arns = Arns(), workers: int = 2,
                 sync_timeout: float = SYNC_TIMEOUT, faults: str | None = None, stage: str | None = None):
        self.app_dirs = [Path(a) for a in apps]
        self.stage = stage
        self.state = Path(state)
        self.arns = arns
        self.workers = workers
        self.sync_timeout = sync_timeout
        self.faults = faults
        self.url: str | None = None
        self.clock = time.time  # Unix seconds: RedriveExecution's window and dates (tests set it)
        self.owner = new_owner()
        self._machines: dict[str, Machine] = {}
        self._lock = threading.RLock()  # guards _machines and _pending; never held while a platform starts
        self._pending: set[str] = set()  # machine and app names being created (lower case)
        self._functions: dict[str, tuple[Path, dict[str, Any]]] = {}  # Lambda name -> (code dir, spec)
        self._tags: dict[str, dict[str, str]] = {}  # machine name -> tags (STATE/tags.json)
        # the embedded AWS emulator of every machine that needs one: one moto_server per serve,
        # started with the first such machine, stopped by close()
        self.aws = SharedAws()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Load and start every APP and every machine created earlier under STATE. STATE is
        created 0700 when missing; UnsafeFileError (a ValueError, one line naming STATE and
        the fix) when it is not the user's own or group or others can write it
        (safefile.check_private_dir): they could plant links where serve writes."""
        check_private_dir(self.state, "--state")
        apps = [load_app(d) for d in self.app_dirs]
        for a in apps:
            for fn, spec in load_manifest(a.root).functions.items():
                code = (a.root / spec.code).resolve()
                self._functions.setdefault(fn, (code, spec.model_dump(exclude_defaults=True)))
        for a in apps:
            definition = self._definition_of(a)
            self._host(a, time.time(), definition, DEFAULT_ROLE, a.manifest.workflow.type, False,
                       revision_id=str(uuid.uuid5(uuid.NAMESPACE_URL, definition)))
        try:
            tags = json.loads((self.state / TAGS).read_text())
            self._tags = {k: dict(v) for k, v in tags.items()} if isinstance(tags, dict) else {}
        except (OSError, ValueError, TypeError, AttributeError):
            self._tags = {}
        mdir = self.state / MACHINES
        revisions: dict[str, list[tuple[int, Path, dict[str, Any]]]] = {}
        for d in sorted(mdir.iterdir()) if mdir.is_dir() else []:
            try:
                meta = json.loads((d / "machine.json").read_text())
                revisions.setdefault(meta["name"], []).append((int(meta.get("revision", 1)), d, meta))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                print(f"unumctl: serve: skipped the machine in {d}: {exc}", file=sys.stderr)
        for name, revs in sorted(revisions.items()):
            started: list[Machine] = []
            for _, d, meta in sorted(revs, key=lambda r: r[0]):
                try:
                    started.append(self._start_revision(load_app(d), meta, (d / "statemachine.json").read_text(), d))
                except (OSError, ValueError, KeyError, TypeError, AppError, PlatformError) as exc:
                    print(f"unumctl: serve: skipped the machine in {d}: {exc}", file=sys.stderr)
            if not started:
                continue
            current = started[-1]
            current.older = started[-2::-1]
            with self._lock:
                clash = name in self._machines
                if not clash:
                    self._machines[name] = current
                    for m in current.revisions():
                        self._write_record(m)
            if clash:  # an APP of the command line has its name now
                print(f"unumctl: serve: skipped the created machine {name!r} ({started[0].root}): an APP given to "
                      "serve has the same name", file=sys.stderr)
                for m in started:
                    m.close()

    def publish(self, url: str) -> None:
        """Record `url` in each machine's state directory so that `unumctl invoke` uses it."""
        self.url = url
        with self._lock:
            for m in self._machines.values():
                self._write_record(m)
                for r in m.revisions():
                    self._link(r)

    def _link(self, m: Machine) -> None:
        """Give the workers of machine `m` (started from now on) this service's URL as their
        Step Functions endpoint, so that `states:startExecution` starts executions of the
        machines served here (runtime.asl.integrations.states)."""
        if self.url is not None and m.runner.platform is not None:
            from runtime.asl.integrations.states import ENV_SFN_ENDPOINT
            m.runner.platform.extra_env[ENV_SFN_ENDPOINT] = self.url

    def close(self) -> None:
        """Stop every machine's platform (its queued invocations stay for the next start)."""
        with self._lock:
            machines = [r for m in self._machines.values() for r in m.revisions()]
            self._machines.clear()
        try:
            for m in machines:
                self._remove_record(m)
                m.close()
        finally:
            self.aws.close()

    def _write_record(self, m: Machine) -> None:
        if self.url is None:
            return
        rec = {"url": self.url, "machine": m.name, "machineArn": self.arns.machine(m.name), "owner": self.owner}
        write_atomic(m.runner.state / RECORD, json.dumps(rec))  # a planted link is replaced, not followed

    def _remove_record(self, m: Machine) -> None:
        path = m.runner.state / RECORD
        try:
            if json.loads(path.read_text()).get("owner") == self.owner:
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    @staticmethod
    def _definition_of(a: App) -> str:
        sfn = a.manifest.workflow.stepfunctions
        if sfn:
            return (a.root / sfn).read_text()
        return json_text({"Comment": f"unumctl IR app {a.name} (not ASL): see {a.root}/{a.manifest.workflow.ir}",
                          "StartAt": a.workflow.entry.name, "States": {}})

    def _reserve(self, name: str, app_name: str) -> None:
        """Claim a machine name and its app name while the machine is being created or
        started (outside the lock: a build takes a second); StateMachineAlreadyExists when
        either is taken or being claimed."""
        with self._lock:
            taken = (name in self._machines or name in self._pending or app_name in self._pending
                     or any(r.app.name == app_name for m in self._machines.values() for r in m.revisions()))
            if taken:
                raise SfnError("StateMachineAlreadyExists", f"State Machine Already Exists: '{self.arns.machine(name)}'")
            self._pending.update((name, app_name))

    def _release(self, name: str, app_name: str) -> None:
        with self._lock:
            self._pending.difference_update((name, app_name))

    def _start_revision(self, a: App, meta: dict[str, Any], definition: str, root: Path) -> Machine:
        """Start the platform of a created machine's revision (app `a` in `root`, its
        machine.json `meta`) without adding it to the service."""
        runner = LocalRunner(a, faults=FaultSpec.parse(self.faults), aws=self.aws, stage=self.stage,
                             workers_per_function=self.workers)
        runner.__enter__()
        m = Machine(meta["name"], a, runner, meta["created"], definition, meta["roleArn"], meta["type"], True,
                    revision=int(meta.get("revision", 1)),
                    revision_id=str(meta.get("revisionId") or uuid.uuid5(uuid.NAMESPACE_URL, definition)),
                    updated=float(meta.get("updated", meta["created"])), root=root)
        self._link(m)
        return m

    def _host(self, a: App, created: float, definition: str, role: str, type_: str, here: bool,
              name: str | None = None, reserved: bool = False, **revision: Any) -> Machine:
        """Start app `a`'s platform and add it as machine `name` (default: the app's name);
        `reserved`: the caller holds the names (_reserve); `revision`: Machine's revision
        fields."""
        name = name or a.name
        if not reserved:
            self._reserve(name, a.name)
        try:
            runner = LocalRunner(a, faults=FaultSpec.parse(self.faults), aws=self.aws, stage=self.stage,
                             workers_per_function=self.workers)
            runner.__enter__()
            m = Machine(name, a, runner, created, definition, role, type_, here, **revision)
            self._link(m)
            with self._lock:
                self._machines[name] = m
                self._write_record(m)
            return m
        finally:
            if not reserved:
                self._release(name, a.name)

    # ------------------------------------------------------------------ machines
    def machine(self, arn: Any, field: str = "stateMachineArn") -> Machine:
        name = self.arns.machine_name(arn, field)
        with self._lock:
            m = self._machines.get(name)
        if m is None:
            raise SfnError("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{arn}'")
        return m

    def machines(self) -> list[Machine]:
        with self._lock:
            return sorted(self._machines.values(), key=lambda m: m.name)

    def create_machine(self, name: Any, definition: Any, role_arn: Any, type_: Any = None,
                       tags: Any = None) -> Machine:
        """CreateStateMachine: write the machine's app under STATE/machines/<app> and start
        it. Idempotent for the same definition and role; StateMachineAlreadyExists otherwise;
        InvalidDefinition (one line naming the state and field) for ASL the compiler refuses;
        `tags` as TagResource takes them (TooManyTags, ValidationException)."""
        check_machine_name(name)
        type_ = type_ or "STANDARD"
        if type_ not in ("STANDARD", "EXPRESS"):
            raise SfnError("ValidationException", f"type: {type_!r} must be STANDARD or EXPRESS")
        new_tags = check_tags(tags or [], {}, self.arns.machine(name))
        doc = _parse_definition(definition)
        app_name = app_name_of(name)
        with self._lock:
            old = self._machines.get(name)
            if old is not None:
                if _same_json(old.definition, doc) and old.role_arn == role_arn:
                    return old
                raise SfnError("StateMachineAlreadyExists", f"State Machine Already Exists: '{self.arns.machine(name)}'")
            self._reserve(name, app_name)
        try:
            created = time.time()
            meta = {"name": name, "created": created, "roleArn": role_arn, "type": type_, "revision": 1,
                    "revisionId": str(uuid.uuid4()), "updated": created}
            m = self._add_revision(app_name, doc, definition, meta)
            with self._lock:
                self._machines[name] = m
                self._write_record(m)
                self._tags[name] = new_tags
                self._save_tags()
            return m
        finally:
            self._release(name, app_name)

    def update_machine(self, arn: Any, definition: Any = None, role_arn: Any = None) -> Machine:
        """UpdateStateMachine: a new revision of a created machine with `definition` and/or
        `role_arn` (the current revision's for the one not given) as its own app; new
        executions start on it, running ones finish on their revision. The same definition
        and role: the current revision, unchanged. MissingRequiredParameter without either;
        ValidationException for an APP of the command line; ConflictException while the
        machine is being updated; InvalidDefinition as CreateStateMachine."""
        m = self.machine(arn)
        if definition is None and role_arn is None:
            raise SfnError("MissingRequiredParameter", "Missing Required Parameter: 'UpdateStateMachine needs a "
                           "definition or a roleArn'")
        if not m.created_here:
            raise SfnError("ValidationException", f"'{m.name}' is an app given to unumctl serve: change its files "
                           "and restart serve to update it")
        if role_arn is not None and not isinstance(role_arn, str):
            raise SfnError("ValidationException", "roleArn must be a string")
        doc = _parse_definition(definition) if definition is not None else json.loads(m.definition)
        text = definition if definition is not None else m.definition
        role = role_arn if role_arn is not None else m.role_arn
        if _same_json(m.definition, doc) and role == m.role_arn:
            return m
        revision = m.revision + 1
        app_name = app_name_of(m.name, revision)
        with self._lock:
            if m.name in self._pending or app_name in self._pending:
                raise SfnError("ConflictException", f"'{m.name}' is being updated; try again")
            self._pending.update((m.name, app_name))
        try:
            now = time.time()
            meta = {"name": m.name, "created": m.created, "roleArn": role, "type": m.type, "revision": revision,
                    "revisionId": str(uuid.uuid4()), "updated": now}
            new = self._add_revision(app_name, doc, text, meta)
            with self._lock:
                if self._machines.get(m.name) is not m:  # deleted (or updated) meanwhile
                    gone = True
                else:
                    gone = False
                    new.older = m.revisions()
                    m.older = []
                    self._machines[m.name] = new
                    self._write_record(new)
            if gone:
                new.close()
                if new.root is not None:
                    shutil.rmtree(new.root, ignore_errors=True)
                raise SfnError("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{arn}'")
            return new
        finally:
            self._release(m.name, app_name)

    def _add_revision(self, app_name: str, doc: Any, definition: str, meta: dict[str, Any]) -> Machine:
        """Write revision `meta` of a created machine to STATE/machines/<app_name> (the ASL
        `doc`, a generated unumctl.yaml, machine.json) and start its platform; nothing is
        left behind when the compiler refuses it (InvalidDefinition) or it does not start."""
        root = self.state / MACHINES / app_name
        try:
            if root.exists():
                shutil.rmtree(root)
            self.state.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner only, like an app's .unum/
            root.mkdir(parents=True)
            (root / "statemachine.json").write_text(json.dumps(doc, indent=2))
            (root / MANIFEST).write_text(yaml.safe_dump(self._manifest(app_name, root)))
            (root / "machine.json").write_text(json.dumps(meta))
            try:
                a = load_app(root)
            except AppError as exc:
                raise SfnError("InvalidDefinition", "Invalid State Machine Definition: "
                               f"'{str(exc).splitlines()[0].replace(str(root) + '/', '')}'") from None
            return self._start_revision(a, meta, definition, root)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def _manifest(self, app_name: str, root: Path) -> dict[str, Any]:
        """The unumctl.yaml of a created machine: every registered Lambda function, its code
        referenced relatively (and listed under shared_code) so nothing is copied. Without
        any (serve hosts no APP), none: a machine without Lambda Tasks (Pass, Choice, Wait,
        ...) compiles, and a Lambda Task is the compiler's InvalidDefinition naming it."""
        functions, shared = {}, set()
        real = root.resolve()
        for fn, (code, spec) in sorted(self._functions.items()):
            rel = os.path.relpath(code, real)
            functions[fn] = {**spec, "code": rel}
            shared.add(rel)
        return {"version": 1, "app": app_name, "workflow": {"stepfunctions": "statemachine.json"},
                "functions": functions, "shared_code": sorted(shared)}

    def function_specs(self) -> dict[str, dict[str, Any]]:
        """The Lambda functions Tasks may call (name -> manifest spec with its `code` dir)."""
        return {fn: {**spec, "code": str(code)} for fn, (code, spec) in self._functions.items()}

    def delete_machine(self, arn: Any) -> None:
        """DeleteStateMachine: stop a created machine (every revision) and remove its apps
        and tags (running executions end with it). An APP of the command line cannot be
        deleted (ValidationException)."""
        m = self.machine(arn)
        if not m.created_here:
            raise SfnError("ValidationException", f"'{m.name}' is an app given to unumctl serve; stop serve "
                           "to remove it")
        with self._lock:
            if self._machines.get(m.name) is m:
                self._machines.pop(m.name)
            self._tags.pop(m.name, None)
            self._save_tags()
        for r in m.revisions():
            self._remove_record(r)
            r.close()
            if r.root is not None:
                shutil.rmtree(r.root, ignore_errors=True)

    # ------------------------------------------------------------------ tags
    def _tagged(self, arn: Any) -> Machine:
        """The machine a tagging request's resourceArn names: InvalidArn, or ResourceNotFound
        (TagResource's error name for an unknown resource)."""
        name = self.arns.machine_name(arn, "resourceArn")
        with self._lock:
            m = self._machines.get(name)
        if m is None:
            raise SfnError("ResourceNotFound", f"Resource not found: '{arn}'")
        return m

    def tag(self, arn: Any, tags: Any) -> None:
        """TagResource: add or replace `tags` ([{"key", "value"}]) of a machine."""
        m = self._tagged(arn)
        with self._lock:
            self._tags[m.name] = check_tags(tags, self._tags.get(m.name, {}), arn)
            self._save_tags()

    def untag(self, arn: Any, keys: Any) -> None:
        """UntagResource: remove the tags `keys` (absent ones are ignored)."""
        m = self._tagged(arn)
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise SfnError("ValidationException", "tagKeys must be a list of strings")
        with self._lock:
            kept = {k: v for k, v in self._tags.get(m.name, {}).items() if k not in keys}
            self._tags[m.name] = kept
            self._save_tags()

    def tags(self, arn: Any) -> dict[str, str]:
        """ListTagsForResource: the machine's tags."""
        m = self._tagged(arn)
        with self._lock:
            return dict(self._tags.get(m.name, {}))

    def _save_tags(self) -> None:
        """Write STATE/tags.json (caller holds the lock): the tags of every machine, atomically
        (safefile.write_atomic: a link planted there is replaced, not followed)."""
        self.state.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(self.state / TAGS, json.dumps({k: v for k, v in self._tags.items() if v}))

    def by_app(self, app_name: str) -> Machine | None:
        """The machine revision whose app is `app_name` (a task token names its app)."""
        with self._lock:
            return next((r for m in self._machines.values() for r in m.revisions() if r.app.name == app_name), None)

    # ------------------------------------------------------------------ executions
    def execution(self, arn: Any) -> tuple[Machine, str]:
        """(the machine revision that holds execution `arn` (the current one when none
        does), execution name); ExecutionDoesNotExist when its machine is unknown."""
        machine, name = self.arns.execution_name(arn)
        with self._lock:
            m = self._machines.get(machine)
        if m is None:
            raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{arn}'")
        for r in m.older:
            with r.reader() as reader:
                if _registered(reader, session_of(name)) is not None:
                    return r, name
        return m, name

    def start_execution(self, m: Machine, name: Any, input_text: Any) -> tuple[str, str, float]:
        """StartExecution: (execution name, ARN, start date). The same name with the same
        input while the execution runs returns it again; with another input, or once it has
        ended, ExecutionAlreadyExists (the Step Functions rule for Standard machines).

        An EXPRESS machine's execution runs as a session of its own id (a UUID4) whatever
        its name, which may repeat (AWS's Express rule: names are not unique, the ARN
        `arn:aws:states:R:A:express:MACHINE:NAME:ID` is); the ARN returned is that one."""
        name = check_execution_name(name if name is not None else str(uuid.uuid4()))
        if m.type == "EXPRESS":
            run = str(uuid.uuid4())
            _, _, start = self._start(m, run, input_text)
            return run, self.arns.express(m.name, name, run), start
        return self._start(m, name, input_text)

    def _start(self, m: Machine, name: str, input_text: Any) -> tuple[str, str, float]:
        """start_execution of a checked name, as Standard machines run it."""
        value = parse_json_field(input_text, "input")
        arn = self.arns.execution(m.name, name)
        session = session_of(name)
        for old in m.older:  # a name is the machine's, whichever revision ran it
            with old.reader() as r:
                reg = _registered(r, session)
                if reg is None:
                    continue
                if read_result(r.ds, r.blobs, session) is None and json.loads(reg[1]) == json.loads(json_text(value)):
                    return name, arn, reg[0]
            raise SfnError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}'")
        with m.reader() as r:
            if _registered(r, session) is not None and read_result(r.ds, r.blobs, session) is not None:
                raise SfnError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}'")
        m.remember_name(session, name, arn)
        try:
            m.runner.start(value, session)
        except SessionExistsError:
            raise SfnError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}'") from None
        except PlatformError as exc:
            raise SfnError("InvalidName", str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise SfnError("InvalidExecutionInput", f"Invalid State Machine Execution Input: '{exc}'") from None
        with m.reader() as r:
            info = _registered(r, session)
        return name, arn, info[0] if info else time.time()

    def wait(self, m: Machine, name: str, timeout: float) -> dict[str, Any] | None:
        """The session's result item within `timeout` seconds, else None."""
        assert m.runner.platform is not None
        try:
            return m.runner.platform.wait_result(session_of(name), timeout)
        except TimeoutError:
            return None
        except PlatformError as exc:
            raise SfnError("ServiceException", str(exc), 500) from None

    def describe(self, m: Machine, name: str) -> dict[str, Any]:
        """DescribeExecution's facts of execution `name`: {"status", "start" (the registration
        time: the startDate StartExecution returned), "end", "input", "output" | "error"/
        "cause"} from its registry row, its result item and its history record (the end
        time); a session without a registry row (none here) goes through
        HistoryReader.describe. ExecutionDoesNotExist when unknown."""
        session = session_of(name)
        with m.reader() as r:
            reg = _registered(r, session)
            try:
                if reg is None:
                    return r.describe(session)
                result = read_result(r.ds, r.blobs, session)
                # the continuation of a .sync parent travels in the input; it is not the input
                out: dict[str, Any] = {"status": "RUNNING", "start": reg[0], "end": None,
                                       "input": take_parent(json.loads(reg[1]))[0]}
                if result is None:
                    return out
                rec = r.store.session_row(session)
                end_at = rec.get("ended_at") if rec else None
                if end_at is None:  # no end record (history off, or its write failed): from the events
                    end_at = r.describe(session).get("end")
                out.update(status=session_status(result), end=end_at)
                if result.get("status") == "SUCCEEDED":
                    out["output"] = result.get("v")
                else:
                    out.update(error=result.get("error"), cause=result.get("cause"))
                return out
            except UnknownSession:
                raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: "
                               f"'{self.arns.execution(m.name, name)}'") from None

    def sessions(self, m: Machine) -> list[dict[str, Any]]:
        """The executions of every revision of machine `m`, newest first
        (HistoryReader.sessions rows); "start" is the registration time, the startDate
        StartExecution and DescribeExecution report (the history's session start is
        recorded a moment later, by the entry invocation)."""
        rows = []
        for rev in m.revisions():
            with rev.reader() as r:
                starts = _registered_starts(r)
                names = rev.execution_names()
                for row in r.sessions():
                    row["start"] = starts.get(row["session"], row["start"])
                    row["session"] = names.get(row["session"], row["session"])  # the execution name
                    rows.append(row)
        rows.sort(key=lambda row: (-(row["start"] or 0), row["session"]))
        return rows

    def history(self, m: Machine, name: str, include_data: bool) -> list[dict[str, Any]]:
        """GetExecutionHistory's events (unumctl/serve/history.py)."""
        session = session_of(name)
        with m.reader() as r:
            try:
                desc = r.describe(session)
                events = r.history(session)
                reg = _registered(r, session)
                if reg is not None:  # ExecutionStarted at the startDate DescribeExecution reports
                    desc["start"] = reg[0]
            except UnknownSession:
                raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: "
                               f"'{self.arns.execution(m.name, name)}'") from None
        return sfn_history_events(desc, events, m.role_arn, include_data)

    def map_runs(self, m: Machine, name: str) -> list[dict[str, Any]]:
        """The Map Runs of execution `name` of `m` (unumctl/serve/map_runs.py);
        ExecutionDoesNotExist if unknown."""
        from .map_runs import map_runs
        session = session_of(name)
        with m.reader() as r:
            try:
                r.describe(session)
                events = r.history(session)
            except UnknownSession:
                raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: "
                               f"'{self.arns.execution(m.name, name)}'") from None
        return map_runs(events, self.arns.execution(m.name, name))

    def map_run(self, arn: Any) -> dict[str, Any]:
        """The Map Run `arn` (`<prefix>:mapRun:<machine>/<label>:<id>`), searched in the
        executions of its machine; ResourceNotFound when none has it, InvalidArn for
        another shape."""
        m_ = re.fullmatch(re.escape(self.arns.prefix) + r":mapRun:([^/:]+)/[^:]+:[^:]+", arn) \
            if isinstance(arn, str) else None
        if m_ is None:
            raise SfnError("InvalidArn", f"Invalid Arn: 'mapRunArn: {str(arn)[:200]} is not a Map Run ARN "
                           f"({self.arns.prefix}:mapRun:MACHINE/LABEL:ID)'")
        with self._lock:
            m = self._machines.get(m_.group(1))
        if m is not None:
            for row in self.sessions(m):
                rev, name = self.execution(self.arns.execution(m.name, row["session"]))
                for run in self.map_runs(rev, name):
                    if run["mapRunArn"] == arn:
                        return run
        raise SfnError("ResourceNotFound", f"Resource not found: '{arn[:200]}'")

    def stop_execution(self, m: Machine, name: str, error: Any = None, cause: Any = None,
                       status: str = "ABORTED") -> float:
        """StopExecution: record the session's outcome as `status` (ABORTED) with `error` and
        `cause` unless it has one (the first outcome wins: runtime/session.py), end it (its
        items swept; executions still queued or running find the result and drop), drop its
        queued invocations. Returns the stop date (Unix s). ExecutionDoesNotExist if unknown."""
        p = m.runner.platform
        assert p is not None
        now = time.time()
        try:
            p.stop_session(session_of(name), error, cause, status, now)
        except KeyError:
            raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{self.arns.execution(m.name, name)}'") from None
        return now

    def redrive_execution(self, m: Machine, name: str) -> float:
        """RedriveExecution (runtime/redrive.py): the redrive date (Unix s, from `self.clock`).
        The re-invocations are queued durably; the machine's platform claims them within half
        a second. ExecutionDoesNotExist if unknown, ExecutionNotRedrivable with its reason."""
        from runtime.local.datastore import SqliteDatastore
        from runtime.local.entry import QueueInvoker
        from runtime.local.history import SqliteHistory
        from runtime.local.queue import DurableQueue
        from runtime.payload import RESULT_KEY
        from runtime.redrive import NOT_REDRIVABLE, NotRedrivable, redrive
        p = m.runner.platform
        assert p is not None
        session = session_of(name)
        if p.queue.session(session) is None:
            raise SfnError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{self.arns.execution(m.name, name)}'")
        gone = p.versions.not_redrivable(session)
        if gone is not None:
            raise SfnError(NOT_REDRIVABLE, gone)
        now = self.clock()
        ds = SqliteDatastore(p.db_path)

        def reopen() -> None:  # the result goes, and the history's end record with it
            ds.delete(session, [RESULT_KEY])
            SqliteHistory(ds).reopen(session)
        try:
            redrive(ds, QueueInvoker(lambda msg: None, DurableQueue(ds), None), session, now, reopen=reopen)
        except NotRedrivable as exc:
            raise SfnError(NOT_REDRIVABLE, str(exc).removeprefix(f"{NOT_REDRIVABLE}: ")) from None
        finally:
            ds.close()
        return now

    def redrive_fields(self, m: Machine, name: str) -> dict[str, Any]:
        """DescribeExecution's redriveCount, redriveStatus, redriveStatusReason (when not
        redrivable) and redriveDate (once redriven) of execution `name` (runtime/redrive.py)."""
        from runtime.redrive import describe
        p = m.runner.platform
        assert p is not None
        with m.reader() as r:
            st = describe(r.ds, session_of(name), None, self.clock())
        out: dict[str, Any] = {"redriveCount": st.count, "redriveStatus": st.status}
        if st.reason:
            out["redriveStatusReason"] = st.reason
        if st.date is not None:
            out["redriveDate"] = st.date
        return out

    def send_task(self, kind: str, token: Any, output: Any = None, error: Any = None, cause: Any = None) -> None:
        """SendTaskSuccess/Failure/Heartbeat on the machine the token names
        (runtime/asl/callback.py); SfnError with its error name (InvalidToken, TaskTimedOut,
        TaskDoesNotExist, InvalidOutput). The re-invocation is queued durably and claimed by
        the machine's platform within half a second."""
        from runtime.asl.callback import CallbackClient, CallbackError, Token
        from runtime.local.datastore import SqliteDatastore
        from runtime.local.entry import QueueInvoker
        from runtime.local.queue import DurableQueue
        try:
            t = Token.decode(token)
        except CallbackError as exc:
            raise SfnError(exc.code, exc.message) from None
        m = self.by_app(t.app)
        if m is None or m.runner.platform is None:
            raise SfnError("InvalidToken", "Invalid token")
        ds = SqliteDatastore(m.runner.platform.db_path)
        try:
            client = CallbackClient(ds, QueueInvoker(lambda msg: None, DurableQueue(ds), None), app=m.app.name,
                                    retention=m.runner.platform.retention)
            if kind == "success":
                client.send_task_success(token, output)
            elif kind == "failure":
                client.send_task_failure(token, error, cause)
            else:
                client.send_task_heartbeat(token)
        except CallbackError as exc:
            raise SfnError(exc.code, exc.message) from None
        finally:
            ds.close()


def _registered(r: LocalHistoryReader, session: str) -> tuple[float, str] | None:
    """(started_at, canonical input JSON) of the session's registry row (runtime/local/queue.py), or None."""
    with r.ds.lock:
        return r.ds.db.execute("SELECT started_at, input FROM local_sessions WHERE session=?", (session,)).fetchone()


def _parse_definition(definition: Any) -> Any:
    """The parsed ASL of a request's `definition`; ValidationException when it is not a
    string, InvalidDefinition when it is not JSON."""
    if not isinstance(definition, str):
        raise SfnError("ValidationException", "definition must be a string of ASL JSON")
    try:
        return json.loads(definition)
    except ValueError as exc:
        raise SfnError("InvalidDefinition", f"Invalid State Machine Definition: 'not JSON: {exc}'") from None
    except RecursionError:
        raise SfnError("InvalidDefinition", "Invalid State Machine Definition: 'nested too deep'") from None


def _registered_starts(r: LocalHistoryReader) -> dict[str, float]:
    """{session: started_at} of every registry row (runtime/local/queue.py)."""
    with r.ds.lock:
        return dict(r.ds.db.execute("SELECT session, started_at FROM local_sessions").fetchall())


def _same_json(text: str, doc: Any) -> bool:
    try:
        return json.loads(text) == doc
    except ValueError:
        return False


def required_execution(service: Service, body: dict[str, Any]) -> tuple[Machine, str]:
    """The (machine, execution name) of the request's executionArn. SfnError InvalidArn for
    an execution of an EXPRESS machine: AWS's DescribeExecution, GetExecutionHistory,
    StopExecution and the other per-execution operations do not serve Express executions
    (their record is the logs)."""
    arn = required(body, "executionArn")
    if isinstance(arn, str) and ":express:" in arn:
        raise SfnError("InvalidArn", f"Invalid Arn: 'Resource type not valid in this context: express' ({arn[:200]}): "
                       "Express executions have no execution record; read the logs")
    m, name = service.execution(arn)
    if m.type == "EXPRESS":
        raise SfnError("InvalidArn", f"Invalid Arn: 'Resource type not valid in this context: express' "
                       f"({str(arn)[:200]}): {m.name} is an EXPRESS state machine; read the logs")
    return m, name
