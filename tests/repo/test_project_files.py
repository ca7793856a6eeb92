"""The project's own files as a user meets them: `make demo` prints only the JSON on stdout, the
package's license is an SPDX string (pyproject.toml), and the docs state the default handler."""

from __future__ import annotations

import pytest


def test_make_demo_prints_only_the_json_on_stdout(tmp_path):
    """`make demo` against a stand-in virtual environment (python: prints like pip does;
    unumctl: prints the JSON), so the set-up recipe runs as on a fresh clone, in milliseconds."""
    import json
    import shutil
    import subprocess
    from pathlib import Path
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, body in (("python", "echo 'Successfully installed pip'"), ("unumctl", "echo '{\"the\": 1}'")):
        (venv / "bin" / name).write_text(f"#!/bin/sh\n{body}\n")
        (venv / "bin" / name).chmod(0o755)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(["make", "--no-print-directory", "demo", f"VENV={venv}"], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"the": 1}, proc.stdout
    assert (venv / ".installed").exists()
    # the minutes of the first install are announced, on stderr
    assert proc.stderr.startswith("installing unumctl and its dependencies into"), proc.stderr


def test_pyproject_license_is_an_spdx_string():
    """setuptools >= 77 deprecates the `license` table (BuildBackendWarning on every build);
    the SPDX expression string needs setuptools >= 77 as the build requirement."""
    import tomllib
    from pathlib import Path
    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert doc["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in doc["build-system"]["requires"]


def test_docs_state_the_default_handler():
    from pathlib import Path
    docs = Path(__file__).resolve().parents[2] / "docs"
    for name in ("ir.md", "stepfunctions.md"):
        text = " ".join((docs / name).read_text().split())
        assert "without `handler:` it is `app.handler`" in text or \
            "handler is `app.handler`" in text, name
