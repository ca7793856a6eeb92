"""Public state machines that use JSONPath and Lambda names as Step Functions accepts them
(issue 24 item 5): each compiles, or is refused with the one-line error recorded in
tests/asl_corpus/corpus.json; those that call only Lambda (or no Task) run in the ASL
interpreter with the functions' results given there. Sources: tests/asl_corpus/README.md.
`pytest -s -k corpus_report` prints which compile and why the others are refused."""

from __future__ import annotations

import pytest

from runtime.asl import paths
from tests.asl_corpus_harness import CORPUS, all_paths, compile_entry, entries, run_entry

ENTRIES = entries()


def test_every_corpus_file_is_indexed_and_its_source_named():
    files = sorted(p.name for p in CORPUS.glob("*.asl.json"))
    assert files == sorted(e["file"] for e in ENTRIES)
    readme = (CORPUS / "README.md").read_text()
    for e in ENTRIES:
        assert e["file"] in readme and e["source"].split(" ")[0] in readme, e["file"]
    assert len(ENTRIES) >= 10


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_machine(entry):
    definition, error = compile_entry(entry["file"], entry["functions"])
    if "refused" in entry:
        assert error is not None and entry["refused"] in error, error
        assert "\n" not in error
    else:
        assert error is None, error
    if definition is not None:  # every JSONPath in it parses, refused machines included
        for p in all_paths(definition):
            paths.validate_path(p)
    if "run" in entry:
        run = entry["run"]
        out = run_entry(definition, run["input"], run["returns"])
        if "output" in run:
            assert out == run["output"]
        else:
            assert out["Payload"] == run["output_payload"]


def test_corpus_report(capsys):
    lines, compiled = [], 0
    for e in ENTRIES:
        _, error = compile_entry(e["file"], e["functions"])
        compiled += error is None
        lines.append(f"{e['file']}: " + ("compiles" + (", runs" if "run" in e else "") if error is None
                                         else f"refused: {error}"))
    with capsys.disabled():
        print(f"\nASL corpus: {compiled} of {len(ENTRIES)} compile")
        print("\n".join(lines))
    assert compiled == sum("refused" not in e for e in ENTRIES)
