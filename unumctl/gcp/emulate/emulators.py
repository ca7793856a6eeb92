"""Start and stop the Google Cloud emulators on free 127.0.0.1 ports (`unumctl emulate gcp`,
tests, bench).

Source: Google Cloud SDK emulators (`gcloud emulators firestore start`, `gcloud beta
emulators pubsub start`); we launch their Java servers directly (same classes the gcloud
wrappers run) so that each one is a single process group we start and stop by process id.
The optional GCS stand-in is PyPI `gcp-storage-emulator` (a stub of the GCS JSON API).

Clients find them through the standard variables FIRESTORE_EMULATOR_HOST,
PUBSUB_EMULATOR_HOST and STORAGE_EMULATOR_HOST (see `Emulator.env`).
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ...emulate import EmulatorMissing
from ...install_hint import install_hint

__all__ = ["EmulatorExited", "EmulatorMissing", "Emulators", "Process", "firestore_command", "free_port",
           "pubsub_command", "start_process", "storage_command"]

INSTALL_JAVA = "install a Java 11+ runtime (e.g. apt-get install default-jre-headless)"


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sdk_root() -> Path | None:
    """The Google Cloud SDK directory (CLOUDSDK_ROOT_DIR, or next to `gcloud` on PATH)."""
    cands = [os.environ.get("CLOUDSDK_ROOT_DIR"), "/usr/lib/google-cloud-sdk",
             "/usr/share/google-cloud-sdk", "/opt/google-cloud-sdk"]
    gcloud = shutil.which("gcloud")
    if gcloud:
        cands.insert(1, str(Path(gcloud).resolve().parent.parent))
    for c in cands:
        if c and (Path(c) / "platform").is_dir():
            return Path(c)
    return None


def firestore_command(host: str, port: int) -> list[str]:
    """The Firestore emulator's Java command; EmulatorMissing names what is absent."""
    java = shutil.which("java")
    root = sdk_root()
    jar = root / "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar" if root else None
    if not java:
        raise EmulatorMissing(f"java not found on PATH (the Firestore emulator needs Java 11+): {INSTALL_JAVA}")
    if jar is None or not jar.exists():
        raise EmulatorMissing("Firestore emulator not installed: gcloud components install "
                              "cloud-firestore-emulator (or apt-get install "
                              "google-cloud-cli-firestore-emulator)")
    return [java, "-Duser.language=en", "-cp", str(jar),
            "com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
            f"--host={host}", f"--port={port}"]


def pubsub_command(host: str, port: int) -> list[str]:
    """The Pub/Sub emulator's launch script; EmulatorMissing names what is absent."""
    root = sdk_root()
    script = root / "platform/pubsub-emulator/bin/cloud-pubsub-emulator" if root else None
    if not shutil.which("java"):
        raise EmulatorMissing(f"java not found on PATH (the Pub/Sub emulator needs Java 11+): {INSTALL_JAVA}")
    if script is None or not script.exists():
        raise EmulatorMissing("Pub/Sub emulator not installed: gcloud components install pubsub-emulator "
                              "(or apt-get install google-cloud-cli-pubsub-emulator)")
    return [str(script), f"--host={host}", f"--port={port}"]


def storage_command(host: str, port: int, data_dir: Path) -> list[str]:
    """PyPI gcp-storage-emulator in memory; EmulatorMissing when it is not installed."""
    exe = Path(sys.executable).parent / "gcp-storage-emulator"
    if not exe.exists():
        found = shutil.which("gcp-storage-emulator")
        if not found:
            raise EmulatorMissing(f"gcp-storage-emulator not installed: {install_hint('emulate')}")
        exe = Path(found)
    return [str(exe), "start", f"--host={host}", f"--port={port}", "--in-memory",
            "--default-bucket=unum-test"]


@dataclass
class Process:
    """A started server: its process (own process group), address and log file."""

    name: str
    proc: subprocess.Popen
    host: str
    port: int
    log: Path

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the process group (the Java child too), SIGKILL after `grace` seconds."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(grace)


