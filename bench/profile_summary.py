"""Where the local target's time goes: a summary of a py-spy profile of a benchmark.

    py-spy record -s -r 250 -f raw -o /tmp/chain.raw -- python bench/local_perf.py chain --sessions 30
    python bench/profile_summary.py /tmp/chain.raw

(`py-spy` is in the `bench` extra: pip install -e '.[bench]'.) Reads py-spy's raw (collapsed
stack) output, keeps the samples of the steady state (stacks inside an instance's
`LocalFunction.handle`, the platform's dispatcher thread, and the client's `wait_result` /
`wait_drained`), and attributes each sample to the first category its stack matches, from
the innermost frame out:

- first, if anywhere on the stack: history (building and writing history records, their JSON
  and SQLite included), output_capture, sqlite_commit (COMMIT of the execution's transaction);
- else the innermost of: sqlite_lock (waiting for the writers' lock or BEGIN), idle_select
  (the dispatcher waiting), socket (multiprocessing send/recv and pickling), json, sqlite
  (other statements), client_wait, engine (the rest of runtime/), platform (the rest of
  unumctl/local/).

Prints a JSON object: samples and percentage per category, per process role (instance,
dispatcher, client). Samples are wall-clock where the process was running or runnable (py-spy
without --idle): on a loaded machine, time spent runnable but preempted inflates whatever
was on the stack. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

ROLES = (("instance", "LocalFunction.handle "), ("dispatcher", "LocalPlatform._dispatch_loop "),
         ("client", "LocalPlatform.wait_result "), ("client", "LocalPlatform.wait_drained "))

# categories that own everything under them (their JSON and SQLite included)
OWNERS = (
    ("history", ("SqliteHistory.", "Engine._emit", "_note_end ", "_note_checkpoint ", "record_platform_event")),
    ("output_capture", ("OutputCapture.", "_store_output ", "_flush_output ")),
    ("sqlite_commit", ("commit_deferred ",)),
)
# otherwise (category, substrings of a frame): the innermost matching frame decides
RULES = (
    ("sqlite_lock", ("_lock_writers ", "_Txn.__enter__ ")),
    ("idle_select", ("EpollSelector.select ",)),
    ("socket", ("_ConnectionBase.send ", "_ConnectionBase.recv ", "_ConnectionBase.poll ",
                "ForkingPickler")),
    ("json", ("json/", "(json", "dumps ", "loads ")),
    ("sqlite", ("SqliteDatastore.", "DurableQueue.", "_Txn.")),
    ("client_wait", ("_wait_end ", "LocalPlatform.result ")),
    ("engine", ("runtime/",)),
    ("platform", ("unumctl/local/",)),
)


def categorize(frames: list[str]) -> str:
    for name, keys in OWNERS:
        if any(k in frame for frame in frames for k in keys):
            return name
    for frame in reversed(frames):
        for name, keys in RULES:
            if any(k in frame for k in keys):
                return name
    return "other"


def summarize(path: str) -> dict:
    out: dict[str, Counter] = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not n.isdigit():
                continue
            frames = stack.split(";")
            for role, root in ROLES:
                idx = next((i for i, fr in enumerate(frames) if fr.startswith(root)), None)
                if idx is not None:
                    out.setdefault(role, Counter())[categorize(frames[idx:])] += int(n)
                    break
    report = {}
    for role, c in out.items():
        total = sum(c.values())
        report[role] = {"samples": total,
                        "percent": {k: round(100 * v / total, 1) for k, v in c.most_common()}}
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", help="py-spy record -f raw output")
    args = ap.parse_args(argv)
    print(json.dumps(summarize(args.raw), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
