"""A batched Map ignores its batch offset: the items of every batch run with the indexes
0..k-1 instead of Offset + 0..k-1 (runtime.fusion.compose with `BatchIn`; docs/fusion.md
"batched Map"), so `$$`/context indexes, and what the user code derives from them, repeat
from one batch to the next (issue 33: "a batched Map ignoring its offset")."""

from runtime import fusion

NAME = "batched-map-ignores-offset"
ABOUT = "a batched Map's items get their index within the batch, not offset + position"
WORKFLOWS = ["batched-map", "mutating-batched-map"]
TESTS = ["tests/runtime/test_fusion.py"]
INVISIBLE = None


def apply(p):
    def make_compose(orig):
        def compose(fz, handlers):
            fused = orig(fz, handlers)
            if not fz.batch_in:
                return fused

            def handler(event, ctx):
                if isinstance(event, dict) and fusion.BATCH_OFFSET in event:
                    event = {**event, fusion.BATCH_OFFSET: 0}
                return fused(event, ctx)
            return handler
        return compose

    p.replace(fusion, "compose", make_compose)
