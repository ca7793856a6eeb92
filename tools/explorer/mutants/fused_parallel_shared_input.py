"""The branches of a fused Parallel region share one input object instead of each its own
copy: every branch after the first gets the object `runtime.fusion.compose` gave branch 0's
first member, as branch 0 left it, so what one branch's handler changes in place is the next
branch's input (issue 33: "fused Parallel branches sharing one input object", which the
explorer missed until its handlers changed their input: workflow mutating-fused-parallel)."""

import threading

from runtime import fusion

NAME = "fused-parallel-shared-input"
ABOUT = "a fused Parallel region's branches share one input object (one branch's in-place change leaks)"
WORKFLOWS = ["mutating-fused-parallel"]
TESTS = ["tests/runtime/test_fusion_parallel.py"]
INVISIBLE = None

_SHARED = threading.local()  # region start -> the input object its branch 0 got, per thread


def _heads(steps) -> dict[str, tuple[int, int]]:
    """The first member of each branch of each parallel region: function -> (index of the
    region's first step, branch number)."""
    out, start, b = {}, None, 0
    for i, s in enumerate(steps):
        if s.kind == "branch":
            if start is None:
                start, b = i, 0
            else:
                b += 1
            out[s.function] = (start, b)
        elif s.kind == "join":
            start = None
    return out


def _sharing(h, region: int, branch: int):
    def handler(event, ctx):
        table = _SHARED.__dict__.setdefault("regions", {})
        if branch == 0:
            table[region] = event
        else:
            event = table.get(region, event)
        return h(event, ctx)
    return handler


def apply(p):
    def make_compose(orig):
        def compose(fz, handlers):
            heads = _heads(fz.steps)
            if not heads:
                return orig(fz, handlers)
            mine = {fn: (_sharing(h, *heads[fn]) if fn in heads else h) for fn, h in handlers.items()}
            return orig(fz, mine)
        return compose

    p.replace(fusion, "compose", make_compose)
