"""Distributed Map (runtime.asl.distributed) on the local target: ItemReader from S3 (JSON,
JSONL, CSV with FIRST_ROW / GIVEN headers, listObjectsV2, MaxItems), ItemBatcher,
ToleratedFailureCount / Percentage, ResultWriter. S3 is moto_server on 127.0.0.1 (the
session's, tests/aws/conftest.py; one test uses the platform's embedded emulator). Each
machine runs end to end through LocalRunner: the item processor's Lambda Task is a compiled
function per item, as for an INLINE Map."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from unumctl_testing.apps import make_sfn_app
from unumctl.asl.validate import AslValidationError, validate
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

DOUBLE = ("def handler(event, context):\n"
          "    if isinstance(event, dict) and event.get('fail'):\n"
          "        raise ValueError('item %s refused' % event.get('n'))\n"
          "    if isinstance(event, dict) and 'Items' in event:\n"
          "        return {'sum': sum(int(i['n']) for i in event['Items']), 'batch': event.get('BatchInput')}\n"
          "    return {'n2': int(event['n']) * 2}\n")
GET = "arn:aws:states:::s3:getObject"


@pytest.fixture
def aws(moto_env, monkeypatch):
    """moto for this process and the local workers it starts; the virtual ASL clock."""
    monkeypatch.setenv("UNUM_ASL_VIRTUAL_CLOCK", "1")
    return moto_env


def bucket(name: str, objects: dict[str, str], endpoint: str | None = None) -> str:
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=name)
    for k, body in objects.items():
        s3.put_object(Bucket=name, Key=k, Body=body.encode())
    return name


def dmap(reader: dict | None = None, **fields) -> dict:
    """A machine: Distributed Map `M` whose item processor calls the Lambda `Double`."""
    m = {"Type": "Map", "ItemProcessor": {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Double", "States": {"Double": {
            "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Double", "End": True}}},
        "End": True, **fields}
    if reader is not None:
        m["ItemReader"] = reader
    return {"StartAt": "M", "States": {"M": m}}


def run(tmp: Path, machine: dict, value, name: str = "dmap") -> dict:
    validate(machine, "sm.json")
    root = make_sfn_app(tmp / "app", machine, {"Double": DOUBLE}, name)
    with LocalRunner(load_app(root), state=tmp / "state", quiet=True) as r:
        return r.run(value, timeout=90)


def test_json_array_from_s3_with_max_items_path(aws, tmp_path):
    """getObject + InputType JSON: the items are the object's array, cut to MaxItemsPath;
    each runs the item processor's Lambda; the outputs come back in item order."""
    items = [{"n": i} for i in range(12)]
    b = bucket("dm-json", {"in/items.json": json.dumps(items)})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key.$": "$.key"},
                    "ReaderConfig": {"InputType": "JSON", "MaxItemsPath": "$.max"}})
    item = run(tmp_path, machine, {"key": "in/items.json", "max": 10})
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [{"n2": 2 * i} for i in range(10)]


def test_jsonl_and_csv_readers(aws, tmp_path):
    """JSONL: one value per line; CSV with the header in the first row, and CSV with
    CSVHeaderLocation GIVEN (every row is data); CSV values are strings; MaxItems."""
    rows = "\n".join(json.dumps({"n": i}) for i in range(5)) + "\n"
    b = bucket("dm-text", {"a.jsonl": rows, "h.csv": "n,name\n1,a\n2,\"b,c\"\n3,d\n",
                           "g.csv": "4|x\n5|y\n"})
    sel = {"ItemSelector": {"row.$": "$$.Map.Item.Value", "n.$": "$$.Map.Item.Value.n"}}
    out = run(tmp_path / "jsonl", dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "a.jsonl"},
                                        "ReaderConfig": {"InputType": "JSONL", "MaxItems": 3}}), {})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"] == [{"n2": 0}, {"n2": 2}, {"n2": 4}]
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "h.csv"},
                    "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "FIRST_ROW"}},
                   ResultSelector={"r.$": "$"}, **sel)
    machine["States"]["M"]["ItemProcessor"]["States"]["Double"]["ResultPath"] = "$.out"
    out = run(tmp_path / "csv", machine, {})
    assert out["status"] == "SUCCEEDED", out
    assert [x["row"] for x in out["v"]["r"]] == [{"n": "1", "name": "a"}, {"n": "2", "name": "b,c"},
                                               {"n": "3", "name": "d"}]
    assert [x["out"]["n2"] for x in out["v"]["r"]] == [2, 4, 6]
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "g.csv"},
                    "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "GIVEN",
                                     "CSVHeaders": ["n", "tag"], "CSVDelimiter": "PIPE"}})
    out = run(tmp_path / "given", machine, {})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"] == [{"n2": 8}, {"n2": 10}]


