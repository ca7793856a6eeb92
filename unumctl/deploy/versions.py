"""What makes a version of an app's deployment and when an old one may be retired, on every
target (docs/versions.md): the version id, a content hash of the bundles and the settings the
platform enforces, and the one retirement rule. The targets keep their versions their own way
(unumctl/local/versions.py, unumctl/aws/versions.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from runtime.payload import VersionId

__all__ = ["deployment_version", "retirable", "version_id"]


def version_id(functions: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]) -> VersionId:
    """The id of a version: the first 16 hex digits of the SHA-256 of the canonical JSON (sorted
    keys) of `functions` ({function: {"zip": bundle SHA-256, "timeout": s, "memory": MB}}) and
    the app-wide `settings` the platform enforces. Raises TypeError for non-JSON values."""
    text = json.dumps({"functions": functions, "settings": settings}, sort_keys=True, separators=(",", ":"))
    return VersionId.of_digest(hashlib.sha256(text.encode()).hexdigest())


def deployment_version(dep: Any) -> VersionId:
    """The version id of a deployment model `dep` (unumctl.deploy.models.Deployment,
    packaged, of any target): its functions' bundle digests, `timeout` and `memory`, and its delivery
    attempts and history level (version_id)."""
    funcs = {f.unum_name: {"zip": f.zip_sha256 or _file_sha256(f.zip_path), "timeout": f.timeout,
                           "memory": f.memory} for f in dep.functions}
    return version_id(funcs, {"max_delivery_attempts": dep.max_delivery_attempts, "history": dep.history})


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def retirable(versions: Iterable[VersionId], current: VersionId | None, running: Mapping[str, int],
              held: Iterable[VersionId] = ()) -> list[VersionId]:
    """The versions that may be collected: not `current`, not `held` by a live platform, and
    with no session that can still run (`running`: version -> count; local: runtime.local.queue
    running_by_version, aws: unumctl/aws/versions.py AwsVersions.running). The one rule of retirement (docs/versions.md)."""
    keep = set(held)
    return [v for v in versions if v != current and v not in keep and not running.get(v)]
