"""Seeded, reproducible fault injection: the one fault model of every target.

Stdlib only (imports the standard library, runtime.errors and runtime.ports alone); part of
the runtime core, so it ships in every bundle. Used by the local
platform and worker (unumctl/local, runtime/local/entry.py), the GCP adapter
(runtime/gcp/entry.py, from `UNUM_FAULTS`, on the emulated platform of the tests) and the
emulated Lambda of the tests (unumctl/aws/emulate/local_lambda.py).

Spec string (flag `--faults` or env `UNUM_FAULTS`), comma-separated `key=value`:
  seed=<int>                 random seed (default 0)
  crash=<p>                  shorthand: sets every crash point below to p
  before_checkpoint=<p>      crash after the user code, before the checkpoint is created
  after_checkpoint=<p>       crash after the checkpoint, before any continuation is invoked
  mid_invoke=<p>             crash after invoking some but not all continuations
  before_gc=<p>              crash after invoking, before garbage collection
  duplicate=<p>              deliver an invocation twice
  delay=<p>                  delay an invocation (reorders deliveries)
  max_delay_ms=<ms>          upper bound of a delay (default 30)
  kill=<p>                   kill an execution's process (SIGKILL) after a seeded delay, as a
                             platform does to a crashed or lost instance: a random point of
                             the execution (user code, commit, egress); injected by platforms
                             that run executions as processes they can kill (the local
                             platform, the emulated Lambda of tests/aws)
  timeout=<p>                (local platform) the execution times out after a seeded delay:
                             the platform kills it (SIGKILL) as at the function's `timeout`
                             and records `Unum.Timeout`
  oom=<p>                    (local platform) the instance is killed (SIGKILL) after a seeded
                             delay as the kernel's OOM killer kills a process over its memory
                             limit, recorded as `Runtime.OutOfMemory`
  max_kill_ms=<ms>           upper bound of the delay of kill, timeout and oom (default 40)
  kill_before_commit=<p>     (local target) the instance kills itself (SIGKILL) after the
                             execution ran, before its transaction commits: the last moment a
                             kill loses everything it wrote from its commit point on
`all` alone means crash=0.05,duplicate=0.1,delay=0.2.

Crash decisions are a pure function of (seed, kind, session, invocation key, attempt), so a
run with the same seed and inputs injects the same crashes. Crashes are never injected on the
last delivery attempt, so an injected fault never exhausts the platform retries.

Delivery decisions (duplicate, delay and the delay's length) are keyed by the message key
*and its occurrence number*: the n-th time the platform asks about the same key (n = 0, 1,
...) the draw includes n. A duplicate execution re-invokes its continuations with identical
payloads, hence identical keys; without the occurrence number every re-invocation would get
exactly the decision of the first send (a duplicated message would be duplicated again each
time, a delayed one delayed by the same amount). The first send of a key draws exactly what
it drew before this counter existed. Runs stay reproducible for a seed as long as the number
of sends of each key is: the n-th send of a key gets the same decision whichever execution
made it, so only a schedule race that changes how often a key is re-sent (e.g. a duplicate
that finds the consumer already done and sends nothing) can change later draws.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import dataclass, field

from typing import Any, Callable, Sequence

from .errors import InjectedCrash
from .ports import Invoker

__all__ = ["DuplicatingInvoker", "FaultSpec", "Faults", "KILL_POINTS", "PerThreadFaults", "PerThreadInvoker",
           "SeededFaults"]

CRASH_POINTS = ("before_checkpoint", "after_checkpoint", "mid_invoke", "before_gc")
_DELIVERY = ("duplicate", "delay")
_PLATFORM = ("kill", "timeout", "oom")  # decided per (event key, attempt) by the platform, like crash points
KILL_POINTS = ("kill_before_commit",)  # an instance kills itself there (SeededFaults.kills)


class Faults:
    """The engine's fault-injection hook (runtime/engine.py calls `point`); the default does
    nothing. `SeededFaults` overrides `point` to raise InjectedCrash at the named points:
    before_checkpoint, after_checkpoint, mid_invoke, before_gc."""

    def point(self, name: str, session: str, instance: str) -> None:
        return None


@dataclass
class FaultSpec:
    """Parsed fault specification (see module docstring)."""

    seed: int = 0
    rates: dict[str, float] = field(default_factory=dict)
    max_delay_ms: float = 30.0
    max_kill_ms: float = 40.0
    # occurrences of (kind, key) asked of hit() for delivery kinds (module docstring)
    _sent: Counter = field(default_factory=Counter, repr=False, compare=False)
    _last: dict = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str | None) -> "FaultSpec | None":
        """Parse a spec string; None/'' gives None. Raises ValueError naming the bad key."""
        if not text:
            return None
        if text.strip() == "all":
            text = "crash=0.05,duplicate=0.1,delay=0.2"
        spec = cls()
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, val = part.partition("=")
            key = key.strip()
            if not sep:
                raise ValueError(f"faults: {part!r} is not key=value")
            try:
                num = float(val)
            except ValueError:
                raise ValueError(f"faults: {key}: {val!r} is not a number") from None
            if key == "seed":
                spec.seed = int(num)
            elif key == "max_delay_ms":
                spec.max_delay_ms = num
            elif key == "max_kill_ms":
                spec.max_kill_ms = num
            elif key == "crash":
                for p in CRASH_POINTS:
                    spec.rates[p] = num
            elif key in CRASH_POINTS or key in _DELIVERY or key in _PLATFORM or key in KILL_POINTS:
                if not 0 <= num <= 1:
                    raise ValueError(f"faults: {key}: probability {num} is not in [0, 1]")
                spec.rates[key] = num
            else:
                known = ", ".join(("seed", "crash", "max_delay_ms", "max_kill_ms") + CRASH_POINTS + _DELIVERY
                                  + _PLATFORM + KILL_POINTS)
                raise ValueError(f"faults: unknown key {key!r} (known: {known})")
        return spec

    def encode(self) -> str:
        """The spec as a string that parse() reads back (the occurrence counters are not part
        of it: they belong to the one dispatcher that makes delivery decisions)."""
        parts = [f"seed={self.seed}", f"max_delay_ms={self.max_delay_ms}"]
        if any(self.rates.get(k) for k in _PLATFORM):
            parts.append(f"max_kill_ms={self.max_kill_ms}")
        parts += [f"{k}={v}" for k, v in sorted(self.rates.items())]
        return ",".join(parts)

    def _raw(self, kind: str, key: tuple) -> float:
        h = hashlib.blake2b(repr((self.seed, kind) + key).encode(), digest_size=8).digest()
        return int.from_bytes(h, "big") / 2**64

    def occurrence(self, kind: str, *key: object) -> int:
        """Count one more occurrence of a delivery decision (kind, key); returns its number
        (0 for the first). Thread-safe."""
        with self._lock:
            n = self._sent[(kind, key)]
            self._sent[(kind, key)] = n + 1
            self._last[(kind, key)] = n
        return n

    @staticmethod
    def _keyed(key: tuple, n: int) -> tuple:
        # occurrence 0 draws exactly what the key alone drew (earlier seeds stay comparable)
        return key if n == 0 else key + (("occurrence", n),)

    def draw(self, kind: str, *key: object) -> float:
        """A uniform number in [0, 1) determined by the seed and the key. `delay_ms` (the
        length of a delay) uses the occurrence number of the latest `delay` hit() for the same
        key, so a re-sent message's delay length is drawn independently too."""
        if kind == "delay_ms":
            with self._lock:
                n = self._last.get(("delay", key), 0)
            key = self._keyed(key, n)
        return self._raw(kind, key)

    def hit(self, kind: str, *key: object) -> bool:
        """Whether to inject fault `kind` for `key`. Delivery kinds (duplicate, delay) count
        occurrences of the key and draw independently for each (module docstring); crash
        points and `kill` are pure functions of the key."""
        rate = self.rates.get(kind, 0.0)
        if kind in _DELIVERY:
            key = self._keyed(key, self.occurrence(kind, *key))
        return rate > 0 and self._raw(kind, key) < rate


