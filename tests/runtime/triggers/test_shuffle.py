"""Shuffle groups (issue 26 item 2, runtime/triggers/shuffle.py, docs/ir.md "Shuffle edges"): IR
validation, the consumers' inputs on the local target against a plain Python computation,
the keyed-output errors, no keys at all, and the datastore operations per object."""

from __future__ import annotations

import json
import re

import pytest

from runtime.errors import IRError
from runtime.ir import load_function
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import ROOT, make_app

EXAMPLE = ROOT / "examples" / "shuffle-index"


def inverted_index(text: str, chunks: int, passage: int) -> dict:
    """examples/shuffle-index computed in plain Python (no runtime)."""
    words = text.split()
    passages = [" ".join(words[i:i + passage]) for i in range(0, len(words), passage)]
    index: dict[str, list[int]] = {}
    for n, p in enumerate(passages, start=1):
        for w in sorted(set(re.findall(r"[a-z]+", p.lower()))):
            index.setdefault(w, []).append(n)
    index = {w: index[w] for w in sorted(index)}
    return {"words": len(index), "postings": sum(len(v) for v in index.values()), "index": index}


@pytest.mark.parametrize("extra, field", [
    ({"Conditional": "$out != []"}, "Conditional"),
    ({"Payload Modifiers": ["Pop"]}, "Payload Modifiers"),
    ({"Values": ["A-UnumIndex-*"]}, "Values"),
])
def test_shuffle_edge_refuses_fields_with_one_line_naming_file_and_field(extra, field):
    with pytest.raises(IRError) as err:
        load_function({"Name": "Mapper", "Next": {"Name": "Reduce", "Type": "Shuffle", **extra}},
                      "ir/Mapper.yaml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("ir/Mapper.yaml: Next[0]") and field in msg


def test_shuffle_edge_round_trips_and_gets_its_empty_join():
    from runtime.ir import build_workflow
    nodes = [load_function(d, f"ir/{d['Name']}.yaml") for d in (
        {"Name": "S", "Start": True, "Next": {"Name": "M", "Type": "Map"}},
        {"Name": "M", "Next": {"Name": "R", "Type": "Shuffle"}},
        {"Name": "R", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"],
                               "Payload Modifiers": ["Pop"]}},
        {"Name": "J"})]
    wf = build_workflow([(n, f"ir/{n.name}.yaml") for n in nodes])
    edge = wf.functions["M"].next[0]
    assert edge.type == "Shuffle" and edge.empty_join is not None and edge.empty_join[0] == "J"
    # the Map into the producers reaches the same join through the Shuffle (a Map over [])
    assert wf.functions["S"].next[0].empty_join[0] == "J"
    assert load_function(wf.functions["M"].to_dict()).next[0].type == "Shuffle"


def test_example_full_text_matches_plain_python(tmp_path):
    """examples/shuffle-index over the whole play: 3,170 keys, one Posting each, on local;
    the result equals the plain Python computation (and expected_output-full.json), and
    the datastore keeps only the result (the producers' checkpoints and the shuffle set
    were collected)."""
    data = json.loads((EXAMPLE / "input-full.json").read_text())
    with LocalRunner(load_app(EXAMPLE), state=tmp_path, quiet=True) as runner:
        item = runner.run(data, timeout=120)
        runner.platform.wait_idle()
        left = runner.platform.ds.dump()
    assert item["status"] == "SUCCEEDED", item
    expected = inverted_index(data["text"], data["chunks"], data["passage"])
    assert expected["words"] == 3170
    assert item["v"] == expected == json.loads((EXAMPLE / "expected_output-full.json").read_text())
    assert all(names == ["result"] for names in left.values()), left


PRODUCER = """
def handler(event, context):
    return event["pairs"]
"""
CONSUMER = """
def handler(event, context):
    return {"key": context.key, "values": event, "instance": context.instance}
"""
JOIN = """
def handler(event, context):
    return event
"""


