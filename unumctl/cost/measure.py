"""Run an app's example input on an emulated cloud and record what it did: the measured
run of `unumctl cost` and `unumctl tune --emulated` (unumctl/cost/emulated.py runs this
module as a child process, docs/cost.md "The measured run"), of the cost benchmarks
(bench/aws_calls.py, bench/gcp_calls.py) and of tools/fusion_cost.py, which call
`measure_aws` / `measure_gcp` in-process.

    python -m unumctl.cost.measure APP --cloud aws|gcp [--sessions N] [--input FILE]
        [--mode exactly-once|at-least-once] [--no-plan] [--history-out FILE]

`--mode at-least-once` runs the app with `runtime.checkpoint: false` (docs/ir.md: no
function writes a checkpoint, except a fan-in's sources, whose checkpoints are the fan-in's
inputs; Step Functions Express's guarantee); the default runs it as its manifest says.
`--no-plan` ignores the plan file APP/unumctl.plan.yaml (see `load_for_measure`).

prints one JSON object, a measurement as unumctl/cost/measurement.py describes it:
`app`, `cloud`, `sessions`, `target` (what ran), `executions` ([function, ms] per function
execution, the handler's own duration), `memory_mb` (per function, from the deployment
model: the manifest's, or the plan file's unless --no-plan), `operations` (billed-operation counters, per cloud below),
`item_bytes` (AWS: sizes of the DynamoDB items each operation wrote or read), `log_bytes`
and `log_bytes_history`, `session_ms` (wall time from the entry invoke to the result item,
per session), `entry_bytes` (the entry payload), `warmup_sessions` (aws: sessions run first
and not billed, see `measure_aws`), `windows` (an app with Window edges: the ticks sent and
the consumer sessions run, see `close_windows`; their executions, operations and log lines are
counted with the producers').

- aws: moto_server (DynamoDB, S3, CloudWatch Logs) and the emulated Lambda
  (unumctl/aws/emulate/local_lambda.py) running the built AWS archives; calls counted inside
  each execution environment by botocore hooks (lambda_worker.py, UNUM_COUNT_CALLS):
  `dynamodb:PutItem`, `dynamodb:BatchGetItem#items`, `s3:ListObjectsV2`, ...
- gcp: the Firestore and Pub/Sub emulators, the GCS stand-in and functions-framework
  (unumctl/gcp/emulate/platform.py); each execution prints its adapters' counters
  (runtime/gcp/entry.py, UNUM_USAGE_LOG=1): `firestore_reads`, `firestore_writes`,
  `firestore_deletes`, `publishes`, `publish_bytes` (already >= 1000 B per message),
  `gcs_class_a`, `gcs_class_b`, `history_writes`, `history_log_bytes`; and, counted in
  Firestore after the sessions, `firestore_ttl_deletes` / `history_ttl_deletes`: the
  documents they left, which the TTL policies delete (billed as deletes).

Sessions run one at a time so that per-session numbers are exact. Errors: a missing component
exits 3 with one line naming it and its install command (`MissingComponent`); a session that
does not succeed exits 1 with its result item.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..install_hint import install_hint

__all__ = ["load_for_measure", "main", "measure_aws", "measure_gcp", "open_window"]

if TYPE_CHECKING:
    from ..emulate.aws.deployment import Signer

GCP_INSTALL = (f"{install_hint('gcp,emulate')} and the Google Cloud SDK's emulators "
               "(gcloud components install cloud-firestore-emulator pubsub-emulator)")
AWS_INSTALL = install_hint("aws,emulate")


class MissingComponent(RuntimeError):
    """An emulator or client library the run needs is not installed (message: what and how)."""


class SessionFailed(RuntimeError):
    """A session of the example did not succeed (message: the result item)."""


def _need(module: str, install: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingComponent(f"{module} is not installed ({install})")


MAX_WARMUP_SESSIONS = 10


def load_for_measure(app_dir: Path, cloud: str, at_least_once: bool = False, use_plan: bool = True) -> Any:
    """The app at `app_dir` as the measured run builds it: its plan file applied for `cloud`
    as `unumctl apply` applies it (unumctl.pipeline.load_planned: memory, fuse, batch),
    or the manifest as it is when not `use_plan` (`--no-plan`); with `at_least_once`,
    `runtime.checkpoint` false for every function (what the manifest's `runtime.checkpoint:
    false` does, without editing the app). Raises AppError, PlanFileError, FusionError."""
    from unumctl.pipeline import load_planned

    app = load_planned(app_dir, cloud, use_plan).app
    if at_least_once:
        app.manifest.runtime.checkpoint = False
    return app


def window_names(app: Any) -> list[str]:
    """The windows of `app`'s workflow (docs/ir.md "Windows across sessions"), sorted."""
    return sorted({e.window.name for node in app.workflow.functions.values() for e in node.next
                   if e.window is not None})


def open_window(ds: Any, name: str) -> int:
    """The first window of `name` not yet fired (the window store's `cur` hint,
    runtime/triggers/window.py): the consumer sessions a measurement runs are from here on."""
    from runtime.triggers.window import store_session

    item = ds.get(store_session(name), "cur")
    return int(item["log"]) if item else 0


def close_windows(timers: list[Any], tick: Callable[[Any], None]) -> list[list]:
    """After the measured sessions, close the open windows as the clouds' schedulers do:
    `tick(timer)` sends each ByTime window's rendered tick (unumctl/deploy/windows.py
    `WindowTimer.input`, runtime/triggers/window.py `tick_payload(name, None)`) to its
    consumer, which closes the open window and fires it as a session `win-<name>-<id>`.
    Returns the ticks sent, [[window, seconds between ticks], ...] (billed by
    unumctl/cost: one scheduler invocation each). ByBatchSize windows fire by themselves
    when a session's object fills one."""
    for t in timers:
        tick(t)
    return [[t.name, t.seconds] for t in timers]


def _wait_closed(ds: Any, before: dict[str, int], timeout: float = 60,
                 tick: Callable[[], None] | None = None) -> None:
    """Wait until each window of `before` (window -> `open_window` when the ticks were sent)
    that held an object has closed (its `cur` moved on): a tick delivered asynchronously
    (Pub/Sub) closes it later; `tick()`, when given, is called first for each such window.
    TimeoutError after `timeout` s."""
    from runtime.triggers.window import slot_key, store_session

    for name, j in sorted(before.items()):
        if ds.get(store_session(name), slot_key(j, 0)) is None:
            continue  # an empty window: the tick fires nothing
        if tick is not None:
            tick()
        deadline = time.monotonic() + timeout
        while open_window(ds, name) <= j:
            if time.monotonic() > deadline:
                raise TimeoutError(f"window {name!r} {j}: not closed {timeout:g} s after the scheduler's tick")
            time.sleep(0.05)


def _consumer_sessions(ds: Any, start: dict[str, int], end: dict[str, int]) -> list[str]:
    """The consumer sessions of the windows fired between `start` and `end` (window ->
    `open_window`); SessionFailed when one did not succeed, TimeoutError when one has no
    result after 60 s."""
    from runtime.triggers.window import window_session

    out = []
    for name in sorted(start):
        for j in range(start[name], end[name]):
            sid = window_session(name, j)
            deadline = time.monotonic() + 60
            while (item := ds.get(sid, "result")) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"window consumer session {sid}: no result after 60 s")
                time.sleep(0.02)
            if item.get("status") != "SUCCEEDED":
                raise SessionFailed(f"window consumer session {sid} did not succeed: {json.dumps(item)[:500]}")
            out.append(sid)
    return out


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
    _need("boto3", AWS_INSTALL)
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
                consumers = _consumer_sessions(ds, start, {w: open_window(ds, w) for w in wins})
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


def measure_gcp(app_dir: Path, value: Any, sessions: int = 1, emulators: Any = None,
                check: Callable[[dict], None] | None = None, at_least_once: bool = False,
                use_plan: bool = True, history: dict[str, list] | None = None) -> dict[str, Any]:
    """As `measure_aws` (`at_least_once`, `use_plan` and `history` too: read from the Firestore
    emulator through the gcp HistoryReader), on the GCP emulators (started here unless `emulators`, a running
    unumctl.gcp.emulate.emulators.Emulators, is given). Raises MissingComponent (the emulators,
    functions-framework or the Google client libraries are missing), SessionFailed,
    TimeoutError. `at_least_once`, `use_plan`: load_for_measure. Windows across sessions:
    after the sessions `close_windows` publishes each ByTime window's Cloud Scheduler message
    (the rendered job's data) to its consumer's topic, as the scheduler would (the emulators
    do not run jobs), and the consumer sessions that fire are counted with the producers'."""
    _need("google.cloud.firestore", GCP_INSTALL)
    _need("functions_framework", GCP_INSTALL)
    from runtime.session import entry_payload

    from unumctl.gcp.emulate.emulators import EmulatorMissing, Emulators
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app = load_for_measure(app_dir, "gcp", at_least_once, use_plan)
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            own = None
            if emulators is None:
                try:
                    own = Emulators(Path(tmp) / "emu").start()
                except EmulatorMissing as exc:
                    raise MissingComponent(f"{exc} ({GCP_INSTALL})") from None
                emulators = own
            os.environ.update(emulators.env)
            # THREADS=1: one execution at a time per function server (gen2's default
            # concurrency of 1 per instance), so each execution's usage delta is its own
            env = {"UNUM_USAGE_LOG": "1", "THREADS": "1"}
            session_ms: list[float] = []
            with EmulatorPlatform(app, emulators, Path(tmp) / "run", env=env, log_dir=Path(tmp) / "logs") as plat:
                from runtime.gcp.invoker import topic_id
                from unumctl.pipeline import deployment

                def tick(t: Any) -> None:  # what the rendered google_cloud_scheduler_job publishes
                    topic = plat.publisher.topic_path(emulators.project, topic_id(app.name, t.consumer, plat.topic_prefix))
                    plat.publisher.publish(topic, data=t.input.encode()).result(timeout=30)

                wins = window_names(app)
                start = {w: open_window(plat.ds, w) for w in wins}
                sids: list[str] = []
                for _ in range(sessions):
                    t0 = time.perf_counter()
                    sid = plat.start_session(value)
                    item = plat.wait_result(sid, 120, poll=0.02)
                    session_ms.append((time.perf_counter() - t0) * 1000)
                    if item.get("status") != "SUCCEEDED":
                        raise SessionFailed(f"session {sid} did not succeed: {json.dumps(item)[:500]}")
                    if check is not None:
                        check(item)
                    sids.append(sid)
                timers = deployment(app, "gcp").timers
                before = {t.name: open_window(plat.ds, t.name) for t in timers}
                ticks = close_windows(timers, tick)
                _wait_closed(plat.ds, before)
                consumers = _consumer_sessions(plat.ds, start, {w: open_window(plat.ds, w) for w in wins})
                sids += consumers
                time.sleep(2)  # GC and late sweeps finish after the result
                if history is not None:
                    from unumctl.gcp.history import GcpHistoryReader
                    reader = GcpHistoryReader(app)
                    history.update({sid: reader.history(sid) for sid in sids})
                records = _usage_records(p.log.read_text() for p in plat.servers.values())
                left = _documents_left(app, emulators.project, sids)
        finally:
            if own is not None:
                own.stop()
            os.environ.clear()
            os.environ.update(saved)
    ops: Counter[str] = left
    executions = []
    from runtime.triggers.window import store_session

    # a scheduler tick's delivery carries the window store's session (tick_payload): the
    # consumer execution it runs is counted under it
    counted = set(sids) | {store_session(w) for w in wins}
    for rec in records:
        if rec["session"] in counted:
            ops.update(rec["unum_usage"])
            executions.append([rec["function"], float(rec["duration_ms"])])
    return {"app": app.name, "cloud": "gcp", "sessions": sessions,
            "target": "Firestore + Pub/Sub emulators, GCS stand-in, functions-framework (unumctl.gcp.emulate)",
            "executions": executions,
            "memory_mb": {fn: spec.memory for fn, spec in app.manifest.functions.items()},
            "operations": dict(ops), "item_bytes": {},
            "log_bytes": ops.get("history_log_bytes", 0), "log_bytes_history": ops.get("history_log_bytes", 0),
            "session_ms": session_ms, "entry_bytes": len(json.dumps(entry_payload("x" * 36, value))),
            "functions": sorted(app.workflow.functions),
            **({"windows": {"ticks": ticks, "consumer_sessions": consumers}} if wins else {})}


def _documents_left(app: Any, project: str, sids: list[str]) -> Counter:
    """Firestore documents the sessions `sids` left behind (the datastore's `unum-<app>` and
    the history's collection), which the TTL policies delete later: Firestore bills a TTL
    delete as a document delete. Counters `firestore_ttl_deletes` (the `result` item, and
    with `runtime.gc: none` every item, counter and set member) and `history_ttl_deletes`."""
    from google.cloud import firestore

    from runtime.gcp.history import history_collection
    from unumctl.gcp.model import build

    store = build(app, {"project": project}).datastore  # the names the emulated platform uses
    client = firestore.Client(project=project, database=store.database)
    out: Counter[str] = Counter()
    try:
        for key, coll in (("firestore_ttl_deletes", store.name),
                          ("history_ttl_deletes", history_collection(store.name))):
            for sid in sids:
                q = client.collection(coll).where(filter=firestore.FieldFilter("session", "==", sid)).select([])
                out[key] += sum(1 for _ in q.stream())
    finally:
        client.close()
    return out


def _usage_records(texts) -> list[dict]:
    """The `{"unum_usage": ...}` JSON lines of the function servers' logs (lines of concurrent
    executions may interleave, so each object is decoded where it starts)."""
    out = []
    dec = json.JSONDecoder()
    for text in texts:
        pos = text.find('{"unum_usage"')
        while pos >= 0:
            try:
                rec, end = dec.raw_decode(text, pos)
                out.append(rec)
            except json.JSONDecodeError:
                end = pos + 1
            pos = text.find('{"unum_usage"', end)
    return out


# the cloud a measuring function runs on, from its name (measure_<cloud>)
MEASURERS: dict[str, Callable[..., dict[str, Any]]] = {
    f.__name__.removeprefix("measure_"): f for f in (measure_aws, measure_gcp)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m unumctl.cost.measure", description=__doc__.splitlines()[0])
    ap.add_argument("app", type=Path)
    ap.add_argument("--cloud", choices=sorted(MEASURERS), required=True)
    ap.add_argument("--sessions", type=int, default=1)
    ap.add_argument("--input", type=Path, help="input JSON (default: APP/input.json)")
    ap.add_argument("--mode", choices=("exactly-once", "at-least-once"), default="exactly-once",
                    help="at-least-once: the app with runtime.checkpoint false")
    ap.add_argument("--no-plan", action="store_true", help="ignore the plan file APP/unumctl.plan.yaml "
                    "(docs/tune.md): memory, fuse and batch as the manifest and IR give them")
    ap.add_argument("--history-out", type=Path, help="also write the measured sessions' execution "
                    "histories to this JSON file, {session: [event, ...]} (unumctl tune --emulated)")
    args = ap.parse_args(argv)
    value = json.loads((args.input or args.app / "input.json").read_text())
    try:
        with _quiet_stdout():
            history: dict[str, list] | None = {} if args.history_out else None
            m = MEASURERS[args.cloud](
                args.app, value, args.sessions, at_least_once=args.mode == "at-least-once",
                use_plan=not args.no_plan, history=history)
    except MissingComponent as exc:
        print(f"{exc}", file=sys.stderr)
        return 3
    except (SessionFailed, TimeoutError) as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    if args.history_out:
        args.history_out.write_text(json.dumps(history, default=str))
    print(json.dumps(m))
    return 0


class _quiet_stdout:
    """stdout carries only the measurement: anything else printed meanwhile goes to stderr."""

    def __enter__(self):
        self._fd = os.dup(1)
        sys.stdout.flush()
        os.dup2(2, 1)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self._fd, 1)
        os.close(self._fd)


if __name__ == "__main__":
    sys.exit(main())
