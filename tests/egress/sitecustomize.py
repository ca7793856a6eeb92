"""The test suite's egress guard: no test may reach anything but this machine's loopback.

Loaded in every Python process the tests start (tests/egress_guard.py puts this directory
first on PYTHONPATH, and keeps it there for a subprocess given its own environment), and
installed in the pytest process itself. `install(log)` wraps socket.getaddrinfo and the
socket methods connect, connect_ex and sendto: a name other than localhost, or an address
that is not loopback (127.0.0.0/8, ::1) or unspecified (0.0.0.0, ::), is refused with
OSError(ENETUNREACH) and recorded, one JSON line {pid, argv, call, target}, in the file
`log` (UNUM_EGRESS_LOG), so a test fails even when the code under test swallows the error.
AF_UNIX and other families pass. UNUM_EGRESS_LOG set to '' suspends the guard (a test
marked `allow_egress`), in this process and in the processes it starts. Standard library
only (it also runs in other venvs).

Another sitecustomize.py further along sys.path (the mutants' site, tools/explorer/mutants)
is then imported too, as it would have been without this one.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import sys

ENV_LOG = "UNUM_EGRESS_LOG"
SITE = os.path.dirname(os.path.abspath(__file__))
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_installed = False


def local(host: object) -> bool:
    """True for a loopback or unspecified address, a loopback name, None or ''."""
    if host is None or host == "" or host == b"":
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].lower().rstrip(".")
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    return ip.is_loopback or ip.is_unspecified


def record(call: str, target: object) -> None:
    """Append one violation to the log named by UNUM_EGRESS_LOG (nothing when unset)."""
    path = os.environ.get(ENV_LOG)
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), "argv": sys.argv[:4], "call": call, "target": repr(target)[:200]})
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _refuse(call: str, target: object) -> OSError:
    record(call, target)
    return OSError(errno.ENETUNREACH, f"test egress guard: {call} to {target!r} refused: tests reach "
                                      "127.0.0.1 only (tests/egress/sitecustomize.py)")


def _inet(sock: socket.socket) -> bool:
    return sock.family in (socket.AF_INET, socket.AF_INET6)


def _add_site(env: dict) -> dict:
    """`env` with this directory first on PYTHONPATH and UNUM_EGRESS_LOG kept; as given when
    it sets UNUM_EGRESS_LOG to '' (the guard's own test of a run without it)."""
    if env.get(ENV_LOG) == "":
        return env
    parts = [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep) if p]
    if SITE not in parts:
        env = dict(env)
        env["PYTHONPATH"] = os.pathsep.join([SITE, *parts])
    if ENV_LOG in os.environ and ENV_LOG not in env:
        env = dict(env)
        env[ENV_LOG] = os.environ[ENV_LOG]
    return env


def install() -> None:
    """Wrap the socket functions and subprocess.Popen of this process (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    real_getaddrinfo = socket.getaddrinfo
    real_connect, real_connect_ex, real_sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto

    def suspended() -> bool:
        return os.environ.get(ENV_LOG) == ""  # a test marked allow_egress (tests/egress_guard.py)

    def getaddrinfo(host, *args, **kw):
        if not local(host) and not suspended():
            raise _refuse("getaddrinfo", host)
        return real_getaddrinfo(host, *args, **kw)

    def check(sock, address, call):
        if _inet(sock) and isinstance(address, tuple) and address and not local(address[0]) and not suspended():
            raise _refuse(call, address)

    def connect(self, address):
        check(self, address, "connect")
        return real_connect(self, address)

    def connect_ex(self, address):
        check(self, address, "connect")
        return real_connect_ex(self, address)

    def sendto(self, data, *args):
        if args:
            check(self, args[-1], "sendto")
        return real_sendto(self, data, *args)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.socket.sendto = sendto  # type: ignore[method-assign]

    import subprocess
    real_init = subprocess.Popen.__init__

    def popen_init(self, *args, **kw):
        env = kw.get("env")
        if env is not None:
            kw["env"] = _add_site(env)
        elif SITE not in os.environ.get("PYTHONPATH", "").split(os.pathsep) and os.environ.get(ENV_LOG):
            kw["env"] = _add_site(dict(os.environ))  # a test took PYTHONPATH out of os.environ
        return real_init(self, *args, **kw)

    subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]


def _chain() -> None:
    """Import the next sitecustomize.py on sys.path (this one shadows it)."""
    import importlib.util
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == SITE:
            continue
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_unum_chained_sitecustomize", path)
            if spec is not None and spec.loader is not None:
                mod = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = mod
                spec.loader.exec_module(mod)
            return


if __name__ == "sitecustomize":
    if os.environ.get(ENV_LOG):
        install()
    _chain()
