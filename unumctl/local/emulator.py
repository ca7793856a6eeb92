"""The embedded AWS emulator of the local target: moto's server on 127.0.0.1, started and
stopped with the platform, for the Step Functions service integrations of an app that names
no endpoint (docs/stepfunctions.md "Service integrations").

moto's server keeps its state in memory only: it has no persistence (its recorder only logs
requests for a replay, which re-creates generated ids and receipt handles differently), so
the emulated services start empty with each platform. Its URL is written to
`<state>/aws-endpoint` while it runs, for the AWS CLI (`aws --endpoint-url $(cat ...)`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

INSTALL = "pip install 'unumctl[emulate]'"  # moto[server]
START_TIMEOUT = 30.0  # s
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
    (by its own pid) and removes the URL file. Raises EmulatorError."""

    def __init__(self, state: Path):
        self.url_file = Path(state) / "aws-endpoint"
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None

    def start(self) -> str:
        exe = Path(sys.executable).with_name("moto_server")
        cmd = str(exe) if exe.exists() else shutil.which("moto_server")
        if cmd is None:
            raise EmulatorError("the app has AWS service integrations and no integrations.aws_endpoint: "
                                f"the embedded emulator needs moto's server ({INSTALL}), or give "
                                "--aws-endpoint URL / integrations.aws_endpoint (aws: real AWS)")
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([cmd, "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=1)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise EmulatorError(f"the embedded AWS emulator (moto_server) did not start on "
                                        f"127.0.0.1:{port} within {START_TIMEOUT:.0f} s") from None
                time.sleep(0.1)
        self.url_file.parent.mkdir(parents=True, exist_ok=True)
        self.url_file.write_text(self.url + "\n")
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
        self.url_file.unlink(missing_ok=True)
