"""What a workflow under exploration is: IR nodes, handlers, input, options and what a
correct end looks like."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from runtime.ir import FunctionIR, build_workflow, load_function


@dataclass
class WorkflowSpec:
    """One workflow for the explorer.

    `functions`: name -> FunctionIR (validated together by runtime.ir.build_workflow);
    `handlers`: name -> handler(event, context); `input`: the entry's input;
    `gc`/`checkpoint`: runtime options; `max_item_bytes`/`max_payload_bytes`: port limits
    (small values force blobs); `terminals`: function names allowed to produce a SUCCEEDED
    result (None = any); `check_result(value, view) -> str | None`: extra check of the
    result against committed values (view: tools.explorer.invariants.View), returns a
    message when wrong; `failures_possible`: user code may legitimately fail the session;
    `bounds`: per-workflow overrides of the search bounds; `lambdas`: compiled function ->
    the user function it runs (compiled Step Functions), for `view`; `options`: further
    runtime options (runtime.engine.Options fields, e.g. `max_transitions`); `txn`: model
    the local target's deferred transaction (tools.explorer.txn: writes from the commit
    point on are one transaction, lost when the instance is killed before it commits);
    `deferred_blob_deletes`: under `txn`, blob deletes also wait for the commit; `clock`:
    model the virtual clock (tools.explorer.scheduler `tick`: delayed invocations wait for
    their time, the clock advances while the session runs, bound `ticks`; a failed
    execution's message is redelivered after the delays `platform` promises,
    tools.explorer.platforms); `platform`: lambda | pubsub | local (with `clock`);
    `waits`: user function -> `due(event, start)`, the earliest time its user code may run
    by the ASL Wait states before it (invariant (g)): `event` is the input its user code
    gets, `start` the clock, at its delivery, of the execution that committed the last
    invocation with user code before the Waits (the one that entered the first Wait), and
    the result is in that execution's clock (a Timestamp is absolute; Seconds add to
    `start`)."""

    name: str
    functions: dict[str, FunctionIR]
    handlers: dict[str, Callable[[Any, Any], Any]]
    input: Any
    gc: str = "safe"
    checkpoint: bool = True
    max_item_bytes: int = 350_000
    max_payload_bytes: int = 200_000
    terminals: set[str] | None = None
    check_result: Callable[[Any, Any], str | None] | None = None
    failures_possible: bool = False
    bounds: dict[str, int] = field(default_factory=dict)
    lambdas: dict[str, str] = field(default_factory=dict)
    about: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    txn: bool = False
    deferred_blob_deletes: bool = False
    clock: bool = False
    platform: str = "lambda"
    waits: dict[str, Callable[[Any, float], float]] = field(default_factory=dict)


def ir_workflow(name: str, nodes: dict[str, tuple[dict, Callable]], value: Any, **kw) -> WorkflowSpec:
    """Build a WorkflowSpec from {Name: (IR mapping without Name, handler)}; IRError when
    the IR is invalid."""
    loaded = [(load_function({"Name": fn, **ir}, f"{name}#{fn}"), f"{name}#{fn}")
              for fn, (ir, _) in nodes.items()]
    wf = build_workflow(loaded)
    return WorkflowSpec(name, dict(wf.functions), {fn: h for fn, (_, h) in nodes.items()}, value, **kw)