def shuffle_app(root, runtime=None):
    return make_app(root, "shuf", {
        "Src": ({"Start": True, "Next": {"Name": "Prod", "Type": "Map"}}, "def handler(e, c):\n    return e\n"),
        "Prod": ({"Next": {"Name": "Cons", "Type": "Shuffle"}}, PRODUCER),
        "Cons": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, CONSUMER),
        "Join": ({}, JOIN),
    }, runtime)


def test_values_by_producer_then_emission_order_and_keys_never_in_names(tmp_path):
    """Duplicate keys within and across producers; keys with '/', '-UnumIndex-', unicode and
    a 1,000-character key: the consumer of key i (code-point order) is Cons-UnumIndex-i."""
    long_key = "k" * 1000
    producers = [
        {"pairs": [["b/../x", 1], ["a", 2], ["b/../x", 3]]},
        {"pairs": []},
        {"pairs": [["a", 4], ["-UnumIndex-9", 5], ["é", 6], [long_key, 7], ["a", 8]]},
    ]
    app = load_app(shuffle_app(tmp_path / "app"))
    with LocalRunner(app, state=tmp_path / "st", quiet=True) as runner:
        item = runner.run(producers, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    groups: dict = {}
    for p in producers:
        for k, v in p["pairs"]:
            groups.setdefault(k, []).append(v)
    keys = sorted(groups)
    assert item["v"] == [{"key": k, "values": groups[k], "instance": f"Cons-UnumIndex-{i}"}
                         for i, k in enumerate(keys)]


def test_no_keys_at_all_invokes_the_join_with_an_empty_list(tmp_path):
    app = load_app(shuffle_app(tmp_path / "app"))
    with LocalRunner(app, state=tmp_path / "st", quiet=True) as runner:
        item = runner.run([{"pairs": []}, {"pairs": []}], timeout=60)
    assert item["status"] == "SUCCEEDED" and item["v"] == [], item


@pytest.mark.parametrize("pairs, needle", [
    ({"a": 1}, "got dict"),
    ([["a", 1], ["b"]], "element [1] is ['b']"),
    ([[3, 1]], "element [0] has key 3 (int)"),
])
def test_bad_keyed_output_fails_the_session_with_one_line_naming_the_function(tmp_path, pairs, needle):
    app = load_app(shuffle_app(tmp_path / "app"))
    with LocalRunner(app, state=tmp_path / "st", quiet=True) as runner:
        item = runner.run([{"pairs": [["ok", 1]]}, {"pairs": pairs}], timeout=60)
    assert item["status"] == "FAILED", item
    assert item["error"] == "TypeError"
    assert "Prod has a Shuffle edge to Cons" in item["cause"] and needle in item["cause"], item["cause"]


def test_producer_outside_a_map_is_refused_naming_the_edge(tmp_path):
    root = make_app(tmp_path / "app", "shuf", {
        "Prod": ({"Start": True, "Next": {"Name": "Cons", "Type": "Shuffle"}}, "def handler(e, c):\n    return e\n"),
        "Cons": ({}, CONSUMER)})
    with LocalRunner(load_app(root), state=tmp_path / "st", quiet=True) as runner:
        item = runner.run([["a", 1]], timeout=60)
    assert item["status"] == "FAILED" and item["error"] == "IRError"
    assert "Prod: Next[0]: a Shuffle edge to Cons needs the producers to be the branches of a Map" \
        in item["cause"]


def test_history_records_one_fired_event_and_graph_and_trace_draw_the_shuffle(tmp_path):
    from tests.unumctl.test_cli import cli
    app = shuffle_app(tmp_path / "app")
    data = tmp_path / "in.json"
    data.write_text(json.dumps([{"pairs": [["x", 1], ["y", 2]]}, {"pairs": [["x", 3]]}]))
    code, out, err = cli("invoke", str(app), "--data", str(data), "--session", "sh-1")
    assert code == 0, err
    code, out, err = cli("history", str(app), "sh-1", "--json")
    fired = [e for e in json.loads(out) if e["kind"] == "fired"]
    assert len(fired) == 1, fired
    assert fired[0]["function"] == "Prod" and fired[0]["trigger"] == "shuffle"
    assert (fired[0]["producers"], fired[0]["keys"], fired[0]["target"]) == (2, 2, "Cons")
    from tests.graph_text import dot_edges, mermaid_edges
    code, out, _ = cli("graph", str(app))
    assert ("Prod", "==>", "Shuffle 1 per key", "Cons") in mermaid_edges(out)
    code, out, _ = cli("graph", str(app), "--format", "dot")
    assert ("Prod", "Cons", {"style": "bold", "arrowhead": "crow", "label": "Shuffle 1 per key"}) in dot_edges(out)
    code, _, err = cli("trace", str(app), "sh-1", "-o", str(tmp_path / "t.html"))
    html = (tmp_path / "t.html").read_text()
    assert code == 0 and '"type": "Shuffle"' in html and "shuffle: 1 per key" in html and '"kind": "fired"' in html


class _Counting:
    """A Datastore port that counts item reads and set adds by item name (delegates all)."""

    def __init__(self, inner):
        from collections import Counter
        self._inner, self.reads, self.adds = inner, Counter(), Counter()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_many(self, session, names):
        self.reads.update(names)
        return self._inner.get_many(session, names)

    def get(self, session, name):
        return self.get_many(session, [name])[0]

    def set_add(self, session, name, member, expires_at):
        self.adds[name] += 1
        return self._inner.set_add(session, name, member, expires_at)


@pytest.mark.parametrize("keys", [40, 400])
def test_each_producer_checkpoint_is_read_once_by_the_stage_whatever_the_keys(tmp_path, keys):
    """Datastore operations per object (runtime/triggers/shuffle.py): N producers emitting K keys each
    add to the stage's set N times, and their checkpoints are read 2N times in all (each
    producer's own ingress, then the completing producer once): not per key (a consumer
    reading the producers' checkpoints would make it N*K)."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    class Fifo(Invoker):
        def __init__(self):
            self.queue = deque()

        def invoke_many(self, calls, delay=0.0):
            self.queue.extend(calls)

    n = 4
    nodes = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
             {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
             {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                       "Payload Modifiers": ["Pop"]}},
             {"Name": "Join"}]
    handlers = {"Src": lambda e, c: list(range(n)),
                "Prod": lambda e, c: [[f"k{k}", c.index] for k in range(keys)],
                "Cons": lambda e, c: [c.key, e], "Join": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in nodes)
    inner = SqliteDatastore(tmp_path / "db.sqlite")
    ds, inv = _Counting(inner), Fifo()
    engines = {f: Engine(ir, handlers[f], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="safe"))
               for f, ir in wf.functions.items()}
    inv.queue.append(("Src", entry_payload("s1", None)))
    runs: dict[str, int] = {}
    collected = None
    while inv.queue:
        fn, payload = inv.queue.popleft()
        if fn == "Cons" and collected is None:  # the stage fired: before any consumer runs
            collected = [inner.get("s1", f"ckpt/Prod-UnumIndex-{i}") for i in range(n)]
        engines[fn].handle(payload)
        runs[fn] = runs.get(fn, 0) + 1
    # the completer collected the producers' checkpoints (tombstones) right after firing
    assert collected == [{"gc": True}] * n, collected
    result = inner.get("s1", "result")
    assert result["v"] == [[k, list(range(n))] for k in sorted(f"k{k}" for k in range(keys))]
    assert runs == {"Src": 1, "Prod": n, "Cons": keys, "Join": 1}
    prod_reads = sum(v for name, v in ds.reads.items() if name.startswith("ckpt/Prod-"))
    assert prod_reads == 2 * n
    assert {k: v for k, v in ds.adds.items() if k.startswith("shuffle/")} == {"shuffle/Cons": n}
    assert inner.dump() == {"s1": ["result"]}


def test_a_group_over_the_payload_limit_travels_in_one_blob_deleted_by_its_consumer(tmp_path):
    """A key whose values exceed the invoker's payload limit: its consumer's input is one
    blob (`{"Key", "Blob"}`), read back whole, and deleted once the consumer committed."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    sent: list = []

    class Small(Invoker):
        max_payload_bytes = 2000

        def __init__(self):
            self.queue = deque()

        def invoke_many(self, calls, delay=0.0):
            sent.extend(calls)
            self.queue.extend(calls)

    nodes = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
             {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
             {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                       "Payload Modifiers": ["Pop"]}},
             {"Name": "Join"}]
    big = "x" * 1500
    handlers = {"Src": lambda e, c: [0, 1], "Prod": lambda e, c: [["big", f"{c.index}{big}"], ["small", c.index]],
                "Cons": lambda e, c: [c.key, [v if isinstance(v, int) else len(v) for v in e]],
                "Join": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in nodes)
    inner, blobs, inv = SqliteDatastore(tmp_path / "db.sqlite"), FileBlobStore(tmp_path / "b"), Small()
    engines = {f: Engine(ir, handlers[f], inner, inv, blobs, Options(gc="safe")) for f, ir in wf.functions.items()}
    inv.queue.append(("Src", entry_payload("s1", None)))
    files = []
    while inv.queue:
        fn, payload = inv.queue.popleft()
        engines[fn].handle(payload)
        files.append((fn, len([f for f in (tmp_path / "b").rglob("*") if f.is_file()])))
    assert inner.get("s1", "result")["v"] == [["big", [1501, 1501]], ["small", [0, 1]]]
    # the completing producer wrote the blob; the consumer of "big" deleted it once committed
    assert files[:5] == [("Src", 0), ("Prod", 0), ("Prod", 1), ("Cons", 0), ("Cons", 0)], files
    data = [p["Data"] for fn, p in sent if fn == "Cons"]
    assert data[0]["Source"] == "shuffle" and set(data[0]["Value"]) == {"Key", "Blob"}
    assert data[1]["Value"] == {"Key": "small", "Values": [0, 1]}
    left = [f for f in (tmp_path / "b").rglob("*") if f.is_file()]
    assert left == [] and inner.dump() == {"s1": ["result"]}


