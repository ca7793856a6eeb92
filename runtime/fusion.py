"""Fused (co-located) and batched execution of user code inside one invocation.

Source: seed 004 (Serverless Dataflows), Algorithm 1: cluster short tasks with large outputs
onto the upstream worker so that the intermediate data never goes to external storage;
AWS Step Functions' ItemBatcher for batching a Map's items. The build-time transformation
that produces the IR field read here is `unumctl.tuning.colocate.apply`; what is fusible
and why a fused group stays exactly-once is written in docs/fusion.md and docs/protocol.md.

A function's IR may carry `Fused` (docs/ir.md), a mapping:

    Steps:      [{Function, Handler, Kind}, ...]  # Kind: first | scalar | map | join | branch
    BatchIn:    true   # the input is one batch {"UnumBatch": [...], "Offset": o, "Total": n}:
                       # the steps run once per item, in order; the output is their list
    FlattenIn:  true   # the input is the list of a batched Map's branch outputs (lists):
                       # concatenated before the steps, so the user code sees the item outputs
    BatchOut:   k      # the output (a Map edge's list) is cut into batches of k items
    InProcess:  [{Function, Handler, Ir}, ...]  # fan-in targets this function runs in its own
                       # process when its fan-in add completes their set (InProcessInvoker):
                       # the target's own IR and checkpoint, one invocation and cold start fewer

The steps run in one execution and the engine commits only the last step's output, under
the invocation's own name (one commit point for the whole group): `first` is the
function's own handler; `scalar` runs on the previous output; `map` runs once per item of
the previous output (a list) with the item's index appended to the context, and the next
step, always a `join`, runs on the ordered list of those outputs. A **parallel region** (a
static Scalar fan-out, ASL's Parallel) is a run `branch, scalar..., branch, scalar..., join`:
each `branch` step starts branch i (i counted from 0 in the region) and the `scalar` steps
after it continue that branch; every branch runs, one after another in branch order, on the
output of the step before the region, each member with index i and size n (the number of
branches) appended to the context, as the engine gives a static fan-out's branch
(runtime.plan: Frame(pos, n)); the `join` runs on the ordered list of the branch tails'
outputs with the region source's context (the Fan-in's `Pop`). Values pass between steps
in canonical JSON form, as they would through a checkpoint. This module never imports
unumctl nor a cloud SDK: every target runs a fused bundle through the same engine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import IRError
from .payload import instance_name
from .storage import canonical_json

__all__ = ["BATCH_OFFSET", "FUSED_DIR", "Fusion", "InProcessInvoker", "Step", "batches", "compose", "load_member",
           "parallel_region"]

FUSED_DIR = "unum_fused"  # a bundle's directory holding each later member's code: unum_fused/<Function>/
STEP_KINDS = ("first", "scalar", "map", "join", "branch")
BATCH_ITEMS, BATCH_OFFSET, BATCH_TOTAL = "UnumBatch", "Offset", "Total"
_KEYS = {"Steps", "BatchIn", "FlattenIn", "BatchOut", "InProcess"}

Handler = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Step:
    """One member of a fused group: `function` (IR name), `handler` ("module.function" in
    the member's code directory) and `kind` (STEP_KINDS, see the module docstring)."""

    function: str
    handler: str
    kind: str


@dataclass(frozen=True)
class Fusion:
    """The validated `Fused` field of a function's IR (see the module docstring).

    `steps`: the group in run order (the first is the function itself); `batch_in`,
    `flatten_in`: how the input is unpacked; `batch_out`: items per batch of the output
    (0: not batched)."""

    steps: tuple[Step, ...]
    batch_in: bool = False
    flatten_in: bool = False
    batch_out: int = 0
    in_process: tuple[dict[str, Any], ...] = ()  # ({"Function", "Handler", "Ir"}, ...)

    @classmethod
    def from_dict(cls, doc: Any, source: str = "<ir>") -> "Fusion":
        """Parse an IR `Fused` mapping; IRError "<source>: Fused.<field>: <reason>"."""
        where = f"{source}: Fused"
        if not isinstance(doc, dict):
            raise IRError(f"{where}: expected a mapping with Steps")
        unknown = sorted(set(doc) - _KEYS)
        if unknown:
            raise IRError(f"{where}.{unknown[0]}: unknown field (allowed: {', '.join(sorted(_KEYS))})")
        raw = doc.get("Steps")
        if not isinstance(raw, list) or not raw:
            raise IRError(f"{where}.Steps: expected a non-empty list of {{Function, Handler, Kind}}")
        steps = []
        for i, s in enumerate(raw):
            if not isinstance(s, dict) or set(s) != {"Function", "Handler", "Kind"} \
                    or not all(isinstance(v, str) and v for v in s.values()):
                raise IRError(f"{where}.Steps[{i}]: expected {{Function, Handler, Kind}} strings")
            if s["Kind"] not in STEP_KINDS:
                raise IRError(f"{where}.Steps[{i}].Kind: {s['Kind']!r} must be one of {', '.join(STEP_KINDS)}")
            steps.append(Step(s["Function"], s["Handler"], s["Kind"]))
        _check_kinds([s.kind for s in steps], where)
        batch_out = doc.get("BatchOut", 0)
        if isinstance(batch_out, bool) or not isinstance(batch_out, int) or batch_out < 0:
            raise IRError(f"{where}.BatchOut: {batch_out!r} must be an integer >= 1 (items per batch)")
        flags = {}
        for key in ("BatchIn", "FlattenIn"):
            v = doc.get(key, False)
            if not isinstance(v, bool):
                raise IRError(f"{where}.{key}: expected true or false")
            flags[key] = v
        in_process = doc.get("InProcess", [])
        if not isinstance(in_process, list) or not all(
                isinstance(t, dict) and set(t) == {"Function", "Handler", "Ir"} and isinstance(t["Function"], str)
                and isinstance(t["Handler"], str) and isinstance(t["Ir"], dict) for t in in_process):
            raise IRError(f"{where}.InProcess: expected a list of {{Function, Handler, Ir}}")
        return cls(tuple(steps), flags["BatchIn"], flags["FlattenIn"], batch_out,
                   tuple(dict(t) for t in in_process))

    def to_dict(self) -> dict[str, Any]:
        """The IR form (round-trips through from_dict)."""
        d: dict[str, Any] = {"Steps": [{"Function": s.function, "Handler": s.handler, "Kind": s.kind}
                                       for s in self.steps]}
        if self.batch_in:
            d["BatchIn"] = True
        if self.flatten_in:
            d["FlattenIn"] = True
        if self.batch_out:
            d["BatchOut"] = self.batch_out
        if self.in_process:
            d["InProcess"] = [dict(t) for t in self.in_process]
        return d


def _check_kinds(kinds: list[str], where: str) -> None:
    """IRError "<where>.Steps[i]: ..." unless `kinds` is `first` followed by scalar steps,
    map regions `map, join` and parallel regions `branch, scalar..., branch, scalar..., join`
    (at least 2 branches; module docstring)."""
    if kinds[0] != "first" or "first" in kinds[1:]:
        raise IRError(f"{where}.Steps: only the first step has Kind first")
    i = 1
    while i < len(kinds):
        k = kinds[i]
        if k == "map":
            if i + 1 >= len(kinds) or kinds[i + 1] != "join":
                raise IRError(f"{where}.Steps[{i}]: a map step is followed by a join step, and only it")
            i += 2
        elif k == "branch":
            j, heads = i, 0
            while j < len(kinds) and kinds[j] in ("branch", "scalar"):
                heads += kinds[j] == "branch"
                j += 1
            if j >= len(kinds) or kinds[j] != "join" or heads < 2:
                raise IRError(f"{where}.Steps[{i}]: a parallel region is at least 2 branches (a branch "
                              "step, then its scalar steps) followed by a join step")
            i = j + 1
        elif k == "join":
            raise IRError(f"{where}.Steps[{i}]: a join step ends a map step or a parallel region's branches")
        else:
            i += 1


def parallel_region(steps: tuple[Step, ...], i: int) -> tuple[list[list[Step]], int]:
    """The branches (each its steps in order) of the parallel region starting at steps[i]
    (a `branch` step), and the index of its `join` step."""
    branches: list[list[Step]] = []
    while steps[i].kind != "join":
        if steps[i].kind == "branch":
            branches.append([])
        branches[-1].append(steps[i])
        i += 1
    return branches, i


def _canonical(value: Any) -> Any:
    """`value` as a consumer would read it back from a checkpoint (canonical JSON)."""
    return json.loads(canonical_json(value))


def _member_ctx(ctx: Any, function: str, index: int | None = None, size: int | None = None,
                replace_last: bool = False) -> Any:
    """The context a member's handler gets: the group's (runtime.engine.UserContext) with
    the member's function and invocation name, and, for a map item, a batch item or a member
    of a parallel region's branch, the item's (branch's) index and the list's size (the
    number of branches), appended with the frame's base (the engine's Frame.base: the
    iteration), or replacing the branch's for a batch. A context of another type (a test's)
    is passed unchanged."""
    if not hasattr(ctx, "indexes") or not hasattr(ctx, "function"):
        return ctx
    indexes, sizes, bases = list(ctx.indexes), list(ctx.sizes), list(ctx.bases)
    if index is not None:
        if replace_last and indexes:
            indexes[-1], sizes[-1] = index, size
        else:
            indexes.append(index)
            sizes.append(size)
            if len(bases) == len(ctx.indexes):  # the engine's: one base per frame (Frame.base)
                bases.append(ctx.iteration)
    return replace(ctx, function=function, indexes=indexes, sizes=sizes, bases=bases,
                   instance=instance_name(function, tuple(indexes), ctx.iteration, tuple(bases)))


def batches(items: Any, k: int) -> Any:
    """A Map edge's list cut into batches of `k` items, each {"UnumBatch": [...],
    "Offset": index of its first item, "Total": len(items)}; anything but a list is
    returned unchanged (the Map edge then reports it as not a list)."""
    if not isinstance(items, list):
        return items
    n = len(items)
    return [{BATCH_ITEMS: items[i:i + k], BATCH_OFFSET: i, BATCH_TOTAL: n} for i in range(0, n, k)]


def flatten(outputs: Any, function: str) -> list[Any]:
    """The item outputs of a batched Map: the concatenation of its branches' lists, in
    branch order. TypeError naming `function` when an element is not a list."""
    if not isinstance(outputs, list) or not all(isinstance(o, list) for o in outputs):
        raise TypeError(f"{function}: its input should be the list of a batched Map's branch outputs "
                        "(lists); was the plan's batch applied to every bundle of the app?")
    return [x for o in outputs for x in o]


def compose(fusion: Fusion, handlers: dict[str, Handler]) -> Handler:
    """One handler `(event, context) -> output` running `fusion`'s steps in order
    (`handlers`: function name -> its handler). A member's exception propagates as the
    group's (the engine commits it as the invocation's failure, after the IR `Retry` of the
    group, which is the first function's). KeyError when a step has no handler."""
    steps = fusion.steps
    for s in steps:
        if s.function not in handlers:
            raise KeyError(f"fused step {s.function}: no handler loaded")

    def run_steps(value: Any, ctx: Any) -> Any:
        out = handlers[steps[0].function](value, ctx)
        i = 1
        while i < len(steps):
            s = steps[i]
            out = _canonical(out)
            if s.kind == "scalar":
                out = handlers[s.function](out, _member_ctx(ctx, s.function))
            elif s.kind == "branch":  # a parallel region: its branches in order, then its join
                branches, j = parallel_region(steps, i)
                tails = []
                for b, chain in enumerate(branches):
                    v = out
                    for m in chain:  # each member gets its own copy, as from a checkpoint
                        v = handlers[m.function](_canonical(v), _member_ctx(ctx, m.function, b, len(branches)))
                    tails.append(_canonical(v))
                out = handlers[steps[j].function](tails, _member_ctx(ctx, steps[j].function))
                i = j
            else:  # map, then its join
                if not isinstance(out, list):
                    raise TypeError(f"{steps[i - 1].function}: its output goes to a Map over {s.function}, "
                                    f"so it must be a list, got {type(out).__name__}")
                items = [_canonical(handlers[s.function](x, _member_ctx(ctx, s.function, j, len(out))))
                         for j, x in enumerate(out)]
                join = steps[i + 1]
                out = handlers[join.function](items, _member_ctx(ctx, join.function))
                i += 1
            i += 1
        return out

    def fused(event: Any, ctx: Any) -> Any:
        if fusion.flatten_in:
            event = flatten(event, steps[0].function)
        if fusion.batch_in:
            if not (isinstance(event, dict) and isinstance(event.get(BATCH_ITEMS), list)):
                raise TypeError(f"{steps[0].function}: its input should be one batch of a batched Map "
                                f"({{{BATCH_ITEMS!r}: [...]}}); was the plan's batch applied to every bundle?")
            off, total = int(event.get(BATCH_OFFSET, 0)), int(event.get(BATCH_TOTAL, 0))
            out: Any = [_canonical(run_steps(x, _member_ctx(ctx, steps[0].function, off + j, total, True)))
                        for j, x in enumerate(event[BATCH_ITEMS])]
        else:
            out = run_steps(event, ctx)
        if fusion.batch_out:
            out = batches(_canonical(out), fusion.batch_out)
        return out

    fused.__name__ = f"fused_{'_'.join(s.function for s in steps)}"
    return fused


@contextlib.contextmanager
def _own_siblings(base: Path) -> Iterator[None]:
    """While a member's module is imported: `base` first on sys.path, and every module that
    `base` provides a file for but that was imported from elsewhere (another member's or the
    head's `helper.py`) out of sys.modules; afterwards the member's own are removed and the
    others restored (load_member)."""
    provided = {p.stem for p in base.glob("*.py")} | {p.name for p in base.iterdir()
                                                       if (p / "__init__.py").is_file()}

    def ours(mod: Any) -> bool:
        f = getattr(mod, "__file__", None)
        return f is not None and Path(f).resolve().is_relative_to(base.resolve())

    def clash(key: str) -> bool:
        return key.split(".")[0] in provided

    hidden = {k: sys.modules.pop(k) for k in [k for k, m in sys.modules.items() if clash(k) and not ours(m)]}
    sys.path.insert(0, str(base))
    try:
        yield
    finally:
        sys.path.remove(str(base))
        for k in [k for k, m in sys.modules.items() if clash(k) and ours(m)]:
            del sys.modules[k]
        sys.modules.update(hidden)


def load_member(root: str | Path, step: Step) -> Handler:
    """Import a later member's handler from `<root>/unum_fused/<Function>/` under a module
    name of its own (`_unum_fused_<Function>_<module>`), so members whose modules share a
    name (every `app.handler`) do not collide. The member's directory is on `sys.path` while
    its module is imported, and the modules its directory provides (`<name>.py`, `<name>/`)
    that another member or the head already imported under the same name are set aside
    meanwhile, so its `import helper` gets its own `helper.py`; afterwards they are put back
    (the member keeps its own by reference). An import inside a handler's body, at call time,
    resolves to whichever module holds the name then (docs/fusion.md).

    Raises ImportError / AttributeError naming the member and its handler."""
    base = Path(root) / FUSED_DIR / step.function
    mod_path, _, fn_name = step.handler.rpartition(".")
    rel = Path(*mod_path.split("."))
    path = next((p for p in (base / rel.with_suffix(".py"), base / rel / "__init__.py") if p.is_file()), None)
    if path is None or not fn_name:
        raise ImportError(f"fused member {step.function}: handler {step.handler!r}: no module {mod_path!r} "
                          f"in {base}")
    name = f"_unum_fused_{step.function}_{mod_path.replace('.', '_')}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with _own_siblings(base):
            spec.loader.exec_module(module)
        sys.modules[name] = module
    try:
        return getattr(module, fn_name)
    except AttributeError:
        raise AttributeError(f"fused member {step.function}: handler {step.handler!r}: module "
                             f"{mod_path!r} has no {fn_name!r}") from None


class InProcessInvoker:
    """An Invoker (runtime.ports) that runs the invocations of some targets in this process,
    one after another, after passing every other call to `inner`: `engine_for(target)`
    returns a fresh Engine for a target it runs, else None. Used for a fan-in target fused
    into its branches (`Fused.InProcess`): the branch whose set-add completes the fan-in
    runs the target's execution here, with the target's own ingress, checkpoint (its commit
    point) and egress, instead of invoking it. An exception of that execution propagates:
    the branch's execution fails and the platform redelivers it; the redelivery adopts the
    branch's checkpoint, re-adds it to the set (idempotent), finds the set complete and runs
    the target again, whose own checkpoint deduplicates it. Delayed calls always go to
    `inner` (the platform's timer). Other attributes (`max_payload_bytes`) are `inner`'s.
    The history records the target's execution with attempt 1 and a request id
    `in-process:<uuid>`."""

    def __init__(self, inner: Any, engine_for: Callable[[str], Any]):
        self._inner = inner
        self._engine_for = engine_for

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def invoke_many(self, calls: list[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        """Invoke `calls` [(target, wire payload)]; see the class docstring."""
        here = [] if delay > 0 else [(t, p, e) for t, p in calls for e in [self._engine_for(t)] if e is not None]
        mine = {id(p) for _, p, _ in here}
        rest = [(t, p) for t, p in calls if id(p) not in mine]
        if rest:
            self._inner.invoke_many(rest, delay=delay)
        for _, payload, engine in here:
            # its own delivery record in the history (no platform delivered it)
            engine.handle(payload, {"attempt": 1, "request_id": f"in-process:{uuid.uuid4().hex}"})
