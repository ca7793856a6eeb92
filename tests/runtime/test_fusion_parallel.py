"""Issue 25: fusing a Parallel region (a static Scalar fan-out, its branches and their fan-in)
into one invocation: runtime/fusion.py (`branch` steps), unumctl/tuning/colocate.py
(`_parallel`, `choose`), docs/fusion.md. The example run with the whole-region plan is in
tests/runtime/test_fusion.py (test_the_plan_changes_no_result_and_stores_less); the explorer's
fused-parallel-region workflow and its mutant in tests/tools/test_explorer.py."""

import json
from dataclasses import replace

import pytest

from runtime.engine import UserContext
from runtime.errors import IRError
from runtime.fusion import Fusion, Step, compose
from runtime.ir import Workflow, build_workflow, load_function
from unumctl.pipeline import load as load_app
from unumctl.tuning import colocate
from unumctl.tuning.colocate import FusionError

from unumctl_testing.apps import ROOT, copy_example
from tests.runtime.test_fusion import FS

TEXT = ROOT / "examples" / "text-processing"
REGION = ["Ingest", "UserMention", "FindUrl", "ShortenUrl", "CreatePost"]


def _ctx(fn="S"):
    return UserContext("s", fn, fn, [], [], 0)


def test_compose_runs_each_branch_with_its_index_then_the_join_on_the_tails_in_order():
    """Branch i's members see index i and size n (and their own instance name); the join gets
    [tail_0, tail_1, ...] with the source's context; each branch gets its own copy of the
    source's output (branch 0 mutating it changes nothing for branch 1)."""
    seen = []

    def h(name):
        def f(e, c):
            seen.append((name, c.instance, c.index, c.size))
            if isinstance(e, dict):
                e["touched"] = name  # a member mutating its input
            return {"by": name, "in": e}
        return f
    fz = Fusion((Step("S", "s.h", "first"), Step("A", "a.h", "branch"), Step("B", "b.h", "branch"),
                 Step("B2", "b2.h", "scalar"), Step("J", "j.h", "join"), Step("E", "e.h", "scalar")))
    assert Fusion.from_dict(fz.to_dict()) == fz
    out = compose(fz, {"S": lambda e, c: {"x": e}, "A": h("A"), "B": h("B"), "B2": h("B2"),
                       "J": lambda e, c: seen.append(("J", c.instance, c.index, c.size)) or e,
                       "E": lambda e, c: e})(1, _ctx())
    assert seen == [("A", "A-UnumIndex-0", 0, 2), ("B", "B-UnumIndex-1", 1, 2),
                    ("B2", "B2-UnumIndex-1", 1, 2), ("J", "J", None, None)]
    assert out == [{"by": "A", "in": {"x": 1, "touched": "A"}},
                   {"by": "B2", "in": {"by": "B", "in": {"x": 1, "touched": "B"}, "touched": "B2"}}]


def test_each_branch_gets_its_own_copy_of_the_regions_input():
    """issue 33: branch heads that change their input in place (append to a list, set a key
    of their own): no branch sees another's change, as with unfused branches, each of which
    decodes its own payload (mutant fused-parallel-shared-input hands every branch the object
    branch 0 got)."""
    got = {}

    def h(name):
        def f(e, c):
            got[name] = json.loads(json.dumps(e))
            e["log"].append(name)
            e[name] = True
            return name
        return f
    fz = Fusion((Step("S", "s.h", "first"), Step("A", "a.h", "branch"), Step("B", "b.h", "branch"),
                 Step("C", "c.h", "branch"), Step("J", "j.h", "join")))
    out = compose(fz, {"S": lambda e, c: {"log": []}, "A": h("A"), "B": h("B"), "C": h("C"),
                       "J": lambda e, c: e})(None, _ctx())
    assert got == {"A": {"log": []}, "B": {"log": []}, "C": {"log": []}}
    assert out == ["A", "B", "C"]


