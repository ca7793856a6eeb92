"""Systematic interleaving explorer for the Unum runtime (issue 8; docs/explorer.md).

    python tools/explore.py [--workflow NAME[,NAME...]] [--budget N] [--json]
                            [--dups D] [--crashes C] [--preemptions P] [--seconds S]
                            [--save-traces DIR]
    python tools/explore.py --replay FILE
    python tools/explore.py --list

Runs the real runtime.engine.Engine against in-memory ports under a deterministic
scheduler, enumerating bounded schedules (duplicates, crashes, preemptions, expiry,
item-by-item multi-reads) with sleep-set reduction, and checks invariants (a)-(e) on
each. Prints, per workflow, the schedules explored, whether the bounded space was
exhausted, the wall time and the violations by class with one replayable trace each.
Exit status 1 when a violation was found.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.explorer.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