class SeededFaults(Faults):
    """Engine fault hook for one delivery attempt of one message."""

    def __init__(self, spec: FaultSpec, attempt: int, max_attempts: int, message_key: str):
        self.spec = spec
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.key = message_key
        self.injected: list[str] = []

    def point(self, name, session, instance):
        """Raise InjectedCrash at engine point `name` when the seeded draw says so (never on
        the last delivery attempt)."""
        if self.attempt >= self.max_attempts:
            return
        if self.spec.hit(name, session, instance, self.key, self.attempt):
            self.injected.append(name)
            raise InjectedCrash(f"injected crash at {name} in {instance} (attempt {self.attempt})")

    def kills(self, name: str, session: str, instance: str) -> bool:
        """Whether the instance is to kill itself (SIGKILL) at kill point `name` (one of
        KILL_POINTS) of this execution: a seeded draw, never on the last delivery attempt.
        The caller kills (runtime/local/entry.py); an exception could not stand for a kill
        there, since what an execution wrote before an exception is committed."""
        if self.attempt >= self.max_attempts:
            return False
        if self.spec.hit(name, session, instance, self.key, self.attempt):
            self.injected.append(name)
            return True
        return False


class PerThreadFaults(Faults):
    """The fault hook of the delivery the calling thread runs, for a process that runs several
    deliveries on one engine at once (functions-framework serves each request on a thread of
    its own: the GCP adapter). `use(faults)` sets the calling thread's hook (None: no faults);
    the engine's `faults` attribute itself is never swapped per delivery, so one delivery's
    draws (attempt number, message key) cannot reach another's execution."""

    def __init__(self) -> None:
        self._local = threading.local()

    def use(self, faults: Faults | None) -> None:
        self._local.faults = faults

    def point(self, name, session, instance):
        faults = getattr(self._local, "faults", None)
        if faults is not None:
            faults.point(name, session, instance)