def test_list_objects_v2_items_as_aws_gives_them(aws, tmp_path):
    """listObjectsV2: one item per object under the Prefix, {Etag, Key, LastModified (Unix
    seconds), Size, StorageClass} as the ItemReader page's example shows them; every page is
    read (MaxKeys 1: one object per page)."""
    b = bucket("dm-list", {"p/a.txt": "1", "p/b.txt": "22", "other/c.txt": "333"})
    machine = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2",
                                      "Parameters": {"Bucket": b, "Prefix": "p/", "MaxKeys": 1}},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "P",
                          "States": {"P": {"Type": "Pass", "End": True}}}, "End": True}}}
    out = run(tmp_path, machine, {})
    assert out["status"] == "SUCCEEDED", out
    assert [o["Key"] for o in out["v"]] == ["p/a.txt", "p/b.txt"]
    a = out["v"][0]
    assert set(a) == {"Etag", "Key", "LastModified", "Size", "StorageClass"}
    assert a["Size"] == 1 and a["StorageClass"] == "STANDARD" and isinstance(a["LastModified"], int)
    head = boto3.client("s3").head_object(Bucket=b, Key="p/a.txt")
    assert a["Etag"] == head["ETag"]


def test_a_missing_object_is_item_reader_failed_caught_by_the_map(aws, tmp_path):
    """A reader that cannot read its items fails the Map with States.ItemReaderFailed (AWS's
    error name; the cause names S3's error) and the Map's Catch takes it."""
    b = bucket("dm-missing", {})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "nope.json"},
                    "ReaderConfig": {"InputType": "JSON"}})
    m = machine["States"]["M"]
    del m["End"]
    m["Next"] = "Done"
    m["Catch"] = [{"ErrorEquals": ["States.ItemReaderFailed"], "ResultPath": "$.err", "Next": "Done"}]
    machine["States"]["Done"] = {"Type": "Pass", "End": True}
    out = run(tmp_path, machine, {"x": 1})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"]["err"]["Error"] == "States.ItemReaderFailed"
    assert out["v"]["err"]["Cause"].startswith("S3.NoSuchKeyException: "), out["v"]["err"]


def test_a_result_writer_that_cannot_write_is_result_writer_failed(aws, tmp_path):
    """A ResultWriter whose bucket does not exist fails the Map with States.ResultWriterFailed,
    which the Map's Catch takes."""
    b = bucket("dm-nowrite", {"i.json": json.dumps([{"n": 1}])})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}},
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject",
                                 "Parameters": {"Bucket": "dm-no-such-bucket", "Prefix": "p"}})
    m = machine["States"]["M"]
    del m["End"]
    m["Next"] = "Done"
    m["Catch"] = [{"ErrorEquals": ["States.ResultWriterFailed"], "ResultPath": "$.err", "Next": "Done"}]
    machine["States"]["Done"] = {"Type": "Pass", "End": True}
    out = run(tmp_path, machine, {})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"]["err"]["Error"] == "States.ResultWriterFailed"
    assert out["v"]["err"]["Cause"].startswith("S3.NoSuchBucketException: "), out["v"]["err"]


