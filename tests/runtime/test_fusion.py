"""Issue 25 co-location (fusion) and batching: runtime/fusion.py, unumctl/tuning/colocate.py
(docs/fusion.md). The explorer's fused workflows and the fusion mutant are in
tests/tools/test_explorer.py."""

import json
import time
from dataclasses import dataclass, field

import pytest

from runtime.engine import Engine, UserContext
from runtime.errors import IRError
from runtime.fusion import Fusion, Step, batches, compose
from runtime.ir import load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from unumctl.pipeline import load as load_app
from unumctl.tuning import colocate
from unumctl.tuning.colocate import FusionError

from unumctl_testing.apps import ROOT, copy_example, expected_of, matches_expected

WORDCOUNT = ROOT / "examples" / "wordcount"
TEXT = ROOT / "examples" / "text-processing"


def ctx(instance="A", indexes=(), sizes=()):
    return UserContext("s", instance, "A", list(indexes), list(sizes), 0)


# ---------------------------------------------------------------------------- runtime.fusion

def test_compose_runs_chain_map_region_and_batches_in_order():
    seen = []

    def h(name):
        def f(e, c):
            seen.append((name, c.function, c.instance))
            return {"by": name, "in": e}
        return f
    fz = Fusion((Step("A", "a.h", "first"), Step("B", "b.h", "scalar")))
    out = compose(fz, {"A": h("A"), "B": h("B")})(1, ctx())
    assert out == {"by": "B", "in": {"by": "A", "in": 1}}
    assert seen == [("A", "A", "A"), ("B", "B", "B")]

    seen.clear()
    region = Fusion((Step("S", "s.h", "first"), Step("M", "m.h", "map"), Step("J", "j.h", "join")))
    out = compose(region, {"S": lambda e, c: [e, e + 1, e + 2], "M": lambda e, c: [e * 10, c.index, c.size],
                           "J": lambda e, c: e})(1, ctx("S"))
    assert out == [[10, 0, 3], [20, 1, 3], [30, 2, 3]]

    # a batched Map: the source's list cut in k-item batches, each branch runs its items with
    # their own index and the list's size, and the join sees the flat ordered list again
    items = list(range(5))
    cut = compose(Fusion((Step("S", "s.h", "first"),), batch_out=2), {"S": lambda e, c: items})(None, ctx())
    assert [b["UnumBatch"] for b in cut] == [[0, 1], [2, 3], [4]] and cut == batches(items, 2)
    branch = compose(Fusion((Step("T", "t.h", "first"),), batch_in=True),
                     {"T": lambda e, c: [e * e, c.index, c.size, c.instance]})
    outs = [branch(b, ctx(f"T-UnumIndex-{i}", [i], [len(cut)])) for i, b in enumerate(cut)]
    flat = compose(Fusion((Step("J", "j.h", "first"),), flatten_in=True), {"J": lambda e, c: e})(outs, ctx())
    assert flat == [[i * i, i, 5, f"T-UnumIndex-{i}"] for i in items]


def test_a_member_failure_is_the_groups_and_nothing_runs_after_it():
    ran = []

    def boom(e, c):
        raise ValueError("no")
    fz = Fusion((Step("A", "a.h", "first"), Step("B", "b.h", "scalar"), Step("C", "c.h", "scalar")))
    with pytest.raises(ValueError):
        compose(fz, {"A": lambda e, c: ran.append("A"), "B": boom, "C": lambda e, c: ran.append("C")})(0, ctx())
    assert ran == ["A"]


@pytest.mark.parametrize("doc,msg", [
    ({"Steps": []}, "Fused.Steps: expected a non-empty list"),
    ({"Steps": [{"Function": "A", "Handler": "a.h", "Kind": "scalar"}]}, "only the first step has Kind first"),
    ({"Steps": [{"Function": "A", "Handler": "a.h", "Kind": "first"},
                {"Function": "B", "Handler": "b.h", "Kind": "map"}]}, "a map step is followed by a join"),
    ({"Steps": [{"Function": "A", "Handler": "a.h", "Kind": "first"}], "BatchOut": 0.5}, "BatchOut"),
    ({"Steps": [{"Function": "A", "Handler": "a.h", "Kind": "first"}], "Batch": 2}, "Fused.Batch: unknown"),
])
def test_bad_fused_field_is_one_line_ir_error(doc, msg):
    with pytest.raises(IRError, match=msg) as exc:
        load_function({"Name": "A", "Fused": doc}, "f.json")
    assert str(exc.value).startswith("f.json: Fused") and "\n" not in str(exc.value)


