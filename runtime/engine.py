"""The ingress/egress engine that runs in-situ with every user function.

Source: seed 001 §3.3 (checkpoints, Figure 3), §3.4 (fan-in sets), §3.5 (garbage
collection), §3.6 (naming); ARCHITECTURE.md §3. One `Engine.handle(payload)` call is one
execution of one invocation:

Ingress
  1. Decode the payload; derive this invocation's name from function, fan-out frames and
     iteration.
  2. One consistent read of [session result, own checkpoint, fan-in input checkpoints].
     Own checkpoint collected (tombstone) -> drop: every consumer has checkpointed already.
     Own checkpoint absent but the session finished -> drop (stale duplicate).
     Own checkpoint present -> skip the user code and adopt the stored value.
Egress
  3. Run the user code (in-function retries per the IR `Retry`), then create the checkpoint
     if absent; on conflict adopt the stored value. The value and the consumer count of the
     plan computed from the committed value are stored together.
  4. Evaluate `Next` on the committed value and invoke every continuation concurrently; for
     a fan-in edge add this invocation's name to the target's set and invoke the target
     when the set is complete. Duplicates always re-invoke (the winner may have crashed).
     No continuation -> the value is the session result (first terminal wins).
  5. GC, after the continuations: collect each parent checkpoint once all of its consumers
     have checkpointed (direct for one consumer, through a GC set otherwise); the fan-in
     target deletes its set; when the session ends, everything but the result is swept.

GC modes (`Options.gc`): "safe" (default) replaces a collected checkpoint by a tombstone,
so a duplicate delivered arbitrarily late is recognised and dropped instead of re-running a
nondeterministic function, and sweeps the session when it ends; "eager" deletes collected
checkpoints outright as in seed 001 §3.5 (a duplicate delivered after its checkpoint was
collected runs again, §3.5 "same semantics as a separate invocation") and sweeps at the end;
"none" writes no GC operations and relies on item expiry alone.
"""

from __future__ import annotations

import json
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import IRError, UnumError, UserFunctionError
from .expr import Env
from .ir import INDEX_SEP, FunctionIR, Modifier, ValueTemplate
from .payload import (ITER_SEP, RESULT_KEY, Frame, Payload, checkpoint_key, fanin_key, gc_key,
                      instance_name)
from .ports import BlobStore, Datastore, Invoker

GC_MODES = ("safe", "eager", "none")


@dataclass(frozen=True)
class Options:
    """Runtime options from the app manifest (`runtime:` section)."""

    checkpoint: bool = True
    gc: str = "safe"
    result_retention_seconds: int = 7 * 86400
    intermediate_retention_seconds: int = 86400


class Faults:
    """Fault-injection hook; the default does nothing. Test targets override `point` to
    raise InjectedCrash at named points: before_checkpoint, after_checkpoint, mid_invoke,
    before_gc."""

    def point(self, name: str, session: str, instance: str) -> None:
        return None


@dataclass
class UserContext:
    """The `context` argument of a user handler (see docs/ir.md)."""

    session: str
    instance: str
    function: str
    indexes: list[int]
    sizes: list[int]
    iteration: int
    extra: dict[str, Any] = field(default_factory=dict)  # payload fields beyond the protocol's

    @property
    def index(self) -> int | None:
        return self.indexes[-1] if self.indexes else None

    @property
    def size(self) -> int | None:
        return self.sizes[-1] if self.sizes else None


@dataclass
class Call:
    """A planned invocation of `target` (Scalar/Map edge, or a fan-in once complete)."""

    target: str
    frames: tuple[Frame, ...]
    iteration: int
    value: Any = None
    refs: "RefList | None" = None  # fan-in: the ordered input invocation names
    set_name: str | None = None    # fan-in: the coordination set
    delay: float = 0.0             # seconds to defer the invocation (edge `Delay`)


@dataclass
class Plan:
    calls: list[Call] = field(default_factory=list)

    @property
    def consumers(self) -> int:
        return len(self.calls)


@dataclass
class Outcome:
    """What one execution did: status is 'ran', 'adopted', 'dropped' or 'failed'."""

    status: str
    session: str
    instance: str
    detail: str = ""
    invoked: int = 0


