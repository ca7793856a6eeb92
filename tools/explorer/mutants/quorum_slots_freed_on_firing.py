"""The quorum's slots are deleted when its k-th member fires the target: a straggler that
commits later finds slot 1 free, claims it and (k = 1) fires the target a second time, with
another input list (the module docstring of runtime/triggers/quorum.py: "Slots stay")."""

from runtime.engine import Engine

from . import MutantNotApplicable

NAME = "quorum-slots-freed-on-firing"
ABOUT = "the Quorum slots are deleted when the target fires (a later straggler starts a second quorum)"
WORKFLOWS = ["quorum-first", "quorum"]
BOUNDS = {"dups": 0, "crashes": 0, "preemptions": 0}
TESTS = ["tests/test_quorum.py"]
INVISIBLE = None


def apply(p):
    try:
        from runtime.payload import frames_name
        from runtime.triggers import quorum
    except ImportError as exc:
        raise MutantNotApplicable(f"runtime.triggers.quorum: {exc}") from None

    def make(orig):
        def _join_quorum(self, ex, own, plan, c, context, depth):
            fired = orig(self, ex, own, plan, c, context, depth)
            if fired is not None:
                target = frames_name(c.target, c.frames, c.iteration)
                self.ds.delete(ex.session, [quorum.slot_key(target, r) for r in range(1, c.quorum + 1)])
            return fired
        return _join_quorum
    p.replace(Engine, "_join_quorum", make)
