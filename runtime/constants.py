"""Constants of the invocation names that the IR, the payload and the planner share (a leaf
module: it imports nothing, so every core module may import it).

`<fn>-UnumIndex-<outer>.<...>.<inner>` (seed 000 Appendix B.2.1) and the iteration suffix
`-UnumIter-<k>` (seed 001 §3.6); docs/ir.md "Invocation names". Function names cannot contain
'-', so neither separator can occur inside one (runtime/ir.py `_NAME_RE`).
"""

__all__ = ["INDEX_SEP", "ITER_SEP"]

INDEX_SEP = "-UnumIndex-"  # between a function name and its fan-out indexes
ITER_SEP = "-UnumIter-"    # before a name's iteration counter
