"""GC deletes a parent's blobs before it tombstones the parent's checkpoint: a crash (or a
kill before the local transaction commits) in between leaves a readable checkpoint whose
blob is gone."""

from runtime import gc as gc_module

NAME = "blob-delete-before-tombstone"
ABOUT = "runtime.gc.Collector.collect deletes parent blobs first, then tombstones"
WORKFLOWS = ["blobs", "chain-blob-txn"]
TESTS = ["tests/runtime/test_engine_commit_point.py", "tests/runtime/local/test_datastore_deferred_commit.py"]
INVISIBLE = None


def apply(p):
    def make(orig):
        def collect(self, session, instance, parents, own_set, input_blob, expiry, created):
            if self.mode != "none":
                for parent in parents:
                    if parent.blobs:
                        self.blobs.delete(session, parent.blobs)
            return orig(self, session, instance, parents, own_set, input_blob, expiry, created)
        return collect
    p.replace(gc_module.Collector, "collect", make)
