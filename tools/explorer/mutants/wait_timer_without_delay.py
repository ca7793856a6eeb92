"""A continuation whose edge has a `Delay` (the timer of an ASL Wait state: the Wait's function
invoked `AslDelay` seconds later, unumctl/asl/compiler.py) is invoked at once: the Wait's
function runs with the wait counted as elapsed, and the states after the Wait (their user
code) run before the Wait's due time."""

from runtime.engine import Engine

NAME = "wait-timer-without-delay"
ABOUT = "Engine._continue posts every continuation with delay 0 (a Wait's timer fires at once)"
WORKFLOWS = ["sfn-wait"]
TESTS = ["tests/unumctl/asl/test_compiler.py"]
INVISIBLE = None
# the default schedule shows it: Ask's user code runs as soon as Plan has committed
BOUNDS = {"dups": 0, "crashes": 0, "preemptions": 0, "expiries": 0}


def apply(p):
    def make(orig):
        def _continue(self, ex, own, plan):
            for c in plan.calls:
                c.delay = 0.0
            return orig(self, ex, own, plan)
        return _continue
    p.replace(Engine, "_continue", make)