@pytest.mark.parametrize("kinds,msg", [
    (["first", "branch", "join"], r"Steps\[1\]: a parallel region is at least 2 branches"),
    (["first", "branch", "branch", "scalar"], r"Steps\[1\]: a parallel region is at least 2 branches"),
    (["first", "branch", "map", "join"], r"Steps\[1\]: a parallel region"),
    (["first", "scalar", "join"], r"Steps\[2\]: a join step ends a map step or a parallel region"),
])
def test_a_bad_parallel_region_is_one_line_ir_error(kinds, msg):
    steps = [{"Function": f"F{i}", "Handler": "app.h", "Kind": k} for i, k in enumerate(kinds)]
    with pytest.raises(IRError, match=msg) as exc:
        load_function({"Name": "F0", "Fused": {"Steps": steps}}, "f.json")
    assert str(exc.value).startswith("f.json: Fused.Steps") and "\n" not in str(exc.value)


# ---------------------------------------------------------------------------- colocate.apply

def _wf(nodes):
    return build_workflow((load_function({"Name": n, **d}, f"ir/{n}.yaml"), f"ir/{n}.yaml")
                          for n, d in nodes.items())


def _fanin(values, **kw):
    return {"Next": {"Name": "J", "Type": "Fan-in", "Values": values, "Payload Modifiers": ["Pop"], **kw}}


def _region(**over):
    nodes = {"S": {"Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]},
             "A": _fanin(["A-UnumIndex-0", "B-UnumIndex-1"]), "B": _fanin(["A-UnumIndex-0", "B-UnumIndex-1"]),
             "J": {}}
    nodes.update(over)
    return nodes


@pytest.mark.parametrize("nodes,group,msg", [
    # Values not the branch tails in branch order
    (_region(A=_fanin(["B-UnumIndex-1", "A-UnumIndex-0"]), B=_fanin(["B-UnumIndex-1", "A-UnumIndex-0"])),
     ["S", "A", "B", "J"], r"A's Fan-in to J must have Values \['A-UnumIndex-0', 'B-UnumIndex-1'\]"),
    # a conditional branch edge
    (_region(S={"Start": True, "Next": [{"Name": "A", "Conditional": "$out != 0"}, {"Name": "B"}]}),
     ["S", "A", "B", "J"], r"S fans out to \['A', 'B'\] with an edge that is not an unconditional Scalar"),
    # a branch edge with Payload Modifiers, or a Delay
    (_region(S={"Start": True, "Next": [{"Name": "A"}, {"Name": "B", "Payload Modifiers": ["$0=$0+1"]}]}),
     ["S", "A", "B", "J"], r"S fans out to \['A', 'B'\] with an edge that is not an unconditional Scalar"),
    (_region(S={"Start": True, "Next": [{"Name": "A", "Delay": "1"}, {"Name": "B"}]}),
     ["S", "A", "B", "J"], r"S fans out to \['A', 'B'\] with an edge that is not an unconditional Scalar"),
    # a branch that does not end in the Fan-in to J
    (_region(B={"Next": {"Name": "K", "Type": "Fan-in", "Values": ["B-UnumIndex-1"], "Payload Modifiers": ["Pop"]}},
             K={}),
     ["S", "A", "B", "J"], r"branch 1 of S ends in the Fan-in to K, branch 0 in the one to J"),
    # the modifiers of the Fan-in
    (_region(A={"Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"]}},
             B={"Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"]}}),
     ["S", "A", "B", "J"], r"and Payload Modifiers \['Pop'\], nothing else"),
    # the join left out: the region is fused whole
    (_region(), ["S", "A", "B"], r"the branches of S join in J, which must follow them in the group"),
    # a branch left out
    (_region(), ["S", "A", "J"], r"branch 1 of S starts with B, not "),
])
def test_a_region_the_runtime_cannot_run_is_refused_in_one_line(nodes, group, msg):
    with pytest.raises(FusionError, match=msg) as exc:
        colocate.apply_workflow(_wf(nodes), {n: "app.handler" for n in nodes}, [group], {}, "plan.yaml")
    text = str(exc.value)
    assert text.startswith(f"plan.yaml: fuse[0] {group}") and "\n" not in text


