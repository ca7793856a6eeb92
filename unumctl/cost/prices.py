"""The price table of `unumctl cost` and of the cost benchmarks (bench/aws_cost.py,
bench/gcp_calls.py): one JSON file, `unumctl/cost/prices.json` beside this module, with its
date (`as_of`) and sources (`aws._sources`, `gcp._sources`). A user updates it in place or
copies it and passes `unumctl cost --prices FILE` (or sets UNUMCTL_PRICES=FILE); no price is
written in code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import registry

__all__ = ["DEFAULT", "PriceTableError", "load_prices"]

DEFAULT = Path(__file__).with_name("prices.json")
ENV = "UNUMCTL_PRICES"


def required() -> dict[str, tuple[str, ...]]:
    """The keys each priced cloud's section must have (what billing.py and stepfunctions.py
    read): its TargetSpec's `price_keys` (unumctl/registry.py), cloud -> keys."""
    return {c: registry.spec(c).price_keys for c in registry.priced()}


class PriceTableError(ValueError):
    """The price table is missing, not JSON, or lacks a key (message: one line, the file, the
    field and the fix)."""


def table_path(path: Path | str | None = None) -> Path:
    """The price table to read: `path` (the --prices flag), else $UNUMCTL_PRICES, else the
    packaged unumctl/cost/prices.json."""
    if path is not None:
        return Path(path)
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return DEFAULT


def load_prices(path: Path | str | None = None) -> dict[str, Any]:
    """The price table (see `table_path`) as a dict with `as_of`, `aws` and `gcp`, checked
    against `required()` (numbers where prices are expected). Raises PriceTableError."""
    p = table_path(path)
    fix = f"copy {DEFAULT} and edit it, then pass --prices FILE"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise PriceTableError(f"price table {p} not found ({fix})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise PriceTableError(f"price table {p}: not readable JSON ({str(exc).splitlines()[0]}); {fix}") from None
    if not isinstance(data, dict) or not isinstance(data.get("as_of"), str):
        raise PriceTableError(f"price table {p}: as_of: missing (the date the prices were read, e.g. \"2026-11\"); {fix}")
    for cloud, keys in required().items():
        section = data.get(cloud)
        if not isinstance(section, dict):
            raise PriceTableError(f"price table {p}: {cloud}: missing section; {fix}")
        for k in keys:
            if k not in section:
                raise PriceTableError(f"price table {p}: {cloud}.{k}: missing; {fix}")
            if k not in ("operations", "functions_vcpu_by_memory_mb") and (
                    not isinstance(section[k], (int, float)) or isinstance(section[k], bool) or section[k] < 0):
                raise PriceTableError(f"price table {p}: {cloud}.{k}: must be a number >= 0, not {section[k]!r}")
    data["_path"] = str(p)
    return data
