"""Lists in the docs that mirror a list in the code stay equal to it (issue 35 item 6: docs/ir.md's
edge types had lost `Window`): each test reads the list from the page and from the code.
"""

from __future__ import annotations

import re
from pathlib import Path

from runtime.gc import GC_MODES
from runtime.ir import EDGE_TYPES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def backquoted_list(text: str, lead: str) -> list[str]:
    """The backquoted words of the sentence that starts with `lead` (up to its `;` or `)`),
    in order. AssertionError when no such sentence is on the page."""
    m = re.search(re.escape(lead) + r"([^;)]*)", text)
    assert m, f"{lead!r} not found"
    return re.findall(r"`([^`]+)`", m.group(1))


def test_ir_md_lists_every_edge_type():
    assert backquoted_list((DOCS / "ir.md").read_text(), "(`Type` is one of") == list(EDGE_TYPES)


def test_protocol_md_has_a_row_per_gc_mode():
    page = (DOCS / "protocol.md").read_text()
    section = page.split("## GC modes", 1)[1].split("\n## ", 1)[0]
    table = section.split("| mode |", 1)[1].split("\n\n", 1)[0]  # the section's first table
    assert re.findall(r"^\| `(\w+)`", table, re.M) == list(GC_MODES)


def test_a_list_missing_an_entry_is_caught():
    stale = "(`Type` is one of `Scalar`, `Map`, `Fan-in`, `Shuffle`; Shuffle: see below.)"
    assert backquoted_list(stale, "(`Type` is one of") != list(EDGE_TYPES)