class RefList:
    """The expanded `Values` of a fan-in edge, kept compact: a glob part `W-UnumIndex-*` of a
    10,000-branch Map is (function, prefix indexes, size), so counting and the membership
    test of each branch are O(parts), and the names are built only by the branch that
    completes the fan-in (otherwise every branch would build all N names: O(N^2))."""

    def __init__(self, parts: list[tuple[str, tuple[int, ...], int | None]], iteration: int):
        self.parts = parts
        self.iteration = iteration

    def __len__(self) -> int:
        return sum(1 if size is None else size for _, _, size in self.parts)

    def __contains__(self, name: str) -> bool:
        for fn, idx, size in self.parts:
            if size is None:
                if instance_name(fn, idx, self.iteration) == name:
                    return True
                continue
            i = _last_index(name)
            if i is not None:
                if 0 <= i < size and instance_name(fn, idx + (i,), self.iteration) == name:
                    return True
            elif any(instance_name(fn, idx + (j,), self.iteration) == name for j in range(size)):
                return True  # hashed long names: linear scan
        return False

    def names(self) -> list[str]:
        out: list[str] = []
        for fn, idx, size in self.parts:
            if size is None:
                out.append(instance_name(fn, idx, self.iteration))
            else:
                out.extend(instance_name(fn, idx + (i,), self.iteration) for i in range(size))
        return out

    def distinct(self) -> int:
        """Number of distinct names (what a complete coordination set holds)."""
        if all(size is None for _, _, size in self.parts):
            return len(set(self.names()))
        return len(self)


def _last_index(name: str) -> int | None:
    """The innermost index of an invocation name, or None (no index, or a hashed name)."""
    base = name.split(ITER_SEP, 1)[0]
    if INDEX_SEP not in base:
        return None
    tail = base.rsplit(INDEX_SEP, 1)[1].rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _indexes(frames) -> tuple[int, ...]:
    return tuple(f.index for f in frames)


def _sizes(frames) -> tuple[int, ...]:
    return tuple(f.size for f in frames)


