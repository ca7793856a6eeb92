"""The measured run on the aws target (`unumctl cost` / `tune --emulated`, unumctl/cost/measure.py
describes the measurement and runs it as `python -m unumctl.cost.measure APP --cloud aws`):
moto_server (DynamoDB, S3, CloudWatch Logs) and the emulated Lambda running the built AWS
archives, calls counted inside each execution environment by botocore hooks."""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..cost.measure import (MissingComponent, SessionFailed, close_windows, consumer_sessions, load_for_measure,
                            need, open_window, window_names)
from ..install_hint import install_hint

if TYPE_CHECKING:
    from .emulate.deployment import Signer

__all__ = ["measure_aws"]

AWS_INSTALL = install_hint("aws,emulate")
MAX_WARMUP_SESSIONS = 10


def measure_aws(app_dir: Path, value: Any, sessions: int = 1,
                check: Callable[[Any], None] | None = None, warmup: bool = True,
                at_least_once: bool = False, use_plan: bool = True,
                history: dict[str, list] | None = None, sign_as: Signer | None = None) -> dict[str, Any]:
    """Run `sessions` sessions of the app at `app_dir` with input `value` on moto + the
    emulated Lambda; the measurement (module docstring). `check(result_item)` may raise to
    reject a result (bench: compare with expected_output.json). Raises MissingComponent,
    SessionFailed, TimeoutError (no result after 120 s).

    Steady state (`warmup`, the default): warm-up sessions run first, until one of them
    starts no new execution environment (at most MAX_WARMUP_SESSIONS; the emulator keeps
    `concurrency` environments per function), and nothing they do is counted: not their calls,
    log lines or durations. A workflow run a million times a month runs on warm
    environments almost always; cold starts are what the first sessions after a deployment
    or a scale-out pay, and `warmup=False` measures them (every call counted).

    `at_least_once`, `use_plan`: load_for_measure (the app's plan file, APP/unumctl.plan.yaml,
    docs/tune.md, applies as `unumctl apply` applies it unless `use_plan` is False).

    `history`: a dict to fill with each measured session's execution history (session id ->
    events, read through the aws HistoryReader from moto's CloudWatch Logs before the
    emulators stop; `unumctl tune --emulated`).

    `sign_as`: the credentials each function signs with (unumctl/aws/emulate/deployment.py
    `local_specs`; the tests pass the harness's execution roles); default moto's dummy ones.

    Windows across sessions: the warm-up's objects are fired first and not counted; after
    the measured sessions `close_windows` ticks each ByTime window's consumer as EventBridge
    Scheduler would (moto does not run schedules), and the consumer sessions that fire
    (`win-<name>-<id>`, ByBatchSize ones included) are counted with the producers: their
    executions, calls and log lines; `windows` lists them and the ticks."""
    need("boto3", AWS_INSTALL)
    from unumctl.aws.emulate.moto_local import aws_env, find_moto_server, moto_server

    if find_moto_server() is None:
        raise MissingComponent(f"moto_server is not installed ({AWS_INSTALL})")
    import boto3

    from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore
    from runtime.session import read_result
    from runtime.session import entry_payload
    from unumctl.pipeline import deployment

    from ..aws.emulate.deployment import create_datastore, functions_of, local_specs
    from ..aws.emulate.local_lambda import LocalLambda

    app = load_for_measure(app_dir, "aws", at_least_once, use_plan)
    dep = deployment(app, "aws")
    names = {f.name: f.unum_name for f in functions_of(dep)}
    session_ms: list[float] = []
    saved = dict(os.environ)
    with moto_server() as url, tempfile.TemporaryDirectory() as tmp:
        try:
            os.environ.update(aws_env(url))
            table = bucket = f"unum-cost-{uuid.uuid4().hex[:8]}"
            create_datastore(table, bucket)
            counts_dir = Path(tmp) / "counts"
            counts_dir.mkdir()
            env = {**aws_env(url), "UNUM_COUNT_CALLS": str(counts_dir)}
            specs = local_specs(dep, table, bucket, Path(tmp) / "bundles", sign_as)
            ds = DynamoDBDatastore(table)
            with LocalLambda(specs, env) as emu:
                lam = boto3.client("lambda", endpoint_url=emu.url)

                measured: list[str] = []

                def one_session() -> None:
                    sid = str(uuid.uuid4())
                    measured.append(sid)
                    t0 = time.perf_counter()
                    lam.invoke(FunctionName=dep.entry, InvocationType="Event",
                               Payload=json.dumps(entry_payload(sid, value)))
                    deadline = time.monotonic() + 120
                    while (item := ds.get(sid, "result")) is None:
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"session {sid}: no result after 120 s")
                        time.sleep(0.02)
                    session_ms.append((time.perf_counter() - t0) * 1000)
                    if item.get("status") != "SUCCEEDED":
                        raise SessionFailed(f"session {sid} did not succeed: {json.dumps(item)[:500]}")
                    if check is not None:
                        check(read_result(ds, S3BlobStore(bucket), sid))  # a large value is a blob
                    emu.wait_idle(60)

                def tick(t: Any) -> None:  # what the rendered aws_scheduler_schedule sends
                    lam.invoke(FunctionName=dep.function(t.consumer).name, InvocationType="Event",
                               Payload=t.input)

                warmups = 0  # the warm-up sessions run (the loop's last value)
                if warmup:
                    (counts_dir / "PAUSED").touch()
                    for warmups in range(1, MAX_WARMUP_SESSIONS + 1):  # noqa: B007 (read after the loop)
                        cold = emu.stats.get("cold_starts", 0)
                        one_session()
                        if emu.stats.get("cold_starts", 0) == cold:
                            break
                    close_windows(dep.timers, tick)  # the warm-up's objects: fired, not counted
                    emu.wait_idle(60)
                    session_ms.clear()
                    measured.clear()
                wins = window_names(app)
                start = {w: open_window(ds, w) for w in wins}
                base = dict(emu.stats)
                first = len(emu.durations)
                (counts_dir / "PAUSED").unlink(missing_ok=True)
                for _ in range(sessions):
                    one_session()
                ticks = close_windows(dep.timers, tick)
                emu.wait_idle(60)
                consumers = consumer_sessions(ds, start, {w: open_window(ds, w) for w in wins})
                emu.wait_idle(60)
            stats = dict(emu.stats)  # after __exit__: the last log flush included
            if history is not None:
                history.update(_aws_history(dep, table, bucket, measured))
            stats = {k: stats.get(k, 0) - base.get(k, 0) for k in ("log_bytes", "log_bytes:unum", "cold_starts")}
            durations = list(emu.durations)[first:]
        finally:
            os.environ.clear()
            os.environ.update(saved)
        ops: Counter[str] = Counter()
        item_bytes: dict[str, list[int]] = {}
        for f in counts_dir.glob("*.json"):
            for k, v in json.loads(f.read_text()).items():
                if isinstance(v, list):
                    item_bytes.setdefault(k, []).extend(v)
                else:
                    ops[k] += v
    return {"app": app.name, "cloud": "aws", "sessions": sessions,
            "target": "moto_server (DynamoDB, S3, CloudWatch Logs) + emulated Lambda (unumctl.aws.emulate)",
            "executions": [[names.get(fn, fn), ms] for fn, ms in durations],
            "memory_mb": {names[f.name]: f.memory for f in functions_of(dep)},
            "operations": dict(ops), "item_bytes": item_bytes,
            "log_bytes": stats.get("log_bytes", 0), "log_bytes_history": stats.get("log_bytes:unum", 0),
            "session_ms": session_ms, "entry_bytes": len(json.dumps(entry_payload("x" * 36, value))),
            "functions": [f.unum_name for f in dep.functions], "warmup_sessions": warmups,
            "cold_starts": stats.get("cold_starts", 0),
            **({"windows": {"ticks": ticks, "consumer_sessions": consumers}} if wins else {})}


def _aws_history(dep: Any, table: str, bucket: str, sids: list[str]) -> dict[str, list]:
    """Each session's events through the aws HistoryReader (unumctl/aws/history.py) on the
    emulated deployment `dep` (moto: the environment's endpoints)."""
    import boto3

    from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore
    from unumctl.aws.emulate.deployment import functions_of
    from unumctl.aws.history import AwsHistoryReader
    functions = {f.unum_name: f.name for f in functions_of(dep)}
    reader = AwsHistoryReader(DynamoDBDatastore(table), S3BlobStore(bucket), boto3.client("logs"), functions)
    return {sid: reader.history(sid) for sid in sids}