@pytest.mark.parametrize("patch,where", [
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"},
                     "ReaderConfig": {"InputType": "XML"}}}, "States.M.ItemReader.ReaderConfig.InputType"),
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"},
                     "ReaderConfig": {"InputType": "MANIFEST", "ManifestType": "ATHENA_DATA"}}},
     "States.M.ItemReader.ReaderConfig.ManifestType"),
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b"},
                     "ReaderConfig": {"InputType": "JSON"}}}, "States.M.ItemReader.Parameters.Key"),
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"},
                     "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "GIVEN"}}},
     "States.M.ItemReader.ReaderConfig.CSVHeaders"),
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:deleteObject", "Parameters": {"Bucket": "b"}}},
     "States.M.ItemReader.Resource"),
    ({"ItemBatcher": {"BatchInput": {}}}, "States.M.ItemBatcher"),
    ({"ItemBatcher": {"MaxInputBytesPerBatch": 262145}}, "States.M.ItemBatcher.MaxInputBytesPerBatch"),
    ({"ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}},
      "ItemsPath": "$.x"}, "States.M.ItemsPath"),
    ({"Label": "has space"}, "States.M.Label"),
    ({"Label": "x" * 41}, "States.M.Label"),
    ({"ResultWriter": {"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Prefix": "p"}}},
     "States.M.ResultWriter.Parameters.Bucket"),
    ({"ResultWriter": {"WriterConfig": {"OutputType": "JSONL"}}}, "States.M.ResultWriter.WriterConfig"),
])
def test_refused_distributed_fields_are_one_line_naming_the_field(patch, where):
    machine = dmap(**patch)
    with pytest.raises(AslValidationError) as e:
        validate(machine, "sm.json")
    msg = str(e.value)
    assert msg.startswith(f"sm.json: {where}:") and "\n" not in msg, msg


def test_distributed_fields_on_an_inline_map_and_s3_resource_in_a_task_are_refused():
    machine = dmap(ItemBatcher={"MaxItemsPerBatch": 2})
    machine["States"]["M"]["ItemProcessor"]["ProcessorConfig"] = {"Mode": "INLINE"}
    with pytest.raises(AslValidationError, match=r"States.M.ItemBatcher: ItemBatcher needs a Distributed Map"):
        validate(machine, "sm.json")
    task = {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": GET,
                                             "Parameters": {"Bucket": "b", "Key": "k"}, "End": True}}}
    with pytest.raises(AslValidationError, match=r"States.T.Resource: .*aws-sdk:s3:getObject"):
        validate(task, "sm.json")


def test_item_batcher_gives_each_child_items_and_batch_input(aws, tmp_path):
    """ItemBatcher: MaxItemsPerBatchPath 3 over 7 items gives 3 children, each
    {"Items": [...], "BatchInput": ...} with BatchInput evaluated on the state's input."""
    b = bucket("dm-batch", {"i.json": json.dumps([{"n": i} for i in range(7)])})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}},
                   ItemBatcher={"MaxItemsPerBatchPath": "$.per", "BatchInput": {"tag.$": "$.tag"}})
    out = run(tmp_path, machine, {"per": 3, "tag": "t1"})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"] == [{"sum": 3, "batch": {"tag": "t1"}}, {"sum": 12, "batch": {"tag": "t1"}},
                        {"sum": 6, "batch": {"tag": "t1"}}]


def test_batch_limits_by_count_and_bytes():
    """distributed.batch: MaxInputBytesPerBatch counts the child input's JSON bytes
    ({"Items": [...], "BatchInput": ...}); an item that cannot fit alone is an error."""
    from runtime.asl import distributed
    from runtime.asl.errors import AslError
    items = [{"k": "x" * 10} for _ in range(5)]  # 16 bytes each as JSON
    out = distributed.batch(items, 0, 50, None, False)  # {"Items":[]} is 12 bytes: 2 items fit in 50
    assert [len(b["Items"]) for b in out] == [2, 2, 1]
    assert all(len(json.dumps(b, separators=(",", ":"))) <= 50 for b in out)
    assert [len(b["Items"]) for b in distributed.batch(items, 4, 0, {"a": 1}, True)] == [4, 1]
    assert distributed.batch(items, 4, 0, {"a": 1}, True)[0]["BatchInput"] == {"a": 1}
    with pytest.raises(AslError, match="does not fit"):
        distributed.batch(items, 0, 20, None, False)


def _failing(n: int, bad: set[int]) -> str:
    return json.dumps([{"n": i, "fail": i in bad} for i in range(n)])


