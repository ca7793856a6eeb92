"""Sessions pinned to the version they started on, on the local target (docs/versions.md):
the version id, the retirement rule and the store (fast), and a deploy under traffic (slow):
sessions held mid-way while a version that renames a function, adds a step and widens a
fan-in is deployed; each ends with its own version's result, and the old version's bundles
are collected once its sessions have drained. The checker is shown to catch a platform that
runs every invocation on the current version."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runtime.errors import UnumError
from runtime.local.datastore import SqliteDatastore
from runtime.local.queue import DurableQueue
from runtime.payload import RESULT_KEY, VersionId
from unumctl.cli import app as cli_app
from unumctl.local import LocalRunner
from unumctl.local.versions import VersionStore, retirable, version_id
from unumctl.pipeline import load as load_app
from unumctl.targets import get_target
from unumctl_testing.apps import make_sfn_app, sfn_task

V1, V2 = VersionId("00000000000000a1"), VersionId("00000000000000b2")


# ---------------------------------------------------------------- version id and retirement
def test_version_id_is_a_content_hash_of_code_ir_and_settings():
    funcs = {"A": {"zip": "1" * 64, "timeout": 3, "memory": 128}, "B": {"zip": "2" * 64, "timeout": 3, "memory": 128}}
    base = version_id(funcs, {"max_delivery_attempts": 3, "history": "full"})
    assert base == version_id(dict(reversed(list(funcs.items()))), {"history": "full", "max_delivery_attempts": 3})
    changed_code = {**funcs, "A": {**funcs["A"], "zip": "3" * 64}}
    changed_limit = {**funcs, "B": {**funcs["B"], "timeout": 4}}
    renamed = {"A": funcs["A"], "C": funcs["B"]}
    others = {version_id(changed_code, {"max_delivery_attempts": 3, "history": "full"}),
              version_id(changed_limit, {"max_delivery_attempts": 3, "history": "full"}),
              version_id(renamed, {"max_delivery_attempts": 3, "history": "full"}),
              version_id(funcs, {"max_delivery_attempts": 2, "history": "full"})}
    assert base not in others and len(others) == 4
    assert VersionId(base) == base and len(base) == 16


def test_version_id_refuses_what_is_not_one():
    for bad in ("", "../etc", "ABCDEF0123456789", "0" * 15, 7):
        with pytest.raises(UnumError, match="not valid"):
            VersionId(bad)


def test_retirable_keeps_the_current_the_held_and_those_with_running_sessions():
    old = [VersionId(f"{i:016x}") for i in range(4)]
    assert retirable(old, old[0], {old[1]: 2}, held=[old[2]]) == [old[3]]
    assert retirable(old, old[0], {}) == old[1:]
    assert retirable(old, None, {o: 1 for o in old}) == []


def _store(tmp_path) -> tuple[SqliteDatastore, VersionStore]:
    ds = SqliteDatastore(tmp_path / "unum.db")
    return ds, VersionStore(ds, tmp_path)


def _register(store: VersionStore, version: VersionId, now: float) -> None:
    d = store.directory(version) / "F-x"
    d.mkdir(parents=True)
    (d / "unum_entry.py").write_text("")
    store.register(version, {"F": d}, {"F": (3.0, None)}, now=now)


def test_an_old_version_is_collected_only_when_its_sessions_cannot_run(tmp_path):
    ds, store = _store(tmp_path)
    q = DurableQueue(ds)
    _register(store, V1, now=100.0)
    q.start_session("s1", "F", {"n": 1}, None, expires_at=time.time() + 60, version=V1)
    _register(store, V2, now=200.0)
    assert store.current() == V2
    assert [(r["version"], r["running"], r["current"]) for r in store.listing()] == [(V2, 0, True), (V1, 1, False)]
    assert store.collect() == []                       # s1 may still run: V1 stays
    ds.create_if_absent("s1", RESULT_KEY, {"status": "SUCCEEDED", "v": 1}, time.time() + 60)
    q.add([("F", {"Session": "s1"})], None)           # a duplicate still queued: V1 stays
    assert store.collect() == []
    q.drop_session("s1")
    held = store.hold(V1)                              # a live platform still runs V1: it stays
    try:
        assert store.collect() == []
    finally:
        import os
        os.close(held)
    assert store.collect() == [V1]
    assert not store.directory(V1).exists() and store.get(V1) is None and store.current() == V2
    ds.close()


def test_an_expired_session_no_longer_keeps_its_version(tmp_path):
    """The bound: a session that never ends keeps its version only until its record expires."""
    ds, store = _store(tmp_path)
    _register(store, V1, now=100.0)
    DurableQueue(ds).start_session("stuck", "F", {}, None, expires_at=1_000.0, version=V1)
    _register(store, V2, now=200.0)
    assert store.collect(now=999.0) == []
    assert store.collect(now=1_001.0) == [V1]
    ds.close()


def test_a_session_registered_without_a_version_is_pinned_on_first_delivery(tmp_path):
    ds = SqliteDatastore(tmp_path / "unum.db")
    q = DurableQueue(ds)
    q.start_session("s", "F", {}, None, expires_at=time.time() + 60)   # e.g. invoke --no-wait
    assert q.pin("s", V2) == V2 and q.pin("s", V1) == V2                 # the first one sticks
    assert q.pin("unregistered", V1) is None
    ds.close()


# ---------------------------------------------------------------- deploy under traffic
GATE = """
import os
def handler(event, context):
    if os.path.exists(event["barrier"]):
        return True
    open(os.path.join(event["held"], str(event["n"])), "w").close()
    return False
