"""An execution that loses the commit keeps the blobs it wrote before it (it should delete
those the winner's item does not name)."""

from runtime.engine import Engine

from . import PortProxy, in_phase, mark_phase, wrap_engine_ports

NAME = "loser-keeps-pre-commit-blobs"
ABOUT = "blob deletes made while committing (the loser's cleanup) do nothing"
WORKFLOWS = ["blobs", "blobs-none"]
TESTS = ["tests/runtime/test_engine_commit_point.py", "tests/unumctl/test_build_inputs.py"]
INVISIBLE = None  # a loser of the result commit that finds the session ended leaks its blob (d)


class KeepBlobs(PortProxy):
    def delete(self, session, refs):
        if in_phase("commit"):
            return None
        return self._inner.delete(session, refs)


def apply(p):
    mark_phase(p, Engine, "_commit", "commit")
    mark_phase(p, Engine, "_commit_result", "commit")
    wrap_engine_ports(p, blobs=KeepBlobs)
