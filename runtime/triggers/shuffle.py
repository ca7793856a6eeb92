"""Shuffle groups: Pheromone's DynamicGroup trigger on Unum's datastore sets.

Source: seed 003 (Pheromone) §III-B, "DynamicGroup: It allows a bucket to divide its data
objects into multiple groups ... based on the objects' metadata ... Once a group of data
objects are ready, they trigger the associated set of functions", and Fig. 4 (left): the
shuffle of MapReduce. Issue 26 item 2. Documented in docs/ir.md "Shuffle edges" and
docs/sets.md "Shuffle groups".

An IR edge `{Name: Reduce, Type: Shuffle}` on a function that runs in a fan-out frame (the
branches of a Map: the *producers* of the stage) works as follows:

- Each producer returns its keyed output: a list of `[key, value]` pairs, key a string
  (at most MAX_KEY_CHARS characters), value any JSON value; a key may repeat. Anything else
  fails the producer with a one-line TypeError naming the function and the bad pair
  (`keyed_pairs`). The output is committed once, as the producer's checkpoint.
- After its commit a producer adds itself to the stage's set `shuffle/<stage>` (the
  fan-in set mechanism of runtime/ports.py `Datastore.set_add`, docs/sets.md).
- The producer whose add completes the set (every producer committed) reads every
  producer's checkpoint (one `get_many`), groups the pairs by key (values ordered by
  producer index, then emission order), and invokes the consumer once per distinct key,
  keys in code-point order: key number i of K is the invocation `Reduce-UnumIndex-...i`
  with a new fan-out frame (index i, size K) in place of the producers' frame. The key
  never reaches a datastore key or a path: names use its index only. The consumer's input
  is the list of its key's values, inline or, over the invoker's payload limit, in one
  blob; `context.key` is the key (`Data.Source = "shuffle"`, `{"Key", "Values"|"Blob"}`).
- The consumers' outputs join like a Map's branches: `Values: [Reduce-UnumIndex-*]` with
  `Pop` (in key order); no keys at all invokes that join with `[]` (the edge's EmptyJoin).
- A producer may have other edges beside its Shuffle edge (a Scalar side edge, a Map, a
  Fan-in): the stage counts as one consumer of each producer, as the GC of other edges
  counts a child (runtime/gc.py). After invoking every consumer the completing producer
  collects the checkpoint of each producer that has no other consumer (a tombstone in gc
  mode `safe`), adds the stage (member `shuffle/<stage>`) to the `gc/<producer>` set of
  each producer that has more, whose last consumer to checkpoint collects it, and deletes
  the stage's set. So a producer killed after it joined the stage and before it invoked
  its other edges still finds its checkpoint when redelivered, and invokes them (issue 33).
- A second completer (DynamoDB may show two overlapping adds the complete size; the
  redelivery of a producer with more edges completes the set again) that finds a
  checkpoint collected stops: a checkpoint is collected only once the stage added itself,
  after it invoked everything. Otherwise it fires again: its plan, made from committed
  checkpoints only, is identical, so a duplicate consumer call is deduplicated by the
  consumer's checkpoint (the commit-point rule, docs/protocol.md).

The trigger is `ShuffleStage` (runtime/triggers/base.py `Trigger`, what the engine calls):
a fan-in's join of the stage's set (runtime/triggers/fanin.py), then `fire_stage`.

Datastore operations per producer: 1 checkpoint create + 1 set add (+ the completer's one
read of all N checkpoints and N tombstones; a producer with more edges: a `gc/` set add
instead of the tombstone, and its last consumer's tombstone); per key: the consumer's
checkpoint create.

Under gc `eager` (issue 33) the stage's producers are deleted, so a producer's late
duplicate runs again; the completer creates `done/shuffle/<stage>` (runtime.payload.done_key,
`Engine._record_done`) after invoking the consumers and before collecting the producers, a
producer reads it before its set add (`Engine._consumed`: found, it joins nothing and its
re-run's checkpoint is collected), and a completer reads it again after the producers'
checkpoints (found: one of them may be a re-run's, it fires nothing). + 1 create per stage,
+ 1 read per producer and per completer, under `eager` only.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import IRError, UserFunctionError
from ..payload import Frame, Parent, Payload, RefList, done_key, frames_name
from ..storage import blob_key, encode, item_blobs
from .base import Fired
from .fanin import FanIn

__all__ = ["SHUFFLE_SOURCE", "ShuffleStage", "consumer_input", "consumer_values", "keyed_pairs",
           "shuffle_key"]

MAX_KEY_CHARS = 1024
SHUFFLE_SOURCE = "shuffle"  # Data.Source of a consumer's payload


def shuffle_key(stage: str) -> str:
    """Datastore set of the producers of a shuffle stage that have committed; `stage` is the
    consumer function's invocation name at the producers' enclosing frames."""
    return f"shuffle/{stage}"


def keyed_pairs(value: Any, function: str, target: str) -> list[tuple[str, Any]]:
    """The `[key, value]` pairs of a producer's output, in emission order.

    Raises UserFunctionError("TypeError", one line naming `function`, the edge's `target`
    and the first bad element) when `value` is not a list of [string key, JSON value]
    pairs or a key is longer than MAX_KEY_CHARS."""
    head = f"{function} has a Shuffle edge to {target}, so it must return a list of [key, value] pairs"
    if not isinstance(value, list):
        raise UserFunctionError("TypeError", f"{head}, got {type(value).__name__}")
    out: list[tuple[str, Any]] = []
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise UserFunctionError("TypeError", f"{head}; element [{i}] is {_short(pair)}")
        key = pair[0]
        if not isinstance(key, str):
            raise UserFunctionError("TypeError", f"{head}; element [{i}] has key {_short(key)} "
                                    f"({type(key).__name__}): keys are strings (use str(key))")
        if len(key) > MAX_KEY_CHARS:
            raise UserFunctionError("TypeError", f"{head}; element [{i}] has a key of {len(key)} "
                                    f"characters, over the limit of {MAX_KEY_CHARS}")
        out.append((key, pair[1]))
    return out


def group(outputs: list[Any], function: str, target: str) -> tuple[list[str], dict[str, list[Any]]]:
    """Group the producers' committed outputs (in producer-index order): returns the keys in
    code-point order and each key's values ordered by producer index, then emission order."""
    groups: dict[str, list[Any]] = {}
    for out in outputs:
        for key, val in keyed_pairs(out, function, target):
            groups.setdefault(key, []).append(val)
    return sorted(groups), groups


