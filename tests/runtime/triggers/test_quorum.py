"""k-of-n fan-in (`Quorum: k`, runtime/triggers/quorum.py, issue 26 item 1): IR validation,
the slot protocol on the datastore port, and examples/quorum-replicas on the local target."""

from __future__ import annotations

import pytest

from runtime.errors import IRError
from runtime.ir import build_workflow, load_function
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app


def wf(*docs):
    return build_workflow((load_function(d, f"ir/{d['Name']}.yaml"), f"ir/{d['Name']}.yaml") for d in docs)


def replica(quorum=2, values=("R-UnumIndex-*",), **edge):
    return {"Name": "R", "Next": {"Name": "J", "Type": "Fan-in", "Values": list(values), "Quorum": quorum,
                                  "Payload Modifiers": ["Pop"], **edge}}


START = {"Name": "S", "Start": True, "Next": {"Name": "R", "Type": "Map"}}
JOIN = {"Name": "J"}


# ---------------------------------------------------------------- (a) IR syntax + validation

def test_quorum_loads_and_round_trips():
    w = wf(START, replica(2), JOIN)
    edge = w.functions["R"].next[0]
    assert edge.quorum == 2
    assert w.functions["R"].to_dict()["Next"][0]["Quorum"] == 2
    again = load_function(w.functions["R"].to_dict(), "bundle")
    assert again.next[0].quorum == 2
    assert wf(START, replica(None) | {"Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"]}},
              JOIN).functions["R"].next[0].quorum is None


@pytest.mark.parametrize("doc,fragments", [
    ({"Name": "R", "Next": {"Name": "J", "Quorum": 2}},
     ["ir/R.yaml: Next[0] (function R): Quorum:", "only Fan-in edges", "make the edge 'Type: Fan-in'"]),
    (replica(0), ["ir/R.yaml: Next[0] (function R): Quorum: 0 is not an integer >= 1", "e.g. 'Quorum: 2'"]),
    (replica("2"), ["Quorum: '2' is not an integer >= 1"]),
    (replica(True), ["Quorum: True is not an integer >= 1"]),
    (replica(3, ("R-UnumIndex-0", "R-UnumIndex-1")),
     ["Quorum: 3 is more than the 2 input(s) named by Values", "lower it to at most 2"]),
])
def test_bad_quorum_is_one_line_naming_file_function_field_and_fix(doc, fragments):
    with pytest.raises(IRError) as info:
        load_function(doc, f"ir/{doc['Name']}.yaml")
    msg = str(info.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, msg


def test_edges_into_one_target_must_agree_on_the_quorum():
    a = {"Name": "A", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"],
                               "Quorum": 1, "Payload Modifiers": ["Pop"]}}
    b = {"Name": "B", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"],
                               "Payload Modifiers": ["Pop"]}}
    s = {"Name": "S", "Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]}
    with pytest.raises(IRError, match=r"ir/B.yaml: Next\[0\] \(function B\): Quorum: this edge has no Quorum "
                                      r"but the Fan-in edge into J of function A \(ir/A.yaml: Next\[0\]\) has "
                                      r"Quorum 1; give every Fan-in edge into one target the same Quorum"):
        wf(s, a, b, JOIN)


def test_quorum_refuses_branches_that_loop():
    loop = {"Name": "R", "Next": [{"Name": "R", "Conditional": "$out < 2"},
                                  {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"], "Quorum": 1,
                                   "Conditional": "$out >= 2", "Payload Modifiers": ["Pop"]}]}
    with pytest.raises(IRError, match=r"Next\[1\] \(function R\): Quorum: branch\(es\) R may loop"):
        wf(START, loop, JOIN)


def test_unumctl_loader_names_the_ir_file(tmp_path):
    code = "def handler(e, c):\n    return e\n"
    root = make_app(tmp_path / "app", "bad-quorum", {
        "S": ({"Start": True, "Next": {"Name": "R", "Type": "Map"}}, code),
        "R": ({"Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-0", "R-UnumIndex-1"],
                        "Quorum": 5, "Payload Modifiers": ["Pop"]}}, code),
        "J": ({}, code)})
    with pytest.raises(AppError) as info:
        load_app(root)
    assert f"{root / 'ir' / 'R.yaml'}: Next[0] (function R): Quorum: 5 is more than the 2" in str(info.value)


