"""Step Functions: loops inside Map/Parallel branches, Retry on Map/Parallel whose branches
hold Tasks, Map MaxConcurrency, and inline Pass-only Maps (issue 9 items 4 and 5;
docs/stepfunctions.md "Map and Parallel"). Run on the local target with real workers."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from unumctl_testing.apps import make_sfn_app
from unumctl_testing.apps import sfn_task as task
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

HANDLERS = {
    # fails in-band (ok: false) until it has been called `need` times for this item
    "Attempt": textwrap.dedent("""\
        import os

        def handler(event, context):
            path = os.path.join(event['dir'], 'attempt-%s' % event['id'])
            n = int(open(path).read()) + 1 if os.path.exists(path) else 1
            open(path, 'w').write(str(n))
            return {'id': event['id'], 'dir': event['dir'], 'need': event['need'],
                    'tries': n, 'ok': n >= event['need']}
        """),
    # a job that is 'RUNNING' for the first `polls` polls of this item, then 'DONE'
    "Poll": textwrap.dedent("""\
        import os

        def handler(event, context):
            path = os.path.join(event['dir'], 'poll-%s' % event['id'])
            n = int(open(path).read()) + 1 if os.path.exists(path) else 1
            open(path, 'w').write(str(n))
            return {**event, 'polls_done': n, 'status': 'DONE' if n > event['polls'] else 'RUNNING'}
        """),
    "Submit": "def handler(event, context):\n    return {**event, 'submitted': True}\n",
    "Dec": "def handler(event, context):\n    return {'n': event['n'] - 1, 'passes': event.get('passes', 0) + 1}\n",
    # raises on the first call for this key, succeeds afterwards
    "FlakyOnce": textwrap.dedent("""\
        import os

        class Flaky(Exception):
            pass

        def handler(event, context):
            path = os.path.join(event['dir'], 'flaky-%s' % event['key'])
            n = int(open(path).read()) + 1 if os.path.exists(path) else 1
            open(path, 'w').write(str(n))
            if n == 1:
                raise Flaky('first call of %s' % event['key'])
            return {'key': event['key'], 'calls': n}
        """),
    "Steady": textwrap.dedent("""\
        import os

        def handler(event, context):
            path = os.path.join(event['dir'], 'steady-%s' % event['key'])
            n = int(open(path).read()) + 1 if os.path.exists(path) else 1
            open(path, 'w').write(str(n))
            return {'key': event['key'], 'calls': n}
        """),
    "Boom": textwrap.dedent("""\
        class Broken(Exception):
            pass

        def handler(event, context):
            raise Broken('always')
        """),
    # appends its start and end times to a log, sleeping in between
    "Slow": textwrap.dedent("""\
        import json, os, time

        def handler(event, context):
            t0 = time.time()
            barrier = event.get('barrier')
            if barrier:  # wait (at most 30 s) until `barrier` items have started: overlap by construction
                open(os.path.join(event['dir'], f"started-{event['i']}"), 'w').close()
                while (sum(n.startswith('started-') for n in os.listdir(event['dir'])) < barrier
                       and time.time() - t0 < 30):
                    time.sleep(0.02)
            time.sleep(event.get('sleep', 0.05))
            t1 = time.time()
            with open(os.path.join(event['dir'], 'spans.log'), 'a') as f:
                f.write(json.dumps([event['i'], t0, t1]) + '\\n')
            return event['i'] * 10
        """),
}


def make_app(root: Path, machine: dict, fns: list[str], name: str = "sfn-branches") -> Path:
    return make_sfn_app(root, machine, {fn: HANDLERS[fn] for fn in fns}, name)


def run(root: Path, value, tmp: Path, timeout: float = 60, **options):
    app = load_app(root)
    with LocalRunner(app, state=tmp / "state", quiet=True, **options) as r:
        item = r.run(value, timeout=timeout)
        r.platform.wait_idle()
        return item, r.platform.ds.dump()


def check_clean(leftovers):
    for names in leftovers.values():
        assert names == ["result"], names


RETRY_LOOP_MAP = {"StartAt": "Each", "States": {"Each": {
    "Type": "Map", "ItemsPath": "$.items",
    "ItemSelector": {"id.$": "$$.Map.Item.Value.id", "need.$": "$$.Map.Item.Value.need", "dir.$": "$.dir"},
    "ItemProcessor": {"StartAt": "Try", "States": {
        "Try": task("Attempt", "Ok?"),
        "Ok?": {"Type": "Choice", "Choices": [{"Variable": "$.ok", "BooleanEquals": True, "Next": "Done"}],
                "Default": "Again"},
        "Again": {"Type": "Pass", "Parameters": {"id.$": "$.id", "need.$": "$.need", "dir.$": "$.dir"},
                  "Next": "Try"},
        "Done": {"Type": "Pass", "Parameters": {"id.$": "$.id", "tries.$": "$.tries"}, "End": True}}},
    "End": True}}}


def test_per_item_retry_loop_inside_a_map(tmp_path):
    """Each item loops Task -> Choice -> Pass -> Task until its Task succeeds; items leave
    the loop after different numbers of passes and still join in order."""
    root = make_app(tmp_path / "app", RETRY_LOOP_MAP, ["Attempt"])
    needs = [1, 3, 2, 4, 1]
    items = [{"id": f"x{i}", "need": n} for i, n in enumerate(needs)]
    item, left = run(root, {"items": items, "dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [{"id": f"x{i}", "tries": n} for i, n in enumerate(needs)]
    for i, n in enumerate(needs):  # exactly-once: each pass of the loop ran the Task once
        assert (tmp_path / f"attempt-x{i}").read_text() == str(n)
    check_clean(left)


POLL_MAP = {"StartAt": "Jobs", "States": {"Jobs": {
    "Type": "Map", "ItemsPath": "$.jobs",
    "ItemSelector": {"id.$": "$$.Map.Item.Value.id", "polls.$": "$$.Map.Item.Value.polls", "dir.$": "$.dir"},
    "ItemProcessor": {"StartAt": "Submit", "States": {
        "Submit": task("Submit", "Check"),
        "Check": task("Poll", "Finished?"),
        "Finished?": {"Type": "Choice", "Choices": [{"Variable": "$.status", "StringEquals": "DONE",
                                                     "Next": "Report"}], "Default": "Nap"},
        "Nap": {"Type": "Wait", "Seconds": 1, "Next": "Check"},
        "Report": {"Type": "Pass", "Parameters": {"id.$": "$.id", "polls.$": "$.polls_done"}, "End": True}}},
    "ResultPath": "$.done", "Next": "Summary"},
    "Summary": {"Type": "Pass", "Parameters": {"done.$": "$.done"}, "End": True}}}


def test_polling_loop_task_choice_wait_task_inside_a_map(tmp_path):
    """Submit -> Poll -> Choice -> Wait -> Poll inside a Map: the Wait is a timer between
    invocations, every item polls until DONE, the Map joins after the last item."""
    root = make_app(tmp_path / "app", POLL_MAP, ["Submit", "Poll"])
    polls = [0, 2, 1]
    jobs = [{"id": f"j{i}", "polls": p} for i, p in enumerate(polls)]
    item, left = run(root, {"jobs": jobs, "dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"done": [{"id": f"j{i}", "polls": p + 1} for i, p in enumerate(polls)]}
    for i, p in enumerate(polls):
        assert (tmp_path / f"poll-j{i}").read_text() == str(p + 1)
    check_clean(left)


RETRY_PARALLEL = {"StartAt": "Both", "States": {
    "Both": {"Type": "Parallel", "Branches": [
        {"StartAt": "A", "States": {"A": task("Steady", Parameters={"key": "a", "dir.$": "$.dir"})}},
        {"StartAt": "B", "States": {"B": task("FlakyOnce", Parameters={"key": "b", "dir.$": "$.dir"})}}],
        "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 2}],
        "ResultPath": "$.both", "Next": "Out"},
    "Out": {"Type": "Pass", "OutputPath": "$.both", "End": True}}}


def test_retry_on_a_parallel_reruns_its_branches(tmp_path):
    """Branch B fails on its first call: the Parallel's Retry re-runs the whole state as a
    new attempt (both branches run again, under new invocation names), and the result is
    the second attempt's."""
    root = make_app(tmp_path / "app", RETRY_PARALLEL, ["Steady", "FlakyOnce"])
    item, left = run(root, {"dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [{"key": "a", "calls": 2}, {"key": "b", "calls": 2}]
    assert (tmp_path / "flaky-b").read_text() == "2"
    assert (tmp_path / "steady-a").read_text() == "2"  # the whole state re-ran
    check_clean(left)


def test_retry_on_a_parallel_exhausted_then_caught(tmp_path):
    """MaxAttempts 0 for the matching retrier: no new attempt, the Catch applies."""
    sm = json.loads(json.dumps(RETRY_PARALLEL))
    both = sm["States"]["Both"]
    both["Retry"] = [{"ErrorEquals": ["Flaky"], "MaxAttempts": 0}, {"ErrorEquals": ["States.ALL"]}]
    both["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}]
    sm["States"]["Caught"] = {"Type": "Pass", "OutputPath": "$.error.Error", "End": True}
    root = make_app(tmp_path / "app", sm, ["Steady", "FlakyOnce"])
    item, _ = run(root, {"dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED" and item["v"] == "Flaky", item
    assert (tmp_path / "flaky-b").read_text() == "1"


def test_retry_on_a_map_whose_items_loop(tmp_path):
    """Retry on a Map whose branches hold a loop: the item that fails once makes the
    whole Map run again; every item's loop restarts in the new attempt."""
    sm = json.loads(json.dumps(RETRY_LOOP_MAP))
    each = sm["States"]["Each"]
    procs = each["ItemProcessor"]["States"]
    procs["Done"] = task("FlakyOnce", Parameters={"key.$": "$.id", "dir.$": "$$.Execution.Input.dir"})
    each["Retry"] = [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "BackoffRate": 1.5, "MaxAttempts": 1}]
    root = make_app(tmp_path / "app", sm, ["Attempt", "FlakyOnce"])
    items = [{"id": "p", "need": 2}]
    item, left = run(root, {"items": items, "dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [{"key": "p", "calls": 2}]
    assert (tmp_path / "attempt-p").read_text() == "3"  # 2 passes, then 1 more in attempt 2
    check_clean(left)


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The largest number of [start, end] spans open at one instant."""
    events = sorted([(t0, 1) for t0, _ in spans] + [(t1, -1) for _, t1 in spans])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def concurrency_machine(limit_field: dict, barrier: int = 0) -> dict:
    """A Map of Slow over $.items; `barrier` N: the first N items wait for one another
    (the Slow stub), so a Map that runs them concurrently overlaps N whatever the load."""
    return {"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items", **limit_field,
        "ItemSelector": {"i.$": "$$.Map.Item.Value", "dir.$": "$.dir", "sleep": 0.3, "barrier": barrier},
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": task("Slow")}},
        "End": True}}}


def read_spans(d: Path) -> list[tuple[int, float, float]]:
    return [tuple(json.loads(ln)) for ln in (d / "spans.log").read_text().splitlines()]


def test_max_concurrency_2_over_20_items_on_local(tmp_path):
    """At most 2 items in flight (measured from the stubs' own start/end times), every
    item runs once, results in order; MaxConcurrencyPath works the same way."""
    for k, field in enumerate([{"MaxConcurrency": 2}, {"MaxConcurrencyPath": "$.mc"}]):
        d = tmp_path / f"run{k}"
        d.mkdir()
        root = make_app(d / "app", concurrency_machine(field), ["Slow"])
        item, left = run(root, {"items": list(range(20)), "dir": str(d), "mc": 2}, d,
                         workers_per_function=6)
        assert item["status"] == "SUCCEEDED", item
        assert item["v"] == [i * 10 for i in range(20)]
        spans = read_spans(d)
        assert sorted(s[0] for s in spans) == list(range(20))
        assert max_overlap([(t0, t1) for _, t0, t1 in spans]) <= 2
        check_clean(left)
    # unlimited (0): the same Map overlaps more than 2 (the measure can see concurrency). The
    # first 3 items wait for one another (a barrier, not timing: under load 6 workers may
    # otherwise never hold 3 items at once); a Map held to 2 would run them 30 s apart
    d = tmp_path / "unlimited"
    d.mkdir()
    root = make_app(d / "app", concurrency_machine({"MaxConcurrency": 0}, barrier=3), ["Slow"])
    item, _ = run(root, {"items": list(range(20)), "dir": str(d)}, d, workers_per_function=6)
    assert item["status"] == "SUCCEEDED"
    assert max_overlap([(t0, t1) for _, t0, t1 in read_spans(d)]) > 2


def test_retry_exhausted_without_catch_fails_the_execution(tmp_path):
    sm = {"StartAt": "Both", "States": {"Both": {
        "Type": "Parallel", "Branches": [
            {"StartAt": "A", "States": {"A": task("Steady", Parameters={"key": "a", "dir.$": "$.dir"})}},
            {"StartAt": "B", "States": {"B": task("Boom")}}],
        "Retry": [{"ErrorEquals": ["Broken"], "IntervalSeconds": 1, "MaxAttempts": 2}], "End": True}}}
    root = make_app(tmp_path / "app", sm, ["Steady", "Boom"])
    item, _ = run(root, {"dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "FAILED" and item["error"] == "Broken", item


def test_lanes_with_two_enders_and_retry_on_the_map(tmp_path):
    """MaxConcurrency 2 over 5 items whose branches end in one of two Tasks (so a
    synthesized scope end feeds the fan-in), with Retry on the Map: odd items fail on
    their first call, so attempt 1 fails at item 1 and attempt 2 at item 3 (item 3's lane
    never reached it in attempt 1); attempt 3 succeeds."""
    sm = {"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 2,
        "ItemSelector": {"i.$": "$$.Map.Item.Value", "key.$": "States.Format('{}', $$.Map.Item.Value)",
                         "dir.$": "$.dir"},
        "ItemProcessor": {"StartAt": "Odd?", "States": {
            "Odd?": {"Type": "Choice", "Choices": [{"Or": [{"Variable": "$.i", "NumericEquals": 1},
                                                           {"Variable": "$.i", "NumericEquals": 3}],
                                                    "Next": "Odd"}], "Default": "Even"},
            "Odd": task("FlakyOnce"),
            "Even": task("Steady")}},
        "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 3}],
        "End": True}}}
    root = make_app(tmp_path / "app", sm, ["FlakyOnce", "Steady"])
    item, left = run(root, {"items": [0, 1, 2, 3, 4], "dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert [r["key"] for r in item["v"]] == ["0", "1", "2", "3", "4"]
    assert item["v"][1]["calls"] == 3 and item["v"][3]["calls"] == 2
    assert (tmp_path / "flaky-1").read_text() == "3" and (tmp_path / "flaky-3").read_text() == "2"
    check_clean(left)


def test_nested_laned_maps_and_mc_larger_than_items(tmp_path):
    """A laned Map inside a laned Map (lanes are per iterator scope and per outer item),
    and a MaxConcurrency above the item count (all start at once)."""
    sm = {"StartAt": "Rows", "States": {"Rows": {
        "Type": "Map", "ItemsPath": "$.rows", "MaxConcurrency": 1,
        "ItemSelector": {"row.$": "$$.Map.Item.Value", "dir.$": "$.dir"},
        "ItemProcessor": {"StartAt": "Cells", "States": {"Cells": {
            "Type": "Map", "ItemsPath": "$.row", "MaxConcurrency": 5,
            "ItemSelector": {"i.$": "$$.Map.Item.Value", "dir.$": "$.dir", "sleep": 0},
            "ItemProcessor": {"StartAt": "W", "States": {"W": task("Slow")}},
            "End": True}}},
        "End": True}}}
    root = make_app(tmp_path / "app", sm, ["Slow"])
    item, left = run(root, {"rows": [[1, 2, 3], [], [4], [5, 6]], "dir": str(tmp_path)}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [[10, 20, 30], [], [40], [50, 60]]
    check_clean(left)


def test_thousand_item_pass_only_map_is_one_invocation(tmp_path):
    """A Map of Pass/Choice/Succeed states runs inline in the one function that reaches it
    (no invocation per item); the latency is measured by bench/asl_inline_map.py."""
    from bench.asl_inline_map import MACHINE
    root = make_app(tmp_path / "app", MACHINE, [])
    app = load_app(root)
    assert len(app.workflow.functions) == 1
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"items": [{"n": i} for i in range(1000)]}, timeout=60)
        r.platform.wait_idle()
        assert r.platform.stats["deliveries"] == 1
    assert item["status"] == "SUCCEEDED"
    assert item["v"] == [{"n": i, "tag": "x", "size": "big" if i > 500 else "small"} for i in range(1000)]


def test_loop_around_a_map_whose_branches_loop(tmp_path):
    """The Map is entered again by an outer loop (round 2 starts at a higher iteration)
    while its branches looped in round 1: invocation names carry the frame's base
    (docs/ir.md), so round 2's items never take the names of round 1's later passes."""
    sm = {"StartAt": "Fan", "States": {
        "Fan": {"Type": "Map", "ItemsPath": "$.items",
                "ItemSelector": {"n.$": "$$.Map.Item.Value"},
                "ItemProcessor": {"StartAt": "Step", "States": {
                    "Step": task("Dec", "More?"),
                    "More?": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThan": 0,
                                                             "Next": "Step"}], "Default": "Out"},
                    "Out": {"Type": "Pass", "OutputPath": "$.passes", "End": True}}},
                "ResultPath": "$.last", "Next": "Round"},
        "Round": {"Type": "Pass", "Parameters": {"items.$": "$.items", "last.$": "$.last",
                                                 "round.$": "States.MathAdd($.round, 1)"}, "Next": "Again?"},
        "Again?": {"Type": "Choice", "Choices": [{"Variable": "$.round", "NumericLessThan": 3, "Next": "Fan"}],
                   "Default": "Done"},
        "Done": {"Type": "Succeed"}}}
    root = make_app(tmp_path / "app", sm, ["Dec"])
    item, left = run(root, {"items": [3, 1, 2], "round": 0}, tmp_path)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"items": [3, 1, 2], "last": [3, 1, 2], "round": 3}
    check_clean(left)
