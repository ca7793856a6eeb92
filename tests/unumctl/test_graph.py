"""`unumctl graph` escapes every name and label it writes (issue 33 item 8): node ids come
from a safe scheme (`n0`, `n1`...), never from a name, and each label is quoted with its
text escaped for Mermaid (entity codes) or DOT (quoted-string escapes). Each output is read
back with tests/graph_text.py, whose grammar admits one statement per line: a newline that
let a `click ... href "javascript:..."` line out, a quote that closed a label early, or a
`]` / `-->` read as syntax fails it; the label's text is checked to survive whole."""

from __future__ import annotations

import json
import re

import yaml

from runtime.ir import build_workflow, load_function
from unumctl.asl.graph import state_graph
from unumctl.asl.graph import to_dot as asl_dot
from unumctl.asl.graph import to_mermaid as asl_mermaid
from unumctl.graph import to_dot, to_mermaid
from unumctl.manifest import load_manifest

from tests.graph_text import dot_decode, mermaid_decode, read_dot, read_mermaid

CLICK = 'click X href "javascript:alert(1)"'
# (a Map or Parallel state's name holds no `#` or `/`: the compiler's scope paths use them)
HOSTILE_NAMES = [f"A\n{CLICK} #quot;", 'B"] --> C["x', "C;`md`|{d}|%%{init: {}}%%", "D\r\nE\u2028F\\N\t"]


def test_text_escapes_round_trip():
    """mermaid_text / dot_text write no quote, no line break and nothing that decodes to
    another text: decoding gives the text back (DOT: each line break as one newline)."""
    from unumctl.graph import dot_text, mermaid_text
    for text in HOSTILE_NAMES + ["plain name", "株 · ünïcode", "#35;", "\\n", ""]:
        m = mermaid_text(text)
        assert '"' not in m and not set(m) & set("\n\r\u2028\u2029[]{}`<>|&") and mermaid_decode(m) == text
        assert re.fullmatch(r"(?:[^#;]|#(?:\d+|[a-z]+);)*", m), m  # every # and ; an entity's
        d = dot_text(text)
        assert "\n" not in d and "\r" not in d and '"' not in d.replace('\\"', "")
        expected = text.replace("\r\n", "\n").replace("\u2028", "\n").replace("\t", " ")
        assert dot_decode(d) == expected, (text, d)


def test_ir_graph_ids_are_safe_and_labels_are_one_statement():
    """IR graph: functions named like Mermaid keywords (`click`, `end`) and a Conditional
    whose text holds newlines, a `click ... href "javascript:..."` line, quotes and `-->`:
    every line of both formats is one statement, ids are n0, n1..., names and the edge
    label come back whole (before, `end([end])` and a `click B href ...` line were written)."""
    cond = f"$out == '''x\n{CLICK.replace('X', 'B')}\nA --> B ] # ; `'''"
    fns = [load_function({"Name": "click", "Start": True,
                          "Next": {"Name": "end", "Type": "Scalar", "Conditional": cond}}, "click.yaml"),
           load_function({"Name": "end"}, "end.yaml")]
    wf = build_workflow([(f, f.name) for f in fns])
    nodes, edges, _ = read_mermaid(to_mermaid(wf))
    assert nodes == {"n0": "click", "n1": "end"}
    assert edges == [("n0", "-->", f"if {cond}", "n1")]
    dnodes, dedges, _ = read_dot(to_dot(wf))
    assert {k: v["label"] for k, v in dnodes.items()} == {"n0": "click", "n1": "end"}
    assert [(a, b, attrs["label"]) for a, b, attrs in dedges] == [("n0", "n1", f"if {cond}")]


