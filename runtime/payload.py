"""Invocation payload and naming.

Source: seed 000 Appendix B.2 (payload fields `Data`, `Session`, `Fan-out` with nested
`OuterLoop`) and B.2.1 (names `<fn>-UnumIndex-<outer>.<...>.<inner>`), seed 001 §3.6
(iteration counter; names may be hashed when long). Extensions: `Version`, `Iteration`,
`Parents` (the checkpoints this invocation garbage-collects once it has checkpointed, with
their consumer counts and blob references), `Depth` (transitions on this path, bounded by
`runtime.max_transitions`), `Data.Source = "blob"` for inputs passed by reference and
`Data.Source = "refs"` for a fan-in's inputs in compact form.

Wire format (JSON):
    {"Version": 2, "Session": "<id>",
     "Data": {"Source": "http", "Value": <input>}            # inline
           | {"Source": "checkpoint", "Value": ["A-UnumIndex-0", ...]}   # fan-in names
           | {"Source": "refs", "Value": {"Parts": [["A", [0], 3]], "Iteration": 0,
                                          "Exits": [...], "Bases": [...]}}  # (optional keys)
           | {"Source": "blob", "Value": "<blob key>"},      # large input
     "Fan-out": {"Index": 1, "Size": 3, "Base": 0, "OuterLoop": {...}},  # innermost first
     "Iteration": 0, "Depth": 4,
     "Parents": [{"Name": "A", "Consumers": 1, "Blobs": ["ckpt/A/<digest>"]}],
     "<Context field>": ...,            # inherited: committed with the checkpoint
     "UnumDelivery...": ...}            # one delivery's metadata: never inherited

Fields beyond the protocol's are the *context* (`Payload.extra`): a wrapper's state such as
the ASL `$$` data. Children inherit the context committed with their parent's checkpoint,
never an execution's own copy. Fields whose name starts with `UnumDelivery` describe one
delivery (e.g. the AWS error handler's attempt count) and are kept in `Payload.delivery`,
which no child inherits.

`RefList` is the compact form of a fan-in's inputs (`Data.Source = "refs"`), which the planner
makes (runtime/plan.py) and the engine and the shuffle stage read (runtime/triggers/shuffle.py).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import PROTOCOL_VERSION
from .constants import INDEX_SEP, ITER_SEP
from .errors import IRError, UnumError

__all__ = ["DELIVERY_ATTEMPTS", "DELIVERY_PREFIX", "Frame", "INPUT_OF", "Parent", "Payload", "RESULT_KEY",
           "RefList", "SESSION_ID_RE", "VERSION_ID_RE", "VersionId", "check_session_id", "checkpoint_key",
           "done_key", "exit_key", "fanin_key", "frames_name", "gc_key", "instance_name", "SessionId",
           "MAX_IDEMPOTENCY_KEY"]

MAX_NAME = 200
RESULT_KEY = "result"
DELIVERY_PREFIX = "UnumDelivery"
INPUT_OF = DELIVERY_PREFIX + "InputOf"  # history hint: my input is this parent's recorded output
DELIVERY_ATTEMPTS = DELIVERY_PREFIX + "Attempts"  # set by the AWS error handler
# A session id reaches datastore keys, blob keys and (local target) file names: letters,
# digits, '-' and '_' only, 1..80 characters (Step Functions execution names are <= 80).
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$")
# an app version id (docs/versions.md): the first 16 hex digits of a SHA-256
VERSION_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_KNOWN = {"Version", "Session", "Data", "Fan-out", "Iteration", "Parents", "Depth"}


@dataclass(frozen=True)
class Frame:
    """One fan-out level: this branch's `index` among `size` branches; `base` is the
    iteration counter when the frame was pushed, restored when it is popped, so that every
    branch joins at the same iteration however often it looped inside the branch."""

    index: int
    size: int
    base: int = 0


@dataclass(frozen=True)
class Parent:
    """A checkpoint this invocation collects once it has checkpointed (seed 001 §3.5):
    its invocation `name`, its number of `consumers` and the blob references it owns."""

    name: str
    consumers: int
    blobs: tuple[str, ...] = ()


@dataclass
class Payload:
    """A decoded invocation request. `frames` are outermost first; `extra` is the
    inherited context, `delivery` this delivery's own metadata (see module docstring)."""

    session: str
    source: str = "http"
    value: Any = None
    frames: tuple[Frame, ...] = ()
    iteration: int = 0
    parents: tuple[Parent, ...] = ()
    version: int = PROTOCOL_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    depth: int = 0
    delivery: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def decode(cls, raw: dict[str, Any], new_session) -> "Payload":
        """Decode a wire payload. `new_session()` supplies a session id when the request has
        none (an entry invocation, Appendix B.3). Raises UnumError for malformed requests,
        including a session id that does not match SESSION_ID_RE."""
        if not isinstance(raw, dict):
            raise UnumError(f"invocation payload must be a JSON object, got {type(raw).__name__}")
        version = raw.get("Version", PROTOCOL_VERSION)
        if not isinstance(version, int) or version > PROTOCOL_VERSION:
            raise UnumError(f"payload Version {version!r} is newer than this runtime ({PROTOCOL_VERSION})")
        data = raw.get("Data")
        if not isinstance(data, dict) or "Source" not in data:
            raise UnumError("invocation payload has no Data.Source; wrap inputs as "
                            '{"Data": {"Source": "http", "Value": ...}}')
        try:
            frames: list[Frame] = []
            loop = raw.get("Fan-out")
            while loop:
                frames.append(Frame(int(loop["Index"]), int(loop["Size"]), int(loop.get("Base", 0))))
                loop = loop.get("OuterLoop")
            parents = tuple(Parent(str(p["Name"]), int(p["Consumers"]), tuple(p.get("Blobs", ())))
                            for p in raw.get("Parents", ()))
            iteration, depth = int(raw.get("Iteration", 0)), int(raw.get("Depth", 0))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UnumError(f"invocation payload: malformed Fan-out, Parents, Iteration or Depth ({exc})") from None
        extra = {k: v for k, v in raw.items() if k not in _KNOWN and not k.startswith(DELIVERY_PREFIX)}
        delivery = {k: v for k, v in raw.items() if k.startswith(DELIVERY_PREFIX)}
        return cls(session=check_session_id(raw.get("Session") or new_session()), source=data["Source"],
                   value=data.get("Value"), frames=tuple(reversed(frames)), iteration=iteration,
                   parents=parents, version=version, extra=extra, depth=depth, delivery=delivery)

    def encode(self) -> dict[str, Any]:
        """The wire form (see module docstring)."""
        out: dict[str, Any] = {"Version": self.version, "Session": self.session,
                               "Data": {"Source": self.source, "Value": self.value}}
        loop: dict[str, Any] | None = None
        for fr in self.frames:  # outermost first -> nest outward
            cur: dict[str, Any] = {"Index": fr.index, "Size": fr.size}
            if fr.base:
                cur["Base"] = fr.base
            if loop is not None:
                cur["OuterLoop"] = loop
            loop = cur
        if loop is not None:
            out["Fan-out"] = loop
        if self.iteration:
            out["Iteration"] = self.iteration
        if self.depth:
            out["Depth"] = self.depth
        if self.parents:
            out["Parents"] = [{"Name": p.name, "Consumers": p.consumers,
                               **({"Blobs": list(p.blobs)} if p.blobs else {})} for p in self.parents]
        out.update(self.extra)
        out.update(self.delivery)
        return out


