"""`unumctl cost` without emulators: the billing rules and prices (unumctl/cost/billing.py,
stepfunctions.py) on hand-made measurements, the price table's checks, the ASL transition
count of a Step Functions example, and the CLI's one-line errors (bad --cloud, missing or
broken price table). The emulated runs are tested in tests/aws/test_cost_aws.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from unumctl.cost import billing, report, stepfunctions, systems
from unumctl.cost.measurement import Measurement, MeasurementError
from unumctl.cost.prices import DEFAULT, PriceTableError, load_prices

ROOT = Path(__file__).resolve().parents[3]


def prices(tmp_path: Path, **aws) -> dict:
    """The packaged table with some aws prices replaced, loaded from a copy."""
    data = json.loads(DEFAULT.read_text())
    data["aws"].update(aws)
    p = tmp_path / "prices.json"
    p.write_text(json.dumps(data))
    return load_prices(p)


def aws_measurement(**kw) -> Measurement:
    base = {"app": "t", "cloud": "aws", "sessions": 2, "functions": ["A", "B"],
            "executions": [["A", 10.2], ["B", 99.0], ["A", 0.4], ["B", 1.0]],
            "memory_mb": {"A": 1024, "B": 2048, "unum-error-handler": 128},
            "operations": {"dynamodb:PutItem": 4, "dynamodb:PutItem#items": 4,
                           "dynamodb:BatchGetItem": 2, "dynamodb:BatchGetItem#items": 3,
                           "dynamodb:TransactWriteItems": 1, "dynamodb:TransactWriteItems#items": 2,
                           "s3:ListObjectsV2": 2, "s3:GetObject": 1, "lambda:Invoke": 2},
            "item_bytes": {"dynamodb:PutItem#bytes": [100, 1024, 1025, 5000],
                           "dynamodb:BatchGetItem#bytes": [0, 4096, 4097],
                           "dynamodb:TransactWriteItems#bytes": [10, 2000]},
            "log_bytes": 4000, "log_bytes_history": 1000, "session_ms": [120.0, 201.0], "entry_bytes": 50,
            "target": "test"}
    base.update(kw)
    return Measurement.from_json(base)


def line(lines, group, prefix):
    found = [x for x in lines if x.group == group and x.item.startswith(prefix)]
    assert len(found) == 1, (group, prefix, lines)
    return found[0]


def test_aws_billing_units_and_dollars(tmp_path):
    p = prices(tmp_path, lambda_billing_increment_ms=10)
    lines, unpriced = billing.unum_lines(aws_measurement(), p)
    assert unpriced == []
    # 4 executions over 2 sessions; durations rounded up to 10 ms: 20, 100, 10, 10 ms
    assert line(lines, "lambda", "requests").quantity == 2
    gb_s = (0.020 * 1 + 0.100 * 2 + 0.010 * 1 + 0.010 * 2) / 2
    assert line(lines, "lambda", "duration").quantity == pytest.approx(gb_s)
    # PutItem: 1 + 1 + 2 + 5 WRU; BatchGetItem: 1 (absent) + 1 + 2 RRU; transaction: (1 + 2) x 2 WRU
    assert line(lines, "dynamodb", "PutItem").quantity == 9 / 2
    assert line(lines, "dynamodb", "BatchGetItem").quantity == 4 / 2
    assert line(lines, "dynamodb", "TransactWriteItems").quantity == 6 / 2
    assert line(lines, "s3", "ListObjectsV2").quantity == 1
    assert line(lines, "s3", "GetObject").quantity == 0.5
    assert not [x for x in lines if "Invoke" in x.item]  # the invoked function's request is the bill
    a = p["aws"]
    expect = (2 * a["lambda_request_per_million"] / 1e6 + gb_s * a["lambda_gb_second"]
              + (4.5 + 3) * a["dynamodb_write_request_unit_per_million"] / 1e6
              + 2 * a["dynamodb_read_request_unit_per_million"] / 1e6
              + 1 * a["s3_put_per_thousand"] / 1e3 + 0.5 * a["s3_get_per_thousand"] / 1e3
              + 2000 / 1e9 * a["cloudwatch_logs_ingestion_per_gb"])
    assert billing.total(lines) == pytest.approx(expect)


def test_unknown_operation_is_reported_not_dropped(tmp_path):
    m = aws_measurement(operations={"dynamodb:PutItem": 2, "dynamodb:Scan": 3})
    _, unpriced = billing.unum_lines(m, prices(tmp_path))
    assert unpriced == ["dynamodb:Scan"]


def test_a_price_changes_the_bill(tmp_path):
    m = aws_measurement()
    cheap = billing.total(billing.unum_lines(m, prices(tmp_path))[0])
    dear = billing.total(billing.unum_lines(m, prices(tmp_path, dynamodb_write_request_unit_per_million=100.0))[0])
    assert dear - cheap == pytest.approx(7.5 * (100.0 - 0.625) / 1e6)


def test_step_functions_standard_and_express(tmp_path):
    p = prices(tmp_path)
    a = p["aws"]
    m = aws_measurement()
    std, n, how = stepfunctions.standard(m, p, None)  # IR app: one Task state per execution
    assert n == 2 and "lower bound" in how
    assert line(std, "stepfunctions", "Standard").usd == pytest.approx(2 * a["stepfunctions_standard_per_thousand_transitions"] / 1e3)
    std2, n2, how2 = stepfunctions.standard(m, p, (7, 4))  # an ASL machine: 7 states, 4 Lambda calls
    assert n2 == 7 and "ASL" in how2 and line(std2, "lambda", "requests").quantity == 4
    exp = stepfunctions.express(m, p, None)
    # sessions of 120 and 201 ms billed as 200 and 300 ms, at 64 MB
    assert line(exp, "stepfunctions", "Express duration").quantity == pytest.approx(0.25 * 64 / 1024)
    assert line(exp, "stepfunctions", "Express requests").quantity == 1
    # the functions' own log lines (not Unum's history) are billed under Step Functions too
    assert line(exp, "logs", "CloudWatch").quantity == pytest.approx(1500 / 1e9)


def test_gcp_billing(tmp_path):
    p = prices(tmp_path)
    g = p["gcp"]
    m = Measurement.from_json({
        "app": "t", "cloud": "gcp", "sessions": 1, "functions": ["A"], "executions": [["A", 150.0]],
        "memory_mb": {"A": 512}, "session_ms": [300.0], "entry_bytes": 3000,
        "operations": {"firestore_reads": 4, "firestore_writes": 2, "firestore_deletes": 1,
                       "publishes": 1, "publish_bytes": 1000, "history_writes": 2, "history_log_bytes": 2048,
                       "firestore_ttl_deletes": 3, "history_ttl_deletes": 2}})
    lines, unpriced = billing.unum_lines(m, p)
    assert unpriced == []
    billed = 0.2  # 150 ms rounded up to 100 ms increments
    assert line(lines, "functions", "memory").quantity == pytest.approx(billed * 0.5)
    assert line(lines, "functions", "CPU").quantity == pytest.approx(billed * 0.333)  # the 512 MB tier
    assert line(lines, "firestore", "document reads").usd == pytest.approx(4 * g["firestore_read_per_100k"] / 1e5)
    assert line(lines, "firestore", "history writes").quantity == 2
    # documents left for the TTL policies are billed as deletes
    assert line(lines, "firestore", "TTL deletes").usd == pytest.approx(3 * g["firestore_delete_per_100k"] / 1e5)
    assert line(lines, "firestore", "history TTL deletes").quantity == 2
    assert line(lines, "pubsub", "bytes").quantity == pytest.approx(4000 / 2**40)  # 1000 + the 3000 B entry


def test_report_shape_and_text(tmp_path):
    r = report.build(aws_measurement(), prices(tmp_path), None)
    assert set(r) >= {"app", "cloud", "sessions", "prices", "assumptions", "transitions", "unum",
                      "stepfunctions_standard", "stepfunctions_express", "ratio", "unpriced",
                      "operations_per_transition"}
    assert r["assumptions"]["memory_mb"] == {"A": 1024, "B": 2048}
    assert r["unum"]["per_million"] == pytest.approx(r["unum"]["per_execution"] * 1e6)
    assert r["ratio"]["standard"] == pytest.approx(r["stepfunctions_standard"]["per_execution"] / r["unum"]["per_execution"])
    text = report.render(r)
    assert "Step Functions Standard" in text and "Express" in text and "memory (MB): A 1024, B 2048" in text


def test_measurement_checks_fields():
    with pytest.raises(MeasurementError, match="memory_mb: no memory for C"):
        aws_measurement(executions=[["C", 1.0]])
    with pytest.raises(MeasurementError, match="session_ms"):
        Measurement.from_json({"app": "t", "cloud": "aws", "sessions": 1, "executions": [],
                               "memory_mb": {}, "operations": {}})


def test_price_table_errors(tmp_path):
    with pytest.raises(PriceTableError, match="not found"):
        load_prices(tmp_path / "nope.json")
    data = json.loads(DEFAULT.read_text())
    del data["gcp"]["firestore_read_per_100k"]
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(PriceTableError, match=r"gcp\.firestore_read_per_100k: missing"):
        load_prices(tmp_path / "p.json")
    data = json.loads(DEFAULT.read_text())
    data["aws"]["lambda_gb_second"] = "cheap"
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(PriceTableError, match=r"aws\.lambda_gb_second: must be a number"):
        load_prices(tmp_path / "p.json")


def test_interpreted_transitions_of_step_functions_examples():
    value = json.loads((ROOT / "examples/text-processing-sfn/input.json").read_text())
    assert stepfunctions.interpreted_transitions(ROOT / "examples/text-processing-sfn", value) == (7, 6)  # 6 Task states + the Parallel state
    value = json.loads((ROOT / "examples/iot-pipeline-sfn/input.json").read_text())
    assert stepfunctions.interpreted_transitions(ROOT / "examples/iot-pipeline-sfn", value) == (2, 2)
    assert stepfunctions.interpreted_transitions(ROOT / "examples/iot-pipeline", value) is None  # IR app


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_cli_bad_cloud_is_one_line():
    p = cli("cost", "examples/iot-pipeline", "--cloud", "azure")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["unumctl: --cloud: 'azure' is not one of aws, gcp (cost runs on an emulated cloud)"]


def test_cli_missing_price_table_is_one_line(tmp_path):
    p = cli("cost", "examples/iot-pipeline", "--prices", str(tmp_path / "none.json"))
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("unumctl: price table ") and "not found" in lines[0]
    assert "--prices FILE" in lines[0]


# ---------------------------------------------------------------- one interface (systems.py)

def gcp_measurement(**kw) -> Measurement:
    base = {"app": "t", "cloud": "gcp", "sessions": 1, "functions": ["A", "B"],
            "executions": [["A", 150.0], ["B", 50.0]], "memory_mb": {"A": 512, "B": 256},
            "session_ms": [300.0], "entry_bytes": 100,
            "operations": {"firestore_reads": 2, "firestore_writes": 2, "publishes": 1, "publish_bytes": 1000}}
    base.update(kw)
    return Measurement.from_json(base)


def test_every_system_prices_a_hand_made_measurement(tmp_path):
    """Each registered system prices through System.price; the report is the loop over them."""
    p = prices(tmp_path)
    g = p["gcp"]
    eo, alo = aws_measurement(), aws_measurement(operations={"dynamodb:PutItem": 1, "dynamodb:PutItem#items": 1},
                                                 item_bytes={"dynamodb:PutItem#bytes": [100]})
    sections = {s.key: s for s in systems.price_all({"exactly-once": eo, "at-least-once": alo}, p, None)}
    assert list(sections) == [s.key for s in systems.SYSTEMS] == [
        "unum", "unum_at_least_once", "stepfunctions_standard", "stepfunctions_express", "cloud_workflows"]
    assert sections["unum"].per_execution == pytest.approx(billing.total(billing.unum_lines(eo, p)[0]))
    assert sections["unum_at_least_once"].per_execution == pytest.approx(billing.total(billing.unum_lines(alo, p)[0]))
    assert sections["unum_at_least_once"].per_execution < sections["unum"].per_execution
    # the hosted orchestrators price the at-least-once run (the reference) when there is one
    assert sections["stepfunctions_standard"].per_execution == pytest.approx(
        billing.total(stepfunctions.standard(alo, p, None)[0]))
    assert sections["stepfunctions_express"].per_execution == pytest.approx(
        billing.total(stepfunctions.express(alo, p, None)))
    # Cloud Workflows on aws, IR app: 2 function executions per session = 2 calls to Lambda
    # (external: outside Google Cloud) + 1 return (internal); by hand from the table:
    # 1 x $0.01 / 1,000 + 2 x $0.025 / 1,000 = $0.00006 per execution, + the same Lambda
    # and function log lines as Express's Tasks
    w = sections["cloud_workflows"]
    assert w.extra["steps"] == {"internal": 1, "external": 2}
    assert g["workflows_internal_step_per_thousand"] == 0.01 and g["workflows_external_step_per_thousand"] == 0.025
    steps_usd = sum(x.usd for x in w.lines if x.group == "workflows")
    assert steps_usd == pytest.approx(1 * 0.01 / 1000 + 2 * 0.025 / 1000)
    assert w.per_execution - steps_usd == pytest.approx(
        sum(x.usd for x in sections["stepfunctions_express"].lines if x.group != "stepfunctions"))
    # one mode only: no Unum section for the other
    only = [s.key for s in systems.price_all({"at-least-once": alo}, p, None)]
    assert "unum" not in only and "unum_at_least_once" in only


def test_cloud_workflows_on_gcp_from_the_state_machine(tmp_path):
    """On gcp the calls go to Cloud Run functions: internal steps; a Step Functions app
    counts the interpreted states (7 states of which 4 Tasks + the return = 8 internal)."""
    p = prices(tmp_path)
    g = p["gcp"]
    m = gcp_measurement()
    w = systems.CloudWorkflows().price(m, p, (7, 4))
    assert w.extra["steps"] == {"internal": 8, "external": 0}
    assert sum(x.usd for x in w.lines if x.group == "workflows") == pytest.approx(8 * 0.01 / 1000)
    # the functions: 4 calls for the 2 measured executions, compute scaled x2 (gen2 rules)
    inv = line(w.lines, "functions", "invocations")
    assert inv.quantity == 4 and inv.usd == pytest.approx(4 * g["functions_invocation_per_million"] / 1e6)
    assert line(w.lines, "functions", "memory").quantity == pytest.approx(2 * (0.2 * 0.5 + 0.1 * 0.25))
    assert line(w.lines, "functions", "CPU").quantity == pytest.approx(2 * (0.2 * 0.333 + 0.1 * 0.167))
    # IR app on gcp: one internal call step per execution + the return
    assert systems.CloudWorkflows().price(m, p, None).extra["steps"] == {"internal": 3, "external": 0}


def test_report_with_both_modes(tmp_path):
    p = prices(tmp_path)
    eo, alo = aws_measurement(), aws_measurement(session_ms=[50.0, 60.0])
    r = report.build({"exactly-once": eo, "at-least-once": alo}, p, None)
    assert r["modes"] == ["exactly-once", "at-least-once"]
    assert r["systems"] == ["unum", "unum_at_least_once", "stepfunctions_standard", "stepfunctions_express",
                            "cloud_workflows"]
    assert r["unum"]["mode"] == "exactly-once" and r["unum_at_least_once"]["mode"] == "at-least-once"
    assert r["ratio"]["express"] == pytest.approx(r["stepfunctions_express"]["per_execution"] / r["unum"]["per_execution"])
    assert r["ratio"]["at_least_once"]["workflows"] == pytest.approx(
        r["cloud_workflows"]["per_execution"] / r["unum_at_least_once"]["per_execution"])
    text = report.render(r)
    assert "Unum on aws, at-least-once" in text and "Google Cloud Workflows" in text and "vs Unum at-least-once" in text
    # --plan's shape: before / after and after / before per system
    after = report.build({"exactly-once": aws_measurement(executions=[["A", 1.0], ["B", 1.0]] * 2)}, p, None)
    before = report.build({"exactly-once": eo}, p, None)
    c = report.compare(before, after)
    assert set(c) == {"app", "cloud", "before", "after", "ratio", "hosted_vs_planned", "like_for_like"}
    # the hosted systems run the workflow as written: their price before the plan vs Unum's after
    assert c["hosted_vs_planned"]["unum"]["stepfunctions_standard"] == pytest.approx(
        before["stepfunctions_standard"]["per_execution"] / after["unum"]["per_execution"])
    assert "as written vs planned: each hosted system as written" in report.render_compare(c)
    assert c["ratio"]["unum"] == pytest.approx(after["unum"]["per_execution"] / before["unum"]["per_execution"])
    assert c["ratio"]["unum"] < 1
    assert "after/before" in report.render_compare(c)


def test_cost_plan_gives_like_for_like_ratios_beside_as_written_vs_planned(tmp_path):
    """`cost --plan`: Step Functions as written / Unum as written, and both with the plan,
    each labelled, beside the hosted systems as written / Unum with the plan; each number is
    the reports' own ratio."""
    p = prices(tmp_path)
    before = report.build({"exactly-once": aws_measurement()}, p, None)
    after = report.build({"exactly-once": aws_measurement(executions=[["A", 1.0]])}, p, None)
    c = report.compare(before, after)
    assert c["like_for_like"] == {"as_written": before["ratio"], "planned": after["ratio"]}
    assert before["ratio"]["standard"] != after["ratio"]["standard"]  # the two pairs differ here
    text = report.render_compare(c).splitlines()

    def line(label):
        return next(ln for ln in text if ln.strip().startswith(label))
    written, planned = line("like for like, as written"), line("like for like, planned")
    assert f"Step Functions Standard {before['ratio']['standard']:.2f}x" in written
    assert f"Step Functions Standard {after['ratio']['standard']:.2f}x" in planned
    assert "Unum exactly-once as written" in written and "Unum exactly-once with the plan" in planned
    hosted = c["hosted_vs_planned"]["unum"]["stepfunctions_standard"]
    assert f"Step Functions Standard {hosted:.2f}x" in line("as written vs planned")


