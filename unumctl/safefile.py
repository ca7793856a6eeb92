"""Reading and writing the user's files without being steered by what is planted there
(docs/security.md "Files unumctl reads and writes on your machine"; issue 33 items 7-8).
The one place for these rules; every user file of the kinds below goes through it:

- `read_bounded`: a file's bytes, opened without blocking (O_NONBLOCK, so a FIFO cannot
  hang the read) and checked with fstat to be a regular file (not a FIFO, a device such as
  /dev/zero, a socket or a directory) of at most `max_bytes`. A symbolic link is followed:
  reading through one writes nothing, and what it leads to is checked like any file.
- `load_yaml` / `load_json`: the text parsed with the nesting depth bounded before it is
  composed (PyYAML composes and json decodes recursively: 20,000 levels were a
  RecursionError) and, for YAML, the size of the value once its aliases are expanded
  bounded too (an alias bomb, "billion laughs", is a few hundred bytes whose value is 10^9
  nodes: anything that walks it, str() or a validator, never ends). Anchors and aliases
  within the bound keep working (a manifest may share settings that way).
- `write_atomic`: the new content in a temporary file of a random name created with O_EXCL
  (tempfile.mkstemp, which adds O_NOFOLLOW) in the destination's directory, renamed over
  the destination (or linked to it, refusing an existing one): a symbolic link planted at
  the destination or at a guessable `NAME.tmp` is replaced or refused, never written through.
- `check_private_dir`: a directory unumctl keeps state in must be the user's own and not
  writable by group or others, who could otherwise plant links there.

Errors are UnsafeFileError (a ValueError: the CLI prints it as one line, exit 2), whose text
names the file and the fix; the parsers raise the parser's own error types (yaml.YAMLError,
json.JSONDecodeError) so that their callers report them as they report a syntax error.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, SequenceNode

__all__ = ["UnsafeFileError", "check_private_dir", "load_json", "load_yaml", "read_bounded", "remove_if_same",
           "write_atomic"]

MAX_DEPTH = 100            # levels of nesting in a user's YAML or JSON file (a manifest needs < 10)
MAX_NODES = 1_000_000      # YAML nodes once aliases are expanded (a plan file has < 1,000)
MAX_BYTES = 8 * 1024 * 1024  # default bound on a file read with read_bounded


class UnsafeFileError(ValueError):
    """A file or directory unumctl refuses to read or write (not a regular file, too large,
    a state directory others can write): str() is one line naming the path and the fix."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES,
                 fix: str = "name a regular file") -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` of them; `fix` ends the
    error's line (what the user should do).

    Opened with O_NONBLOCK (a FIFO opens at once instead of waiting for a writer) and checked
    with fstat on the open descriptor (no race with a rename). Raises UnsafeFileError when it
    is not a regular file (directory, FIFO, device, socket) or holds more than `max_bytes`
    (checked on the size and again on what is read: /proc files report 0); OSError
    (FileNotFoundError, PermissionError, ...) as os.open raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{path}: is {_kind(st.st_mode)}, not a regular file; {fix}")
        too_big = UnsafeFileError(f"{path}: larger than {max_bytes:,} bytes, more than such a file holds; {fix}")
        if st.st_size > max_bytes:
            raise too_big
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise too_big
        return b"".join(chunks)
    finally:
        os.close(fd)


class _BoundedLoader(yaml.SafeLoader):
    """yaml.SafeLoader whose composer refuses nesting deeper than `max_depth` (checked as
    each node is entered, before its children are composed)."""

    max_depth = MAX_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise ComposerError(None, None, f"nested deeper than {self.max_depth} levels (a plain "
                                    "configuration needs a handful)", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded(root: Node, max_nodes: int, max_depth: int) -> None:
    """Refuse (ComposerError) a node graph whose value, aliases expanded, has more than
    `max_nodes` nodes or is nested deeper than `max_depth`, or that refers to itself (an alias
    inside its own anchor). Memoized by node: linear in the nodes composed; the recursion is
    no deeper than the composed document (an alias refers to a node composed before it)."""
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, expanded depth)
    busy: set[int] = set()

    def refuse(node: Node, problem: str) -> ComposerError:
        return ComposerError(None, None, problem, node.start_mark)

    def walk(node: Node) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            return memo[key]
        if key in busy:
            raise refuse(node, "an alias refers to the value that holds it (a recursive value)")
        busy.add(key)
        size, depth = 1, 1
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            s, d = walk(child)
            size += s
            depth = max(depth, d + 1)
            if size > max_nodes:
                raise refuse(node, f"its aliases expand to more than {max_nodes:,} values (an alias bomb?); "
                             "write the values out instead of nesting aliases")
            if depth > max_depth:
                raise refuse(node, f"its aliases expand to a value nested deeper than {max_depth} levels")
        busy.discard(key)
        memo[key] = (size, depth)
        return size, depth

    walk(root)


def load_yaml(text: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """`text` parsed as yaml.safe_load does (None for an empty document), refusing nesting
    deeper than `max_depth` and a value larger than `max_nodes` nodes once its aliases are
    expanded, before anything is constructed. Raises yaml.YAMLError (a MarkedYAMLError with
    the line for the bounds; a constructor's ValueError, such as an integer of more than
    4,300 digits, as a yaml.YAMLError too)."""
    loader = _BoundedLoader(text)
    loader.max_depth = max_depth
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded(node, max_nodes, max_depth)
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError, RecursionError) as exc:
            raise yaml.YAMLError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        loader.dispose()


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def load_json(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(`text`), refusing nesting deeper than `max_depth` before decoding (the
    decoder recurses: 100,000 levels were a RecursionError). Raises json.JSONDecodeError
    (a ValueError, with the position) for that and for invalid JSON."""
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", text, m.start())
        elif c in "]}":
            depth -= 1
    return json.loads(text)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, replace: bool = True,
                 mode: int = 0o600, durable: bool = False) -> os.stat_result:
    """Write `data` (str: UTF-8) to `path` all at once: into a new temporary file
    `.NAME.<random>.tmp` in the same directory (O_CREAT|O_EXCL|O_NOFOLLOW, `mode`), then
    renamed over `path` (`replace`: whatever is at `path`, a symbolic link included, is
    replaced, never written through) or hard-linked to it (not `replace`: FileExistsError
    when anything, a dangling link included, is at `path`; where the file system has no hard
    links, created there with O_EXCL|O_NOFOLLOW instead). No reader ever sees half of it;
    `durable`: fsync the file before it is renamed (survives a power loss, costs a disk
    flush).

    Returns the os.stat_result of the written file (st_dev/st_ino say later whether `path`
    is still it: `remove_if_same`). Raises OSError as the file system does (missing
    directory, no permission; IsADirectoryError when `path` is a directory)."""
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if replace:
            written = os.stat(tmp)
            os.replace(tmp, p)
            return written
        try:
            os.link(tmp, p, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            # no hard links here: create it exclusively (a link at `path` is refused, not followed)
            out = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                          | getattr(os, "O_CLOEXEC", 0), mode)
            with os.fdopen(out, "wb") as f:
                f.write(raw)
                written = os.fstat(f.fileno())
            return written
        return os.stat(p, follow_symlinks=False)
    finally:
        Path(tmp).unlink(missing_ok=True)


def remove_if_same(path: str | os.PathLike[str], written: os.stat_result) -> bool:
    """Delete `path` only when it is still the file `written` describes (same device and
    inode, not a link to it): what the user or another program put there since is left
    alone. Returns whether it was deleted."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    if (now.st_dev, now.st_ino) != (written.st_dev, written.st_ino) or not stat.S_ISREG(now.st_mode):
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def check_private_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """The directory `path` (named by the option `flag` in errors), created 0700 with its
    parents when missing. Raises UnsafeFileError (one line: the directory and the fix) when
    it is not a directory, is not owned by the user running unumctl, or its group or others
    can write it (they could plant links or files there); OSError when it cannot be made."""
    p = Path(path)
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise UnsafeFileError(f"{flag} {path}: exists and is not a directory; name a directory") from None
    st = os.stat(p)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFileError(f"{flag} {path}: is not a directory; name a directory")
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if st.st_uid != uid:
        raise UnsafeFileError(f"{flag} {path}: owned by uid {st.st_uid}, not by you (uid {uid}); use a "
                              "directory of your own (e.g. the default, or one you mkdir -m 700)")
    if st.st_mode & 0o022:
        raise UnsafeFileError(f"{flag} {path}: others can write it (mode {stat.S_IMODE(st.st_mode):o}), "
                              f"so they could plant links in it; run chmod go-w {path} or use a "
                              "directory only you can write")
    return p
