"""A quorum slot is claimed by a read then a put instead of an atomic create: two branches
that read slot k free at once both take it, and both fire the target, with different inputs."""

from . import MutantNotApplicable

NAME = "quorum-claim-not-atomic"
ABOUT = "a Quorum slot is claimed by get + put (not create_if_absent): two branches can both be k-th"
WORKFLOWS = ["quorum-first", "quorum"]
BOUNDS = {"dups": 0, "crashes": 0, "preemptions": 1}
TESTS = ["tests/runtime/triggers/test_quorum.py"]
INVISIBLE = None


def apply(p):
    try:
        from runtime.triggers import quorum
    except ImportError as exc:
        raise MutantNotApplicable(f"runtime.triggers.quorum: {exc}") from None

    def make(orig):
        def claim(ds, session, key, member, expires_at):
            held = ds.get(session, key)
            if held is not None:
                return False, str(held.get("member"))
            ds.put(session, key, {"member": member}, expires_at)
            return True, member
        return claim
    p.replace(quorum, "claim", make)
