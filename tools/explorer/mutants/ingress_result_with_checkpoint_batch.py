"""The ingress reads `result` in the same `get_many` as its own checkpoint and inputs, instead
of after that read returned (docs/protocol.md "One execution", 1; runtime/engine.py
`_ingress`): a multi-item read is not a snapshot, so `result` can be served before the final
sweep and the checkpoint after it, and a late duplicate of a committed invocation runs its
user code in an ended session (issue 33: "an ingress that reads `result` and the checkpoint
in one batch"; issue 22 defect 5)."""

from runtime.engine import Engine
from runtime.payload import RESULT_KEY

from . import DatastoreProxy

NAME = "ingress-result-with-checkpoint-batch"
ABOUT = "the ingress reads `result` and its checkpoint in one get_many batch"
WORKFLOWS = ["chain"]
TESTS = ["tests/runtime/test_engine_late_duplicate.py"]
INVISIBLE = None


class _OneBatch(DatastoreProxy):
    """Answers the ingress's first read and its read of `result` from one get_many of both."""

    def __init__(self, inner):
        super().__init__(inner)
        self._result = None
        self._batched = False

    def get_many(self, session, names):
        if not self._batched and RESULT_KEY not in names:
            self._batched = True
            got = self._inner.get_many(session, list(names) + [RESULT_KEY])
            self._result = (got[-1],)
            return got[:-1]
        return self._inner.get_many(session, names)

    def get(self, session, name):
        if name == RESULT_KEY and self._result is not None:
            (item,) = self._result
            self._result = None
            return item
        return self.get_many(session, [name])[0]


def apply(p):
    def make(orig):
        def _ingress(self, ex):
            if not (self.checkpointing and not self.result_commit):
                return orig(self, ex)  # already one read: [inputs..., result]
            real = self.ds
            self.ds = _OneBatch(real)
            try:
                return orig(self, ex)
            finally:
                self.ds = real
        return _ingress

    p.replace(Engine, "_ingress", make)
