"""An app with one trigger of every kind, for the targets' trigger tests (tests/aws,
tests/gcp): its entry `Echo` returns {"input": its input}, so a session's result shows the
input its trigger gave it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .apps import make_app

__all__ = ["ECHO", "TRIGGERS", "echo_app"]

ECHO = """
def handler(event, context):
    return {"input": event}
"""

# one trigger per kind (docs/triggers.md); `only` in echo_app picks some
TRIGGERS: dict[str, dict[str, Any]] = {
    "web": {"type": "http"},
    "open": {"type": "http", "auth": "public", "wait_seconds": 20},
    "nightly": {"type": "schedule", "expression": "cron(0 2 * * ? *)", "timezone": "UTC",
                "input": {"mode": "full"}},
    "orders": {"type": "queue", "batch_size": 10, "max_receive_count": 3},
    "uploads": {"type": "storage", "prefix": "in/", "suffix": ".json"},
    "audit": {"type": "eventbridge", "pattern": {"source": ["unum.test"]}},
}


def echo_app(root: Path, name: str = "trig", only: tuple[str, ...] | None = None) -> Path:
    """Write the app at `root` with the triggers named in `only` (default: every one)."""
    make_app(root, name, {"Echo": ({"Start": True}, ECHO)})
    mpath = root / "unumctl.yaml"
    manifest = yaml.safe_load(mpath.read_text())
    manifest["triggers"] = {k: v for k, v in TRIGGERS.items() if only is None or k in only}
    mpath.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root
