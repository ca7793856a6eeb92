"""The repository's prose describes the repository (issue 35 item 7): no doc, docstring or comment
cites a file outside it (the design notes `ARCHITECTURE.md`, the `../shared` directory beside
the checkout); the architecture is docs/architecture.md, and every `docs/architecture.md §N`
citation names one of its sections; every path docs/architecture.md names exists.

What is read: every text file of the tree (Markdown, Terraform, Jinja, TOML, YAML); of a
Python file its docstrings and comments only (code may look a corpus up beside the checkout,
as tests/runtime/asl/test_conformance.py does); of the Makefile its comment lines (its recipes pass
the conformance corpora as arguments).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("ARCHITECTURE.md", "../shared", "/work/shared")
TEXT_SUFFIXES = {".md", ".tf", ".j2", ".toml", ".yaml", ".yml", ".txt", ".cfg"}
SKIP_DIRS = {".git", ".unum", "node_modules", "__pycache__", "build", "dist", "explorer-traces",
             ".pytest_cache", ".mypy_cache", ".ruff_cache"}
ARCH = ROOT / "docs" / "architecture.md"
CITATION = re.compile(r"docs/architecture\.md §(\d+)")
# where the wheel puts terraform/modules/ (setup.py maps the package onto that folder)
WHEEL_ONLY = {"unumctl/render/modules/"}


def files(root: Path) -> list[Path]:
    """The source and documentation files under `root` (no venvs, caches, state or VCS)."""
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part in SKIP_DIRS or part.startswith(".venv") or part.endswith(".egg-info") for part in rel):
            continue
        if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.suffix == ".py" or p.name == "Makefile"):
            out.append(p)
    return out


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the prose of `path`: docstrings and comments of a Python file, comment
    lines of a Makefile, every line of another text file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name == "Makefile":
        return [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith("#")]
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out += [(first.lineno + k, ln) for k, ln in enumerate(first.value.value.splitlines())]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def outside_references(root: Path) -> list[str]:
    """`path:line: cites X` for every citation of a file outside the repository (this test
    file names them, and is not read)."""
    return [f"{p.relative_to(root)}:{line}: cites {bad}"
            for p in files(root) if p != Path(__file__).resolve()
            for line, text in prose(p) for bad in OUTSIDE if bad in text]


def test_no_doc_docstring_or_comment_cites_a_file_outside_the_repository():
    assert outside_references(ROOT) == []


def test_checker_catches_an_injected_citation(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("The corpus in ../shared/asl-conformance.\n")
    (tmp_path / "m.py").write_text('"""Source: ARCHITECTURE.md §3."""\n\n'
                                   'CORPUS = "../shared/asl-conformance"  # a lookup: code, not prose\n'
                                   'def f():\n    """See /work/shared/notes."""\n'
                                   '# from ARCHITECTURE.md\n')
    (tmp_path / "Makefile").write_text("# corpora in ../shared\nconformance:\n\trun ../shared/asl-conformance\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "y.md").write_text("ARCHITECTURE.md\n")
    assert outside_references(tmp_path) == [
        "Makefile:1: cites ../shared", "docs/x.md:1: cites ../shared", "m.py:1: cites ARCHITECTURE.md",
        "m.py:5: cites /work/shared", "m.py:6: cites ARCHITECTURE.md"]


def test_every_architecture_citation_names_a_section():
    sections = set(re.findall(r"^## (\d+)\. ", ARCH.read_text(), re.M))
    cited = [(p.relative_to(ROOT), line, n) for p in files(ROOT) for line, text in prose(p)
             for n in CITATION.findall(text)]
    assert cited, "no file cites docs/architecture.md"
    assert [c for c in cited if c[2] not in sections] == []


def test_every_path_the_architecture_names_exists():
    """A path of docs/architecture.md under one of the repository's top folders
    (`runtime/engine.py`, `unumctl/deploy/`, `terraform/modules/`) is a file or folder of the
    repository. Placeholders (`<cloud>`), alternatives (`a|b`) and the wheel's own layout
    (`WHEEL_ONLY`) are not paths of the tree."""
    top = "|".join(["runtime", "unumctl", "unumctl_testing", "tests", "tools", "bench", "docs", "terraform"])
    named = set(re.findall(rf"(?<![\w/.])((?:{top})/[\w./<>|-]*)", ARCH.read_text()))
    assert len(named) > 20, named  # the page names the tree (a regex gone wrong finds nothing)
    missing = [n for n in sorted(named) if not any(c in n for c in "<|") and n not in WHEEL_ONLY
               and not (ROOT / n.rstrip(".")).exists()]
    assert missing == []