class Recorder(Invoker):
    def __init__(self):
        self.calls = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


def test_a_fused_group_commits_only_its_last_output_under_the_heads_name(tmp_path):
    """The engine runs a fused IR like any other: one checkpoint, `ckpt/A`, holding C's
    output; a duplicate adopts it and re-plans the last member's edges on it."""
    app = load_app(TEXT)
    wf = colocate.apply(app, [["FindUrl", "ShortenUrl"]]).workflow
    ir = wf.functions["FindUrl"]
    assert [e.target for e in ir.next] == ["CreatePost"]
    assert [v.source for v in ir.next[0].values] == ["UserMention-UnumIndex-0", "FindUrl-UnumIndex-1"]
    assert [v.source for v in wf.functions["UserMention"].next[0].values] == \
        ["UserMention-UnumIndex-0", "FindUrl-UnumIndex-1"]
    fz = Fusion.from_dict(ir.fused)
    runs = []
    handler = compose(fz, {"FindUrl": lambda e, c: runs.append("F") or {"urls": e},
                           "ShortenUrl": lambda e, c: runs.append("S") or {"short": e["urls"]}})
    ds, inv = SqliteDatastore(tmp_path / "db"), Recorder()
    payload = {"Session": "s1", "Data": {"Source": "http", "Value": "t"},
               "Fan-out": {"Index": 1, "Size": 2}, "UnumSession": {"Start": time.time()}}
    eng = Engine(ir, handler, ds, inv, FileBlobStore(tmp_path / "b"))
    assert eng.handle(dict(payload)).status == "ran"
    assert [n for n in ds.dump()["s1"] if n.startswith("ckpt/")] == ["ckpt/FindUrl-UnumIndex-1"]
    assert ds.get("s1", "ckpt/FindUrl-UnumIndex-1")["v"] == {"short": "t"}
    assert eng.handle(dict(payload)).status == "adopted" and runs == ["F", "S"]
    # the other branch completes the fan-in: CreatePost gets the group's checkpoint by name
    ds.set_add("s1", "fanin/CreatePost", "UserMention-UnumIndex-0", 1e12)
    assert eng.handle(dict(payload)).status == "adopted"
    (target, wire), = inv.calls
    assert target == "CreatePost"
    assert wire["Data"]["Value"]["Parts"] == [["UserMention", [0], None], ["FindUrl", [1], None]]


# ---------------------------------------------------------------------------- colocate.apply

@pytest.mark.parametrize("example,fuse,batch,msg", [
    (TEXT, [["Ingest", "UserMention"]], {},
     r"fuse\[0\] \['Ingest', 'UserMention'\]: branch 1 of Ingest starts with FindUrl, not the group's end"),
    (TEXT, [["Ingest", "UserMention", "CreatePost", "Publish"]], {}, r"branch 1 of Ingest starts with FindUrl, not CreatePost"),
    (TEXT, [["UserMention", "CreatePost", "Publish"]], {},
     r"UserMention -> CreatePost \(Fan-in\) is not fusible: a fan-in target is fused only as a group's last"),
    (TEXT, [["FindUrl"]], {}, r"a group has at least 2 functions"),
    (TEXT, [["FindUrl", "Nope"]], {}, r"'Nope' is not a function of the app"),
    (TEXT, [["FindUrl", "ShortenUrl"], ["ShortenUrl", "CreatePost"]], {}, r"ShortenUrl is already in fuse\[0\]"),
    (WORDCOUNT, [["Split", "Mapper"]], {}, r"the Map over Mapper must be followed in the group by its join"),
    (WORDCOUNT, [["Mapper", "Partition", "Reducer"]], {}, r"Mapper -> Partition \(Fan-in\) is not fusible"),
    (TEXT, [["UserMention", "CreatePost"], ["CreatePost", "Publish"], ["Ingest", "FindUrl"]], {}, r"fuse\[2\]"),
    (WORDCOUNT, [], {"Summary": 2}, r"batch.Summary: Summary must be the target of exactly one plain Map edge"),
    (WORDCOUNT, [], {"Reducer": 0}, r"batch.Reducer: 0 must be an integer >= 1"),
    (WORDCOUNT, [["Split", "Mapper", "Partition"]], {"Mapper": 2}, r"batch.Mapper: Mapper runs inside fuse group"),
])
def test_a_plan_the_runtime_cannot_run_is_refused_in_one_line(example, fuse, batch, msg):
    app = load_app(example)
    with pytest.raises(FusionError, match=msg) as exc:
        colocate.apply(app, fuse, batch)
    text = str(exc.value)
    assert text.startswith(str(example / "unumctl.plan.yaml")) and "\n" not in text


