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
import time
from pathlib import Path
from typing import Any, Callable

from .. import registry

__all__ = ["MissingComponent", "SessionFailed", "close_windows", "consumer_sessions", "load_for_measure", "main",
           "need", "open_window", "wait_closed", "window_names"]



class MissingComponent(RuntimeError):
    """An emulator or client library the run needs is not installed (message: what and how)."""


class SessionFailed(RuntimeError):
    """A session of the example did not succeed (message: the result item)."""


def need(module: str, install: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingComponent(f"{module} is not installed ({install})")


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


def wait_closed(ds: Any, before: dict[str, int], timeout: float = 60,
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


def consumer_sessions(ds: Any, start: dict[str, int], end: dict[str, int]) -> list[str]:
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


def measurers() -> list[str]:
    """The targets with a measured run (a TargetSpec `measure`), in registry order."""
    return [n for n in registry.names() if registry.spec(n).measure is not None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m unumctl.cost.measure", description=__doc__.splitlines()[0])
    ap.add_argument("app", type=Path)
    ap.add_argument("--cloud", choices=measurers(), required=True)
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
            m = registry.part(args.cloud, "measure")(
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
