"""The quorum's slots are deleted when its k-th member fires the target: a straggler that
commits later finds slot 1 free, claims it and (k = 1) fires the target a second time, with
another input list (the module docstring of runtime/triggers/quorum.py: "Slots stay")."""

from . import MutantNotApplicable

NAME = "quorum-slots-freed-on-firing"
ABOUT = "the Quorum slots are deleted when the target fires (a later straggler starts a second quorum)"
WORKFLOWS = ["quorum-first", "quorum"]
BOUNDS = {"dups": 0, "crashes": 0, "preemptions": 0}
TESTS = ["tests/runtime/triggers/test_quorum.py"]
INVISIBLE = None


def apply(p):
    try:
        from runtime.payload import frames_name
        from runtime.triggers import quorum
    except ImportError as exc:
        raise MutantNotApplicable(f"runtime.triggers.quorum: {exc}") from None

    def make(orig):
        def fire(self, engine, ex, own, plan, c, context, depth):
            fired = orig(self, engine, ex, own, plan, c, context, depth)
            if fired.calls:  # this branch holds rank k: it fires the target
                target = frames_name(c.target, c.frames, c.iteration)
                engine.ds.delete(ex.session, [quorum.slot_key(target, r) for r in range(1, c.quorum + 1)])
            return fired
        return fire
    p.replace(quorum.Quorum, "fire", make)
