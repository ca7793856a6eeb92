"""A fused group commits its FIRST member's output as the group's checkpoint while the
execution that committed it plans the last member's edges on the value it computed: the
checkpoint no longer holds what the continuations were planned from (issue 25, fusion)."""

import json

from runtime import fusion
from runtime.engine import Engine

NAME = "fused-commits-intermediate"
ABOUT = "a fused group checkpoints its first member's output, not the last one's (one commit point broken)"
WORKFLOWS = ["fused-chain", "fused-fanin-branch"]
TESTS = ["tests/runtime/test_fusion.py"]
INVISIBLE = None

_KEY = "UnumMutantIntermediate"


def apply(p):
    def make_compose(orig):
        def compose(fz, handlers):
            full = orig(fz, handlers)
            s = fz.steps
            if len(s) < 2 or s[1].kind != "scalar" or fz.batch_in or fz.flatten_in:
                return full
            rest = orig(fusion.Fusion((fusion.Step(s[1].function, s[1].handler, "first"),) + s[2:],
                                      batch_out=fz.batch_out), handlers)

            def handler(event, ctx):
                first = json.loads(json.dumps(handlers[s[0].function](event, ctx)))
                ctx.extra[_KEY] = first
                return rest(first, ctx)
            return handler
        return compose

    def make_run(orig):
        def _run(self, ex, event):
            item, plan, value = orig(self, ex, event)
            inter = ex.ctx.extra.pop(_KEY, None)
            if inter is not None and "v" in item:
                item["v"] = inter
                if not item.get("x"):
                    item.pop("x", None)
            return item, plan, value
        return _run

    p.replace(fusion, "compose", make_compose)
    p.replace(Engine, "_run", make_run)
