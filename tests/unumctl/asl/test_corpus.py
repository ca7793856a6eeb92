"""The public state-machine corpus (issue 24, "Done when", third bullet): its index, and the
checks that hold each public machine to its recorded outcome.

tests/asl_corpus/corpus.json indexes real definitions from AWS's sample collections and public
issues (source repository, path and commit; tests/asl_corpus/README.md) with what each gives
here: compiles with the API `unumctl compile` uses, or is refused with ONE line naming the
file and the state; and, for those recorded with a `run`, the result in the ASL interpreter.
The definitions themselves are not in the repository (their sources' terms keep them out):
`make corpus-stats` (tools/asl_corpus_stats.py) compiles and runs them from a cache
directory and is the documented command for the public machines' numbers.

The tests here need no cache: they check the index (a source for every entry, the spread of
features the issue counts, no definition in tests/asl_corpus/) and test the tester (the
harness's checks and the stats command, shown mistakes on purpose) on small machines written
below, our own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import unumctl_testing.asl_corpus as harness
from unumctl_testing.asl_corpus import (COMPILES, CORPUS, REFUSED, MotoAWS, check_run, compile_entry, corpus_dir,
                                      definitions_in, entries, features, index_problems, refusal_problems)

ENTRIES = entries()
ISSUE_FEATURES = ("lambda", "aws-sdk", "dynamodb", "sns", "sqs", "events", "startExecution", ".sync",
                  ".waitForTaskToken", "distributed-map", "parallel", "choice", "map", "jsonata")

# Our own machines (written for these tests, not copied from anywhere) and their index entries.
OURS = {
    "ours_lambda_choice.asl.json": json.dumps({
        "Comment": "unumctl test machine: a Lambda Task named by a template placeholder, then a Choice",
        "StartAt": "Greet",
        "States": {
            "Greet": {"Type": "Task", "Resource": "${Greeter}", "ResultPath": "$.greeting", "Next": "Ok?"},
            "Ok?": {"Type": "Choice", "Default": "Sad",
                    "Choices": [{"Variable": "$.greeting.ok", "BooleanEquals": True, "Next": "Happy"}]},
            "Happy": {"Type": "Pass", "Result": "happy", "ResultPath": "$.mood", "End": True},
            "Sad": {"Type": "Fail", "Error": "Ours.Sad", "Cause": "the greeter said no"}}}, indent=1),
    "ours_dynamodb_put.asl.json": json.dumps({
        "StartAt": "Put",
        "States": {"Put": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
                           "Parameters": {"TableName": "${Table}", "Item": {"id": {"S.$": "$.id"}}},
                           "ResultPath": None, "End": True}}}, indent=1),
    "ours_refused.asl.json": json.dumps({
        "StartAt": "Pause",
        "States": {"Pause": {"Type": "Wait", "Seconds": 1, "Timestamp": "2024-01-01T00:00:00Z", "End": True}}},
        indent=1),
    "ours_not_json.asl.json": "{\n 'StartAt': 'A'\n}\n",
}
OUR_INDEX = [
    {"file": "ours_lambda_choice.asl.json", "source": "unumctl tests/unumctl/asl/test_corpus.py (ours)",
     "functions": ["Greeter"], "features": ["choice", "lambda"], "outcome": COMPILES,
     "run": {"input": {"name": "n"}, "returns": {"Greeter": {"ok": True}},
             "output": {"name": "n", "greeting": {"ok": True}, "mood": "happy"}}},
    {"file": "ours_dynamodb_put.asl.json", "source": "unumctl tests/unumctl/asl/test_corpus.py (ours)",
     "functions": [], "substitutions": {"Table": "ours-items"}, "features": ["dynamodb"], "outcome": COMPILES,
     "run": {"input": {"id": "i-1"}, "aws": {"tables": {"ours-items": "id"}},
             "output": {"id": "i-1"}, "after": {"items": {"ours-items": 1}}}},
    {"file": "ours_refused.asl.json", "source": "unumctl tests/unumctl/asl/test_corpus.py (ours)",
     "functions": [], "features": ["wait"],
     "outcome": REFUSED + "ours_refused.asl.json: States.Pause.Seconds: a Wait needs exactly one of Seconds, "
                          "SecondsPath, Timestamp, TimestampPath"},
    {"file": "ours_not_json.asl.json", "source": "unumctl tests/unumctl/asl/test_corpus.py (ours)",
     "functions": [], "features": [],
     "outcome": REFUSED + "ours_not_json.asl.json: not valid JSON: Expecting property name enclosed in double "
                          "quotes: line 2 column 2 (char 3)"},
]


@pytest.fixture
def ours(tmp_path, monkeypatch):
    """A cache directory holding our machines and an index of them (harness.INDEX points at it)."""
    root = tmp_path / "cache"
    root.mkdir()
    for name, text in OURS.items():
        (root / name).write_text(text)
    index = tmp_path / "corpus.json"
    index.write_text(json.dumps(OUR_INDEX, indent=1))
    monkeypatch.setattr(harness, "INDEX", index)
    monkeypatch.delenv(harness.CACHE_ENV, raising=False)
    return root


@pytest.fixture(scope="module")
def moto_aws():
    """One in-process moto for the module's runs (their resource names differ)."""
    with MotoAWS() as aws:
        yield aws


