"""k-of-n fan-in: `Quorum: k` on a Fan-in edge (Pheromone's *Redundant* trigger, seed 003
§III-B: "n objects ... triggers the function(s) when any k of them are available").

The target fires once, with the first k branches that committed, in the order in which the
quorum accepted them; the other n-k branches are never consumed and collect their own
checkpoints. docs/ir.md "Quorum (k-of-n fan-in)" has the contract, docs/sets.md the
datastore operations per branch.

Protocol (through `runtime.ports.Datastore` only, so every adapter runs it). The quorum of
a target invocation `T` is k *slot* items `quorum/<T>/1` .. `quorum/<T>/k`, each created at
most once (`create_if_absent`, the atomic create every adapter already passes the
conformance suite with) and never changed until the session's final sweep or expiry:

1. after its checkpoint committed, a branch `b` reads the k slots (one `get_many`, not a
   snapshot: a slot seen held is held for good; one seen absent may be stale);
2. if a slot holds `b`, `b` has that rank (a duplicate of `b`, or the redelivery of an
   execution that crashed after claiming, finds it here and claims nothing more);
3. else `b` tries to create the lowest slot it saw absent, then the next ones in order;
   a conflict returns the holder: itself (a concurrent duplicate of `b` won: that rank),
   or another branch (go on to the next slot);
4. rank k fires `T` with the holders of slots 1..k in slot order (`Data.Source =
   "checkpoint"`); every execution that holds rank k sends the same list, because slots
   never change, and `T`'s checkpoint deduplicates the invocations;
5. no rank (all k slots held by others): `b` is a straggler; its checkpoint is collected at
   once (`declined`), as if `T` had consumed it.

The trigger is `Quorum` (runtime/triggers/base.py `Trigger`, what the engine calls): steps
1-5 for one branch, through `join`.

Why slots and not the fan-in set's size: `Datastore.set_add` returns a size, not a rank: on
DynamoDB the size is read back after the add, so two overlapping adds may both read k
(docs/sets.md), and a duplicate's add returns the current size. Either would let two
branches believe they are the k-th and fire `T` with different input lists. A slot is
claimed by exactly one branch on every adapter.

Slots stay until the session's end: deleting them when `T` fires would let a straggler that
commits later claim slot 1 again and start a second quorum.

The firing is recorded durably (issue 33): under gc `eager` a member's checkpoint is deleted
once `T` consumed it, so a late duplicate of a member runs again (seed 001 §3.5), commits a
second answer and finds itself still holding its slot; firing `T` again would give `T`, whose
own checkpoint its child may have deleted too, an input no execution of `T` was planned
with. So under `eager`:

6. `T`, once its checkpoint committed and before it collects its inputs, creates
   `done/<T>` (create-if-absent, `{"by": T}`; it stays until the session's end): the
   item every fan-in target records under `eager` (runtime.payload.done_key; the engine
   creates and reads it for plain fan-ins in the same places, `Engine._consumed`);
7. a branch reads that item with the slots (the same `get_many`); when it exists, `T` has
   consumed its quorum: the branch fires nothing and declines like a straggler (its
   checkpoint, a re-run's answer nobody reads, is collected at once);
8. `T`'s ingress, when its own checkpoint is absent, reads the item with `result` (after
   the read of its checkpoint and inputs, as `result` is): when it exists, `T` committed and
   its checkpoint was collected, so the delivery drops as under `safe`, even when a re-run
   member re-created an input.

Every removal of a member's checkpoint by `T` follows step 6, so a member that runs again
(its checkpoint absent) and a delivery of `T` that reads a re-created input both read the
item after it was created. Under `safe` a collected checkpoint is a tombstone (the late
duplicate drops) and under `none` it stays (it adopts), so neither needs the item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..errors import IRError
from ..payload import Parent, Payload, done_key, frames_name
from ..ports import Datastore
from ..storage import item_blobs
from .base import Fired

__all__ = ["Quorum", "Standing", "check_size", "check_workflow", "fired_detail", "join", "parse", "slot_key"]

QUORUM_FIELD = "Quorum"


def slot_key(target_instance: str, rank: int) -> str:
    """Datastore item of slot `rank` (1-based) of the quorum into `target_instance`."""
    return f"quorum/{target_instance}/{rank}"


def parse(raw: Mapping[str, Any], etype: str, n_values: int, globbed: bool, where: str,
          function: str | None = None) -> int | None:
    """The `Quorum` of one raw edge mapping (None when absent).

    `n_values`: number of `Values` entries; `globbed`: one of them ends in `*` (n known only
    at run time). Raises IRError "<where>: Quorum: <reason>; <fix>" for a Quorum on an edge
    that is not a Fan-in, a k that is not an integer >= 1, or a k above the number of
    inputs `Values` names."""
    if QUORUM_FIELD not in raw:
        return None
    k = raw[QUORUM_FIELD]
    fn = f" (function {function})" if function else ""
    if etype != "Fan-in":
        raise IRError(f"{where}{fn}: Quorum: only Fan-in edges take a Quorum (this edge is {etype}); "
                      "make the edge 'Type: Fan-in' with Values, or remove Quorum")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise IRError(f"{where}{fn}: Quorum: {k!r} is not an integer >= 1; give the number of "
                      "inputs that fire the target, e.g. 'Quorum: 2'")
    if not globbed and k > n_values:
        raise IRError(f"{where}{fn}: Quorum: {k} is more than the {n_values} input(s) named by "
                      f"Values; lower it to at most {n_values} or add the missing Values")
    return k


def check_workflow(edges: Iterable[tuple[str, int, str, Any]]) -> None:
    """Cross-function checks of every Fan-in edge, given as (function, edge index, source
    file, Edge) after `runtime.ir.build_workflow` filled in `Exits`. Raises IRError when two
    Fan-in edges into one target disagree on the Quorum (every branch must fire the same
    way), or when a Quorum edge has branches that may loop (`Exits`: their value is handed
    over by an `exit/` item, which a quorum does not read)."""
    seen: dict[str, tuple[int | None, str, int, str]] = {}
    for fn, i, src, e in edges:
        if e.type != "Fan-in":
            continue
        where = f"{src}: Next[{i}] (function {fn})"
        if e.quorum is not None and e.exits:
            raise IRError(f"{where}: Quorum: branch(es) {', '.join(e.exits)} may loop (they lie on or "
                          "after a cycle), which a quorum cannot join; remove Quorum or move the "
                          "loop before the fan-out")
        prev = seen.setdefault(e.target, (e.quorum, src, i, fn))
        if prev[0] != e.quorum:
            def said(k: int | None) -> str:
                return "no Quorum" if k is None else f"Quorum {k}"
            raise IRError(f"{where}: Quorum: this edge has {said(e.quorum)} but the Fan-in edge into "
                          f"{e.target} of function {prev[3]} ({prev[1]}: Next[{prev[2]}]) has "
                          f"{said(prev[0])}; give every Fan-in edge into one target the same Quorum")


def check_size(k: int, n: int, function: str, index: int, target: str) -> None:
    """Run-time check when `Values` has a glob: IRError (a committed failure of the branch)
    when the expanded list has fewer than k names."""
    if k > n:
        raise IRError(f"{function}: Next[{index}]: Quorum: {k} is more than the {n} input(s) "
                      f"Values expand to for {target}; the quorum could never fire")


@dataclass
class Standing:
    """Where one branch stands in a quorum: `rank` (1..k) or None (a straggler: all k slots
    are held by other branches); `members` the holders of slots 1..k in order when
    rank == k (the target's inputs), else None; `created` the slot items this call
    created (for the late-write rule)."""

    rank: int | None
    members: list[str] | None
    created: list[str]
    consumed: bool = False  # the target recorded that it consumed its quorum (`done_key`)

    @property
    def fires(self) -> bool:
        """True when this branch holds rank k: it invokes the target with `members`."""
        return self.members is not None


def claim(ds: Datastore, session: str, key: str, member: str, expires_at: float) -> tuple[bool, str]:
    """Create slot `key` for `member` unless it exists: (created, holder). The one atomic
    step of the protocol (tools/explorer/mutants/quorum_claim_not_atomic.py breaks it)."""
    created, item = ds.create_if_absent(session, key, {"member": member}, expires_at)
    return created, str(item.get("member"))


def join(ds: Datastore, session: str, target_instance: str, member: str, k: int,
         expires_at: float, done: bool = False) -> Standing:
    """Join the quorum of k into `target_instance` as `member` (a branch whose checkpoint
    has committed); see the module docstring. With `done` (gc `eager`) the read includes
    `done_key`; when it exists the branch claims nothing and gets
    Standing(None, None, [], consumed=True). Datastore calls: one `get_many` of k items
    (k + 1 with `done`), then one `create_if_absent` per slot tried (1 when uncontended, 0
    for a duplicate or a straggler, at most k)."""
    keys = [slot_key(target_instance, r) for r in range(1, k + 1)]
    got = ds.get_many(session, keys + [done_key(target_instance)] if done else keys)
    if done and got[k] is not None:
        return Standing(None, None, [], consumed=True)
    holders: list[str | None] = [None if it is None else str(it.get("member")) for it in got[:k]]
    created: list[str] = []
    rank = None
    if member in holders:
        rank = holders.index(member) + 1
    else:
        for r in range(1, k + 1):
            if holders[r - 1] is not None:
                continue  # held for good
            made, holder = claim(ds, session, keys[r - 1], member, expires_at)
            holders[r - 1] = holder
            if made:
                created.append(keys[r - 1])
            if holder == member:
                rank = r
                break
    members = None
    if rank == k:
        if any(h is None for h in holders):  # slots seen absent before this claim: read them
            # each was created before slot k, whose holder this call has seen: now visible
            late = iter(ds.get_many(session, [keys[r] for r in range(k) if holders[r] is None]))
            holders = [h if h is not None else str((next(late) or {}).get("member")) for h in holders]
        members = [str(h) for h in holders]
    return Standing(rank, members, created)


def fired_detail(target_instance: str, k: int, n: int, members: list[str]) -> str:
    """The `detail` of the `quorum_fired` history event (docs/observability.md):
    "<target> fired by quorum k of n: <member>, <member>, ..." (members in slot order)."""
    return f"{target_instance} fired by quorum {k} of {n}: {', '.join(members)}"[:2000]


class Quorum:
    """The k-of-n fan-in trigger (runtime/triggers/base.py `Trigger`): `join` the quorum into
    the call's target; the branch holding rank k fires the target with the k slot holders
    (`Data.Source = "checkpoint"`), a straggler (no rank), or a branch that finds the target
    consumed its quorum (gc `eager`), is noted in `ex.declined`, whose checkpoint the
    engine's GC then collects as if the target had consumed it."""

    def fire(self, engine: Any, ex: Any, own: dict[str, Any], plan: Any, call: Any,
             context: dict[str, Any], depth: int) -> Fired:
        """Join; the target's invocation when this branch holds rank k, else nothing."""
        assert call.quorum is not None
        target = frames_name(call.target, call.frames, call.iteration)
        st = join(engine.ds, ex.session, target, call.member or ex.instance, call.quorum, engine._expiry(ex),
                  done=engine.options.gc == "eager")
        ex.created.extend(st.created)
        if st.rank is None:  # a straggler, or the target consumed its quorum (a re-run's answer)
            ex.declined.append((target, Parent(ex.instance, plan.consumers,
                                               tuple(item_blobs(own, published=False)))))
            return Fired()
        if st.members is None:
            return Fired()
        rec = getattr(engine._obs, "rec", None)
        if rec is not None and engine.options.history == "full":
            rec["extra"].append({"kind": "quorum_fired", "t0": engine.clock(), "t1": engine.clock(),
                                 "detail": fired_detail(target, call.quorum, len(call.refs or ()), st.members)})
        child = Payload(ex.session, "checkpoint", st.members, call.frames, call.iteration, (),
                        ex.payload.version, dict(context), depth + 1)
        return Fired([(call.target, child.encode())])
