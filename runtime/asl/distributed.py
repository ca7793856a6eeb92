"""Distributed Map: the item reader, the batcher, the failure threshold and the result writer.

A Map whose `ItemProcessor.ProcessorConfig.Mode` is `DISTRIBUTED` compiles as an inline Map
does (fan-out to the item processor's functions, fan-in at the join; docs/stepfunctions.md
"Distributed Map"); this module holds what it adds. Sources, AWS Step Functions developer
guide:

* "ItemReader (Map)" (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html):
  `arn:aws:states:::s3:getObject` with `ReaderConfig.InputType` JSON (the object is a JSON
  array), JSONL (one JSON value per line), CSV (a row per item, an object keyed by the
  header: `CSVHeaderLocation` FIRST_ROW, or GIVEN with `CSVHeaders`; values are strings;
  `CSVDelimiter` COMMA, PIPE, SEMICOLON, SPACE, TAB), MANIFEST (an S3 Inventory
  manifest.json: one item per object of its CSV files); `arn:aws:states:::s3:listObjectsV2`
  (one item per object: `Etag`, `Key`, `LastModified` in Unix seconds, `Size`,
  `StorageClass`, as the page's example output gives them); `ReaderConfig.MaxItems` /
  `MaxItemsPath` (the first N items; at most 100,000,000).
* "ItemBatcher (Map)" (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itembatcher.html):
  each child gets `{"Items": [...], "BatchInput": ...}` (BatchInput only when given), at most
  `MaxItemsPerBatch` items and at most `MaxInputBytesPerBatch` bytes (<= 256 KiB) of input.
* "Using Map state in Distributed mode", "Setting failure thresholds for Distributed Map
  states" (https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html):
  `ToleratedFailureCount` / `ToleratedFailurePercentage` (0..100): the Map Run fails with
  `States.ExceedToleratedFailureThreshold` when more items fail than either threshold allows;
  `Label` (at most 40 characters, none of whitespace, `<>{}[]?*"#%\\^|~`$&,;:/` or control
  characters).
* "ResultWriter (Map)" (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html):
  `arn:aws:states:::s3:putObject` with `Bucket` and `Prefix` writes
  `<Prefix>/<map run id>/manifest.json` and `SUCCEEDED_0.json`, `FAILED_0.json`,
  `PENDING_0.json` (an array of child execution records each); the state's result is
  `{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}`.

Failed items: a branch of a Map that tolerates failures ends with `{"AslFailed": {"Error",
"Cause"}}` (runtime.asl.wrapper) instead of failing the state; `conclude` counts them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from typing import Any, Callable

from .errors import AslError

__all__ = ["DELIMITERS", "FAILED", "INPUT_TYPES", "MAX_BATCH_BYTES", "MAX_ITEMS", "MODE", "READER_FAILED",
           "WRITER_FAILED", "batch", "check_threshold", "is_distributed", "label_error", "map_run_arn",
           "map_run_id", "outputs", "read_items", "records", "tolerant", "write_results"]

MODE = "DISTRIBUTED"
FAILED = "AslFailed"
EXCEEDED = "States.ExceedToleratedFailureThreshold"
# the developer guide's "Error names" (Handling errors in Step Functions workflows): a Map
# state that could not read its ItemReader's items / write its ResultWriter's results
READER_FAILED = "States.ItemReaderFailed"
WRITER_FAILED = "States.ResultWriterFailed"
MAX_ITEMS = 100_000_000           # ReaderConfig.MaxItems upper bound (ItemReader page)
MAX_BATCH_BYTES = 262_144         # MaxInputBytesPerBatch upper bound, 256 KiB (ItemBatcher page)
LABEL_MAX = 40                    # Label length (Distributed Map page)
LABEL_FORBIDDEN = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
INPUT_TYPES = ("JSON", "JSONL", "CSV", "MANIFEST")
DELIMITERS = {"COMMA": ",", "PIPE": "|", "SEMICOLON": ";", "SPACE": " ", "TAB": "\t"}
_NS = uuid.UUID("5f0c5b8e-6a0e-4d1e-9a53-4d6170527556")


def is_distributed(st: dict[str, Any]) -> bool:
    """True for a Map state whose item processor runs in DISTRIBUTED mode."""
    proc = st.get("ItemProcessor")
    return (st.get("Type") == "Map" and isinstance(proc, dict)
            and (proc.get("ProcessorConfig") or {}).get("Mode") == MODE)


def tolerant(st: dict[str, Any]) -> bool:
    """True when a Distributed Map may tolerate failed items: a positive literal
    ToleratedFailureCount/Percentage, or one given by a path or a JSONata expression."""
    if not is_distributed(st):
        return False
    for f in ("ToleratedFailureCount", "ToleratedFailurePercentage"):
        if f + "Path" in st:
            return True
        v = st.get(f)
        if isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
            return True
    return False


def label_error(label: Any) -> str | None:
    """Why `label` is not a valid Map Run label (Distributed Map page), or None."""
    if not isinstance(label, str) or not label:
        return f"must be a non-empty string, got {label!r}"
    if len(label) > LABEL_MAX:
        return f"{label!r} is longer than {LABEL_MAX} characters"
    m = LABEL_FORBIDDEN.search(label)
    if m:
        return (f"{label!r} contains {m.group()!r} (a label cannot hold whitespace, brackets, "
                "wildcards, the characters \" # % \\ ^ | ~ ` $ & , ; : / or control characters)")
    return None


# ---------------------------------------------------------------------- reading
def read_items(resource: str, params: dict[str, Any], config: dict[str, Any], max_items: int,
               call: Callable[[str, str, dict[str, Any]], Any]) -> list[Any]:
    """The items of an ItemReader: `resource` (getObject or listObjectsV2), its evaluated
    `params` (Bucket, Key / Prefix...), its `ReaderConfig` and the evaluated MaxItems (0: all).
    `call(resource, action, params)` performs the S3 call (runtime.asl.integrations).

    Every failure to read the items is AslError(States.ItemReaderFailed) with a one-line
    cause, so a Catch on the Map sees it (the developer guide's "Handling errors in Step
    Functions workflows", Error names: the Map state could not read from the item source
    its ItemReader names): the caller's `call` raises it for S3's errors, naming them; this
    function for content that is not what InputType says: a JSON syntax error, a value
    nested deeper than the parser's recursion limit, a CSV field over the csv module's
    field limit (CSV_FIELD_LIMIT characters) or a malformed row, a manifest of the wrong
    shape, a listing whose LastModified is not a date."""
    action = resource.rsplit(":", 1)[-1]
    kind = "a listing" if action == "listObjectsV2" else config.get("InputType", "JSON")
    where = f"s3://{params.get('Bucket')}/{params.get('Prefix' if action == 'listObjectsV2' else 'Key')}"
    try:
        if action == "listObjectsV2":
            return _list_objects(resource, params, max_items, call)
        body = call(resource, action, params).get("Body", "")
        if kind == "MANIFEST":
            items = _inventory(json.loads(body), max_items, call, resource)
        elif kind == "JSON":
            items = json.loads(body) if body.strip() else []
            if not isinstance(items, list):
                raise ValueError("the object is not a JSON array")
        elif kind == "JSONL":
            items = []
            for n, line in enumerate(body.splitlines(), 1):
                if line.strip():
                    items.append(_line(n, line))
        else:
            items = _csv(body, config)
    except RecursionError:
        raise AslError(READER_FAILED, _one_line(f"{where}: not {kind} (a value is nested deeper "
                                                "than the parser's recursion limit)")) from None
    except (ValueError, csv.Error) as err:
        raise AslError(READER_FAILED, _one_line(f"{where}: not {kind} ({err})")) from None
    return items[:max_items] if max_items else items


CSV_FIELD_LIMIT = csv.field_size_limit()  # the csv module's limit (131,072 characters)
CAUSE_MAX = 300                           # characters of a reader failure's cause


def _one_line(text: str) -> str:
    """`text` on one line (runs of whitespace, a newline in a key included, as one space),
    cut to CAUSE_MAX characters."""
    text = " ".join(text.split())
    return text if len(text) <= CAUSE_MAX else text[:CAUSE_MAX - 3] + "..."


def _line(n: int, line: str) -> Any:
    """JSON Lines line `n`'s value; ValueError naming the line."""
    try:
        return json.loads(line)
    except ValueError as err:
        raise ValueError(f"line {n}: {err}") from None


