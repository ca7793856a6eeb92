"""Map Runs of `unumctl serve`: the Distributed Maps an execution ran, from its history.

Source: Step Functions API Reference, ListMapRuns (`mapRuns`: executionArn, mapRunArn,
stateMachineArn, startDate, stopDate) and DescribeMapRun (mapRunArn, executionArn, status,
startDate, stopDate, maxConcurrency, toleratedFailurePercentage, toleratedFailureCount,
itemCounts, executionCounts, redriveCount). A Map Run is read from the steps the runtime
records (runtime.asl.steps, history level `full`): the Distributed Map's `end` step carries
`maprun` {"arn", "items", "succeeded", "failed", "count", "percentage", "concurrency"} (runtime.asl.machine
`conclude`), its `start` step the start time. A Map Run exists once its join has run: a run
still in progress, or one whose threshold was exceeded, is not listed.
"""

from __future__ import annotations

from typing import Any

from runtime.asl.steps import expand

__all__ = ["describe", "list_entry", "map_runs"]


def map_runs(events: list[dict[str, Any]], execution_arn: str) -> list[dict[str, Any]]:
    """The Map Runs of one execution, oldest first, from its history `events`
    (HistoryReader.history): dicts with ListMapRuns' fields plus `counts` (DescribeMapRun's
    itemCounts) and the thresholds."""
    starts: dict[tuple[str, str], float] = {}
    out: list[dict[str, Any]] = []
    for e in sorted(events, key=lambda e: e.get("t0") or 0):
        if e.get("kind") not in ("ran", "failed") or not e.get("states"):
            continue
        for s in expand(e["states"], t0=e.get("t0")):
            if s.get("type") != "Map":
                continue
            key = (str(s.get("scope", "")), str(s.get("state")))
            if s.get("phase") == "start":
                starts.setdefault(key, s.get("t") or e.get("t0") or 0)
            run = s.get("maprun")
            if s.get("phase") == "end" and isinstance(run, dict) and \
                    not any(r["mapRunArn"] == run.get("arn") for r in out):
                stop = s.get("t") or e.get("t0") or 0
                n, ok, bad = int(run.get("items", 0)), int(run.get("succeeded", 0)), int(run.get("failed", 0))
                counts = {"pending": 0, "running": 0, "succeeded": ok, "failed": bad, "timedOut": 0,
                          "aborted": 0, "total": n, "resultsWritten": n,
                          "failuresNotRedrivable": 0, "pendingRedrive": 0}
                out.append({"executionArn": execution_arn, "mapRunArn": run.get("arn"),
                            "stateMachineArn": execution_arn.replace(":execution:", ":stateMachine:").rsplit(":", 1)[0],
                            "startDate": starts.get(key, stop), "stopDate": stop, "counts": counts,
                            "toleratedFailureCount": run.get("count") or 0,
                            "toleratedFailurePercentage": run.get("percentage") or 0,
                            "maxConcurrency": int(run.get("concurrency") or 0)})
    return out


def list_entry(run: dict[str, Any]) -> dict[str, Any]:
    """ListMapRuns' MapRunListItem of `run` (map_runs)."""
    return {k: run[k] for k in ("executionArn", "mapRunArn", "stateMachineArn", "startDate", "stopDate")}


def describe(run: dict[str, Any]) -> dict[str, Any]:
    """DescribeMapRun's response for `run` (map_runs): status SUCCEEDED (a run is recorded
    when its join ended it), maxConcurrency the Map's MaxConcurrency (0: unlimited)."""
    return {"mapRunArn": run["mapRunArn"], "executionArn": run["executionArn"], "status": "SUCCEEDED",
            "startDate": run["startDate"], "stopDate": run["stopDate"], "maxConcurrency": run["maxConcurrency"],
            "toleratedFailurePercentage": float(run["toleratedFailurePercentage"]),
            "toleratedFailureCount": int(run["toleratedFailureCount"]),
            "itemCounts": dict(run["counts"]), "executionCounts": dict(run["counts"]), "redriveCount": 0}
