"""The embedded AWS emulator of the local target: moto's server on 127.0.0.1, for the Step
Functions service integrations of an app that names no endpoint (docs/stepfunctions.md
"Service integrations"; which endpoint and credentials a local run uses: docs/local.md
"Where service integrations go"), Lambda Tasks of functions outside the app included.

`SharedAws` starts one moto_server on first need and stops it on close(): an `unumctl
invoke` has its own (started and stopped with the platform); `unumctl serve` has one for
all its machines (started when the first machine with an integration Task starts, stopped
when serve stops).

moto's server keeps its state in memory only: it has no persistence (its recorder only logs
requests for a replay, which re-creates generated ids and receipt handles differently), so
the emulated services start empty with each emulator. Its URL is written to
`<state>/aws-endpoint` of each platform using it, while it runs, for the AWS CLI
(`aws --endpoint-url $(cat ...)`); the file is written to a new name in that directory and
renamed over the old one, so a symlink planted there is replaced, never followed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

from ..emulate.ready import NotReady, wait_ready
from ..install_hint import install_hint

__all__ = ["DUMMY_CREDENTIALS", "EmulatorError", "SharedAws", "write_url_file"]

START_CPU_S = 30.0  # CPU seconds moto_server may use before it answers (unumctl.emulate.ready)
URL_FILE = "aws-endpoint"  # in a platform's state directory: the emulator's URL while it runs
# moto accepts any credentials: these keep the user's own access key out of its requests
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_SESSION_TOKEN": "testing", "AWS_EC2_METADATA_DISABLED": "true"}


class EmulatorError(RuntimeError):
    """The embedded emulator is missing or did not start (one line naming the fix)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedAws:
    """moto_server on a free 127.0.0.1 port. `start()` returns its URL; `stop()` ends it
    (by its own pid). Raises EmulatorError."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None

    def start(self) -> str:
        exe = Path(sys.executable).with_name("moto_server")
        cmd = str(exe) if exe.exists() else shutil.which("moto_server")
        if cmd is None:
            raise EmulatorError("the app has AWS service integrations and no integrations.aws_endpoint: "
                                f"the embedded emulator needs moto's server ({install_hint('emulate')}), or give "
                                "--aws-endpoint URL / integrations.aws_endpoint (aws: real AWS)")
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([cmd, "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        url = self.url

        def answers() -> bool:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1)
                return True
            except OSError:
                return False

        try:
            wait_ready(self.proc, answers, cpu_budget=START_CPU_S)
        except NotReady as exc:
            self.stop()
            raise EmulatorError(f"the embedded AWS emulator (moto_server) did not start on "
                                f"127.0.0.1:{port}: {exc}") from None
        return self.url

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


class SharedAws:
    """One EmbeddedAws for every platform of a process that asks for it: `url()` starts it
    on the first call (thread-safe) and returns its URL, `close()` stops it (a later url()
    starts a new one). `starts`: how many emulators it has started. Raises EmulatorError."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._emu: EmbeddedAws | None = None
        self.starts = 0

    def url(self) -> str:
        with self._lock:
            if self._emu is None:
                emu = EmbeddedAws()
                url = emu.start()
                self._emu, self.starts = emu, self.starts + 1
                return url
            assert self._emu.url is not None
            return self._emu.url

    def close(self) -> None:
        with self._lock:
            emu, self._emu = self._emu, None
        if emu is not None:
            emu.stop()


def write_url_file(state: Path, url: str) -> Path:
    """Write `url` to `state`/URL_FILE with safefile.write_atomic (a new file of a random name
    in `state`, O_EXCL | O_NOFOLLOW, mode 0600, renamed over URL_FILE: a symlink planted at
    that name is replaced, never followed). Returns the path. Raises OSError."""
    from ..safefile import write_atomic
    path = Path(state) / URL_FILE
    write_atomic(path, url + "\n")
    return path
