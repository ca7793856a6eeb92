"""Which fields each Amazon States Language object may have (statelint-style unknown-field
check).

Source: ASL spec (https://states-language.net/spec.html) "Top-level fields", "Common State
Fields" and each state type's section, and the AWS Step Functions developer guide pages of
each state type (which add `Credentials`, `ItemReader`, `ItemBatcher`, `ResultWriter`,
`Label`, the `*Path` forms of Map limits and the JSONata fields `QueryLanguage`,
`Arguments`, `Output`, `Assign`, `Items`, `Condition`). The tables list every field AWS
accepts; whether a field may be used in the state's query language, and whether unumctl
runs it, is checked elsewhere (unumctl.asl.validate).
"""

from __future__ import annotations

from runtime.asl.choice import OPERATORS

__all__ = ["BRANCH_FIELDS", "CATCHER_FIELDS", "MACHINE_FIELDS", "PROCESSOR_FIELDS", "RETRIER_FIELDS",
           "RULE_FIELDS", "STATE_FIELDS", "unknown"]

_COMMON = {"Type", "Comment", "QueryLanguage"}
_FLOW = {"Next", "End"}
_IO = {"InputPath", "OutputPath"}
_RESULT = {"ResultPath", "Parameters", "ResultSelector"}
_JSONATA = {"Output", "Assign"}

STATE_FIELDS: dict[str, frozenset[str]] = {
    "Pass": frozenset(_COMMON | _FLOW | _IO | _JSONATA | {"ResultPath", "Parameters", "Result"}),
    "Task": frozenset(_COMMON | _FLOW | _IO | _RESULT | _JSONATA | {
        "Resource", "Retry", "Catch", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds",
        "HeartbeatSecondsPath", "Credentials", "Arguments"}),
    "Choice": frozenset(_COMMON | _IO | _JSONATA | {"Choices", "Default"}),
    "Wait": frozenset(_COMMON | _FLOW | _IO | _JSONATA | {
        "Seconds", "SecondsPath", "Timestamp", "TimestampPath"}),
    "Succeed": frozenset(_COMMON | _IO | {"Output"}),
    "Fail": frozenset(_COMMON | {"Error", "ErrorPath", "Cause", "CausePath"}),
    "Parallel": frozenset(_COMMON | _FLOW | _IO | _RESULT | _JSONATA | {
        "Branches", "Retry", "Catch", "Arguments"}),
    "Map": frozenset(_COMMON | _FLOW | _IO | _RESULT | _JSONATA | {
        "Retry", "Catch", "Iterator", "ItemProcessor", "ItemsPath", "Items", "ItemSelector",
        "ItemReader", "ItemBatcher", "ResultWriter", "MaxConcurrency", "MaxConcurrencyPath",
        "ToleratedFailureCount", "ToleratedFailureCountPath", "ToleratedFailurePercentage",
        "ToleratedFailurePercentagePath", "Label"}),
}

# the top level, a Parallel branch, a Map's ItemProcessor / Iterator
MACHINE_FIELDS = frozenset({"StartAt", "States", "Comment", "Version", "TimeoutSeconds",
                            "QueryLanguage"})
BRANCH_FIELDS = frozenset({"StartAt", "States", "Comment", "QueryLanguage"})
PROCESSOR_FIELDS = BRANCH_FIELDS | {"ProcessorConfig"}

RETRIER_FIELDS = frozenset({"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
                            "MaxDelaySeconds", "JitterStrategy", "Comment"})
CATCHER_FIELDS = frozenset({"ErrorEquals", "Next", "ResultPath", "Comment", "Output", "Assign"})
# a Choice rule: top-level rules add Next (and, in JSONata, Condition / Output / Assign)
RULE_FIELDS = frozenset(OPERATORS | {"Variable", "And", "Or", "Not", "Comment", "Next",
                                     "Condition", "Output", "Assign"})


def unknown(obj: dict, allowed: frozenset[str]) -> list[str]:
    """The keys of `obj` that are not in `allowed`, in the object's order (non-string keys,
    as YAML may produce, are reported as their repr)."""
    return [k if isinstance(k, str) else repr(k) for k in obj if k not in allowed]
