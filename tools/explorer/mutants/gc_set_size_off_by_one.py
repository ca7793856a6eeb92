"""runtime/gc.py collects a parent with n > 1 consumers once its GC set `gc/<parent>` holds
n - 1 of them: the parent's checkpoint is gone while one child has not checkpointed, so a
redelivery of the parent (killed before it invoked that child) drops and the child is never
invoked (seed 001 §3.5: "a checkpoint may be deleted once every child it invoked has
checkpointed")."""

from runtime import gc
from runtime.payload import checkpoint_key, gc_key

NAME = "gc-set-size-off-by-one"
ABOUT = "a fan-out parent is collected when its GC set holds consumers - 1 members"
WORKFLOWS = ["fanout", "map-glob"]
BOUNDS = {"dups": 0, "crashes": 1, "preemptions": 0}
TESTS = ["tests/runtime/test_gc.py"]
INVISIBLE = None


def apply(p):
    def make(orig):
        def collect(self, session, instance, parents, own_set, input_blob, expiry, created):
            """runtime.gc.Collector.collect with the set-size comparison off by one."""
            if self.mode == "none":
                return
            if own_set is not None:
                self.ds.delete(session, [own_set])
            if input_blob is not None:
                self.blobs.delete(session, [input_blob])
            for parent in parents:
                if parent.consumers > 1:
                    size = self.ds.set_add(session, gc_key(parent.name), instance, expiry())
                    created.append(gc_key(parent.name))
                    if size < parent.consumers - 1:  # the mutation: `< parent.consumers`
                        continue
                if self.mode == "safe":
                    self.ds.put(session, checkpoint_key(parent.name), {"gc": True}, expiry())
                    created.append(checkpoint_key(parent.name))
                else:
                    self.ds.delete(session, [checkpoint_key(parent.name)])
                if parent.blobs:
                    self.blobs.delete(session, parent.blobs)
                if parent.consumers > 1:
                    self.ds.delete(session, [gc_key(parent.name)])
        return collect
    p.replace(gc.Collector, "collect", make)