def test_tolerated_failures_below_threshold_keep_the_map_and_record_failed_items(aws, tmp_path):
    """ToleratedFailureCount 2 with 2 of 6 items failing: the Map succeeds; a failed item's
    place holds its child execution record (Status FAILED, Error, Cause, Input)."""
    b = bucket("dm-tol", {"i.json": _failing(6, {1, 4})})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}}, ToleratedFailureCount=2, Label="Tol")
    out = run(tmp_path, machine, {})
    assert out["status"] == "SUCCEEDED", out
    v = out["v"]
    assert [x.get("n2") for x in v] == [0, None, 4, 6, None, 10]
    rec = v[1]
    assert rec["Status"] == "FAILED" and rec["Error"] == "ValueError" and "item 1 refused" in rec["Cause"]
    assert json.loads(rec["Input"]) == {"n": 1, "fail": True}
    assert ":execution:dmap/Tol:" in rec["ExecutionArn"]


def test_exceeding_the_threshold_is_states_exceed_tolerated_failure_threshold(aws, tmp_path):
    """3 of 6 failing with ToleratedFailurePercentagePath 40 (50% > 40%): the Map fails with
    States.ExceedToleratedFailureThreshold, which its Catch takes."""
    b = bucket("dm-over", {"i.json": _failing(6, {0, 2, 5})})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}}, ToleratedFailurePercentagePath="$.pct")
    m = machine["States"]["M"]
    del m["End"]
    m["Next"] = "Done"
    m["Catch"] = [{"ErrorEquals": ["States.ExceedToleratedFailureThreshold"], "ResultPath": "$.err",
                   "Next": "Done"}]
    machine["States"]["Done"] = {"Type": "Pass", "End": True}
    out = run(tmp_path, machine, {"pct": 40})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"]["err"]["Error"] == "States.ExceedToleratedFailureThreshold", out
    out = run(tmp_path / "b", machine, {"pct": 50})  # 50% is not more than 50%
    assert out["status"] == "SUCCEEDED", out
    assert "err" not in out["v"] and len(out["v"]) == 6


def test_result_writer_writes_manifest_and_status_files(aws, tmp_path):
    """ResultWriter: <Prefix>/<map run id>/manifest.json, SUCCEEDED_0.json and FAILED_0.json
    as AWS writes them; the Map's result is {MapRunArn, ResultWriterDetails}."""
    b = bucket("dm-out", {"i.json": _failing(5, {3})})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}}, ToleratedFailureCount=1,
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject",
                                 "Parameters": {"Bucket": b, "Prefix": "runs"}})
    out = run(tmp_path, machine, {})
    assert out["status"] == "SUCCEEDED", out
    v = out["v"]
    assert set(v) == {"MapRunArn", "ResultWriterDetails"}
    run_id = v["MapRunArn"].rsplit(":", 1)[1]
    assert ":mapRun:dmap/M:" in v["MapRunArn"]
    assert v["ResultWriterDetails"] == {"Bucket": b, "Key": f"runs/{run_id}/manifest.json"}
    s3 = boto3.client("s3")
    manifest = json.loads(s3.get_object(Bucket=b, Key=f"runs/{run_id}/manifest.json")["Body"].read())
    assert manifest["DestinationBucket"] == b and manifest["MapRunArn"] == v["MapRunArn"]
    files = manifest["ResultFiles"]
    assert [f["Key"] for f in files["SUCCEEDED"]] == [f"runs/{run_id}/SUCCEEDED_0.json"]
    assert [f["Key"] for f in files["FAILED"]] == [f"runs/{run_id}/FAILED_0.json"] and files["PENDING"] == []
    ok = json.loads(s3.get_object(Bucket=b, Key=files["SUCCEEDED"][0]["Key"])["Body"].read())
    assert files["SUCCEEDED"][0]["Size"] == len(json.dumps(ok, separators=(",", ":")))
    assert [json.loads(r["Output"]) for r in ok] == [{"n2": 0}, {"n2": 2}, {"n2": 4}, {"n2": 8}]
    assert all(r["Status"] == "SUCCEEDED" and r["InputDetails"] == {"Included": True} for r in ok)
    bad = json.loads(s3.get_object(Bucket=b, Key=files["FAILED"][0]["Key"])["Body"].read())
    assert [json.loads(r["Input"])["n"] for r in bad] == [3] and bad[0]["Error"] == "ValueError"


