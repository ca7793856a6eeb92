"""The floor of a local chain transition on this machine: what the local target cannot avoid
per transition, timed in a plain Python loop (issue 13, item 1).

    python bench/floor.py [--n 20000] [--rtt 20000]
    python bench/floor.py --chain [--steps 100] [--sessions 20]   # then bench/local_perf.py chain

Per chain transition the local target (runtime/local/datastore.py, gc `safe`) does at least:
- a WAL read: one SELECT of its own checkpoint and the result (`get_many`, one statement;
  the engine reads `result` in a second SELECT after the checkpoint, docs/protocol.md "Why
  the invariants hold" 1, which a snapshot read of both avoids, so the floor counts one),
- a create-if-absent: BEGIN IMMEDIATE; INSERT OR IGNORE; COMMIT (the commit point),
- a tombstone: BEGIN IMMEDIATE; INSERT OR REPLACE of the parent's checkpoint by {"gc": true}; COMMIT,
on the app's SQLite file (WAL, synchronous=NORMAL, the same schema), and hands the next
invocation to another process: a socket round trip between two processes.

Timed here, each N times on a fresh database in a temporary directory:
- `sqlite_*_us`: the statements above on a raw sqlite3 connection with the datastore's pragmas
  and schema (the floor) and, for reference, through `SqliteDatastore` itself (its JSON and
  locking included);
- `rtt_us`: a 64-byte ping-pong over an AF_UNIX stream socketpair between this process and a
  forked child (the floor), and over multiprocessing.connection (what the local platform's
  listener uses) for reference; median of N round trips.
floor per transition = read + create + tombstone + one round trip (raw).

With --chain, bench/local_perf.py's chain benchmark runs right after in the same process
(same machine state) and both numbers are printed with their ratio. Numbers are printed as
JSON lines, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.local.datastore import SCHEMA, SqliteDatastore  # noqa: E402


def _timed(fn, n: int) -> float:
    """Mean µs per call of fn(i) over n calls (after n // 10 warm-up calls)."""
    for i in range(-(n // 10) - 1, 0):
        fn(i)
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) / n * 1e6


def sqlite_floor(n: int) -> dict:
    """µs per read / create-if-absent / tombstone on a raw connection and through SqliteDatastore."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(str(Path(tmp) / "raw.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        item = '{"v":{"x":1},"ctx":{}}'
        tomb = '{"gc":true}'

        def create(i):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR IGNORE INTO items VALUES (?,?,?,?)", ("s", f"F{i}", item, 1e12))
            db.execute("COMMIT")

        def read(i):  # one statement: its own snapshot (as SqliteDatastore.get_many)
            db.execute("SELECT name, item FROM items WHERE session=? AND name IN (?)", ("s", f"F{i}")).fetchall()

        def tombstone(i):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR REPLACE INTO items VALUES (?,?,?,?)", ("s", f"F{i}", tomb, 1e12))
            db.execute("COMMIT")

        out["sqlite_create_us"] = _timed(create, n)
        out["sqlite_read_us"] = _timed(read, n)
        out["sqlite_tombstone_us"] = _timed(tombstone, n)
        db.close()
        ds = SqliteDatastore(Path(tmp) / "ds.db")
        value = {"v": {"x": 1}, "ctx": {}}
        out["datastore_create_us"] = _timed(lambda i: ds.create_if_absent("s", f"F{i}", value, 1e12), n)
        out["datastore_read_us"] = _timed(lambda i: ds.get_many("s", [f"F{i}"]), n)
        out["datastore_tombstone_us"] = _timed(lambda i: ds.put("s", f"F{i}", {"gc": True}, 1e12), n)
        ds.close()
    return {k: round(v, 2) for k, v in out.items()}


def socket_rtt(n: int) -> float:
    """Median µs of a 64-byte round trip over an AF_UNIX socketpair to a forked child."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # child: echo until EOF
        a.close()
        try:
            while data := b.recv(64):
                b.sendall(data)
        finally:
            os._exit(0)
    b.close()
    msg = b"x" * 64
    times = []
    try:
        for _ in range(n // 10):
            a.sendall(msg)
            a.recv(64)
        for _ in range(n):
            t0 = time.perf_counter()
            a.sendall(msg)
            got = 0
            while got < 64:
                got += len(a.recv(64 - got))
            times.append(time.perf_counter() - t0)
    finally:
        a.close()
        os.waitpid(pid, 0)
    return statistics.median(times) * 1e6


def connection_rtt(n: int) -> float:
    """Median µs of a small-object round trip over multiprocessing.connection (AF_UNIX) to a
    forked child: the mechanism of the local platform's listener (unumctl/local/platform.py)."""
    from multiprocessing.connection import Client, Listener

    with tempfile.TemporaryDirectory() as tmp:
        address = str(Path(tmp) / "floor.sock")
        listener = Listener(address, family="AF_UNIX")
        pid = os.fork()
        if pid == 0:
            try:
                conn = Client(address, family="AF_UNIX")
                while True:
                    try:
                        conn.send(conn.recv())
                    except EOFError:
                        break
            finally:
                os._exit(0)
        conn = listener.accept()
        msg = {"kind": "invoke", "id": 1}
        times = []
        try:
            for _ in range(n // 10):
                conn.send(msg)
                conn.recv()
            for _ in range(n):
                t0 = time.perf_counter()
                conn.send(msg)
                conn.recv()
                times.append(time.perf_counter() - t0)
        finally:
            conn.close()
            listener.close()
            os.waitpid(pid, 0)
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="SQLite operations of each kind")
    ap.add_argument("--rtt", type=int, default=20000, help="round trips")
    ap.add_argument("--chain", action="store_true", help="then run bench/local_perf.py chain and compare")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--gc", default="safe")
    args = ap.parse_args(argv)
    sq = sqlite_floor(args.n)
    rtt = socket_rtt(args.rtt)
    conn = connection_rtt(args.rtt)
    floor = sq["sqlite_read_us"] + sq["sqlite_create_us"] + sq["sqlite_tombstone_us"] + rtt
    row = {**sq, "rtt_us": round(rtt, 2), "connection_rtt_us": round(conn, 2),
           "floor_us_per_transition": round(floor, 1), "cpus": os.cpu_count(),
           "loadavg": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(row))
    if args.chain:
        sys.path.insert(0, str(ROOT / "bench"))
        from local_perf import bench_chain

        chain = bench_chain(args.steps, args.sessions, args.gc)
        print(json.dumps(chain))
        over_us = chain["overhead_ms_per_transition"] * 1000
        print(json.dumps({"overhead_us_per_transition": round(over_us, 1), "floor_us_per_transition": round(floor, 1),
                          "overhead_over_floor": round(over_us / floor, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
