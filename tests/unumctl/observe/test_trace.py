"""`unumctl trace` pages opened in a real headless browser (Debian's chromium, driven by
Playwright with executable_path; `make test` installs chromium when it can): the state
machine (Step Functions app), the functions' graph and the timeline render with no console
error; the critical path, retries and duplicates are drawn; a screenshot is saved under the
test's tmp dir (or $UNUMCTL_TEST_ARTIFACTS when set). Skips, saying why, when chromium or
Playwright is missing. Also the critical path itself, on events written by hand."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from runtime.asl.steps import MAX_VALUE_BYTES
from unumctl.pipeline import load as load_app
from unumctl.observe.trace import critical_path

from unumctl_testing.apps import EXAMPLES, copy_example
from tests.unumctl.test_cli import cli_process as cli  # a child process, as before
from tests.unumctl.observe.test_history import hist_app

CHROMIUM = os.environ.get("UNUMCTL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)[1])


def _browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"chromium not installed ({CHROMIUM}); `make test` installs it with apt-get when it can")
    pw = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e '.[test]')")
    return pw.sync_playwright


def _open(html: Path, shot: Path) -> tuple[dict, list[str]]:
    """Load `html` in headless chromium; returns (counts of drawn elements, console errors)
    and writes a full-page screenshot to `shot`."""
    sync_playwright = _browser()
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: errors.append(f"network: {r.url}") if not r.url.startswith("file:") else None)
            page.goto(html.as_uri())
            drawn = page.evaluate("""() => ({
                nodes: document.querySelectorAll('#graph g.node').length,
                states: [...document.querySelectorAll('#states g.state')].map(
                    g => [g.querySelector('text').textContent, g.getAttribute('data-outcome')]),
                stateSection: !document.getElementById('stateSection').hidden,
                bars: document.querySelectorAll('#timeline rect.bar').length,
                critical: document.querySelectorAll('#timeline rect.bar[data-critical="1"]').length,
                criticalText: document.getElementById('critical').textContent,
                labels: [...document.querySelectorAll('#timeline text')].map(t => t.textContent),
                barWidth: Math.max(...[...document.querySelectorAll('#timeline rect.bar')].map(
                    r => r.getBoundingClientRect().width)),
                graphHeight: document.getElementById('graph').getBoundingClientRect().height})""")
            page.locator("#timeline rect.bar").first.click()  # details on click
            drawn["detail"] = page.locator("#detail").text_content()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    return drawn, errors


def _shot(tmp_path: Path, name: str) -> Path:
    d = Path(os.environ.get("UNUMCTL_TEST_ARTIFACTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def test_trace_in_chromium_under_faults(tmp_path):
    """An IR app run with injected crashes and duplicates: every event is a bar, retries and
    duplicated deliveries are labelled, the critical path is outlined and named."""
    _browser()
    app = hist_app(tmp_path / "app")
    (tmp_path / "in.json").write_text(json.dumps(list("abcdef")))
    for i in range(1, 6):  # which faults a session gets depends on its schedule: run until both
        code, out, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--session", f"b-{i}",
                             "--faults", "seed=3,crash=0.3,duplicate=0.3")
        assert code == 0 and json.loads(out) == "ABCDEF", err
        html = tmp_path / f"b{i}.html"
        assert cli("trace", str(app), f"b-{i}", "-o", str(html))[0] == 0
        data = _data(html.read_text())
        kinds = [e["kind"] for e in data["events"]]
        if "retried" in kinds and "duplicated" in kinds:
            break
    assert "retried" in kinds and "duplicated" in kinds  # the faults happened
    shot = _shot(tmp_path, "trace-faults.png")
    drawn, errors = _open(html, shot)
    assert errors == []
    assert drawn["nodes"] == 3 and not drawn["stateSection"] and drawn["graphHeight"] > 50
    assert drawn["bars"] == len([e for e in data["events"] if e.get("t0") is not None])
    assert drawn["critical"] == len(data["critical"]) > 0
    assert drawn["criticalText"].startswith("Critical path: Start") and drawn["criticalText"].endswith("Join")
    assert any("retry \u2192 attempt 2" in t for t in drawn["labels"])
    assert any("delivered twice" in t for t in drawn["labels"])
    # bars are drawn to the timeline's scale (900 px for the span; at least 2 px): the widest
    # is the longest event's (a fixed "> 2 px" failed when slow retries stretched the span)
    timed = [e for e in data["events"] if e.get("t0") is not None]
    t0 = min(e["t0"] for e in timed)
    span = max(max(e.get("t1") or e["t0"] for e in timed) - t0, 1e-6)
    widest = max(max(2, ((e.get("t1") or e["t0"]) - e["t0"]) / span * 900) for e in timed)
    assert abs(drawn["barWidth"] - widest) < 0.5 and '"kind"' in drawn["detail"]
    assert shot.stat().st_size > 10_000


def test_trace_of_a_step_functions_app_in_chromium(tmp_path):
    """A Step Functions app: the states as written are drawn, each coloured by the outcome of
    the compiled function that runs it, beside the functions' graph and the timeline."""
    _browser()
    app = copy_example(EXAMPLES / "text-processing-sfn", tmp_path / "tp")
    code, _, err = cli("invoke", str(app), "--data", str(app / "input.json"), "--session", "s-1")
    assert code == 0, err
    html = tmp_path / "s1.html"
    assert cli("trace", str(app), "s-1", "-o", str(html))[0] == 0
    shot = _shot(tmp_path, "trace-sfn.png")
    drawn, errors = _open(html, shot)
    assert errors == []
    definition = json.loads((app / "statemachine.json").read_text())

    def states(doc):
        for name, st in doc["States"].items():
            yield name, st["Type"]
            for b in st.get("Branches", []) + ([st["ItemProcessor"]] if "ItemProcessor" in st else []):
                yield from states(b)
    expected = sorted(f"{n} \u00b7 {t}" for n, t in states(definition))
    assert drawn["stateSection"] and sorted(t for t, _ in drawn["states"]) == expected
    assert {o for _, o in drawn["states"]} == {"ran"}
    assert drawn["nodes"] == len(load_app(app).workflow.functions)
    assert drawn["criticalText"].startswith("Critical path: Ingest") and drawn["criticalText"].endswith("Publish")