def test_no_state_machine_definition_is_in_the_repository(tmp_path):
    """tests/asl_corpus/ holds only corpus.json and README.md: the public definitions live in
    the cache directory. The guard is shown a definition put there on purpose."""
    assert definitions_in(CORPUS) == []
    assert sorted(p.name for p in CORPUS.iterdir()) == ["README.md", "corpus.json"]
    for name in ("corpus.json", "README.md"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "copied.asl.json").write_text(OURS["ours_refused.asl.json"])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "README.md").write_text("{}")
    assert definitions_in(tmp_path) == ["copied.asl.json", "sub/README.md"]
    # nor is one pasted into the index
    pasted = [{**OUR_INDEX[2], "run": {"input": {}, "output": json.loads(OURS["ours_refused.asl.json"])}}]
    assert any("embeds a state-machine definition" in p for p in index_problems(pasted))


def test_the_index_names_a_source_for_every_entry():
    """Every entry names where its definition comes from (for the aws-samples ones:
    repository, path and a 40-hex commit), so whoever has access can fetch it; the README's
    table lists each. The check is shown an index with each mistake on purpose."""
    assert index_problems(ENTRIES) == []
    assert len(ENTRIES) >= 60
    assert sum(e["source"].startswith("aws-samples/") for e in ENTRIES) >= 50
    readme = (CORPUS / "README.md").read_text()
    for e in ENTRIES:
        assert f"`{e['file']}`" in readme and e["source"].split(" ")[0] in readme, e["file"]

    good = ENTRIES[0]
    assert good["source"].startswith("aws-samples/")
    assert "names no source" in index_problems([{**good, "source": " "}])[0]
    assert "40-hex commit" in index_problems([{**good, "source": good["source"].split(" @ ")[0]}])[0]
    assert "plain <name>.asl.json" in index_problems([{**good, "file": "../../etc/x.asl.json"}])[0]
    assert "indexed twice" in index_problems([good, good])[0]
    assert "neither" in index_problems([{**good, "outcome": "ok"}])[0]
    assert "more than one line" in index_problems([{**good, "outcome": f"{REFUSED}{good['file']}: a\nb"}])[0]
    assert "file's name" in index_problems([{**good, "outcome": REFUSED + "other.asl.json: States.A.B: no"}])[0]
    assert "features is not a list" in index_problems([{k: v for k, v in good.items() if k != "features"}])[0]
    assert "unknown field" in index_problems([{**good, "definition": "..."}])[0]


