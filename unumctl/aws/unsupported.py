"""What the aws target refuses at model time (validate, plan), each in one line naming the
state and the fix (docs/stepfunctions.md "What the aws target refuses").

`states:startExecution.sync` / `.sync:2`: the parent's Task suspends until the child's end
completes its task token through the Step Functions callback API at `UNUM_SFN_ENDPOINT`
(runtime/asl/integrations/states.py). `unumctl serve` provides that endpoint; a deployed
Lambda has none: the child would start on the real Step Functions API with an extra
`UnumParentTask` field, nothing would ever complete the parent's token, and without
`TimeoutSeconds` the session would stay RUNNING forever. Request-response
`states:startExecution` and `.waitForTaskToken` (the child or another party completes the
token) are not refused.
"""

from __future__ import annotations

from ..manifest import App, AppError

__all__ = ["refuse_suspending_integrations"]


def refuse_suspending_integrations(app: App) -> None:
    """Raise AppError (one line: the manifest, the state's path, the resource, the fix) for the
    first integration Task of the app's state machine that suspends until another execution
    ends (runtime.asl.integrations.suspends: `states:startExecution.sync` and `.sync:2`);
    nothing for an IR app or a machine without one."""
    from runtime.asl.integrations import registry as integrations

    for f in app.workflow.functions.values():
        w = f.asl
        if w is None:
            continue
        for where, res in integrations.inline_tasks(w.definition):
            if integrations.suspends(integrations.find(res)):
                state = where.rsplit("States.", 1)[-1]
                raise AppError(
                    f"{app.root / 'unumctl.yaml'}: workflow.stepfunctions: state {state!r} ({where}.Resource): "
                    f"{res} waits for the child execution's end, which the aws target cannot observe "
                    "(a deployed function has no Step Functions endpoint to complete the parent's task token, "
                    "so the session would never finish); use arn:aws:states:::states:startExecution "
                    "(request-response) or .waitForTaskToken with the child sending SendTaskSuccess, "
                    "or run it with unumctl serve")
        return  # every compiled function carries the whole definition