def test_embedded_emulator_serves_a_few_dozen_items_with_a_result_writer(no_aws_endpoint, tmp_path):
    """No endpoint anywhere: a Distributed Map alone (no integration Task) starts the local
    platform's embedded moto; 40 items read from it, written back by the ResultWriter."""
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": "emb", "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}},
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject",
                                 "Parameters": {"Bucket": "emb", "Prefix": "out"}})
    validate(machine, "sm.json")
    root = make_sfn_app(tmp_path / "app", machine, {"Double": DOUBLE}, "emb")
    state = tmp_path / "state"
    with LocalRunner(load_app(root), state=state, quiet=True) as r:
        url = (state / "aws-endpoint").read_text().strip()
        bucket("emb", {"i.json": json.dumps([{"n": i} for i in range(40)])}, url)
        item = r.run({}, timeout=90)
        assert item["status"] == "SUCCEEDED", item
        s3 = boto3.client("s3", endpoint_url=url)
        manifest = json.loads(s3.get_object(Bucket="emb", Key=item["v"]["ResultWriterDetails"]["Key"])["Body"].read())
        ok = json.loads(s3.get_object(Bucket="emb", Key=manifest["ResultFiles"]["SUCCEEDED"][0]["Key"])["Body"].read())
    assert [json.loads(x["Output"])["n2"] for x in ok] == [2 * i for i in range(40)]


def test_a_failure_mid_processor_ends_the_branch_as_a_failed_item(aws, tmp_path):
    """An item processor of two Lambda Tasks: an item failing in the first one (whose
    function does not otherwise end the branch) still reaches the join as a failed item."""
    b = bucket("dm-mid", {"i.json": _failing(4, {2})})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}}, ToleratedFailureCount=1)
    states = machine["States"]["M"]["ItemProcessor"]["States"]
    states["Double"] = {**states["Double"], "Next": "Tag"}
    del states["Double"]["End"]
    states["Tag"] = {"Type": "Task", "Resource": "Tag", "End": True}
    validate(machine, "sm.json")
    root = make_sfn_app(tmp_path / "app", machine, {"Double": DOUBLE,
                                                    "Tag": "def handler(e, c):\n    return {'tagged': e}\n"}, "mid")
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        out = r.run({}, timeout=90)
    assert out["status"] == "SUCCEEDED", out
    v = out["v"]
    assert [x.get("tagged") for x in v] == [{"n2": 0}, {"n2": 2}, None, {"n2": 6}]
    assert v[2]["Status"] == "FAILED" and v[2]["Error"] == "ValueError"


def test_registry_lists_the_maps_s3_calls_and_their_iam_actions():
    """inline_tasks names a Distributed Map's ItemReader and ResultWriter (so the local
    platform starts its emulator, and gcp refuses them); iam_actions gives their S3 actions."""
    from runtime.asl.integrations import registry as integrations
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON"}},
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Bucket": "b"}})
    found = integrations.inline_tasks(machine)
    assert found == [("States.M.ItemReader", GET), ("States.M.ResultWriter", "arn:aws:states:::s3:putObject")]
    acts = {res: integrations.iam_actions(integrations.find(res)) for _, res in found}
    assert acts == {GET: ["s3:GetObject", "s3:ListBucket"], "arn:aws:states:::s3:putObject": ["s3:PutObject"]}
    assert integrations.iam_actions(integrations.find("arn:aws:states:::s3:listObjectsV2")) == ["s3:ListBucket"]


def test_synthesized_functions_around_a_distributed_map_get_memory(tmp_path):
    """The synthesized function that fans a Distributed Map out and its join hold every item
    (or result): they get DISTRIBUTED_HOST_MEMORY; other synthesized functions keep 128 MB,
    and a Lambda's function keeps its manifest memory."""
    from unumctl.asl import DISTRIBUTED_HOST_MEMORY
    machine = dmap(ItemsPath="$.items")
    machine["States"]["M"]["Next"] = "C"
    del machine["States"]["M"]["End"]
    machine["States"]["C"] = {"Type": "Choice", "Choices": [{"Variable": "$[0].n2", "NumericEquals": 0,
                                                            "Next": "Done"}], "Default": "Done"}
    machine["States"]["Done"] = {"Type": "Succeed"}
    app = load_app(make_sfn_app(tmp_path / "app", machine, {"Double": DOUBLE}, "mem"))
    mem = {n: f.memory for n, f in app.manifest.functions.items()}
    assert mem == {"Start": DISTRIBUTED_HOST_MEMORY, "M_Join": DISTRIBUTED_HOST_MEMORY, "Double": 128}, mem
    machine["States"]["M"]["ItemProcessor"]["ProcessorConfig"] = {"Mode": "INLINE"}
    app = load_app(make_sfn_app(tmp_path / "inline", machine, {"Double": DOUBLE}, "mem"))
    assert {f.memory for f in app.manifest.functions.values()} == {128}