class PerThreadInvoker(Invoker):
    """`inner`, or the invoker that `use(invoker)` set for the calling thread (a delivery's
    DuplicatingInvoker): the Invoker counterpart of PerThreadFaults. Other attributes
    (`supports_delay`) are the current invoker's."""

    def __init__(self, inner: Invoker) -> None:
        self.inner = inner
        self.max_payload_bytes = inner.max_payload_bytes
        self._local = threading.local()

    def use(self, invoker: Invoker | None) -> None:
        self._local.invoker = invoker

    def current(self) -> Invoker:
        """The calling thread's invoker (`inner` when none was set)."""
        return getattr(self._local, "invoker", None) or self.inner

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        self.current().invoke_many(calls, delay)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)


class DuplicatingInvoker(Invoker):
    """An Invoker that sends some invocations twice, as `spec.hit("duplicate", key, i)` says
    for the i-th call of one `invoke_many` (`key`: the delivery, e.g. message id and
    attempt); `on_duplicate(function, payload)` is told about each extra copy. Used where
    the platform itself cannot duplicate deliveries (the GCP adapter under `UNUM_FAULTS`)."""

    def __init__(self, inner: Invoker, spec: FaultSpec, key: str,
                 on_duplicate: Callable[[str, Any], None] | None = None):
        self.inner, self.spec, self.key = inner, spec, key
        self.max_payload_bytes = inner.max_payload_bytes
        self.on_duplicate = on_duplicate

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        """Invoke `calls` plus the duplicated ones (see the class docstring)."""
        extra = [c for i, c in enumerate(calls) if self.spec.hit("duplicate", self.key, i)]
        self.inner.invoke_many(list(calls) + extra, delay)
        if self.on_duplicate is not None:
            for fn, payload in extra:
                self.on_duplicate(fn, payload)
