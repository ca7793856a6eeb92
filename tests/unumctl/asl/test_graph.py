"""`unumctl graph` of a Step Functions app draws the state machine as written (issue 9 item
7): every state, Choice conditions and Catch edges as labels, Map/Parallel as nested boxes,
and the compiled function each state runs in; `--ir` still draws the IR."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from unumctl.asl.graph import rule_text, state_graph, to_dot, to_mermaid
from unumctl.manifest import load_manifest

from tests.graph_text import mermaid_edges, mermaid_decode

ROOT = Path(__file__).resolve().parents[3]
NODE = re.compile(r'^\s*(n\d+)\W{1,3}"(.*?)<br/>(\w+)(?: · (.*?))?(?:<br/>.*)?"\W{1,3}$')


def cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def unescape(text: str) -> str:
    return mermaid_decode(text)  # every entity code (#quot;, #91;...: unumctl.graph.mermaid_text)


def parse_mermaid(text: str):
    """nodes {id: (name, type, runs)}, parent box label of every node, edges (src, arrow, label, dst)."""
    nodes, parents, edges, stack = {}, {}, [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("subgraph "):
            stack.append(re.search(r'\["(.*)"\]', s).group(1))
        elif s == "end":
            stack.pop()
        elif m := NODE.match(line):
            nodes[m.group(1)] = (unescape(m.group(2)), m.group(3), unescape(m.group(4) or ""))
            parents[m.group(1)] = list(stack)
        elif m := re.match(r'^(\w+) (-->|-\.->|==>)(?:\|"(.*?)"\|)? (\w+)$', s):
            edges.append((m.group(1), m.group(2), unescape(m.group(3) or ""), m.group(4)))
    assert not stack
    return nodes, parents, edges


def all_states(doc: dict) -> list[tuple[str, str]]:
    out = []
    for name, st in doc["States"].items():
        out.append((name, st["Type"]))
        for b in ([st.get("ItemProcessor") or st.get("Iterator")] if st["Type"] == "Map" else
                  st.get("Branches", [])):
            out += all_states(b)
    return out


def test_orders_graph_names_every_state_the_choice_labels_and_the_nesting():
    code, out, err = cli("graph", "examples/orders-sfn")
    assert code == 0, err
    nodes, parents, edges = parse_mermaid(out)
    sm = json.loads((ROOT / "examples/orders-sfn/statemachine.json").read_text())
    assert sorted((n, t) for n, t, _ in nodes.values()) == sorted(all_states(sm))
    by_name = {n: i for i, (n, _, _) in nodes.items()}
    labels = {(nodes[s][0] if s in nodes else s, lab, nodes[d][0] if d in nodes else d) for s, _, lab, d in edges}
    assert ("CheckInput", "IsPresent($.orders[0])", "ProcessOrders") in labels
    assert ("CheckInput", "default", "NoOrders") in labels
    assert ("NeedsReview", "($.order.amount > 1000) and (not ($.order.vip == true))", "ManualReview") in labels
    assert ("Validate", "catch InvalidOrder", "Rejected") in labels
    assert ("Charge", "catch States.ALL", "Declined") in labels
    assert ("ProcessOrders", "each item", "Validate") in labels
    assert ("ProcessOrders", "", "Summarize") in labels and ("Summarize", "", "__end") in labels
    # nesting: the Map's node and its item processor's states sit inside the Map's box
    assert parents[by_name["ProcessOrders"]] == ["Map ProcessOrders"]
    for inner in ("Validate", "NeedsReview", "ManualReview", "Charge", "Charged", "Declined", "Rejected"):
        assert parents[by_name[inner]][0] == "Map ProcessOrders"
        assert parents[by_name[inner]][1].startswith("ItemProcessor")
    for outer in ("CheckInput", "NoOrders", "Summarize"):
        assert parents[by_name[outer]] == []
    # where each state runs, from the compiler's output
    runs = {n: r for n, _, r in nodes.values()}
    assert runs["CheckInput"] == "in Start" and runs["NoOrders"] == "in Start"
    assert runs["Validate"] == "in Validate" and runs["NeedsReview"] == "in Validate"
    assert runs["Charged"] == "in Charge"
    assert runs["ProcessOrders"] == "fan-out in Start · join in Summarize"
    assert "%% function Start: synthesized" in out and "%% function Charge: code of Charge" in out


def test_ir_flag_still_draws_the_compiled_functions():
    code, out, err = cli("graph", "examples/orders-sfn", "--ir")
    assert code == 0, err
    assert out.startswith("flowchart TD") and "subgraph" not in out
    assert '(["Start"])' in out and '["Validate"]' in out
    assert any(src == "Start" and arrow == "==>" for src, arrow, _, _ in mermaid_edges(out))


def test_every_sfn_example_draws_every_state_in_both_formats():
    for d in sorted(ROOT.glob("examples/*-sfn")):
        sm = json.loads((d / "statemachine.json").read_text())
        g = state_graph(d, load_manifest(d))
        nodes, _, _ = parse_mermaid(to_mermaid(g))
        assert sorted((n, t) for n, t, _ in nodes.values()) == sorted(all_states(sm)), d.name
        dot = to_dot(g)
        assert dot.startswith("digraph statemachine {") and dot.rstrip().endswith("}")
        assert dot.count("{") == dot.count("}")
        for name, _ in all_states(sm):
            assert f'label="{name}\\n' in dot, (d.name, name)


def test_parallel_wait_and_nested_map_are_drawn(tmp_path):
    arn = "arn:aws:lambda:us-east-1:000000000000:function:"
    sm = {"StartAt": "Prep", "States": {
        "Prep": {"Type": "Pass", "Next": "Both"},
        "Both": {"Type": "Parallel", "Next": "Pause", "Catch": [
            {"ErrorEquals": ["Boom", "States.Timeout"], "Next": "Oops"}], "Branches": [
            {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": arn + "Work", "End": True}}},
            {"StartAt": "Each", "States": {"Each": {
                "Type": "Map", "End": True, "Iterator": {"StartAt": "Leaf", "States": {
                    "Leaf": {"Type": "Pass", "End": True}}}}}}]},
        "Pause": {"Type": "Wait", "Seconds": 5, "Next": "Done"},
        "Done": {"Type": "Succeed"},
        "Oops": {"Type": "Fail", "Error": "Failed"}}}
    (tmp_path / "functions" / "work").mkdir(parents=True)
    (tmp_path / "functions" / "work" / "app.py").write_text("def handler(e, c):\n    return e\n")
    (tmp_path / "sm.json").write_text(json.dumps(sm))
    (tmp_path / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "graph-test", "workflow": {"stepfunctions": "sm.json"},
        "functions": {"Work": {"code": "functions/work"}}}))
    g = state_graph(tmp_path, load_manifest(tmp_path))
    text = to_mermaid(g)
    nodes, parents, edges = parse_mermaid(text)
    by_name = {n: i for i, (n, _, _) in nodes.items()}
    assert sorted(n for n, _, _ in nodes.values()) == ["Both", "Done", "Each", "Leaf", "Oops", "Pause", "Prep", "Work"]
    assert parents[by_name["Work"]] == ["Parallel Both", "branch 0"]
    assert parents[by_name["Each"]][0::2] == ["Parallel Both", "Map Each"]
    assert parents[by_name["Each"]][1].startswith("branch 1")
    assert parents[by_name["Leaf"]][:3] == parents[by_name["Each"]]
    assert parents[by_name["Leaf"]][3].startswith("Iterator")
    named = {(nodes[s][0] if s in nodes else s, lab, nodes[d][0] if d in nodes else d) for s, _, lab, d in edges}
    assert ("Both", "branch 0", "Work") in named and ("Both", "branch 1", "Each") in named
    assert ("Both", "catch Boom, States.Timeout", "Oops") in named
    assert ("Each", "each item", "Leaf") in named
    assert ("Done", "", "__end") in named
    runs = {n: r for n, _, r in nodes.values()}
    assert "after timer in Pause" in runs["Pause"]
    assert runs["Work"] == "in Work"
    dot = to_dot(g)
    assert dot.count("subgraph \"cluster_") == 5  # Both, its 2 branches, Each, its iterator


def test_rule_text_covers_operators():
    assert rule_text({"Variable": "$.a", "StringEquals": "x"}) == '$.a == "x"'
    assert rule_text({"Variable": "$.a", "NumericLessThanEqualsPath": "$.b"}) == "$.a <= $.b"
    assert rule_text({"Variable": "$.t", "TimestampGreaterThan": "2026-01-01T00:00:00Z"}) == \
        '$.t > "2026-01-01T00:00:00Z"'
    assert rule_text({"Variable": "$.a", "IsNull": False}) == "not IsNull($.a)"
    assert rule_text({"Variable": "$.s", "StringMatches": "log-*"}) == '$.s matches "log-*"'
    assert rule_text({"Or": [{"Variable": "$.a", "BooleanEquals": True},
                             {"Not": {"Variable": "$.b", "IsPresent": True}}]}) == \
        "($.a == true) or (not IsPresent($.b))"
    assert rule_text({"Condition": "{% $states.input.n > 1 %}"}) == "{% $states.input.n > 1 %}"


def test_state_names_with_quotes_and_html_characters_survive_both_formats(tmp_path):
    odd = 'Say "hi" & <go> | now'
    sm = {"StartAt": odd, "States": {
        odd: {"Type": "Pass", "Next": "Pick"},
        "Pick": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEquals": 'a"b', "Next": "End"}],
                 "Default": "End"},
        "End": {"Type": "Succeed"}}}
    (tmp_path / "sm.json").write_text(json.dumps(sm))
    (tmp_path / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "graph-odd", "workflow": {"stepfunctions": "sm.json"}, "functions": {}}))
    g = state_graph(tmp_path, load_manifest(tmp_path))
    nodes, _, edges = parse_mermaid(to_mermaid(g))
    assert sorted(n for n, _, _ in nodes.values()) == sorted([odd, "Pick", "End"])
    assert any(lab == '$.x == "a\\"b"' for _, _, lab, _ in edges)
    dot = to_dot(g)
    assert 'label="Say \\"hi\\" & <go> | now\\nPass' in dot


def test_distributed_map_is_drawn_as_one_with_its_reader(tmp_path):
    """A Distributed Map's box says so, and its item edge names the S3 reader and batching."""
    from unumctl_testing.apps import make_sfn_app, sfn_task
    machine = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}},
        "ItemBatcher": {"MaxItemsPerBatch": 3},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "Work",
                          "States": {"Work": sfn_task("Work")}}, "End": True}}}
    root = make_sfn_app(tmp_path / "app", machine, {"Work": "def handler(e, c):\n    return e\n"}, "dm-graph")
    text = to_mermaid(state_graph(root, load_manifest(root)))
    assert '["Distributed Map M"]' in text and '|"each batch of listObjectsV2"|' in text, text


