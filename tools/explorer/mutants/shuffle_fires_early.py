"""A shuffle stage fires before every producer has committed, with the producers that have
(Pheromone's DynamicGroup triggered on a partial group): a consumer misses values."""

import runtime.triggers.shuffle
from runtime.payload import RefList
from runtime.plan import Planner

NAME = "shuffle-fires-early"
ABOUT = "the shuffle stage fires at N-1 producers, grouping only the committed ones"
WORKFLOWS = ["shuffle"]
TESTS = ["tests/runtime/triggers/test_shuffle.py"]
INVISIBLE = None


class _Early(RefList):
    def distinct(self) -> int:
        return max(1, len(self) - 1)


class _Committed:
    """The producers whose checkpoints exist (what the mutant groups)."""

    def __init__(self, names, keys):
        self._names, self._keys = names, keys

    def names(self):
        return self._names

    def keys(self):
        return self._keys


def apply(p):
    def plan_early(orig):
        def _shuffle(self, i, e, value, pl):
            call = orig(self, i, e, value, pl)
            r = call.refs
            call.refs = _Early(r.parts, r.iteration, r.exits, r.bases)
            return call
        return _shuffle

    def fire_partial(orig):
        def fire_stage(engine, ex, call, context, depth):
            items = engine.ds.get_many(ex.session, call.refs.keys())
            have = [(n, k) for n, k, it in zip(call.refs.names(), call.refs.keys(), items) if it is not None]
            call.refs = _Committed([n for n, _ in have], [k for _, k in have])
            return orig(engine, ex, call, context, depth)
        return fire_stage

    p.replace(Planner, "_shuffle", plan_early)
    p.replace(runtime.triggers.shuffle, "fire_stage", fire_partial)
