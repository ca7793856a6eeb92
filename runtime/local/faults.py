"""Seeded, reproducible fault injection for the local target.

Spec string (flag `--faults` or env `UNUM_FAULTS`), comma-separated `key=value`:
  seed=<int>                 random seed (default 0)
  crash=<p>                  shorthand: sets all four crash points below to p
  before_checkpoint=<p>      crash after the user code, before the checkpoint is created
  after_checkpoint=<p>       crash after the checkpoint, before any continuation is invoked
  mid_invoke=<p>             crash after invoking some but not all continuations
  before_gc=<p>              crash after invoking, before garbage collection
  duplicate=<p>              deliver an invocation twice
  delay=<p>                  delay an invocation (reorders deliveries)
  max_delay_ms=<ms>          upper bound of a delay (default 30)
`all` alone means crash=0.05,duplicate=0.1,delay=0.2.

Every decision is a pure function of (seed, kind, session, invocation key, attempt), so a
run with the same seed and inputs injects the same faults. Crashes are never injected on the
last delivery attempt, so an injected fault never exhausts the platform retries.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..engine import Faults
from ..errors import InjectedCrash

CRASH_POINTS = ("before_checkpoint", "after_checkpoint", "mid_invoke", "before_gc")
_DELIVERY = ("duplicate", "delay")


@dataclass
class FaultSpec:
    """Parsed fault specification (see module docstring)."""

    seed: int = 0
    rates: dict[str, float] = field(default_factory=dict)
    max_delay_ms: float = 30.0

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
            elif key == "crash":
                for p in CRASH_POINTS:
                    spec.rates[p] = num
            elif key in CRASH_POINTS or key in _DELIVERY:
                if not 0 <= num <= 1:
                    raise ValueError(f"faults: {key}: probability {num} is not in [0, 1]")
                spec.rates[key] = num
            else:
                known = ", ".join(("seed", "crash", "max_delay_ms") + CRASH_POINTS + _DELIVERY)
                raise ValueError(f"faults: unknown key {key!r} (known: {known})")
        return spec

    def encode(self) -> str:
        parts = [f"seed={self.seed}", f"max_delay_ms={self.max_delay_ms}"]
        parts += [f"{k}={v}" for k, v in sorted(self.rates.items())]
        return ",".join(parts)

    def draw(self, kind: str, *key: object) -> float:
        """A uniform number in [0, 1) determined by the seed and the key."""
        h = hashlib.blake2b(repr((self.seed, kind) + key).encode(), digest_size=8).digest()
        return int.from_bytes(h, "big") / 2**64

    def hit(self, kind: str, *key: object) -> bool:
        rate = self.rates.get(kind, 0.0)
        return rate > 0 and self.draw(kind, *key) < rate


class SeededFaults(Faults):
    """Engine fault hook for one delivery attempt of one message."""

    def __init__(self, spec: FaultSpec, attempt: int, max_attempts: int, message_key: str):
        self.spec = spec
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.key = message_key
        self.injected: list[str] = []

    def point(self, name, session, instance):
        if self.attempt >= self.max_attempts:
            return
        if self.spec.hit(name, session, instance, self.key, self.attempt):
            self.injected.append(name)
            raise InjectedCrash(f"injected crash at {name} in {instance} (attempt {self.attempt})")