def test_critical_path_follows_the_last_branch_and_its_retries(tmp_path):
    wf = load_app(hist_app(tmp_path / "app")).workflow
    ev = [{"kind": "ran", "instance": "Start", "function": "Start", "t0": 0.0, "t1": 0.1, "invoked": 2},
          {"kind": "ran", "instance": "Work-UnumIndex-0", "function": "Work", "t0": 0.2, "t1": 0.3, "invoked": 0},
          {"kind": "crashed", "instance": "Work-UnumIndex-1", "function": "Work", "t0": 0.2, "t1": 0.25},
          {"kind": "retried", "instance": "Work-UnumIndex-1", "function": "Work", "t0": 0.26, "t1": 0.26},
          {"kind": "ran", "instance": "Work-UnumIndex-1", "function": "Work", "t0": 0.5, "t1": 0.6, "invoked": 1},
          {"kind": "ran", "instance": "Join", "function": "Join", "t0": 0.7, "t1": 0.8, "invoked": 0},
          {"kind": "duplicated", "instance": "Join", "function": "Join", "t0": 0.61, "t1": 0.61}]
    assert critical_path(ev, wf) == [0, 2, 3, 4, 5]
    assert critical_path([], wf) == []


def _orders_trace(tmp_path: Path) -> Path:
    app = copy_example(EXAMPLES / "orders-sfn", tmp_path / "orders")
    assert cli("invoke", str(app), "--data", str(app / "input.json"), "--session", "o-1")[0] == 0
    html = tmp_path / "o1.html"
    assert cli("trace", str(app), "o-1", "-o", str(html))[0] == 0
    return html