def test_cost_first_line_states_whether_a_plan_is_in_force(tmp_path):
    """The report's first line: no plan, a plan ignored, or the plan in force with what it
    changes (the fuse groups, batches and memory of the plan file)."""
    from unumctl.tuning.planfile import TunePlan
    p = prices(tmp_path)
    r = report.build(aws_measurement(), p, None)
    assert report.render(r).splitlines()[0] == "no plan in force: the workflow as written"
    plan = TunePlan(derived={}, memory={"A": 256}, fuse=[["A", "B"]], batch={}, reasons={})
    r = report.build(aws_measurement(), p, None, report.plan_state("APP/unumctl.plan.yaml", True, plan))
    first = report.render(r).splitlines()[0]
    assert first.startswith("plan in force: APP/unumctl.plan.yaml (fuse A+B; memory A 256 MB)"), first
    assert r["plan"]["fuse"] == [["A", "B"]] and r["plan"]["in_force"]
    r = report.build(aws_measurement(), p, None, report.plan_state("APP/unumctl.plan.yaml", False, plan))
    assert report.render(r).splitlines()[0] == "plan ignored: APP/unumctl.plan.yaml not applied: the workflow as written"
    assert r["plan"]["fuse"] == []


def test_price_table_without_the_workflows_price_is_one_line(tmp_path):
    data = json.loads(DEFAULT.read_text())
    del data["gcp"]["workflows_external_step_per_thousand"]
    (tmp_path / "p.json").write_text(json.dumps(data))
    p = cli("cost", "examples/iot-pipeline", "--prices", str(tmp_path / "p.json"))
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        f"unumctl: price table {tmp_path / 'p.json'}: gcp.workflows_external_step_per_thousand: missing; "
        f"copy {DEFAULT} and edit it, then pass --prices FILE"]