"""
WORK = "def handler(event, context):\n    return event['n'] * event['k']\n"
PREP = "def handler(event, context):\n    return event\n"
JOIN = "def handler(event, context):\n    return {{'version': {v}, 'sum': sum(event)}}\n"
FINISH = "def handler(event, context):\n    return {**event, 'finished': True}\n"


def _machine(width: int, join: str, finish: bool) -> dict:
    branches = [{"StartAt": f"W{k}", "States": {f"W{k}": sfn_task("Work", Parameters={"n.$": "$.n", "k": k})}}
                for k in range(1, width + 1)]
    states = {
        "Prep": sfn_task("Prep", "Gate"),
        "Gate": sfn_task("Gate", "Open", ResultPath="$.open"),
        "Open": {"Type": "Choice", "Choices": [{"Variable": "$.open", "BooleanEquals": True, "Next": "Fan"}],
                 "Default": "Pause"},
        "Pause": {"Type": "Wait", "Seconds": 1, "Next": "Gate"},
        "Fan": {"Type": "Parallel", "Branches": branches, "Next": join},
        join: sfn_task(join, "Finish" if finish else None),
    }
    if finish:
        states["Finish"] = sfn_task("Finish")
    return {"StartAt": "Prep", "States": states}


def write_version(root: Path, v: int) -> Path:
    """Version 1: a fan-in of 2 branches joined by Combine. Version 2: Combine renamed Merge,
    3 branches, and a new Finish step after it."""
    if v == 1:
        machine, handlers = _machine(2, "Combine", False), {"Combine": JOIN.format(v=1)}
    else:
        machine, handlers = _machine(3, "Merge", True), {"Merge": JOIN.format(v=2), "Finish": FINISH}
    handlers.update({"Prep": PREP, "Gate": GATE, "Work": WORK})
    for d in (root / "functions").glob("*") if (root / "functions").exists() else ():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    return make_sfn_app(root, machine, handlers, name="pinned")


def expected(v: int, n: int) -> dict:
    return {"version": 1, "sum": 3 * n} if v == 1 else {"version": 2, "sum": 6 * n, "finished": True}


def pinning_problems(results: dict[str, dict], old: int, new: int) -> list[str]:
    """The sessions whose result is not their version's: `old-i` must end with version 1's
    result for input i, `new-i` with version 2's."""
    out = []
    for i in range(old):
        got = results.get(f"old-{i}")
        if got != {"status": "SUCCEEDED", "v": expected(1, i)}:
            out.append(f"old-{i}: {got}")
    for i in range(new):
        got = results.get(f"new-{i}")
        if got != {"status": "SUCCEEDED", "v": expected(2, i)}:
            out.append(f"new-{i}: {got}")
    return out


