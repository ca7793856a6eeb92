"""How a target sizes a function (issue 25, `unumctl tune`): one `Sizing` per target, in
the target's package and named by its TargetSpec's `sizing` (unumctl/registry.py), so that
unumctl.tuning.memory and planfile keep no table keyed by cloud names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import registry

__all__ = ["FusionPrices", "Sizing", "for_cloud"]


@dataclass(frozen=True)
class Sizing:
    """A target's memory sizes and compute price.

    - `candidates_mb`: the sizes `tune` predicts (MB, ascending);
    - `memory_range_mb`: (min, max) MB a function may be given (the plan file is checked
      against it);
    - `increment_ms(prices)`: the billing increment of one execution, ms (price table);
    - `vcpu(memory_mb, prices)`: the vCPU allocated at that size;
    - `usd(memory_mb, billed_seconds, prices)`: compute + request price of one execution;
    - `source`: where the sizes and the CPU rule are documented."""

    candidates_mb: tuple[int, ...]
    memory_range_mb: tuple[int, int]
    increment_ms: Callable[[dict[str, Any]], float]
    vcpu: Callable[[int, dict[str, Any]], float]
    usd: Callable[[int, float, dict[str, Any]], float]
    source: str


@dataclass(frozen=True)
class FusionPrices:
    """A target's prices of what co-location saves (TargetSpec `tuning`;
    unumctl.tuning.colocate storage_cost / invocation_cost):

    - `storage_usd(nbytes, prices, reads)`: USD to commit a value of `nbytes` once and read
      it `reads` times in its datastore;
    - `invocation_usd(ms, memory_mb, prices)`: USD of one invocation plus `ms` of compute at
      `memory_mb`."""

    storage_usd: Callable[..., float]
    invocation_usd: Callable[[float, float, Any], float]


def for_cloud(cloud: str) -> Sizing:
    """The Sizing of target `cloud` (registry part `sizing`). ValueError (one line) for a
    target without one."""
    found = registry.part(cloud, "sizing")
    if found is None:
        sized = [n for n in registry.names() if registry.spec(n).sizing is not None]
        raise ValueError(f"--cloud {cloud}: unumctl tune cannot size functions there (targets: {', '.join(sized)})")
    return found