def test_cli_bad_mode_and_plan_without_plan_file(tmp_path):
    p = cli("cost", "examples/iot-pipeline", "--mode", "maybe")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "unumctl: --mode: 'maybe' is not one of exactly-once, at-least-once, both"]
    p = cli("cost", "examples/iot-pipeline", "--plan")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--plan: " in p.stderr


def test_harness_no_plan_and_at_least_once_overrides(tmp_path):
    """unumctl.cost.measure.load_for_measure: the plan file's memory and fuse groups
    (unumctl.tuning.planfile, docs/tune.md) apply unless --no-plan; at-least-once sets
    runtime.checkpoint false; the manifest on disk is untouched."""
    import shutil

    from unumctl.tuning import planfile
    from unumctl.cost import measure

    app = tmp_path / "wordcount"
    shutil.copytree(ROOT / "examples/wordcount", app)
    plain = measure.load_for_measure(app, "aws")
    assert plain.manifest.runtime.checkpoint is True
    assert measure.load_for_measure(app, "aws", at_least_once=True).manifest.runtime.checkpoint is False
    planfile.dump(planfile.TunePlan(derived={"cloud": "aws"}, memory={"Summary": 512},
                                    fuse=[["Split", "Mapper", "Partition"]]), planfile.plan_path(app))
    planned = measure.load_for_measure(app, "aws")
    assert planned.manifest.functions["Summary"].memory == 512
    assert planned.workflow.functions["Split"].fused is not None
    unplanned = measure.load_for_measure(app, "aws", use_plan=False)
    assert unplanned.manifest.functions["Summary"].memory == plain.manifest.functions["Summary"].memory == 256
    assert unplanned.workflow.functions["Split"].fused is None
    with pytest.raises(SystemExit):  # the harness's parser knows the flags
        measure.main([str(app), "--cloud", "aws", "--mode", "never"])


