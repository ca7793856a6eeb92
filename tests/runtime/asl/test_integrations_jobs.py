"""The Run a Job (`.sync`) pattern (runtime/asl/integrations/jobs.py) and the request-response
form of its start actions, each Task walked in place by Machine.walk against moto's
in-process emulator of the service (botocore's Stubber for MediaConvert, which moto lacks):
the start call, the describe polls until a terminal status, the `.sync` output in
PascalCase, a failed job as States.TaskFailed with the description as its cause, and
TimeoutSeconds bounding the polls. Waits use a recorded virtual sleep."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from runtime.asl.errors import AslError
from runtime.asl.integrations import jobs, registry, sdk
from tests.runtime.asl.conftest import walk

ROLE = "arn:aws:iam::123456789012:role/r"
S = "arn:aws:states:::"


def glue_job() -> str:
    boto3.client("glue").create_job(Name="etl", Role=ROLE, Command={"Name": "glueetl", "ScriptLocation": "s3://b/s.py"})
    return "etl"


def test_athena_sync_waits_for_the_query_and_returns_get_query_execution(moto):
    out, sleeps = walk(S + "athena:startQueryExecution.sync",
                       {"QueryString": "SELECT 1", "ResultConfiguration": {"OutputLocation": "s3://r/x"}})
    assert out["QueryExecution"]["Status"]["State"] == "SUCCEEDED"
    assert out["QueryExecution"]["Query"] == "SELECT 1"
    assert sleeps == [jobs.POLL_FIRST]


def test_athena_request_response_returns_the_start_response(moto):
    out, sleeps = walk(S + "athena:startQueryExecution",
                       {"QueryString": "SELECT 1", "ResultConfiguration": {"OutputLocation": "s3://r/x"}})
    assert set(out) == {"QueryExecutionId", "SdkHttpMetadata", "SdkResponseMetadata"} and sleeps == []


def test_glue_sync_returns_the_job_run(moto):
    out, _ = walk(S + "glue:startJobRun.sync", {"JobName": glue_job()})
    assert out["JobRunState"] == "SUCCEEDED" and out["JobName"] == "etl"


def test_sagemaker_training_job_sync(moto):
    out, _ = walk(S + "sagemaker:createTrainingJob.sync", {
        "TrainingJobName": "train-1", "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://b/o"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 60}})
    assert out["TrainingJobStatus"] == "Completed" and out["TrainingJobName"] == "train-1"


def test_emr_create_cluster_sync_waits_until_the_cluster_is_up(moto):
    out, _ = walk(S + "elasticmapreduce:createCluster.sync", {
        "Name": "c", "ReleaseLabel": "emr-6.0.0", "JobFlowRole": "r", "ServiceRole": "s",
        "Instances": {"MasterInstanceType": "m5.xlarge", "InstanceCount": 1, "KeepJobFlowAliveWhenNoSteps": True}})
    assert out["Status"]["State"] == "WAITING" and out["Name"] == "c"


def test_ecs_run_task_sync_polls_until_the_task_stopped(moto):
    ecs = boto3.client("ecs")
    ecs.create_cluster(clusterName="c")
    ecs.register_task_definition(family="f", containerDefinitions=[{"name": "x", "image": "i", "memory": 128}])
    out, sleeps = walk(S + "ecs:runTask.sync", {"Cluster": "c", "TaskDefinition": "f", "LaunchType": "FARGATE"})
    assert out["LastStatus"] == "STOPPED" and out["TaskDefinitionArn"].endswith(":task-definition/f:1")
    assert len(sleeps) > 1 and sleeps[1] == 2 * sleeps[0]  # several polls, the interval doubling


def test_codebuild_sync_wraps_the_build(moto):
    boto3.client("codebuild").create_project(
        name="proj", source={"type": "S3", "location": "b/src.zip"}, artifacts={"type": "NO_ARTIFACTS"},
        environment={"type": "LINUX_CONTAINER", "image": "i", "computeType": "BUILD_GENERAL1_SMALL"},
        serviceRole=ROLE)
    out, _ = walk(S + "codebuild:startBuild.sync", {"ProjectName": "proj"})
    assert out["Build"]["BuildStatus"] == "SUCCEEDED" and out["Build"]["ProjectName"] == "proj"


def test_batch_submit_job_sync(moto):
    iam = boto3.client("iam")
    role = iam.create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    batch = boto3.client("batch")
    env = batch.create_compute_environment(computeEnvironmentName="jobs-ce", type="UNMANAGED", serviceRole=role)
    batch.create_job_queue(jobQueueName="jobs-q", state="ENABLED", priority=1,
                           computeEnvironmentOrder=[{"order": 1, "computeEnvironment": env["computeEnvironmentArn"]}])
    batch.register_job_definition(jobDefinitionName="d", type="container",
                                  containerProperties={"image": "busybox", "vcpus": 1, "memory": 128})
    out, _ = walk(S + "batch:submitJob.sync", {"JobName": "j", "JobQueue": "jobs-q", "JobDefinition": "d"})
    assert out["Status"] == "SUCCEEDED" and out["JobName"] == "j"


def mediaconvert(statuses: list[str]) -> Stubber:
    """A Stubber on the cached MediaConvert client: CreateJob, then one GetJob per status."""
    stub = Stubber(sdk.client("mediaconvert"))
    stub.add_response("create_job", {"Job": {"Id": "j-1", "Role": ROLE, "Settings": {}}},
                      {"Role": ROLE, "Settings": {}})
    for s in statuses:
        stub.add_response("get_job", {"Job": {"Id": "j-1", "Role": ROLE, "Settings": {}, "Status": s}}, {"Id": "j-1"})
    return stub


def test_mediaconvert_sync_polls_until_complete(moto):
    with mediaconvert(["SUBMITTED", "PROGRESSING", "COMPLETE"]) as stub:
        out, sleeps = walk(S + "mediaconvert:createJob.sync", {"Role": ROLE, "Settings": {}})
        stub.assert_no_pending_responses()
    assert out == {"Job": {"Id": "j-1", "Role": ROLE, "Settings": {}, "Status": "COMPLETE"}}
    assert sleeps == [1.0, 2.0, 4.0]


def test_a_failed_job_is_task_failed_with_its_description(moto):
    with mediaconvert(["PROGRESSING", "ERROR"]):
        with pytest.raises(AslError) as err:
            walk(S + "mediaconvert:createJob.sync", {"Role": ROLE, "Settings": {}})
    assert err.value.error == "States.TaskFailed"
    assert json.loads(err.value.cause)["Job"]["Status"] == "ERROR"


def test_timeout_seconds_bounds_the_polls(moto):
    with mediaconvert(["PROGRESSING"] * 3):
        with pytest.raises(AslError) as err:
            walk(S + "mediaconvert:createJob.sync", {"Role": ROLE, "Settings": {}}, timeout=7)
    assert err.value.error == "States.Timeout" and "TimeoutSeconds (7 s)" in err.value.cause


def test_a_service_error_of_the_start_call_is_named_by_the_service(moto):
    with pytest.raises(AslError) as err:
        walk(S + "glue:startJobRun.sync", {"JobName": "missing"})
    assert err.value.error == "Glue.EntityNotFoundException"


@pytest.mark.parametrize("resource, actions", [
    ("athena:startQueryExecution", ["athena:StartQueryExecution"]),
    ("athena:startQueryExecution.sync", ["athena:StartQueryExecution", "athena:GetQueryExecution"]),
    ("batch:submitJob.sync", ["batch:SubmitJob", "batch:DescribeJobs"]),
    ("elasticmapreduce:createCluster.sync", ["elasticmapreduce:RunJobFlow", "elasticmapreduce:DescribeCluster"]),
    ("ecs:runTask.sync", ["ecs:RunTask", "ecs:DescribeTasks"]),
])
def test_each_job_names_its_iam_actions(resource, actions):
    target = registry.find(S + resource)
    assert target is not None and target.name == "jobs" and registry.iam_actions(target) == actions


def test_the_required_fields_are_the_start_apis():
    assert registry.required(registry.find(S + "glue:startJobRun.sync")) == [("JobName",)]
    assert ("TaskDefinition",) in registry.required(registry.find(S + "ecs:runTask"))


def test_an_unknown_job_resource_is_not_served():
    assert registry.find(S + "glue:startCrawler.sync") is None
    assert registry.find(S + "athena:startQueryExecution.waitForTaskToken") is None


def test_a_start_that_names_no_job_is_task_failed(moto):
    """ECS RunTask answers `failures` and no task (here: a botocore Stubber on the client):
    the Task fails with States.TaskFailed and the response as its cause, not a crash."""
    stub = Stubber(sdk.client("ecs"))
    stub.add_response("run_task", {"tasks": [], "failures": [{"reason": "RESOURCE:MEMORY"}]},
                      {"taskDefinition": "f"})
    with stub, pytest.raises(AslError) as err:
        walk(S + "ecs:runTask.sync", {"TaskDefinition": "f"})
    assert err.value.error == "States.TaskFailed" and "RESOURCE:MEMORY" in err.value.cause