def consumer_input(value: Any) -> tuple[str, list[Any] | None, str | None]:
    """(key, values, blob ref) of a consumer payload's `Data.Value`; IRError when malformed."""
    if not isinstance(value, dict) or not isinstance(value.get("Key"), str) \
            or not (isinstance(value.get("Values"), list) or isinstance(value.get("Blob"), str)):
        raise IRError(f"shuffle payload {_short(value)} is not {{Key, Values | Blob}}")
    return value["Key"], value.get("Values"), value.get("Blob")


def _short(v: Any, limit: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def consumer_values(value: Any, blobs: Any, session: str) -> list[Any]:
    """A consumer's input: its key's values, from the payload or from the blob it names
    (KeyError when the blob is gone: the consumer already committed and collected it)."""
    _, values, ref = consumer_input(value)
    if ref is not None:
        return json.loads(blobs.get(session, ref))
    return values  # type: ignore[return-value]


def fire_stage(engine: Any, ex: Any, call: Any, context: dict[str, Any], depth: int) -> int:
    """Run a complete shuffle stage from the producer `ex` whose set add completed it:
    read every producer's checkpoint, invoke one consumer per key (or the EmptyJoin with
    `[]` when there is no key), then collect the producers' checkpoints by their consumer
    counts (runtime.gc.Collector, the stage as one consumer) and delete the set.
    Returns the number of invocations made (0 when another completer already fired: a
    producer's checkpoint is collected). `engine` is the runtime.engine.Engine; `call` the
    planned runtime.plan.Call (`shuffle=True`); `context`/`depth` those of its children.
    A history event `fired` (docs/observability.md) records producers, keys and bytes."""
    session, refs = ex.session, call.refs
    names, keys = refs.names(), refs.keys()
    items = engine.ds.get_many(session, keys)
    if any(it is None or it.get("gc") for it in items):
        return 0  # another completer invoked every consumer, then collected
    try:
        outputs = [ex.values.load(session, it) for it in items]
    except KeyError:
        return 0  # a producer's blob was collected with its checkpoint: same as above
    if engine.options.gc == "eager" and engine.ds.get(session, done_key(call.set_name)) is not None:
        # read after the checkpoints: the stage fired and deleted them, and one read here
        # may be a producer's re-run (a completer slow between its read of the item in
        # Engine._consumed and its set add re-created the set): fire nothing
        return 0
    order, groups = group(outputs, engine.ir.name, call.target)
    it, version = call.iteration, ex.payload.version
    calls: list[tuple[str, dict[str, Any]]] = []
    payload_bytes = 0
    if not order:
        edge = next((e for e in engine.ir.next if e.type == "Shuffle" and e.target == call.target), None)
        if edge is not None and edge.empty_join is not None:
            join, mods = edge.empty_join
            frames, _, jit = engine.planner._apply_modifiers(mods, list(call.frames) + [Frame(0, 0, it)],
                                                             [], it, None)
            child = Payload(session, "refs", RefList([], jit).to_wire(), tuple(frames), jit, (), version,
                            dict(context), depth + 1)
            calls.append((join, child.encode()))
    for i, key in enumerate(order):
        frames = tuple(call.frames) + (Frame(i, len(order), it),)
        vals = groups[key]
        data: Any = {"Key": key, "Values": vals}
        size = len(encode(data))
        if size > engine.invoker.max_payload_bytes:
            raw = encode(vals)
            target = frames_name(call.target, frames, it)
            data = {"Key": key, "Blob": ex.values.put(session, blob_key(f"payload/{target}", raw), raw)}
        payload_bytes += size
        child = Payload(session, SHUFFLE_SOURCE, data, frames, it, (), version, dict(context), depth + 1)
        calls.append((call.target, child.encode()))
    rec = getattr(engine._obs, "rec", None)
    if rec is not None:
        rec["extra"].append({"kind": "fired", "t0": engine.clock(), "trigger": "shuffle",
                             "target": call.target, "producers": len(names), "keys": len(order),
                             "detail": f"shuffle {call.set_name}: {len(names)} producers, "
                                       f"{len(order)} keys -> {call.target} ({payload_bytes} bytes)"})
    if len(calls) > 1:
        half = len(calls) // 2
        engine.invoker.invoke_many(calls[:half])
        engine.faults.point("mid_invoke", session, ex.instance)
        engine.invoker.invoke_many(calls[half:])
    elif calls:
        engine.invoker.invoke_many(calls)
    # every consumer invocation was accepted: the stage no longer needs the producers'
    # checkpoints. The stage is one consumer of each producer; a producer with more edges
    # (a Scalar side edge, a Map) is collected through its `gc/<producer>` set once its
    # other consumers checkpointed too (runtime/gc.py), the stage's member being the set's
    # name `shuffle/<stage>` (it contains "/", so no invocation name can equal it)
    if engine.options.gc != "none":
        if engine.options.gc == "eager":  # before the producers' checkpoints are deleted: a
            # producer's late re-run finds it and joins no re-created stage (Engine._consumed)
            engine._record_done(ex, call.set_name)
        parents = [Parent(name, int(item.get("consumers", 1)), tuple(item_blobs(item, published=False)))
                   for name, item in zip(names, items)]
        engine.collector.collect(session, call.set_name, parents, None, None, lambda: engine._expiry(ex),
                                 ex.created)
        engine.ds.delete(session, [call.set_name])
    return len(calls)


class ShuffleStage(FanIn):
    """The shuffle trigger (runtime/triggers/base.py `Trigger`): a producer joins its stage's
    set as a fan-in branch joins its target's (runtime/triggers/fanin.py); the producer whose
    add completes it runs the stage (`fire_stage`, looked up when called, so a mutant of
    tools/explorer/mutants that replaces it applies)."""

    def complete(self, engine: Any, ex: Any, call: Any, context: dict[str, Any], depth: int) -> Fired:
        """Run the complete stage: its invocations are made and counted by `fire_stage`."""
        return Fired([], fire_stage(engine, ex, call, context, depth))
