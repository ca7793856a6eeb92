"""The version of an app's deployment, one rule for every target (docs/versions.md): what
makes a version, its id, and when an old one may be retired.

A version is what a platform runs: every function's bundle (code, runtime, IR, options: the
zip's SHA-256, deterministic, unumctl/build.py) and the settings the platform enforces
(each function's `timeout` and `memory`, the delivery attempts, the history level). Its id
is the start of the SHA-256 of those, in canonical JSON (`version_id`): the same app built
twice is one version; any change of code, IR or settings is a new one. Where each target
keeps its versions: unumctl/local/versions.py (local, serve), unumctl/aws/versions.py (aws),
unumctl/gcp/versions.py (gcp).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from runtime.payload import VersionId

__all__ = ["deployment_version", "retirable", "version_id", "version_of"]


def version_id(functions: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]) -> VersionId:
    """The id of a version: the first 16 hex digits of the SHA-256 of the canonical JSON (sorted
    keys) of `functions` ({function: {"zip": bundle SHA-256, "timeout": s, "memory": MB}}) and
    the app-wide `settings` the platform enforces. Raises TypeError for non-JSON values."""
    text = json.dumps({"functions": functions, "settings": settings}, sort_keys=True, separators=(",", ":"))
    return VersionId.of_digest(hashlib.sha256(text.encode()).hexdigest())


def version_of(functions: Iterable[tuple[str, str, Any, Any]], max_delivery_attempts: int,
               history: str) -> VersionId:
    """`version_id` of `functions`, (name, bundle SHA-256, timeout s, memory MB) each, with
    the app's delivery attempts and history level."""
    return version_id({name: {"zip": digest, "timeout": timeout, "memory": memory}
                       for name, digest, timeout, memory in functions},
                      {"max_delivery_attempts": max_delivery_attempts, "history": history})


def deployment_version(dep: Any) -> VersionId:
    """The version id of a packaged deployment model `dep` (unumctl.deploy.models.Deployment
    after unumctl.pipeline.package, any cloud): its functions' bundle digests, `timeout` and
    `memory`, and its delivery attempts and history level (version_of)."""
    return version_of(((f.unum_name, f.zip_sha256 or _file_sha256(f.zip_path), f.timeout, f.memory)
                       for f in dep.functions), dep.max_delivery_attempts, dep.history)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def retirable(versions: Iterable[VersionId], current: VersionId | None, running: Mapping[str, int],
              held: Iterable[VersionId] = ()) -> list[VersionId]:
    """The versions that may be collected: not `current`, not `held` by a live platform, and
    with no session that can still run (`running`: version -> count of its sessions that can
    still run; aws: unumctl/aws/versions.py AwsVersions.running). The one rule of retirement (docs/versions.md)."""
    keep = set(held)
    return [v for v in versions if v != current and v not in keep and not running.get(v)]