def test_a_branch_member_invoked_or_named_from_outside_or_a_wrapper_is_refused():
    """X (a branch of Root, beside the region's source S) invokes the branch's second member
    B2 as well: fused, X's invocation would run B2 alone; Y's Fan-in names a branch member
    whose value is no longer stored. A group mixing compiled Step Functions functions (a
    Wrapper) with plain ones is refused (compiled ones fuse by unumctl.tuning.asl_fusion)."""
    vals = ["A-UnumIndex-0", "B2-UnumIndex-1"]
    nodes = {"Root": {"Start": True, "Next": {"Name": "S"}},
             "S": {"Next": [{"Name": "A"}, {"Name": "B"}, {"Name": "X"}]},
             "A": _fanin(vals), "B": {"Next": {"Name": "B2"}}, "B2": _fanin(vals), "X": {"Next": {"Name": "B2"}},
             "J": {}}
    handlers = {n: "app.handler" for n in nodes}
    nodes["S"] = {"Next": [{"Name": "A"}, {"Name": "B"}]}
    nodes["Root"] = {"Start": True, "Next": [{"Name": "S"}, {"Name": "X"}]}
    wf = _wf(nodes)
    with pytest.raises(FusionError, match=r"fuse\[0\] .*: B2 is also invoked by X; only a function reached"):
        colocate.apply_workflow(wf, handlers, [["S", "A", "B", "B2", "J"]], {}, "plan.yaml")
    # Y's fan-in names the branch member A, whose value the fused group no longer stores
    nodes = _region(Root={"Start": True, "Next": [{"Name": "S"}, {"Name": "Y"}]},
                    S={"Next": [{"Name": "A"}, {"Name": "B"}]}, Z={},
                    Y={"Next": {"Name": "Z", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "Y-UnumIndex-1"],
                                "Payload Modifiers": ["Pop"]}})
    with pytest.raises(FusionError, match=r"fuse\[0\] \['S', 'A', 'B', 'J'\]: A runs in a branch inside "
                                          r"the group, but Y's Fan-in names it"):
        colocate.apply_workflow(_wf(nodes), {n: "app.handler" for n in nodes}, [["S", "A", "B", "J"]], {},
                                "plan.yaml")
    funcs = dict(_wf(_region()).functions)
    funcs["B"] = replace(funcs["B"], wrapper={"Kind": "asl"})
    with pytest.raises(FusionError, match=r"fuse\[0\] .*: S is not compiled from the state machine; a group of compiled "
                       r"functions holds compiled functions only"):
        colocate.apply_workflow(Workflow(funcs), handlers, [["S", "A", "B", "J"]], {}, "plan.yaml")


def test_the_whole_text_processing_region_becomes_one_fused_function():
    app = load_app(TEXT)
    wf = colocate.apply(app, [REGION + ["Publish"]]).workflow
    ingest = wf.functions["Ingest"]
    assert ingest.next == ()  # the group ends the session: Publish's (no) edges
    assert [(s["Function"], s["Kind"]) for s in ingest.fused["Steps"]] == [
        ("Ingest", "first"), ("UserMention", "branch"), ("FindUrl", "branch"), ("ShortenUrl", "scalar"),
        ("CreatePost", "join"), ("Publish", "scalar")]
    # fused up to the join only: the group goes on with CreatePost's edge, and CreatePost is not
    # mistaken for a fan-in target run in-process
    wf = colocate.apply(app, [REGION]).workflow
    assert [e.target for e in wf.functions["Ingest"].next] == ["Publish"]
    assert "InProcess" not in wf.functions["Ingest"].fused


# ---------------------------------------------------------------------------- the same contexts fused