def test_window_ticks_are_billed_per_object(tmp_path):
    """A measurement with window ticks (unumctl/cost/measure.py `close_windows`): AWS bills
    one EventBridge Scheduler invocation per tick, GCP the Cloud Scheduler job's price per 31
    days times the tick's period / 31 days, each over the measured objects (sessions); the
    report lists the consumer sessions. Without windows, no scheduler line."""
    p = prices(tmp_path, eventbridge_scheduler_per_million_invocations=1.0)
    win = {"ticks": [["campaigns", 60]], "consumer_sessions": ["win-campaigns-0"]}
    aws = aws_measurement(windows=win)
    [tick] = [x for x in billing.unum_lines(aws, p)[0] if x.group == "scheduler"]
    assert tick.quantity == 0.5 and tick.usd == pytest.approx(0.5 * 1.0 / 1e6)
    assert not [x for x in billing.unum_lines(aws_measurement(), p)[0] if x.group == "scheduler"]
    gcp = gcp_measurement(sessions=4, windows=win)
    [job] = [x for x in billing.unum_lines(gcp, p)[0] if x.group == "scheduler"]
    # $0.10 per 31 days, a tick every 60 s: 44,640 ticks; one tick over 4 objects
    assert job.quantity == 0.25 and job.usd == pytest.approx(0.25 * 0.10 / 44640)
    r = report.build(aws, p, None)
    assert r["windows"] == {"consumer_sessions": ["win-campaigns-0"], "ticks": [["campaigns", 60.0]]}
    assert any("win-campaigns-0" in n for n in r["assumptions"]["notes"])
    with pytest.raises(MeasurementError, match="windows"):
        aws_measurement(windows={"ticks": "campaigns"})