# ---------------------------------------------------------------- (b) the runtime, on the port

import threading  # noqa: E402

from runtime.engine import Engine, Options  # noqa: E402
from runtime.local.datastore import FileBlobStore, SqliteDatastore  # noqa: E402
from runtime.ports import Invoker  # noqa: E402
from runtime.triggers import quorum  # noqa: E402

from unumctl_testing.conformance.adversarial import AdversarialReads  # noqa: E402


class Recorder(Invoker):
    """The platform's invoke API as a list (the engines' calls are delivered by the test)."""

    def __init__(self, fail_next: int = 0):
        self.calls: list[tuple[str, dict]] = []
        self.fail_next = fail_next

    def invoke_many(self, calls, delay=0.0):
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("invoke API unavailable")  # the execution crashes here
        self.calls.extend(calls)


def engines(tmp_path, n=3, k=2, gc="safe", inv=None):
    ds = SqliteDatastore(tmp_path / "db")
    blobs = FileBlobStore(tmp_path / "blobs")
    inv = inv or Recorder()
    w = wf(START, replica(k), JOIN)
    opts = Options(gc=gc)
    handlers = {"S": lambda e, c: list(range(n)), "R": lambda e, c: {"replica": c.index, "v": e * 10},
                "J": lambda e, c: e}
    return ds, inv, {fn: Engine(w.functions[fn], handlers[fn], ds, inv, blobs, opts) for fn in handlers}


def replica_payloads(eng, inv):
    assert eng["S"].handle({"Session": "s1", "Data": {"Source": "http", "Value": None}}).status == "ran"
    calls, inv.calls[:] = list(inv.calls), []
    return [p for fn, p in calls if fn == "R"]


def test_first_k_in_slot_order_duplicates_and_a_straggler(tmp_path):
    """R2 then R0 commit: R0 fires J with [R2, R0] (slot order, not index order); a duplicate
    of R2 (rank 1) fires nothing, a duplicate of R0 fires the same list; R1, last, is a
    straggler: J is never invoked with it and its checkpoint is collected at once."""
    ds, inv, eng = engines(tmp_path)
    r = replica_payloads(eng, inv)
    assert eng["R"].handle(r[2]).invoked == 0
    assert eng["R"].handle(r[0]).invoked == 1
    fired = [p for _, p in inv.calls]
    assert [p["Data"] for p in fired] == [{"Source": "checkpoint", "Value": ["R-UnumIndex-2", "R-UnumIndex-0"]}]
    assert eng["R"].handle(r[2]).invoked == 0          # duplicate of an early member
    assert eng["R"].handle(r[0]).invoked == 1          # duplicate of the firing member
    assert [p["Data"] for _, p in inv.calls[1:]] == [fired[0]["Data"]]
    assert eng["R"].handle(r[1]).invoked == 0          # the straggler
    assert ds.get("s1", "ckpt/R-UnumIndex-1") == {"gc": True}, "straggler's checkpoint not collected"
    assert ds.get("s1", quorum.slot_key("J", 1)) == {"member": "R-UnumIndex-2"}
    assert ds.get("s1", quorum.slot_key("J", 2)) == {"member": "R-UnumIndex-0"}
    out = eng["J"].handle(fired[0])
    assert out.status == "ran"
    res = ds.get("s1", "result")
    assert res["status"] == "SUCCEEDED" and res["v"] == [{"replica": 2, "v": 20}, {"replica": 0, "v": 0}]
    assert eng["R"].handle(r[1]).status == "dropped"   # a late duplicate of the straggler


def test_straggler_checkpoint_is_deleted_under_eager(tmp_path):
    ds, inv, eng = engines(tmp_path, gc="eager")
    r = replica_payloads(eng, inv)
    for i in (0, 1, 2):
        eng["R"].handle(r[i])
    assert ds.get("s1", "ckpt/R-UnumIndex-2") is None
    assert ds.get("s1", "ckpt/R-UnumIndex-0") is not None  # consumed by J, collected by it


