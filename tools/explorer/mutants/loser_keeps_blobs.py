"""An execution that loses the commit keeps the blobs it wrote before it (it should delete
those the winner's item does not name)."""

from runtime.engine import Engine

from . import PortProxy, in_phase, mark_phase, wrap_engine_ports

NAME = "loser-keeps-pre-commit-blobs"
ABOUT = "blob deletes made while committing (the loser's cleanup) do nothing"
WORKFLOWS = ["blobs", "blobs-none"]
TESTS = ["tests/test_exactly_once.py", "tests/test_leaks.py"]
INVISIBLE = ("the loser's blobs are content-addressed under its own keys, which no committed "
             "item names, and they are written after the BLOBS_MARKER, so the final sweep (or, "
             "late, the loser's own late-write cleanup; under gc none the lifecycle rule) removes "
             "them: a user sees no value change and nothing outlives the session's item lifetime")


class KeepBlobs(PortProxy):
    def delete(self, session, refs):
        if in_phase("commit"):
            return None
        return self._inner.delete(session, refs)


def apply(p):
    mark_phase(p, Engine, "_commit", "commit")
    mark_phase(p, Engine, "_commit_result", "commit")
    wrap_engine_ports(p, blobs=KeepBlobs)
