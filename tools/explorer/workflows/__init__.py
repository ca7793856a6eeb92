"""The workflows the explorer runs: small IR apps (ir_apps), compiled Step Functions
state machines (sfn_apps), k-of-n fan-ins (quorum) and shuffle groups (shuffle_apps).
`all_workflows()` returns them by name, in a fixed order."""

from __future__ import annotations

from ..model import WorkflowSpec


def all_workflows() -> dict[str, WorkflowSpec]:
    """Every workflow, by name (built fresh: specs hold compiled IR objects)."""
    from .fanin import fanin_workflows  # issue 33: plain fan-ins under gc eager
    from .fused import fused_workflows  # issue 25: fusion and batching
    from .fused_sfn import fused_sfn_workflows  # issue 25: fused compiled Step Functions Task chains
    from .ir_apps import ir_workflows
    from .quorum import quorum_workflows
    from .sfn_apps import sfn_workflows
    from .shuffle_apps import shuffle_workflows
    out: dict[str, WorkflowSpec] = {}
    for wf in ir_workflows() + sfn_workflows() + quorum_workflows() + shuffle_workflows() + fused_workflows() + fused_sfn_workflows() \
            + fanin_workflows():
        out[wf.name] = wf
    from .mutating import mutating_workflows  # issue 33: handlers that change their input in place
    for wf in mutating_workflows():
        out[wf.name] = wf
    return out