def test_crash_between_the_claim_and_the_invoke(tmp_path):
    """The k-th branch claims its slot, then its invoke fails (the execution crashes): its
    redelivery finds itself in slot k and fires the target with the same list."""
    inv = Recorder()
    ds, inv, eng = engines(tmp_path, inv=inv)
    r = replica_payloads(eng, inv)
    eng["R"].handle(r[1])
    inv.fail_next = 1
    with pytest.raises(ConnectionError):
        eng["R"].handle(r[0])
    assert ds.get("s1", quorum.slot_key("J", 2)) == {"member": "R-UnumIndex-0"} and not inv.calls
    assert eng["R"].handle(r[2]).invoked == 0  # meanwhile R2 arrives: a straggler
    assert eng["R"].handle(r[0]).invoked == 1  # the redelivery
    assert [p["Data"]["Value"] for _, p in inv.calls] == [["R-UnumIndex-1", "R-UnumIndex-0"]]


def test_glob_quorum_above_the_expanded_size_fails_the_branch(tmp_path):
    _, inv, eng = engines(tmp_path, n=2, k=3)
    r = replica_payloads(eng, inv)
    out = eng["R"].handle(r[0])
    assert out.status == "failed" and "Quorum: 3 is more than the 2 input(s)" in out.detail


@pytest.mark.parametrize("j_checkpoint", [True, False])
def test_a_late_duplicate_under_eager_does_not_fire_the_target_again(tmp_path, j_checkpoint):
    """Issue 33 item 4. gc `eager`, a Quorum of 1 of 2 into J -> M -> End: R0 fires J with
    its first run's answer; J commits and deletes ckpt/R0, M commits and deletes ckpt/J.
    A late duplicate of R0 then finds no checkpoint and runs again (seed 001 §3.5 allows
    that re-run: its input came inline), commits a second answer and still holds slot 1.
    J's firing is recorded (`quorum/J/done`, created by J before it collects its inputs):
    the duplicate neither fires J again nor leaves its second checkpoint, and a duplicate
    delivery of J's firing drops; J's user code ran once, on the first answer. Before the
    fix the duplicate fired J, whose user code ran again on ['R0-run2']."""
    ds = SqliteDatastore(tmp_path / "db")
    blobs, inv = FileBlobStore(tmp_path / "blobs"), Recorder()
    j = {"Name": "J", "Next": {"Name": "M"}, **({} if j_checkpoint else {"Checkpoint": False})}
    w = wf(START, replica(1), j, {"Name": "M", "Next": {"Name": "End"}}, {"Name": "End"})
    runs: dict[int, int] = {}
    j_inputs: list = []

    def rep(e, c):
        runs[c.index] = runs.get(c.index, 0) + 1
        return f"R{c.index}-run{runs[c.index]}"
    handlers = {"S": lambda e, c: [0, 1], "R": rep, "J": lambda e, c: j_inputs.append(e) or e,
                "M": lambda e, c: e, "End": lambda e, c: e}
    eng = {fn: Engine(w.functions[fn], handlers[fn], ds, inv, blobs, Options(gc="eager")) for fn in handlers}
    r = replica_payloads(eng, inv)

    def deliver(fn):
        got = [p for f, p in inv.calls if f == fn]
        inv.calls[:] = [(f, p) for f, p in inv.calls if f != fn]
        return [eng[fn].handle(p) for p in got]
    assert eng["R"].handle(r[0]).invoked == 1          # R0 holds slot 1: fires J
    fired = [p for f, p in inv.calls if f == "J"]
    assert [o.status for o in deliver("J")] == ["ran"]
    assert ds.get("s1", "ckpt/R-UnumIndex-0") is None  # collected by J (eager: deleted)
    assert [o.status for o in deliver("M")] == ["ran"]
    assert ds.get("s1", "ckpt/J") is None              # collected by M (or J has none)
    late = eng["R"].handle(r[0])                       # the late duplicate re-runs
    assert runs[0] == 2
    assert late.invoked == 0, "the late duplicate fired J again"
    assert ds.get("s1", "ckpt/R-UnumIndex-0") is None  # its second answer is never consumed
    assert [o.status for o in deliver("J")] == []
    assert eng["J"].handle(fired[0]).status == "dropped"  # a duplicate delivery of the firing
    assert j_inputs == [["R0-run1"]], j_inputs
    assert [o.status for o in deliver("End")] == ["ran"]
    assert ds.get("s1", "result")["v"] == ["R0-run1"]
    assert eng["R"].handle(r[1]).status == "dropped"    # the straggler, after the end
    assert ds.dump() == {"s1": ["result"]}


