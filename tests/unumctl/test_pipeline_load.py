"""Loading an app writes nothing and changes nothing in the app's directory: `unumctl
validate`, `compile` and `graph` on a hand-written IR app and on a Step Functions app leave
every path, every file's bytes and every mtime as they were (unumctl/pipeline.py `load`; the
Step Functions stub handler is written into the bundles, unumctl/build.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from unumctl_testing.apps import EXAMPLES, ROOT, copy_example

# wordcount: hand-written IR; wordcount-py: a Python @workflow (its module is imported, no
# bytecode written); orders-sfn: a state machine whose Choice and Pass states compile
# to synthesized functions (no user code: the stub handler)
APPS = ["wordcount", "orders-sfn", "wordcount-py"]
COMMANDS = [["validate"], ["compile"], ["graph"], ["graph", "--ir"]]


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None, int]]:
    """Every path under `root` (directories too): (kind, bytes of a file, mtime in ns)."""
    out: dict[str, tuple[str, bytes | None, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            is_file = p.is_file() and not p.is_symlink()
            out[str(p.relative_to(root))] = ("file" if is_file else "dir", p.read_bytes() if is_file else None,
                                             st.st_mtime_ns)
    return out


def diff(before: dict, after: dict) -> list[str]:
    """What changed, one line per path: added, removed, bytes or mtime changed."""
    lines = [f"added {p}" for p in sorted(set(after) - set(before))]
    lines += [f"removed {p}" for p in sorted(set(before) - set(after))]
    lines += [f"changed {p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    return lines


@pytest.mark.parametrize("example", APPS)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_loading_command_leaves_the_app_directory_unchanged(tmp_path, example, command):
    root = copy_example(EXAMPLES / example, tmp_path / example)
    before = snapshot(root)
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *command, str(root)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    changed = diff(before, snapshot(root))
    assert changed == [], "\n".join(changed)


def test_the_snapshot_sees_a_new_directory_a_new_file_and_a_touched_one(tmp_path):
    root = copy_example(EXAMPLES / "wordcount", tmp_path / "app")
    before = snapshot(root)
    (root / ".unum").mkdir()
    (root / "new.txt").write_text("x")
    st = (root / "unumctl.yaml").stat()
    os.utime(root / "unumctl.yaml", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert diff(before, snapshot(root)) == ["added .unum", "added new.txt", "changed unumctl.yaml"]