# ---- issue 33 item 1: a producer with more edges than its Shuffle edge
SIDE_NODES = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
              {"Name": "Prod", "Next": [{"Name": "Cons", "Type": "Shuffle"}, {"Name": "Side"}]},
              {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                        "Payload Modifiers": ["Pop"]}},
              {"Name": "Side", "Next": {"Name": "SideAll", "Type": "Fan-in", "Values": ["Side-UnumIndex-*"],
                                        "Payload Modifiers": ["Pop"]}},
              {"Name": "Join", "Next": {"Name": "Final", "Type": "Fan-in", "Values": ["Join", "SideAll"]}},
              {"Name": "SideAll", "Next": {"Name": "Final", "Type": "Fan-in", "Values": ["Join", "SideAll"]}},
              {"Name": "Final"}]


@pytest.mark.parametrize("gc", ["safe", "eager"])
def test_a_producer_killed_before_its_side_edge_is_not_collected_by_the_stage(tmp_path, gc):
    """Prod has `[Shuffle -> Cons, Scalar -> Side]`. Prod-0 joins the stage, then is killed
    before it invokes Side-0 (its invoke fails); Prod-1 completes the stage and invokes the
    consumers. Prod-0's checkpoint has two consumers, so the stage must not collect it: the
    redelivered Prod-0 adopts it and invokes Side-0, and the session ends with both paths.
    Before the fix the stage collected every producer's checkpoint, the redelivery dropped
    ("checkpoint already collected"), Side-0 never ran and the session never ended."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    class Fifo(Invoker):
        def __init__(self):
            self.queue, self.kill = deque(), None

        def invoke_many(self, calls, delay=0.0):
            if self.kill is not None and self.kill(calls):
                self.kill = None
                raise ConnectionError("killed before invoking Side")  # the execution crashes here
            self.queue.extend(calls)

    handlers = {"Src": lambda e, c: [0, 1], "Prod": lambda e, c: [["k", c.index], [f"only{c.index}", 1]],
                "Cons": lambda e, c: [c.key, e], "Side": lambda e, c: f"side{c.index}",
                "Join": lambda e, c: e, "SideAll": lambda e, c: e, "Final": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in SIDE_NODES)
    ds, blobs, inv = SqliteDatastore(tmp_path / "db.sqlite"), FileBlobStore(tmp_path / "b"), Fifo()
    engines = {f: Engine(ir, handlers[f], ds, inv, blobs, Options(gc=gc)) for f, ir in wf.functions.items()}
    inv.queue.append(("Src", entry_payload("s1", None)))
    engines["Src"].handle(inv.queue.popleft()[1])
    prods = [inv.queue.popleft()[1] for _ in range(2)]
    assert not inv.queue
    inv.kill = lambda calls: any(fn == "Side" for fn, _ in calls)
    with pytest.raises(ConnectionError):
        engines["Prod"].handle(prods[0])          # joined shuffle/Cons, killed before Side-0
    assert ds.get("s1", "ckpt/Prod-UnumIndex-0") is not None and not inv.queue
    assert engines["Prod"].handle(prods[1]).status == "ran"  # completes the stage
    assert sorted(fn for fn, _ in inv.queue) == ["Cons", "Cons", "Cons", "Side"]
    assert ds.get("s1", "ckpt/Prod-UnumIndex-0") not in (None, {"gc": True}), \
        "the stage collected a producer whose Side edge was never invoked"
    out = engines["Prod"].handle(prods[0])        # the platform's redelivery
    assert out.status == "adopted", out
    while inv.queue:
        fn, payload = inv.queue.popleft()
        engines[fn].handle(payload)
    res = ds.get("s1", "result")
    assert res is not None and res["status"] == "SUCCEEDED", res
    assert res["v"] == [[["k", [0, 1]], ["only0", [1]], ["only1", [1]]], ["side0", "side1"]]
    assert ds.dump() == {"s1": ["result"]}


def test_a_completer_killed_while_invoking_the_consumers_fires_again_on_redelivery(tmp_path):
    """The producer that completes the stage is killed at its first consumer invocation:
    nothing of the stage was collected yet (the checkpoints go only after every consumer
    call was accepted), so its redelivery completes the set again, fires every consumer and
    the session ends (tools/explorer/mutants/shuffle_gc_before_invoke.py collects first:
    the redelivery then finds a producer collected, stops, and the session hangs)."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    class Fifo(Invoker):
        def __init__(self):
            self.queue, self.kill = deque(), False

        def invoke_many(self, calls, delay=0.0):
            if self.kill and any(fn == "Cons" for fn, _ in calls):
                self.kill = False
                raise ConnectionError("killed while invoking the consumers")
            self.queue.extend(calls)

    nodes = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
             {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
             {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                       "Payload Modifiers": ["Pop"]}},
             {"Name": "Join"}]
    handlers = {"Src": lambda e, c: [0, 1], "Prod": lambda e, c: [["a", c.index], ["b", c.index]],
                "Cons": lambda e, c: [c.key, e], "Join": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in nodes)
    ds, inv = SqliteDatastore(tmp_path / "db.sqlite"), Fifo()
    engines = {f: Engine(ir, handlers[f], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="safe"))
               for f, ir in wf.functions.items()}
    engines["Src"].handle(entry_payload("s1", None))
    prods = [inv.queue.popleft()[1] for _ in range(2)]
    engines["Prod"].handle(prods[0])
    inv.kill = True
    with pytest.raises(ConnectionError):
        engines["Prod"].handle(prods[1])         # completes the set, killed at the first invoke
    assert not inv.queue
    assert engines["Prod"].handle(prods[1]).invoked == 2   # the redelivery fires the stage again
    while inv.queue:
        fn, payload = inv.queue.popleft()
        engines[fn].handle(payload)
    res = ds.get("s1", "result")
    assert res is not None and res["v"] == [["a", [0, 1]], ["b", [0, 1]]], res
    assert ds.dump() == {"s1": ["result"]}


