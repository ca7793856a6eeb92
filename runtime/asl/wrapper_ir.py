"""The schema of the IR's `Wrapper` of kind `asl`: what the Step Functions compiler
(unumctl/asl/compiler.py) writes for each compiled function, and what the runtime
(runtime/asl/wrapper.py, runtime/bundle.py, runtime/aws/iam.py) and unumctl (the deployment
model, the bundles, the local target, the AWS checks, tune's fusion) read.

`AslWrapperIR.parse(mapping, source)` checks every key and its type and returns a frozen
record; the IR loader (runtime/ir.py `load_function`) calls it for every `Wrapper` with
`Kind: asl`, so a hand-edited or stale IR file fails on load with one line naming the file and
the key, not later inside a function. The mapping itself stays the IR's wire form (it is
written into each bundle's unum_ir.json as it was read); `of(wrapper)` gives the record of a
loaded function's mapping. docs/ir.md ("Wrapper") and docs/stepfunctions.md describe the keys:

| key | type | meaning |
|---|---|---|
| `Kind` | `"asl"` | this schema |
| `Definition` | mapping | the whole state machine |
| `Machine` | str | its name (default "statemachine") |
| `Scope` | str | the scope (nested Map/Parallel branch) this function runs in ("" = top) |
| `Task` | str or null | the Task state whose Lambda this function runs |
| `Join` | str or null | the Map/Parallel state this function joins |
| `Wait` | str or null | the Wait state this function resumes after |
| `Start`, `End`, `Terminal`, `UsesInput` | bool | entry of its scope, ends the machine, the scope's terminal function, reads `$$`/the input |
| `Labels`, `Joins` | mapping str -> str | route labels and join hosts (shared by the machine) |
| `Inline`, `Catching`, `Laned`, `Tolerant` | list of str | Map/Parallel keys run in process, with Catch, in lanes, with tolerated failures |
| `Integrations` | list of [scope, state] or [scope, state, field] | service-integration Tasks this function runs in place |
| `External` | list of [scope, state] | lambda:invoke Tasks of functions outside the app |
| `CoLocated` | mapping key -> {Function, Handler} | Task functions fused into this one (tune's fuse plan) |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import IRError

__all__ = ["AslWrapperIR", "KEYS", "of"]

KIND = "asl"
_BOOLS = ("Start", "End", "Terminal", "UsesInput")
_NAMES = ("Task", "Join", "Wait")
_MAPS = ("Labels", "Joins")
_SETS = ("Inline", "Catching", "Laned", "Tolerant")
KEYS = ("Kind", "Definition", "Machine", "Scope", *_NAMES, *_BOOLS, *_MAPS, *_SETS, "Integrations", "External",
        "CoLocated")


@dataclass(frozen=True)
class AslWrapperIR:
    """One compiled function's `Wrapper` (see the module docstring for each field's key)."""

    definition: dict[str, Any]
    machine: str = "statemachine"
    scope: str = ""
    task: str | None = None
    join: str | None = None
    wait: str | None = None
    start: bool = False
    end: bool = False
    terminal: bool = False
    uses_input: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    joins: dict[str, str] = field(default_factory=dict)
    inline: frozenset[str] = frozenset()
    catching: frozenset[str] = frozenset()
    laned: frozenset[str] = frozenset()
    tolerant: frozenset[str] = frozenset()
    integrations: tuple[tuple[str, ...], ...] = ()
    external: tuple[tuple[str, str], ...] = ()
    colocated: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Any, source: str = "<ir>") -> "AslWrapperIR":
        """The record of the mapping `raw`; IRError "<source>: Wrapper.<Key>: <reason>" for an
        unknown key, a missing Definition, or a value of the wrong type."""
        def bad(key: str, msg: str) -> IRError:
            return IRError(f"{source}: Wrapper.{key}: {msg} (recompile: unumctl compile APP)")

        if not isinstance(raw, dict) or raw.get("Kind") != KIND:
            raise IRError(f"{source}: Wrapper: expected a mapping with Kind {KIND!r}")
        for k in raw:
            if k not in KEYS:
                raise bad(str(k), f"unknown key (valid keys: {', '.join(KEYS)})")
        if not isinstance(raw.get("Definition"), dict):
            raise bad("Definition", "expected the state machine (a mapping)")
        for k in ("Machine", "Scope"):
            if k in raw and not isinstance(raw[k], str):
                raise bad(k, "expected a string")
        for k in _NAMES:
            if raw.get(k) is not None and not isinstance(raw[k], str):
                raise bad(k, "expected a state name or null")
        for k in _BOOLS:
            if k in raw and not isinstance(raw[k], bool):
                raise bad(k, "expected true or false")
        for k in _MAPS:
            v = raw.get(k, {})
            if not isinstance(v, dict) or not all(isinstance(a, str) and isinstance(b, str) for a, b in v.items()):
                raise bad(k, "expected a mapping of strings to strings")
        for k in _SETS:
            v = raw.get(k, [])
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise bad(k, "expected a list of strings")

        def paths(k: str, lengths: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
            v = raw.get(k) or []
            if not isinstance(v, list) or not all(isinstance(x, list) and len(x) in lengths and
                                                  all(isinstance(s, str) for s in x) for x in v):
                raise bad(k, f"expected a list of [scope, state{', field' if 3 in lengths else ''}] lists")
            return tuple(tuple(x) for x in v)

        integrations = paths("Integrations", (2, 3))
        external = paths("External", (2,))
        colocated = raw.get("CoLocated") or {}
        if not isinstance(colocated, dict) or not all(
                isinstance(m, dict) and set(m) == {"Function", "Handler"} and all(isinstance(s, str) for s in m.values())
                for m in colocated.values()):
            raise bad("CoLocated", "expected a mapping of keys to {Function, Handler}")
        return cls(definition=raw["Definition"], machine=raw.get("Machine", "statemachine"),
                   scope=raw.get("Scope", ""), task=raw.get("Task"), join=raw.get("Join"), wait=raw.get("Wait"),
                   start=raw.get("Start", False), end=raw.get("End", False), terminal=raw.get("Terminal", False),
                   uses_input=raw.get("UsesInput", False), labels=dict(raw.get("Labels", {})),
                   joins=dict(raw.get("Joins", {})), inline=frozenset(raw.get("Inline", [])),
                   catching=frozenset(raw.get("Catching", [])), laned=frozenset(raw.get("Laned", [])),
                   tolerant=frozenset(raw.get("Tolerant", [])), integrations=integrations,
                   external=tuple((a, b) for a, b in external), colocated={k: dict(m) for k, m in colocated.items()})


def of(wrapper: Any) -> AslWrapperIR | None:
    """The record of a loaded function's `Wrapper` mapping (FunctionIR.wrapper) when its Kind
    is `asl`, else None (no wrapper, or another kind). IRError as `parse` for a mapping that
    did not come through the IR loader."""
    if not isinstance(wrapper, dict) or wrapper.get("Kind") != KIND:
        return None
    return AslWrapperIR.parse(wrapper)
