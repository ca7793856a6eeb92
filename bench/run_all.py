"""Run the local benchmarks and print their numbers (`make bench`). Nothing is asserted.

    python bench/run_all.py

1. datastore operations per transition (chain, Map fan-out + fan-in; gc safe/eager);
2. the floor of a chain transition on this machine (SQLite read, create, tombstone and a
   process round trip: bench/floor.py), then the 100-step chain of no-op functions:
   orchestration overhead per transition, beside it;
3. Map + fan-in of no-op functions with 100, 1,000 and 10,000 branches: seconds, cost per
   branch, peak memory of the local target;
4. a 1,000-item Step Functions Map of Pass/Choice/Succeed states (inline, one invocation).
The cloud benchmarks need their emulators and are run on their own: bench/aws_calls.py,
bench/aws_cost.py, bench/gcp_calls.py (see docs).
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    steps = [["datastore_ops.py"],
             ["floor.py", "--chain", "--steps", "100", "--sessions", "30", "--gc", "safe"],
             ["local_perf.py", "chain", "--steps", "100", "--sessions", "30", "--gc", "eager"],
             ["local_perf.py", "map", "--branches", "100,1000,10000"],
             ["asl_inline_map.py", "--items", "1000", "--sessions", "20"],
             ["shuffle_scale.py"]]
    code = 0
    for args in steps:
        print(f"$ python bench/{' '.join(args)}", flush=True)
        code |= subprocess.call([sys.executable, str(HERE / args[0]), *args[1:]])
    return code


if __name__ == "__main__":
    sys.exit(main())
