"""Loading a built function bundle: its IR, its handler and the runtime options.

A bundle (built by `unumctl build`, identical layout on every target) holds at its root:
the user code, `runtime/` (this library plus the target adapter), `unum_ir.json` (the
function's IR in canonical form), `unum_function.json` ({"app", "function", "handler",
"options"}) and `unum_entry.py` (the target's entry point).
"""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .engine import Engine, Options
from .ir import FunctionIR, load_function

__all__ = ["FUNCTION_FILE", "load_bundle"]

IR_FILE = "unum_ir.json"
FUNCTION_FILE = "unum_function.json"


@dataclass
class Bundle:
    """What a target adapter needs to build an Engine."""

    app: str
    ir: FunctionIR
    handler: Callable[[Any, Any], Any]
    options: Options
    meta: dict[str, Any]
    # issue 25: fan-in targets run in this process (runtime.fusion.InProcessInvoker): name -> (IR, handler)
    in_process: dict[str, tuple[FunctionIR, Callable[[Any, Any], Any]]] = field(default_factory=dict)

    def engine(self, datastore, invoker, blobs, events=None) -> Engine:
        """The Engine for this function on a target's adapters, with the IR's `Wrapper`
        (e.g. compiled ASL) when it has one and logs on stderr; `events`: the target's
        runtime.ports.Events adapter (None: no history)."""
        wrapper = None
        if self.ir.wrapper is not None:
            from .wrappers import make_wrapper
            wrapper = make_wrapper(self.ir.wrapper)
        name = self.ir.name
        if self.in_process:  # issue 25: a fan-in target fused into this branch
            from .fusion import InProcessInvoker
            targets, inner = self.in_process, invoker

            def engine_for(target: str) -> Engine | None:
                if target not in targets:
                    return None
                ir, handler = targets[target]
                return Engine(ir, handler, datastore, invoker, blobs, self.options, events=events,
                              log=lambda m: print(f"[{target}] {m}", file=sys.stderr))
            invoker = InProcessInvoker(inner, engine_for)
        return Engine(self.ir, self.handler, datastore, invoker, blobs, self.options, wrapper=wrapper,
                      events=events, log=lambda m: print(f"[{name}] {m}", file=sys.stderr))


def load_bundle(root: str | Path) -> Bundle:
    """Read the bundle at `root` and import its handler (`module.function`).

    Raises FileNotFoundError, IRError, or ImportError/AttributeError naming the handler."""
    root = Path(root)
    meta = json.loads((root / FUNCTION_FILE).read_text())
    ir = load_function(json.loads((root / IR_FILE).read_text()), str(root / IR_FILE))
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mod_name, _, fn_name = meta["handler"].rpartition(".")
    module = importlib.import_module(mod_name)
    try:
        handler = getattr(module, fn_name)
    except AttributeError:
        raise AttributeError(f"handler {meta['handler']!r}: module {mod_name!r} has no {fn_name!r}") from None
    in_process: dict[str, tuple[FunctionIR, Callable[[Any, Any], Any]]] = {}
    if ir.fused is not None:  # issue 25: a fused or batched function (runtime/fusion.py)
        handler, in_process = _fused(root, ir, handler)
    if ir.wrapper is not None and ir.wrapper.get("CoLocated"):  # issue 25: a fused Step Functions Task chain
        handler = _colocated(root, ir.wrapper["CoLocated"], handler)
    options = Options.from_mapping(meta.get("options", {}))
    return Bundle(meta["app"], ir, handler, options, meta, in_process)


def _colocated(root: Path, colocated: dict[str, Any], handler: Callable[[Any, Any], Any]):
    """The handler of a compiled function whose Wrapper runs other compiled functions' Tasks
    in place (`CoLocated`, runtime.asl.wrapper): each member's code is under
    `<root>/unum_fused/<Function>/`, imported by runtime.fusion.load_member."""
    from .asl.wrapper import colocated_handler
    from .fusion import Step, load_member
    members = {m["Function"]: load_member(root, Step(m["Function"], m["Handler"], "scalar"))
               for m in colocated.values()}
    return colocated_handler(handler, members)


def _fused(root: Path, ir: FunctionIR, handler: Callable[[Any, Any], Any]):
    """(the composed handler, {in-process fan-in target: (its IR, its handler)}) of a
    function whose IR has `Fused` (runtime/fusion.py); later members' and in-process
    targets' code is under `<root>/unum_fused/<Function>/`."""
    from .fusion import Fusion, Step, compose, load_member
    fusion = Fusion.from_dict(ir.fused, str(root / IR_FILE))
    handlers = {fusion.steps[0].function: handler}
    handlers.update({s.function: load_member(root, s) for s in fusion.steps[1:]})
    in_process = {}
    for t in fusion.in_process:
        t_ir = load_function(t["Ir"], f"{root / IR_FILE}: Fused.InProcess.{t['Function']}")
        t_handler = load_member(root, Step(t["Function"], t["Handler"], "first"))
        if t_ir.fused is not None:
            t_handler, _ = _fused(root, t_ir, t_handler)
        in_process[t["Function"]] = (t_ir, t_handler)
    return compose(fusion, handlers), in_process
