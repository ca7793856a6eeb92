"""Planning: which invocations an invocation's committed value leads to (seed 000
Appendix A.2.4 edges, A.2.5 expressions, A.2.6 payload modifiers).

`Planner(ir).plan(value, payload, instance, route)` evaluates every `Next` edge of one
function on a committed value and returns the calls to make. It reads and writes nothing:
the same committed value always gives the same plan, so every execution of an invocation
(the winner and its duplicates) makes the same calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import IRError, UserFunctionError
from .expr import Env
from .ir import FunctionIR, Modifier, ValueTemplate
from .payload import Frame, Payload, RefList, exit_key, fanin_key, frames_name, instance_name
from .triggers import quorum as _quorum
from .triggers.shuffle import keyed_pairs, shuffle_key
from .triggers.window_ir import WindowSpec

__all__ = ["Call", "Plan", "Planner", "RefList"]


@dataclass
class Call:
    """A planned invocation of `target` (Scalar/Map edge, or a fan-in once complete)."""

    target: str
    frames: tuple[Frame, ...]
    iteration: int
    value: Any = None
    refs: RefList | None = None  # fan-in: the ordered input invocation names
    set_name: str | None = None    # fan-in: the coordination set (None: invoke at once)
    member: str | None = None      # fan-in: this branch's name in the set (at its frame's base)
    exit: str | None = None        # fan-in from a branch that may loop: its `exit/` item
    delay: float = 0.0             # seconds to defer the invocation (edge `Delay`)
    quorum: int | None = None      # fan-in: fire with the first k inputs (runtime/triggers/quorum.py)
    shuffle: bool = False          # Shuffle edge: refs are the stage's producers (runtime/triggers/shuffle.py)
    window: WindowSpec | None = None  # Window edge: `value` goes into this window instead

    @property
    def trigger(self) -> str | None:
        """The trigger that runs this call (runtime/triggers/registry.py): `window`, `quorum`,
        `shuffle` or `fan-in` (any call with `refs`, a Map's EmptyJoin too), None for one
        plain invocation (a Scalar or Map edge) that the engine sends itself."""
        if self.window is not None:
            return "window"
        if self.refs is None:
            return None
        if self.quorum is not None:
            return "quorum"
        return "shuffle" if self.shuffle else "fan-in"


@dataclass
class Plan:
    """The calls an invocation makes; none means it is a terminal (its value is the result)."""

    calls: list[Call] = field(default_factory=list)

    @property
    def consumers(self) -> int:
        """Children that collect this checkpoint (a window keeps its own copy of the value)."""
        return sum(1 for c in self.calls if c.window is None)

    @property
    def terminal(self) -> bool:
        """True when the value is the session's result (a window edge also ends the session)."""
        return self.consumers == 0


def _indexes(frames) -> tuple[int, ...]:
    return tuple(f.index for f in frames)


def _sizes(frames) -> tuple[int, ...]:
    return tuple(f.size for f in frames)


class Planner:
    """Evaluates one function's `Next` edges (see the module docstring)."""

    def __init__(self, ir: FunctionIR):
        self.ir = ir

    def _apply_modifiers(self, mods: tuple[Modifier, ...], frames: list[Frame], out: Any,
                         iteration: int, route: Any) -> tuple[list[Frame], Any, int]:
        """Apply payload modifiers; returns (frames, output, iteration): `Pop` restores the
        iteration counter saved in the popped frame."""
        frames = list(frames)
        for m in mods:
            if m.pop:
                if not frames:
                    raise IRError(f"{self.ir.name}: Payload Modifiers: 'Pop' with no fan-out frame")
                iteration = frames.pop().base
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
                frames[-1] = Frame(frames[-1].index, int(val), frames[-1].base)
            else:
                k = len(frames) - 1 - int(tgt)
                if k < 0:
                    raise IRError(f"{self.ir.name}: Payload Modifiers: {m.source!r}: no frame ${tgt}")
                frames[k] = Frame(int(val), frames[k].size, frames[k].base)
        return frames, out, iteration

    def _expand_values(self, values: tuple[ValueTemplate, ...], env: Env, iteration: int,
                       exits: frozenset[str] = frozenset(), bases: tuple[int, ...] = ()) -> RefList:
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
        return RefList(parts, iteration, exits, bases)

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
                frames = list(p.frames) + ([Frame(pos, n_scalar, iteration)] if fan else [])
                frames, out, it = self._apply_modifiers(e.modifiers, frames, value, iteration, route)
                delay = 0.0
                if e.delay is not None:
                    d = e.delay.evaluate(env)
                    if not isinstance(d, (int, float)) or isinstance(d, bool) or d < 0:
                        raise IRError(f"{self.ir.name}: Next[{i}]: Delay {e.delay.source!r} gave {d!r}, "
                                      "not a non-negative number of seconds")
                    delay = float(d)
                plan.calls.append(Call(e.target, tuple(frames), it, out, delay=delay))
            elif e.type == "Window":
                _, out, _ = self._apply_modifiers(e.modifiers, [], value, p.iteration, route)
                plan.calls.append(Call(e.target, (), 0, out, window=e.window))
            elif e.type == "Map":
                if not isinstance(value, list):
                    raise UserFunctionError(
                        "TypeError", f"{self.ir.name}: Next[{i}] is a Map edge to {e.target}, so the "
                        f"output must be a list, got {type(value).__name__}")
                for j, item in enumerate(value):
                    frames = list(p.frames) + [Frame(j, len(value), iteration)]
                    frames, out, it = self._apply_modifiers(e.modifiers, frames, item, iteration, route)
                    plan.calls.append(Call(e.target, tuple(frames), it, out))
                if not value and e.empty_join is not None:
                    # a Map over []: its join runs at once with no inputs (as in ASL)
                    join, mods = e.empty_join
                    frames, _, it = self._apply_modifiers(mods, list(p.frames) + [Frame(0, 0, iteration)],
                                                          value, iteration, route)
                    plan.calls.append(Call(join, tuple(frames), it, refs=RefList([], iteration)))
            elif e.type == "Shuffle":  # shuffle groups (runtime/triggers/shuffle.py)
                plan.calls.append(self._shuffle(i, e, value, p))
            else:
                # branches are named at the iteration their frame was entered, so a branch
                # that looped inside its frame still matches the Values (docs/ir.md)
                static = p.frames[-1].base if p.frames else p.iteration
                outer = tuple(f.base for f in p.frames[:-1])
                refs = self._expand_values(e.values, env, static, frozenset(e.exits), outer)
                member = instance_name(self.ir.name, _indexes(p.frames), static, outer)
                if member not in refs:
                    shown = refs.names()[:5]
                    raise IRError(f"{self.ir.name}: Next[{i}]: Values {[v.source for v in e.values]} "
                                  f"expand to {shown}{'...' if len(refs) > 5 else ''}, which does "
                                  f"not include this invocation {member!r}")
                frames, _, it = self._apply_modifiers(e.modifiers, list(p.frames), value, iteration, route)
                target_inst = frames_name(e.target, frames, it)
                if e.quorum is not None:  # k-of-n: slots instead of the fan-in set
                    _quorum.check_size(e.quorum, refs.distinct(), self.ir.name, i, target_inst)
                plan.calls.append(Call(e.target, tuple(frames), it, refs=refs,
                                       set_name=fanin_key(target_inst) if e.quorum is None else None,
                                       member=member,
                                       exit=exit_key(member) if self.ir.name in e.exits else None,
                                       quorum=e.quorum))
        return plan

    def _shuffle(self, i: int, e, value: Any, p: Payload) -> Call:
        """The call of a Shuffle edge: this producer joins the set of its stage (all the
        branches of its innermost frame); the consumers are planned by the producer that
        completes it (runtime/triggers/shuffle.py). Raises IRError outside a fan-out frame,
        UserFunctionError for an output that is not [key, value] pairs."""
        if not p.frames:
            raise IRError(f"{self.ir.name}: Next[{i}]: a Shuffle edge to {e.target} needs the producers "
                          "to be the branches of a Map (a fan-out frame); invoke "
                          f"{self.ir.name} through a Map edge")
        keyed_pairs(value, self.ir.name, e.target)
        static = p.frames[-1].base
        outer = tuple(f.base for f in p.frames[:-1])
        producers = RefList([(self.ir.name, _indexes(p.frames[:-1]), p.frames[-1].size)], static, frozenset(), outer)
        member = instance_name(self.ir.name, _indexes(p.frames), static, outer)
        frames = tuple(p.frames[:-1])
        return Call(e.target, frames, static, refs=producers,
                    set_name=shuffle_key(frames_name(e.target, frames, static)), member=member, shuffle=True)
