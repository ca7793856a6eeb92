"""The `local` Target: invoke runs the session on a LocalPlatform in this process (or, with
--no-wait, in a detached `unumctl invoke --wait` whose output goes to a log file)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.local.faults import FaultSpec
from runtime.payload import RESULT_KEY

from ..build import state_dir
from ..targets import Target, TargetError, register
from . import LocalRunner


@register
class LocalTarget(Target):
    """Embedded default target: worker processes + SQLite under `<app>/.unum/local`."""

    name = "local"

    def invoke(self, value, wait, timeout, session=None, faults=None):
        try:
            spec = FaultSpec.parse(faults)
        except ValueError as exc:
            raise TargetError(f"--faults: {exc}") from None
        session = session or str(uuid.uuid4())
        if not wait:
            return session, self._detach(value, session, faults)
        with LocalRunner(self.app, faults=spec,
                         workers_per_function=self.options.get("workers", 2)) as runner:
            try:
                item = runner.run(value, session, timeout)
            except TimeoutError as exc:
                raise TargetError(f"{exc}; the session keeps its state, re-run with a larger --timeout") from None
        return session, item

    def _detach(self, value: Any, session: str, faults: str | None) -> None:
        state = state_dir(self.app) / "local"
        state.mkdir(parents=True, exist_ok=True)
        SqliteDatastore(state / "unum.db").close()  # so `unumctl result` works right away
        data = tempfile.NamedTemporaryFile("w", suffix=".json", dir=state, delete=False)
        json.dump(value, data)
        data.close()
        log = open(state / f"{session}.log", "w")
        cmd = [sys.executable, "-m", "unumctl.cli", "invoke", str(self.app.root), "--data", data.name,
               "--session", session, "--wait"]
        if faults:
            cmd += ["--faults", faults]
        subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        print(f"unumctl: running in the background; log: {state / (session + '.log')}; "
              f"result: unumctl result {self.app.root} {session}", file=sys.stderr)
        return None

    def result(self, session):
        db = state_dir(self.app) / "local" / "unum.db"
        if not db.exists():
            raise TargetError(f"no local runs of {self.app.name} yet; run: unumctl invoke {self.app.root} --data FILE")
        ds = SqliteDatastore(db)
        try:
            item = ds.get(session, RESULT_KEY)
            if item is not None and "blob" in item:
                item = dict(item)
                blobs = FileBlobStore(Path(db).parent / "blobs")
                item["v"] = json.loads(blobs.get(session, item.pop("blob")))
            return item
        finally:
            ds.close()