MAX_IDEMPOTENCY_KEY = 255  # characters of an idempotency key (SessionId.for_key)


class SessionId(str):
    """A session id that matches SESSION_ID_RE (1 to 80 of A-Z a-z 0-9 _ -, starting with a
    letter or digit: safe in a datastore key, a file name, a log line). The one validator:
    `SessionId(value)` raises UnumError naming the rule for anything else; a SessionId given
    again is returned as it is (it was parsed once, at the edge: the CLI's --session /
    SESSION, a payload's "Session"). A `str`, so it goes into keys, JSON and SQL unchanged."""

    __slots__ = ()

    def __new__(cls, value: Any) -> "SessionId":
        if isinstance(value, SessionId):
            return value
        if not isinstance(value, str) or not SESSION_ID_RE.fullmatch(value):
            raise UnumError(f"session id {str(value)[:100]!r} is not valid: use 1 to 80 letters, "
                            "digits, '-' or '_', starting with a letter or digit")
        return super().__new__(cls, value)

    @classmethod
    def new(cls) -> "SessionId":
        """A fresh id (a UUID4, 36 characters): the one default of every starter of a session."""
        return cls(str(uuid.uuid4()))

    @classmethod
    def for_key(cls, key: Any) -> "SessionId":
        """The session id of idempotency key `key` (a str of 1 to MAX_IDEMPOTENCY_KEY
        characters, no control characters, e.g. an HTTP `Idempotency-Key` header or a queue
        message id): `key-` + the SHA-256 hex digest of its UTF-8 bytes (68 characters), so
        every start with the same key names the same session, whatever the key holds.
        Raises UnumError naming the rule for anything else."""
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY \
                or any(ord(c) < 32 or ord(c) == 127 for c in key):
            raise UnumError(f"idempotency key {str(key)[:100]!r} is not valid: use 1 to "
                            f"{MAX_IDEMPOTENCY_KEY} characters with no control characters")
        return cls("key-" + hashlib.sha256(key.encode()).hexdigest())

    @classmethod
    def of(cls, value: Any = None) -> "SessionId":
        """`value` parsed (`SessionId(value)`), or `new()` when `value` is None."""
        return cls.new() if value is None else cls(value)


