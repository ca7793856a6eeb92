"""The IR of windows across sessions (docs/ir.md "Windows across sessions"): a `Type: Window`
edge's fields and their validation. Kept apart from runtime/triggers/window.py (the protocol)
so that runtime/ir.py can import it without the payload module, which imports runtime/ir.py."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import IRError

__all__ = ["NAME_RE", "WINDOW_KEYS", "WindowSpec", "check_workflow", "parse_edge"]

WINDOW_KEYS = ("Window", "ByBatchSize", "ByTime")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,39}$")


@dataclass(frozen=True)
class WindowSpec:
    """A window: `name` ([a-z0-9_], 1..40), its `consumer` function, and exactly one of
    `batch_size` (objects per window, >= 1) or `seconds` (window length after its first
    object, > 0)."""

    name: str
    consumer: str
    batch_size: int | None = None
    seconds: float | None = None

    @property
    def trigger(self) -> str:
        return "ByBatchSize" if self.batch_size is not None else "ByTime"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"Window": self.name}
        if self.batch_size is not None:
            d["ByBatchSize"] = self.batch_size
        else:
            d["ByTime"] = self.seconds
        return d


def parse_edge(raw: dict[str, Any], where: str, target: str) -> WindowSpec:
    """The WindowSpec of a `Type: Window` edge mapping; IRError naming the field and the fix."""
    name = raw.get("Window")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise IRError(f"{where}: Window: {name!r} must be a window name of 1-40 characters "
                      "[a-z0-9_], e.g. Window: campaigns")
    has_n, has_t = "ByBatchSize" in raw, "ByTime" in raw
    if has_n == has_t:
        raise IRError(f"{where}: a Window edge needs exactly one of ByBatchSize (objects) or "
                      "ByTime (seconds), e.g. ByTime: 1")
    if has_n:
        n = raw["ByBatchSize"]
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100_000:
            raise IRError(f"{where}: ByBatchSize: {n!r} must be an integer from 1 to 100000")
        return WindowSpec(name, target, batch_size=n)
    t = raw["ByTime"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t <= 86400:
        raise IRError(f"{where}: ByTime: {t!r} must be a number of seconds, > 0 and <= 86400")
    return WindowSpec(name, target, seconds=float(t))


def check_workflow(edges: list[tuple[str, WindowSpec]]) -> None:
    """Every edge naming one window must agree on its consumer and trigger; IRError naming
    the file (`where`) of the first disagreeing edge and the fix."""
    seen: dict[str, tuple[str, WindowSpec]] = {}
    for where, spec in edges:
        if spec.name in seen and seen[spec.name][1] != spec:
            first, other = seen[spec.name]
            raise IRError(f"{where}: Window: {spec.name!r} is declared as {spec.to_dict()} -> {spec.consumer} "
                          f"but as {other.to_dict()} -> {other.consumer} in {first}; give every edge "
                          "into one window the same Name and trigger")
        seen.setdefault(spec.name, (where, spec))