class Engine:
    """Runs one function's invocations.

    `handler(event, context)` is the user function; `datastore`, `blobs`, `invoker` are the
    target's adapters; `faults` the fault-injection hook; `clock` returns Unix seconds.
    `wrapper`, when given, replaces the plain user call: `wrapper(call_user, value, ctx)`
    returns (value, route) and may raise UserFunctionError (used by compiled ASL).
    """

    def __init__(self, ir: FunctionIR, handler: Callable[[Any, Any], Any], datastore: Datastore,
                 invoker: Invoker, blobs: BlobStore, options: Options | None = None,
                 faults: Faults | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 log: Callable[[str], None] | None = None, wrapper=None):
        if options is not None and options.gc not in GC_MODES:
            raise IRError(f"runtime.gc: {options.gc!r} must be one of {', '.join(GC_MODES)}")
        self.ir = ir
        self.handler = handler
        self.ds = datastore
        self.invoker = invoker
        self.blobs = blobs
        self.options = options or Options()
        self.faults = faults or Faults()
        self.clock = clock
        self.sleep = sleep
        self.log = log or (lambda msg: None)
        self.wrapper = wrapper
        if wrapper is not None and hasattr(wrapper, "attach"):
            wrapper.attach(self)  # wrappers that keep state in the datastore (e.g. ASL joins)
        self.checkpointing = (self.options.checkpoint and ir.checkpoint) or ir.has_fanin

    # ------------------------------------------------------------------ helpers
    def _exp(self, result: bool = False) -> float:
        ttl = (self.options.result_retention_seconds if result
               else self.options.intermediate_retention_seconds)
        return self.clock() + ttl

    def _store_value(self, session: str, key: str, value: Any, item: dict[str, Any]) -> dict[str, Any]:
        """Put `value` inline in `item`, or in the blob store when the item would be too big."""
        data = json.dumps(value, separators=(",", ":")).encode()
        if len(data) > self.ds.max_item_bytes - 2048:
            item["blob"] = self.blobs.put(session, key, data)
            self._blobbed = True
        else:
            item["v"] = value
        return item

    def _load_value(self, session: str, item: dict[str, Any]) -> Any:
        if "blob" in item:
            return json.loads(self.blobs.get(session, item["blob"]))
        return item.get("v")

    # ------------------------------------------------------------------ planning
    def _apply_modifiers(self, mods: tuple[Modifier, ...], frames: list[Frame], out: Any,
                         iteration: int, route: Any) -> tuple[list[Frame], Any]:
        frames = list(frames)
        for m in mods:
            if m.pop:
                if not frames:
                    raise IRError(f"{self.ir.name}: Payload Modifiers: 'Pop' with no fan-out frame")
                frames.pop()
                continue
            assert m.assign is not None
            env = Env(out, _indexes(frames), _sizes(frames), iteration, route)
            val = m.assign.expr.evaluate(env)
            tgt = m.assign.target
            if tgt == "out":
                out = val
            elif not frames:
                raise IRError(f"{self.ir.name}: Payload Modifiers: {m.source!r} with no fan-out frame")
            elif tgt == "size":
                frames[-1] = Frame(frames[-1].index, int(val))
            else:
                k = len(frames) - 1 - int(tgt)
                if k < 0:
                    raise IRError(f"{self.ir.name}: Payload Modifiers: {m.source!r}: no frame ${tgt}")
                frames[k] = Frame(int(val), frames[k].size)
        return frames, out

    def _expand_values(self, values: tuple[ValueTemplate, ...], env: Env, iteration: int) -> "RefList":
        parts: list[tuple[str, tuple[int, ...], int | None]] = []
        for v in values:
            idx: list[int] = []
            size = None
            for part in v.parts:
                if part.glob:
                    size = env.sizes[-1] if env.sizes else None
                    if size is None:
                        raise IRError(f"{self.ir.name}: Values: {v.source!r}: '*' needs a fan-out frame")
                elif part.literal is not None:
                    idx.append(part.literal)
                else:
                    val = part.expr.evaluate(env)  # type: ignore[union-attr]
                    if not isinstance(val, int) or isinstance(val, bool):
                        raise IRError(f"{self.ir.name}: Values: {v.source!r}: index {val!r} is not an int")
                    idx.append(val)
            parts.append((v.function, tuple(idx), size))
        return RefList(parts, iteration)

    def plan(self, value: Any, p: Payload, instance: str, route: Any = None) -> Plan:
        """Evaluate every `Next` edge on the committed value (Appendix A.2.4).

        Raises IRError for expression failures or a Values list that does not contain this
        invocation, UserFunctionError when a Map edge gets a non-list output."""
        plan = Plan()
        n_scalar = sum(1 for e in self.ir.next if e.type == "Scalar")
        fan = self.ir.scalar_fanout
        pos = -1
        for i, e in enumerate(self.ir.next):
            if e.type == "Scalar":
                pos += 1
            env = Env(value, _indexes(p.frames), _sizes(p.frames), p.iteration, route)
            if e.conditional is not None and not e.conditional.evaluate(env):
                continue
            iteration = p.iteration + (1 if e.iterate else 0)
            if e.type == "Scalar":
                frames = list(p.frames) + ([Frame(pos, n_scalar)] if fan else [])
                frames, out = self._apply_modifiers(e.modifiers, frames, value, iteration, route)
                delay = 0.0
                if e.delay is not None:
                    d = e.delay.evaluate(env)
                    if not isinstance(d, (int, float)) or isinstance(d, bool) or d < 0:
                        raise IRError(f"{self.ir.name}: Next[{i}]: Delay {e.delay.source!r} gave {d!r}, "
                                      "not a non-negative number of seconds")
                    delay = float(d)
                plan.calls.append(Call(e.target, tuple(frames), iteration, out, delay=delay))
            elif e.type == "Map":
                if not isinstance(value, list):
                    raise UserFunctionError(
                        "TypeError", f"{self.ir.name}: Next[{i}] is a Map edge to {e.target}, so the "
                        f"output must be a list, got {type(value).__name__}")
                for j, item in enumerate(value):
                    frames = list(p.frames) + [Frame(j, len(value))]
                    frames, out = self._apply_modifiers(e.modifiers, frames, item, iteration, route)
                    plan.calls.append(Call(e.target, tuple(frames), iteration, out))
            else:
                refs = self._expand_values(e.values, env, p.iteration)
                if instance not in refs:
                    shown = refs.names()[:5]
                    raise IRError(f"{self.ir.name}: Next[{i}]: Values {[v.source for v in e.values]} "
                                  f"expand to {shown}{'...' if len(refs) > 5 else ''}, which does "
                                  f"not include this invocation {instance!r}")
                frames, _ = self._apply_modifiers(e.modifiers, list(p.frames), value, iteration, route)
                target_inst = instance_name(e.target, _indexes(frames), iteration)
                plan.calls.append(Call(e.target, tuple(frames), iteration, refs=refs,
                                       set_name=fanin_key(target_inst)))
        return plan

    # ------------------------------------------------------------------ user code
    def _call_user(self, value: Any, ctx: UserContext) -> Any:
        policy = self.ir.retry
        attempt = 0
        while True:
            try:
                return self.handler(value, ctx)
            except Exception as exc:  # user code: everything but BaseException
                etype = type(exc).__name__
                if attempt < policy.max_attempts and policy.matches(etype):
                    self.sleep(policy.interval * (policy.backoff ** attempt))
                    attempt += 1
                    self.log(f"{ctx.instance}: {etype}: {exc}; retry {attempt}/{policy.max_attempts}")
                    continue
                raise UserFunctionError(etype, str(exc),
                                        traceback.format_exception(type(exc), exc, exc.__traceback__)) from exc

    def _run_user(self, value: Any, ctx: UserContext) -> tuple[Any, Any]:
        if self.wrapper is not None:
            out, route = self.wrapper(self._call_user, value, ctx)
        else:
            out, route = self._call_user(value, ctx), None
        try:
            # canonical JSON form: what is checkpointed is exactly what consumers will see
            out = json.loads(json.dumps(out, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise UserFunctionError("TypeError", f"{self.ir.name} returned a value that is not "
                                    f"JSON-serializable ({type(out).__name__}): {exc}") from None
        return out, route

    # ------------------------------------------------------------------ main entry
    def handle(self, raw: dict[str, Any]) -> Outcome:
        """Run one execution of the invocation described by the wire payload `raw`.

        Returns an Outcome. Raises InjectedCrash (fault injection) or infrastructure errors
        from the adapters, which the platform retries; user errors never propagate: they are
        recorded as the session's failure."""
        p = Payload.decode(raw, new_session=lambda: str(uuid.uuid4()))
        inst = instance_name(self.ir.name, _indexes(p.frames), p.iteration)
        session = p.session
        ctx = UserContext(session, inst, self.ir.name, list(_indexes(p.frames)),
                          list(_sizes(p.frames)), p.iteration, p.extra)
        refs: list[str] = list(p.value) if p.source == "checkpoint" else []
        parents: list[tuple[str, int]] = list(p.parents)
        own = None
        self._created: list[str] = []  # items this execution may have created (late-write check)
        planned: Plan | None = None
        self._blobbed = False
        try:
            # ---- ingress
            if self.checkpointing or refs:
                names = [RESULT_KEY] + ([checkpoint_key(inst)] if self.checkpointing else [])
                names += [checkpoint_key(r) for r in refs]
                items = self.ds.get_many(session, names)
                result_item = items[0]
                own = items[1] if self.checkpointing else None
                ref_items = items[(2 if self.checkpointing else 1):]
                if own is not None and own.get("gc"):
                    return Outcome("dropped", session, inst, "checkpoint already collected")
                if own is None and result_item is not None:
                    # a stale execution; an earlier attempt of it may have crashed after
                    # writing past the final sweep, so sweep again (rare: stale paths only)
                    self._end_session(session)
                    return Outcome("dropped", session, inst, "session already finished")
                if refs:
                    parents = [(r, int(it.get("consumers", 1))) for r, it in zip(refs, ref_items)
                               if it is not None and not it.get("gc")]
            if own is not None:
                value, route = self._load_value(session, own), own.get("route")
                status = "adopted"
            else:
                if refs:
                    missing = [r for r, it in zip(refs, ref_items) if it is None or it.get("gc")]
                    if missing:
                        raise UnumError(f"{inst}: input checkpoint(s) {missing[:3]} missing or expired")
                    event = [self._load_value(session, it) for it in ref_items]
                elif p.source == "blob":
                    event = json.loads(self.blobs.get(session, p.value))
                else:
                    event = p.value
                value, route = self._run_user(event, ctx)
                status = "ran"
                if self.checkpointing:
                    plan = self.plan(value, p, inst, route)
                    self.faults.point("before_checkpoint", session, inst)
                    item = self._store_value(session, checkpoint_key(inst) + "/v", value,
                                             {"consumers": plan.consumers, **({"route": route} if route is not None else {})})
                    created, stored = self.ds.create_if_absent(session, checkpoint_key(inst), item, self._exp())
                    if created:
                        self._created.append(checkpoint_key(inst))
                        planned = plan
                    else:
                        if stored.get("gc"):
                            return Outcome("dropped", session, inst, "checkpoint already collected")
                        value, route = self._load_value(session, stored), stored.get("route")
                        status = "adopted"
                    self.faults.point("after_checkpoint", session, inst)
            plan = planned if planned is not None else self.plan(value, p, inst, route)
        except UserFunctionError as err:
            return self._fail(session, inst, err)
        except IRError as err:
            return self._fail(session, inst, UserFunctionError("IRError", str(err)))

        # ---- egress: continuations
        invoked = self._continue(session, inst, plan, p)
        if not plan.calls:
            item = self._store_value(session, "result/v", value,
                                     {"status": "SUCCEEDED", "instance": inst})
            self.ds.create_if_absent(session, RESULT_KEY, item, self._exp(result=True))
        self.faults.point("before_gc", session, inst)
        # ---- GC
        self._collect(session, inst, parents, fanin_key(inst) if refs else None)
        if not plan.calls:
            self._end_session(session)
        else:
            self._undo_late_writes(session)
        return Outcome(status, session, inst, invoked=invoked)

    def _undo_late_writes(self, session: str) -> None:
        """`safe` GC: if the session ended while this execution ran (another branch reached a
        terminal, or this is a slow duplicate), the sweep may already have happened, so
        whatever this execution created would never be collected: delete it again. One
        consistent read, after the continuations, off the critical path."""
        if self.options.gc != "safe" or not (self._created or self._blobbed):
            return
        if self.ds.get(session, RESULT_KEY) is None:
            return  # still running: the final sweep will see these items
        if self._created:
            self.ds.delete(session, self._created)
        if self._blobbed:
            self.blobs.sweep(session, keep=("result/v",))

    def _continue(self, session: str, inst: str, plan: Plan, p: Payload) -> int:
        consumers = plan.consumers if self.checkpointing else 0
        parents = [(inst, consumers)] if self.checkpointing else []
        batch: list[tuple[str, dict[str, Any]]] = []
        delayed: dict[float, list[tuple[str, dict[str, Any]]]] = {}
        for c in plan.calls:
            if c.refs is not None:
                size = self.ds.set_add(session, c.set_name, inst, self._exp())  # type: ignore[arg-type]
                if size == 1:
                    self._created.append(c.set_name)  # type: ignore[arg-type]
                if size < c.refs.distinct():
                    continue
                child = Payload(session, "checkpoint", c.refs.names(), c.frames, c.iteration, (), p.version,
                                dict(p.extra))
            else:
                child = Payload(session, "http", c.value, c.frames, c.iteration, tuple(parents), p.version,
                                dict(p.extra))
                data = json.dumps(c.value, separators=(",", ":")).encode()
                if len(data) > self.invoker.max_payload_bytes:
                    target = instance_name(c.target, _indexes(c.frames), c.iteration)
                    child.source, child.value = "blob", self.blobs.put(session, f"payload/{target}", data)
                    self._blobbed = True
            if c.delay > 0:
                delayed.setdefault(c.delay, []).append((c.target, child.encode()))
                continue
            batch.append((c.target, child.encode()))
        for d, calls in sorted(delayed.items()):
            self.invoker.invoke_many(calls, delay=d)
        if len(batch) > 1:
            half = len(batch) // 2
            self.invoker.invoke_many(batch[:half])
            self.faults.point("mid_invoke", session, inst)
            self.invoker.invoke_many(batch[half:])
        elif batch:
            self.invoker.invoke_many(batch)
        return len(batch) + sum(len(v) for v in delayed.values())

    def _collect(self, session: str, inst: str, parents: list[tuple[str, int]],
                 own_set: str | None) -> None:
        """Collect parent checkpoints whose consumers have all checkpointed (seed 001 §3.5);
        a fan-in target also deletes its coordination set `own_set`."""
        if self.options.gc == "none":
            return
        if own_set is not None:
            self.ds.delete(session, [own_set])
        for name, consumers in parents:
            if consumers > 1:
                size = self.ds.set_add(session, gc_key(name), inst, self._exp())
                if size == 1:
                    self._created.append(gc_key(name))
                if size < consumers:
                    continue
            if self.options.gc == "safe":
                self.ds.put(session, checkpoint_key(name), {"gc": True}, self._exp())
                self._created.append(checkpoint_key(name))
            else:
                self.ds.delete(session, [checkpoint_key(name)])
            if consumers > 1:
                self.ds.delete(session, [gc_key(name)])

    def _end_session(self, session: str) -> None:
        if self.options.gc == "none":
            return
        self.ds.sweep(session, [RESULT_KEY])
        self.blobs.sweep(session, keep=("result/v",))

    def _fail(self, session: str, inst: str, err: UserFunctionError) -> Outcome:
        self.log(f"{inst}: {err.error_type}: {err.message}")
        item = {"status": "FAILED", "instance": inst, "error": err.error_type,
                "cause": err.message, "trace": err.trace[-20:]}
        self.ds.create_if_absent(session, RESULT_KEY, item, self._exp(result=True))
        self._end_session(session)
        return Outcome("failed", session, inst, f"{err.error_type}: {err.message}")