RECORDER = '''
def handler(event, context):
    """Every member appends what its context says to the list it got (a join: the lists)."""
    got = [x for part in event for x in part["seen"]] if isinstance(event, list) else event.get("seen", [])
    me = [context.function, context.instance, context.index, context.size, list(context.indexes),
          list(context.sizes), context.iteration, list(context.bases)]
    return {"seen": got + [me]}
'''


def test_each_member_sees_the_same_context_fused_and_unfused(tmp_path):
    """text-processing with every handler replaced by one recording its context (function,
    instance, index, size, indexes, sizes, iteration, frame bases), run on local without and with the
    whole-region plan: the same records, in the same order (branch 0 before branch 1, as the
    join's input lists them). Fails when compose gives a branch no index, or the join the
    branch's context."""
    from unumctl.local import LocalRunner
    records = []
    for name, fuse in (("plain", []), ("fused", [REGION + ["Publish"]])):
        root = copy_example(TEXT, tmp_path / name)
        for code in (root / "functions").iterdir():
            (code / "app.py").write_text(RECORDER)
        app = colocate.apply(load_app(root), fuse)
        with LocalRunner(app, quiet=True) as runner:
            item = runner.run({"text": "hi"}, session="s1", timeout=60)
        assert item["status"] == "SUCCEEDED", item
        records.append(item["v"]["seen"])
    plain, fused = records
    assert plain[1] == ["UserMention", "UserMention-UnumIndex-0", 0, 2, [0], [2], 0, [0]], plain
    assert fused == plain
    assert [r[0] for r in fused] == ["Ingest", "UserMention", "Ingest", "FindUrl", "ShortenUrl",
                                     "CreatePost", "Publish"]


# ---------------------------------------------------------------------------- colocate.choose

def text_stats(ms=2.0, out=300, sessions=3):
    names = ["Ingest", "UserMention", "FindUrl", "ShortenUrl", "CreatePost", "Publish"]
    return [FS(n, sessions, [ms] * sessions, output_bytes=[out] * sessions) for n in names]


def test_choose_fuses_the_whole_parallel_region_of_short_branches():
    """Short members: the region's branches in a row add less than the hops they remove, and
    the invocations, checkpoints and fan-in set adds saved beat no loss (same memory)."""
    app = load_app(TEXT)
    fuse, batch, reasons = colocate.choose(app, text_stats(), cloud="aws", allow_serialising=True)
    assert fuse == [REGION + ["Publish"]], (fuse, reasons)
    assert "Ingest+UserMention+FindUrl+ShortenUrl+CreatePost" in reasons["+".join(REGION + ["Publish"])]
    colocate.apply(app, fuse, batch)


def test_choose_keeps_long_branches_parallel():
    """Branches of 2 s each: run one after another they add 2 s to a ~4 s critical path
    (bound 1.1x), so the region is not fused (the chain links may be), with the reason."""
    app = load_app(TEXT)
    stats = text_stats()
    for s in stats:
        if s.name in ("UserMention", "FindUrl"):
            s.duration_ms = [2000.0] * s.executions
    fuse, _, reasons = colocate.choose(app, stats, cloud="aws")
    assert not any("UserMention" in g for g in fuse), fuse
    assert "critical path" in reasons["Ingest"], reasons


def test_choose_keeps_a_parallel_region_unless_serialising_is_allowed():
    """The short branches of text_stats would be fused (above) only with allow_serialising:
    by default the region's branches stay parallel and the reason says what fusing them
    would do (a static fan-out: the same at any scale) and how to accept it."""
    app = load_app(TEXT)
    fuse, _, reasons = colocate.choose(app, text_stats(), cloud="aws")
    assert not any("UserMention" in g and "FindUrl" in g for g in fuse), fuse
    assert reasons["Ingest"].startswith("not fused ['Ingest', 'UserMention', 'FindUrl'"), reasons["Ingest"]
    assert "--allow-serialising" in reasons["Ingest"] and "the same at any scale" in reasons["Ingest"]
