"""The plain fan-in: a `Type: Fan-in` edge without `Quorum` (seed 000 Appendix A.2.4; seed
001 §3.3 "fan-in"; docs/sets.md "Fan-in sets").

After its commit a branch hands over its value when it may have looped (`exit/<branch>`,
docs/ir.md "Invocation names"), adds itself to the target's set `fanin/<target>`
(`Datastore.set_add`), and the branch whose add completes the set invokes the target with
the inputs' names in compact form (`Data.Source = "refs"`, runtime.payload.RefList). A Map
over `[]` plans its join as a fan-in call with no set: it is invoked at once. Under gc
`eager` a branch first reads `done/<target>` (`Engine._consumed`): when the target consumed
its inputs the branch fires nothing.
"""

from __future__ import annotations

from typing import Any

from ..payload import Payload
from .base import Fired

__all__ = ["FanIn"]


class FanIn:
    """The fan-in trigger (runtime/triggers/base.py `Trigger`). `complete` is what the branch
    that completes the set does; the shuffle stage (shuffle.py) overrides it."""

    def fire(self, engine: Any, ex: Any, own: dict[str, Any], plan: Any, call: Any,
             context: dict[str, Any], depth: int) -> Fired:
        """Hand over, join the set and, when this add completed it, `complete`."""
        if engine._consumed(ex, own, plan, call):
            return Fired()  # the target consumed its inputs: a re-run's value nobody reads
        session, inst = ex.session, ex.instance
        if call.exit is not None:  # a branch that may have looped hands over its value
            piece: dict[str, Any] = ({k: own[k] for k in ("v", "blob") if k in own} if engine.checkpointing
                                     else ex.values.piece(session, f"ckpt/{inst}", own["v"]))
            created, _ = engine.ds.create_if_absent(
                session, call.exit, {"ref": inst, "consumers": plan.consumers, **piece}, engine._expiry(ex))
            if created:
                ex.created.append(call.exit)
        if call.set_name is not None:
            size = engine.ds.set_add(session, call.set_name, call.member or inst, engine._expiry(ex))
            ex.created.append(call.set_name)  # (maybe) created: deleted again if late
            if size < call.refs.distinct():
                return Fired()
        return self.complete(engine, ex, call, context, depth)

    def complete(self, engine: Any, ex: Any, call: Any, context: dict[str, Any], depth: int) -> Fired:
        """The set is complete (or there is none): invoke the target with the inputs' names."""
        child = Payload(ex.session, "refs", call.refs.to_wire(), call.frames, call.iteration, (),
                        ex.payload.version, dict(context), depth + 1)
        return Fired([(call.target, child.encode())])
