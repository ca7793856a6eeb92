"""The watched directory of a `storage` trigger on `unumctl serve`:
`<app>/.unum/local/<stage>/storage/<trigger>/`. A file copied in (or written there) is an
object created: once its size and modification time are the same on two scans (its
writer is done: the local stand-in for S3's complete PUT and GCS's `finalize`), it is
reported once as an event of the watched-directory shape (runtime/sources/storage.py,
generation = mtime in ns). Dot files and anything that is not a regular file (a symbolic
link included: never followed) are ignored.

Polling with os.scandir: the directory is small and local, and a poll sees files created
while serve was stopped, which inotify-style watching would not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from runtime.sources.storage import LOCAL_OBJECT_KIND

__all__ = ["DirectoryWatcher", "scan"]


def scan(root: Path) -> dict[str, tuple[int, int]]:
    """{path below `root` (POSIX): (mtime in ns, size in bytes)} of its regular files, not
    following links; {} when `root` is missing."""
    out: dict[str, tuple[int, int]] = {}
    stack = [(root, "")]
    while stack:
        d, prefix = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append((Path(e.path), f"{prefix}{e.name}/"))
            elif stat.S_ISREG(st.st_mode):
                out[prefix + e.name] = (st.st_mtime_ns, st.st_size)
    return out


class DirectoryWatcher:
    """Reports each settled file of `root` once per (mtime, size) it settles at; `bucket`
    names the directory in the events (the trigger's name)."""

    def __init__(self, root: Path, bucket: str):
        self.root, self.bucket = Path(root), bucket
        self._last: dict[str, tuple[int, int]] = {}
        self._reported: dict[str, tuple[int, int]] = {}

    def forget(self, name: str) -> None:
        """Report file `name` again at the next poll (its delivery failed)."""
        self._reported.pop(name, None)

    def poll(self) -> list[dict[str, Any]]:
        """The events of files settled since the last poll, in path order."""
        now = scan(self.root)
        ready = sorted(rel for rel, st in now.items() if self._last.get(rel) == st and self._reported.get(rel) != st)
        self._last = now
        for rel in ready:
            self._reported[rel] = now[rel]
        return [{"kind": LOCAL_OBJECT_KIND, "bucket": self.bucket, "name": rel, "generation": str(now[rel][0]),
                 "size": now[rel][1]} for rel in ready]