def test_late_producers_under_eager_do_not_fire_the_stage_again(tmp_path):
    """gc `eager`, Src -Map-> Prod[0..1] -Shuffle-> Cons[key] -Fan-in-> Join -> End. The
    stage fires the consumer and deletes both producers' checkpoints; Join deletes the
    consumer's. Late duplicates of both producers then run again (seed 001 §3.5: their input
    came inline) and commit new values. Before the fix they re-created `shuffle/Cons`,
    completed it and fired the consumer again, whose user code ran on the group of the
    second values (the explorer's shuffle-eager finds it). Now the stage records
    `done/shuffle/Cons` before it collects the producers, and a late producer fires nothing."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    class Fifo(Invoker):
        def __init__(self):
            self.queue = deque()

        def invoke_many(self, calls, delay=0.0):
            self.queue.extend(calls)

    nodes = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
             {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
             {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                       "Payload Modifiers": ["Pop"]}},
             {"Name": "Join", "Next": {"Name": "End"}}, {"Name": "End"}]
    runs = {0: 0, 1: 0}
    cons_inputs: list = []

    def prod(e, c):
        runs[c.index] += 1
        return [["k", f"p{c.index}-run{runs[c.index]}"]]
    handlers = {"Src": lambda e, c: [0, 1], "Prod": prod, "Cons": lambda e, c: cons_inputs.append(e) or e,
                "Join": lambda e, c: e, "End": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in nodes)
    ds, inv = SqliteDatastore(tmp_path / "db.sqlite"), Fifo()
    engines = {f: Engine(ir, handlers[f], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="eager"))
               for f, ir in wf.functions.items()}
    engines["Src"].handle(entry_payload("s1", None))
    prods = [inv.queue.popleft()[1] for _ in range(2)]
    assert [engines["Prod"].handle(p).invoked for p in prods] == [0, 1]  # the second completes the stage
    assert ds.get("s1", "ckpt/Prod-UnumIndex-0") is None and ds.get("s1", "ckpt/Prod-UnumIndex-1") is None
    fn, cons = inv.queue.popleft()
    assert fn == "Cons" and engines["Cons"].handle(cons).status == "ran"
    fn, join = inv.queue.popleft()
    assert fn == "Join" and engines["Join"].handle(join).status == "ran"  # deletes ckpt/Cons-UnumIndex-0
    late = [engines["Prod"].handle(p) for p in prods]                     # both re-run ...
    assert runs == {0: 2, 1: 2}
    assert [o.invoked for o in late] == [0, 0], "the late producers fired the stage again"
    assert ds.get("s1", "shuffle/Cons") is None
    assert [fn for fn, _ in inv.queue] == ["End"]
    again = engines["Cons"].handle(cons)  # a duplicate of the consumer's firing: its group came
    assert (again.status, again.invoked) == ("ran", 0)  # inline, it may run again, on that group
    assert cons_inputs == [["p0-run1", "p1-run1"]] * 2, cons_inputs
    fn, end = inv.queue.popleft()
    assert engines[fn].handle(end).status == "ran"
    assert ds.get("s1", "result")["v"] == [["p0-run1", "p1-run1"]]
    assert ds.dump() == {"s1": ["result"]}


def test_a_slow_completer_under_eager_does_not_fire_a_re_run_value(tmp_path):
    """gc `eager`, one producer (a Map over one item) -Shuffle-> Cons -Fan-in-> Join -> End.
    Execution E1 of Prod-0 commits and reads `done/shuffle/Cons` (absent), then is slow
    before its set add; meanwhile a duplicate E2 adopts, completes the stage, fires Cons,
    records the item and deletes ckpt/Prod-0; Cons and Join run; a third execution E3 finds
    no checkpoint, runs again, commits a second value, declines on the item and is killed
    before it collects that checkpoint. E1's set add then re-creates the set and completes
    it: its read of the producers' checkpoints finds E3's value, and only its second read of
    the item (after those checkpoints) keeps it from firing Cons on it."""
    from collections import deque
    from runtime.engine import Engine, Options
    from runtime.errors import InjectedCrash
    from runtime.faults import Faults
    from runtime.ir import build_workflow
    from runtime.local.datastore import FileBlobStore, SqliteDatastore
    from runtime.ports import Invoker
    from runtime.session import entry_payload

    class Fifo(Invoker):
        def __init__(self):
            self.queue = deque()

        def invoke_many(self, calls, delay=0.0):
            self.queue.extend(calls)

    class KillBeforeGc(Faults):
        armed = False

        def point(self, name, session, instance):
            if self.armed and name == "before_gc":
                self.armed = False
                raise InjectedCrash("killed before its GC")

    class Slow(SqliteDatastore):
        """Runs `meanwhile` once, at the first add to shuffle/Cons (E1's)."""
        meanwhile = None

        def set_add(self, session, name, member, expires_at):
            if name == "shuffle/Cons" and self.meanwhile is not None:
                todo, self.meanwhile = self.meanwhile, None
                todo()
            return super().set_add(session, name, member, expires_at)

    nodes = [{"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}},
             {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
             {"Name": "Cons", "Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                                       "Payload Modifiers": ["Pop"]}},
             {"Name": "Join", "Next": {"Name": "End"}}, {"Name": "End"}]
    runs = [0]
    cons_inputs: list = []

    def prod(e, c):
        runs[0] += 1
        return [["k", f"run{runs[0]}"]]
    handlers = {"Src": lambda e, c: [0], "Prod": prod, "Cons": lambda e, c: cons_inputs.append(e) or e,
                "Join": lambda e, c: e, "End": lambda e, c: e}
    wf = build_workflow((load_function(d), d["Name"]) for d in nodes)
    ds, inv, kill = Slow(tmp_path / "db.sqlite"), Fifo(), KillBeforeGc()
    engines = {f: Engine(ir, handlers[f], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="eager"),
                         faults=kill if f == "Prod" else None)
               for f, ir in wf.functions.items()}
    engines["Src"].handle(entry_payload("s1", None))
    prod_call = inv.queue.popleft()[1]

    def meanwhile():
        assert engines["Prod"].handle(prod_call).status == "adopted"  # E2 fires the stage
        for fn in ("Cons", "Join"):
            got, call = inv.queue.popleft()
            assert got == fn and engines[fn].handle(call).status == "ran"
        assert ds.get("s1", "ckpt/Prod-UnumIndex-0") is None and ds.get("s1", "ckpt/Cons-UnumIndex-0") is None
        kill.armed = True
        with pytest.raises(InjectedCrash):
            engines["Prod"].handle(prod_call)                         # E3 re-runs, killed before its GC
        assert ds.get("s1", "ckpt/Prod-UnumIndex-0")["v"] == [["k", "run2"]]
    ds.meanwhile = meanwhile
    e1 = engines["Prod"].handle(prod_call)                            # E1, slow before its set add
    assert e1.status == "ran" and ds.meanwhile is None
    assert e1.invoked == 0, "the slow completer fired Cons on the re-run's value"
    assert [fn for fn, _ in inv.queue] == ["End"]
    assert engines["Prod"].handle(prod_call).status == "adopted"      # E3's redelivery: collected
    fn, end = inv.queue.popleft()
    assert engines[fn].handle(end).status == "ran"
    assert cons_inputs == [["run1"]], cons_inputs
    assert ds.get("s1", "result")["v"] == [["run1"]]
    assert ds.dump() == {"s1": ["result"]}