def test_step_functions_states_taken_or_not(tmp_path):
    """orders-sfn: Task and Map states are coloured by their functions' outcome; with the
    states recorded (runtime/asl/steps.py), the Choice walked in the entry function is `ran`
    and its untaken Fail branch is not taken; the edges taken are marked, the Choice's
    matching rule and Default included."""
    data = _data(_orders_trace(tmp_path).read_text())["states"]
    nodes = {n["name"]: n for n in data["nodes"]}
    outcome = {k: n["outcome"] for k, n in nodes.items()}
    assert outcome["Validate"] == outcome["Charge"] == outcome["Summarize"] == outcome["ProcessOrders"] == "ran"
    assert outcome["CheckInput"] == "ran" and nodes["CheckInput"]["taken"]
    assert outcome["NoOrders"] == "none" and not nodes["NoOrders"]["taken"]
    assert [s["rule"] for s in nodes["CheckInput"]["steps"]] == [0]
    caught = [s for s in nodes["Validate"]["steps"] if s.get("error")]
    assert [(s["error"], s.get("caught"), s["next"]) for s in caught] == [("InvalidOrder", True, "Rejected")]
    out = caught[0]["out"]  # the Catch's ResultPath output; its Cause carries the bundle's path,
    # so under a long tmp_path it passes MAX_VALUE_BYTES and is recorded as omitted
    if out.get("omitted"):
        assert out["bytes"] > MAX_VALUE_BYTES
    else:
        assert out["error"]["Error"] == "InvalidOrder"
    assert sorted(str(s["rule"]) for s in nodes["NeedsReview"]["steps"]) == ["0", "Default", "Default", "Default"]
    ids = {n["id"]: n["name"] for n in data["nodes"]}
    taken = {(ids[e["from"]], ids[e["to"]]) for e in data["edges"] if e.get("taken")}
    assert {("CheckInput", "ProcessOrders"), ("ProcessOrders", "Validate"), ("NeedsReview", "ManualReview"),
            ("NeedsReview", "Charge"), ("Validate", "Rejected"), ("ProcessOrders", "Summarize")} <= taken
    assert ("CheckInput", "NoOrders") not in taken


def test_trace_shows_the_branch_taken_in_chromium(tmp_path):
    """In the browser: the path taken is drawn highlighted with arrowheads, the edges not
    taken are not, and no two edge labels overlap (they once read `$.member == truedefault`)."""
    _browser()
    html = _orders_trace(tmp_path)
    data = _data(html.read_text())["states"]
    ids = {n["id"]: n["name"] for n in data["nodes"]}
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.as_uri())
            got = page.evaluate("""() => ({
                taken: [...document.querySelectorAll('#states line.edge.taken')].map(
                    l => [l.dataset.from, l.dataset.to, l.getAttribute('marker-end'), +l.getAttribute('stroke-width')]),
                others: [...document.querySelectorAll('#states line.edge:not(.taken)')].map(
                    l => [l.dataset.from, l.dataset.to, +l.getAttribute('stroke-width')]),
                labels: [...document.querySelectorAll('#states text.edgeLabel')].map(t => {
                    const r = t.getBoundingClientRect(); return [t.firstChild.textContent, r.left, r.top, r.right, r.bottom]; })})""")
            page.locator("#states g.state", has_text="CheckInput").click()
            detail = json.loads(page.locator("#detail").text_content())
            page.screenshot(path=str(_shot(tmp_path, "trace-branch.png")), full_page=True)
        finally:
            browser.close()
    assert errors == []
    taken = {(ids[a], ids[b]) for a, b, _, _ in got["taken"]}
    assert ("CheckInput", "ProcessOrders") in taken and all(m == "url(#arrowTaken)" and w > 3 for *_, m, w in got["taken"])
    assert ("CheckInput", "NoOrders") in {(ids[a], ids[b]) for a, b, _ in got["others"]}
    assert all(w < 3.5 for *_, w in got["others"])
    boxes = got["labels"]
    assert len(boxes) >= 4 and any("default" in b[0] for b in boxes)
    for i, (t1, *r1) in enumerate(boxes):
        for t2, *r2 in boxes[i + 1:]:
            apart = r1[2] <= r2[0] or r2[2] <= r1[0] or r1[3] <= r2[1] or r2[3] <= r1[1]
            assert apart, f"labels overlap: {t1!r} {r1} and {t2!r} {r2}"
    assert detail["taken"] is True and detail["steps"][0]["rule"] == 0 and detail["steps"][0]["next"] == "ProcessOrders"


# values a state could output that would change how the page is parsed if embedded as they
# are: `<!--<script>` puts the rest of the data element in the "script data double escaped"
# state, so its `</script>` no longer closes it and the page's own script never runs (the
# page came out blank); `</script>...` closes the data element early; `]]>` ends a CDATA
# section; U+2028 ends a line for a JavaScript parser before ES2019; `&lt;` must stay text
HOSTILE = ["<!--<script>", "</script><script>alert(1)</script>", "]]>", "a\u2028b\u2029c", "&lt;&amp;",
           "<img src=x onerror=alert(2)>"]


