"""Map a violation to the bug classes of issue 8 (heuristic, by invariant, message and
workflow; docs/explorer.md lists the rules):

1 pre-commit blob shared  -- a readable checkpoint/result whose blob changed, or a value
                             read through a blob that differs from the committed one
2 ASL wrapper state       -- a compiled Step Functions result inconsistent with the
                             committed values (asl/fan written before the checkpoint,
                             `$$` from each execution's own payload)
3 user failure not committed -- FAILED by a duplicate after a success was committed
4 fan-in target without checkpoint -- the platform gave up on "input checkpoint(s) missing"
6 reads assumed snapshots -- a checkpoint re-created (re-run) after it had been collected
                             or swept, so two values or a late write exist
7 Map over []/loop in Map -- the result comes from a non-terminal, or the fan-in never fires
8 leak/expiry             -- items or blobs left after the end
9 lost transaction        -- (local deferred transactions) a hang or leak after a kill
                             rolled back a transaction whose blob deletes had taken effect
10 late user code         -- (f) user code ran for a delivery that began after the result
                             or after its invocation committed
11 overwritten commit     -- (b) a put replaced a committed checkpoint or result
12 transition count       -- a TransitionLimitExceeded reached only by a duplicate's count
13 late callback write    -- (d) callback items (asl/cb, asl/cbs, asl/hb) left after the end:
                             written by a waiting Task or a SendTask* call after the final sweep
14 clock                  -- (g) a session timeout, heartbeat timeout or accepted callback
                             that the virtual clock and the sends contradict, user code
                             after a Wait before its due time, a redelivery before its delay
15 quorum fired twice     -- (a)/(e) a `Quorum: k` target invoked with two different input
                             lists, or a quorum result that is not k committed answers
other                     -- anything else (read the trace)
"""

from __future__ import annotations


def classify(spec, v, h) -> str:
    """Class label for violation `v` found in harness `h` running workflow `spec`."""
    msg = v.message
    if v.invariant == "f":
        return "10 late user code"
    if v.invariant == "g":
        return "14 clock"
    if spec.name.startswith("quorum") and "quorum" in msg:
        return "15 quorum fired twice"
    if v.invariant == "b" and "a put by" in msg:
        return "11 overwritten commit"
    if "TransitionLimitExceeded" in msg and "from a duplicate" in msg:
        return "12 transition count"
    if v.invariant == "d" and "'asl/" in msg and not h.checker.violations[0].invariant == "f":
        return "13 late callback write"
    if getattr(spec, "txn", False) and v.invariant in ("d", "e") and h.world.counts.get("crash"):
        return "9 lost transaction"
    blobbed = spec.max_item_bytes < 10_000 or spec.max_payload_bytes < 10_000
    recreated = bool(getattr(h.checker, "recreated", None))
    if spec.name.startswith("sfn-") and v.invariant in ("a", "e") and "inconsistent" in msg:
        return "2 ASL wrapper state outside the checkpoint"
    if blobbed and (v.invariant == "b" or "blob" in msg):
        return "1 pre-commit blob shared"
    if v.invariant == "c" and "the failure was not committed" in msg:
        return "3 user failure not committed"
    if v.invariant == "c" and "input checkpoint" in msg:
        return "4 fan-in target without own checkpoint"
    if v.invariant == "e" and ("not by a terminal" in msg or "hang" in msg) and spec.name in ("map-empty", "loop-in-map"):
        return "7 Map over [] / loop in a Map branch"
    if v.invariant in ("a", "b") and blobbed:
        return "1 pre-commit blob shared"
    if v.invariant in ("a", "b", "c", "e") and recreated:
        return "6 reads assumed snapshots (stale re-run)"
    if v.invariant == "d":
        return "8 leak/expiry"
    return "other"
