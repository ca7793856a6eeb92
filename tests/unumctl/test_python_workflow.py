"""Python workflows (runtime/flow.py, unumctl/python.py): each `examples/<name>-py` compiles
to the IR of its hand-written `examples/<name>` (compared structurally; the comparison is
shown to catch an injected difference), constructs without a static graph are refused at
the user's FILE:LINE, and a step is an ordinary function outside compilation."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime import flow
from unumctl.manifest import App, AppError
from unumctl.pipeline import load
from unumctl_testing.apps import EXAMPLES

PAIRS = ["wordcount", "text-processing", "loop-counter", "nested-map", "quorum-replicas", "iot-pipeline",
         "pipeline-fold"]


def structure(app: App) -> dict[str, Any]:
    """An app's workflow as compared: every function's canonical IR (FunctionIR.to_dict,
    after loading: EmptyJoin, Exits and Iterate filled in) and its memory and timeout."""
    fns = app.manifest.functions
    return {name: {"ir": ir.to_dict(), "memory": fns[name].memory, "timeout": fns[name].timeout}
            for name, ir in app.workflow.functions.items()}


def differences(a: dict[str, Any], b: dict[str, Any], path: str = "") -> list[str]:
    """The paths where two structures (from `structure`) differ, one line each."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in {'first' if k in a else 'second'}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", PAIRS)
def test_python_example_compiles_to_the_hand_written_ir(name):
    compiled, written = structure(load(EXAMPLES / f"{name}-py")), structure(load(EXAMPLES / name))
    assert differences(compiled, written) == []
    for f in ("input.json", "expected_output.json"):
        assert json.loads((EXAMPLES / f"{name}-py" / f).read_text()) == json.loads((EXAMPLES / name / f).read_text())


def test_structural_comparison_catches_an_injected_difference():
    compiled = structure(load(EXAMPLES / "wordcount-py"))
    for mutate in (lambda s: s["Mapper"]["ir"]["Next"][0].update(Type="Scalar"),
                   lambda s: s["Split"]["ir"].update(Start=False),
                   lambda s: s["Reducer"].update(memory=512),
                   lambda s: s["Summary"]["ir"]["Next"].append({"Name": "Split", "Type": "Scalar"})):
        changed = copy.deepcopy(compiled)
        mutate(changed)
        assert differences(changed, compiled) != []
    folds = structure(load(EXAMPLES / "pipeline-fold-py"))
    for mutate in (lambda s: s["Encode"]["ir"]["Next"][2]["Values"].__setitem__(1, "Encode-UnumIndex-$0"),
                   lambda s: s["Fold"]["ir"]["Next"][0].update(Iterate=True)):
        changed = copy.deepcopy(folds)
        mutate(changed)
        assert differences(changed, folds) != []


def test_a_step_outside_compilation_is_the_plain_function():
    """The runtime calls the handler as handler(event, context); a test calls it directly."""
    mod = load(EXAMPLES / "wordcount-py").manifest.functions["Mapper"]
    assert mod.handler == "flow.mapper" and mod.code == "workflow"
    import importlib
    import sys
    sys.path.insert(0, str(EXAMPLES / "wordcount-py" / "workflow"))
    try:
        m = importlib.import_module("flow")
        assert m.mapper({"text": "a b a", "reducers": 1}) == {"partitions": [{"a": 2, "b": 1}]}
        assert m.mapper({"text": "a", "reducers": 1}, object()) == {"partitions": [{"a": 1}]}
        with pytest.raises(flow.FlowError, match="compiled, not called"):
            m.wordcount({"text": ""})
    finally:
        sys.path.remove(str(EXAMPLES / "wordcount-py" / "workflow"))
        sys.modules.pop("flow", None)


HEADER = """\
from runtime.flow import accumulate, last, loop, pairwise, parallel, quorum, step, when, workflow


@step
def first(event) -> dict:
    return event


@step
def second(event):
    return event


@workflow
def main(doc):
"""


