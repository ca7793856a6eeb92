"""Readable text for the observability commands (their `--json` output is the reader's data)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

__all__ = ["describe_text", "history_text", "log_text", "sessions_text"]


def when(t: float | None) -> str:
    """Unix seconds as `YYYY-MM-DD HH:MM:SS.mmm` UTC ('-' for None)."""
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def secs(d: float | None) -> str:
    """A duration in seconds, e.g. `0.412 s` ('-' for None)."""
    return "-" if d is None else f"{d:.3f} s"


def _short(value: Any, width: int = 200) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= width else text[:width - 3] + "..."


def sessions_text(rows: list[dict[str, Any]]) -> str:
    """One line per session: id, status, start, duration, invocations."""
    if not rows:
        return "no sessions\n"
    w = max(len("SESSION"), *(len(r["session"]) for r in rows))
    lines = [f"{'SESSION':<{w}}  {'STATUS':<10} {'START (UTC)':<23}  {'DURATION':>10}  INVOCATIONS"]
    for r in rows:
        lines.append(f"{r['session']:<{w}}  {r['status']:<10} {when(r['start']):<23}  "
                     f"{secs(r['duration']):>10}  {r['invocations']}"
                     + (f"  (no process runs it; resume: {r['resume']})" if r.get("resume") else ""))
    return "\n".join(lines) + "\n"


def describe_text(d: dict[str, Any]) -> str:
    """A session's description, one field per line."""
    c = d["counts"]
    lines = [f"session:    {d['session']}", f"status:     {d['status']}",
             f"entry:      {d.get('function') or '-'}", f"start:      {when(d['start'])} UTC",
             f"end:        {when(d['end'])}{' UTC' if d['end'] else ''}", f"duration:   {secs(d['duration'])}",
             f"input:      {_short(d.get('input'))}"]
    if d.get("resume"):
        lines.append(f"resume:     {d['resume']} (no process runs this session: its invoke was stopped)")
    if "output" in d:
        lines.append(f"output:     {_short(d['output'])}")
    if d.get("error"):
        from ..failure import explain  # Lambda's JSON cause (Step Functions): its message and frame
        message, where, _ = explain({"cause": d.get("cause"), "trace": d.get("trace")})
        at = f" (at {where})" if where else ""
        lines.append(f"error:      {d['error']} in {d.get('failed_in')}: {message}{at}")
    lines.append(f"counts:     {c['invocations']} invocations, {c['executions']} executions, "
                 f"{c['retries']} retries, {c.get('task_retries', 0)} Task retries (Retry), "
                 f"{c['duplicates_dropped']} duplicates dropped, "
                 f"{c['adopted']} adopted, {c['crashes']} crashes, {c['timeouts']} timeouts")
    if d.get("history") != "full":
        lines.append(f"history:    {d.get('history')} (runtime.history): no execution events")
    return "\n".join(lines) + "\n"


def _detail(detail: str) -> str:
    """An event's detail on one line: for a Step Functions Task's failure `ERROR: {Lambda's
    JSON cause}`, the error message and `(at FILE:LINE)` in the user's source (failure.explain),
    as for an IR app; the message is cut at 160 characters, never the `(at ...)`."""
    at = ""
    error, sep, cause = detail.partition(": ")
    if sep and cause.lstrip().startswith("{") and "errorMessage" in cause:
        from ..failure import explain
        message, where, _ = explain({"cause": cause})
        detail, at = f"{error}: {message}", (f" (at {where})" if where else "")
    line = detail.splitlines()[0] if detail else ""
    return (line if len(line) <= 160 else line[:157] + "...") + at