def _hostile_app(tmp_path):
    names = HOSTILE_NAMES
    inner = 'Inner"]\nend\nclick n0 href "javascript:alert(2)"'
    sm = {"StartAt": names[0], "States": {
        names[0]: {"Type": "Pass", "Next": names[1]},
        names[1]: {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEquals": 'a"\n]-->b', "Next": names[2]}],
                   "Default": names[3]},
        names[2]: {"Type": "Map", "ItemProcessor": {"StartAt": inner, "States": {inner: {"Type": "Pass", "End": True}}},
                   "Catch": [{"ErrorEquals": ["States.ALL"], "Next": names[3]}], "Next": names[3]},
        names[3]: {"Type": "Succeed"}}}
    (tmp_path / "sm.json").write_text(json.dumps(sm))
    (tmp_path / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "graph-hostile", "workflow": {"stepfunctions": "sm.json"}, "functions": {}}))
    return state_graph(tmp_path, load_manifest(tmp_path)), names + [inner]


def test_state_machine_graph_with_hostile_state_names(tmp_path):
    """Step Functions graph: state names with a newline and a `click ... href` line, quotes
    with `]` and `-->`, `;`, `#quot;`, backticks, `%%{init}%%`, CR LF, U+2028 and a
    backslash, a Map box whose inner state's name holds `end`: every line of both formats is
    one statement and every name comes back whole at the start of its node's text (before,
    the newline wrote `click X href #quot;javascript:alert(1)#quot;...` as its own line)."""
    g, names = _hostile_app(tmp_path)
    text = asl_mermaid(g)
    nodes, edges, _ = read_mermaid(text)
    for name in names:  # a node's text is the name, then its type line (and retries)
        assert any(label.startswith(name + "\n") for label in nodes.values()), (name, nodes)
    assert any(lab == '$.x == "a\\"\\n]-->b"' for _, _, lab, _ in edges), edges
    assert not any(line.lstrip().startswith("click") for line in text.splitlines())
    dnodes, dedges, _ = read_dot(asl_dot(g))
    for name in names:
        flat = name.replace("\r\n", "\n").replace("\u2028", "\n").replace("\t", " ")
        assert any(a.get("label", "").startswith(flat + "\n") for a in dnodes.values()), name
    assert any(a.get("label") == '$.x == "a\\"\\n]-->b"' for _, _, a in dedges)


def test_every_example_graph_reads_as_statements_in_both_formats():
    """The grammar is the output's: every example's graph (the IR, and a Step Functions
    app's state machine) in both formats is read line by line with no line left over."""
    from unumctl.graph import node_text
    from unumctl.pipeline import load as load_app

    from unumctl_testing.apps import EXAMPLES
    seen = 0
    for root in sorted(p.parent for p in EXAMPLES.glob("*/unumctl.yaml")):
        wf = load_app(root).workflow
        nodes, _, _ = read_mermaid(to_mermaid(wf))
        assert sorted(nodes.values()) == sorted(node_text(wf, n) for n in wf.functions), root
        read_dot(to_dot(wf))
        manifest = load_manifest(root)
        if manifest.workflow.stepfunctions is not None:
            g = state_graph(root, manifest)
            assert len(read_mermaid(asl_mermaid(g))[0]) == len(g.nodes), root
            assert len(read_dot(asl_dot(g))[0]) == len(g.nodes) + 2, root  # and start, end
        seen += 1
    assert seen >= 10


def test_graphviz_draws_each_hostile_name_as_its_label(tmp_path):
    """Graphviz itself (when `dot` is installed) reads the hostile graph and draws each name
    as the text lines of one node: the quotes, `]`, `-->`, the `click` line and `\\N` (an
    escString substitution if left unescaped) all show as written."""
    import html
    import shutil
    import subprocess

    import pytest
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is not installed (apt-get install graphviz): the DOT text was not drawn")
    g, names = _hostile_app(tmp_path)
    svg = subprocess.run(["dot", "-Tsvg"], input=asl_dot(g), capture_output=True, text=True, timeout=60, check=True).stdout
    drawn = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    for name in names:
        lines = name.replace("\r\n", "\n").replace("\u2028", "\n").replace("\t", " ").split("\n")
        k = drawn.index(lines[0])
        assert drawn[k:k + len(lines)] == lines, (name, drawn)
