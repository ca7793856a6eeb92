"""Start many sessions with idempotency keys, send some starts again, collect every result:
application code that uses only the unumctl client (docs/client.md).

    python examples/client/start_many.py examples/loop-counter --cloud local -n 100 --resend 20

Session i starts the loop-counter app with {"n": 1 + i % 9} under the idempotency key
`order-<i>` (as a web handler would pass its request's Idempotency-Key). Then the starts of
the first `--resend` keys are sent again, as a retried request or a redelivered event would
be: each finds its session and starts nothing new. Every result is checked against the
Collatz step count of its input. Prints {"started", "resent", "results", "distinct_sessions"}
as JSON; exit 1 when a result is missing or wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from unumctl.client import Client


def collatz_steps(n: int) -> int:
    """Steps of n's Collatz trajectory down to 1 (the loop-counter app's `steps`)."""
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def run(client: Client, n: int = 100, resend: int = 20, timeout: float = 300.0) -> dict[str, Any]:
    """Start `n` sessions with keys order-0 ... order-<n-1>, send the first `resend` starts
    again, wait for every result. Returns {"started", "resent", "results",
    "distinct_sessions"}; ValueError when a result is not the expected one."""
    inputs = {f"order-{i}": {"n": 1 + i % 9} for i in range(n)}
    ids = {key: client.start(value, idempotency_key=key) for key, value in inputs.items()}
    again = {key: client.start(inputs[key], idempotency_key=key) for key in list(inputs)[:resend]}
    if any(again[key] != ids[key] for key in again):
        raise ValueError("a start sent again named another session")
    results = {}
    for key, sid in ids.items():
        out = client.result(sid, timeout=timeout)
        if out.get("steps") != collatz_steps(inputs[key]["n"]):
            raise ValueError(f"{key}: unexpected result {out!r}")
        results[key] = out
    return {"started": len(ids), "resent": len(again), "results": len(results),
            "distinct_sessions": len(set(ids.values()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("app", help="app directory (examples/loop-counter)")
    ap.add_argument("--cloud", default="local")
    ap.add_argument("--stage", default=None)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--resend", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    with Client(args.app, cloud=args.cloud, stage=args.stage) as client:
        try:
            summary = run(client, args.n, args.resend, args.timeout)
        except ValueError as exc:
            print(f"start_many: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