def _inventory(manifest: Any, max_items: int, call: Callable[[str, str, dict[str, Any]], Any],
               resource: str) -> list[dict[str, str]]:
    """The objects an S3 Inventory lists: its `manifest.json` names gzip-compressed CSV
    files (`files[].key` in `destinationBucket`) whose columns `fileSchema` names ("Bucket,
    Key, Size, ..."); one item per row, keyed by the schema's names (S3 User Guide,
    "Configuring Amazon S3 Inventory", manifest fields; Step Functions reads the CSV format
    only). ValueError for another format or shape."""
    import base64
    import gzip
    if not isinstance(manifest, dict) or manifest.get("fileFormat") != "CSV":
        raise ValueError("an S3 Inventory manifest with fileFormat CSV is expected")
    files = manifest.get("files") or []
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("key"), str)
                                              for f in files):
        raise ValueError("the manifest's files must be a list of objects with a string key")
    schema = [c.strip() for c in str(manifest.get("fileSchema", "")).split(",")]
    bucket = str(manifest.get("destinationBucket", "")).rsplit(":", 1)[-1]
    out: list[dict[str, str]] = []
    for f in files:
        body = call(resource, "getObject", {"Bucket": bucket, "Key": f["key"]}).get("Body", "")
        try:  # a gzip body is not text: the integration hands it over as base64
            text = gzip.decompress(base64.b64decode(body, validate=True)).decode()
        except (ValueError, OSError):
            text = body
        for row in csv.reader(io.StringIO(text)):
            if row:
                out.append(dict(zip(schema, row)))
                if max_items and len(out) >= max_items:
                    return out
    return out


