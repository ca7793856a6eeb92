"""The validator on the Task Resources of the Run a Job services, Bedrock, aws-sdk with a
region and account, and activities (unumctl/asl/validate.py, runtime.asl.integrations):
accepted with the fields the start API requires, refused in one line naming the state's
field otherwise; an activity refused naming the fix."""

from __future__ import annotations

import pytest

from unumctl.asl.validate import AslValidationError, validate


def machine(resource: str, params: dict | None) -> dict:
    task = {"Type": "Task", "Resource": resource, "End": True}
    if params is not None:
        task["Parameters"] = params
    return {"StartAt": "Work", "States": {"Work": task}}


@pytest.mark.parametrize("resource, params", [
    ("arn:aws:states:::athena:startQueryExecution.sync", {"QueryString": "SELECT 1"}),
    ("arn:aws:states:::glue:startJobRun", {"JobName.$": "$.job"}),
    ("arn:aws:states:::ecs:runTask.sync", {"TaskDefinition": "f", "Cluster": "c"}),
    ("arn:aws:states:::bedrock:invokeModel", {"ModelId": "m", "Body": {}}),
    ("arn:aws:states:us-east-1:123456789012:aws-sdk:transcribe:startTranscriptionJob",
     {"TranscriptionJobName": "j", "Media": {"MediaFileUri": "s3://b/k"}}),
])
def test_accepted(resource, params):
    validate(machine(resource, params))


@pytest.mark.parametrize("resource, params, message", [
    ("arn:aws:states:::glue:startJobRun.sync", {"Arguments": {}}, "JobName"),
    ("arn:aws:states:::batch:submitJob.sync", {"JobName": "j", "JobQueue": "q"}, "JobDefinition"),
    ("arn:aws:states:::bedrock:invokeModel", {"Body": {}}, "ModelId"),
    ("arn:aws:states:::glue:startCrawler.sync", {"Name": "c"}, "is not a supported integration"),
    ("arn:aws:states:us-east-1:123456789012:activity:approve", None,
     "is an activity, which no target runs yet (its worker would poll GetActivityTask); hand the work"),
])
def test_refused_in_one_line_naming_the_field(resource, params, message):
    with pytest.raises(AslValidationError) as err:
        validate(machine(resource, params))
    text = str(err.value)
    assert "States.Work" in text and message in text and "\n" not in text, text
