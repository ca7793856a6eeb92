"""The manifest's `triggers:` (unumctl/triggers.py): every kind parses with its defaults,
every bad entry is one line naming `triggers.NAME.FIELD` and the fix, the manifest loader
refuses a bad trigger, and the entry function's bundle carries the list (triggers.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from runtime.sources import TRIGGERS_FILE, starts
from unumctl.build import bundle_entries
from unumctl.manifest import AppError
from unumctl.pipeline import load
from unumctl.triggers import Trigger, TriggerError, check_expression, parse_triggers

ROOT = Path(__file__).resolve().parents[2]
ALL = {"web": {"type": "http"},
       "nightly": {"type": "schedule", "expression": "cron(0 2 * * ? *)", "input": {"mode": "full"}},
       "orders": {"type": "queue", "batch_size": 1},
       "uploads": {"type": "storage", "prefix": "in/"},
       "audit": {"type": "eventbridge", "pattern": {"source": ["my.app"], "detail": {"kind": [{"prefix": "a"}]}}}}


def test_every_kind_parses_in_order_with_its_defaults():
    got = parse_triggers({"triggers": ALL}, "unumctl.yaml")
    assert [t.name for t in got] == list(ALL)
    assert got[0] == Trigger("web", "http", {"auth": "iam", "wait_seconds": 0})
    assert got[1].options == {"expression": "cron(0 2 * * ? *)", "timezone": "UTC", "input": {"mode": "full"}}
    assert got[2].options == {"batch_size": 1, "max_receive_count": 5}
    assert got[3].to_dict() == {"name": "uploads", "type": "storage", "prefix": "in/", "suffix": ""}
    assert parse_triggers({}, "unumctl.yaml") == []


def test_the_dict_form_is_what_the_sources_read():
    (nightly,) = parse_triggers({"triggers": {"nightly": ALL["nightly"]}}, "m")
    (s,) = starts(nightly.to_dict(), {"scheduled_time": "2030-01-01T02:00:00Z"})
    assert s.input == {"mode": "full"} and s.key == "schedule:2030-01-01T02:00:00Z"


@pytest.mark.parametrize("triggers, where, why", [
    ({"Web": {"type": "http"}}, "triggers.Web", "1-32 characters"),
    ({"web": {"type": "ftp"}}, "triggers.web.type", "choose one of http, schedule"),
    ({"web": {}}, "triggers.web.type", "missing"),
    ({"web": "http"}, "triggers.web", "expected a mapping with a type"),
    ({"web": {"type": "http", "wait_second": 5}}, "triggers.web.wait_second", "did you mean 'wait_seconds'"),
    ({"web": {"type": "http", "auth": "none"}}, "triggers.web.auth", "'iam' or 'public'"),
    ({"web": {"type": "http", "wait_seconds": 901}}, "triggers.web.wait_seconds", "less than or equal to 900"),
    ({"q": {"type": "queue", "batch_size": 11}}, "triggers.q.batch_size", "less than or equal to 10"),
    ({"q": {"type": "queue", "max_receive_count": 0}}, "triggers.q.max_receive_count", "greater than or equal to 1"),
    ({"n": {"type": "schedule"}}, "triggers.n.expression", "Field required"),
    ({"n": {"type": "schedule", "expression": "every day"}}, "triggers.n.expression", "rate(5 minutes)"),
    ({"n": {"type": "schedule", "expression": "rate(1 hours)"}}, "triggers.n.expression", "singular for 1"),
    ({"n": {"type": "schedule", "expression": "cron(0 2 * * *)"}}, "triggers.n.expression", "6 fields"),
    ({"n": {"type": "schedule", "expression": "cron(0 2 * * * *)"}}, "triggers.n.expression", "exactly one of"),
    ({"n": {"type": "schedule", "expression": "rate(5 minutes)", "timezone": "Mars/Base"}}, "triggers.n.timezone",
     "IANA time zone"),
    ({"a": {"type": "eventbridge", "pattern": {}}}, "triggers.a.pattern", "non-empty object"),
    ({"a": {"type": "eventbridge", "pattern": {"detail": {"x": "y"}}}}, "triggers.a.pattern", "detail.x: must be a non-empty array"),
])
def test_a_bad_trigger_is_one_line_naming_the_field_and_the_fix(triggers, where, why):
    with pytest.raises(TriggerError) as exc:
        parse_triggers({"triggers": triggers}, "app/unumctl.yaml")
    msg = str(exc.value)
    assert msg.startswith(f"app/unumctl.yaml: {where}: ") and why in msg and "\n" not in msg


def test_not_a_mapping_is_refused():
    with pytest.raises(TriggerError, match="triggers: expected a mapping of trigger name"):
        parse_triggers({"triggers": ["web"]}, "m")


@pytest.mark.parametrize("expr, parsed", [("rate(1 minute)", ("rate", 60)), ("rate(5 minutes)", ("rate", 300)),
                                          ("rate(2 days)", ("rate", 172800)),
                                          ("cron(0 2 ? * MON-FRI *)", ("cron", ["0", "2", "?", "*", "MON-FRI", "*"]))])
def test_expressions_parse(expr, parsed):
    assert check_expression(expr) == parsed


def app_copy(tmp_path: Path, triggers: dict) -> Path:
    root = tmp_path / "loop-counter"
    shutil.copytree(ROOT / "examples" / "loop-counter", root, ignore=shutil.ignore_patterns(".unum"))
    doc = yaml.safe_load((root / "unumctl.yaml").read_text())
    doc["triggers"] = triggers
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def test_the_manifest_loader_refuses_a_bad_trigger(tmp_path):
    root = app_copy(tmp_path, {"web": {"type": "http", "auth": "open"}})
    with pytest.raises(AppError, match=r"unumctl.yaml: triggers.web.auth: "):
        load(root)


def test_the_entry_bundle_carries_the_triggers_and_no_other_function_does(tmp_path):
    app = load(app_copy(tmp_path, {"web": {"type": "http"}, "orders": {"type": "queue"}}))
    assert [t.name for t in app.triggers] == ["web", "orders"]
    entry = app.workflow.entry.name
    files = dict(bundle_entries(app, entry, "local"))
    assert json.loads(files[TRIGGERS_FILE]) == [t.to_dict() for t in app.triggers]
    other = next(f for f in app.workflow.functions if f != entry)
    assert TRIGGERS_FILE not in dict(bundle_entries(app, other, "local"))