def _scope_name_machines() -> list[tuple[str, str, dict]]:
    """(state name, its character, machine) of a Map or Parallel state whose name holds a
    scope-path separator, at the top and nested in a Map's item processor."""
    from unumctl_testing.apps import sfn_task
    work = {"StartAt": "Work", "States": {"Work": sfn_task("Work")}}
    return [
        ("Each#1", "#", {"StartAt": "Each#1", "States": {"Each#1": {
            "Type": "Map", "End": True, "ItemProcessor": work}}}),
        ("Each/1", "/", {"StartAt": "Each/1", "States": {"Each/1": {
            "Type": "Map", "End": True, "ItemProcessor": work}}}),
        ("P#0", "#", {"StartAt": "Outer", "States": {"Outer": {
            "Type": "Map", "End": True, "ItemProcessor": {"StartAt": "P#0", "States": {"P#0": {
                "Type": "Parallel", "End": True, "Branches": [work, work]}}}}}}),
    ]


def test_separator_in_a_map_or_parallel_name_is_one_line_not_a_traceback(tmp_path):
    """`#` / `/` in a Map or Parallel state's name (which unumctl's scope paths would misread,
    runtime.asl.machine.scope_states) is refused by graph and validate with one line naming
    the state, the character and a rename; on main both died with a KeyError traceback."""
    from unumctl_testing.apps import make_sfn_app
    for k, (name, ch, sm) in enumerate(_scope_name_machines()):
        root = make_sfn_app(tmp_path / f"app{k}", sm, {"Work": "def handler(e, c):\n    return e\n"}, f"sep{k}")
        for cmd in ("graph", "validate"):
            rc, out, err = cli(cmd, str(root))
            assert rc != 0 and not out and "Traceback" not in err, (cmd, name, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1, (cmd, name, err)
            assert f".{name}: a " in lines[0] and f"cannot contain {ch!r}" in lines[0], lines[0]
            assert "rename the state, e.g. to '" + name.replace(ch, "_") + "'" in lines[0], lines[0]


def test_separator_in_other_state_names_inside_a_map_is_accepted_and_runs(tmp_path):
    """Task and Pass states inside Map and Parallel scopes may hold `#` and `/` (Step
    Functions allows them; they never enter a scope path): graph draws them, validate says
    OK and a local invoke runs them."""
    from unumctl_testing.apps import make_sfn_app, sfn_task
    sm = {"StartAt": "Each", "States": {"Each": {"Type": "Map", "End": True, "ItemProcessor": {
        "StartAt": "Le#af", "States": {
            "Le#af": sfn_task("Work", "Both"),
            "Both": {"Type": "Parallel", "End": True, "Branches": [
                {"StartAt": "a/b", "States": {"a/b": {"Type": "Pass", "End": True}}},
                {"StartAt": "c#d/e", "States": {"c#d/e": sfn_task("Work")}}]}}}}}}
    root = make_sfn_app(tmp_path / "app", sm, {"Work": "def handler(e, c):\n    return e * 10\n"}, "sep-ok")
    rc, out, err = cli("graph", str(root))
    assert rc == 0, err
    nodes, _, _ = parse_mermaid(out)
    assert sorted(n for n, _, _ in nodes.values()) == ["Both", "Each", "Le#af", "a/b", "c#d/e"]
    rc, out, err = cli("validate", str(root))
    assert rc == 0 and err.rstrip().endswith(": OK"), (out, err)  # the summary goes to stderr
    (tmp_path / "in.json").write_text("[1, 2]")
    rc, out, err = cli("invoke", str(root), "--data", str(tmp_path / "in.json"))
    assert rc == 0, err
    assert json.loads(out) == [[10, 100], [20, 200]]