def _csv(body: str, config: dict[str, Any]) -> list[dict[str, str]]:
    """The rows of a CSV object as items keyed by its header; ValueError naming the line for
    a row with more fields than the header and for what the csv module refuses (a field
    longer than CSV_FIELD_LIMIT characters, a quote left open to the end)."""
    reader = csv.reader(io.StringIO(body), delimiter=DELIMITERS[config.get("CSVDelimiter", "COMMA")])
    try:
        rows = [r for r in reader if r]
    except csv.Error as err:
        raise ValueError(f"line {reader.line_num}: {err}") from None
    if config.get("CSVHeaderLocation", "FIRST_ROW") == "GIVEN":
        header = list(config["CSVHeaders"])
    else:
        if not rows:
            return []
        header, rows = rows[0], rows[1:]
    out = []
    for k, r in enumerate(rows):
        if len(r) > len(header):
            raise ValueError(f"row {k + 1} has {len(r)} fields, the header {len(header)}")
        out.append({h: (r[i] if i < len(r) else "") for i, h in enumerate(header)})
    return out


def _list_objects(resource: str, params: dict[str, Any], max_items: int,
                  call: Callable[[str, str, dict[str, Any]], Any]) -> list[dict[str, Any]]:
    from datetime import datetime
    out: list[dict[str, Any]] = []
    req = dict(params)
    while True:
        page = call(resource, "listObjectsV2", req)
        for o in page.get("Contents", []):
            lm = o.get("LastModified")
            if isinstance(lm, str):
                lm = int(datetime.fromisoformat(lm.replace("Z", "+00:00")).timestamp())
            out.append({"Etag": o.get("ETag"), "Key": o.get("Key"), "LastModified": lm,
                        "Size": o.get("Size"), "StorageClass": o.get("StorageClass", "STANDARD")})
            if max_items and len(out) >= max_items:
                return out
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return out
        req["ContinuationToken"] = token


# ---------------------------------------------------------------------- batching
def batch(items: list[Any], max_items: int, max_bytes: int, batch_input: Any,
          with_input: bool) -> list[dict[str, Any]]:
    """Group `items` into child inputs `{"Items": [...], "BatchInput": batch_input}` (the
    BatchInput key only when `with_input`), each with at most `max_items` items (0: no
    limit) and at most `max_bytes` bytes of JSON (0: no limit; a single item larger than
    that fails with States.Runtime, as AWS refuses it)."""
    base = {"Items": []} if not with_input else {"Items": [], "BatchInput": batch_input}
    overhead = len(_json(base))
    out: list[dict[str, Any]] = []
    cur: list[Any] = []
    size = overhead
    for it in items:
        n = len(_json(it)) + (1 if cur else 0)
        if max_bytes and overhead + len(_json(it)) > max_bytes:
            raise AslError("States.Runtime", f"an item of {len(_json(it))} bytes does not fit in "
                           f"MaxInputBytesPerBatch {max_bytes}")
        if cur and ((max_items and len(cur) >= max_items) or (max_bytes and size + n > max_bytes)):
            out.append(_batch(cur, with_input, batch_input))
            cur, size, n = [], overhead, len(_json(it))
        cur.append(it)
        size += n
    if cur:
        out.append(_batch(cur, with_input, batch_input))
    return out


def _batch(items: list[Any], with_input: bool, batch_input: Any) -> dict[str, Any]:
    return {"Items": items, "BatchInput": batch_input} if with_input else {"Items": items}


