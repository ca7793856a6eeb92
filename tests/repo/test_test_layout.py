"""The suite's layout follows the product's (docs/testing.md "Where the tests are"): every
product package (a folder of runtime/ or unumctl/ with an `__init__.py`) has a row in the
page's table naming its test folder; every folder the table names exists, is a package and
holds a test file; every test file under tests/ sits directly in a folder the table names.
The checker reads only the tree, and is shown to catch a misplaced file, a package without a
row and a test folder without `__init__.py`, each injected into a copy of the tree's shape."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("runtime", "unumctl")
SECTION = "## Where the tests are"


def table(page: str) -> dict[str, str]:
    """The table of `SECTION` as {first cell: test folder} (backquotes stripped; a first cell
    that is not one backquoted path is kept as written). AssertionError when the section or
    its table is missing."""
    assert f"\n{SECTION}\n" in page, f"docs/testing.md has no '{SECTION}' section"
    rows: dict[str, str] = {}
    for line in page.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 2 or set(line) <= set("|- ") or cells[1] == "test folder":
            continue
        rows[cells[0].strip("`")] = cells[1].strip("`")
    assert rows, f"docs/testing.md '{SECTION}': no table"
    return rows


def packages(root: Path) -> list[str]:
    """The product packages under `root`, as 'runtime/asl/' (sorted)."""
    return sorted(f"{p.parent.relative_to(root).as_posix()}/" for top in PRODUCT
                  for p in (root / top).rglob("__init__.py") if "__pycache__" not in p.parts)


def layout_problems(root: Path) -> list[str]:
    """One line per departure from the map, each naming the file or package and the fix."""
    rows = table((root / "docs" / "testing.md").read_text())
    problems = []
    for pkg in packages(root):
        if pkg not in rows:
            problems.append(f"{pkg}: a product package with no row in docs/testing.md '{SECTION}' "
                            f"(add '| `{pkg}` | `tests/...` |' and put its tests there)")
    for code in rows:
        if re.fullmatch(r"[\w/]+/", code) and not (root / code).is_dir():
            problems.append(f"docs/testing.md '{SECTION}': {code} is not a folder of the repository")
    folders = set(rows.values())
    for folder in sorted(folders):
        d = root / folder
        if not any(d.glob("test_*.py")):
            problems.append(f"docs/testing.md '{SECTION}': {folder} holds no test file")
        elif not (d / "__init__.py").is_file():
            problems.append(f"{folder}: no __init__.py (two folders' files of one name would collide)")
    for f in sorted((root / "tests").rglob("test_*.py")):
        where = f"{f.parent.relative_to(root).as_posix()}/"
        if where not in folders:
            problems.append(f"{f.relative_to(root).as_posix()}: not in a test folder of docs/testing.md "
                            f"'{SECTION}' (move it to the folder of the package it exercises)")
    return problems


def test_every_package_has_a_test_folder_and_every_test_file_is_in_one():
    assert layout_problems(ROOT) == []


@pytest.fixture
def shape(tmp_path: Path) -> Path:
    """A copy of the tree's shape: docs/testing.md, the packages' `__init__.py` and the test
    folders' files (empty)."""
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "testing.md", tmp_path / "docs" / "testing.md")
    for pkg in packages(ROOT):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").touch()
    (tmp_path / "tools").mkdir()
    (tmp_path / "bench").mkdir()
    for f in (ROOT / "tests").rglob("*.py"):
        if "__pycache__" not in f.parts:
            copy = tmp_path / f.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.touch()
    assert layout_problems(tmp_path) == []
    return tmp_path


def test_the_checker_catches_a_misplaced_test_file(shape):
    (shape / "tests" / "test_rough_edges.py").touch()
    (shape / "tests" / "egress" / "test_sitecustomize.py").touch()
    assert layout_problems(shape) == [
        "tests/egress/test_sitecustomize.py: not in a test folder of docs/testing.md "
        "'## Where the tests are' (move it to the folder of the package it exercises)",
        "tests/test_rough_edges.py: not in a test folder of docs/testing.md "
        "'## Where the tests are' (move it to the folder of the package it exercises)"]


def test_the_checker_catches_a_package_without_a_row_and_a_folder_without_init(shape):
    (shape / "unumctl" / "azure").mkdir()
    (shape / "unumctl" / "azure" / "__init__.py").touch()
    (shape / "tests" / "unumctl" / "serve" / "__init__.py").unlink()
    problems = sorted(layout_problems(shape))
    assert len(problems) == 2, problems
    assert problems[0].startswith("tests/unumctl/serve/: no __init__.py")
    assert problems[1].startswith("unumctl/azure/: a product package with no row")


def test_the_checker_catches_a_row_whose_folder_holds_no_test(shape):
    page = shape / "docs" / "testing.md"
    page.write_text(page.read_text().replace("| `unumctl/cost/` | `tests/unumctl/cost/` |",
                                             "| `unumctl/cost/` | `tests/unumctl/costs/` |"))
    assert layout_problems(shape) == [
        "docs/testing.md '## Where the tests are': tests/unumctl/costs/ holds no test file",
        "tests/unumctl/cost/test_billing.py: not in a test folder of docs/testing.md "
        "'## Where the tests are' (move it to the folder of the package it exercises)"]


def test_the_checker_catches_a_row_naming_no_folder(shape):
    page = shape / "docs" / "testing.md"
    page.write_text(page.read_text().replace("| `tools/` | `tests/tools/` |",
                                             "| `tools/` | `tests/tools/` |\n| `unumctl/render/hcl/` | `tests/unumctl/render/` |"))
    assert layout_problems(shape) == [
        "docs/testing.md '## Where the tests are': unumctl/render/hcl/ is not a folder of the repository"]