def test_jsonata_distributed_map_reader_arguments_batcher_and_threshold(aws, tmp_path):
    """A JSONata Distributed Map: ItemReader Arguments and MaxItems as {% %} expressions,
    ItemBatcher MaxItemsPerBatch and BatchInput as expressions, ToleratedFailureCount
    as an expression."""
    b = bucket("dm-ja", {"i.jsonl": "\n".join(json.dumps({"n": i}) for i in range(9))})
    machine = dmap({"Resource": GET, "Arguments": {"Bucket": "{% $states.input.bucket %}", "Key": "i.jsonl"},
                    "ReaderConfig": {"InputType": "JSONL", "MaxItems": "{% $states.input.max %}"}},
                   ItemBatcher={"MaxItemsPerBatch": "{% $states.input.per %}",
                                "BatchInput": {"tag": "{% $uppercase($states.input.tag) %}"}},
                   ToleratedFailureCount="{% 0 %}")
    machine["QueryLanguage"] = "JSONata"
    out = run(tmp_path, machine, {"bucket": b, "max": 8, "per": 4, "tag": "x"})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"] == [{"sum": 6, "batch": {"tag": "X"}}, {"sum": 22, "batch": {"tag": "X"}}]


def test_s3_inventory_manifest_reader(aws, tmp_path):
    """InputType MANIFEST: the S3 Inventory manifest.json names gzip CSV files in its
    destinationBucket; one item per listed object, keyed by fileSchema."""
    import gzip
    rows = "".join(f'"src","obj/{i}.txt","{i + 1}"\n' for i in range(5))
    s3 = boto3.client("s3")
    b = bucket("dm-inv", {})
    s3.put_object(Bucket=b, Key="inv/data/a.csv.gz", Body=gzip.compress(rows.encode()))
    manifest = {"sourceBucket": "src", "destinationBucket": f"arn:aws:s3:::{b}", "version": "2016-11-30",
                "fileFormat": "CSV", "fileSchema": "Bucket, Key, Size",
                "files": [{"key": "inv/data/a.csv.gz", "size": 1, "MD5checksum": "x"}]}
    s3.put_object(Bucket=b, Key="inv/manifest.json", Body=json.dumps(manifest).encode())
    machine = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemReader": {"Resource": GET, "Parameters": {"Bucket": b, "Key": "inv/manifest.json"},
                                      "ReaderConfig": {"InputType": "MANIFEST", "MaxItems": 4}},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "P",
                          "States": {"P": {"Type": "Pass", "End": True}}}, "End": True}}}
    out = run(tmp_path, machine, {})
    assert out["status"] == "SUCCEEDED", out
    assert out["v"] == [{"Bucket": "src", "Key": f"obj/{i}.txt", "Size": str(i + 1)} for i in range(4)]


def test_retry_of_a_map_over_its_threshold_runs_it_again_then_catches(aws, tmp_path):
    """States.ExceedToleratedFailureThreshold goes through the Map's Retry (the whole Map runs
    again, as a new attempt with its own Map Run) and then its Catch."""
    b = bucket("dm-retry", {"i.json": _failing(3, {0, 1})})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}}, ToleratedFailureCount=1,
                   Retry=[{"ErrorEquals": ["States.ExceedToleratedFailureThreshold"], "MaxAttempts": 1,
                           "IntervalSeconds": 1}])
    m = machine["States"]["M"]
    del m["End"]
    m["Next"] = "Done"
    m["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Done"}]
    m["ItemSelector"] = {"n.$": "$$.Map.Item.Value.n", "fail.$": "$$.Map.Item.Value.fail", "dir.$": "$.dir"}
    machine["States"]["Done"] = {"Type": "Pass", "End": True}
    validate(machine, "sm.json")
    counting = ("import os\n\ndef handler(event, context):\n"
                "    with open(os.path.join(event['dir'], 'calls'), 'a') as f:\n"
                "        f.write('%s\\n' % event['n'])\n"
                "    if event['fail']:\n        raise ValueError('no')\n    return event['n']\n")
    root = make_sfn_app(tmp_path / "app", machine, {"Double": counting}, "retry")
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        out = r.run({"dir": str(tmp_path)}, timeout=90)
    assert out["status"] == "SUCCEEDED", out
    assert out["v"]["err"]["Error"] == "States.ExceedToleratedFailureThreshold"
    calls = (tmp_path / "calls").read_text().split()
    assert sorted(calls) == ["0", "0", "1", "1", "2", "2"], calls  # every item, in both attempts