GARBLED_S = 5.0  # seconds a port may answer without HTTP/1 before its emulator is given up


class EmulatorExited(RuntimeError):
    """An emulator process exited before it answered (e.g. its port was taken)."""


def start_process(name: str, cmd: list[str], host: str, port: int, log_dir: Path,
                  env: dict[str, str] | None = None, ready_path: str = "/",
                  timeout: float = 60.0, append: bool = False) -> Process:
    """Start `cmd` in a new process group, its stdout and stderr going to
    `log_dir/<name>.log` (appended to with `append`), and wait until
    http://host:port/ready_path answers (any HTTP status). EmulatorExited (a
    RuntimeError) with the log's first error line and tail when it dies, or (the process
    stopped) when the port answers without HTTP/1 for GARBLED_S; RuntimeError when it times
    out."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    fh = open(log, "ab" if append else "wb")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    fh.close()
    p = Process(name, proc, host, port, log)
    deadline = time.monotonic() + timeout
    garbled: float | None = None  # when the port first answered with something not HTTP/1
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            first = next((ln for ln in text.splitlines() if "Exception" in ln or "Error" in ln), "")
            raise EmulatorExited(f"{name} exited with {proc.returncode}: {first[:300]} ... {text[-400:]}")
        try:
            urllib.request.urlopen(f"http://{host}:{port}{ready_path}", timeout=1).read()
            return p
        except urllib.error.HTTPError:
            return p
        except http.client.HTTPException as exc:
            # not an HTTP/1 answer: e.g. the Pub/Sub emulator whose main thread died on a
            # BindException keeps only its gRPC (HTTP/2) server and never exits; past
            # GARBLED_S it is given up like an exited one (the caller tries another port)
            garbled = garbled if garbled is not None else time.monotonic()
            if time.monotonic() - garbled > GARBLED_S:
                p.stop()
                raise EmulatorExited(f"{name} on {host}:{port} answers without HTTP/1 ({type(exc).__name__}): "
                                     f"{log.read_text(errors='replace')[-400:]}") from None
            time.sleep(0.1)
        except OSError:
            time.sleep(0.1)
    p.stop()
    raise RuntimeError(f"{name} not ready on {host}:{port} after {timeout:.0f}s: {log.read_text()[-400:]}")


@dataclass
class Emulators:
    """Firestore + Pub/Sub (+ optional GCS stand-in) emulators for one project id."""

    workdir: Path
    project: str = "unum-test"
    storage: bool = True
    procs: dict[str, Process] = field(default_factory=dict)

    def start(self) -> "Emulators":
        """Start every emulator (EmulatorMissing / RuntimeError on failure; nothing is left
        running then)."""
        host = "127.0.0.1"
        makers = {"firestore": lambda port: firestore_command(host, port),
                  "pubsub": lambda port: pubsub_command(host, port)}
        if self.storage:
            makers["storage"] = lambda port: storage_command(host, port, self.workdir / "gcs")
        try:
            for name, make in makers.items():
                for attempt in range(3):  # a free port can be taken before the emulator binds it
                    port = free_port()
                    try:
                        self.procs[name] = start_process(name, make(port), host, port, self.workdir / "logs",
                                                         append=attempt > 0)
                        break
                    except EmulatorExited:
                        if attempt == 2:
                            raise
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for p in self.procs.values():
            p.stop()
        self.procs.clear()

    @property
    def env(self) -> dict[str, str]:
        """Environment variables pointing the google-cloud clients at the emulators."""
        env = {"GOOGLE_CLOUD_PROJECT": self.project,
               "FIRESTORE_EMULATOR_HOST": self.procs["firestore"].address,
               "PUBSUB_EMULATOR_HOST": self.procs["pubsub"].address}
        if "storage" in self.procs:
            env["STORAGE_EMULATOR_HOST"] = f"http://{self.procs['storage'].address}"
        return env

    def __enter__(self) -> "Emulators":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