class Forward(AdversarialReads):
    """Item by item, in the order asked (the contract allows any order)."""

    def get_many(self, session, names):
        out = []
        for i, name in enumerate(names):
            if i and self.between is not None:
                self.between(session, names[:i], name)
            out.append(self.inner.get_many(session, [name])[0])
        return out


@pytest.mark.parametrize("order", ["reverse", "forward"])
def test_a_duplicate_whose_read_overlaps_the_claims_fires_the_same_list(tmp_path, order):
    """A duplicate of branch A reads the slots item by item while another branch and A's
    first execution claim slots 1 and 2 between its item reads: it must find A's rank and
    fire J with the slot holders, never [None, A] nor a second slot for A."""
    ds = SqliteDatastore(tmp_path / "db")
    done = []

    def between(session, read, nxt):
        if not done:
            done.append(1)
            assert quorum.join(ds, session, "J", "X", 2, 2e9).rank == 1
            assert quorum.join(ds, session, "J", "A", 2, 2e9).members == ["X", "A"]
    wrapped = (AdversarialReads(ds, order="reverse", between=between) if order == "reverse"
               else Forward(ds, between=between))
    st = quorum.join(wrapped, "s1", "J", "A", 2, 2e9)
    assert (st.rank, st.members, st.created) == (2, ["X", "A"], [])


