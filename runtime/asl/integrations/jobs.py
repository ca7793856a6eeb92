"""The Run a Job (`.sync`) pattern, one mechanism for every service that offers it, and the
request-response form of the same start actions.

Source: AWS Step Functions developer guide "Discover service integration patterns in Step
Functions", section "Run a Job (.sync)"
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html#connect-sync):
the Task calls the service's start action, then waits for the job to reach a terminal state;
a job that ends in a failed state fails the Task with `States.TaskFailed`, its cause the job's
description. The start action, the describe action Step Functions polls, the status field,
the terminal statuses and the `.sync` output are each service's, as its page documents:

| Resource (`arn:aws:states:::...`) | start API | describe API | status | succeeded / failed |
|---|---|---|---|---|
| `athena:startQueryExecution` (connect-athena.html) | StartQueryExecution | GetQueryExecution | `QueryExecution.Status.State` | SUCCEEDED / FAILED, CANCELLED |
| `batch:submitJob` (connect-batch.html) | SubmitJob | DescribeJobs | `jobs[0].status` | SUCCEEDED / FAILED |
| `glue:startJobRun` (connect-glue.html) | StartJobRun | GetJobRun | `JobRun.JobRunState` | SUCCEEDED / FAILED, STOPPED, TIMEOUT, ERROR, EXPIRED |
| `codebuild:startBuild` (connect-codebuild.html) | StartBuild | BatchGetBuilds | `builds[0].buildStatus` | SUCCEEDED / FAILED, FAULT, TIMED_OUT, STOPPED |
| `ecs:runTask` (connect-ecs.html) | RunTask | DescribeTasks | `tasks[0].lastStatus` | STOPPED with every essential container's exitCode 0 / STOPPED otherwise |
| `elasticmapreduce:createCluster` (connect-emr.html) | RunJobFlow | DescribeCluster | `Cluster.Status.State` | WAITING, RUNNING / TERMINATED, TERMINATED_WITH_ERRORS |
| `sagemaker:createTrainingJob` (connect-sagemaker.html) | CreateTrainingJob | DescribeTrainingJob | `TrainingJobStatus` | Completed / Failed, Stopped |
| `mediaconvert:createJob` (connect-mediaconvert.html) | CreateJob | GetJob | `Job.Status` | COMPLETE / ERROR, CANCELED |

The status values are the describe APIs' enums (Athena QueryExecutionState, Batch JobStatus,
Glue JobRunState, CodeBuild StatusType, ECS Task lastStatus, EMR ClusterState, SageMaker
TrainingJobStatus, MediaConvert JobStatus, in each service's API reference).

Polling: Step Functions learns most jobs' ends from EventBridge and documents no interval;
where it polls (Glue) AWS support states once a minute for the first 10 minutes, then every
5 minutes. unumctl polls from the function that runs the Task (no EventBridge rule to
deploy): after POLL_FIRST seconds, then each interval doubled up to POLL_MAX, with the
machine's clock (the virtual clock of a test passes the waits at once). The Task's
TimeoutSeconds bounds the wait (States.Timeout); without one the function's own timeout
does, so on the aws and gcp targets a job longer than the function's timeout needs the
request-response form and a polling loop in the machine.

Parameters are the start API's request in PascalCase (as the service page writes them;
runtime.asl.integrations.sdk.to_model maps them to the API model's names); results are in
PascalCase (sdk.from_model). The request-response form returns the start API's response
with SdkHttpMetadata / SdkResponseMetadata. Errors of the calls are `<Service>.<Exception>`.
At-least-once, like every integration: a re-executed Task starts the job again unless the
request carries the service's idempotency token (Athena ClientRequestToken, ECS
clientToken, MediaConvert ClientRequestToken) or a unique name (Glue, SageMaker).

IAM (each service page's "IAM policies" section): the start action, and for `.sync` the
describe action it polls; on `*`, the pages' "dynamic resources" form (the describe calls
name jobs created at run time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "JOBS", "NAME", "POLL_FIRST", "POLL_MAX", "Job", "call",
           "iam_statements", "match", "required", "wait"]

NAME = "jobs"
INLINE = True
CALLBACK = False  # the job services' .waitForTaskToken forms are not served
PREFIX = "arn:aws:states:::"
SYNC = ".sync"
POLL_FIRST = 1.0   # seconds before the first describe call
POLL_MAX = 60.0    # seconds: the longest interval between two describe calls


def _path(*keys: str) -> Callable[[Any], Any]:
    """The value at nested `keys` of a job description (None when absent)."""
    def get(r: Any) -> Any:
        for k in keys:
            r = r.get(k) if isinstance(r, dict) else None
        return r
    return get


def _ecs_ok(task: dict[str, Any]) -> bool:
    """An ECS task that stopped with every container's exit code 0 succeeded."""
    return all(c.get("exitCode", 0) == 0 for c in task.get("containers", []))


