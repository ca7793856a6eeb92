"""(Not named moto.py: moto_serialized.py, run as a script from this directory, imports the moto
package.) moto_server on this machine for `unumctl emulate aws` (over HTTPS: tls_certificate),
the AWS tests, benchmarks and `unumctl cost` (through unumctl/cost/measure.py): start it on a
free 127.0.0.1 port, stop it by its pid, and the environment that points boto3 (and Terraform)
at it with dummy credentials."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Iterator

from ...emulate.ready import NotReady, wait_ready

__all__ = ["REGION", "aws_env", "find_moto_server", "free_port", "moto_server", "tls_certificate",
           "find_moto"]

REGION = "us-east-1"
STDERR_LINES = 5  # of the emulator's stderr, shown when it does not start
START_CPU_S = 30.0  # CPU seconds moto_server may use before it answers (unumctl.emulate.ready)


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _has_moto_server(python: str) -> bool:
    """Whether this interpreter (`python` is sys.executable) can import moto's server."""
    import importlib.util
    return python == sys.executable and all(importlib.util.find_spec(m) is not None
                                            for m in ("moto", "flask", "werkzeug"))


def _script_python(script: str) -> str | None:
    """The interpreter of a console script (its `#!` line), None when it names none."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline(4096).decode(errors="replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:  # #!/usr/bin/env python3
        return shutil.which(words[-1])
    return words[0]


def find_moto() -> tuple[str, str] | None:
    """(interpreter, what was found) of the moto[server] to run: this interpreter when it
    imports moto (what = its moto_server script beside it, else the interpreter), otherwise the
    interpreter of the moto_server script on PATH (its `#!` line); None when neither exists.
    moto_server() runs exactly this interpreter, so the emulator started is the one checked."""
    local = Path(sys.executable).with_name("moto_server")
    if _has_moto_server(sys.executable):
        return sys.executable, str(local) if local.exists() else sys.executable
    script = str(local) if local.exists() else shutil.which("moto_server")
    if script is None:
        return None
    python = _script_python(script)
    return (python, script) if python else None


def find_moto_server() -> str | None:
    """Path of the moto_server that moto_server() runs (find_moto's `what`: the script, or the
    interpreter that has moto); None when moto[server] is not installed."""
    found = find_moto()
    return found[1] if found else None


def moto_install_hint() -> str:
    """How to install moto[server] for this unumctl (unumctl/install_hint.py)."""
    from ...install_hint import install_hint
    return install_hint("emulate")


@contextlib.contextmanager
def moto_server(tls: tuple[Path, Path] | None = None) -> Iterator[str]:
    """Run moto_server (requests serialized: moto_serialized.py) on a free 127.0.0.1 port
    (stopped by its pid on exit); yields its base URL, https:// with `tls` = (certificate,
    key) PEM files (tls_certificate makes them). Raises FileNotFoundError when it is not
    installed (the message names the install command), RuntimeError when it exits or does
    not answer (a readiness wait: after START_CPU_S s of its CPU, or 600 s, however loaded
    the machine is; unumctl.emulate.ready) in one line: what was run, and the last lines of
    its stderr."""
    import tempfile

    found = find_moto()
    if found is None:
        raise FileNotFoundError(f"moto_server not installed ({moto_install_hint()})")
    python, what = found
    port = free_port()
    # moto_server's app with one request at a time (moto_serialized.py: moto loses
    # concurrent counter updates, which stalls fan-ins), by the interpreter moto_server uses
    cmd = [python, str(Path(__file__).with_name("moto_serialized.py")), "-H", "127.0.0.1", "-p", str(port)]
    context = None
    if tls is not None:
        import ssl
        cmd += ["--cert", str(tls[0]), "--key", str(tls[1])]
        context = ssl.create_default_context(cafile=str(tls[0]))
    # its stderr to a file (a pipe nobody reads would fill and block it), read on failure
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1, context=context)
            return True
        except OSError:
            return False

    try:
        try:
            wait_ready(proc, answers, cpu_budget=START_CPU_S)
        except NotReady as exc:
            err.seek(0)
            tail = [ln.strip() for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
            shown = " | ".join(tail[-STDERR_LINES:]) or "no output on stderr"
            raise RuntimeError(f"moto_server ({what}, run as {python} moto_serialized.py) {exc} "
                               f"on {url}: {shown}") from None
        yield url
    finally:
        err.close()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def tls_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (subjectAltName IP 127.0.0.1 and DNS
    localhost, valid one day, EC P-256) and its key, written to `directory` as cert.pem and
    key.pem (the key mode 0600); returns (cert, key). For moto_server(tls=...); clients trust
    it through AWS_CA_BUNDLE (boto3, and Terraform's AWS provider)."""
    import datetime as dt
    import ipaddress
    import os

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "unumctl emulate 127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    return cert_path, key_path


def aws_env(moto: str, lambda_url: str | None = None) -> dict[str, str]:
    """Environment for boto3/Terraform against moto (and the local Invoke server)."""
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
           "AWS_ENDPOINT_URL": moto, "AWS_EC2_METADATA_DISABLED": "true"}
    if lambda_url:
        env["AWS_ENDPOINT_URL_LAMBDA"] = lambda_url
    return env
