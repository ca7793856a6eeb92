"""Latency of Step Functions Task timeouts and callbacks on the local target (real workers).

* timeout: a Task with TimeoutSeconds 1 whose Lambda sleeps 30 s, caught by a Catch: seconds
  from the start of the session to its result (the TimeoutSeconds itself, the platform's
  watchdog period of 0.2 s, the kill, the redelivery to a fresh instance, the Catch);
* callback: a Task waiting on its token; seconds from `CallbackClient.send_task_success`
  (a separate connection, as a service would) to the session's result, which includes the
  platform claiming the queued row (polled every 0.5 s) and the resumed execution;
* self-callback: the Lambda completes its own token from inside the function: seconds for
  the whole one-Task session.

    .venv/bin/python bench/asl_callbacks.py [--runs 5]

Prints one JSON object with the median and max of each (seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.asl.callback import CallbackClient  # noqa: E402
from runtime.local.datastore import SqliteDatastore  # noqa: E402
from runtime.local.entry import QueueInvoker  # noqa: E402
from runtime.local.queue import DurableQueue  # noqa: E402
from unumctl_testing.callback_apps import (SELF_COMPLETE, SLEEPY, TOKEN_WRITER, callback_machine,  # noqa: E402
                                          sfn_app, timeout_machine, wait_file)
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="cbb-", dir="/tmp") as tmp:
        t = Path(tmp)
        apps = {"timeout": sfn_app(t / "to", timeout_machine(), {"Sleepy": SLEEPY}),
                "callback": sfn_app(t / "cb", callback_machine(), {"Waiter": TOKEN_WRITER}),
                "self": sfn_app(t / "self", callback_machine(resource_fn="SelfComplete"),
                                {"SelfComplete": SELF_COMPLETE})}
        times: dict[str, list[float]] = {k: [] for k in apps}
        for kind, app in apps.items():
            state = t / f"state-{kind}"
            with LocalRunner(load_app(app), state=state, quiet=True) as r:
                if kind == "self":  # start its instances first (the others wait >= 0.5 s anyway)
                    r.run({"token_file": "-", "x": 0}, "warm", 60)
                for i in range(args.runs):
                    tf = t / f"token-{kind}-{i}"
                    value = {"log": str(t / f"log-{i}"), "slow_attempts": [0], "token_file": str(tf), "x": i}
                    t0 = time.monotonic()
                    sid = r.start(value, f"{kind}-{i}")
                    if kind == "callback":
                        token = wait_file(tf)
                        ds = SqliteDatastore(state / "unum.db")
                        client = CallbackClient(ds, QueueInvoker(lambda m: None, DurableQueue(ds), None))
                        t0 = time.monotonic()
                        client.send_task_success(token, {"ok": i})
                        ds.close()
                    item = r.platform.wait_result(sid, 120)
                    times[kind].append(time.monotonic() - t0)
                    assert item["status"] == "SUCCEEDED", item
        for k, v in times.items():
            out[k] = {"median_s": round(statistics.median(v), 3), "max_s": round(max(v), 3), "runs": len(v)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