def test_a_member_invoked_from_outside_its_group_is_refused():
    """B is reached from A and from C: fusing [A, B] would leave C's invocation of B running
    B alone, with a checkpoint the group's consumers do not read."""
    from runtime.ir import build_workflow
    nodes = {"S": {"Start": True, "Next": [{"Name": "A"}, {"Name": "C"}]}, "A": {"Next": {"Name": "B"}},
             "C": {"Next": {"Name": "B"}}, "B": {}}
    wf = build_workflow((load_function({"Name": n, **d}, f"ir/{n}.yaml"), f"ir/{n}.yaml") for n, d in nodes.items())
    with pytest.raises(FusionError, match=r"plan.yaml: fuse\[0\] \['A', 'B'\]: B is also invoked by C"):
        colocate.apply_workflow(wf, {n: "app.handler" for n in nodes}, [["A", "B"]], {}, "plan.yaml")
    app = load_app(TEXT)
    fused = colocate.apply(app, [["CreatePost", "Publish"]])
    assert fused.workflow.functions["CreatePost"].next == ()
    assert app.workflow.functions["CreatePost"].fused is None  # the loaded app is unchanged


# ---------------------------------------------------------------------------- the plan computes the same

def _run(example, tmp_path, name, fuse, batch):
    from unumctl.local import LocalRunner
    from unumctl.observe import reader
    root = copy_example(example, tmp_path / name)
    app = colocate.apply(load_app(root), fuse, batch)
    value = json.loads((example / "input.json").read_text())
    with LocalRunner(app, quiet=True) as runner:
        item = runner.run(value, session="s1", timeout=120)
        runner.platform.wait_idle()
    events = reader("local", app).history("s1")
    ran = [e for e in events if e.get("kind") == "ran"]
    return item, ran


@pytest.mark.parametrize("example,fuse,batch,in_process", [
    (WORDCOUNT, [["Split", "Mapper", "Partition"]], {"Reducer": 2}, []),
    # CreatePost, the fan-in target, runs in-process in the branch that completes its set
    (TEXT, [["UserMention", "CreatePost"], ["FindUrl", "ShortenUrl", "CreatePost"], ["CreatePost", "Publish"]],
     {}, ["CreatePost"]),
    # the whole Parallel region (and Publish after its join) in one invocation of Ingest
    (TEXT, [["Ingest", "UserMention", "FindUrl", "ShortenUrl", "CreatePost", "Publish"]], {}, []),
], ids=["wordcount", "text-processing", "text-processing-region"])
def test_the_plan_changes_no_result_and_stores_less(example, fuse, batch, in_process, tmp_path):
    """The same example on local with and without a fuse+batch plan: the same result; fewer
    executions and fewer checkpoint bytes written (the history's `checkpoint_bytes`); an
    in-process fan-in target ran without a platform delivery (its request id)."""
    before, ran0 = _run(example, tmp_path, "plain", [], {})
    after, ran1 = _run(example, tmp_path, "planned", fuse, batch)
    assert sorted(e["function"] for e in ran1 if str(e.get("request_id")).startswith("in-process:")) == in_process
    assert before["status"] == after["status"] == "SUCCEEDED", (before, after)
    expected = expected_of(example)
    assert matches_expected(before["v"], expected) and matches_expected(after["v"], expected)
    varies = set(expected.get("$ignore", ())) if isinstance(expected, dict) else set()  # e.g. random short links
    assert {k: v for k, v in after["v"].items() if k not in varies} == \
        {k: v for k, v in before["v"].items() if k not in varies}
    assert len(ran1) < len(ran0)
    stored0 = sum(e.get("checkpoint_bytes") or 0 for e in ran0)
    stored1 = sum(e.get("checkpoint_bytes") or 0 for e in ran1)
    assert stored1 < stored0, (stored0, stored1)