@dataclass(frozen=True)
class Job:
    """One service's Run a Job row: `service` (boto3 name), `start` / `describe` (API
    names), `prefix` (error-name prefix), `describe_args(started)` (the describe request,
    in the API model's names, from the start response with the start request under
    `_params`), `at` (where the job's description sits in the describe response: member
    names, 0 for a list's first element), `wrap` (the member the `.sync` output puts the
    description under, or None: the description itself), `status(description)`,
    `succeeded` / `failed` (terminal statuses), `ok(description)` (a further success test
    on a terminal succeeded status)."""

    service: str
    start: str
    describe: str
    prefix: str
    describe_args: Callable[[dict[str, Any]], dict[str, Any]]
    at: tuple[str | int, ...]
    status: Callable[[Any], Any]
    succeeded: frozenset[str]
    failed: frozenset[str]
    wrap: str | None = None
    ok: Callable[[Any], bool] = lambda job: True


JOBS: dict[str, Job] = {
    "athena:startQueryExecution": Job(
        "athena", "StartQueryExecution", "GetQueryExecution", "Athena",
        lambda r: {"QueryExecutionId": r["QueryExecutionId"]}, (),
        _path("QueryExecution", "Status", "State"), frozenset({"SUCCEEDED"}), frozenset({"FAILED", "CANCELLED"})),
    "batch:submitJob": Job(
        "batch", "SubmitJob", "DescribeJobs", "Batch",
        lambda r: {"jobs": [r["jobId"]]}, ("jobs", 0), _path("status"),
        frozenset({"SUCCEEDED"}), frozenset({"FAILED"})),
    "glue:startJobRun": Job(
        "glue", "StartJobRun", "GetJobRun", "Glue",
        lambda r: {"JobName": r["_params"]["JobName"], "RunId": r["JobRunId"]}, ("JobRun",),
        _path("JobRunState"), frozenset({"SUCCEEDED"}),
        frozenset({"FAILED", "STOPPED", "TIMEOUT", "ERROR", "EXPIRED"})),
    "codebuild:startBuild": Job(
        "codebuild", "StartBuild", "BatchGetBuilds", "CodeBuild",
        lambda r: {"ids": [r["build"]["id"]]}, ("builds", 0), _path("buildStatus"), frozenset({"SUCCEEDED"}),
        frozenset({"FAILED", "FAULT", "TIMED_OUT", "STOPPED"}), wrap="Build"),
    "ecs:runTask": Job(
        "ecs", "RunTask", "DescribeTasks", "ECS",
        lambda r: {"cluster": r["tasks"][0]["clusterArn"], "tasks": [r["tasks"][0]["taskArn"]]},
        ("tasks", 0), _path("lastStatus"), frozenset({"STOPPED"}), frozenset(), ok=_ecs_ok),
    "elasticmapreduce:createCluster": Job(
        "emr", "RunJobFlow", "DescribeCluster", "EMR",
        lambda r: {"ClusterId": r["JobFlowId"]}, ("Cluster",), _path("Status", "State"),
        frozenset({"WAITING", "RUNNING"}), frozenset({"TERMINATED", "TERMINATED_WITH_ERRORS"})),
    "sagemaker:createTrainingJob": Job(
        "sagemaker", "CreateTrainingJob", "DescribeTrainingJob", "SageMaker",
        lambda r: {"TrainingJobName": r["_params"]["TrainingJobName"]}, (),
        _path("TrainingJobStatus"), frozenset({"Completed"}), frozenset({"Failed", "Stopped"})),
    "mediaconvert:createJob": Job(
        "mediaconvert", "CreateJob", "GetJob", "MediaConvert",
        lambda r: {"Id": r["Job"]["Id"]}, ("Job",), _path("Status"),
        frozenset({"COMPLETE"}), frozenset({"ERROR", "CANCELED"}), wrap="Job"),
}