class VersionId(str):
    """The id of one version of an app's deployment (docs/versions.md): 16 lowercase hex
    digits (VERSION_ID_RE), the start of the SHA-256 of what the version packages, so the
    same code, IR and settings are always the same version. The one validator, as SessionId:
    `VersionId(value)` raises UnumError for anything else (it names a directory and a key,
    so it is parsed once where it is read: a session's record, the CLI); a VersionId given
    again is returned as it is."""

    __slots__ = ()

    def __new__(cls, value: Any) -> "VersionId":
        if isinstance(value, VersionId):
            return value
        if not isinstance(value, str) or not VERSION_ID_RE.fullmatch(value):
            raise UnumError(f"version id {str(value)[:100]!r} is not valid: 16 lowercase hex digits")
        return super().__new__(cls, value)

    @classmethod
    def of_digest(cls, digest: str) -> "VersionId":
        """The version id of a SHA-256 hex `digest` (its first 16 digits)."""
        return cls(digest[:16])


def check_session_id(session: Any) -> SessionId:
    """`SessionId(session)`: `session` when it matches SESSION_ID_RE, else UnumError naming
    the rule.

    Every entry point (CLI, payload decoding, each target's entry) calls this before a
    session id reaches a key, a path or a log; a SessionId passes without a second check."""
    return SessionId(session)


def instance_name(function: str, indexes: tuple[int, ...] | list[int], iteration: int = 0,
                  bases: tuple[int, ...] | list[int] | None = None) -> str:
    """Invocation name `<fn>[-UnumIndex-i.j...][-UnumIter-k]` (indexes outermost first).

    `bases` (aligned with `indexes`) are the iteration counters the fan-out frames were
    entered at (Frame.base); an index whose frame base differs from the iteration k is
    written `i@base`, so a branch that loops (k above its frame's base) never takes the
    name of a later entry of the same frame (base k), e.g. a loop around a Map whose
    branches loop, or the new attempt of a retried Map (docs/ir.md "Invocation names").

    Deterministic and injective (function names cannot contain '-'); names longer than
    MAX_NAME characters keep `<fn>-UnumHash-` and a SHA-256 digest of the full name, which
    keeps DynamoDB keys (2048 B) and Firestore ids (1500 B) in bounds.
    """
    name = function
    if indexes:
        if bases:
            name += INDEX_SEP + ".".join(
                str(i) if k >= len(bases) or bases[k] == iteration else f"{i}@{bases[k]}"
                for k, i in enumerate(indexes))
        else:
            name += INDEX_SEP + ".".join(str(i) for i in indexes)
    if iteration:
        name += f"{ITER_SEP}{iteration}"
    if len(name) > MAX_NAME:
        name = f"{function}-UnumHash-{hashlib.sha256(name.encode()).hexdigest()}"
    return name


def frames_name(function: str, frames, iteration: int = 0) -> str:
    """instance_name of `function` with fan-out `frames` (Frame, outermost first)."""
    return instance_name(function, tuple(f.index for f in frames), iteration, tuple(f.base for f in frames))


