"""Applies the engine mutant named by UNUM_MUTANT in every Python process started with this
directory on PYTHONPATH (tools/explorer/mutants/run.py runs the test suite so, local worker
processes included). Does nothing without UNUM_MUTANT."""

import os
import sys

_name = os.environ.get("UNUM_MUTANT")
if _name:
    _root = os.environ.get("UNUM_MUTANT_ROOT")
    if _root and _root not in sys.path:
        sys.path.insert(0, _root)
    from tools.explorer.mutants import apply as _apply

    _apply(_name)