def test_jsonata_result_writer_arguments(aws, tmp_path):
    """A JSONata Distributed Map's ResultWriter takes Arguments ({% %} Prefix)."""
    b = bucket("dm-jaw", {"i.json": json.dumps([{"n": 1}, {"n": 2}])})
    machine = dmap({"Resource": GET, "Arguments": {"Bucket": b, "Key": "i.json"},
                    "ReaderConfig": {"InputType": "JSON"}},
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject",
                                 "Arguments": {"Bucket": b, "Prefix": "{% 'out-' & $states.input.run %}"}})
    machine["QueryLanguage"] = "JSONata"
    out = run(tmp_path, machine, {"run": "r7"})
    assert out["status"] == "SUCCEEDED", out
    key = out["v"]["ResultWriterDetails"]["Key"]
    assert key.startswith("out-r7/") and key.endswith("/manifest.json")
    manifest = json.loads(boto3.client("s3").get_object(Bucket=b, Key=key)["Body"].read())
    assert len(manifest["ResultFiles"]["SUCCEEDED"]) == 1


DEEP = 150_000
HOSTILE_READS = {
    # (InputType, object body): content the reader cannot turn into items
    "json-nested-150000-deep": ("JSON", "[" + "[" * DEEP + "]" * DEEP + "]"),
    "jsonl-nested-150000-deep": ("JSONL", '{"a":' * DEEP + "1" + "}" * DEEP + "\n"),
    "csv-900kb-field": ("CSV", "n,name\n1," + "x" * 900_000 + "\n"),
    "csv-unterminated-quote-field": ("CSV", 'n,name\n1,"' + "y" * 200_000 + "\n"),
    "manifest-not-an-object": ("MANIFEST", "[1, 2]"),
    "manifest-nested-deep": ("MANIFEST", '{"a":' * DEEP + "1" + "}" * DEEP),
    "manifest-files-not-a-list": ("MANIFEST", '{"fileFormat": "CSV", "files": "abc"}'),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_READS))
def test_content_the_reader_cannot_read_is_item_reader_failed_caught_by_the_map(aws, tmp_path, case):
    """Every failure to turn the object into items (a parse error, nesting deeper than the
    parser's recursion limit, a CSV field over the csv module's field limit, a manifest of
    the wrong shape) fails the Map with States.ItemReaderFailed and a one-line cause naming
    the object: the Map's Catch takes it (before, the deep object and the long field raised
    RecursionError / csv.Error, retried as Unum.RetriesExhausted that no Catch saw)."""
    kind, body = HOSTILE_READS[case]
    b = bucket(f"dm-hostile-{case}", {"in/obj": body})
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": b, "Key": "in/obj"},
                    "ReaderConfig": {"InputType": kind}})
    m = machine["States"]["M"]
    del m["End"]
    m["Next"] = "Done"
    m["Catch"] = [{"ErrorEquals": ["States.ItemReaderFailed"], "ResultPath": "$.err", "Next": "Done"}]
    machine["States"]["Done"] = {"Type": "Pass", "End": True}
    out = run(tmp_path, machine, {"x": 1})
    assert out["status"] == "SUCCEEDED", out
    err = out["v"]["err"]
    assert err["Error"] == "States.ItemReaderFailed", err
    assert err["Cause"].startswith(f"s3://{b}/in/obj: not {kind} ("), err["Cause"][:300]
    assert "\n" not in err["Cause"] and len(err["Cause"]) < 400, err["Cause"][:300]