def checkpoint_key(instance: str) -> str:
    """Datastore item name of an invocation's checkpoint."""
    return f"ckpt/{instance}"


def fanin_key(target_instance: str) -> str:
    """Datastore set collecting the branches of a fan-in into `target_instance`."""
    return f"fanin/{target_instance}"


def done_key(target_instance: str) -> str:
    """Datastore item by which a fan-in target (plain or `Quorum`) records, under gc `eager`,
    that it consumed its inputs: created (create-if-absent, `{"by": <target>}`) after its
    checkpoint committed and before it deletes them; kept until the final sweep
    (docs/protocol.md "GC modes", runtime.engine `Engine._consumed`)."""
    return f"done/{target_instance}"


def exit_key(static_instance: str) -> str:
    """Datastore item by which a branch that may loop hands its final value to a fan-in:
    named by the branch's name at the iteration it was entered (`Frame.base`)."""
    return f"exit/{static_instance}"


def gc_key(instance: str) -> str:
    """Datastore set of the consumers of `instance` that have checkpointed (GC, seed 001 §3.5)."""
    return f"gc/{instance}"


class RefList:
    """The expanded `Values` of a fan-in edge, kept compact: a glob part `W-UnumIndex-*` of a
    10,000-branch Map is (function, prefix indexes, size), so counting and the membership
    test of each branch are O(parts), and the names are built only by the branch that
    completes the fan-in (otherwise every branch would build all N names: O(N^2))."""

    def __init__(self, parts: list[tuple[str, tuple[int, ...], int | None]], iteration: int,
                 exits: frozenset[str] = frozenset(), bases: tuple[int, ...] = ()):
        self.parts = parts
        self.iteration = iteration
        self.exits = exits  # functions whose branches hand over through `exit/` items
        self.bases = bases  # iteration counters the enclosing frames were entered at

    def _name(self, fn: str, idx: tuple[int, ...]) -> str:
        bases = tuple(self.bases[k] if k < len(self.bases) else self.iteration for k in range(len(idx)))
        return instance_name(fn, idx, self.iteration, bases)

    def to_wire(self) -> dict[str, Any]:
        """The compact payload form (`Data.Source = "refs"`): O(parts), not O(names)."""
        doc: dict[str, Any] = {"Parts": [[fn, list(idx), size] for fn, idx, size in self.parts],
                               "Iteration": self.iteration}
        if self.exits:
            doc["Exits"] = sorted(self.exits)
        if any(b != self.iteration for b in self.bases):
            doc["Bases"] = list(self.bases)
        return doc

    @classmethod
    def from_wire(cls, doc: Any) -> "RefList":
        """Inverse of to_wire; IRError for a malformed value."""
        try:
            parts = [(str(fn), tuple(int(i) for i in idx), None if size is None else int(size))
                     for fn, idx, size in doc["Parts"]]
            it = int(doc.get("Iteration", 0))
            return cls(parts, it, frozenset(doc.get("Exits", ())),
                       tuple(int(b) for b in doc.get("Bases", ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise IRError(f"fan-in references {str(doc)[:100]!r} are malformed ({exc})") from None

    def keys(self) -> list[str]:
        """The item each input is read from, in order: `ckpt/<name>`, or `exit/<name>` for a
        function that may loop inside its branch."""
        out: list[str] = []
        for fn, idx, size in self.parts:
            key = exit_key if fn in self.exits else checkpoint_key
            if size is None:
                out.append(key(self._name(fn, idx)))
            else:
                out.extend(key(self._name(fn, idx + (i,))) for i in range(size))
        return out

    def __len__(self) -> int:
        return sum(1 if size is None else size for _, _, size in self.parts)

    def __contains__(self, name: str) -> bool:
        for fn, idx, size in self.parts:
            if size is None:
                if self._name(fn, idx) == name:
                    return True
                continue
            i = _last_index(name)
            if i is not None:
                if 0 <= i < size and self._name(fn, idx + (i,)) == name:
                    return True
            elif any(self._name(fn, idx + (j,)) == name for j in range(size)):
                return True  # hashed long names: linear scan
        return False

    def names(self) -> list[str]:
        out: list[str] = []
        for fn, idx, size in self.parts:
            if size is None:
                out.append(self._name(fn, idx))
            else:
                out.extend(self._name(fn, idx + (i,)) for i in range(size))
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
