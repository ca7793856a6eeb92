"""A fused Parallel region runs its branches in reverse order: branch i's members get branch
n-1-i's index and the join gets the branch outputs reversed (issue 25, fusion of a
Parallel region; runtime.fusion.compose)."""

from dataclasses import replace

from runtime import fusion

NAME = "fused-parallel-reversed"
ABOUT = "a fused Parallel region runs its branches in reverse order (indexes and the join's list swapped)"
WORKFLOWS = ["fused-parallel-region"]
TESTS = ["tests/runtime/test_fusion_parallel.py"]
INVISIBLE = None


def apply(p):
    def make_compose(orig):
        def compose(fz, handlers):
            steps, out, i = fz.steps, [], 0
            while i < len(steps):
                if steps[i].kind == "branch":
                    branches, j = fusion.parallel_region(steps, i)
                    out += [s for b in reversed(branches) for s in b] + [steps[j]]
                    i = j + 1
                else:
                    out.append(steps[i])
                    i += 1
            return orig(replace(fz, steps=tuple(out)), handlers)
        return compose

    p.replace(fusion, "compose", make_compose)