def _hostile_page(tmp_path: Path, session: str = "h-1") -> tuple[str, dict]:
    """render() of a session whose Start output (and input, and error) is HOSTILE, on
    events written by hand (no run, no browser)."""
    from unumctl.observe.trace import render
    wf = load_app(hist_app(tmp_path / "app")).workflow
    events = [{"kind": "ran", "instance": "Start", "function": "Start", "t0": 0.0, "t1": 0.1, "invoked": 1,
               "input": HOSTILE, "output": HOSTILE, "detail": HOSTILE[1]},
              {"kind": "failed", "instance": "Join", "function": "Join", "t0": 0.2, "t1": 0.3,
               "error": HOSTILE[0], "detail": HOSTILE[0]}]
    desc = {"session": session, "status": "FAILED", "function": "Start", "duration": 0.3,
            "error": HOSTILE[1], "counts": {"invocations": 2, "executions": 2}}
    return render(desc, events, wf), {"events": events, "session": desc}


def test_trace_page_embeds_hostile_values_as_data(tmp_path):
    """No value changes how the page is parsed (runs without a browser): the data element's
    content, up to the first `</script` as an HTML parser reads it, holds no `<`, `>`, `&`,
    U+2028 or U+2029 and is the whole JSON document, which gives back every hostile string;
    the page has exactly its two script elements; a session named like a placeholder is
    written as text once (before, the data was written into the title too)."""
    page, sent = _hostile_page(tmp_path, session="__DATA__")
    start = page.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    content = page[start:page.lower().index("</script", start)]
    assert not set(content) & {"<", ">", "&", "\u2028", "\u2029"}, content[:200]
    data = json.loads(content)
    assert data["events"] == sent["events"] and data["session"] == sent["session"]
    assert page.lower().count("<script") == 2 and page.count("<!--") == 0
    assert page.count('"__DATA__"') == 1 and "<title>unumctl trace __DATA__</title>" in page
    assert _data(page)["events"][0]["output"] == HOSTILE
    # the page's script never builds markup from text (tests/trace_dom_stub.js throws on innerHTML)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's script was not run")
    import subprocess
    (tmp_path / "h.html").write_text(page)
    res = subprocess.run([node, str(Path(__file__).resolve().parents[2] / "trace_dom_stub.js"), str(tmp_path / "h.html")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["bars"] == 2


def test_trace_page_renders_hostile_values_as_text_in_chromium(tmp_path):
    """In the browser: a session whose outputs are HOSTILE renders in full (the page's script
    ran: every bar and box drawn, no console error, no dialog); the title, the summary's error
    and a bar's details show the hostile strings as text; no element came from them."""
    _browser()
    page_text, _ = _hostile_page(tmp_path)
    html = tmp_path / "hostile.html"
    html.write_text(page_text)
    sync_playwright = _browser()
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
            page.goto(html.as_uri())
            got = page.evaluate("""() => ({
                scripts: document.scripts.length, imgs: document.images.length,
                bars: document.querySelectorAll('#timeline rect.bar').length,
                nodes: document.querySelectorAll('#graph g.node').length,
                title: document.getElementById('title').textContent,
                summary: document.getElementById('summary').textContent,
                tips: [...document.querySelectorAll('#timeline rect.bar title')].map(t => t.textContent),
                legend: document.getElementById('legend').textContent})""")
            assert got["bars"] == 2 and got["nodes"] == 3, (got, errors)  # the page's script ran
            page.locator("#timeline rect.bar").first.click()
            detail = json.loads(page.locator("#detail").text_content())
            page.screenshot(path=str(_shot(tmp_path, "trace-hostile.png")), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert got["scripts"] == 2 and got["imgs"] == 0
    assert got["title"] == "Session h-1 \u2014 FAILED" and f"error: {HOSTILE[1]}" in got["summary"]
    assert f"ran Start: {HOSTILE[1]}" in got["tips"] and f"failed Join: {HOSTILE[0]}" in got["tips"]
    assert "critical path" in got["legend"] and "ran" in got["legend"]
    assert detail["output"] == HOSTILE and detail["input"] == HOSTILE