def span_problems(index):
    """The issue's features (its "Why": Lambda, aws-sdk, DynamoDB, SNS, SQS, EventBridge,
    nested executions, .sync, .waitForTaskToken, Distributed Map, Parallel, Choice, Map,
    JSONata) that fewer than 2 entries use, and too few refusals (a spread, not only
    machines that compile)."""
    used: dict[str, int] = {}
    for e in index:
        for f in e["features"]:
            used[f] = used.get(f, 0) + 1
    out = [f"{f}: {used.get(f, 0)}" for f in ISSUE_FEATURES if used.get(f, 0) < 2]
    if sum(e["outcome"] != COMPILES for e in index) < 10:
        out.append("fewer than 10 refused")
    return out


def test_the_index_spans_what_the_issue_counts():
    """The recorded features (kept equal to the definitions' by `make corpus-stats`) span the
    issue's list; the check is shown an index without JSONata and one without refusals."""
    assert span_problems(ENTRIES) == []
    assert span_problems([{**e, "features": [f for f in e["features"] if f != "jsonata"]}
                          for e in ENTRIES]) == ["jsonata: 0"]
    assert span_problems([{**e, "outcome": COMPILES} for e in ENTRIES]) == ["fewer than 10 refused"]


def test_the_harness_reads_and_checks_our_machines(ours, moto_aws):
    """compile_entry/features/check_run on our machines give what we wrote them to give."""
    for e in OUR_INDEX:
        definition, outcome = compile_entry(e, ours)
        assert outcome == e["outcome"]
        if definition is None:
            assert e["file"] == "ours_not_json.asl.json" and refusal_problems(e["file"], outcome, None) == []
            continue
        assert features(definition) == e["features"]
        if outcome != COMPILES:
            assert refusal_problems(e["file"], outcome, definition) == []
        if "run" in e:
            assert check_run(definition, e["run"], moto_aws) == []


def test_the_checks_catch_injected_mistakes(ours, moto_aws):
    """Each check, shown a mistake on purpose: a refusal of the wrong shape, a run whose
    recorded output or side effect differs, a run that records nothing to compare."""
    refused = OUR_INDEX[2]
    definition, outcome = compile_entry(refused, ours)
    assert refusal_problems(refused["file"], outcome, definition) == []
    assert "more than one line" in refusal_problems(refused["file"], outcome + "\nmore", definition)
    assert "names no state" in refusal_problems(
        refused["file"], f"{REFUSED}{refused['file']}: Resource: not supported", definition)
    assert "does not start with the file's name" in refusal_problems(
        refused["file"], outcome.replace(refused["file"], "other.json"), definition)
    assert "names no line and column" in refusal_problems("x.asl.json", REFUSED + "x.asl.json: not JSON", None)

    plain = OUR_INDEX[0]
    definition, _ = compile_entry(plain, ours)
    assert check_run(definition, plain["run"]) == []
    wrong = {**plain["run"], "returns": {"Greeter": {"ok": False}}}
    assert check_run(definition, wrong)  # the Fail state's error is not the recorded output
    assert check_run(definition, {"input": {}, "returns": {}}) and check_run(definition, {**plain["run"], "outptu": 1})
    assert check_run(definition, {"input": plain["run"]["input"], "returns": plain["run"]["returns"],
                                  "expect": {"$.mood": "sad"}})

    moto = OUR_INDEX[1]
    definition, _ = compile_entry(moto, ours)
    assert check_run(definition, moto["run"], moto_aws) == []
    assert check_run(definition, {**moto["run"], "after": {"items": {"ours-items": 2}}}, moto_aws)
    assert check_run(definition, {**moto["run"], "output": {"id": "i-2"}}, moto_aws)