IAM_ACTIONS: dict[str, list[str]] = {}
for _key, _job in JOBS.items():
    _iam = _key.split(":")[0]
    IAM_ACTIONS[_key] = [f"{_iam}:{_job.start}"]
    IAM_ACTIONS[_key + SYNC] = [f"{_iam}:{_job.start}", f"{_iam}:{_job.describe}"]


def match(resource: str) -> str | None:
    """'<service>:<action>' (request-response) or '<service>:<action>.sync' for a Run a Job
    resource of JOBS, else None."""
    if not resource.startswith(PREFIX):
        return None
    rest = resource[len(PREFIX):]
    base = rest[:-len(SYNC)] if rest.endswith(SYNC) else rest
    return rest if base in JOBS else None


def required(action: str) -> list[tuple[str, ...]]:
    """The start API's required members (botocore's model), in PascalCase."""
    job = JOBS[action.removesuffix(SYNC)]
    model = sdk.service_model(job.service)
    if model is None:
        return []
    shape = model.operation_model(job.start).input_shape
    return [(sdk.pascal(m),) for m in shape.required_members] if shape is not None else []


def iam_statements(action: str, fields: Any) -> list[Any]:
    """IAM_ACTIONS[action] on `*` (the module docstring's IAM paragraph)."""
    from .iam import ANY, Statement
    return [Statement(tuple(IAM_ACTIONS[action]), (ANY,))]


def _start(job: Job, params: dict[str, Any]) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """Call `job.start` with `params` in PascalCase: (raw response, its botocore shape, the
    request in the API model's names)."""
    cl = sdk.client(job.service)
    op = cl.meta.service_model.operation_model(job.start)
    method = sdk.operation(cl, job.start[:1].lower() + job.start[1:])
    request = sdk.to_model(params, op.input_shape)
    return sdk.invoke_api(job.service, method, request, job.prefix), op.output_shape, request


def _at(value: Any, shape: Any, at: tuple[str | int, ...]) -> tuple[Any, Any]:
    """(the value, its botocore shape) at path `at` of a response and its shape."""
    for step in at:
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and len(value) > step else {}
            shape = shape.member
        else:
            value = value.get(step, {}) if isinstance(value, dict) else {}
            shape = shape.members[step]
    return value, shape


def wait(job: Job, started: dict[str, Any], ctx: Any) -> Any:
    """Poll `job.describe` for the job `started` (the start response, its request under
    `_params`, in the API model's names) until a terminal status: returns the job's
    description in PascalCase (under `job.wrap` when set); raises AslError(States.TaskFailed,
    the description as JSON) for a failed end or a start response naming no job, and
    AslError(States.Timeout) once the waits pass `ctx.timeout` seconds."""
    try:
        describe = job.describe_args(started)
    except (KeyError, IndexError, TypeError):  # e.g. ECS RunTask answered `failures` and no task
        raise AslError("States.TaskFailed", json.dumps({k: v for k, v in started.items() if k != "_params"},
                                                       separators=(",", ":"), default=str)) from None
    cl = sdk.client(job.service)
    shape = cl.meta.service_model.operation_model(job.describe).output_shape
    method = sdk.operation(cl, job.describe[:1].lower() + job.describe[1:])
    waited, interval = 0.0, POLL_FIRST
    while True:
        if ctx.timeout is not None and waited + interval > ctx.timeout:
            raise AslError("States.Timeout", f"state {ctx.state!r}: the {job.service} job did not end "
                           f"within TimeoutSeconds ({ctx.timeout:g} s)")
        ctx.sleep(interval)
        waited += interval
        interval = min(interval * 2, POLL_MAX)
        desc, desc_shape = _at(sdk.invoke_api(job.service, method, describe, job.prefix),
                               shape, job.at)
        status = job.status(desc)
        if status not in job.succeeded and status not in job.failed:
            continue
        out = sdk.from_model(desc, desc_shape)
        out = {job.wrap: out} if job.wrap else out
        if status in job.succeeded and job.ok(desc):
            return out
        raise AslError("States.TaskFailed", json.dumps(out, separators=(",", ":"), default=str))


def call(action: str, params: Any, ctx: Any) -> Any:
    """Start the job; for `.sync`, wait for its end (`wait`)."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} must be "
                       "a JSON object")
    sync = action.endswith(SYNC)
    job = JOBS[action.removesuffix(SYNC)]
    started, shape, request = _start(job, params)
    if not sync:
        return sdk.with_metadata(sdk.from_model(started, shape))
    return wait(job, {**started, "_params": request}, ctx)
