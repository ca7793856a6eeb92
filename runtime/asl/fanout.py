"""The fan-out and join of a compiled Map or Parallel state: what the function before the
state (or the join, when it re-runs the state for a Retry) publishes, and the MaxConcurrency
lanes. docs/stepfunctions.md "Map and Parallel" explains the design; the ASL spec sections
"Map State" (MaxConcurrency) and "Errors" (Retry of a Map/Parallel re-runs the whole state)
are what it implements.

Items, all created through `ctx.publish` from the publisher's committed checkpoint (so a
duplicate or a retry of the publisher sees the same ones, docs/protocol.md):

* `asl/fan/<join invocation>`: {"Input": the state's raw input, "Retry": [attempts used
  per retrier], "Vars": the workflow variables at the fan-out (only when there are any),
  "Items": the child inputs of a Distributed Map (runtime.asl.distributed)};
  the join reads it (ResultPath/Output and Assign see the input and the variables as they
  were before the state; Retry counts on).
* `asl/item/<join invocation>/<j>`: the envelope of Map item j >= N when MaxConcurrency N
  limits the Map: the fan-out starts items 0..N-1 and the branch of item i, when it ends,
  starts item i+N (N lanes, no central scheduler).

Context (committed with the checkpoint, inherited by every continuation, runtime.engine
UserContext.extra): `AslLanes` = {iterator scope: {"Join", "Stride", "Size"}} for the laned
Maps the invocation is inside of.

Values: a laned Map sends {"Size": item count, "Env": envelope} along its Map edge (the
edge's modifiers `$size=$out['Size']`, `$out=$out['Env']` give every branch the full Map
size, so the fan-in expects every item); the scope end of a laned Map sends
{"AslOut": branch output, "AslNext": envelope of item i+N or None, "AslStride": N} (a
Scalar edge `$0=$0+$out['AslStride']`, `$out=$out['AslNext']` starts the next item; the
join unwraps "AslOut").
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["fan_key", "join_values", "lane_exit", "read_fan", "start"]

FAN_PREFIX = "asl/fan/"
ITEM_PREFIX = "asl/item/"
LANES = "AslLanes"


def fan_key(join_inst: str) -> str:
    """The item holding the state's input and retry counters for join `join_inst`."""
    return FAN_PREFIX + join_inst


def item_key(join_inst: str, j: int) -> str:
    """The item holding the envelope of laned Map item `j` of join `join_inst`."""
    return f"{ITEM_PREFIX}{join_inst}/{j}"


def read_fan(doc: Any) -> tuple[Any, list[int], dict[str, Any]]:
    """(the state's raw input, retry counters, variables) from an `asl/fan/` item's value."""
    return doc["Input"], [int(c) for c in doc.get("Retry", [])], dict(doc.get("Vars") or {})


def start(ctx, join_inst: str, raw: Any, envs: list[Any], counts: list[int] | None,
          lane_scope: str | None, concurrency: int,
          variables: dict[str, Any] | None = None, inputs: list[Any] | None = None) -> list[Any]:
    """Publish what the join (and the lanes) need and return the values to send along the
    fan-out edge(s). `envs` are the branch envelopes (one per Map item or Parallel branch),
    `counts` the retry counters of this attempt, `lane_scope` the iterator scope of a laned
    Map (None otherwise), `concurrency` its MaxConcurrency (0 = unlimited) and `variables`
    the workflow variables before the state; `inputs`, for a Distributed Map, the child
    inputs (its join's result records name them)."""
    publish = getattr(ctx, "publish", None)
    if publish is not None:
        doc: dict[str, Any] = {"Input": raw, "Retry": list(counts or [])}
        if variables:
            doc["Vars"] = dict(variables)
        if inputs is not None:
            doc["Items"] = inputs
        publish(fan_key(join_inst), doc)
    if lane_scope is None:
        return envs
    size = len(envs)
    stride = concurrency if 0 < concurrency < size else size
    if publish is not None:
        for j in range(stride, size):
            publish(item_key(join_inst, j), envs[j])
    extra = getattr(ctx, "extra", None)
    if isinstance(extra, dict):
        lanes = dict(extra.get(LANES) or {})
        lanes[lane_scope] = {"Join": join_inst, "Stride": stride, "Size": size}
        extra[LANES] = lanes
    return [{"Size": size, "Env": env} for env in envs[:stride]]


def lane_exit(ctx, scope: str, out: Any, read: Callable[[str], Any]) -> dict[str, Any]:
    """The value the scope end of a laned Map's branch commits: its output, and the
    envelope of the item its lane starts next (read with `read(key)`), or None."""
    lane = (ctx.extra.get(LANES) or {}).get(scope) if isinstance(getattr(ctx, "extra", None), dict) else None
    nxt, stride = None, 0
    if lane:
        stride = int(lane["Stride"])
        j = ctx.indexes[-1] + stride
        if j < int(lane["Size"]):
            nxt = read(item_key(lane["Join"], j))
    return {"AslOut": out, "AslNext": nxt, "AslStride": stride}


def join_values(ctx, lane_scope: str | None, values: list[Any]) -> list[Any]:
    """The branch outputs a join receives: unwrapped for a laned Map (whose lane entry is
    dropped from the context, so it is not carried further)."""
    if lane_scope is None:
        return values
    extra = getattr(ctx, "extra", None)
    if isinstance(extra, dict) and lane_scope in (extra.get(LANES) or {}):
        lanes = dict(extra[LANES])
        del lanes[lane_scope]
        if lanes:
            extra[LANES] = lanes
        else:
            del extra[LANES]
    return [v["AslOut"] for v in values]