def test_concurrent_claims_fire_exactly_once(tmp_path):
    """8 branches join a quorum of 3 at once (threads on one SQLite file, 5 rounds): exactly
    one fires, with the holders of slots 1..3, and the ranks 1..3 are each held once."""
    ds = SqliteDatastore(tmp_path / "db")
    for rnd in range(5):
        go = threading.Barrier(8)
        got: dict[str, quorum.Standing] = {}

        def branch(m, rnd=rnd, go=go, got=got):
            go.wait()
            got[m] = quorum.join(ds, f"s{rnd}", "J", m, 3, 2e9)
        threads = [threading.Thread(target=branch, args=(f"B{i}",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        fired = [s.members for s in got.values() if s.fires]
        assert len(fired) == 1
        assert sorted(s.rank for s in got.values() if s.rank) == [1, 2, 3]
        slots = [ds.get(f"s{rnd}", quorum.slot_key("J", j))["member"] for j in (1, 2, 3)]
        assert fired[0] == slots


# ---------------------------------------------------------------- (c) examples/quorum-replicas

def test_quorum_replicas_example_does_not_wait_for_the_slow_replica(tmp_path):
    """examples/quorum-replicas on local: replica 2 sleeps 2.5 s; Combine ends (from the
    history) before the slow replica's execution does, the result holds replicas 0 and 1
    only, and one `quorum_fired` event names the two members in the order of `order`."""
    import json

    from unumctl_testing.apps import EXAMPLES, copy_example, expected_of, matches_expected
    from tests.unumctl.test_cli import cli

    app = copy_example(EXAMPLES / "quorum-replicas", tmp_path / "app")
    code, out, err = cli("invoke", str(app), "--data", str(app / "input.json"), "--session", "q-1")
    assert code == 0, err
    result = json.loads(out)
    assert matches_expected(result, expected_of(app)) and 2 not in result["replicas"]
    code, out, err = cli("history", str(app), "q-1", "--json")
    assert code == 0, err
    events = json.loads(out)
    combine = [e for e in events if e["instance"] == "Combine" and e["kind"] == "ran"]
    slow = [e for e in events if e["instance"] == "Replica-UnumIndex-2" and e["kind"] == "ran"]
    fired = [e for e in events if e["kind"] == "quorum_fired"]
    assert len(combine) == 1 and len(slow) == 1, events
    assert combine[0]["t1"] < slow[0]["t1"], "the result waited for the slow replica"
    assert len(fired) == 1
    assert fired[0]["detail"].endswith(", ".join(f"Replica-UnumIndex-{i}" for i in result["order"]))
    # (e) the trace draws the quorum edge's label and the firing on the timeline
    code, _, err = cli("trace", str(app), "q-1", "-o", str(tmp_path / "trace.html"))
    assert code == 0, err
    page = (tmp_path / "trace.html").read_text()
    assert '"label": "quorum 2 of *"' in page and '"quorum_fired": "#4527a0"' in page
    assert '"kind": "quorum_fired"' in page and "fired the quorum" in page


def test_graph_labels_the_quorum_edge():
    from tests.graph_text import mermaid_edges
    from unumctl_testing.apps import EXAMPLES
    from tests.unumctl.test_cli import cli

    code, out, err = cli("graph", str(EXAMPLES / "quorum-replicas"))
    assert code == 0, err
    assert ("Replica", "-.->", "Fan-in quorum 2 of * [Replica-UnumIndex-*] Pop", "Combine") in mermaid_edges(out)
    static = wf({"Name": "S", "Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]},
                *({"Name": n, "Next": {"Name": "J", "Type": "Fan-in", "Quorum": 1, "Payload Modifiers": ["Pop"],
                                       "Values": ["A-UnumIndex-0", "B-UnumIndex-1"]}} for n in "AB"), JOIN)
    from unumctl.graph import to_dot
    assert 'label="Fan-in quorum 1 of 2 [A-UnumIndex-0, B-UnumIndex-1] Pop"' in to_dot(static)


# ---------------------------------------------------------------- (g) datastore operations

class Counting:
    """The port's calls made through it: (method, number of items) per call."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def get_many(self, session, names):
        self.calls.append(("get_many", len(names)))
        return self.inner.get_many(session, names)

    def create_if_absent(self, session, name, item, expires_at):
        self.calls.append(("create_if_absent", 1))
        return self.inner.create_if_absent(session, name, item, expires_at)


@pytest.mark.parametrize("k", [2, 3])
def test_datastore_operations_per_branch(tmp_path, k):
    """docs/sets.md "Quorum": a branch's join is one get_many of k slots plus one
    create_if_absent when it claims uncontended; a duplicate and a straggler only read. (A
    plain fan-in's branch: one set_add.)"""
    ds = Counting(SqliteDatastore(tmp_path / "db"))

    def calls(member):
        ds.calls = []
        st = quorum.join(ds, "s1", "J", member, k, 2e9)
        return st, list(ds.calls)
    for r in range(1, k + 1):
        st, made = calls(f"B{r}")
        assert st.rank == r and made == [("get_many", k), ("create_if_absent", 1)]
    assert st.members == [f"B{r}" for r in range(1, k + 1)]
    assert calls("B1")[1] == [("get_many", k)]                                   # a duplicate
    st, made = calls("B9")
    assert st.rank is None and made == [("get_many", k)]                         # a straggler
    # contended: slots 1..k-1 taken after this branch read them free: one create per slot tried
    fresh = Counting(SqliteDatastore(tmp_path / "db2"))
    stale = [None] * k
    orig = fresh.get_many
    fresh.get_many = lambda s, names: (orig(s, names), stale)[1]  # a read served before the claims
    for r in range(1, k):
        quorum.join(fresh.inner, "s1", "J", f"B{r}", k, 2e9)
    fresh.calls = []
    assert quorum.join(fresh, "s1", "J", "late", k, 2e9).rank == k
    assert fresh.calls == [("get_many", k)] + [("create_if_absent", 1)] * k