def _wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def deploy_under_traffic(tmp_path: Path, n: int) -> dict:
    """Start `n` sessions on version 1 and hold them at the Gate, stop that platform, deploy
    version 2 (a new platform on the same state, as the next invoke/resume/serve does), start
    `n` sessions on it, release the gate; returns the results, both ids, the listing while
    both ran (`unumctl versions --json`) and whether version 1's bundles were collected."""
    root = write_version(tmp_path / "app", 1)
    held, barrier = tmp_path / "held", tmp_path / "barrier"
    held.mkdir()

    def data(i: int) -> dict:
        return {"n": i, "held": str(held), "barrier": str(barrier)}
    with LocalRunner(load_app(root), quiet=True) as r1:
        assert r1.platform is not None
        v1 = r1.platform.version
        for i in range(n):
            r1.start(data(i), f"old-{i}")
        _wait_for(lambda: len(list(held.iterdir())) >= n, 180, f"{n} sessions held at the gate")
    write_version(root, 2)
    with LocalRunner(load_app(root), quiet=True) as r2:
        assert r2.platform is not None
        v2 = r2.platform.version
        for i in range(n):
            r2.start(data(i), f"new-{i}")
        out = CliRunner().invoke(cli_app, ["versions", str(root), "--json"])
        assert out.exit_code == 0, out.output
        listing = json.loads(out.output)
        barrier.touch()
        results = {}
        for s in [f"old-{i}" for i in range(n)] + [f"new-{i}" for i in range(n)]:
            item = r2.platform.wait_result(s, 300)
            results[s] = {k: item.get(k) for k in ("status", "v")} if item["status"] == "SUCCEEDED" else item
        old_dir = r2.platform.versions.directory(v1)
        try:
            _wait_for(lambda: not old_dir.exists(), 30, "version 1 to be collected")
        except AssertionError:
            pass
        collected = not old_dir.exists() and r2.platform.versions.get(v1) is None
        after = r2.platform.versions.listing()
    return {"results": results, "v1": v1, "v2": v2, "listing": listing, "collected": collected, "after": after}


@pytest.mark.slow
def test_sessions_finish_on_the_version_they_started_on(tmp_path):
    n = 50
    rep = deploy_under_traffic(tmp_path, n)
    assert rep["v1"] != rep["v2"]
    assert pinning_problems(rep["results"], n, n) == []
    running = {r["version"]: (r["running"], r["current"]) for r in rep["listing"]}
    assert running == {rep["v2"]: (n, True), rep["v1"]: (n, False)}
    assert rep["collected"], "version 1's bundles were not collected after its sessions drained"
    assert [r["version"] for r in rep["after"]] == [rep["v2"]]


@pytest.mark.slow
def test_the_checker_catches_sessions_run_on_the_current_version(tmp_path, monkeypatch):
    """Injected bug: the platform ignores the session's pin and runs every invocation on its
    own (the current) bundles. Old sessions then end with version 2's result (or fail)."""
    monkeypatch.setattr(DurableQueue, "pin", lambda self, session, version: None)
    n = 3
    rep = deploy_under_traffic(tmp_path, n)
    problems = pinning_problems(rep["results"], n, n)
    assert sorted(p.split(":")[0] for p in problems) == [f"old-{i}" for i in range(n)]


