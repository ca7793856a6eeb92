"""Which cloud `local` stands for when `unumctl tune` sizes and prices a plan there.

A local worker is a process on this machine with no memory setting and no bill, so a plan
tuned on local is a plan for the cloud it rehearses: `STANDS_FOR` (AWS Lambda). Its memory
sizes and compute price (`SIZING`, TargetSpec `sizing`) and what fusion saves (`TUNING`,
TargetSpec `tuning`) are that target's, reached through the registry (unumctl/registry.py),
so local imports no other target's package and this is the one place saying so.
"""

from __future__ import annotations

from typing import Any

from .. import registry

__all__ = ["STANDS_FOR"]  # and SIZING, TUNING, served by __getattr__ (F822 cannot see them)

STANDS_FOR = "aws"


def __getattr__(name: str) -> Any:
    # SIZING / TUNING: the parts of STANDS_FOR, loaded on first use (registry.part)
    parts = {"SIZING": "sizing", "TUNING": "tuning"}
    if name in parts:
        return registry.part(STANDS_FOR, parts[name])
    raise AttributeError(name)