def write_app(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    """An app whose workflow/flow.py is `header` + the indented `body` of `main`."""
    (tmp_path / "workflow").mkdir()
    (tmp_path / "workflow" / "flow.py").write_text(header + textwrap.indent(textwrap.dedent(body), "    "))
    (tmp_path / "unumctl.yaml").write_text("version: 1\napp: pyapp\nworkflow:\n  python: workflow/flow.py:main\n")
    return tmp_path


def line_of(app: Path, text: str) -> int:
    lines = (app / "workflow" / "flow.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


REFUSED = {
    "if": ("v = first(doc)\nif v['ok']:\n    second(v)\nreturn v\n", "if v['ok']",
           "`if`, `while`, `and`, `or` or `not` on the output of step First is decided at run time; use when("),
    "for": ("v = first(doc)\nfor x in v:\n    second(x)\nreturn v\n", "for x in v",
            "a `for` loop or unpacking over the output of step First needs its run-time value; use .map(step)"),
    "dict key": ("v = first(doc)\nd = {v: 1}\nreturn second(v)\n", "d = {v: 1}",
                 "the output of step First is used as a dict key or set member"),
    "len": ("v = first(doc)\nn = len(v)\nreturn second(v)\n", "n = len(v)", "use length(value) inside a condition"),
    "io": ("v = first(doc)\nopen('/etc/hostname').read()\nreturn second(v)\n", "open('/etc/hostname')",
           "the workflow body does I/O at compile time (open '/etc/hostname'); it runs once, when the app "
           "is compiled: move the I/O into a step"),
    "map over dict": ("return second(first(doc).map(second))\n", "first(doc).map(second)",
                      "step First is annotated to return dict, but .map() needs a list"),
    "loop body": ("v = first(doc)\nw = second(v)\nreturn loop(lambda x: second(w), v, while_=lambda o: o['n'] > 1)\n",
                  "return loop(", "loop()'s body must first call a step on its input"),
    "two consumers": ("v = first(doc)\nsecond(v)\nreturn second(v)\n", "v = first(doc)",
                      "the output of step First goes to several steps unconditionally; use parallel("),
    "int": ("v = first(doc)\nn = int(v)\nreturn second(v)\n", "n = int(v)",
            "the output of step First used as an index or number needs its run-time value; do the arithmetic"),
    "format": ("v = first(doc)\ns = f'{v}'\nreturn second(v)\n", "s = f'",
               "formatting the output of step First into a string needs its run-time value; build strings"),
    "in": ("v = first(doc)\nok = 'a' in v\nreturn second(v)\n", "ok = 'a' in v",
           "`in` on the output of step First is decided at run time; use when() with a comparison"),
    "unpacking": ("a, b = first(doc)\nreturn second(a)\n", "a, b = first(doc)",
                  "a `for` loop or unpacking over the output of step First needs its run-time value"),
    "constant": ("return second(3)\n", "return second(3)",
                 "step Second is given int 3, not a step's output; constants belong inside a step"),
    "two arguments": ("v = first(doc)\nreturn second(v, v)\n", "return second(v, v)",
                      "step Second takes one input (its event); pass one step output"),
    "input twice": ("a = first(doc)\nreturn second(doc)\n", "return second(doc)",
                    "the workflow input goes to exactly one step; run several steps on it with parallel("),
    "input field": ("return second(doc['x'])\n", "return second(doc['x'])",
                    "a field of the workflow input or of a map item cannot be passed on"),
    "list not from parallel": ("v = first(doc)\nw = second(v)\nreturn second([v, w])\n", "return second([v, w])",
                               "a list passed to a step must be the values parallel() returned"),
    "parallel of one": ("v = first(doc)\nreturn second(parallel(v, second))\n", "parallel(v, second)",
                        "parallel() needs at least two branches"),
    "parallel after when": ("v = first(doc)\nw = when(v['a'] > 1, then=second)\n"
                            "return second(parallel(w, second, second))\n", "return second(parallel(w",
                            "parallel() takes one step's output, not the result of when() or loop(); give that "
                            "result to a step first"),
    "map after when": ("v = first(doc)\nw = when(v['a'] > 1, then=second)\nreturn second(w.map(second))\n",
                       "w.map(second)", ".map() runs over one step's output, not over the result of when() or loop()"),
    "quorum of a value": ("v = first(doc)\nreturn second(quorum(v, 2))\n", "quorum(v, 2)",
                          "quorum() takes the result of .map()"),
    "condition on input": ("return when(doc['x'] > 1, then=second)\n", "return when(",
                           "a condition reads a step's output (not the workflow input or a map item)"),
    "condition on two values": ("v = first(doc)\nw = second(v)\nreturn when(v['a'] > w['b'], then=second)\n",
                                "return when(", "a condition reads one step's output; compare fields of the same"),
    "dict in a condition": ("v = first(doc)\nreturn when(v['a'] == {'x': 1}, then=second)\n", "return when(",
                            "dict {'x': 1} cannot appear in a condition; use None, bool, numbers, strings"),
    "when branch": ("v = first(doc)\nreturn when(v['a'] > 1, then=lambda x: 3)\n", "return when(",
                    "a when() branch must return the output of a step it called (or its input)"),
    "map over input": ("return second(doc.map(second))\n", "doc.map(second)",
                       ".map() runs over one step's output"),
    "map body": ("v = second(first(doc))\nreturn second(v.map(lambda x: x))\n", "v.map(lambda x: x)",
                 ".map()'s body must return the output of a step it called on the item"),
    "loop condition": ("v = first(doc)\nreturn loop(second, v, while_=lambda o: 1)\n", "return loop(",
                       "loop(while_=...) must return a condition on the body's output"),
    "pairwise outside a map": ("v = first(doc)\nreturn second(pairwise(v))\n", "pairwise(v)",
                               "pairwise() takes the output of a step called inside a .map() body"),
    "accumulate of a function": ("v = second(first(doc))\n"
                                 "return second(last(v.map(lambda x: accumulate(lambda y: second(y), second(x)))))\n",
                                 "return second(last(", "accumulate() takes a @step as its body"),
    "last of a value": ("v = first(doc)\nreturn second(last(v))\n", "last(v)", "last() takes the result of .map()"),
    "returns a map": ("v = second(first(doc))\nreturn v.map(second)\n", "@workflow",
                      "workflow main returns an edge no step takes (.map(), parallel(), pairwise() or last())"),
    "no step": ("return doc\n", "@workflow", "workflow main calls no step; call at least one step on its input"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_construct_without_a_static_graph_is_refused_at_the_users_line(tmp_path, case):
    body, marker, message = REFUSED[case]
    app = write_app(tmp_path, body)
    with pytest.raises(AppError) as err:
        load(app)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{app / 'workflow' / 'flow.py'}:{line_of(app, marker)}: "), text
    assert message in text


def test_a_step_called_at_import_time_is_refused_at_its_line(tmp_path):
    header = HEADER.replace("@workflow\n", "X = second({'a': 1})\n\n\n@workflow\n")
    app = write_app(tmp_path, "return second(first(doc))\n", header)
    with pytest.raises(AppError) as err:
        load(app)
    assert str(err.value).startswith(f"{app / 'workflow' / 'flow.py'}:{line_of(app, 'X = second')}: step Second is "
                                     "called outside the workflow function"), str(err.value)


@pytest.mark.parametrize("spec, message", [
    ("flow.py", "workflow.python: 'flow.py' must be FILE:NAME"),
    ("../x/flow.py:main", "must be a path relative to the app directory, inside it"),
    ("workflow/flow.py:nope", "workflow.python: workflow/flow.py has no @workflow function 'nope'"),
    ("workflow/none.py:main", "does not exist; give FILE:NAME of a .py file of the app"),
    ("workflow/json.py:main", "workflow/json.py: the module name 'json' is taken by Python's or unumctl's"),
])
def test_a_bad_workflow_python_field_is_one_line_naming_it(tmp_path, spec, message):
    app = write_app(tmp_path, "return second(first(doc))\n")
    (app / "workflow" / "json.py").write_text((app / "workflow" / "flow.py").read_text())
    (app / "unumctl.yaml").write_text(f"version: 1\napp: pyapp\nworkflow:\n  python: {spec}\n")
    with pytest.raises(AppError) as err:
        load(app)
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)


def test_conditions_compile_to_the_safe_expression_language(tmp_path):
    app = write_app(tmp_path, """\
        v = first(doc)
        r = when((v['total'] > 10) & ~(v['kind'] == 'x'), then=second)
        return r
        """)
    ir = load(app).workflow.functions["First"].to_dict()
    assert [(e["Name"], e.get("Conditional")) for e in ir["Next"]] == [
        ("Second", "($out['total'] > 10 and $out['kind'] != 'x')")]


def test_a_retry_and_a_checkpoint_option_reach_the_ir(tmp_path):
    header = HEADER.replace("@step\ndef second", "@step(retry={'max_attempts': 3, 'errors': [KeyError]}, "
                                                 "checkpoint=False, memory=512)\ndef second")
    app = write_app(tmp_path, "return second(first(doc))\n", header)
    loaded = load(app)
    ir = loaded.workflow.functions["Second"].to_dict()
    assert ir["Retry"]["MaxAttempts"] == 3 and ir["Retry"]["ErrorEquals"] == ["KeyError"]
    assert ir["Checkpoint"] is False and loaded.manifest.functions["Second"].memory == 512


def test_a_bad_step_option_names_the_step_and_field(tmp_path):
    header = HEADER.replace("@step\ndef second", "@step(memory=64)\ndef second")
    app = write_app(tmp_path, "return second(first(doc))\n", header)
    with pytest.raises(AppError, match=r"flow.py:\d+: @step Second: memory: .*128"):
        load(app)


@pytest.mark.slow  # starts the local target's worker processes
def test_a_python_workflow_runs_in_one_call_for_a_unit_test():
    from unumctl.local.inprocess import run
    item = run(EXAMPLES / "loop-counter-py", {"n": 6})
    assert item["status"] == "SUCCEEDED" and item["v"] == {"n": 1, "steps": 8, "trajectory_max": 16}


def _handlers(app: App) -> dict[str, Any]:
    """Each compiled function's Step (the handler the bundle would import), from a fresh
    import of the example's workflow module."""
    import importlib
    import sys
    code = str(app.root / "workflow")
    sys.path.insert(0, code)
    try:
        mod = importlib.import_module("flow")
        return {n: getattr(mod, spec.handler.split(".")[1]) for n, spec in app.manifest.functions.items()}
    finally:
        sys.path.remove(code)
        sys.modules.pop("flow", None)


@pytest.mark.parametrize("name, value", [("text-processing", {"text": "hi @ann see https://a.example/x"}),
                                         ("loop-counter", {"n": 4}),
                                         ("nested-map", {"rows": [[1, 2], [3]]})])
def test_the_explorer_finds_no_violation_in_a_compiled_python_workflow(name, value):
    """tools/explorer (docs/explorer.md) over the compiled IR and the steps themselves."""
    from tools.explorer.model import WorkflowSpec
    from tools.explorer.search import Bounds, explore
    app = load(EXAMPLES / f"{name}-py")
    terminals = {n for n, f in app.workflow.functions.items() if not f.next}
    spec = WorkflowSpec(f"{name}-py", dict(app.workflow.functions), _handlers(app), value, terminals=terminals)
    rep = explore(spec, Bounds(budget=60))
    assert rep.schedules > 0
    assert not rep.found, {k: f.message for k, f in rep.found.items()}


NEW_USER_FLOW = '''\
from runtime.flow import step, when, workflow


@step
def items(order) -> list:
    return order["items"]


@step(retry={"max_attempts": 2, "interval": 0.01, "errors": ["KeyError"]})
def price(item, context):
    return {"sku": item["sku"], "cost": item["qty"] * 3, "attempt": context.index}


@step
def total(prices):
    return {"total": sum(p["cost"] for p in prices), "lines": len(prices)}


@step
def approve(t):
    return {"status": "approved", **t}


@step
def review(t):
    return {"status": "review", **t}


@workflow
def main(order):
    t = total(items(order).map(price))
    return when(t["total"] > 10, then=review, otherwise=approve)
'''


@pytest.mark.slow  # starts the local target's worker processes
def test_a_workflow_with_a_map_a_retry_a_fan_in_and_a_condition_runs_first_time(tmp_path):
    from unumctl.local.inprocess import run
    app = write_app(tmp_path, "", header=NEW_USER_FLOW)
    small = run(app, {"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]})
    large = run(app, {"items": [{"sku": "a", "qty": 5}]})
    assert small["v"] == {"status": "approved", "total": 9, "lines": 2}
    assert large["v"] == {"status": "review", "total": 15, "lines": 1}


# written from docs/python.md alone, as a new user would (a Map, a retry, a parallel fan-out
# and its fan-in, a condition on the last step); what the page left unsaid is in it since
NEW_USER_GRADES = '''\
import os

from runtime.flow import length, parallel, step, when, workflow


@step
def submissions(course) -> list:
    return [dict(p, scratch=course["scratch"]) for p in course["papers"]]


@step(retry={"max_attempts": 2, "interval": 0.01, "errors": ["ConnectionError"]})
def grade(paper):
    marker = os.path.join(paper["scratch"], paper["id"])
    if not os.path.exists(marker):          # the grader is busy the first time for each paper
        open(marker, "w").close()
        raise ConnectionError("grader busy")
    return {"id": paper["id"], "score": len(paper["text"].split())}


@step
def stats(grades):
    scores = [g["score"] for g in grades]
    return {"grades": grades, "mean": sum(scores) / len(scores)}


@step
def best(s):
    return max(s["grades"], key=lambda g: g["score"])["id"]


@step
def failing(s):
    return sorted(g["id"] for g in s["grades"] if g["score"] < 3)


@step
def report(parts):
    top, low = parts
    return {"best": top, "failing": low}


@step
def notify(r):
    return dict(r, notified=r["failing"])


@workflow
def main(course):
    s = stats(submissions(course).map(grade))
    r = report(parallel(s, best, failing))
    return when(length(r["failing"]) > 0, then=notify)
'''


@pytest.mark.slow  # starts the local target's worker processes
def test_a_new_users_workflow_with_a_flaky_map_step_a_parallel_and_a_condition_runs(tmp_path):
    """Each paper's first grading attempt raises ConnectionError (its marker file is absent),
    so the run succeeds only through the step's Retry; the condition on Report's output
    takes Notify only when a paper fails, else Report's output is the session result."""
    from unumctl.local.inprocess import run
    (tmp_path / "app").mkdir()
    app = write_app(tmp_path / "app", "", header=NEW_USER_GRADES)
    papers = [{"id": "p1", "text": "a b c d"}, {"id": "p2", "text": "a"}]
    for case in ("one", "two"):
        (tmp_path / case).mkdir()
    failing = run(app, {"scratch": str(tmp_path / "one"), "papers": papers})
    passing = run(app, {"scratch": str(tmp_path / "two"), "papers": papers[:1]})
    assert failing["v"] == {"best": "p1", "failing": ["p2"], "notified": ["p2"]}, failing
    assert passing["v"] == {"best": "p1", "failing": []}, passing
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["p1", "p2"]


def test_a_step_module_imports_only_the_standard_library_and_runtime_flow():
    """What a bundle imports for a Python workflow's handler: the example's module and
    runtime/flow.py, no unumctl (CLI, cloud code) and no other runtime module."""
    import subprocess
    import sys
    from unumctl_testing.apps import ROOT
    code = ("import sys\nbefore = set(sys.modules)\nimport flow\n"
            "print(sorted(m for m in set(sys.modules) - before if m.startswith(('runtime', 'unumctl'))))\n"
            "print(flow.row_sum([1, 2], None))")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path[:0] = [{str(ROOT)!r}, "
                          f"{str(EXAMPLES / 'nested-map-py' / 'workflow')!r}]\n{code}"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out == ["['runtime', 'runtime.flow']", "3"]


def test_graph_labels_a_python_workflows_functions_with_their_source_lines():
    from unumctl.graph import to_dot, to_mermaid
    app = load(EXAMPLES / "nested-map-py")
    line = next(i for i, t in enumerate((EXAMPLES / "nested-map-py" / "workflow" / "flow.py").read_text()
                                        .splitlines(), 1) if "return total(sums)" in t)
    assert f'["Total (flow.py:{line})"]' in to_mermaid(app.workflow)
    assert f'label="Total (flow.py:{line})"' in to_dot(app.workflow)
    assert '["Total"]' in to_mermaid(load(EXAMPLES / "nested-map").workflow)  # hand-written IR: the name only