def test_stats_command_fails_on_a_changed_outcome_and_update_records_it(ours, capsys):
    """tools/asl_corpus_stats.py exits 1 when an outcome or the features differ from the
    index (each flipped on purpose), `--update` rewrites them, and then it exits 0."""
    from tools import asl_corpus_stats

    assert asl_corpus_stats.main(["--dir", str(ours)]) == 0
    out = capsys.readouterr().out
    assert "4 machines indexed, 4 present, 2 compile, 2 run as recorded (of 2 with a recorded run), 2 refused" in out

    index = json.loads(harness.INDEX.read_text())
    index[0]["outcome"] = REFUSED + "ours_lambda_choice.asl.json: States.Greet.Resource: recorded wrongly"
    index[1]["features"] = ["sns"]
    harness.INDEX.write_text(json.dumps(index))
    assert asl_corpus_stats.main(["--dir", str(ours)]) == 1
    out = capsys.readouterr().out
    assert "2 outcome(s) or features differ" in out and "ours_lambda_choice.asl.json" in out
    assert asl_corpus_stats.main(["--dir", str(ours), "--update"]) == 0
    now = {e["file"]: e for e in json.loads(harness.INDEX.read_text())}
    assert now["ours_lambda_choice.asl.json"]["outcome"] == COMPILES
    assert now["ours_dynamodb_put.asl.json"]["features"] == ["dynamodb"]
    assert now["ours_dynamodb_put.asl.json"]["run"] == OUR_INDEX[1]["run"]  # nothing else rewritten
    assert asl_corpus_stats.main(["--dir", str(ours)]) == 0

    index = json.loads(harness.INDEX.read_text())
    index[0]["run"]["output"]["mood"] = "sad"
    harness.INDEX.write_text(json.dumps(index))
    assert asl_corpus_stats.main(["--dir", str(ours)]) == 1
    assert "ours_lambda_choice.asl.json: output" in capsys.readouterr().out
    index[0]["run"]["output"]["mood"] = "happy"
    harness.INDEX.write_text(json.dumps(index))

    # a JSONPath that does not parse, in a machine refused for another reason (same outcome)
    refused = json.loads(OURS["ours_refused.asl.json"])
    refused["States"]["Pause"]["Next"] = "Look"
    del refused["States"]["Pause"]["End"]
    refused["States"]["Look"] = {"Type": "Pass", "InputPath": "$.a[", "End": True}
    (ours / "ours_refused.asl.json").write_text(json.dumps(refused))
    assert asl_corpus_stats.main(["--dir", str(ours)]) == 1
    assert "ours_refused.asl.json: JSONPath '$.a[' does not parse" in capsys.readouterr().out


def test_stats_command_lists_missing_definitions_by_source(ours, tmp_path, monkeypatch, capsys):
    """A definition absent from the cache directory is listed with its source and makes the
    command exit 1, 0 with --allow-missing; the directory is --dir, else $UNUM_ASL_CORPUS,
    else ~/.cache/unumctl/asl-corpus."""
    from tools import asl_corpus_stats

    index = json.loads(harness.INDEX.read_text())
    index[3]["source"] = "example-org/example-repo machines/m.asl.json @ " + "0" * 40
    harness.INDEX.write_text(json.dumps(index))
    (ours / "ours_not_json.asl.json").unlink()
    monkeypatch.setenv(harness.CACHE_ENV, str(ours))
    assert asl_corpus_stats.main([]) == 1
    out = capsys.readouterr().out
    assert f"1 definition(s) missing from {ours}" in out
    assert "ours_not_json.asl.json  <-  example-org/example-repo machines/m.asl.json @ " + "0" * 40 in out
    assert "4 machines indexed, 3 present, 2 compile" in out
    assert asl_corpus_stats.main(["--allow-missing"]) == 0
    capsys.readouterr()
    empty = tmp_path / "empty"
    assert asl_corpus_stats.main(["--dir", str(empty), "--allow-missing"]) == 0  # --dir wins over the variable
    assert "4 machines indexed, 0 present" in capsys.readouterr().out

    assert corpus_dir("~/x") == Path.home() / "x"
    monkeypatch.delenv(harness.CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert corpus_dir() == tmp_path / ".cache" / "unumctl" / "asl-corpus"
