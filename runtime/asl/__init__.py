"""Amazon States Language semantics for compiled Step Functions state machines.

`machine` interprets states (I/O processing, Choice, Wait, Retry/Catch, Map/Parallel
fan-out inputs and joins), `paths` evaluates JSONPath with jsonpath-ng, `intrinsics` the
`States.*` intrinsic functions, `choice` Choice rules, and `wrapper` is the IR `Wrapper`
of Kind "asl" that runs them around the user code (registered in runtime.wrappers).
"""

__all__: list[str] = []  # submodules only