def test_a_session_whose_version_was_collected_is_not_redrivable(tmp_path):
    ds, store = _store(tmp_path)
    _register(store, V1, now=100.0)
    DurableQueue(ds).start_session("failed", "F", {}, None, expires_at=time.time() + 60, version=V1)
    ds.create_if_absent("failed", RESULT_KEY, {"status": "FAILED", "error": "E"}, time.time() + 60)
    DurableQueue(ds).drop_session("failed")              # (its entry invocation, queued by the start)
    _register(store, V2, now=200.0)
    assert store.not_redrivable("failed") is None        # V1 is still kept
    ds.create_if_absent("failed", "redrive/from/0", {"instance": "F"}, time.time() + 60)
    assert store.collect() == []                         # redrivable (its frontier is kept): V1 stays
    ds.delete("failed", ["redrive/from/0"])
    assert store.collect() == [V1]                       # a FAILED session that cannot be redriven does not
    assert f"version {V1} of the app, which session failed started on, was collected" in \
        str(store.not_redrivable("failed"))
    assert store.not_redrivable("never-started") is None
    ds.close()


BOOM = """
import os
def handler(event, context):
    if os.path.exists(event["fail"]):
        raise RuntimeError("failed on purpose")
    return {{"version": {v}}}
"""


def _boom_app(root: Path, v: int) -> Path:
    make_sfn_app(root, {"StartAt": "Boom", "States": {"Boom": sfn_task("Boom")}}, {"Boom": BOOM.format(v=v)},
                 name="redrive-pinned")
    m = root / "unumctl.yaml"
    doc = yaml.safe_load(m.read_text())
    doc["runtime"] = {"redrive": True}
    m.write_text(yaml.safe_dump(doc))
    return root


@pytest.mark.slow
def test_a_redrive_runs_on_the_version_the_session_started_on(tmp_path):
    """A FAILED, redrivable session keeps its version across a deploy, and its redrive runs
    that version's code, not the current one."""
    flag = tmp_path / "fail"
    flag.touch()
    root = _boom_app(tmp_path / "app", 1)
    with LocalRunner(load_app(root), quiet=True) as r:
        assert r.run({"fail": str(flag)}, "s1", timeout=120)["status"] == "FAILED"
        v1 = r.platform.version  # type: ignore[union-attr]
    _boom_app(root, 2)
    target = get_target("local", load_app(root))
    with LocalRunner(load_app(root), quiet=True) as r:  # the deploy: version 2 is current
        v2 = r.platform.version  # type: ignore[union-attr]
    listing = {row["version"]: row["running"] for row in target.versions()}  # type: ignore[attr-defined]
    assert v1 != v2 and listing == {v2: 0, v1: 1}  # the FAILED session may be redriven: v1 is kept
    flag.unlink()
    info = target.redrive("s1", timeout=120)
    assert info["result"]["status"] == "SUCCEEDED" and info["result"]["v"] == {"version": 1}


def test_versions_command_lists_the_current_first_with_running_sessions(tmp_path):
    from unumctl.deploy.statepath import local_dir
    root = _boom_app(tmp_path / "app", 1)
    cli = CliRunner()
    out = cli.invoke(cli_app, ["versions", str(root)])
    assert out.exit_code == 2 and "no local runs of redrive-pinned at stage dev yet" in out.output
    state = local_dir(load_app(root))
    state.mkdir(parents=True)
    ds, store = _store(state)
    _register(store, V1, now=100.0)
    DurableQueue(ds).start_session("s1", "F", {}, None, expires_at=time.time() + 60, version=V1)
    _register(store, V2, now=200.0)
    ds.close()
    out = cli.invoke(cli_app, ["versions", str(root), "--stage", "dev"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split()[:3] == ["VERSION", "CURRENT", "RUNNING"]
    assert lines[1].split()[:3] == [V2, "*", "0"] and lines[2].split()[:2] == [V1, "1"]
    # --cloud aws and --cloud gcp: tests/aws/test_versions_aws.py, tests/gcp/test_versions_gcp.py