def state_line(s: dict[str, Any], t_first: float) -> str:
    """One state a Step Functions execution walked or ran (runtime.asl.steps, expanded):
    time, type and name (`Map/Iterate` for a state in a Map's iterator), where it went
    (`-> Next`, the Choice rule that matched, the error), input and output in short."""
    t = s.get("t")
    rel = f"+{(t - t_first):8.3f}s" if isinstance(t, (int, float)) else " " * 10
    scope = str(s.get("scope") or "").strip("/")
    name = f"{scope}/{s.get('state')}" if scope else str(s.get("state"))
    kind = str(s.get("type")) + (f" {s['phase']}" if s.get("phase") else "")
    how = []
    if "rule" in s:
        how.append("Default" if s["rule"] == "Default" else f"rule #{s['rule']}")
    if s.get("error"):
        how.append(f"{'caught ' if s.get('caught') else ''}{s['error']}")
    if s.get("next"):
        how.append(f"-> {s['next']}")
    elif "error" not in s and s.get("phase") != "start":
        how.append("end")
    if s.get("items") is not None:
        how.append(f"{s['items']} branches")
    io = []
    if "in" in s:
        io.append(f"in {_short(s['in'], 60)}")
    if "out" in s:
        io.append(f"out {_short(s['out'], 60)}")
    return "  ".join([rel, f"{kind:<13}", f"{name:<28}", " ".join(how)] + (["; ".join(io)] if io else []))


def retry_lines(s: dict[str, Any], t_first: float) -> list[str]:
    """One line per attempt of Task step `s` that its Retry retried (runtime.asl.steps
    StepLog.retried: `at`, `end`, `error`, `cause`), before the state's own line, as
    GetExecutionHistory records a `*Failed` event per retried attempt: when it began, the
    attempt number, how long it ran and the error with its message."""
    scope = str(s.get("scope") or "").strip("/")
    name = f"{scope}/{s.get('state')}" if scope else str(s.get("state"))
    out = []
    for n, r in enumerate(s.get("retries") or [], 1):
        at, end = r.get("at"), r.get("end")
        rel = f"+{(at - t_first):8.3f}s" if isinstance(at, (int, float)) else " " * 10
        took = f" after {(end - at) * 1000:.1f} ms" if isinstance(at, (int, float)) and isinstance(end, (int, float)) \
            else ""
        detail = _detail(f"{r.get('error')}: {r['cause']}" if r.get("cause") else str(r.get("error")))
        out.append("  ".join([rel, f"{str(s.get('type')):<13}", f"{name:<28}",
                              f"attempt {n} failed{took}, retried: {detail}"]))
    return out


def history_text(events: list[dict[str, Any]]) -> str:
    """One line per event: time, kind, invocation, attempt, duration and detail. For a Step
    Functions app the states each execution walked or ran come first (`state_line`, after
    the attempts a Retry retried, `retry_lines`), and the
    execution of the compiled function that ran them follows as their detail (`  in ...`)."""
    if not events:
        return "no events (runtime.history is session-only or off?)\n"
    t_first = min(e.get("t0") or 0 for e in events)
    lines = []
    for e in events:
        states = e.get("states")
        steps = states if isinstance(states, list) else []
        for s in steps:
            lines += retry_lines(s, t_first)
            lines.append(state_line(s, t_first))
        t0, t1 = e.get("t0"), e.get("t1")
        dur = f"{(t1 - t0) * 1000:8.1f} ms" if t0 is not None and t1 is not None and t1 != t0 else " " * 11
        rel = f"+{(t0 - t_first):8.3f}s" if t0 is not None else " " * 10
        att = f"#{e['attempt']}" if e.get("attempt") else "  "
        parts = [rel, f"{e['kind']:<13}", f"{e.get('instance') or e.get('function') or '-':<28}", f"{att:<3}", dur]
        more = []
        if e.get("user_ms") is not None and e["kind"] in ("ran", "adopted", "failed", "dropped", "crashed"):
            more.append(f"user {e['user_ms']:.1f} ms, datastore {e.get('datastore_ms', 0):.1f} ms, "
                        f"invoke {e.get('invoke_ms', 0):.1f} ms")
        if e.get("detail"):
            more.append(_detail(str(e["detail"])))
        line = "  ".join(parts) + ("  " + "; ".join(more) if more else "")
        lines.append(f"{' ' * 11}  in {line.lstrip()}" if steps else line)
    return "\n".join(lines) + "\n"


def log_text(r: dict[str, Any], with_session: bool = False) -> str:
    """One captured output line, prefixed with function and invocation, like `sam logs`;
    `with_session`: the session first (lines of several sessions are mixed)."""
    where = f"{r['function']} {r.get('instance') or '?'}"
    return f"[{r.get('session') or '?'} {where}] {r['line']}" if with_session else f"[{where}] {r['line']}"
