"""The pages a user reads first (the README and docs/guide/) stay short, their relative links
resolve, and they name nothing a user of the product does not have: no issue numbers, no
seed papers, no test or tool files of the repository."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USER_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# what a user does not have: the tracker's numbers, the papers behind the design, the
# repository's test suite and maintainers' tools (docs/contributing.md is theirs); an app's
# own tests/test_app.py (`unumctl init`) is the user's
NOT_FOR_USERS = re.compile(r"\b[Ii]ssues? \d+|\bseed \d|seeds/|\bsection \d+ of the seed|(?<![\w/])tests/(?!test_app\.py)\w|(?<![\w/])tools/\w")
README_WORDS = 900


def broken_links(page: Path) -> list[str]:
    """The relative links of `page` (Markdown `[text](target)`) whose target does not exist."""
    out = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        if not (page.parent / target).exists():
            out.append(f"{page.relative_to(ROOT)}: {target}")
    return out


def unknown_references(page: Path) -> list[str]:
    """`page:line: text` of each line naming what a user does not have (NOT_FOR_USERS)."""
    return [f"{page.relative_to(ROOT)}:{i}: {m.group(0)}"
            for i, line in enumerate(page.read_text().splitlines(), 1) for m in NOT_FOR_USERS.finditer(line)]


def test_the_user_pages_exist():
    assert [p.name for p in USER_PAGES[1:]] == ["commands.md", "index.md"]


def test_every_relative_link_of_a_user_page_resolves():
    assert [b for p in USER_PAGES for b in broken_links(p)] == []


def test_user_pages_name_nothing_a_user_does_not_have():
    assert [u for p in USER_PAGES for u in unknown_references(p)] == []


def test_the_readme_is_a_front_page():
    """What, install, a first app on local and on the emulated AWS, the two set-up commands,
    where to go next; the rest lives in docs/."""
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= README_WORDS
    heads = re.findall(r"^## (.+)$", text, re.M)
    assert heads == ["Install", "A first app on local", "The same app on the emulated AWS",
                     "Set-up: two commands", "Where to go next"]


def test_checkers_catch_a_broken_link_and_an_issue_number(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "README.md"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "aws.md").write_text("x")
    page.write_text("See [aws](docs/aws.md#settings), [gone](docs/gone.md), [web](https://x.org), tests/test_app.py.\n"
                    "Fixed in issue 39; after seed 004 and tests/aws/test_x.py.\n")
    assert broken_links(page) == ["README.md: docs/gone.md"]
    assert unknown_references(page) == ["README.md:2: issue 39", "README.md:2: seed 0",
                                        "README.md:2: tests/a"]


def listed_commands(page: str) -> set[str]:
    """The subcommands of the `unumctl ...` lines of the page's first fenced block."""
    block = page.split("```", 2)[1]
    return {ln.split()[1] for ln in block.splitlines() if ln.startswith("unumctl ") and not ln.startswith("unumctl --")}


def test_the_commands_page_lists_every_command_and_only_those():
    import typer.main

    from unumctl.cli import app
    real = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert listed_commands((ROOT / "docs" / "guide" / "commands.md").read_text()) == real


def test_a_missing_or_unknown_command_is_caught():
    page = "# C\n\n```\nunumctl invoke APP\nunumctl frobnicate APP\nunumctl --version\n```\n"
    assert listed_commands(page) == {"invoke", "frobnicate"}