def _json(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------------- the Map Run
def map_run_id(execution_arn: str, key: str) -> str:
    """The Map Run's id: a UUID derived from the execution and `key` (the join invocation
    of this attempt), so a duplicate or a re-execution of the join names the same run."""
    return str(uuid.uuid5(_NS, f"{execution_arn}|{key}"))


def map_run_arn(states_prefix: str, machine: str, label: str, run_id: str) -> str:
    """`arn:aws:states:REGION:ACCOUNT:mapRun:<machine>/<label>:<run id>`, AWS's form."""
    return f"{states_prefix}:mapRun:{machine}/{label}:{run_id}"


def failed(value: Any) -> dict[str, Any] | None:
    """{Error, Cause} when a branch output records a failed item, else None."""
    if isinstance(value, dict) and set(value) == {FAILED} and isinstance(value[FAILED], dict):
        return value[FAILED]
    return None


def check_threshold(results: list[Any], count: float | None, percentage: float | None) -> None:
    """Raise AslError(States.ExceedToleratedFailureThreshold) when more branches failed
    than ToleratedFailureCount (`count`) or ToleratedFailurePercentage (`percentage`) allow
    (None: not given, i.e. 0 unless the other one is given)."""
    n = len(results)
    bad = sum(1 for r in results if failed(r) is not None)
    if not bad:
        return
    if count is None and percentage is None:
        count = 0
    over = (count is not None and bad > count) or \
           (percentage is not None and n and bad * 100.0 / n > percentage)
    if over:
        raise AslError(EXCEEDED, "The specified tolerated failure threshold was exceeded")


def records(results: list[Any], inputs: list[Any], run_arn: str, child_prefix: str,
            machine_arn: str, when: str) -> tuple[list[dict], list[dict]]:
    """(SUCCEEDED records, FAILED records): one child execution record per item, in item
    order, as ResultWriter writes them (ExecutionArn, Input and Output as JSON text with
    their Details, Name, RedriveCount/Status, StartDate, StateMachineArn, Status, StopDate;
    Error and Cause for a failed one). `when` (ISO-8601) is both dates: per-item times are
    not recorded."""
    run_id = run_arn.rsplit(":", 1)[-1]
    ok: list[dict] = []
    bad: list[dict] = []
    for i, r in enumerate(results):
        name = str(uuid.uuid5(_NS, f"{run_id}|{i}"))
        rec: dict[str, Any] = {
            "ExecutionArn": f"{child_prefix}:{name}", "Input": json.dumps(inputs[i] if i < len(inputs) else None),
            "InputDetails": {"Included": True}, "Name": name, "RedriveCount": 0,
            "StartDate": when, "StateMachineArn": machine_arn, "StopDate": when}
        err = failed(r)
        if err is None:
            rec.update({"Output": json.dumps(r), "OutputDetails": {"Included": True},
                        "RedriveStatus": "NOT_REDRIVABLE",
                        "RedriveStatusReason": "Execution is SUCCEEDED and cannot be redriven",
                        "Status": "SUCCEEDED"})
            ok.append(rec)
        else:
            rec.update({"Error": err.get("Error"), "Cause": err.get("Cause"),
                        "RedriveStatus": "REDRIVABLE", "Status": "FAILED"})
            bad.append(rec)
    return ok, bad


def outputs(results: list[Any], failures: list[dict]) -> list[Any]:
    """The Map's result without a ResultWriter: each item's output, a failed item's child
    execution record in its place (AWS returns a failed child's result unchanged)."""
    it = iter(failures)
    return [next(it) if failed(r) is not None else r for r in results]


def write_results(bucket: str, prefix: str, run_arn: str, ok: list[dict], bad: list[dict],
                  put: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """Write the ResultWriter files with `put(PutObject params)` and return the Map's
    result {"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}. Files: one per
    non-empty status (`SUCCEEDED_0.json`, `FAILED_0.json`; no item is ever PENDING when the
    join runs, so `PENDING` lists none) and `manifest.json` last, listing them."""
    run_id = run_arn.rsplit(":", 1)[-1]
    base = f"{prefix.rstrip('/')}/{run_id}" if prefix else run_id
    files: dict[str, list[dict[str, Any]]] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
    for status, recs in (("SUCCEEDED", ok), ("FAILED", bad)):
        if not recs:
            continue
        body = json.dumps(recs, separators=(",", ":"))
        key = f"{base}/{status}_0.json"
        put({"Bucket": bucket, "Key": key, "Body": body})
        files[status].append({"Key": key, "Size": len(body.encode())})
    manifest = {"DestinationBucket": bucket, "MapRunArn": run_arn, "ResultFiles": files}
    key = f"{base}/manifest.json"
    put({"Bucket": bucket, "Key": key, "Body": json.dumps(manifest, separators=(",", ":"))})
    return {"MapRunArn": run_arn, "ResultWriterDetails": {"Bucket": bucket, "Key": key}}
