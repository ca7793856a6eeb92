"""A venv whose Python lacks some installed packages (for tests of how unumctl behaves when an
extra, or unumctl itself, is only reachable some other way): the shared venv's site-packages
linked entry by entry, minus the excluded names."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def venv_without(base: Path, exclude: tuple[str, ...]) -> str:
    """Make a venv under `base` whose site-packages has every entry of this interpreter's
    except those whose lower-cased name starts with one of `exclude` (and the .pth files, so
    no editable install of unumctl comes with it); returns its python's path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    farm = base / "site"
    farm.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith((*exclude, "__editable__", "_virtualenv")) or name.endswith(".pth"):
            continue
        (farm / entry.name).symlink_to(entry)
    python = base / "venv" / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "linked.pth").write_text(f"{farm}\n")
    return str(python)
