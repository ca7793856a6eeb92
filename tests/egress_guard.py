"""pytest side of the egress guard (tests/egress/sitecustomize.py): every test of the suite
fails when it, or any process it started (local workers, `unumctl` subprocesses, servers),
tried to reach an address that is not this machine's loopback.

`configure()` (from tests/conftest.py's pytest_configure, or `-p tests.egress_guard`)
installs the guard in the pytest process and, through PYTHONPATH and UNUM_EGRESS_LOG, in
every Python process started from it. `pytest_runtest_call` fails the test with the
recorded attempts (each a JSON line of the log: pid, argv, call, target) when its call
made any; `pytest_runtest_teardown` fails it (an error at teardown) for those its fixtures'
processes made while being stopped. A test marked `allow_egress(reason)` runs with the
guard suspended (UNUM_EGRESS_LOG=''). `egress_attempts` (a fixture) hands a test the attempts
it expects and takes them off the record: the guard's own tests use it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

SITE = Path(__file__).resolve().parent / "egress"
ENV_LOG = "UNUM_EGRESS_LOG"
_STATE: dict[str, Any] = {"offset": 0}


def _guard() -> Any:
    """The guard module (tests/egress/sitecustomize.py), imported once under its own name."""
    name = "unum_egress_guard"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SITE / "sitecustomize.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def configure(config: Any = None) -> None:
    """Install the guard here and for every Python subprocess (idempotent)."""
    if not os.environ.get(ENV_LOG):
        fd, path = tempfile.mkstemp(prefix="unum-egress-", suffix=".jsonl")
        os.close(fd)
        os.environ[ENV_LOG] = _STATE["created"] = path
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(SITE) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), *parts])
    _guard().install()
    _STATE["offset"] = _size()
    if config is not None:
        config.addinivalue_line("markers", "allow_egress(reason): the test may reach beyond 127.0.0.1 (the "
                                           "egress guard is suspended for it); give the reason")


def pytest_configure(config: Any) -> None:
    configure(config)


def pytest_unconfigure(config: Any) -> None:
    unconfigure(config)


def unconfigure(config: Any = None) -> None:
    """Remove the log this process created (a subprocess's pytest inherits it and keeps it)."""
    path = _STATE.pop("created", None)
    if path:
        Path(path).unlink(missing_ok=True)


def _size() -> int:
    try:
        return os.path.getsize(os.environ[ENV_LOG])
    except (OSError, KeyError):
        return 0


def take() -> list[dict[str, Any]]:
    """The attempts recorded since the last take() (and takes them off the record)."""
    path = os.environ.get(ENV_LOG)
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(_STATE["offset"])
            data = f.read()
    except OSError:
        return []
    _STATE["offset"] += len(data)
    out = []
    for line in data.decode(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"call": "?", "target": line[:200]})
    return out


def _fail(when: str, seen: list[dict[str, Any]]) -> None:
    lines = "; ".join(f"{s.get('call')} {s.get('target')} (pid {s.get('pid')}, {' '.join(map(str, s.get('argv') or []))[:80]})"
                      for s in seen[:5])
    pytest.fail(f"a request left 127.0.0.1 {when} ({len(seen)}; tests/egress/sitecustomize.py): {lines}",
                pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    res = yield
    seen = take()
    if seen:
        _fail("during the test", seen)
    return res


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: Any) -> Any:
    if item.get_closest_marker("allow_egress") is not None:
        _STATE["suspended"] = os.environ.get(ENV_LOG)
        os.environ[ENV_LOG] = ""  # suspends the guard here and in what the test starts
    res = yield
    seen = take()
    if seen:
        _fail("during the test's setup", seen)
    return res


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: Any, nextitem: Any) -> Any:
    try:
        res = yield
    finally:
        if "suspended" in _STATE:
            os.environ[ENV_LOG] = _STATE.pop("suspended") or ""
    seen = take()
    if seen:
        _fail("during the test's teardown", seen)
    return res


@pytest.fixture
def egress_attempts():
    """A function returning (and taking off the record) the attempts recorded so far in this
    test: for a test that makes one on purpose."""
    return take