# ---------------------------------------------------------------------------- colocate.choose

@dataclass
class FS:
    """FunctionStats of the issue 25 contract (unumctl.tuning.metrics), built by hand."""

    name: str
    executions: int
    duration_ms: list
    billed_ms: list = field(default_factory=list)
    peak_memory_mb: list = field(default_factory=list)
    input_bytes: list = field(default_factory=list)
    output_bytes: list = field(default_factory=list)
    fanout_width: list = field(default_factory=list)


def wordcount_stats(mapper_ms=30.0, reducer_ms=3.0, reducers=8, sessions=5, big=True):
    out = 120_000 if big else 200
    return [FS("Split", sessions, [20.0] * sessions, output_bytes=[out] * sessions, fanout_width=[4] * sessions),
            FS("Mapper", 4 * sessions, [mapper_ms] * 4 * sessions, output_bytes=[out // 4] * 4 * sessions),
            FS("Partition", sessions, [5.0] * sessions, output_bytes=[out] * sessions,
               fanout_width=[reducers] * sessions),
            FS("Reducer", reducers * sessions, [reducer_ms] * reducers * sessions,
               output_bytes=[out // reducers] * reducers * sessions),
            FS("Summary", sessions, [10.0] * sessions, output_bytes=[20_000] * sessions)]


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_choose_fuses_short_tasks_with_large_outputs(cloud):
    """Seed 004 Algorithm 1: short Map regions whose intermediate values are large run in
    one invocation; the plan it gives is one colocate.apply accepts."""
    app = load_app(WORDCOUNT)
    fuse, batch, reasons = colocate.choose(app, wordcount_stats(), cloud=cloud, allow_serialising=True)
    assert ["Split", "Mapper", "Partition"] == fuse[0][:3], fuse
    assert all("saves $" in r for k, r in reasons.items() if "+" in k)
    colocate.apply(app, fuse, batch)


def test_choose_does_not_serialise_a_maps_branches_unless_allowed():
    """The same statistics, without allow_serialising: neither Map region is fused nor its
    items batched (each would run branches one after another); the reason gives the
    critical path's change at the measured width and at the declared expected_width, which
    grows with the width (the items in a row) while the measured one shrinks (hops saved)."""
    import re
    app = load_app(WORDCOUNT)
    assert app.manifest.functions["Split"].expected_width == 64
    fuse, batch, reasons = colocate.choose(app, wordcount_stats(), cloud="aws")
    assert not any({"Mapper", "Reducer"} & set(g) for g in fuse) and batch == {}, (fuse, batch)
    why = reasons["Split"]
    assert why.startswith("not fused ['Split', 'Mapper', 'Partition'] (it serialises the branches"), why
    measured, declared = (float(x) for x in re.findall(r"by ([+-][\d.]+) ms at the (?:measured|declared)", why))
    assert declared > measured, why
    assert "functions.Split.expected_width" in why
    # the same app without the declared width says how to declare it
    app.manifest.functions["Split"].expected_width = None
    assert "set functions.Split.expected_width" in colocate.choose(app, wordcount_stats(), cloud="aws")[2]["Split"]


def test_choose_keeps_long_items_parallel_and_batches_tiny_ones():
    """Mappers of 2 s each would add 6 s to the critical path in one invocation (bound 1.1x):
    not fused, with the reason; 200 Reducer items of 3 ms each are batched (k bounded by the
    critical path), not fused (600 ms in a row)."""
    app = load_app(WORDCOUNT)
    fuse, batch, reasons = colocate.choose(app, wordcount_stats(mapper_ms=2000.0, reducers=200), "aws",
                                           allow_serialising=True)
    assert not any("Mapper" in g for g in fuse), fuse
    assert "critical path" in reasons["Split"]
    assert set(batch) == {"Reducer"} and 2 <= batch["Reducer"] <= 200
    colocate.apply(app, fuse, batch)


def test_choose_does_not_fuse_when_the_loss_beats_the_saving():
    """Tiny values and a member that would run at a much larger memory size: the bigger
    memory costs more than the invocation and the storage it saves."""
    app = load_app(TEXT)
    small = [FS(n, 5, [5.0] * 5, output_bytes=[100] * 5) for n in app.workflow.functions]
    fuse, _, reasons = colocate.choose(app, small, "aws", memory={"ShortenUrl": 128, "FindUrl": 128})
    assert any(g[g.index("FindUrl"):][:2] == ["FindUrl", "ShortenUrl"] for g in fuse if "FindUrl" in g), fuse
    heavy = [FS(n, 5, [5.0 if n != "FindUrl" else 3000.0] * 5, output_bytes=[100] * 5)
             for n in app.workflow.functions]
    fuse, _, reasons = colocate.choose(app, heavy, "aws", memory={"ShortenUrl": 3008, "FindUrl": 128})
    assert not any("ShortenUrl" in g for g in fuse), fuse
    assert "loss" in reasons["FindUrl"] and "loss" in reasons["Ingest"]  # the chain link, the region


def test_the_explorer_runs_the_fused_fanin_target_in_process():
    """tools/explorer fused-fanin-target: Join is never delivered by the platform model; the
    branch that completes its set runs it (tests/tools/test_explorer.py explores its schedules)."""
    from tools.explorer.search import run_schedule
    from tools.explorer.workflows import all_workflows
    h = run_schedule(all_workflows()["fused-fanin-target"], [])
    assert h.result()["status"] == "SUCCEEDED" and h.result()["instance"] == "Join"
    delivered = [h.describe(a) for a, _ in h.world.log if a[0] in ("deliver", "dup")]
    assert delivered and not any("Join" in d for d in delivered), delivered
    assert not h.checker.violations


def test_gcp_pricing_uses_the_adapters_inline_limit():
    """unumctl/gcp/tuning.py keeps the GCP adapter's inline limit without importing the SDK;
    it must be the adapter's own value (runtime/gcp/datastore.py)."""
    gcp = pytest.importorskip("runtime.gcp.datastore", reason="google-cloud-firestore not installed")
    from unumctl.gcp.tuning import FIRESTORE_INLINE_BYTES
    assert FIRESTORE_INLINE_BYTES == gcp.FirestoreDatastore.max_item_bytes


def test_members_with_same_named_sibling_modules_each_get_their_own(tmp_path, monkeypatch):
    """Two fused members whose `app.py` both `import helper` (and a head that imported its own
    `helper` first) each run with their own directory's helper (runtime.fusion.load_member);
    the head's module is back in place afterwards. Fails when the members share the first
    `helper` imported (the campaign's probes, every `app.handler` importing `app`, did)."""
    import sys as _sys

    from runtime.fusion import Step, load_member
    for who in ("B", "C"):
        d = tmp_path / "unum_fused" / who
        d.mkdir(parents=True)
        (d / "helper.py").write_text(f"NAME = {who!r}\n")
        (d / "app.py").write_text("import helper\n\ndef handler(event, context):\n    return helper.NAME\n")
    (tmp_path / "helper.py").write_text("NAME = 'head'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(_sys.modules, "helper", raising=False)
    import helper  # the head's, imported first
    b = load_member(tmp_path, Step("B", "app.handler", "scalar"))
    c = load_member(tmp_path, Step("C", "app.handler", "scalar"))
    assert (b(None, None), c(None, None)) == ("B", "C")
    assert _sys.modules["helper"] is helper and helper.NAME == "head"
    monkeypatch.delitem(_sys.modules, "helper")
